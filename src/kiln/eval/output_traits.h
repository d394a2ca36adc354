// What produced each output of a module, read from its HLO, for choosing how to compare that
// output with a reference (compare.h's CompareOptions::outputs). See Note [Exact outputs].
//
//   std::vector<OutputTraits> traits = AnalyzeOutputs(module);
//   // traits[i] describes out<i>: the entry root's array leaves in order, tokens skipped
//   // (ArrayLeaves' order).
//
// Note [Exact outputs]
// A floating-point output is *exact* when every backend must produce it bit for bit: it is a
// parameter, constant or iota, or a convert / bitcast-convert of exact values, or data movement
// of exact values (copy, bitcast, reshape, transpose, broadcast, slice, concatenate, pad,
// reverse, dynamic-slice, dynamic-update-slice, gather, select, tuple, get-tuple-element,
// through calls and fusions into their parameters). Integer and pred values count as exact
// (they are compared exactly anyway). Anything computed by floating-point arithmetic is not:
// a convert of an f32 sum may round to a neighbouring bf16 when the sum's order differs, so
// only converts of exact values are exact. Outputs of while loops, conditionals and custom
// calls are never exact (not looked into).
//
// An output *uses f32 products* when it depends, through any chain of operands and called
// computations, on a dot or convolution that a GPU may run in TF32: one with an f32 or c64
// operand whose precision is not HIGHEST (no operand_precision=highest, no
// algorithm=dot_f32_f32_f32*), or on a custom call with an f32/c64 operand (a library GEMM or
// solver, conservatively). Only those outputs get the TF32 tolerance.
#pragma once

#include <vector>

#include "kiln/hlo/module.h"

namespace kiln {

struct OutputTraits {
  bool exact = false;               // must match bit for bit (NaN payloads aside)
  bool uses_f32_products = false;   // depends on an f32 dot/convolution that may run in TF32
};

// One entry per array leaf of the entry computation's result (tokens skipped). Empty when the
// module has no entry computation.
std::vector<OutputTraits> AnalyzeOutputs(const HloModule& module);

}  // namespace kiln
