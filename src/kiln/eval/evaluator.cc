#include "kiln/eval/evaluator.h"

#include <new>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/dynamic_shapes.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/rendezvous.h"
#include "kiln/hlo/computation.h"

namespace kiln {

void KernelRegistry::Register(HloOpcode op, EvalKernel kernel) {
  kernels_[static_cast<int>(op)] = kernel;
}

EvalKernel KernelRegistry::Find(HloOpcode op) const { return kernels_[static_cast<int>(op)]; }

const KernelRegistry& KernelRegistry::Global() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterControlFlowKernels(*r);
    RegisterElementwiseKernels(*r);
    RegisterShapeKernels(*r);
    RegisterReduceKernels(*r);
    RegisterIndexingKernels(*r);
    RegisterGatherScatterKernels(*r);
    RegisterDotConvKernels(*r);
    RegisterSortKernels(*r);
    RegisterMiscKernels(*r);
    RegisterFusionKernels(*r);
    return r;
  }();
  return *registry;
}

Status UnsupportedInstruction(const HloInstruction& instr, std::string_view detail) {
  std::string msg = StrCat("unsupported: ", HloOpcodeString(instr.opcode()));
  if (instr.opcode() == HloOpcode::kCustomCall)
    msg += StrCat(" \"", instr.attrs().custom_call_target, "\"");
  if (instr.location().line > 0) msg += StrCat(" at line ", instr.location().line);
  msg += StrCat(" (%", instr.name(), ")");
  if (!detail.empty()) msg += StrCat(": ", detail);
  return Unimplemented(msg);
}

Evaluator::Evaluator(EvaluatorOptions options)
    : options_(options), rng_state_(options.rng_seed) {}

Rendezvous& Evaluator::rendezvous() {
  if (options_.rendezvous) return *options_.rendezvous;
  if (!own_rendezvous_) own_rendezvous_ = std::make_shared<Rendezvous>(1);
  return *own_rendezvous_;
}

namespace {

Status OutOfMemory(const HloInstruction& instr) {
  return ResourceExhausted("out of memory allocating ", instr.shape().byte_size(), " bytes for %",
                           instr.name(), " (", instr.shape().ToString(false), ")",
                           instr.location().line > 0 ? StrCat(" at line ", instr.location().line) : std::string());
}

}  // namespace

StatusOr<Literal> Evaluator::Run(const HloModule& module, std::span<const Literal> args) {
  scalar_programs_.clear();
  dynamic_sizes_.clear();
  occurrences_.clear();
  const HloComputation* entry = module.entry_computation();
  entry_ = entry;
  if (!entry) return InvalidArgument("module ", module.name(), " has no entry computation");
  if (static_cast<int64_t>(args.size()) != entry->num_parameters())
    return InvalidArgument("module ", module.name(), " takes ", entry->num_parameters(),
                           " arguments, got ", args.size());
  std::vector<const Literal*> ptrs;
  for (size_t i = 0; i < args.size(); ++i) {
    const Shape& want = entry->parameter_instruction(static_cast<int64_t>(i))->shape();
    if (!Shape::Compatible(want, args[i].shape()))
      return InvalidArgument("argument ", i, " has shape ", args[i].shape().ToString(false),
                             ", but parameter ", i, " of ", module.name(), " is ",
                             want.ToString(false));
    ptrs.push_back(&args[i]);
  }
  return Evaluate(*entry, ptrs);
}

StatusOr<Literal> Evaluator::Evaluate(const HloComputation& computation,
                                      std::span<const Literal* const> args) {
  if (depth_ > 256) return ResourceExhausted("evaluator: call depth exceeds 256");
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& depth) : d(depth) { ++d; }
    ~DepthGuard() { --d; }
  } guard(depth_);

  if (static_cast<int64_t>(args.size()) != computation.num_parameters())
    return InvalidArgument("computation ", computation.name(), " takes ",
                           computation.num_parameters(), " arguments, got ", args.size());
  const KernelRegistry& registry = KernelRegistry::Global();
  std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();

  // Values live until their last user has run.
  std::unordered_map<const HloInstruction*, Literal> values;
  std::unordered_map<const HloInstruction*, int64_t> remaining_uses;
  for (HloInstruction* instr : order) {
    int64_t uses = 0;
    for (HloInstruction* u : instr->users())
      for (HloInstruction* o : u->operands())
        if (o == instr) ++uses;
    remaining_uses[instr] = uses;
  }

  std::vector<const Literal*> operand_values;
  for (HloInstruction* instr : order) {
    if (instr->opcode() == HloOpcode::kParameter) {
      int64_t n = instr->parameter_number();
      if (n < 0 || n >= static_cast<int64_t>(args.size()))
        return InvalidArgument("parameter number ", n, " out of range in ", computation.name());
      try {
        values.emplace(instr, *args[n]);
      } catch (const std::bad_alloc&) {
        return OutOfMemory(*instr);
      }
      continue;
    }
    operand_values.clear();
    for (HloInstruction* op : instr->operands()) {
      auto it = values.find(op);
      if (it == values.end())
        return Internal("evaluator: operand ", op->name(), " of ", instr->name(),
                        " has no value");
      operand_values.push_back(&it->second);
    }
    EvalKernel kernel = registry.Find(instr->opcode());
    if (!kernel) return UnsupportedInstruction(*instr);
    // Kernels allocate their results (and scratch) as Literals sized by the instruction's
    // shape; a shape the host cannot hold (a 2^40-element iota) is a status here, at the one
    // place every kernel's allocation passes through, not an abort.
    StatusOr<Literal> result = OutOfMemory(*instr);
    try {
      result = kernel(*instr, operand_values, *this);
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    if (!result.ok()) {
      const Status& s = result.status();
      // Add where it happened once (kernels report what went wrong).
      if (s.message().find(" (%") == std::string::npos && s.message().find("at line") == std::string::npos) {
        return Status(s.code(), StrCat(s.message(), " [in %", instr->name(),
                                       instr->location().line > 0
                                           ? StrCat(" at line ", instr->location().line)
                                           : std::string(),
                                       "]"));
      }
      return s;
    }
    values.emplace(instr, std::move(result).value());
    if (instr->shape().IsArray() && instr->shape().is_dynamic())
      eval_internal::TrackDynamicSizes(*instr, operand_values, *this, dynamic_sizes_);
    for (HloInstruction* op : instr->operands()) {
      if (--remaining_uses[op] == 0 && op != computation.root_instruction()) values.erase(op);
    }
  }
  auto it = values.find(computation.root_instruction());
  if (it == values.end()) return Internal("evaluator: root of ", computation.name(), " has no value");
  return std::move(it->second);
}

StatusOr<Literal> EvaluateModule(const HloModule& module, std::span<const Literal> args) {
  Evaluator e;
  return e.Run(module, args);
}

}  // namespace kiln
