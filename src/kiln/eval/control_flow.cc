// Structural and control-flow kernels: constant, tuple, get-tuple-element, call, while,
// conditional, copy-like identities (copy, opt-barrier, domain, add-dependency, after-all),
// replica-id/partition-id.
#include "kiln/base/strings.h"
#include "kiln/eval/kernels.h"
#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

StatusOr<Literal> EvalConstant(const HloInstruction& instr, std::span<const Literal* const>,
                               Evaluator&) {
  if (!instr.has_literal() || instr.literal_elided())
    return InvalidArgument("constant %", instr.name(),
                           " has no value (elided in the text: use random fill to run it)");
  Literal l = instr.literal();
  return l;
}

StatusOr<Literal> EvalTuple(const HloInstruction&, std::span<const Literal* const> ops,
                            Evaluator&) {
  std::vector<Literal> elems;
  elems.reserve(ops.size());
  for (const Literal* l : ops) elems.push_back(*l);
  return Literal::MakeTuple(std::move(elems));
}

StatusOr<Literal> EvalGetTupleElement(const HloInstruction& instr,
                                      std::span<const Literal* const> ops, Evaluator&) {
  int64_t i = instr.attrs().tuple_index;
  if (!ops[0]->shape().IsTuple() || i < 0 || i >= ops[0]->tuple_size())
    return InvalidArgument("get-tuple-element index ", i, " out of range for ",
                           ops[0]->shape().ToString(false));
  return ops[0]->tuple_element(i);
}

StatusOr<Literal> EvalIdentity(const HloInstruction&, std::span<const Literal* const> ops,
                               Evaluator&) {
  return *ops[0];
}

StatusOr<Literal> EvalToken(const HloInstruction&, std::span<const Literal* const>, Evaluator&) {
  return Literal::Token();
}

StatusOr<Literal> EvalCall(const HloInstruction& instr, std::span<const Literal* const> ops,
                           Evaluator& e) {
  if (!instr.to_apply()) return InvalidArgument("call %", instr.name(), " has no to_apply");
  return e.Evaluate(*instr.to_apply(), ops);
}

StatusOr<Literal> EvalWhile(const HloInstruction& instr, std::span<const Literal* const> ops,
                            Evaluator& e) {
  Literal state = *ops[0];
  int64_t limit = e.options().max_loop_iterations;
  for (int64_t iter = 0;; ++iter) {
    if (limit >= 0 && iter >= limit)
      return DeadlineExceeded("while %", instr.name(), " ran more than ", limit, " iterations");
    const Literal* arg = &state;
    KILN_ASSIGN_OR_RETURN(Literal pred, e.Evaluate(*instr.while_condition(), {&arg, 1}));
    if (!pred.shape().IsArray() || pred.element_count() != 1)
      return InvalidArgument("while condition must return pred[]");
    if (!pred.GetAsBool(0)) break;
    KILN_ASSIGN_OR_RETURN(state, e.Evaluate(*instr.while_body(), {&arg, 1}));
  }
  return state;
}

StatusOr<Literal> EvalConditional(const HloInstruction& instr,
                                  std::span<const Literal* const> ops, Evaluator& e) {
  const Literal& selector = *ops[0];
  const auto& branches = instr.branch_computations();
  int64_t index;
  if (selector.shape().element_type() == PrimitiveType::kPred) {
    // true -> branch 0 (true_computation), false -> branch 1.
    index = selector.GetAsBool(0) ? 0 : 1;
  } else {
    index = selector.GetAsInt64(0);
    // Out of range selects the last branch (XLA's semantics).
    if (index < 0 || index >= static_cast<int64_t>(branches.size()))
      index = static_cast<int64_t>(branches.size()) - 1;
  }
  if (index < 0 || index >= static_cast<int64_t>(branches.size()))
    return InvalidArgument("conditional %", instr.name(), " has no branch ", index);
  const Literal* arg = ops[index + 1];
  return e.Evaluate(*branches[index], {&arg, 1});
}

StatusOr<Literal> EvalReplicaId(const HloInstruction& instr, std::span<const Literal* const>,
                                Evaluator& e) {
  Literal l(instr.shape());
  l.SetFromInt64(0, instr.opcode() == HloOpcode::kReplicaId ? e.options().replica_id
                                                            : e.options().partition_id);
  return l;
}

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kConstant, EvalConstant);
  r.Register(HloOpcode::kTuple, EvalTuple);
  r.Register(HloOpcode::kGetTupleElement, EvalGetTupleElement);
  r.Register(HloOpcode::kCopy, EvalIdentity);
  r.Register(HloOpcode::kOptimizationBarrier, EvalIdentity);
  r.Register(HloOpcode::kDomain, EvalIdentity);
  r.Register(HloOpcode::kAddDependency, EvalIdentity);
  r.Register(HloOpcode::kAfterAll, EvalToken);
  r.Register(HloOpcode::kCall, EvalCall);
  r.Register(HloOpcode::kWhile, EvalWhile);
  r.Register(HloOpcode::kConditional, EvalConditional);
  r.Register(HloOpcode::kReplicaId, EvalReplicaId);
  r.Register(HloOpcode::kPartitionId, EvalReplicaId);
}

}  // namespace kiln
