#include "kiln/rocm/compiler/rocm_executor.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/clone.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/literal.h"
#include "kiln/autotune/config.h"
#include "kiln/passes/dot_canonicalizer.h"
#include "kiln/passes/thunk_util.h"
#include "kiln/rocm/rocm_device.h"
#include "kiln/rocm/vendor_apis.h"
#include "kiln/runtime/kernel_args.h"

namespace kiln::rocm {

namespace {

using Step = RocmExecutor::Step;
using Copy = RocmExecutor::Copy;

StatusOr<std::vector<BufferSlice>> LeafSlices(const BufferAssignment& a, const HloInstruction& instr) {
  std::vector<BufferSlice> out;
  for (const ShapeIndex& leaf : ArrayLeafIndices(instr.shape())) {
    KILN_ASSIGN_OR_RETURN(BufferSlice s, CheckedSlice(a, instr, leaf));
    out.push_back(s);
  }
  return out;
}

// Copies from `from`'s leaves into `to`'s where the slices differ (same shapes).
StatusOr<std::vector<Copy>> CopiesBetween(const BufferAssignment& a, const HloInstruction& from, const HloInstruction& to) {
  KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> src, LeafSlices(a, from));
  KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> dst, LeafSlices(a, to));
  if (src.size() != dst.size())
    return Internal("rocm executor: %", from.name(), " has ", src.size(), " leaves, %", to.name(), " ", dst.size());
  std::vector<Copy> out;
  for (size_t j = 0; j < src.size(); ++j)
    if (!(src[j] == dst[j])) out.push_back({src[j], dst[j]});
  return out;
}

std::string SliceText(const BufferSlice& s) { return s.ToString(); }

bool RowMajor(const Shape& s) {
  if (!s.has_layout()) return true;
  const std::vector<int64_t>& m2m = s.layout().minor_to_major();
  for (size_t i = 0; i < m2m.size(); ++i)
    if (m2m[i] != static_cast<int64_t>(m2m.size() - 1 - i)) return false;
  return true;
}

// rocBLAS' (input, output, compute) types for a dot of `in` giving `out`; false where it has
// none kiln uses.
bool RocblasTypes(PrimitiveType in, PrimitiveType out, int* a, int* d, int* compute) {
  using P = PrimitiveType;
  auto type = [](P t) {
    switch (t) {
      case P::kF16: return static_cast<int>(rocblas_datatype_f16_r);
      case P::kBF16: return static_cast<int>(rocblas_datatype_bf16_r);
      case P::kF32: return static_cast<int>(rocblas_datatype_f32_r);
      case P::kF64: return static_cast<int>(rocblas_datatype_f64_r);
      case P::kC64: return static_cast<int>(rocblas_datatype_f32_c);
      case P::kC128: return static_cast<int>(rocblas_datatype_f64_c);
      default: return -1;
    }
  };
  const bool half = in == P::kF16 || in == P::kBF16;
  if (half ? !(out == in || out == P::kF32) : out != in) return false;
  *a = type(in);
  *d = type(out);
  if (*a < 0 || *d < 0) return false;
  *compute = half || in == P::kF32 ? static_cast<int>(rocblas_datatype_f32_r) : type(in);
  return true;
}

}  // namespace

RocmExecutor::~RocmExecutor() {
  if (allocator_ != nullptr)
    for (auto& [index, memory] : constants_) (void)allocator_->Deallocate(memory);
  if (rocblas_ != nullptr)
    if (StatusOr<std::shared_ptr<const RocblasApi>> api = RocblasApi::Default(); api.ok())
      (*api)->rocblas_destroy_handle(static_cast<rocblas_handle>(rocblas_));
}

StatusOr<std::unique_ptr<RocmExecutor>> RocmExecutor::Create(const RocmCompiledModule& compiled) {
  if (!compiled.module || !compiled.assignment) return InvalidArgument("rocm executor: an empty compiled module");
  std::unique_ptr<RocmExecutor> e(new RocmExecutor(compiled));
  KILN_RETURN_IF_ERROR(e->Plan());
  return e;
}

