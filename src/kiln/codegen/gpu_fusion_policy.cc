#include "kiln/codegen/gpu_fusion_policy.h"

#include <algorithm>

#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln::codegen {

GpuFusionOptions GpuFusionPolicy::DefaultOptions() {
  GpuFusionOptions o;
  // A kernel launch costs a few microseconds: at ~3 TB/s, that is several MB of traffic; a
  // modest figure keeps tiny fusions from growing absurdly.
  o.cost.kernel_cost_bytes = 256 * 1024;
  // Note [Normalization fusion]: recomputing per-row values is cheap next to memory traffic.
  o.cost.max_expensive_recompute = int64_t{1} << 32;
  o.cost.max_instructions = 256;
  // Note [In-place update spaces]: the in-place dynamic-update-slice emitter takes loop outputs
  // of its update window.
  o.cost.in_place_update_spaces = true;
  return o;
}

GpuFusionPolicy::GpuFusionPolicy(GpuFusionOptions options)
    : FusionPolicy(options.cost), gpu_options_(options) {}

namespace {

bool RowMajor(const Shape& s) { return !s.has_layout() || s.layout().IsDefaultFor(s.rank()); }

bool HasControlDeps(const HloInstruction& i) {
  return !i.control_predecessors().empty() || !i.control_successors().empty();
}

// Elementwise opcodes the elemental emitter computes (codegen/elemental_ops.h), plus map.
bool IsGeneratedElementwise(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAbs: case HloOpcode::kAcos: case HloOpcode::kAcosh: case HloOpcode::kAdd:
    case HloOpcode::kAnd: case HloOpcode::kAsin: case HloOpcode::kAsinh: case HloOpcode::kAtan:
    case HloOpcode::kAtan2: case HloOpcode::kAtanh: case HloOpcode::kCbrt: case HloOpcode::kCeil:
    case HloOpcode::kClamp: case HloOpcode::kClz: case HloOpcode::kCompare: case HloOpcode::kComplex:
    case HloOpcode::kConvert: case HloOpcode::kCos: case HloOpcode::kCosh: case HloOpcode::kDivide:
    case HloOpcode::kErf: case HloOpcode::kExp: case HloOpcode::kExpm1: case HloOpcode::kFloor:
    case HloOpcode::kImag: case HloOpcode::kIsFinite: case HloOpcode::kLog: case HloOpcode::kLog1p:
    case HloOpcode::kLogistic: case HloOpcode::kMaximum: case HloOpcode::kMinimum:
    case HloOpcode::kMulhi: case HloOpcode::kMultiply: case HloOpcode::kNegate: case HloOpcode::kNot:
    case HloOpcode::kOr: case HloOpcode::kPopulationCount: case HloOpcode::kPower: case HloOpcode::kReal:
    case HloOpcode::kReducePrecision: case HloOpcode::kRemainder: case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven: case HloOpcode::kRsqrt: case HloOpcode::kSelect:
    case HloOpcode::kShiftLeft: case HloOpcode::kShiftRightArithmetic:
    case HloOpcode::kShiftRightLogical: case HloOpcode::kSign: case HloOpcode::kSin:
    case HloOpcode::kSinh: case HloOpcode::kSqrt: case HloOpcode::kSubtract: case HloOpcode::kTan:
    case HloOpcode::kTanh: case HloOpcode::kXor: case HloOpcode::kMap:
      return true;
    default:
      return false;
  }
}

bool HasReduce(const HloInstruction& instr) {
  if (instr.opcode() == HloOpcode::kReduce) return true;
  if (!IsFusion(instr)) return false;
  for (const HloInstruction* i : instr.fused_computation()->instructions())
    if (i->opcode() == HloOpcode::kReduce) return true;
  return false;
}

// The reduces of an instruction (itself, or those of its fused computation).
std::vector<const HloInstruction*> Reduces(const HloInstruction& instr) {
  if (!IsFusion(instr)) {
    if (instr.opcode() == HloOpcode::kReduce) return {&instr};
    return {};
  }
  std::vector<const HloInstruction*> out;
  for (const HloInstruction* i : instr.fused_computation()->instructions())
    if (i->opcode() == HloOpcode::kReduce) out.push_back(i);
  return out;
}

// The dimensions a (fused) instruction iterates over: its (first) output's.
const Shape* IterationShape(const HloInstruction& instr) {
  if (!IsFusion(instr)) return instr.shape().IsArray() ? &instr.shape() : nullptr;
  const HloInstruction* root = FusedRoot(instr);
  if (root->opcode() == HloOpcode::kTuple) root = root->operand(0);
  if (root->opcode() == HloOpcode::kReduce) return &root->operand(0)->shape();
  return root->shape().IsArray() ? &root->shape() : nullptr;
}

}  // namespace

bool GpuFusionPolicy::IsLoopFusibleOp(const HloInstruction& instr) const {
  if (!instr.shape().IsArray() || HasControlDeps(instr)) return false;
  switch (instr.opcode()) {
    case HloOpcode::kBitcastConvert:
      return instr.shape().dimensions() == instr.operand(0)->shape().dimensions();
    case HloOpcode::kBroadcast: case HloOpcode::kReshape: case HloOpcode::kIota:
    case HloOpcode::kSlice: case HloOpcode::kPad: case HloOpcode::kConcatenate:
    case HloOpcode::kDynamicSlice: case HloOpcode::kReverse: case HloOpcode::kCopy:
    case HloOpcode::kTranspose:
      return true;
    case HloOpcode::kBitcast:
      return RowMajor(instr.shape()) && RowMajor(instr.operand(0)->shape());
    case HloOpcode::kConstant:
      return instr.has_literal() && !instr.literal_elided() &&
             ShapeBytes(instr.shape()) <= gpu_options_.constant_max_bytes;
    default:
      return IsGeneratedElementwise(instr.opcode());
  }
}

