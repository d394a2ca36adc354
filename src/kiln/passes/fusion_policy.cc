#include "kiln/passes/fusion_policy.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln {

// ---- Helpers ----

int64_t ShapeBytes(const Shape& shape) {
  if (shape.IsTuple()) {
    int64_t n = 0;
    for (const Shape& s : shape.tuple_shapes()) n += ShapeBytes(s);
    return n;
  }
  if (!shape.IsArray()) return 0;
  return shape.num_elements() * PrimitiveByteWidth(shape.element_type());
}

int64_t ShapeElements(const Shape& shape) {
  if (shape.IsTuple()) return shape.tuple_shapes_size() ? ShapeElements(shape.tuple_shapes(0)) : 0;
  return shape.IsArray() ? shape.num_elements() : 0;
}

bool IsTrivialTranspose(const HloInstruction& t) {
  if (t.opcode() != HloOpcode::kTranspose || t.operand_count() != 1) return false;
  const Shape& in = t.operand(0)->shape();
  int64_t last = -1;
  for (int64_t d : t.attrs().dimensions) {
    if (d < 0 || d >= in.rank()) return false;
    if (in.dimensions(d) == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

int64_t FusedOperandCount(const HloInstruction& producer, const HloInstruction& consumer) {
  std::unordered_set<const HloInstruction*> ops;
  for (const HloInstruction* o : consumer.operands())
    if (o != &producer) ops.insert(o);
  for (const HloInstruction* o : producer.operands()) ops.insert(o);
  return static_cast<int64_t>(ops.size());
}

namespace {

constexpr double kLargeReuse = 1e6;

double Ratio(int64_t out, int64_t in) {
  if (in <= 0) return 1;
  return std::max(1.0, static_cast<double>(out) / static_cast<double>(in));
}

// Reads of each element of operand j by one unfused instruction u.
double LocalReuse(const HloInstruction& u, int64_t j) {
  const HloInstruction& op = *u.operand(j);
  int64_t out = ShapeElements(u.shape()), in = ShapeElements(op.shape());
  switch (u.opcode()) {
    case HloOpcode::kBroadcast:
      return Ratio(out, in);
    case HloOpcode::kReduceWindow: {
      if (j >= u.operand_count() / 2) return Ratio(out, 1);  // init values
      double w = 1;
      if (u.attrs().window)
        for (const WindowDimension& d : u.attrs().window->dimensions) w *= static_cast<double>(d.size);
      return std::max(1.0, w);
    }
    case HloOpcode::kDot:
    case HloOpcode::kConvolution:
    case HloOpcode::kRaggedDot:
    case HloOpcode::kScaledDot:
      return kLargeReuse;
    case HloOpcode::kGather:
      return j == 0 ? kLargeReuse : 1;
    case HloOpcode::kReduce:
      return j < u.operand_count() / 2 ? 1 : Ratio(out, 1);
    case HloOpcode::kDynamicSlice:
    case HloOpcode::kDynamicUpdateSlice:
    case HloOpcode::kSlice:
    case HloOpcode::kConcatenate:
    case HloOpcode::kPad:
    case HloOpcode::kReverse:
    case HloOpcode::kTranspose:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kCopy:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
      return 1;
    default:
      if (u.IsElementwise()) return Ratio(out, in);  // scalar operands of elementwise ops
      return Ratio(out, in);
  }
}

}  // namespace

double OperandReuse(const HloInstruction& consumer, int64_t operand_index) {
  if (!IsFusion(consumer)) return LocalReuse(consumer, operand_index);
  const HloInstruction* param = FusedParameter(consumer, operand_index);
  if (!param) return 1;
  const HloInstruction* root = consumer.fused_computation()->root_instruction();
  std::unordered_map<const HloInstruction*, double> memo;
  std::function<double(const HloInstruction*)> reuse = [&](const HloInstruction* x) -> double {
    auto it = memo.find(x);
    if (it != memo.end()) return it->second;
    double r = x == root ? 1 : 0;
    for (const HloInstruction* u : x->users())
      for (int64_t j = 0; j < u->operand_count(); ++j)
        if (u->operand(j) == x) r = std::max(r, LocalReuse(*u, j) * reuse(u));
    memo[x] = r;
    return r;
  };
  return std::max(1.0, reuse(param));
}

bool IsInPlaceUpdate(const HloInstruction& dus) {
  if (dus.opcode() != HloOpcode::kDynamicUpdateSlice) return false;
  const HloInstruction* target = dus.operand(0);
  if (target->opcode() != HloOpcode::kParameter || target->user_count() != 1) return false;
  for (int64_t i = 1; i < dus.operand_count(); ++i)
    if (dus.operand(i) == target) return false;
  return dus.shape().IsArray() && dus.operand(1)->shape().num_elements() < dus.shape().num_elements();
}

std::vector<int64_t> SqueezedDims(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims)
    if (d != 1) out.push_back(d);
  return out;
}

std::vector<int64_t> SqueezedDims(const Shape& shape) { return SqueezedDims(shape.dimensions()); }

bool ReadsAtSameIndex(const HloInstruction& consumer, int64_t operand_index) {
  if (!IsFusion(consumer)) {
    return consumer.IsElementwise() &&
           consumer.shape().dimensions() == consumer.operand(operand_index)->shape().dimensions();
  }
  const HloInstruction* param = FusedParameter(consumer, operand_index);
  if (!param) return false;
  const std::vector<int64_t>& dims = param->shape().dimensions();
  const std::vector<int64_t> squeezed = SqueezedDims(dims);
  std::vector<const HloInstruction*> work = {param};
  std::unordered_set<const HloInstruction*> seen = {param};
  while (!work.empty()) {
    const HloInstruction* x = work.back();
    work.pop_back();
    for (const HloInstruction* u : x->users()) {
      // Size-1 dimensions added or dropped keep each element at its own index; so does the
      // update of a dynamic-update-slice that is an output (read once per window element).
      const bool squeeze = (u->opcode() == HloOpcode::kReshape || u->opcode() == HloOpcode::kBitcast) &&
                           u->shape().IsArray() && SqueezedDims(u->shape()) == squeezed;
      bool update = false;
      if (u->opcode() == HloOpcode::kDynamicUpdateSlice && u->operand(1) == x &&
          std::count(u->operands().begin(), u->operands().end(), x) == 1) {
        update = u->IsRoot() || (!u->users().empty() &&
                                 std::all_of(u->users().begin(), u->users().end(), [](const HloInstruction* uu) {
                                   return uu->opcode() == HloOpcode::kTuple && uu->IsRoot();
                                 }));
      }
      bool same = u->opcode() == HloOpcode::kTuple || update || squeeze ||
                  (u->opcode() == HloOpcode::kReduce && u->operand(0)->shape().dimensions() == dims) ||
                  (u->IsElementwise() && u->shape().IsArray() && SqueezedDims(u->shape()) == squeezed);
      if (!same) return false;
      if (u->opcode() != HloOpcode::kReduce && u->opcode() != HloOpcode::kTuple && !update &&
          seen.insert(u).second)
        work.push_back(u);
    }
  }
  return true;
}

std::string IterationSpace::ToString() const {
  if (!valid) return "none";
  std::string s = StrCat(reduction ? "reduce[" : "loop[", StrJoin(dims, ","), "]");
  if (reduction) s += StrCat(" dims={", StrJoin(reduce_dims, ","), "}");
  return s;
}

// ---- Hooks: defaults ----

bool FusionPolicy::CanGrow(const HloInstruction& fusion) const {
  return IsFusion(fusion) && (fusion.attrs().fusion_kind == FusionKind::kLoop ||
                              fusion.attrs().fusion_kind == FusionKind::kInput);
}

FusionDecision FusionPolicy::CanFuseIntoOperand(const HloInstruction&, const HloInstruction&,
                                                int64_t) const {
  return FusionDecision::Allow();
}

namespace {

// The values a fusion (or unfused instruction) outputs.
std::vector<const HloInstruction*> Outputs(const HloInstruction& instr) {
  if (!IsFusion(instr)) return {&instr};
  const HloInstruction* root = FusedRoot(instr);
  if (root->opcode() != HloOpcode::kTuple) return {root};
  return {root->operands().begin(), root->operands().end()};
}

int64_t OutputCount(const HloInstruction& instr) {
  return IsMultiOutputFusion(instr) ? FusedRoot(instr)->operand_count() : 1;
}

}  // namespace

IterationSpace FusionPolicy::GetIterationSpace(const HloInstruction& instr) const {
  IterationSpace space;
  std::optional<FusionKind> kind;
  if (IsFusion(instr)) {
    if (!CanGrow(instr)) return space;
    kind = instr.attrs().fusion_kind;
  } else {
    kind = FusionKindForRoot(instr);
    if (!kind) return space;
  }
  std::vector<const HloInstruction*> reduces, loops, updates;
  for (const HloInstruction* o : Outputs(instr)) {
    // In-place updates iterate over the update, not the output (Note [In-place update spaces]).
    if (o->opcode() == HloOpcode::kDynamicUpdateSlice) {
      if (!options_.in_place_update_spaces || !IsFusion(instr) || !IsInPlaceUpdate(*o)) return space;
      updates.push_back(o);
      continue;
    }
    if (o->opcode() == HloOpcode::kParameter) return space;
    if (o->opcode() == HloOpcode::kReduce) reduces.push_back(o);
    else if (o->shape().IsArray()) loops.push_back(o);
    else return space;
  }
  if (!updates.empty()) {
    if (updates.size() > 1 || !reduces.empty()) return space;
    space.in_place = true;
    space.dims = SqueezedDims(updates[0]->operand(1)->shape());
    for (const HloInstruction* l : loops)
      if (SqueezedDims(l->shape()) != space.dims) return space;
    space.valid = true;
    return space;
  }
  if (!reduces.empty()) {
    space.reduction = true;
    space.dims = reduces[0]->operand(0)->shape().dimensions();
    space.reduce_dims = reduces[0]->attrs().dimensions;
    std::sort(space.reduce_dims.begin(), space.reduce_dims.end());
    for (const HloInstruction* r : reduces) {
      std::vector<int64_t> rd = r->attrs().dimensions;
      std::sort(rd.begin(), rd.end());
      if (r->operand(0)->shape().dimensions() != space.dims || rd != space.reduce_dims) return space;
    }
  } else if (!loops.empty()) {
    space.dims = loops[0]->shape().dimensions();
  } else {
    return space;
  }
  for (const HloInstruction* l : loops)
    if (l->shape().dimensions() != space.dims) return space;
  space.valid = true;
  return space;
}

bool FusionPolicy::CompatibleIterationSpaces(const IterationSpace& a, const IterationSpace& b) const {
  if (!a.valid || !b.valid) return false;
  if (a.in_place || b.in_place) {
    // Note [In-place update spaces]: one in-place update with loop outputs of its window.
    if (a.in_place == b.in_place || a.reduction || b.reduction) return false;
    return (a.in_place ? a.dims : SqueezedDims(a.dims)) == (b.in_place ? b.dims : SqueezedDims(b.dims));
  }
  if (a.dims != b.dims) return false;
  if (a.reduction && b.reduction) return a.reduce_dims == b.reduce_dims;
  return true;  // loops over the same dims, or a loop output over a reduction's input dims
}

bool FusionPolicy::IsExpensive(const HloInstruction& instr) const {
  if (IsFusion(instr)) {
    for (const HloInstruction* i : instr.fused_computation()->instructions())
      if (IsExpensive(*i)) return true;
    return false;
  }
  switch (instr.opcode()) {
    case HloOpcode::kExp: case HloOpcode::kExpm1: case HloOpcode::kLog: case HloOpcode::kLog1p:
    case HloOpcode::kLogistic: case HloOpcode::kTanh: case HloOpcode::kSinh: case HloOpcode::kCosh:
    case HloOpcode::kSin: case HloOpcode::kCos: case HloOpcode::kTan: case HloOpcode::kAtan2:
    case HloOpcode::kAsin: case HloOpcode::kAcos: case HloOpcode::kAtan: case HloOpcode::kAsinh:
    case HloOpcode::kAcosh: case HloOpcode::kAtanh: case HloOpcode::kErf: case HloOpcode::kPower:
    case HloOpcode::kSqrt: case HloOpcode::kRsqrt: case HloOpcode::kCbrt:
      return true;
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
      return IsIntegralType(instr.shape().element_type());
    case HloOpcode::kDot: case HloOpcode::kConvolution: case HloOpcode::kRaggedDot:
    case HloOpcode::kScaledDot: case HloOpcode::kReduce: case HloOpcode::kReduceWindow:
    case HloOpcode::kGather: case HloOpcode::kScatter: case HloOpcode::kSort:
    case HloOpcode::kTopK: case HloOpcode::kFft: case HloOpcode::kCustomCall:
    case HloOpcode::kWhile: case HloOpcode::kConditional: case HloOpcode::kCall:
    case HloOpcode::kMap: case HloOpcode::kRng: case HloOpcode::kRngBitGenerator:
    case HloOpcode::kCholesky: case HloOpcode::kTriangularSolve:
    case HloOpcode::kSelectAndScatter: case HloOpcode::kBatchNormGrad:
    case HloOpcode::kBatchNormInference: case HloOpcode::kBatchNormTraining:
    case HloOpcode::kScan:
      return true;
    default:
      return IsCollectiveOpcode(instr.opcode());
  }
}

// ---- Decisions ----

FusionDecision FusionPolicy::CanFuse(const HloInstruction& producer,
                                     const HloInstruction& consumer) const {
  if (producer.parent() != consumer.parent()) return FusionDecision::Forbid("different computations");
  const auto& ops = consumer.operands();
  if (std::find(ops.begin(), ops.end(), &producer) == ops.end())
    return FusionDecision::Forbid("not an operand of the consumer");
  if (producer.opcode() == HloOpcode::kParameter) return FusionDecision::Forbid("parameter");
  if (!producer.control_predecessors().empty() || !producer.control_successors().empty() ||
      !consumer.control_predecessors().empty() || !consumer.control_successors().empty())
    return FusionDecision::Forbid("control dependencies");
  if (!producer.shape().IsArray() || IsMultiOutputFusion(producer))
    return FusionDecision::Forbid("producer is not a single array");
  if (!IsFusibleProducer(producer))
    return FusionDecision::Forbid(StrCat(HloOpcodeString(producer.opcode()), " is not fusible as a producer"));
  if (IsFusion(consumer)) {
    if (!CanGrow(consumer)) return FusionDecision::Forbid("consumer fusion cannot grow");
  } else if (!FusionKindForRoot(consumer)) {
    return FusionDecision::Forbid(StrCat(HloOpcodeString(consumer.opcode()), " cannot root a fusion"));
  }
  for (int64_t i = 0; i < consumer.operand_count(); ++i) {
    if (consumer.operand(i) != &producer) continue;
    FusionDecision d = CanFuseIntoOperand(producer, consumer, i);
    if (!d) return d;
  }
  if (FusedOperandCount(producer, consumer) > options_.max_operands)
    return FusionDecision::Forbid("too many operands");
  if (FusedInstructionCount(producer) + FusedInstructionCount(consumer) > options_.max_instructions)
    return FusionDecision::Forbid("too many instructions");
  return FusionDecision::Allow();
}

namespace {

// Bytes of operand `i` that `producer` reads: the window of a slice or dynamic-slice (also
// inside a fusion whose parameter feeds only those), else the whole operand (the step's slice
// of a scan's stacked input reads one step, not the stack).
double OperandReadBytes(const HloInstruction& producer, int64_t i) {
  const Shape& shape = producer.operand(i)->shape();
  const double whole = static_cast<double>(ShapeBytes(shape));
  if (!shape.IsArray()) return whole;
  const double elem = whole / static_cast<double>(std::max<int64_t>(1, ShapeElements(shape)));
  auto window = [&](const HloInstruction& x, const HloInstruction* operand) -> double {
    if ((x.opcode() == HloOpcode::kSlice || x.opcode() == HloOpcode::kDynamicSlice) && x.operand(0) == operand &&
        std::count(x.operands().begin(), x.operands().end(), operand) == 1)
      return elem * static_cast<double>(ShapeElements(x.shape()));
    return -1;
  };
  if (!IsFusion(producer)) {
    double w = window(producer, producer.operand(i));
    return w < 0 ? whole : std::min(whole, w);
  }
  const HloInstruction* param = FusedParameter(producer, i);
  if (!param || param->users().empty()) return whole;
  double read = 0;
  for (const HloInstruction* u : param->users()) {
    double w = window(*u, param);
    if (w < 0) return whole;
    read += w;
  }
  return std::min(whole, read);
}

// The fraction of `producer`'s elements that `consumer` reads when it reads it only through
// slices (an unfused slice, or a fusion whose parameter feeds only slices); 1 otherwise.
double SlicedFraction(const HloInstruction& producer, const HloInstruction& consumer) {
  const double total = static_cast<double>(std::max<int64_t>(1, ShapeElements(producer.shape())));
  if (!producer.shape().IsArray()) return 1;
  if (consumer.opcode() == HloOpcode::kSlice) return std::min(1.0, static_cast<double>(ShapeElements(consumer.shape())) / total);
  if (!IsFusion(consumer)) return 1;
  double read = 0;
  for (int64_t i = 0; i < consumer.operand_count(); ++i) {
    if (consumer.operand(i) != &producer) continue;
    const HloInstruction* param = FusedParameter(consumer, i);
    if (!param || param->users().empty()) return 1;
    for (const HloInstruction* u : param->users()) {
      if (u->opcode() != HloOpcode::kSlice) return 1;
      read += static_cast<double>(ShapeElements(u->shape()));
    }
  }
  return read > 0 ? std::min(1.0, read / total) : 1;
}

}  // namespace

FusionDecision FusionPolicy::ShouldFuse(const HloInstruction& producer,
                                        const HloInstruction& consumer, bool producer_dies) const {
  FusionDecision legal = CanFuse(producer, consumer);
  if (!legal) return legal;
  const int64_t users = producer.user_count() + (producer.IsRoot() ? 1 : 0);
  const bool duplicated = users > 1;
  const bool expensive = IsExpensive(producer);
  if (expensive && duplicated)
    return FusionDecision::Forbid("expensive producer would be duplicated");
  double reuse = 1;
  for (int64_t i = 0; i < consumer.operand_count(); ++i)
    if (consumer.operand(i) == &producer) reuse = std::max(reuse, OperandReuse(consumer, i));
  if (expensive && reuse > 1) {
    double extra = (reuse - 1) * static_cast<double>(ShapeElements(producer.shape()));
    if (extra > static_cast<double>(options_.max_expensive_recompute))
      return FusionDecision::Forbid(StrCat("expensive producer reused ", reuse, "x by the consumer"));
  }
  // Note [Fusion cost model].
  std::unordered_set<const HloInstruction*> consumer_ops(consumer.operands().begin(),
                                                         consumer.operands().end());
  std::unordered_set<const HloInstruction*> seen;
  double n = static_cast<double>(ShapeBytes(producer.shape())), in = 0, r = 0;
  for (int64_t i = 0; i < producer.operand_count(); ++i) {
    const HloInstruction* o = producer.operand(i);
    if (!seen.insert(o).second) continue;
    double b = OperandReadBytes(producer, i);
    in += b;
    if (!consumer_ops.count(o)) r += b;
  }
  // A consumer that reads only slices of the producer reads that fraction of it, and of its
  // operands once fused (Note [Fusion cost model]: the gate slices of an LSTM step).
  const double f = SlicedFraction(producer, consumer);
  double gain;
  if (!duplicated || producer_dies) {
    double k = static_cast<double>(std::max<int64_t>(users, 1));
    gain = in + n + k * f * n - k * f * r + static_cast<double>(options_.kernel_cost_bytes);
  } else {
    gain = f * (n - r);
  }
  if (gain < 0)
    return FusionDecision::Forbid(StrCat("costs ", static_cast<int64_t>(-gain), " bytes of traffic"));
  return FusionDecision::Allow();
}

FusionKind FusionPolicy::KindAfterFusion(const HloInstruction&, const HloInstruction& consumer) const {
  if (IsFusion(consumer)) return consumer.attrs().fusion_kind;
  return FusionKindForRoot(consumer).value_or(FusionKind::kLoop);
}

namespace {

bool HasControlDeps(const HloInstruction& i) {
  return !i.control_predecessors().empty() || !i.control_successors().empty();
}

int64_t UnionOperandCount(const HloInstruction& a, const HloInstruction& b) {
  std::unordered_set<const HloInstruction*> ops(a.operands().begin(), a.operands().end());
  for (const HloInstruction* o : b.operands())
    if (o != &a) ops.insert(o);
  ops.erase(&b);
  return static_cast<int64_t>(ops.size());
}

}  // namespace

FusionDecision FusionPolicy::ShouldFuseSiblings(const HloInstruction& a, const HloInstruction& b) const {
  if (&a == &b || a.parent() != b.parent()) return FusionDecision::Forbid("not siblings");
  if (HasControlDeps(a) || HasControlDeps(b)) return FusionDecision::Forbid("control dependencies");
  IterationSpace sa = GetIterationSpace(a), sb = GetIterationSpace(b);
  if (!sa.valid || !sb.valid) return FusionDecision::Forbid("not a loop or reduction fusion");
  if (!CompatibleIterationSpaces(sa, sb))
    return FusionDecision::Forbid(StrCat("iteration spaces differ: ", sa.ToString(), " vs ", sb.ToString()));
  if (OutputCount(a) + OutputCount(b) > options_.max_outputs)
    return FusionDecision::Forbid("too many outputs");
  if (UnionOperandCount(a, b) > options_.max_operands) return FusionDecision::Forbid("too many operands");
  if (FusedInstructionCount(a) + FusedInstructionCount(b) > options_.max_instructions)
    return FusionDecision::Forbid("too many instructions");
  std::unordered_set<const HloInstruction*> a_ops(a.operands().begin(), a.operands().end());
  std::unordered_set<const HloInstruction*> seen;
  int64_t shared = 0;
  for (const HloInstruction* o : b.operands())
    if (a_ops.count(o) && seen.insert(o).second) shared += ShapeBytes(o->shape());
  if (shared < options_.min_sibling_shared_bytes)
    return FusionDecision::Forbid(StrCat("shares only ", shared, " bytes of operands"));
  return FusionDecision::Allow();
}

FusionDecision FusionPolicy::ShouldFuseMultiOutput(const HloInstruction& producer,
                                                   const HloInstruction& consumer) const {
  if (!IsFusion(consumer) || !CanGrow(consumer))
    return FusionDecision::Forbid("consumer is not a growable fusion");
  if (IsMultiOutputFusion(producer) || !producer.shape().IsArray())
    return FusionDecision::Forbid("producer is not a single array");
  const auto& ops = consumer.operands();
  if (std::find(ops.begin(), ops.end(), &producer) == ops.end())
    return FusionDecision::Forbid("not an operand of the consumer");
  if (producer.opcode() == HloOpcode::kParameter || HasControlDeps(producer) || HasControlDeps(consumer))
    return FusionDecision::Forbid("parameter or control dependencies");
  if (!IsFusibleProducer(producer))
    return FusionDecision::Forbid(StrCat(HloOpcodeString(producer.opcode()), " is not fusible"));
  for (int64_t i = 0; i < consumer.operand_count(); ++i) {
    if (consumer.operand(i) != &producer) continue;
    FusionDecision d = CanFuseIntoOperand(producer, consumer, i);
    if (!d) return d;
  }
  if (IsExpensive(producer)) {
    for (int64_t i = 0; i < consumer.operand_count(); ++i)
      if (consumer.operand(i) == &producer && !ReadsAtSameIndex(consumer, i))
        return FusionDecision::Forbid("expensive producer would be recomputed at other indices");
  }
  IterationSpace sp = GetIterationSpace(producer), sc = GetIterationSpace(consumer);
  if (!CompatibleIterationSpaces(sp, sc))
    return FusionDecision::Forbid(StrCat("iteration spaces differ: ", sp.ToString(), " vs ", sc.ToString()));
  if (OutputCount(consumer) + 1 > options_.max_outputs) return FusionDecision::Forbid("too many outputs");
  if (FusedOperandCount(producer, consumer) > options_.max_operands)
    return FusionDecision::Forbid("too many operands");
  if (FusedInstructionCount(producer) + FusedInstructionCount(consumer) > options_.max_instructions)
    return FusionDecision::Forbid("too many instructions");
  return FusionDecision::Allow();
}

FusionDecision FusionPolicy::ShouldMergeIntoMultiOutputProducer(const HloInstruction& producer,
                                                                const HloInstruction& consumer) const {
  if (!IsMultiOutputFusion(producer) || !CanGrow(producer))
    return FusionDecision::Forbid("producer is not a growable multi-output fusion");
  if (!IsFusion(consumer) || !CanGrow(consumer)) return FusionDecision::Forbid("consumer is not a growable fusion");
  if (HasControlDeps(producer) || HasControlDeps(consumer))
    return FusionDecision::Forbid("control dependencies");
  bool reads = false;
  std::unordered_set<const HloInstruction*> operands(producer.operands().begin(), producer.operands().end());
  for (int64_t i = 0; i < consumer.operand_count(); ++i) {
    const HloInstruction* op = consumer.operand(i);
    if (op == &producer) return FusionDecision::Forbid("consumer reads the producer's tuple");
    if (op->opcode() == HloOpcode::kGetTupleElement && op->operand(0) == &producer) {
      reads = true;
      // Each output element is read where it is made: nothing is recomputed.
      if (!ReadsAtSameIndex(consumer, i))
        return FusionDecision::Forbid("consumer reads the producer's outputs at other indices");
      continue;
    }
    operands.insert(op);
  }
  if (!reads) return FusionDecision::Forbid("consumer does not read the producer");
  IterationSpace sp = GetIterationSpace(producer), sc = GetIterationSpace(consumer);
  if (!CompatibleIterationSpaces(sp, sc))
    return FusionDecision::Forbid(StrCat("iteration spaces differ: ", sp.ToString(), " vs ", sc.ToString()));
  if (OutputCount(producer) + OutputCount(consumer) > options_.max_outputs) return FusionDecision::Forbid("too many outputs");
  if (static_cast<int64_t>(operands.size()) > options_.max_operands) return FusionDecision::Forbid("too many operands");
  if (FusedInstructionCount(producer) + FusedInstructionCount(consumer) > options_.max_instructions)
    return FusionDecision::Forbid("too many instructions");
  return FusionDecision::Allow();
}

}  // namespace kiln
