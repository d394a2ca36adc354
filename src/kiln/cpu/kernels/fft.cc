// The fft kernel: FFT, IFFT, RFFT and IRFFT over the last 1 to 3 dimensions through Eigen's
// FFT module (unsupported/Eigen/FFT, its kissfft backend: mixed radix 2/3/4/5 and generic
// butterflies for other factors), c64 in float and c128 in double.
//
// Semantics are the evaluator's (eval/fft.cc, which match XLA and numpy.fft): FFT forward and
// unscaled, IFFT scaled by 1/n per dimension, RFFT keeps the L/2+1 non-negative frequencies of
// the last dimension, IRFFT reads the last dimension as the half spectrum of a Hermitian
// sequence (imaginary parts of X[0] and, for even L, X[L/2] ignored) scaled by 1/prod(L).
//
// A transform is one pass per fft dimension over the lines along it (the innermost dimension's
// lines are contiguous; the others are gathered into a buffer), lines split across threads,
// each task with its own Eigen::FFT (plans and buffers are not thread-safe). Lengths with a
// prime factor above kMaxGenericFactor (kissfft's generic butterfly is quadratic in the factor)
// are left to the evaluator, whose Bluestein transform is O(n log n) for any length.
#include <algorithm>
#include <complex>
#include <cstring>
#include <vector>

#include <unsupported/Eigen/FFT>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"

namespace kiln::cpu::internal {
namespace {

constexpr int64_t kMaxGenericFactor = 1021;

int64_t LargestPrimeFactor(int64_t n) {
  int64_t largest = 1;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      largest = p;
      n /= p;
    }
  return n > 1 ? std::max(largest, n) : largest;
}

// Lines of `dims` (row-major) along `axis`: outer * inner lines of dims[axis] elements, `inner`
// apart.
struct Lines {
  int64_t n = 0, outer = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  // Offset of line l's first element.
  int64_t start(int64_t l) const { return (l / inner) * n * inner + l % inner; }
};

Lines LinesOf(const std::vector<int64_t>& dims, size_t axis) {
  Lines ls;
  ls.n = dims[axis];
  for (size_t d = 0; d < axis; ++d) ls.outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) ls.inner *= dims[d];
  return ls;
}

// Runs fn(fft, l0, l1) over the lines in parallel chunks (~64K elements of work each).
template <class R, class F>
void ForLines(const KernelContext& ctx, const Lines& ls, F&& fn) {
  if (ls.n == 0 || ls.count() == 0) return;
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 16) / ls.n);
  ParallelFor(ctx, ls.count(), min_chunk, [&](int64_t l0, int64_t l1) {
    Eigen::FFT<R> fft;
    fn(fft, l0, l1);
  });
}

// In-place complex transforms of every line of `data` along `axis` (sign < 0: forward,
// unscaled; > 0: inverse, scaled by 1/n).
template <class R>
void ComplexPass(const KernelContext& ctx, std::complex<R>* data, const std::vector<int64_t>& dims,
                 size_t axis, int sign) {
  using C = std::complex<R>;
  const Lines ls = LinesOf(dims, axis);
  if (ls.n <= 1) return;  // length 1: the identity, both ways
  ForLines<R>(ctx, ls, [&](Eigen::FFT<R>& fft, int64_t l0, int64_t l1) {
    std::vector<C> in(ls.n), out(ls.n);
    for (int64_t l = l0; l < l1; ++l) {
      C* p = data + ls.start(l);
      for (int64_t j = 0; j < ls.n; ++j) in[j] = p[j * ls.inner];
      if (sign < 0) fft.fwd(out.data(), in.data(), ls.n);
      else fft.inv(out.data(), in.data(), ls.n);
      for (int64_t j = 0; j < ls.n; ++j) p[j * ls.inner] = out[j];
    }
  });
}

