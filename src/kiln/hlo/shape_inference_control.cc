// Shape inference for control flow (while, conditional, call) and collectives, plus the
// collective group-size rule.
#include <algorithm>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/base/saturating.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

Shape SingleOrTuple(std::vector<Shape> shapes) {
  if (shapes.size() == 1) return std::move(shapes[0]);
  return Shape::Tuple(std::move(shapes));
}

}  // namespace

StatusOr<Shape> InferWhileShape(const ProgramShape& condition, const ProgramShape& body,
                                const Shape& init) {
  if (condition.parameters.size() != 1)
    return InvalidArgument("while condition must take 1 parameter, takes ",
                           condition.parameters.size());
  if (body.parameters.size() != 1)
    return InvalidArgument("while body must take 1 parameter, takes ", body.parameters.size());
  if (!condition.result.IsScalar() || condition.result.element_type() != PrimitiveType::kPred)
    return InvalidArgument("while condition must return pred[], returns ", Str(condition.result));
  if (!SameShape(condition.parameters[0], init))
    return InvalidArgument("while condition parameter ", Str(condition.parameters[0]),
                           " does not match the loop state ", Str(init));
  if (!SameShape(body.parameters[0], init))
    return InvalidArgument("while body parameter ", Str(body.parameters[0]),
                           " does not match the loop state ", Str(init));
  if (!SameShape(body.result, init))
    return InvalidArgument("while body result ", Str(body.result),
                           " does not match the loop state ", Str(init));
  return NoLayout(init);
}

StatusOr<Shape> InferConditionalShape(const Shape& branch_index,
                                      const std::vector<ProgramShape>& branches,
                                      const std::vector<const Shape*>& branch_operands) {
  if (!branch_index.IsScalar() || (branch_index.element_type() != PrimitiveType::kPred &&
                                   branch_index.element_type() != PrimitiveType::kS32))
    return InvalidArgument("conditional branch index must be pred[] or s32[], found ",
                           Str(branch_index));
  if (branch_index.element_type() == PrimitiveType::kPred && branches.size() != 2)
    return InvalidArgument("conditional with a pred index needs 2 branches, has ",
                           branches.size());
  if (branches.empty()) return InvalidArgument("conditional needs at least one branch");
  if (branches.size() != branch_operands.size())
    return InvalidArgument("conditional has ", branches.size(), " branches but ",
                           branch_operands.size(), " branch operands");
  for (size_t j = 0; j < branches.size(); ++j) {
    if (branches[j].parameters.size() != 1)
      return InvalidArgument("conditional branch ", j, " must take 1 parameter, takes ",
                             branches[j].parameters.size());
    if (!SameShape(branches[j].parameters[0], *branch_operands[j]))
      return InvalidArgument("conditional branch ", j, " parameter ",
                             Str(branches[j].parameters[0]), " does not match its operand ",
                             Str(*branch_operands[j]));
    if (!SameShape(branches[j].result, branches[0].result))
      return InvalidArgument("conditional branch ", j, " returns ", Str(branches[j].result),
                             " but branch 0 returns ", Str(branches[0].result));
  }
  return NoLayout(branches[0].result);
}

StatusOr<Shape> InferCallShape(const std::vector<const Shape*>& args, const ProgramShape& to_apply) {
  if (args.size() != to_apply.parameters.size())
    return InvalidArgument("called computation ", Signature(to_apply), " takes ",
                           to_apply.parameters.size(), " parameters but gets ", args.size(),
                           " arguments");
  for (size_t i = 0; i < args.size(); ++i)
    if (!SameShape(*args[i], to_apply.parameters[i]))
      return InvalidArgument("argument ", i, " ", Str(*args[i]),
                             " does not match the called computation's parameter ",
                             Str(to_apply.parameters[i]));
  return NoLayout(to_apply.result);
}

StatusOr<Shape> InferAllGatherShape(const std::vector<const Shape*>& operands, int64_t dimension,
                                    int64_t shard_count) {
  if (operands.empty()) return InvalidArgument("all-gather needs at least one operand");
  if (shard_count < 1) return InvalidArgument("all-gather shard count ", shard_count, " must be positive");
  std::vector<Shape> outs;
  for (const Shape* s : operands) {
    KILN_RETURN_IF_ERROR(ExpectArray(*s, "all-gather operands"));
    if (dimension < 0 || dimension >= s->rank())
      return InvalidArgument("all-gather dimensions={", dimension, "} is out of range for ",
                             Str(*s));
    Shape out = NoLayout(*s);
    out.set_dimensions(dimension, SaturatingMul(s->dimensions(dimension), shard_count));
    outs.push_back(std::move(out));
  }
  return SingleOrTuple(std::move(outs));
}

StatusOr<Shape> InferAllReduceShape(const std::vector<const Shape*>& operands) {
  if (operands.empty()) return InvalidArgument("all-reduce needs at least one operand");
  std::vector<Shape> outs;
  for (const Shape* s : operands) {
    KILN_RETURN_IF_ERROR(ExpectArray(*s, "all-reduce operands"));
    outs.push_back(NoLayout(*s));
  }
  return SingleOrTuple(std::move(outs));
}