Status RocmExecutor::Plan() {
  std::map<std::string, const HloComputation*> computations;
  for (const HloComputation* c : compiled_.module->computations()) computations[c->name()] = c;
  std::map<std::pair<const HloComputation*, std::string>, const HloInstruction*> instructions;
  for (const auto& [name, c] : computations)
    for (const HloInstruction* i : c->instructions()) instructions[{c, i->name()}] = i;
  int next_kernel = 0;
  for (const RocmThunk& t : compiled_.thunks) {
    auto c = computations.find(t.computation);
    if (c == computations.end()) return Internal("rocm executor: no computation ", t.computation);
    auto i = instructions.find({c->second, t.instruction});
    if (i == instructions.end()) return Internal("rocm executor: no %", t.instruction, " in ", t.computation);
    KILN_ASSIGN_OR_RETURN(Step step, PlanStep(t, *i->second, &next_kernel));
    if (step.kind == Step::Kind::kUnsupported)
      unsupported_.push_back(StrCat(RocmThunkKindName(t.kind), " %", t.instruction, ": ", step.note));
    sequences_[c->second].push_back(std::move(step));
  }
  if (next_kernel != static_cast<int>(compiled_.kernels.size()))
    return Internal("rocm executor: ", next_kernel, " kernel thunks for ", compiled_.kernels.size(), " kernels");
  return OkStatus();
}

