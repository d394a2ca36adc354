// How close a result must be to the reference to count as equal: one table for `kiln compare`,
// the conformance harness and the backend tests. docs/tolerances.md explains the numbers.
//
// An element passes when
//     |actual - expected| <= atol + scaled_atol * max|expected over the array| + rtol * |expected|
// NaN passes only against NaN; an infinity only against the same infinity. Integers and pred
// compare exactly, whatever the tolerance says; so do floats under an `exact` tolerance.
#pragma once

#include "kiln/hlo/types.h"

namespace kiln {

struct Tolerance {
  double rtol = 0;         // relative to |expected|
  double atol = 0;         // absolute
  double scaled_atol = 0;  // absolute, as a fraction of the largest |expected| in the array
  // Floats too must match bit for bit (NaN matches any NaN; -0 does not match +0): outputs that
  // no arithmetic produced (output_traits.h, Note [Exact outputs]).
  bool exact = false;
};

// Default tolerance for results of type `t` (the result's own type, not the reference's):
//   f64, c128          rtol 1e-9   atol 1e-9     (libm differences in transcendentals)
//   f32, c64           rtol 1e-5   atol 1e-5     (summation order in dots and reductions)
//   f16, bf16          rtol 1e-2   atol 1e-2     (one rounding step apart)
//   f8e4m3*, f8e3m4    rtol 1.3e-1 atol 1.3e-1   (one step of a 3- or 4-bit mantissa)
//   f8e5m2*            rtol 2.5e-1 atol 2.5e-1   (one step of a 2-bit mantissa)
//   f4e2m1fn           rtol 5e-1   atol 5e-1
//   f8e8m0fnu          rtol 1      atol 0        (powers of two: one step is a factor of two)
//   integers, pred     exact
inline Tolerance DefaultTolerance(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF64:
    case PrimitiveType::kC128: return {1e-9, 1e-9, 0};
    case PrimitiveType::kF32:
    case PrimitiveType::kC64: return {1e-5, 1e-5, 0};
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16: return {1e-2, 1e-2, 0};
    case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E4M3B11FNUZ:
    case PrimitiveType::kF8E4M3FNUZ:
    case PrimitiveType::kF8E4M3:
    case PrimitiveType::kF8E3M4: return {1.3e-1, 1.3e-1, 0};
    case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E5M2FNUZ: return {2.5e-1, 2.5e-1, 0};
    case PrimitiveType::kF4E2M1FN: return {5e-1, 5e-1, 0};
    case PrimitiveType::kF8E8M0FNU: return {1, 0, 0};
    default: return {0, 0, 0};
  }
}

// A compiled backend (cpu, cuda, rocm) against the reference evaluator on the same inputs: what
// the differential suite (src/kiln/tools/differential_test.cc) and `kiln compare --device X
// --reference interpreter` apply. The same arithmetic in a different order: backends split
// reductions and dot/convolution sums into blocks and threads (reassociation), fuse elementwise
// chains, and may use vectorized transcendentals a few ulps from libm. Reassociation errors
// scale with the magnitudes summed, not with the result (a sum that cancels to ~0 has a large
// relative error), so part of the bound is relative to the largest value of the output:
//   f64, c128       rtol 1e-9   atol 1e-9   scaled_atol 1e-12
//   f32, c64        rtol 1e-5   atol 1e-5   scaled_atol 1e-5   (~sqrt(K) eps for K-term sums,
//                                                               K up to ~10^4, with margin)
//   f16, bf16       rtol 1e-2   atol 1e-2   scaled_atol 1e-2   (one rounding step of the narrow
//                   type; accumulation is in f32 on both sides, but a backend may keep in f32 a
//                   value the HLO rounds to the narrow type before a sum -- fused attention's
//                   backward keeps dP and dS -- which moves every summand by up to one step: an
//                   error of the magnitudes summed)
//   f8*             the default row
//   integers, pred  exact
inline Tolerance BackendTolerance(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF64:
    case PrimitiveType::kC128: return {1e-9, 1e-9, 1e-12};
    case PrimitiveType::kF32:
    case PrimitiveType::kC64: return {1e-5, 1e-5, 1e-5};
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16: return {1e-2, 1e-2, 1e-2};
    default: return DefaultTolerance(t);
  }
}

// f32 results of a reference that ran f32 dots and convolutions in TF32 (10-bit mantissa), as
// XLA does on NVIDIA GPUs by default (JAX's default matmul precision). Errors of a TF32 dot
// grow with the magnitude of the products, not of the result, so part of the bound scales with
// the largest value of the output.
inline constexpr Tolerance kTf32Tolerance{1e-3, 1e-5, 2e-3};

}  // namespace kiln
