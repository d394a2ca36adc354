// fft: FFT, IFFT, RFFT and IRFFT over the last len(fft_length) (1 to 3) dimensions.
//
// Computed in std::complex<double> and rounded once to the result type. Any length: powers of
// two use an iterative radix-2 transform, short other lengths a direct DFT, long other lengths
// Bluestein's algorithm (a chirp convolution through power-of-two FFTs), so n = 4096 or 4095
// take microseconds, not seconds. Twiddle factors are computed from exact angles (k*j mod n), not
// by recurrence.
//
// Semantics (XLA's, which match numpy.fft):
//   FFT   c -> c, forward (exp(-2 pi i jk/n)), unscaled, along each fft dimension;
//   IFFT  c -> c, inverse, scaled by 1/n per dimension;
//   RFFT  real [..., L0..Lr-1] -> complex [..., L0, ..., Lr-1/2 + 1]: the forward transform of
//         the real input, keeping the non-negative frequencies of the last dimension;
//   IRFFT complex [..., L0, ..., Lr-1/2 + 1] -> real [..., L0..Lr-1]: inverse transforms of the
//         outer fft dimensions, then a complex-to-real inverse along the last one that treats
//         the input as the half spectrum of a Hermitian sequence (X[L-k] = conj(X[k]); the
//         imaginary parts of X[0] and, for even L, X[L/2] are ignored), scaled by 1/prod(L).
#include <cmath>
#include <complex>
#include <map>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/misc_internal.h"

namespace kiln {
namespace {

using cd = std::complex<double>;

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// exp(sign * 2 pi i * k / n) with k reduced mod n first (exact angles).
cd Twiddle(int64_t k, int64_t n, int sign) {
  k %= n;
  if (k < 0) k += n;
  const double angle = sign * 2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n);
  return {std::cos(angle), std::sin(angle)};
}

class FftEngine {
 public:
  // In-place unscaled transform of `x` (length n); sign -1 forward, +1 inverse.
  void Transform(cd* x, int64_t n, int sign) {
    if (n <= 1) return;
    if (IsPowerOfTwo(n)) {
      Radix2(x, n, sign);
    } else if (n <= 64) {
      Direct(x, n, sign);
    } else {
      Bluestein(x, n, sign);
    }
  }

 private:
  const std::vector<cd>& Twiddles(int64_t n, int sign) {
    auto& t = twiddles_[{n, sign}];
    if (t.empty()) {
      t.resize(n);
      for (int64_t k = 0; k < n; ++k) t[k] = Twiddle(k, n, sign);
    }
    return t;
  }

  void Radix2(cd* x, int64_t n, int sign) {
    // Bit reversal.
    for (int64_t i = 1, j = 0; i < n; ++i) {
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(x[i], x[j]);
    }
    const std::vector<cd>& w = Twiddles(n, sign);
    for (int64_t len = 2; len <= n; len <<= 1) {
      const int64_t step = n / len, half = len / 2;
      for (int64_t i = 0; i < n; i += len)
        for (int64_t j = 0; j < half; ++j) {
          const cd u = x[i + j];
          const cd v = x[i + j + half] * w[j * step];
          x[i + j] = u + v;
          x[i + j + half] = u - v;
        }
    }
  }

  void Direct(cd* x, int64_t n, int sign) {
    const std::vector<cd>& w = Twiddles(n, sign);
    std::vector<cd> out(n);
    for (int64_t k = 0; k < n; ++k) {
      cd acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += x[j] * w[(j * k) % n];
      out[k] = acc;
    }
    std::copy(out.begin(), out.end(), x);
  }

  void Bluestein(cd* x, int64_t n, int sign) {
    int64_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    // Chirp c_k = exp(sign * pi i k^2 / n) = Twiddle(k^2 mod 2n, 2n).
    std::vector<cd> chirp(n);
    for (int64_t k = 0; k < n; ++k) chirp[k] = Twiddle((k * k) % (2 * n), 2 * n, sign);
    std::vector<cd> a(m, 0), b(m, 0);
    for (int64_t k = 0; k < n; ++k) a[k] = x[k] * chirp[k];
    b[0] = std::conj(chirp[0]);
    for (int64_t k = 1; k < n; ++k) b[k] = b[m - k] = std::conj(chirp[k]);
    Radix2(a.data(), m, -1);
    Radix2(b.data(), m, -1);
    for (int64_t i = 0; i < m; ++i) a[i] *= b[i];
    Radix2(a.data(), m, +1);
    const double inv = 1.0 / static_cast<double>(m);
    for (int64_t k = 0; k < n; ++k) x[k] = a[k] * inv * chirp[k];
  }