StatusOr<Step> RocmExecutor::PlanStep(const RocmThunk& thunk, const HloInstruction& instr, int* next_kernel) {
  const BufferAssignment& a = *compiled_.assignment;
  Step s;
  s.instr = &instr;
  auto unsupported = [&](std::string why) {
    s.kind = Step::Kind::kUnsupported;
    s.note = std::move(why);
    return StatusOr<Step>(std::move(s));
  };
  switch (thunk.kind) {
    case RocmThunk::Kind::kKernel: {
      s.kind = Step::Kind::kKernel;
      s.kernel = (*next_kernel)++;
      const codegen::KernelSpec& k = compiled_.kernels.at(s.kernel);
      KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> outputs, LeafSlices(a, instr));
      std::vector<BufferSlice> operands;
      for (const HloInstruction* o : instr.operands()) {
        StatusOr<BufferSlice> sl = a.HasSlice(*o) ? CheckedSlice(a, *o) : StatusOr<BufferSlice>(BufferSlice{});
        KILN_RETURN_IF_ERROR(sl.status());
        operands.push_back(*sl);
      }
      // An in-place output holds its operand's value first; the kernel then reads it there.
      std::vector<int64_t> in_place(operands.size(), -1);
      for (const auto& [out, op] : k.in_place) {
        if (out < 0 || out >= static_cast<int64_t>(outputs.size()) || op < 0 || op >= static_cast<int64_t>(operands.size()))
          return Internal("rocm executor: kernel ", k.name, " has an in-place pair out of range");
        in_place[op] = out;
        if (!(outputs[out] == operands[op])) s.before.push_back({operands[op], outputs[out]});
      }
      for (const codegen::KernelParam& p : k.params) {
        KernelArg arg;
        switch (p.kind) {
          case codegen::KernelParam::Kind::kOperand:
            if (p.index < 0 || p.index >= static_cast<int64_t>(operands.size()) || !operands[p.index].valid())
              return Internal("rocm executor: kernel ", k.name, " parameter ", p.name, ": no slice for operand ", p.index);
            arg.slice = in_place[p.index] >= 0 ? outputs[in_place[p.index]] : operands[p.index];
            break;
          case codegen::KernelParam::Kind::kOutput:
            if (p.index < 0 || p.index >= static_cast<int64_t>(outputs.size()))
              return Internal("rocm executor: kernel ", k.name, " parameter ", p.name, ": no output leaf ", p.index);
            arg.slice = outputs[p.index];
            break;
          case codegen::KernelParam::Kind::kScratch:
            arg.kind = KernelArg::Kind::kScratch;
            break;
          case codegen::KernelParam::Kind::kScalar:
            arg.kind = KernelArg::Kind::kScalar;
            arg.scalar_type = p.scalar_type;
            arg.scalar_value = p.scalar_value;
            break;
        }
        s.args.push_back(arg);
      }
      scratch_bytes_ = std::max(scratch_bytes_, k.scratch_bytes);
      return s;
    }
    case RocmThunk::Kind::kWhile: {
      s.kind = Step::Kind::kWhile;
      const HloComputation* cond = instr.while_condition();
      const HloComputation* body = instr.while_body();
      s.callees = {cond, body};
      KILN_ASSIGN_OR_RETURN(s.predicate, CheckedSlice(a, *cond->root_instruction()));
      KILN_ASSIGN_OR_RETURN(s.loop, a.GetWhileCopyPlan(instr));
      return s;
    }
    case RocmThunk::Kind::kConditional:
    case RocmThunk::Kind::kCall: {
      const bool conditional = thunk.kind == RocmThunk::Kind::kConditional;
      s.kind = conditional ? Step::Kind::kConditional : Step::Kind::kCall;
      for (const HloComputation* c : instr.called_computations()) {
        s.callees.push_back(c);
        std::vector<Copy> in;
        const int64_t first = conditional ? 1 : 0;  // a conditional's operand 0 is the index
        const std::vector<HloInstruction*> params = c->parameter_instructions();
        for (size_t p = 0; p < params.size(); ++p) {
          const HloInstruction& operand = *instr.operand(first + (conditional ? s.callees.size() - 1 : p));
          KILN_ASSIGN_OR_RETURN(std::vector<Copy> cs, CopiesBetween(a, operand, *params[p]));
          in.insert(in.end(), cs.begin(), cs.end());
        }
        s.branch_before.push_back(std::move(in));
        KILN_ASSIGN_OR_RETURN(std::vector<Copy> out, CopiesBetween(a, *c->root_instruction(), instr));
        s.after.push_back(std::move(out));
      }
      if (conditional) {
        KILN_ASSIGN_OR_RETURN(s.predicate, CheckedSlice(a, *instr.operand(0)));
        s.predicate_type = instr.operand(0)->shape().element_type();
      }
      return s;
    }
    case RocmThunk::Kind::kHostFallback: {
      s.kind = Step::Kind::kHost;
      for (const HloInstruction* o : instr.operands()) {
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> leaves, LeafSlices(a, *o));
        s.operand_leaves.push_back(std::move(leaves));
      }
      KILN_ASSIGN_OR_RETURN(s.result_leaves, LeafSlices(a, instr));
      return s;
    }
    case RocmThunk::Kind::kCollective: {
      const HloModule& m = *compiled_.module;
      if (std::max<int64_t>(1, m.header().replica_count) * std::max<int64_t>(1, m.header().num_partitions) > 1)
        return unsupported("RCCL communicators are not implemented");
      const HloOpcode op = instr.opcode();
      if (op == HloOpcode::kReplicaId || op == HloOpcode::kPartitionId) {
        s.kind = Step::Kind::kZero;
        KILN_ASSIGN_OR_RETURN(s.result_leaves, LeafSlices(a, instr));
        return s;
      }
      const bool one_member = op == HloOpcode::kAllReduce || op == HloOpcode::kAllGather ||
                              op == HloOpcode::kReduceScatter || op == HloOpcode::kAllToAll ||
                              op == HloOpcode::kCollectiveBroadcast || op == HloOpcode::kCollectivePermute ||
                              op == HloOpcode::kAllReduceStart;
      if (!one_member) return unsupported("only one-participant collectives of array results run");
      KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> results, LeafSlices(a, instr));
      std::vector<BufferSlice> sources;
      for (const HloInstruction* o : instr.operands()) {
        KILN_ASSIGN_OR_RETURN(std::vector<BufferSlice> leaves, LeafSlices(a, *o));
        sources.insert(sources.end(), leaves.begin(), leaves.end());
      }
      if (op == HloOpcode::kCollectivePermute) {
        // Alone, a permute delivers only a pair (0, 0); without one the result is zeros.
        bool to_self = false;
        for (const auto& [from, to] : instr.attrs().source_target_pairs) to_self |= from == 0 && to == 0;
        if (!to_self) {
          s.kind = Step::Kind::kZero;
          s.result_leaves = results;
          return s;
        }
      }
      if (sources.size() != results.size()) return unsupported("a collective whose result leaves are not its operands'");
      s.kind = Step::Kind::kCollectiveAlone;
      for (size_t j = 0; j < results.size(); ++j)
        if (!(sources[j] == results[j])) s.before.push_back({sources[j], results[j]});
      return s;
    }
    case RocmThunk::Kind::kCollectiveDone: {
      const HloOpcode op = instr.opcode();
      if (op != HloOpcode::kAllReduceDone || instr.operand(0)->opcode() != HloOpcode::kAllReduceStart)
        return unsupported("only all-reduce-done of an all-reduce-start runs");
      s.kind = Step::Kind::kCollectiveAlone;
      KILN_ASSIGN_OR_RETURN(s.before, CopiesBetween(a, *instr.operand(0), instr));
      return s;
    }
    case RocmThunk::Kind::kGemm: {
      if (instr.opcode() != HloOpcode::kDot || !IsCanonicalDot(instr))
        return unsupported("not a canonical dot (passes/dot_canonicalizer.h)");
      const Shape& lhs = instr.operand(0)->shape();
      const Shape& rhs = instr.operand(1)->shape();
      if (!RowMajor(lhs) || !RowMajor(rhs) || !RowMajor(instr.shape()))
        return unsupported("a dot whose operands or result are not row-major");
      if (!RocblasTypes(lhs.element_type(), instr.shape().element_type(), &s.a_type, &s.d_type, &s.compute_type) ||
          rhs.element_type() != lhs.element_type())
        return unsupported(StrCat("rocBLAS has no GEMM of ", PrimitiveTypeName(lhs.element_type()), " giving ",
                                  PrimitiveTypeName(instr.shape().element_type()), " here"));
      const bool batched = lhs.rank() == 3;
      s.batch = batched ? lhs.dimensions(0) : 1;
      s.m = lhs.dimensions(lhs.rank() - 2);
      s.k = lhs.dimensions(lhs.rank() - 1);
      s.n = rhs.dimensions(rhs.rank() - 1);
      if (std::max({s.m, s.n, s.k, s.batch}) > INT32_MAX) return unsupported("a GEMM over rocBLAS' 32-bit sizes");
      if (!instr.backend_config().empty())
        if (StatusOr<autotune::Config> c = autotune::ReadConfigFromBackendConfig(instr); c.ok() && c->backend() == "rocblas")
          if (c->params().contains("solution") && c->params()["solution"].is_number_integer())
            s.solution = c->params()["solution"].get<int64_t>();
      s.kind = Step::Kind::kGemm;
      for (const HloInstruction* x : std::vector<const HloInstruction*>{instr.operand(0), instr.operand(1), &instr}) {
        KernelArg arg;
        KILN_ASSIGN_OR_RETURN(arg.slice, CheckedSlice(a, *x));
        s.args.push_back(arg);
      }
      return s;
    }
    case RocmThunk::Kind::kConvolution: return unsupported("MIOpen calls are not implemented");
  }
  return Internal("rocm executor: unknown thunk kind");
}

