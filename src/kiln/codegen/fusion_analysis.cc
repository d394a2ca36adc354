#include "kiln/codegen/fusion_analysis.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/codegen/elemental_emitter.h"

namespace kiln::codegen {

int ReductionAnalysis::LevelOf(const HloInstruction* reduce) const {
  for (size_t i = 0; i < reduces.size(); ++i)
    if (reduces[i] == reduce) return level[i];
  return 0;
}

namespace {

// Levels of reduces reachable from `instr` without passing through another reduce.
void CollectLevels(const ReductionAnalysis& ra, const HloInstruction* instr,
                   std::unordered_set<const HloInstruction*>& seen, int& level) {
  if (!seen.insert(instr).second) return;
  int l = ra.LevelOf(instr);
  if (l > 0) {
    level = std::max(level, l);
    return;
  }
  for (const HloInstruction* op : instr->operands()) CollectLevels(ra, op, seen, level);
}

}  // namespace

int DependsOnLevel(const ReductionAnalysis& ra, const HloInstruction* instr) {
  std::unordered_set<const HloInstruction*> seen;
  int level = 0;
  CollectLevels(ra, instr, seen, level);
  return level;
}

StatusOr<ReductionAnalysis> AnalyzeReductions(const FusionView& view) {
  ReductionAnalysis ra;
  for (const HloInstruction* i : view.body)
    if (i->opcode() == HloOpcode::kReduce) ra.reduces.push_back(i);
  if (ra.reduces.empty()) return Unimplemented("%", view.instr->name(), " has no reduce");
  const HloInstruction* first = ra.reduces[0];
  ra.input_shape = WithLayout(first->operand(0)->shape());
  ra.reduced_dims = first->attrs().dimensions;
  std::sort(ra.reduced_dims.begin(), ra.reduced_dims.end());
  for (const HloInstruction* r : ra.reduces) {
    const int64_t n = r->operand_count() / 2;
    if (n == 0 || r->operand_count() != 2 * n || r->to_apply() == nullptr)
      return InvalidArgument("reduce %", r->name(), " is malformed");
    std::vector<int64_t> dims = r->attrs().dimensions;
    std::sort(dims.begin(), dims.end());
    for (int64_t k = 0; k < n; ++k) {
      Shape s = WithLayout(r->operand(k)->shape());
      if (s.dimensions() != ra.input_shape.dimensions() || !SamePhysicalShape(s, ra.input_shape) ||
          dims != ra.reduced_dims)
        return Unimplemented("%", view.instr->name(), ": reduces over different shapes (",
                             ra.input_shape.ToString(), " and ", s.ToString(), " in %", r->name(), ")");
      if (r->operand(n + k)->shape().rank() != 0)
        return InvalidArgument("reduce %", r->name(), ": non-scalar init value");
    }
  }
  // Memory order of the input's dimensions: groups kept / reduced / kept.
  const Shape& in = ra.input_shape;
  auto is_reduced = [&](int64_t d) {
    return std::binary_search(ra.reduced_dims.begin(), ra.reduced_dims.end(), d);
  };
  int stage = 0;  // 0: leading kept, 1: reduced, 2: trailing kept
  for (int64_t d : MajorToMinor(in)) {
    if (in.dimensions(d) == 1) continue;
    if (is_reduced(d)) {
      if (stage == 2)
        return Unimplemented("%", view.instr->name(), ": reduced dimensions are not contiguous in memory (",
                             in.ToString(), ")");
      stage = 1;
      ra.r_dims.push_back(d);
      ra.r *= in.dimensions(d);
    } else if (stage == 0) {
      ra.k1_dims.push_back(d);
      ra.k1 *= in.dimensions(d);
    } else {
      stage = 2;
      ra.k2_dims.push_back(d);
      ra.k2 *= in.dimensions(d);
    }
  }
  for (int64_t d = 0; d < in.rank(); ++d)
    if (!is_reduced(d)) ra.output_dims.push_back(in.dimensions(d));
  // Reduce levels (post order: operands first).
  ra.level.assign(ra.reduces.size(), 0);
  for (size_t i = 0; i < ra.reduces.size(); ++i) {
    int dep = 0;
    for (const HloInstruction* op : ra.reduces[i]->operands()) {
      std::unordered_set<const HloInstruction*> seen;
      int l = 0;
      CollectLevels(ra, op, seen, l);
      dep = std::max(dep, l);
    }
    ra.level[i] = dep + 1;
  }
  return ra;
}

StatusOr<TransposeAnalysis> AnalyzeTranspose(const FusionView& view) {
  TransposeAnalysis best;
  int64_t best_bytes = 0;
  const Shape& out0 = view.outputs[0].shape;
  for (const HloInstruction* i : view.body) {
    if (i->opcode() != HloOpcode::kTranspose && i->opcode() != HloOpcode::kCopy) continue;
    const Shape out = WithLayout(i->shape());
    const Shape in = WithLayout(i->operand(0)->shape());
    if (out.dimensions() != out0.dimensions() || !SamePhysicalShape(out, out0)) continue;
    TransposeAnalysis t;
    t.hero = i;
    t.operand_dim.resize(out.rank());
    for (int64_t d = 0; d < out.rank(); ++d)
      t.operand_dim[d] = i->opcode() == HloOpcode::kTranspose ? i->attrs().dimensions[d] : d;
    int64_t in_minor = -1, out_minor = -1;
    for (int64_t d : MinorToMajor(in))
      if (in.dimensions(d) != 1) {
        in_minor = d;
        break;
      }
    for (int64_t d : MinorToMajor(out))
      if (out.dimensions(d) != 1) {
        out_minor = d;
        break;
      }
    if (in_minor < 0 || out_minor < 0) continue;
    for (int64_t d = 0; d < out.rank(); ++d)
      if (t.operand_dim[d] == in_minor) t.dim_in = d;
    t.dim_out = out_minor;
    if (t.dim_in < 0 || t.dim_in == t.dim_out) continue;
    // Tiles only pay when both sides are reasonably long.
    if (out.dimensions(t.dim_in) < 8 || out.dimensions(t.dim_out) < 8) continue;
    int64_t bytes = in.byte_size();
    if (bytes > best_bytes) {
      best = t;
      best_bytes = bytes;
    }
  }
  if (best.hero == nullptr)
    return Unimplemented("%", view.instr->name(), " has no transpose that moves the minor dimension");
  for (const KernelOutput& o : view.outputs)
    if (o.shape.dimensions() != out0.dimensions() || !SamePhysicalShape(o.shape, out0))
      return Unimplemented("%", view.instr->name(), ": outputs differ from the transpose's shape");
  return best;
}

}  // namespace kiln::codegen
