// fft kernel (Eigen's FFT module) against the evaluator: FFT, IFFT, RFFT, IRFFT over 1-3
// dimensions, c64 and c128, power-of-two, odd, prime and length-1 transforms, batches (split
// across threads), and XLA's fft_length semantics for the real transforms (the last dimension
// L -> L/2+1 and back, odd L included; IRFFT ignoring the imaginary parts of X[0] and X[L/2]).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"

namespace kiln::cpu {
namespace {

using testing::CheckHlo;

std::string Dims(const std::vector<int64_t>& d) { return StrCat("[", StrJoin(d, ","), "]"); }

// An fft of batch dims `batch` and fft lengths `len`, types derived from `complex_type`.
std::string FftHlo(const std::string& type, const std::vector<int64_t>& batch,
                   const std::vector<int64_t>& len, const std::string& complex_type) {
  const std::string real_type = complex_type == "c64" ? "f32" : "f64";
  std::vector<int64_t> in = batch, out = batch;
  for (size_t i = 0; i < len.size(); ++i) {
    const bool last = i + 1 == len.size();
    in.push_back(last && type == "IRFFT" ? len[i] / 2 + 1 : len[i]);
    out.push_back(last && type == "RFFT" ? len[i] / 2 + 1 : len[i]);
  }
  const std::string it = type == "RFFT" ? real_type : complex_type;
  const std::string ot = type == "IRFFT" ? real_type : complex_type;
  return StrCat("ENTRY e {\n x = ", it, Dims(in), " parameter(0)\n ROOT f = ", ot, Dims(out),
                " fft(x), fft_type=", type, ", fft_length={", StrJoin(len, ","), "}\n}\n");
}

TEST(FftKernelTest, OneDimension) {
  for (const char* type : {"FFT", "IFFT", "RFFT", "IRFFT"})
    for (const char* ct : {"c64", "c128"})
      for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 16, 30, 64, 97, 100, 127, 256, 1000}) {
        const std::string hlo = FftHlo(type, {3}, {n}, ct);
        SCOPED_TRACE(hlo);
        CheckHlo(hlo);
        if (HasFailure()) return;
      }
}

TEST(FftKernelTest, TwoAndThreeDimensions) {
  const std::vector<std::vector<int64_t>> lens = {{4, 6}, {5, 7}, {1, 8}, {8, 1}, {3, 4, 5},
                                                  {2, 3, 2}, {16, 16}, {6, 9, 4}};
  for (const char* type : {"FFT", "IFFT", "RFFT", "IRFFT"})
    for (const char* ct : {"c64", "c128"})
      for (const std::vector<int64_t>& len : lens) {
        const std::string hlo = FftHlo(type, {2}, len, ct);
        SCOPED_TRACE(hlo);
        CheckHlo(hlo);
        if (HasFailure()) return;
      }
}

TEST(FftKernelTest, BatchesAndNoBatch) {
  for (const char* type : {"FFT", "RFFT", "IRFFT"}) {
    for (const std::vector<int64_t>& batch :
         std::vector<std::vector<int64_t>>{{}, {0}, {1}, {4, 3}, {2000}}) {
      const std::string hlo = FftHlo(type, batch, {24}, "c64");
      SCOPED_TRACE(hlo);
      CheckHlo(hlo);
    }
  }
  // Many 2-D transforms: the outer pass's strided lines in parallel.
  CheckHlo(FftHlo("FFT", {40}, {32, 48}, "c64"));
  CheckHlo(FftHlo("IRFFT", {40}, {32, 48}, "c128"));
}

// IRFFT reads only the real parts of X[0] and (even L) X[L/2]: inputs with imaginary parts there
// give the same result as the evaluator, which drops them.
TEST(FftKernelTest, IrfftIgnoresImaginaryDcAndNyquist) {
  for (int64_t n : {8, 9, 10}) {
    auto m = testing::Parse(FftHlo("IRFFT", {2}, {n}, "c64"));
    const HloInstruction* f = testing::Find(*m);
    std::vector<Literal> ops = testing::RandomOperands(*f, 5);
    ops[0].Set<std::complex<float>>({0, 0}, {1.5f, 3.0f});
    ops[0].Set<std::complex<float>>({1, n / 2}, {-2.0f, 7.0f});
    SCOPED_TRACE(n);
    testing::ExpectMatchesEvaluator(*f, {}, std::move(ops));
  }
}

// Long lengths with a large prime factor stay on the evaluator (Bluestein); others are native.
TEST(FftKernelTest, LargePrimeFactorFallsBack) {
  testing::CheckOptions native;
  CheckHlo(FftHlo("FFT", {1}, {1024 * 3}, "c64"), "", native);
  testing::CheckOptions fallback;
  fallback.native = false;
  CheckHlo(FftHlo("FFT", {1}, {2053}, "c64"), "", fallback);
}

}  // namespace
}  // namespace kiln::cpu