class FftKernel final : public CpuKernel {
 public:
  std::string name_;
  FftType type_ = FftType::kFft;
  std::vector<int64_t> in_dims_, out_dims_;
  size_t first_ = 0;  // the first fft dimension
  size_t rank_ = 0;   // number of fft dimensions
  bool f64_ = false;  // c128 / f64 (else c64 / f32)

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 1 || outputs.size() != 1)
      return InvalidArgument(name_, ": expected 1 input and 1 output");
    if (inputs[0].shape.dimensions() != in_dims_ || outputs[0].shape.dimensions() != out_dims_)
      return InvalidArgument(name_, ": views do not match the instruction");
    if (f64_) RunTyped<double>(inputs[0].data, outputs[0].data, ctx);
    else RunTyped<float>(inputs[0].data, outputs[0].data, ctx);
    return OkStatus();
  }

 private:
  template <class R>
  void RunTyped(const void* in, void* out, const KernelContext& ctx) const {
    using C = std::complex<R>;
    const size_t last = first_ + rank_ - 1;
    switch (type_) {
      case FftType::kFft:
      case FftType::kIfft: {
        const int sign = type_ == FftType::kFft ? -1 : +1;
        const int64_t count = ShapeUtilElements(out_dims_);
        if (out != in) std::memcpy(out, in, count * sizeof(C));
        for (size_t a = first_; a <= last; ++a) ComplexPass<R>(ctx, static_cast<C*>(out), out_dims_, a, sign);
        return;
      }
      case FftType::kRfft: {
        // The last dimension real -> half spectrum, then the others complex forward.
        const Lines ls = LinesOf(in_dims_, last);  // inner == 1
        const int64_t half = out_dims_[last];
        const R* x = static_cast<const R*>(in);
        C* y = static_cast<C*>(out);
        ForLines<R>(ctx, ls, [&](Eigen::FFT<R>& fft, int64_t l0, int64_t l1) {
          fft.SetFlag(Eigen::FFT<R>::HalfSpectrum);
          std::vector<C> spectrum(ls.n / 2 + 1);
          for (int64_t l = l0; l < l1; ++l) {
            if (ls.n == 1) {
              y[l * half] = C(x[l], 0);
              continue;
            }
            fft.fwd(spectrum.data(), x + l * ls.n, ls.n);
            std::copy(spectrum.begin(), spectrum.begin() + half, y + l * half);
          }
        });
        for (size_t a = first_; a < last; ++a) ComplexPass<R>(ctx, y, out_dims_, a, -1);
        return;
      }
      case FftType::kIrfft: {
        // The outer fft dimensions complex inverse (on a copy of the input), then the last
        // dimension half spectrum -> real.
        const C* x = static_cast<const C*>(in);
        std::vector<C> tmp;
        if (rank_ > 1) {
          tmp.assign(x, x + ShapeUtilElements(in_dims_));
          for (size_t a = first_; a < last; ++a) ComplexPass<R>(ctx, tmp.data(), in_dims_, a, +1);
          x = tmp.data();
        }
        const Lines ls = LinesOf(out_dims_, last);  // inner == 1; ls.n = L
        const int64_t half = in_dims_[last], n = ls.n;
        R* y = static_cast<R*>(out);
        ForLines<R>(ctx, ls, [&](Eigen::FFT<R>& fft, int64_t l0, int64_t l1) {
          fft.SetFlag(Eigen::FFT<R>::HalfSpectrum);
          std::vector<C> spectrum(n / 2 + 1);
          for (int64_t l = l0; l < l1; ++l) {
            const C* h = x + l * half;
            if (n == 1) {
              y[l] = h[0].real();
              continue;
            }
            std::copy(h, h + n / 2 + 1, spectrum.begin());
            spectrum[0] = C(spectrum[0].real(), 0);
            if (n % 2 == 0) spectrum[n / 2] = C(spectrum[n / 2].real(), 0);
            fft.inv(y + l * n, spectrum.data(), n);
          }
        });
        return;
      }
    }
  }

  static int64_t ShapeUtilElements(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateFftKernel(const HloInstruction& instr,
                                                     const CpuKernelOptions&) {
  if (instr.opcode() != HloOpcode::kFft || instr.operand_count() != 1)
    return Unimplemented("fft kernel: not an fft");
  const Shape& xs = instr.operand(0)->shape();
  const Shape& rs = instr.shape();
  const std::vector<int64_t>& len = instr.attrs().fft_length;
  const size_t r = len.size();
  // Forms the evaluator rejects (with its message) are left to it.
  if (!xs.IsArray() || !rs.IsArray() || r < 1 || r > 3 || xs.rank() < static_cast<int64_t>(r) ||
      rs.rank() != xs.rank())
    return Unimplemented("fft kernel: not a 1-3 dimensional fft of arrays");
  const FftType type = instr.attrs().fft_type;
  const PrimitiveType in = xs.element_type(), out = rs.element_type();
  bool f64;
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (in != out || (in != PrimitiveType::kC64 && in != PrimitiveType::kC128))
        return Unimplemented("fft kernel: types");
      f64 = in == PrimitiveType::kC128;
      break;
    case FftType::kRfft:
      if (!((in == PrimitiveType::kF32 && out == PrimitiveType::kC64) ||
            (in == PrimitiveType::kF64 && out == PrimitiveType::kC128)))
        return Unimplemented("fft kernel: types");
      f64 = in == PrimitiveType::kF64;
      break;
    case FftType::kIrfft:
      if (!((in == PrimitiveType::kC64 && out == PrimitiveType::kF32) ||
            (in == PrimitiveType::kC128 && out == PrimitiveType::kF64)))
        return Unimplemented("fft kernel: types");
      f64 = in == PrimitiveType::kC128;
      break;
    default:
      return Unimplemented("fft kernel: fft type");
  }
  const size_t first = static_cast<size_t>(xs.rank()) - r;
  for (size_t d = 0; d < first; ++d)
    if (xs.dimensions(d) != rs.dimensions(d)) return Unimplemented("fft kernel: batch dims");
  for (size_t i = 0; i < r; ++i) {
    const int64_t L = len[i];
    const bool last = i + 1 == r;
    int64_t want_in = L, want_out = L;
    if (last && type == FftType::kRfft) want_out = L / 2 + 1;
    if (last && type == FftType::kIrfft) want_in = L / 2 + 1;
    if (xs.dimensions(first + i) != want_in || rs.dimensions(first + i) != want_out)
      return Unimplemented("fft kernel: fft_length does not fit the shapes");
    if (L <= 0) return Unimplemented("fft kernel: fft_length 0");
    if (LargestPrimeFactor(L) > kMaxGenericFactor)
      return Unimplemented("fft kernel: length ", L, " has a large prime factor");
  }
  auto k = std::make_unique<FftKernel>();
  k->type_ = type;
  k->in_dims_ = xs.dimensions();
  k->out_dims_ = rs.dimensions();
  k->first_ = first;
  k->rank_ = r;
  k->f64_ = f64;
  k->name_ = StrCat("fft[", FftTypeString(type), " ", ShapeText(xs), " -> ", ShapeText(rs), "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