StatusOr<Shape> InferReduceScatterShape(const std::vector<const Shape*>& operands,
                                        int64_t dimension, int64_t shard_count) {
  if (operands.empty()) return InvalidArgument("reduce-scatter needs at least one operand");
  if (shard_count < 1)
    return InvalidArgument("reduce-scatter shard count ", shard_count, " must be positive");
  std::vector<Shape> outs;
  for (const Shape* s : operands) {
    KILN_RETURN_IF_ERROR(ExpectArray(*s, "reduce-scatter operands"));
    if (dimension < 0 || dimension >= s->rank())
      return InvalidArgument("reduce-scatter dimensions={", dimension, "} is out of range for ",
                             Str(*s));
    if (s->dimensions(dimension) % shard_count != 0)
      return InvalidArgument("reduce-scatter dimension ", dimension, " of ", Str(*s),
                             " is not divisible by the group size ", shard_count);
    Shape out = NoLayout(*s);
    out.set_dimensions(dimension, s->dimensions(dimension) / shard_count);
    outs.push_back(std::move(out));
  }
  return SingleOrTuple(std::move(outs));
}

StatusOr<Shape> InferAllToAllShape(const std::vector<const Shape*>& operands,
                                   std::optional<int64_t> split_dimension, int64_t split_count) {
  if (operands.empty()) return InvalidArgument("all-to-all needs at least one operand");
  for (const Shape* s : operands) KILN_RETURN_IF_ERROR(ExpectArray(*s, "all-to-all operands"));
  if (split_dimension) {
    if (operands.size() != 1)
      return InvalidArgument("all-to-all with dimensions= takes one operand, has ",
                             operands.size());
    const Shape& s = *operands[0];
    if (*split_dimension < 0 || *split_dimension >= s.rank())
      return InvalidArgument("all-to-all dimensions={", *split_dimension,
                             "} is out of range for ", Str(s));
    if (split_count > 0 && s.dimensions(*split_dimension) % split_count != 0)
      return InvalidArgument("all-to-all split dimension ", *split_dimension, " of ", Str(s),
                             " is not divisible by the group size ", split_count);
    return NoLayout(s);
  }
  if (split_count > 1 && static_cast<int64_t>(operands.size()) != split_count)
    return InvalidArgument("all-to-all without dimensions= needs one operand per group member (",
                           split_count, "), has ", operands.size());
  for (const Shape* s : operands)
    if (!SameShape(*s, *operands[0]))
      return InvalidArgument("all-to-all operands must have equal shapes, found ",
                             Str(*operands[0]), " and ", Str(*s));
  return InferTupleShape(operands);
}

StatusOr<Shape> InferCollectivePermuteShape(const std::vector<const Shape*>& operands) {
  if (operands.size() == 1) return NoLayout(*operands[0]);
  // In-place form: (input, output, input_offsets, output_offsets) -> output.
  if (operands.size() == 4) return NoLayout(*operands[1]);
  return InvalidArgument("collective-permute takes 1 or 4 operands, has ", operands.size());
}

int64_t CollectiveGroupSize(const HloInstruction& instr) {
  const HloAttributes& a = instr.attrs();
  const HloModule* module = instr.parent() ? instr.parent()->parent() : nullptr;
  // XLA's group modes: no channel id -> cross-replica; a channel id -> cross-replica-and-
  // partition, or flattened ids with use_global_device_ids (which needs explicit groups);
  // all-to-all, collective-permute and collective-broadcast with a channel id -> cross-partition.
  const HloOpcode op = instr.opcode();
  const bool partition_only_ops = op == HloOpcode::kAllToAll ||
                                  op == HloOpcode::kCollectivePermute ||
                                  op == HloOpcode::kCollectivePermuteStart ||
                                  op == HloOpcode::kRaggedAllToAll ||
                                  op == HloOpcode::kCollectiveBroadcast;
  // Cross-replica-and-partition: a group of replica ids holds every partition of each.
  const int64_t per_id = a.channel_id && !a.use_global_device_ids && !partition_only_ops && module
                             ? std::max<int64_t>(1, module->header().num_partitions)
                             : 1;
  if (a.replica_groups) {
    if (a.replica_groups->is_iota) {
      if (a.replica_groups->iota_group_shape.size() == 2)
        return SaturatingMul(a.replica_groups->iota_group_shape[1], per_id);
    } else if (!a.replica_groups->groups.empty()) {
      return SaturatingMul(static_cast<int64_t>(a.replica_groups->groups[0].size()), per_id);
    }
  }
  if (!module) return 0;
  const int64_t replicas = module->header().replica_count;
  const int64_t partitions = module->header().num_partitions;
  if (!a.channel_id) return replicas;
  if (partition_only_ops) return partitions;
  if (a.use_global_device_ids) return 0;
  return SaturatingMul(replicas, partitions);
}

}  // namespace kiln
