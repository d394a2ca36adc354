// Small matching helpers shared by the GEMM and convolution rewriters (gemm_rewriter.h,
// conv_rewriter.h), which both follow a library call's result through its elementwise users to
// fuse an epilogue.
#pragma once

#include <optional>

#include "kiln/hlo/instruction.h"
#include "kiln/hlo/shape.h"

namespace kiln::cuda::match {

// The element types whose library epilogues kiln fuses (bias, activations): f32, bf16, f16.
bool EpilogueType(PrimitiveType t);

// No layout, or the default (row-major) one.
bool RowMajor(const Shape& s);

// A reshape or bitcast between row-major arrays of one element type: the same bytes.
bool IsByteView(const HloInstruction* i);
// `i` with byte views (IsByteView) stripped off.
HloInstruction* StripViews(HloInstruction* i);

// The value of a constant whose elements are all equal (looked for through broadcasts and byte
// views); nullopt for anything else, elided literals and complex types.
std::optional<double> ScalarConstantValue(const HloInstruction* i);

// Whether `target` is `from` or reached from it through operands and control predecessors.
bool DependsOn(HloInstruction* from, const HloInstruction* target);

}  // namespace kiln::cuda::match
