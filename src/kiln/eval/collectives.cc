// Collectives with one participant, and asynchronous wrappers.
//
// The evaluator runs one replica of one partition, so a collective is runnable when every
// replica group it uses has this device alone (replica_groups={} or {{0}}, ...). Then:
//   all-reduce, reduce-scatter, all-to-all, collective-broadcast, all-gather: the operand(s)
//     unchanged (the reduction of one value is that value); when the result shape shows more
//     participants (all-gather growing a dimension, reduce-scatter shrinking one), the op is
//     UnsupportedInstruction;
//   collective-permute: the operand when the pairs include (me, me), zeros when no pair targets
//     this device; a pair (other, me) needs another participant and is unsupported.
//     "me" is the partition id when the op has a channel_id, else the replica id.
// The -start/-done forms: a start whose shape is the result's gives the result; a start with a
// tuple shape gives (operand(s), result, zero-filled context...); a done unwraps element 1 of
// a tuple start (or passes an array through). async-start runs its wrapped computation and
// gives ((operands...), result, zero-filled context...); async-update passes through;
// async-done takes element 1. copy-start gives (copy, operand, u32 context); copy-done takes
// element 0.
#include <algorithm>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/misc_internal.h"
#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

// The value of all operands: one array, or a tuple of them.
Literal OperandsValue(std::span<const Literal* const> ops) {
  if (ops.size() == 1) return *ops[0];
  std::vector<Literal> parts;
  for (const Literal* l : ops) parts.push_back(*l);
  return Literal::MakeTuple(std::move(parts));
}

// Fails unless the replica groups (if any) have at most one member each.
Status CheckSingleParticipant(const HloInstruction& instr) {
  const auto& groups = instr.attrs().replica_groups;
  if (!groups) return OkStatus();
  for (const auto& g : groups->Groups())
    if (g.size() > 1)
      return UnsupportedInstruction(
          instr, StrCat("a collective over ", g.size(), " participants (the evaluator runs one)"));
  return OkStatus();
}

// `value` if its shape matches `want` (ignoring layouts), else the multi-participant error.
StatusOr<Literal> IfShapeFits(const HloInstruction& instr, Literal value, const Shape& want) {
  if (!Shape::Compatible(value.shape(), want))
    return UnsupportedInstruction(
        instr, StrCat("result ", want.ToString(false), " from ", value.shape().ToString(false),
                      " needs more than one participant"));
  return value;
}

// The single-participant result of a synchronous collective `op` whose result shape is `want`.
StatusOr<Literal> SingleParticipant(const HloInstruction& instr, HloOpcode op,
                                    std::span<const Literal* const> ops, const Shape& want,
                                    Evaluator& e) {
  KILN_RETURN_IF_ERROR(CheckSingleParticipant(instr));
  switch (op) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
    case HloOpcode::kAllGather:
    case HloOpcode::kCollectiveBroadcast:
      return IfShapeFits(instr, OperandsValue(ops), want);
    case HloOpcode::kCollectivePermute: {
      const int64_t me =
          instr.attrs().channel_id ? e.options().partition_id : e.options().replica_id;
      bool self = false, other = false;
      for (const auto& [src, dst] : instr.attrs().source_target_pairs) {
        if (dst != me) continue;
        if (src == me)
          self = true;
        else
          other = true;
      }
      if (other)
        return UnsupportedInstruction(instr, "collective-permute from another participant");
      // Only the data operand(s) count (a combined permute may carry buffers after them).
      Literal v = ops.size() == 1 ? *ops[0] : OperandsValue(ops.subspan(0, 1));
      if (!self) v = Literal(want);
      return IfShapeFits(instr, std::move(v), want);
    }
    default:
      return UnsupportedInstruction(instr);
  }
}

HloOpcode SyncOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllReduceStart:
      return HloOpcode::kAllReduce;
    case HloOpcode::kAllGatherStart:
      return HloOpcode::kAllGather;
    case HloOpcode::kCollectivePermuteStart:
      return HloOpcode::kCollectivePermute;
    default:
      return op;
  }
}

StatusOr<Literal> EvalCollective(const HloInstruction& instr, std::span<const Literal* const> ops,
                                 Evaluator& e) {
  if (ops.empty())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has no operands");
  return SingleParticipant(instr, instr.opcode(), ops, instr.shape(), e);
}

