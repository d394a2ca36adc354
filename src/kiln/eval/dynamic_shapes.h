// Bounded dynamic arrays in the evaluator: the custom calls SliceToDynamic, PadToStatic and
// SetBound, and the runtime sizes that get-dimension-size and PadToStatic read (internal to
// src/kiln/eval).
//
// Note [Dynamic sizes]
// A bounded dynamic array (f32[<=8]) is held at its bound, in the static shape's row-major
// order: element i of the dynamic array is element i of the bound-sized literal, and the
// elements past the dynamic size are unspecified (kiln keeps whatever the producer left there).
// Its runtime sizes are not part of the Literal; the evaluator keeps them beside the value, per
// instruction (Evaluator::DynamicSizes), and follows them where XLA's dynamic-dimension
// inference does the simple thing:
//   SliceToDynamic(x, s0, ..., s{r-1})   sizes s_d (clamped to [0, bound]) for the dynamic dims
//   set-dimension-size(x, s), dims={d}   x's sizes with dimension d set to s (clamped)
//   SetBound(x), copy, elementwise ops   the sizes of the operands (which must agree)
//   entry parameters, constants          the bounds (kiln's callers pass arrays at the bound)
// Any other op that yields a dynamic array leaves its sizes unknown; reading them
// (get-dimension-size, PadToStatic) is then Unimplemented, naming the op, never a silent bound.
//   PadToStatic(d) -> (static d, s32 size_0, ..., s32 size_{r-1}): the elements inside the
// sizes, zeros outside (XLA leaves them unspecified; zeros make every backend agree).
// XLA's runtime packs a dynamic array's elements densely for its sizes and pads them back in
// PadToStatic; that layout is invisible at the HLO level, where kiln's padded form gives the
// same values. passes/dynamic_shape_lowering.h is the compiled backends' form of the same rules.
#pragma once

#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kiln/eval/kernels.h"

namespace kiln::eval_internal {

// Whether `target` is one of the dynamic-shape custom calls above.
bool IsDynamicShapeCustomCall(std::string_view target);

// The value of a dynamic-shape custom call, or nullopt when `instr` is not one.
std::optional<StatusOr<Literal>> EvalDynamicShapeCustomCall(const HloInstruction& instr,
                                                            std::span<const Literal* const> operands,
                                                            Evaluator& evaluator);

// Records the runtime sizes of `instr` (a dynamic array just evaluated) in `sizes`, when the
// rules above give them; leaves them unknown otherwise.
void TrackDynamicSizes(const HloInstruction& instr, std::span<const Literal* const> operands,
                       const Evaluator& evaluator,
                       std::unordered_map<const HloInstruction*, std::vector<int64_t>>& sizes);

}  // namespace kiln::eval_internal
