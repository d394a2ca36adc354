#include "kiln/passes/simplification_pipeline.h"

#include "kiln/passes/dot_canonicalizer.h"
#include "kiln/passes/dynamic_shape_lowering.h"
#include "kiln/passes/loop_invariant_code_motion.h"
#include "kiln/passes/scan_dot_hoisting.h"
#include "kiln/passes/simple_passes.h"

namespace kiln {

void AddSimplificationPasses(HloPassPipeline& pipeline, const SimplificationOptions& options) {
  pipeline.AddPass<CallInliner>();
  pipeline.AddPass<DynamicShapeLowering>();
  auto round = std::make_unique<HloPassPipeline>("simplify", pipeline.options());
  round->AddPass<TupleSimplifier>();
  round->AddPass<AlgebraicSimplifier>(options.algebraic_simplifier);
  round->AddPass<ConstantFolding>(options.constant_folding);
  round->AddPass<CommonSubexpressionElimination>();
  round->AddPass<DeadCodeElimination>();
  round->AddPass<WhileLoopSimplifier>(options.while_loop_simplifier);
  pipeline.AddPass(std::make_unique<HloPassFix>(std::move(round), options.max_iterations));
  if (options.hoist_scan_dots) {
    pipeline.AddPass<ScanDotHoisting>();
    pipeline.AddPass<WhileLoopSimplifier>(options.while_loop_simplifier);
    pipeline.AddPass<TupleSimplifier>();
    pipeline.AddPass<DeadCodeElimination>();
  }
  if (options.attention) {
    pipeline.AddPass<AttentionRewriter>(*options.attention);
    pipeline.AddPass<DeadCodeElimination>();
  }
  // After the attention rewriter: a causal mask built from a constant is invariant in a scanned
  // transformer, and the matcher must still see it beside its scores.
  if (options.hoist_loop_invariants) {
    pipeline.AddPass<LoopInvariantCodeMotion>();
    if (options.hoist_scan_dots) pipeline.AddPass<ScanDotHoisting>();  // a weight cast per step is now state
    pipeline.AddPass<WhileLoopSimplifier>(options.while_loop_simplifier);
    pipeline.AddPass<TupleSimplifier>();
    pipeline.AddPass<DeadCodeElimination>();
  }
  if (options.canonicalize_dots) {
    pipeline.AddPass<DotCanonicalizer>();
    pipeline.AddPass<AlgebraicSimplifier>(options.algebraic_simplifier);
    pipeline.AddPass<CommonSubexpressionElimination>();
    pipeline.AddPass<DeadCodeElimination>();
    // The canonical forms of a loop-invariant weight (its transposes and reshapes) move too.
    if (options.hoist_loop_invariants) {
      pipeline.AddPass<LoopInvariantCodeMotion>();
      pipeline.AddPass<DeadCodeElimination>();
    }
  }
}

}  // namespace kiln