StatusOr<Literal> EvalCollectiveStart(const HloInstruction& instr,
                                      std::span<const Literal* const> ops, Evaluator& e) {
  if (ops.empty())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), " has no operands");
  const Shape& s = instr.shape();
  const HloOpcode op = SyncOpcode(instr.opcode());
  // The start's own shape is the result (all-reduce-start).
  Literal operands = OperandsValue(ops);
  if (Shape::Compatible(s, operands.shape()) && op != HloOpcode::kCollectivePermute)
    return SingleParticipant(instr, op, ops, s, e);
  if (!s.IsTuple() || s.tuple_shapes_size() < 2) return SingleParticipant(instr, op, ops, s, e);
  KILN_ASSIGN_OR_RETURN(Literal result, SingleParticipant(instr, op, ops, s.tuple_shapes(1), e));
  std::vector<Literal> parts;
  if (Shape::Compatible(operands.shape(), s.tuple_shapes(0))) {
    parts.push_back(std::move(operands));
  } else {
    parts.emplace_back(s.tuple_shapes(0));
  }
  parts.push_back(std::move(result));
  for (int64_t i = 2; i < s.tuple_shapes_size(); ++i) parts.emplace_back(s.tuple_shapes(i));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalCollectiveDone(const HloInstruction& instr,
                                     std::span<const Literal* const> ops, Evaluator&) {
  if (ops.size() != 1)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                           " takes one operand");
  const Literal& start = *ops[0];
  if (Shape::Compatible(start.shape(), instr.shape())) return start;
  if (start.shape().IsTuple() && start.tuple_size() >= 2 &&
      Shape::Compatible(start.tuple_element(1).shape(), instr.shape()))
    return start.tuple_element(1);
  return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": operand ",
                         start.shape().ToString(false), " does not hold a ",
                         instr.shape().ToString(false));
}

StatusOr<Literal> EvalAsyncStart(const HloInstruction& instr, std::span<const Literal* const> ops,
                                 Evaluator& e) {
  if (instr.called_computations().empty())
    return InvalidArgument("async-start %", instr.name(), " wraps no computation");
  KILN_ASSIGN_OR_RETURN(Literal result, e.Evaluate(*instr.called_computations()[0], ops));
  const Shape& s = instr.shape();
  if (!s.IsTuple() || s.tuple_shapes_size() < 2)
    return InvalidArgument("async-start %", instr.name(), " must have a tuple shape");
  std::vector<Literal> parts;
  std::vector<Literal> operands;
  for (const Literal* l : ops) operands.push_back(*l);
  parts.push_back(Literal::MakeTuple(std::move(operands)));
  parts.push_back(std::move(result));
  for (int64_t i = 2; i < s.tuple_shapes_size(); ++i) parts.emplace_back(s.tuple_shapes(i));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalAsyncUpdate(const HloInstruction& instr, std::span<const Literal* const> ops,
                                  Evaluator&) {
  if (ops.size() != 1) return InvalidArgument("async-update %", instr.name(), " takes one operand");
  return *ops[0];
}

StatusOr<Literal> EvalAsyncDone(const HloInstruction& instr, std::span<const Literal* const> ops,
                                Evaluator&) {
  if (ops.size() != 1 || !ops[0]->shape().IsTuple() || ops[0]->tuple_size() < 2)
    return InvalidArgument("async-done %", instr.name(), " takes an async-start's value");
  return ops[0]->tuple_element(1);
}

StatusOr<Literal> EvalCopyStart(const HloInstruction& instr, std::span<const Literal* const> ops,
                                Evaluator&) {
  if (ops.size() != 1) return InvalidArgument("copy-start %", instr.name(), " takes one operand");
  const Shape& s = instr.shape();
  if (!s.IsTuple() || s.tuple_shapes_size() < 2)
    return InvalidArgument("copy-start %", instr.name(), " must have a tuple shape");
  std::vector<Literal> parts;
  parts.push_back(*ops[0]);
  parts.push_back(*ops[0]);
  for (int64_t i = 2; i < s.tuple_shapes_size(); ++i) parts.emplace_back(s.tuple_shapes(i));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalCopyDone(const HloInstruction& instr, std::span<const Literal* const> ops,
                               Evaluator&) {
  if (ops.size() != 1 || !ops[0]->shape().IsTuple() || ops[0]->tuple_size() < 1)
    return InvalidArgument("copy-done %", instr.name(), " takes a copy-start's value");
  return ops[0]->tuple_element(0);
}

}  // namespace

namespace eval_internal {
void RegisterCollectiveKernels(KernelRegistry& r) {
  for (HloOpcode op :
       {HloOpcode::kAllReduce, HloOpcode::kAllGather, HloOpcode::kReduceScatter,
        HloOpcode::kAllToAll, HloOpcode::kCollectivePermute, HloOpcode::kCollectiveBroadcast})
    r.Register(op, EvalCollective);
  for (HloOpcode op :
       {HloOpcode::kAllReduceStart, HloOpcode::kAllGatherStart, HloOpcode::kCollectivePermuteStart})
    r.Register(op, EvalCollectiveStart);
  for (HloOpcode op :
       {HloOpcode::kAllReduceDone, HloOpcode::kAllGatherDone, HloOpcode::kCollectivePermuteDone})
    r.Register(op, EvalCollectiveDone);
  r.Register(HloOpcode::kAsyncStart, EvalAsyncStart);
  r.Register(HloOpcode::kAsyncUpdate, EvalAsyncUpdate);
  r.Register(HloOpcode::kAsyncDone, EvalAsyncDone);
  r.Register(HloOpcode::kCopyStart, EvalCopyStart);
  r.Register(HloOpcode::kCopyDone, EvalCopyDone);
}
}  // namespace eval_internal

}  // namespace kiln
