#include "kiln/passes/cpu_fusion_policy.h"

#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln {

CpuFusionOptions CpuFusionPolicy::DefaultOptions() {
  CpuFusionOptions o;
  // A CPU "kernel launch" is a task on the thread pool: cheap, but not free.
  o.cost.kernel_cost_bytes = 16 * 1024;
  // Recomputing up to a thousand transcendentals beats a separate tiny kernel.
  o.cost.max_expensive_recompute = 1024;
  return o;
}

CpuFusionPolicy::CpuFusionPolicy(CpuFusionOptions options)
    : FusionPolicy(options.cost), cpu_options_(options) {}

namespace {

bool HasDefaultLayout(const Shape& s) {
  return !s.has_layout() || s.layout().IsDefaultFor(s.rank());
}

}  // namespace

bool CpuFusionPolicy::IsLoopFusibleOp(const HloInstruction& instr) const {
  if (!instr.shape().IsArray()) return false;
  if (!instr.control_predecessors().empty() || !instr.control_successors().empty()) return false;
  switch (instr.opcode()) {
    case HloOpcode::kMap:
    case HloOpcode::kRng:
      return false;
    case HloOpcode::kBitcastConvert:
      return instr.shape().dimensions() == instr.operand(0)->shape().dimensions();
    case HloOpcode::kBroadcast: case HloOpcode::kReshape: case HloOpcode::kIota:
    case HloOpcode::kSlice: case HloOpcode::kPad: case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicSlice: case HloOpcode::kReverse: case HloOpcode::kCopy:
    case HloOpcode::kConvert:
      return true;
    case HloOpcode::kBitcast:
      return HasDefaultLayout(instr.shape()) && HasDefaultLayout(instr.operand(0)->shape());
    case HloOpcode::kTranspose:
      return IsTrivialTranspose(instr) ||
             ShapeBytes(instr.shape()) <= cpu_options_.transpose_max_bytes;
    case HloOpcode::kConstant:
      return instr.has_literal() && !instr.literal_elided() &&
             ShapeBytes(instr.shape()) <= cpu_options_.constant_max_bytes;
    default:
      return instr.IsElementwise();
  }
}

bool CpuFusionPolicy::IsFusibleProducer(const HloInstruction& instr) const {
  if (!instr.shape().IsArray()) return false;
  if (!IsFusion(instr)) return IsLoopFusibleOp(instr);
  // A loop fusion merges into its consumer when everything in it could have.
  if (instr.attrs().fusion_kind != FusionKind::kLoop || IsMultiOutputFusion(instr)) return false;
  for (const HloInstruction* i : instr.fused_computation()->instructions()) {
    if (i->opcode() == HloOpcode::kParameter) continue;
    if (!IsLoopFusibleOp(*i)) return false;
  }
  return true;
}

std::optional<FusionKind> CpuFusionPolicy::FusionKindForRoot(const HloInstruction& instr) const {
  if (!instr.control_predecessors().empty() || !instr.control_successors().empty())
    return std::nullopt;
  if (instr.opcode() == HloOpcode::kReduce) return FusionKind::kInput;
  if (instr.opcode() == HloOpcode::kDynamicUpdateSlice && instr.shape().IsArray())
    return FusionKind::kLoop;
  if (instr.opcode() == HloOpcode::kConstant || instr.opcode() == HloOpcode::kIota)
    return std::nullopt;  // nothing to fuse into them
  if (IsLoopFusibleOp(instr)) return FusionKind::kLoop;
  return std::nullopt;
}

FusionDecision CpuFusionPolicy::CanFuseIntoOperand(const HloInstruction& producer,
                                                   const HloInstruction& consumer,
                                                   int64_t operand_index) const {
  (void)producer;
  if (!IsFusion(consumer)) {
    if (consumer.opcode() == HloOpcode::kDynamicUpdateSlice && operand_index == 0)
      return FusionDecision::Forbid("the buffer of an in-place dynamic-update-slice");
    return FusionDecision::Allow();
  }
  const HloInstruction* param = FusedParameter(consumer, operand_index);
  if (!param) return FusionDecision::Forbid("no fused parameter");
  for (const HloInstruction* u : param->users())
    if (u->opcode() == HloOpcode::kDynamicUpdateSlice && u->operand(0) == param)
      return FusionDecision::Forbid("the buffer of an in-place dynamic-update-slice");
  return FusionDecision::Allow();
}

}  // namespace kiln