std::string RocmExecutor::PlanListing() const {
  std::string out;
  for (const HloComputation* c : compiled_.module->MakeComputationPostOrder()) {
    auto it = sequences_.find(c);
    if (it == sequences_.end()) continue;
    for (const Step& s : it->second) {
      out += StrCat(s.instr->name(), " [", c->name(), "]: ");
      switch (s.kind) {
        case Step::Kind::kKernel: {
          out += StrCat("kernel ", s.kernel, " (code object ", compiled_.kernel_code_object.at(s.kernel), "), args");
          for (const KernelArg& arg : s.args) {
            if (arg.kind == KernelArg::Kind::kSlice) out += " " + SliceText(arg.slice);
            if (arg.kind == KernelArg::Kind::kScratch) out += " scratch";
            if (arg.kind == KernelArg::Kind::kScalar)
              out += StrCat(" ", PrimitiveTypeName(arg.scalar_type), " ", arg.scalar_value);
          }
          break;
        }
        case Step::Kind::kGemm:
          out += StrCat("rocblas gemm batch ", s.batch, " m ", s.m, " n ", s.n, " k ", s.k, ", solution ", s.solution, ", ",
                        SliceText(s.args[0].slice), " x ", SliceText(s.args[1].slice), " -> ", SliceText(s.args[2].slice));
          break;
        case Step::Kind::kWhile:
          out += StrCat("while ", s.callees[0]->name(), " / ", s.callees[1]->name(), ", predicate ", SliceText(s.predicate));
          break;
        case Step::Kind::kConditional: out += StrCat("conditional, index ", SliceText(s.predicate)); break;
        case Step::Kind::kCall: out += StrCat("call ", s.callees.at(0)->name()); break;
        case Step::Kind::kHost: out += "host evaluator"; break;
        case Step::Kind::kCollectiveAlone: out += StrCat("alone: ", s.before.size(), " copies"); break;
        case Step::Kind::kZero: out += StrCat("zeros into ", s.result_leaves.size(), " leaves"); break;
        case Step::Kind::kUnsupported: out += "not implemented: " + s.note; break;
      }
      for (const Copy& cp : s.before) out += StrCat(", copy ", SliceText(cp.src), " -> ", SliceText(cp.dst));
      out += "\n";
    }
  }
  return out;
}

