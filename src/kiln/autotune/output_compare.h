// Comparing a candidate's outputs with the reference candidate's, with a written tolerance.
//
// Elements of one array are compared one by one, on the host, as the reference computed them:
//   pred, integers          exactly;
//   real and complex floats |got - expected| <= rtol * (|expected| + scale), where scale is the
//                           root mean square of the reference array's finite elements (at least
//                           1e-6). The scale keeps sums that cancel to nearly zero (a dot over
//                           many terms) from failing on rounding noise the size of their terms.
//                           NaN matches NaN only; an infinity matches the same infinity only.
// Default rtol by element type (DefaultTolerance), chosen so that legitimate differences pass
// (another summation order, split-K, TF32 for f32 dots of DEFAULT precision, output rounding)
// and a wrong answer does not (the profiler's inputs are uniform in [-1, 1)):
//   f64 1e-6 · f32 and c64 1e-2 · c128 1e-6 · f16 2e-2 · bf16 5e-2 · 8-bit and 4-bit floats 0.25
// except f32 and c64 outputs of an instruction that asks for HIGHEST precision (no TF32):
// kHighestF32Rtol, 1e-4 (CandidateRtol, applied by the profiler).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/hlo/shape.h"

namespace kiln {
class HloInstruction;
}

namespace kiln::autotune {

struct Tolerance {
  double rtol = 0;  // 0 for exact types
};

Tolerance DefaultTolerance(PrimitiveType type);

// f32 / c64 outputs of an instruction that asks for HIGHEST precision are not allowed TF32's
// error: they are compared at this rtol, which a candidate with TF32 products (relative errors
// ~5e-4 of the result's scale) fails and f32 summation-order differences (~sqrt(K) eps) pass.
inline constexpr double kHighestF32Rtol = 1e-4;

// Whether `instr` asks for HIGHEST precision: an operand_precision of highest (dot,
// convolution), or a library call's backend_config naming "precision":"highest".
bool AsksHighestPrecision(const HloInstruction& instr);

// The rtol the profiler compares an output of `type` with: `rtol` when >= 0; else the type's
// default, or kHighestF32Rtol for f32 / c64 when `highest` (AsksHighestPrecision).
double CandidateRtol(PrimitiveType type, bool highest, double rtol);

struct CompareResult {
  bool ok = true;
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;  // linear element index
  double got = 0;               // values at first_mismatch (real part)
  double expected = 0;
  // "3 of 1024 elements differ; first at 17: 2.5 vs 1.5 (rtol 0.01)" or "match".
  std::string ToString() const;
};

// Compares two host buffers holding one array of `shape` (element count × PrimitiveByteWidth
// bytes each). `rtol` < 0 uses DefaultTolerance.
CompareResult CompareArrays(const Shape& shape, const void* got, const void* expected,
                            double rtol = -1);

}  // namespace kiln::autotune
