#include "kiln/codegen/reduction_common.h"

#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/kernel_source.h"

namespace kiln::codegen {

StatusOr<ReductionPlan> MakeReductionPlan(const HloInstruction& instr) {
  ReductionPlan plan;
  KILN_ASSIGN_OR_RETURN(plan.view, MakeFusionView(instr));
  KILN_ASSIGN_OR_RETURN(plan.ra, AnalyzeReductions(plan.view));
  const ReductionAnalysis& ra = plan.ra;
  if (ra.r <= 1)
    return Unimplemented("%", instr.name(), ": the reduces only reduce dimensions of size 1");
  for (size_t i = 0; i < ra.reduces.size(); ++i) {
    Hero h;
    h.reduce = ra.reduces[i];
    h.n = h.reduce->operand_count() / 2;
    for (int64_t k = 0; k < h.n; ++k) h.types.push_back(h.reduce->operand(k)->shape().element_type());
    h.level = ra.level[i];
    plan.passes = std::max(plan.passes, h.level);
    plan.heroes.push_back(std::move(h));
  }
  for (const KernelOutput& o : plan.view.outputs) {
    const std::vector<int64_t>& dims = o.shape.dimensions();
    if (dims == ra.input_shape.dimensions()) {
      plan.output_in_input_space.push_back(true);
      int level = std::max(1, DependsOnLevel(ra, o.value) + 1);
      plan.output_level.push_back(level);
      plan.passes = std::max(plan.passes, level);
    } else if (dims == ra.output_dims) {
      plan.output_in_input_space.push_back(false);
      plan.output_level.push_back(0);
    } else {
      return Unimplemented("%", instr.name(), ": output ", o.shape.ToString(false),
                           " is neither the reduce input ", ra.input_shape.ToString(false),
                           " nor its result");
    }
  }
  return plan;
}

namespace {

// Writes the logical dims of one group (major to minor in memory) from its linear index.
void DelinearizeGroup(CodeBuilder& code, const Shape& shape, const std::vector<int64_t>& dims,
                      IExpr linear, std::vector<IExpr>& out) {
  for (size_t k = dims.size(); k-- > 0;) {
    int64_t d = dims[k];
    if (k == 0) {
      out[d] = linear;
    } else {
      out[d] = code.Mod(linear, shape.dimensions(d), "i" + std::to_string(d));
      linear = code.Div(linear, shape.dimensions(d), "q" + std::to_string(d));
    }
  }
}

}  // namespace

std::vector<IExpr> KeptDims(CodeBuilder& code, const ReductionAnalysis& ra, const IExpr& k1,
                            const IExpr& k2) {
  std::vector<IExpr> dims(ra.input_shape.rank(), IExpr(0));
  DelinearizeGroup(code, ra.input_shape, ra.k1_dims, k1, dims);
  DelinearizeGroup(code, ra.input_shape, ra.k2_dims, k2, dims);
  return dims;
}

Index ReductionInputIndex(CodeBuilder& code, const ReductionAnalysis& ra,
                          const std::vector<IExpr>& kept, const IExpr& k1, const IExpr& r,
                          const IExpr& k2) {
  Index index;
  index.dims = kept;
  DelinearizeGroup(code, ra.input_shape, ra.r_dims, r, index.dims);
  index.linear = (k1 * ra.r + r) * ra.k2 + k2;
  index.linear_shape = std::make_shared<Shape>(ra.input_shape);
  return index;
}

Index ReductionOutputIndex(const ReductionAnalysis& ra, const Index& input_index) {
  Index out;
  for (int64_t d = 0; d < ra.input_shape.rank(); ++d)
    if (!std::binary_search(ra.reduced_dims.begin(), ra.reduced_dims.end(), d))
      out.dims.push_back(input_index.dims[d]);
  return out;
}

Status DeclareAccumulators(ElementalEmitter& em, std::vector<Hero>& heroes, int level, int width) {
  CodeBuilder& code = em.code();
  for (Hero& h : heroes) {
    if (level >= 0 && h.level != level) continue;
    h.acc.clear();
    for (int64_t k = 0; k < h.n; ++k) {
      KILN_ASSIGN_OR_RETURN(Value init, em.Emit(*h.reduce->operand(h.n + k), Index{}));
      std::string name = code.UniqueName(h.reduce->name() + "_acc" + (h.n > 1 ? std::to_string(k) : ""));
      code.Comment("Accumulator of %" + h.reduce->name() + (h.n > 1 ? " (component " + std::to_string(k) + ")" : "") +
                   ", one per lane.");
      code.Line(RegisterType(h.types[k]) + " " + name + "[" + std::to_string(width) + "];");
      code.Open("for (int l = 0; l < " + std::to_string(width) + "; ++l)", BlockKind::kLoop, "#pragma unroll");
      code.Line(name + "[l] = " + init.expr + ";");
      code.Close();
      h.acc.push_back(name);
    }
  }
  return OkStatus();
}

Status ApplyReducer(ElementalEmitter& em, const Hero& hero, const std::vector<std::string>& a,
                    const std::vector<std::string>& b) {
  CodeBuilder& code = em.code();
  std::vector<Value> args;
  const int block = code.BlockIdAt(code.depth());
  for (int64_t k = 0; k < hero.n; ++k) args.push_back(Value{a[k], hero.types[k], block});
  for (int64_t k = 0; k < hero.n; ++k) args.push_back(Value{b[k], hero.types[k], block});
  KILN_ASSIGN_OR_RETURN(std::vector<Value> r,
                        em.CallComputation(*hero.reduce->to_apply(), args,
                                           hero.reduce->name() + "_r", code.depth()));
  if (static_cast<int64_t>(r.size()) != hero.n)
    return InvalidArgument("reduce %", hero.reduce->name(), ": reducer returns ", r.size(),
                           " values for ", hero.n, " inputs");
  for (int64_t k = 0; k < hero.n; ++k) code.Line(a[k] + " = " + r[k].expr + ";");
  return OkStatus();
}

Status Accumulate(ElementalEmitter& em, std::vector<Hero>& heroes, int level, const Index& index,
                  const std::string& lane) {
  for (Hero& h : heroes) {
    if (h.level != level) continue;
    std::vector<std::string> a, b;
    for (int64_t k = 0; k < h.n; ++k) {
      KILN_ASSIGN_OR_RETURN(Value v, em.Emit(*h.reduce->operand(k), index));
      if (v.type != h.types[k]) return Internal("reduce input type mismatch in %", h.reduce->name());
      a.push_back(h.acc[k] + "[" + lane + "]");
      b.push_back(v.expr);
    }
    KILN_RETURN_IF_ERROR(ApplyReducer(em, h, a, b));
  }
  return OkStatus();
}

Status CombineLanes(ElementalEmitter& em, std::vector<Hero>& heroes, int level, int width) {
  if (width <= 1) return OkStatus();
  CodeBuilder& code = em.code();
  code.Open("for (int l = 1; l < " + std::to_string(width) + "; ++l)", BlockKind::kLoop, "#pragma unroll");
  for (Hero& h : heroes) {
    if (h.level != level) continue;
    std::vector<std::string> a, b;
    for (int64_t k = 0; k < h.n; ++k) {
      a.push_back(h.acc[k] + "[0]");
      b.push_back(h.acc[k] + "[l]");
    }
    KILN_RETURN_IF_ERROR(ApplyReducer(em, h, a, b));
  }
  code.Close();
  return OkStatus();
}

ElementalEmitter::Override HeroOverride(std::vector<Hero>* heroes,
                                        const std::vector<IExpr>* output_index) {
  return [heroes, output_index](const HloInstruction& instr,
                                const Index& index) -> StatusOr<std::optional<std::vector<Value>>> {
    for (Hero& h : *heroes) {
      if (h.reduce != &instr) continue;
      if (!h.done)
        return Unimplemented("reduce %", instr.name(), " is needed before its pass completed");
      if (output_index == nullptr || index.dims != *output_index)
        return Unimplemented("reduce %", instr.name(),
                             " is read at another position than the row/column being reduced");
      return std::optional<std::vector<Value>>(h.result);
    }
    return std::optional<std::vector<Value>>();
  };
}

}  // namespace kiln::codegen
