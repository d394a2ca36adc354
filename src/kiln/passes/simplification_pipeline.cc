#include "kiln/passes/simplification_pipeline.h"

#include "kiln/passes/dot_canonicalizer.h"
#include "kiln/passes/dynamic_shape_lowering.h"
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
  if (options.canonicalize_dots) {
    pipeline.AddPass<DotCanonicalizer>();
    pipeline.AddPass<AlgebraicSimplifier>(options.algebraic_simplifier);
    pipeline.AddPass<CommonSubexpressionElimination>();
    pipeline.AddPass<DeadCodeElimination>();
  }
}

}  // namespace kiln
