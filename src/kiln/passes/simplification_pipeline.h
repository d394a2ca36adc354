// The neutral simplification pipeline the CPU and GPU compilers both run first.
//
//   call-inliner                                   (once: calls disappear for good)
//   dynamic-shape-lowering                         (once: SliceToDynamic, PadToStatic, SetBound,
//                                                   get/set-dimension-size become plain HLO)
//   fixed point (HloPassFix, at most max_iterations rounds) of
//     tuple-simplifier, algebraic-simplifier, constant-folding, cse, dce,
//     while-loop-simplifier
//   scan-dot-hoisting, while-loop-simplifier, tuple-simplifier, dce  (only with hoist_scan_dots)
//   attention-rewriter, dce                        (only with attention)
//   loop-invariant-code-motion, scan-dot-hoisting (with hoist_scan_dots), while-loop-simplifier,
//     tuple-simplifier, dce                        (only with hoist_loop_invariants)
//   dot-canonicalizer, algebraic-simplifier, cse, dce  (only with canonicalize_dots)
//     then loop-invariant-code-motion, dce         (with hoist_loop_invariants too)
//
// Every pass preserves the values the module computes exactly (see each pass's header; the
// hoisted scan dots compute the same sums of products in one GEMM), so a
// module evaluates to the same results before and after (simplification_conformance_test
// checks this on the shared bench and corpus modules). Running the pipeline a second time
// changes nothing.
#pragma once

#include <optional>

#include "kiln/passes/algebraic_simplifier.h"
#include "kiln/passes/attention_rewriter.h"
#include "kiln/passes/constant_folding.h"
#include "kiln/passes/pipeline.h"
#include "kiln/passes/while_loop_simplifier.h"

namespace kiln {

struct SimplificationOptions {
  ConstantFoldingOptions constant_folding;
  AlgebraicSimplifierOptions algebraic_simplifier;
  WhileLoopSimplifierOptions while_loop_simplifier;
  // Rounds of the fixed-point loop (each round runs every pass once).
  int max_iterations = 10;
  // Also bring every dot into the canonical [B,M,K]x[B,K,N] form (dot_canonicalizer.h): what
  // GEMM-emitting backends want. Off by default: it adds transposes and reshapes.
  bool canonicalize_dots = false;
  // After the fixed-point rounds: a scan's per-step dots with a loop-invariant weight done once
  // before the loop (Note [Scan dot hoisting] in scan_dot_hoisting.h), then one more round of
  // loop simplification to drop the state that fed them.
  bool hoist_scan_dots = false;
  // Values a while body computes from pass-through state and constants computed once before
  // the loop (Note [Loop-invariant code motion] in loop_invariant_code_motion.h).
  bool hoist_loop_invariants = false;
  // After that (before the dots are canonicalized): attention found and outlined into
  // __kiln$attention calls where options.supported says the backend runs them fused
  // (Note [Attention matching] in attention_rewriter.h). Unset: not matched.
  std::optional<AttentionRewriterOptions> attention;
};

// Appends the passes above to `pipeline` (the nested fixed-point pipeline inherits its
// verifier and dump options).
void AddSimplificationPasses(HloPassPipeline& pipeline, const SimplificationOptions& options = {});

}  // namespace kiln
