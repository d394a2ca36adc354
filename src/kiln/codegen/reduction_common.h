// Pieces shared by the row and column reduction emitters (internal to codegen/).
#pragma once

#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/fusion_analysis.h"

namespace kiln::codegen {

// One reduce of the fusion and the generated state for it.
struct Hero {
  const HloInstruction* reduce = nullptr;
  int64_t n = 1;                      // components (variadic reduce: n inputs, n results)
  std::vector<PrimitiveType> types;   // per component
  int level = 1;                      // the pass that computes it
  std::vector<std::string> acc;       // per-lane accumulator arrays, per component
  std::vector<Value> result;          // the reduced values of the current row/column
  bool done = false;
};

// What a reduction fusion computes where: each output lives in the reduce's input space
// (written per element during a pass over the input) or its output space (written once per
// reduced row/column, after the reduces it needs).
struct ReductionPlan {
  FusionView view;
  ReductionAnalysis ra;
  std::vector<Hero> heroes;
  std::vector<bool> output_in_input_space;
  std::vector<int> output_level;  // input-space outputs: the pass that writes them
  int passes = 1;                 // passes over each row
};
StatusOr<ReductionPlan> MakeReductionPlan(const HloInstruction& instr);

// The kept dimensions (rank of the input; reduced ones left 0) of physical coordinates k1 and
// k2 (each a linear index over its group of dimensions). Compute them once per row/column:
// HeroOverride recognizes the current row by these very expressions.
std::vector<IExpr> KeptDims(CodeBuilder& code, const ReductionAnalysis& ra, const IExpr& k1,
                            const IExpr& k2);
// The index into the reduce input at (k1, r, k2), with the linear offset attached; `kept` from
// KeptDims(k1, k2).
Index ReductionInputIndex(CodeBuilder& code, const ReductionAnalysis& ra,
                          const std::vector<IExpr>& kept, const IExpr& k1, const IExpr& r,
                          const IExpr& k2);
// The reduce-output index matching an input index (the kept dimensions, in logical order).
Index ReductionOutputIndex(const ReductionAnalysis& ra, const Index& input_index);

// Declares the per-lane accumulators of `heroes` (those of `level`, or all when level < 0),
// initialized from the reduces' init values.
Status DeclareAccumulators(ElementalEmitter& em, std::vector<Hero>& heroes, int level, int width);
// acc[lane] = reducer(acc[lane], input at `index`) for each hero of `level`.
Status Accumulate(ElementalEmitter& em, std::vector<Hero>& heroes, int level, const Index& index,
                  const std::string& lane);
// Folds the lanes of each accumulator of `level` into element 0.
Status CombineLanes(ElementalEmitter& em, std::vector<Hero>& heroes, int level, int width);
// Calls the reducer of `hero` on (a..., b...) at the current depth and assigns the results to
// the lvalues `a` (component expressions).
Status ApplyReducer(ElementalEmitter& em, const Hero& hero, const std::vector<std::string>& a,
                    const std::vector<std::string>& b);
// Override hook: a hero reduce read at `output_index` (the current row/column) gives its result.
ElementalEmitter::Override HeroOverride(std::vector<Hero>* heroes,
                                        const std::vector<IExpr>* output_index);

}  // namespace kiln::codegen