Status RocmExecutor::Initialize(runtime::Device& device, runtime::Allocator& allocator) {
  if (!unsupported_.empty())
    return Unimplemented("rocm executor: ", unsupported_.size(), " step(s) cannot run yet: ", StrJoin(unsupported_, "; "));
  device_ = &device;
  allocator_ = &allocator;
  modules_.clear();
  for (size_t i = 0; i < compiled_.code_objects.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Module> m,
                          device.LoadModule(runtime::ModuleSpec::FromHsaco(compiled_.code_objects[i].image,
                                                                           StrCat(compiled_.module->name(), ".", i))));
    modules_.push_back(std::move(m));
  }
  launch_kernels_.assign(compiled_.kernels.size(), {});
  for (size_t k = 0; k < compiled_.kernels.size(); ++k) {
    runtime::Module& m = *modules_.at(compiled_.kernel_code_object.at(k));
    for (const codegen::KernelLaunch& l : compiled_.kernels[k].launches) {
      KILN_ASSIGN_OR_RETURN(runtime::Kernel * kernel, m.GetKernel(l.entry));
      launch_kernels_[k].push_back(kernel);
    }
  }
  // rocBLAS, where a GEMM needs it: one handle, bound to the stream of each Execute.
  bool gemm = false;
  for (const auto& [c, steps] : sequences_)
    for (const Step& st : steps) gemm |= st.kind == Step::Kind::kGemm;
  if (gemm && rocblas_ == nullptr) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const RocblasApi> api, RocblasApi::Default());
    rocblas_handle h = nullptr;
    const rocblas_status st = api->rocblas_create_handle(&h);
    if (st != rocblas_status_success)
      return Internal("rocblas: rocblas_create_handle: ", api->rocblas_status_to_string(st));
    rocblas_ = h;
  }
  // Constants: uploaded once, through a stream of their own.
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Stream> stream, device.CreateStream({}));
  for (const BufferAllocation& b : compiled_.assignment->allocations()) {
    if (b.kind != BufferAllocation::Kind::kConstant || b.constant == nullptr || constants_.count(b.index)) continue;
    KILN_ASSIGN_OR_RETURN(runtime::DeviceMemory mem, allocator.Allocate(static_cast<uint64_t>(b.size), b.constant->name()));
    constants_[b.index] = mem;
    const Literal& literal = b.constant->literal();
    const uint64_t bytes = std::min<uint64_t>(literal.size_bytes(), mem.size);
    if (bytes > 0) KILN_RETURN_IF_ERROR(stream->MemcpyHostToDevice(mem, literal.untyped_data(), bytes));
  }
  return stream->Synchronize();
}

runtime::DeviceMemory RocmExecutor::Memory(const BufferSlice& slice) const {
  const runtime::DeviceMemory& base = bases_.at(slice.allocation);
  return runtime::DeviceMemory{static_cast<char*>(base.ptr) + slice.offset, static_cast<uint64_t>(slice.size)};
}

Status RocmExecutor::RunCopies(std::span<const Copy> copies, runtime::Stream& stream) {
  for (const Copy& c : copies)
    if (c.src.size > 0) KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(Memory(c.dst), Memory(c.src), c.src.size));
  return OkStatus();
}

Status RocmExecutor::RunSequence(const HloComputation* c, runtime::Stream& stream) {
  auto it = sequences_.find(c);
  if (it == sequences_.end()) return OkStatus();  // nothing but free instructions
  for (const Step& s : it->second) KILN_RETURN_IF_ERROR(RunStep(s, stream));
  return OkStatus();
}