bool GpuFusionPolicy::IsRowReduction(const HloInstruction& instr) const {
  std::vector<const HloInstruction*> reduces = Reduces(instr);
  if (reduces.empty()) return false;
  for (const HloInstruction* r : reduces) {
    const Shape& in = r->operand(0)->shape();
    if (!in.IsArray() || !RowMajor(in)) return false;
    std::vector<int64_t> dims = r->attrs().dimensions;
    std::sort(dims.begin(), dims.end());
    // Reduced dimensions are the trailing ones, ignoring unit dimensions.
    int64_t next = in.rank() - 1;
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
      while (next > *it && in.dimensions(next) == 1) --next;
      if (*it != next) return false;
      --next;
    }
  }
  return true;
}

bool GpuFusionPolicy::IsFusibleProducer(const HloInstruction& instr) const {
  if (!instr.shape().IsArray()) return false;
  if (!IsFusion(instr)) {
    if (IsLoopFusibleOp(instr)) return true;
    return gpu_options_.normalization_fusion && instr.opcode() == HloOpcode::kReduce && !HasControlDeps(instr) &&
           IsRowReduction(instr);
  }
  if (IsMultiOutputFusion(instr)) return false;
  if (instr.attrs().fusion_kind == FusionKind::kInput)
    return gpu_options_.normalization_fusion && IsRowReduction(instr);
  if (instr.attrs().fusion_kind != FusionKind::kLoop) return false;
  for (const HloInstruction* i : instr.fused_computation()->instructions()) {
    if (i->opcode() == HloOpcode::kParameter) continue;
    if (!IsLoopFusibleOp(*i)) return false;
  }
  return true;
}

std::optional<FusionKind> GpuFusionPolicy::FusionKindForRoot(const HloInstruction& instr) const {
  if (HasControlDeps(instr)) return std::nullopt;
  if (instr.opcode() == HloOpcode::kReduce) {
    for (const HloInstruction* o : instr.operands())
      if (!o->shape().IsArray()) return std::nullopt;
    return FusionKind::kInput;
  }
  if (instr.opcode() == HloOpcode::kDynamicUpdateSlice && instr.shape().IsArray()) return FusionKind::kLoop;
  if (instr.opcode() == HloOpcode::kConstant || instr.opcode() == HloOpcode::kIota) return std::nullopt;
  if (IsLoopFusibleOp(instr)) return FusionKind::kLoop;
  return std::nullopt;
}

FusionDecision GpuFusionPolicy::CanFuseIntoOperand(const HloInstruction& producer,
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

FusionDecision GpuFusionPolicy::CanFuseNormalization(const HloInstruction& producer,
                                                     const HloInstruction& consumer) const {
  if (!IsRowReduction(producer)) return FusionDecision::Forbid("not a row reduction");
  if (producer.user_count() != 1 || producer.IsRoot())
    return FusionDecision::Forbid("a reduction fused into its consumer must have no other user");
  std::vector<const HloInstruction*> reduces = Reduces(producer);
  const Shape& in = reduces[0]->operand(0)->shape();
  std::vector<int64_t> rd = reduces[0]->attrs().dimensions;
  std::sort(rd.begin(), rd.end());
  for (const HloInstruction* r : reduces) {
    std::vector<int64_t> d = r->attrs().dimensions;
    std::sort(d.begin(), d.end());
    if (r->operand(0)->shape().dimensions() != in.dimensions() || d != rd)
      return FusionDecision::Forbid("reductions of different shapes");
  }
  const Shape* space = IterationShape(consumer);
  if (!space || space->dimensions() != in.dimensions())
    return FusionDecision::Forbid("the consumer does not iterate over the reduction's input");
  for (const HloInstruction* r : Reduces(consumer)) {
    std::vector<int64_t> d = r->attrs().dimensions;
    std::sort(d.begin(), d.end());
    if (r->operand(0)->shape().dimensions() != in.dimensions() || d != rd)
      return FusionDecision::Forbid("the consumer reduces differently");
  }
  if (IsFusion(consumer) && IsMultiOutputFusion(consumer))
    return FusionDecision::Forbid("multi-output consumer");
  return FusionDecision::Allow();
}

FusionDecision GpuFusionPolicy::ShouldFuse(const HloInstruction& producer, const HloInstruction& consumer,
                                           bool producer_dies) const {
  if (HasReduce(producer)) {
    FusionDecision legal = CanFuse(producer, consumer);
    if (!legal) return legal;
    return CanFuseNormalization(producer, consumer);
  }
  // An expensive producer read only at its own index by a reduction fusion (through its
  // reduces: softmax's exp feeding both the sum and the division) is computed once per element;
  // the neutral model would count the reduce's broadcast back as reuse.
  if (HasReduce(consumer) && IsExpensive(producer) && producer.user_count() == 1 && !producer.IsRoot()) {
    bool same_index = true;
    for (int64_t i = 0; i < consumer.operand_count(); ++i)
      if (consumer.operand(i) == &producer) same_index &= ReadsAtSameIndex(consumer, i);
    if (same_index) return CanFuse(producer, consumer);
  }
  return FusionPolicy::ShouldFuse(producer, consumer, producer_dies);
}

FusionKind GpuFusionPolicy::KindAfterFusion(const HloInstruction& producer,
                                            const HloInstruction& consumer) const {
  if (HasReduce(producer) || HasReduce(consumer)) return FusionKind::kInput;
  return FusionPolicy::KindAfterFusion(producer, consumer);
}

}  // namespace kiln::codegen
