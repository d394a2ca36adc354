// Internal to the algebraic simplifier: the rewrite families (one file each) and the helpers
// they share. Each family function looks at one instruction and returns the instruction that
// should replace it (an existing one or one it built with the editor), or nullptr for "no
// rewrite". The driver (algebraic_simplifier.cc) does the replacing.
#pragma once

#include <optional>

#include "kiln/hlo/instruction.h"
#include "kiln/passes/algebraic_simplifier.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln::algsimp {

struct Context {
  HloEditor& editor;
  const AlgebraicSimplifierOptions& options;
};

StatusOr<HloInstruction*> SimplifyElementwise(Context& ctx, HloInstruction* instr);
StatusOr<HloInstruction*> SimplifyShapeOp(Context& ctx, HloInstruction* instr);
StatusOr<HloInstruction*> SimplifyDotOrReduce(Context& ctx, HloInstruction* instr);

// Values a constant (or a broadcast of one) can be checked for, element by element.
enum class Splat {
  kZero,       // integer 0, pred false, float +0.0 or -0.0, complex 0
  kPosZero,    // float +0.0 (integers: 0)
  kNegZero,    // float -0.0 (only floats)
  kOne,        // 1 (pred: true)
  kAllOnes,    // integers: every bit set (-1 / max unsigned); pred: true
  kLowest,     // floats: -inf; integers: the minimum; pred: false
  kHighest,    // floats: +inf; integers: the maximum; pred: true
};

// Whether `instr` is a constant, or a broadcast (possibly of a broadcast) of a constant, with
// every element equal to `value`. Empty arrays never match.
bool IsSplat(const HloInstruction* instr, Splat value);

// The scalar value of a constant or broadcast-of-constant whose elements are all equal, as a
// bool (pred) -- nullopt otherwise.
std::optional<bool> SplatPred(const HloInstruction* instr);

// The value of a real floating-point constant (or broadcast of one) whose elements are all
// equal (NaN never matches); nullopt otherwise.
std::optional<double> SplatValue(const HloInstruction* instr);

// A constant of `shape`'s element type holding `value` everywhere, built as broadcast(scalar)
// (or the scalar itself for a scalar shape), shaped like `shape` (layout included).
StatusOr<HloInstruction*> MakeSplat(Context& ctx, const Shape& shape, Splat value,
                                    const HloInstruction* like);
StatusOr<HloInstruction*> MakeSplatBool(Context& ctx, const Shape& shape, bool value,
                                        const HloInstruction* like);

// Whether converting any value of type `from` to type `to` is exact (to can represent every
// value of from, NaN, infinities and -0 included).
bool IsLosslessConvert(PrimitiveType from, PrimitiveType to);

// Whether every dimension of the array shape is static.
bool IsStatic(const Shape& shape);

}  // namespace kiln::algsimp