Status RocmExecutor::RunHost(const Step& step, runtime::Stream& stream) {
  const HloInstruction& instr = *step.instr;
  KILN_RETURN_IF_ERROR(stream.Synchronize());
  std::vector<Literal> args;
  for (int64_t i = 0; i < instr.operand_count(); ++i) {
    Literal arg(instr.operand(i)->shape());
    const std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr.operand(i)->shape());
    for (size_t j = 0; j < leaves.size(); ++j) {
      Literal* leaf = &arg;
      for (int64_t k : leaves[j]) leaf = &leaf->mutable_tuple_element(k);
      const uint64_t bytes = std::min<uint64_t>(leaf->size_bytes(), step.operand_leaves[i][j].size);
      if (bytes > 0) KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToHost(leaf->untyped_data(), Memory(step.operand_leaves[i][j]), bytes));
    }
    args.push_back(std::move(arg));
  }
  KILN_RETURN_IF_ERROR(stream.Synchronize());
  // The instruction alone, over parameters of its operands' shapes.
  HloComputation one(StrCat("host_", instr.name()));
  std::vector<HloInstruction*> params;
  for (int64_t i = 0; i < instr.operand_count(); ++i) {
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, instr.operand(i)->shape(), StrCat("p", i));
    p->set_parameter_number(i);
    params.push_back(one.AddInstruction(std::move(p)));
  }
  one.set_root_instruction(one.AddInstruction(CloneInstruction(instr, instr.shape(), params, instr.name())));
  std::vector<const Literal*> arg_ptrs;
  for (const Literal& l : args) arg_ptrs.push_back(&l);
  Evaluator evaluator;
  KILN_ASSIGN_OR_RETURN(Literal result, evaluator.Evaluate(one, arg_ptrs));
  const std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr.shape());
  for (size_t j = 0; j < leaves.size(); ++j) {
    const Literal& leaf = result.Subliteral(leaves[j]);
    const uint64_t bytes = std::min<uint64_t>(leaf.size_bytes(), step.result_leaves[j].size);
    if (bytes > 0) KILN_RETURN_IF_ERROR(stream.MemcpyHostToDevice(Memory(step.result_leaves[j]), leaf.untyped_data(), bytes));
  }
  return stream.Synchronize();  // `result` must outlive the copies
}

Status RocmExecutor::RunGemm(const Step& s, runtime::Stream& stream) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const RocblasApi> api, RocblasApi::Default());
  const RocblasApi& b = *api;
  auto check = [&](rocblas_status st, const char* call) -> Status {
    if (st == rocblas_status_success) return OkStatus();
    return Internal("rocblas: ", call, " (%", s.instr->name(), "): ", b.rocblas_status_to_string(st));
  };
  rocblas_handle h = static_cast<rocblas_handle>(rocblas_);
  KILN_RETURN_IF_ERROR(check(b.rocblas_set_stream(h, static_cast<RocmStream&>(stream).handle()), "rocblas_set_stream"));
  // alpha = 1, beta = 0 in the compute type (complex: real part 1).
  const double one[2] = {1.0, 0.0}, zero[2] = {0.0, 0.0};
  const float onef[2] = {1.0f, 0.0f}, zerof[2] = {0.0f, 0.0f};
  const bool dbl = s.compute_type == rocblas_datatype_f64_r || s.compute_type == rocblas_datatype_f64_c;
  const void* alpha = dbl ? static_cast<const void*>(one) : static_cast<const void*>(onef);
  const void* beta = dbl ? static_cast<const void*>(zero) : static_cast<const void*>(zerof);
  // Row-major D[M,N] = A[M,K] B[K,N] is column-major D^T = B^T A^T: rocBLAS' A is kiln's rhs.
  void* lhs = Memory(s.args[0].slice).ptr;
  void* rhs = Memory(s.args[1].slice).ptr;
  void* out = Memory(s.args[2].slice).ptr;
  const auto M = static_cast<rocblas_int>(s.n), N = static_cast<rocblas_int>(s.m), K = static_cast<rocblas_int>(s.k);
  const auto a_type = static_cast<rocblas_datatype>(s.a_type), d_type = static_cast<rocblas_datatype>(s.d_type);
  const auto compute = static_cast<rocblas_datatype>(s.compute_type);
  const rocblas_gemm_algo algo = s.solution > 0 ? rocblas_gemm_algo_solution_index : rocblas_gemm_algo_standard;
  const auto solution = static_cast<int32_t>(s.solution);
  if (s.batch == 1) {
    return check(b.rocblas_gemm_ex(h, rocblas_operation_none, rocblas_operation_none, M, N, K, alpha, rhs, a_type, M, lhs,
                                   a_type, K, beta, out, d_type, M, out, d_type, M, compute, algo, solution, 0),
                 "rocblas_gemm_ex");
  }
  return check(b.rocblas_gemm_strided_batched_ex(h, rocblas_operation_none, rocblas_operation_none, M, N, K, alpha, rhs,
                                                 a_type, M, s.k * s.n, lhs, a_type, K, s.m * s.k, beta, out, d_type, M,
                                                 s.m * s.n, out, d_type, M, s.m * s.n, static_cast<rocblas_int>(s.batch),
                                                 compute, algo, solution, 0),
               "rocblas_gemm_strided_batched_ex");
}