  std::map<std::pair<int64_t, int>, std::vector<cd>> twiddles_;
};

// Transforms every line of `data` (row-major `dims`) along dimension `axis`.
void TransformAxis(FftEngine& engine, std::vector<cd>& data, const std::vector<int64_t>& dims,
                   size_t axis, int sign, double scale) {
  const int64_t n = dims[axis];
  if (n == 0) return;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t outer = eval_internal::ElementProduct(dims) / (n * inner);
  std::vector<cd> line(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      cd* base = data.data() + (o * n * inner + i);
      for (int64_t j = 0; j < n; ++j) line[j] = base[j * inner];
      engine.Transform(line.data(), n, sign);
      for (int64_t j = 0; j < n; ++j) base[j * inner] = line[j] * scale;
    }
}

StatusOr<Literal> EvalFft(const HloInstruction& instr, std::span<const Literal* const> ops,
                          Evaluator&) {
  if (ops.size() != 1) return InvalidArgument("fft %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(eval_internal::ExpectArrayOperand(instr, *ops[0], 0));
  const Literal& x = *ops[0];
  const Shape& xs = x.shape();
  const Shape& rs = instr.shape();
  const std::vector<int64_t>& len = instr.attrs().fft_length;
  const size_t r = len.size();
  if (r < 1 || r > 3 || xs.rank() < static_cast<int64_t>(r) || !rs.IsArray() ||
      rs.rank() != xs.rank())
    return InvalidArgument("fft %", instr.name(),
                           ": fft_length must name 1 to 3 trailing dimensions");
  const size_t first = static_cast<size_t>(xs.rank()) - r;
  const FftType type = instr.attrs().fft_type;
  const bool in_complex = IsComplexType(xs.element_type());
  const bool out_complex = IsComplexType(rs.element_type());
  if ((type == FftType::kRfft) == in_complex || (type == FftType::kIrfft) == out_complex)
    return InvalidArgument("fft %", instr.name(), ": operand/result types do not fit ",
                           FftTypeString(type));
  // Expected trailing dims of operand and result.
  for (size_t i = 0; i < r; ++i) {
    const int64_t L = len[i];
    const bool last = i + 1 == r;
    const int64_t in_d = xs.dimensions(first + i), out_d = rs.dimensions(first + i);
    int64_t want_in = L, want_out = L;
    if (last && type == FftType::kRfft) want_out = L / 2 + 1;
    if (last && type == FftType::kIrfft) want_in = L / 2 + 1;
    if (in_d != want_in || out_d != want_out)
      return InvalidArgument("fft %", instr.name(), ": ", FftTypeString(type), " with fft_length {",
                             StrJoin(len, ","), "} does not fit ", xs.ToString(false), " -> ",
                             rs.ToString(false));
  }
  for (size_t d = 0; d < first; ++d)
    if (xs.dimensions(d) != rs.dimensions(d))
      return InvalidArgument("fft %", instr.name(), ": batch dimensions differ");

  FftEngine engine;
  std::vector<cd> data = eval_internal::LiteralToComplexes(x);
  std::vector<int64_t> dims = xs.dimensions();
  Literal out(rs);
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft: {
      const int sign = type == FftType::kFft ? -1 : +1;
      for (size_t i = 0; i < r; ++i) {
        const double scale = type == FftType::kIfft && len[i] > 0 ? 1.0 / len[i] : 1.0;
        TransformAxis(engine, data, dims, first + i, sign, scale);
      }
      eval_internal::StoreComplexes(data, out);
      break;
    }
    case FftType::kRfft: {
      for (size_t i = 0; i < r; ++i) TransformAxis(engine, data, dims, first + i, -1, 1.0);
      // Keep the first L/2+1 entries of the last dimension.
      const int64_t L = dims.back(), keep = rs.dimensions().back();
      const int64_t rows = L == 0 ? 0 : static_cast<int64_t>(data.size()) / L;
      std::vector<cd> res(rows * keep);
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t j = 0; j < keep; ++j) res[row * keep + j] = data[row * L + j];
      eval_internal::StoreComplexes(res, out);
      break;
    }
    case FftType::kIrfft: {
      for (size_t i = 0; i + 1 < r; ++i) {
        const double scale = len[i] > 0 ? 1.0 / len[i] : 1.0;
        TransformAxis(engine, data, dims, first + i, +1, scale);
      }
      const int64_t L = len.back(), half = dims.back();
      const int64_t rows = half == 0 ? 0 : static_cast<int64_t>(data.size()) / half;
      std::vector<double> res(rows * L);
      std::vector<cd> line(L);
      for (int64_t row = 0; row < rows; ++row) {
        const cd* h = data.data() + (row * half);
        for (int64_t k = 0; k < L; ++k) {
          if (k <= L / 2) {
            line[k] = h[k];
          } else {
            line[k] = std::conj(h[L - k]);
          }
        }
        if (L > 0) line[0] = line[0].real();
        if (L > 0 && L % 2 == 0) line[L / 2] = line[L / 2].real();
        engine.Transform(line.data(), L, +1);
        for (int64_t k = 0; k < L; ++k) res[row * L + k] = line[k].real() / static_cast<double>(L);
      }
      eval_internal::StoreDoubles(res, out);
      break;
    }
  }
  return out;
}

}  // namespace

namespace eval_internal {
void RegisterFftKernels(KernelRegistry& r) { r.Register(HloOpcode::kFft, EvalFft); }
}  // namespace eval_internal

}  // namespace kiln
