// The evaluator fallback kernel: runs the reference evaluator's kernel for the instruction's
// opcode on literals copied from the input views, and copies the result's leaves out.
#include "kiln/cpu/collective_context.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/kernels.h"

namespace kiln::cpu {
namespace internal {
namespace {

class EvaluatorFallbackKernel final : public CpuKernel {
 public:
  EvaluatorFallbackKernel(const HloInstruction& instr, EvalKernel kernel)
      : instr_(instr), kernel_(kernel) {
    for (const HloInstruction* op : instr.operands()) operand_shapes_.push_back(op->shape());
  }

  std::string name() const override {
    return "evaluator[" + std::string(HloOpcodeString(instr_.opcode())) + " " +
           ShapeText(instr_.shape()) + "]";
  }

  bool runs_evaluator() const override { return true; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    std::vector<Literal> operands;
    operands.reserve(operand_shapes_.size());
    size_t next = 0;
    for (const Shape& s : operand_shapes_) {
      KILN_ASSIGN_OR_RETURN(Literal l, LiteralFromViews(s, inputs, &next));
      operands.push_back(std::move(l));
    }
    if (next != inputs.size())
      return InvalidArgument(name(), ": got ", inputs.size(), " input arrays, expected ", next);
    std::vector<const Literal*> ptrs;
    for (const Literal& l : operands) ptrs.push_back(&l);
    // A fresh evaluator per run: kernels are run concurrently, and the evaluator is not
    // thread-safe. The stateful RNG ops take the run's state from the context.
    // In a multi-participant run the evaluator is this participant: its ids, and the run's
    // rendezvous for the collectives without a native kernel.
    EvaluatorOptions eo;
    if (const CollectiveContext* cc = ctx.collectives) {
      eo.replica_id = cc->replica_id();
      eo.partition_id = cc->partition_id();
      eo.replica_count = cc->grid.replica_count;
      eo.num_partitions = cc->grid.num_partitions;
      eo.rendezvous = cc->rendezvous;
    }
    Evaluator evaluator(eo);
    Literal result;
    const bool stateful = instr_.opcode() == HloOpcode::kRng || instr_.opcode() == HloOpcode::kRngGetAndUpdateState ||
                          (instr_.opcode() == HloOpcode::kCustomCall &&
                           instr_.attrs().custom_call_target == "GetRngSeed");
    if (stateful && ctx.rng_state != nullptr) {
      // The run's RNG state: read, advance as the evaluator does, publish (retried if another
      // kernel advanced it meanwhile), so ops see the state in some order, each exactly once.
      uint64_t before = ctx.rng_state->load();
      for (;;) {
        evaluator.rng_state() = before;
        KILN_ASSIGN_OR_RETURN(result, kernel_(instr_, ptrs, evaluator));
        if (ctx.rng_state->compare_exchange_strong(before, evaluator.rng_state())) break;
      }
    } else {
      KILN_ASSIGN_OR_RETURN(result, kernel_(instr_, ptrs, evaluator));
    }
    size_t out_next = 0;
    KILN_RETURN_IF_ERROR(LiteralToViews(result, outputs, &out_next));
    if (out_next != outputs.size())
      return InvalidArgument(name(), ": result has ", out_next, " arrays, got ",
                             outputs.size(), " output views");
    return OkStatus();
  }

 private:
  const HloInstruction& instr_;
  EvalKernel kernel_;
  std::vector<Shape> operand_shapes_;
};

}  // namespace
}  // namespace internal

StatusOr<std::unique_ptr<CpuKernel>> CreateEvaluatorFallbackKernel(const HloInstruction& instr) {
  EvalKernel kernel = KernelRegistry::Global().Find(instr.opcode());
  if (kernel == nullptr) return UnsupportedInstruction(instr, "no evaluator kernel");
  return std::unique_ptr<CpuKernel>(new internal::EvaluatorFallbackKernel(instr, kernel));
}

}  // namespace kiln::cpu