Status RocmExecutor::RunStep(const Step& s, runtime::Stream& stream) {
  switch (s.kind) {
    case Step::Kind::kKernel: {
      KILN_RETURN_IF_ERROR(RunCopies(s.before, stream));
      runtime::KernelArgs args;
      for (const KernelArg& a : s.args) {
        switch (a.kind) {
          case KernelArg::Kind::kSlice: args.Add(Memory(a.slice).ptr); break;
          case KernelArg::Kind::kScratch: args.Add(scratch_.ptr); break;
          case KernelArg::Kind::kScalar:
            switch (a.scalar_type) {
              case PrimitiveType::kS32: args.Add(static_cast<int32_t>(a.scalar_value)); break;
              case PrimitiveType::kU32: args.Add(static_cast<uint32_t>(a.scalar_value)); break;
              case PrimitiveType::kU64: args.Add(static_cast<uint64_t>(a.scalar_value)); break;
              default: args.Add(static_cast<int64_t>(a.scalar_value)); break;
            }
            break;
        }
      }
      const codegen::KernelSpec& k = compiled_.kernels.at(s.kernel);
      for (size_t l = 0; l < k.launches.size(); ++l)
        KILN_RETURN_IF_ERROR(stream.Launch(*launch_kernels_.at(s.kernel).at(l), k.launches[l].dims, args));
      return OkStatus();
    }
    case Step::Kind::kWhile: {
      const WhileCopyPlan& plan = s.loop;
      for (size_t j = 0; j < plan.leaves.size(); ++j)
        if (plan.copy_init[j] && plan.init[j].size > 0)
          KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(Memory(plan.state[j]), Memory(plan.init[j]), plan.init[j].size));
      while (true) {
        KILN_RETURN_IF_ERROR(RunSequence(s.callees[0], stream));
        uint8_t pred = 0;
        KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToHost(&pred, Memory(s.predicate), 1));
        KILN_RETURN_IF_ERROR(stream.Synchronize());
        if (pred == 0) return OkStatus();
        KILN_RETURN_IF_ERROR(RunSequence(s.callees[1], stream));
        KILN_RETURN_IF_ERROR(ForEachLoopStateCopy(plan, [&](const BufferSlice& src, const BufferSlice& dst) {
          return stream.MemcpyDeviceToDevice(Memory(dst), Memory(src), src.size);
        }));
      }
    }
    case Step::Kind::kConditional: {
      uint8_t index[8] = {};
      KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToHost(index, Memory(s.predicate), std::min<int64_t>(8, s.predicate.size)));
      KILN_RETURN_IF_ERROR(stream.Synchronize());
      const int64_t b = SelectConditionalBranch(s.predicate_type, index, static_cast<int64_t>(s.callees.size()));
      KILN_RETURN_IF_ERROR(RunCopies(s.branch_before.at(b), stream));
      KILN_RETURN_IF_ERROR(RunSequence(s.callees.at(b), stream));
      return RunCopies(s.after.at(b), stream);
    }
    case Step::Kind::kCall:
      KILN_RETURN_IF_ERROR(RunCopies(s.branch_before.at(0), stream));
      KILN_RETURN_IF_ERROR(RunSequence(s.callees.at(0), stream));
      return RunCopies(s.after.at(0), stream);
    case Step::Kind::kGemm: return RunGemm(s, stream);
    case Step::Kind::kHost: return RunHost(s, stream);
    case Step::Kind::kCollectiveAlone: return RunCopies(s.before, stream);
    case Step::Kind::kZero:
      for (const BufferSlice& leaf : s.result_leaves)
        if (leaf.size > 0) KILN_RETURN_IF_ERROR(stream.Memset8(Memory(leaf), 0));
      return OkStatus();
    case Step::Kind::kUnsupported:
      return Unimplemented("rocm executor: %", s.instr->name(), " cannot run yet");
  }
  return Internal("rocm executor: unknown step");
}

StatusOr<std::vector<runtime::DeviceMemory>> RocmExecutor::Execute(runtime::Stream& stream,
                                                                   std::span<const runtime::DeviceMemory> arguments) {
  if (device_ == nullptr) return FailedPrecondition("rocm executor: Execute before Initialize");
  const HloComputation& entry = *compiled_.module->entry_computation();
  // The arguments' leaves, by (parameter number, leaf index).
  std::map<std::pair<int64_t, ShapeIndex>, runtime::DeviceMemory> args;
  size_t next = 0;
  for (const HloInstruction* p : entry.parameter_instructions())
    for (const ShapeIndex& leaf : ArrayLeafIndices(p->shape())) {
      if (next >= arguments.size())
        return InvalidArgument("rocm executor: ", arguments.size(), " arguments for more parameter leaves");
      args[{p->parameter_number(), leaf}] = arguments[next++];
    }
  if (next != arguments.size())
    return InvalidArgument("rocm executor: ", arguments.size(), " arguments for ", next, " parameter leaves");
  std::vector<runtime::DeviceMemory> owned;
  auto release = [&]() {
    for (runtime::DeviceMemory& m : owned) (void)allocator_->Deallocate(m);
    owned.clear();
  };
  bases_.assign(compiled_.assignment->allocations().size(), {});
  Status status = [&]() -> Status {
    for (const BufferAllocation& b : compiled_.assignment->allocations()) {
      switch (b.kind) {
        case BufferAllocation::Kind::kParameter: {
          auto it = args.find({b.parameter_number, b.parameter_index});
          if (it == args.end()) return Internal("rocm executor: no argument for allocation ", b.index);
          if (it->second.size < static_cast<uint64_t>(b.size))
            return InvalidArgument("rocm executor: argument ", b.parameter_number, " has ", it->second.size,
                                   " bytes, its parameter needs ", b.size);
          bases_[b.index] = it->second;
          break;
        }
        case BufferAllocation::Kind::kConstant: bases_[b.index] = constants_.at(b.index); break;
        case BufferAllocation::Kind::kTemp: {
          KILN_ASSIGN_OR_RETURN(runtime::DeviceMemory m, allocator_->Allocate(static_cast<uint64_t>(b.size), "temp"));
          owned.push_back(m);
          bases_[b.index] = m;
          break;
        }
      }
    }
    KILN_ASSIGN_OR_RETURN(scratch_, allocator_->Allocate(static_cast<uint64_t>(scratch_bytes_), "scratch"));
    owned.push_back(scratch_);
    return RunSequence(&entry, stream);
  }();
  std::vector<runtime::DeviceMemory> results;
  if (status.ok()) {
    for (const BufferSlice& out : compiled_.assignment->output_slices()) {
      StatusOr<runtime::DeviceMemory> m = allocator_->Allocate(static_cast<uint64_t>(out.size), "result");
      if (!m.ok()) {
        status = m.status();
        break;
      }
      results.push_back(*m);
      if (out.size > 0) status = stream.MemcpyDeviceToDevice(*m, Memory(out), out.size);
      if (!status.ok()) break;
    }
  }
  Status synced = stream.Synchronize();
  if (status.ok()) status = synced;
  release();
  if (!status.ok()) {
    for (runtime::DeviceMemory& m : results) (void)allocator_->Deallocate(m);
    return status;
  }
  return results;
}

}  // namespace kiln::rocm
