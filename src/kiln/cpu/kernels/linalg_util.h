// Shared pieces of the cpu linear-algebra kernels (internal to src/kiln/cpu/kernels):
// kernels/linalg.cc (the factorizations on Eigen), kernels/linalg_reduce.cc (sytrd/hetrd, gehrd,
// geqp3, LAPACK's gtsv, cholesky_update, syrk) and kernels/linalg_eig.cc (geev, gees).
//
// Element access: matrices are dense row-major views (the cpu compiler normalizes the
// column-major layouts JAX gives these calls), batch after batch. Values are read into double
// (S = double) or std::complex<double> (S = cd) and rounded once when stored, as the
// evaluator computes them (eval/lapack_internal.h); a complex value stored into a real result
// keeps its real part.
//
// BatchedLinalgKernel: the kernels of linalg_reduce.cc and linalg_eig.cc. It checks the views
// against the shapes recorded at compile time and runs RunBatch once per leading batch index,
// batches split across ctx.pool. RunBatch reads everything it needs of batch b before writing
// any of it (results may alias operands: output_to_operand_aliasing), and touches no other
// batch.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cpu/kernel.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cpu::internal::linalg {

using cd = std::complex<double>;

inline bool IsComplex(PrimitiveType t) { return t == PrimitiveType::kC64 || t == PrimitiveType::kC128; }
inline bool IsLinalgType(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF64 || IsComplex(t);
}

// Element i of a float view as S (the real part when S is real).
template <class S>
S Get(const ArrayView& v, int64_t i) {
  switch (v.shape.element_type()) {
    case PrimitiveType::kF32: return S(static_cast<double>(v.as<const float>()[i]));
    case PrimitiveType::kF64: return S(v.as<const double>()[i]);
    case PrimitiveType::kC64: {
      const std::complex<float> z = v.as<const std::complex<float>>()[i];
      if constexpr (std::is_same_v<S, cd>) return cd(z.real(), z.imag());
      else return z.real();
    }
    case PrimitiveType::kC128: {
      const cd z = v.as<const cd>()[i];
      if constexpr (std::is_same_v<S, cd>) return z;
      else return z.real();
    }
    default: return S(0);
  }
}

// Stores x into element i of a float view (the real part into a real view).
template <class S>
void Put(const ArrayView& v, int64_t i, S x) {
  cd z;
  if constexpr (std::is_same_v<S, cd>) z = x;
  else z = cd(x, 0);
  switch (v.shape.element_type()) {
    case PrimitiveType::kF32: v.as<float>()[i] = static_cast<float>(z.real()); break;
    case PrimitiveType::kF64: v.as<double>()[i] = z.real(); break;
    case PrimitiveType::kC64:
      v.as<std::complex<float>>()[i] = std::complex<float>(static_cast<float>(z.real()), static_cast<float>(z.imag()));
      break;
    case PrimitiveType::kC128: v.as<cd>()[i] = z; break;
    default: break;
  }
}

// s32 / s64 views.
inline void PutInt(const ArrayView& v, int64_t i, int64_t x) {
  switch (v.shape.element_type()) {
    case PrimitiveType::kS32: v.as<int32_t>()[i] = static_cast<int32_t>(x); break;
    case PrimitiveType::kS64: v.as<int64_t>()[i] = x; break;
    default: break;
  }
}
inline int64_t GetInt(const ArrayView& v, int64_t i) {
  switch (v.shape.element_type()) {
    case PrimitiveType::kS32: return v.as<const int32_t>()[i];
    case PrimitiveType::kS64: return v.as<const int64_t>()[i];
    default: return 0;
  }
}

// count elements from element `offset` of a view, into / out of a vector of S.
template <class S>
std::vector<S> LoadRun(const ArrayView& v, int64_t offset, int64_t count) {
  std::vector<S> out(count);
  for (int64_t i = 0; i < count; ++i) out[i] = Get<S>(v, offset + i);
  return out;
}
template <class S>
void StoreRun(const ArrayView& v, int64_t offset, const std::vector<S>& x) {
  for (size_t i = 0; i < x.size(); ++i) Put(v, offset + static_cast<int64_t>(i), x[i]);
}

// lapack_<s|d|c|z><op>_ffi.
inline bool LapackTarget(std::string_view t, std::string_view op) {
  if (t.size() != op.size() + 12 || !t.starts_with("lapack_") || !t.ends_with("_ffi")) return false;
  const char p = t[7];
  return (p == 's' || p == 'd' || p == 'c' || p == 'z') && t.substr(8, op.size()) == op;
}
// "cusolver_getrf_ffi" / "hipsolver_getrf_ffi" -> "solver_getrf_ffi"; empty for other names.
inline std::string_view Unvendored(std::string_view t) {
  if (t.starts_with("cu")) return t.substr(2);
  if (t.starts_with("hip")) return t.substr(3);
  return {};
}

inline double Cabs1(double x) { return x < 0 ? -x : x; }
inline double Cabs1(cd x) { return (x.real() < 0 ? -x.real() : x.real()) + (x.imag() < 0 ? -x.imag() : x.imag()); }
inline double Conj(double x) { return x; }
inline cd Conj(cd x) { return std::conj(x); }
inline double Re(double x) { return x; }
inline double Re(cd x) { return x.real(); }

// LAPACK's ?larfg: the reflector H = I - tau v v^H with v = (1, x') such that H^H (alpha, x) =
// (beta, 0), beta real. Returns tau; alpha becomes beta, x (len elements `stride` apart)
// becomes x'. tau = 0 (H = I) when x is zero and alpha real. Real S: LAPACK's dlarfg; complex:
// zlarfg (beta = -sign(re alpha) |(alpha, x)|), without the rescaling of tiny norms.
template <class S>
S Larfg(S& alpha, S* x, int64_t len, int64_t stride) {
  double xnorm = 0;
  for (int64_t i = 0; i < len; ++i) xnorm = std::hypot(xnorm, std::abs(x[i * stride]));
  const double ar = Re(alpha);
  double norm;
  if constexpr (std::is_same_v<S, cd>) {
    const double ai = alpha.imag();
    if (xnorm == 0 && ai == 0) return S(0);
    norm = std::sqrt(ar * ar + ai * ai + xnorm * xnorm);
  } else {
    if (xnorm == 0) return S(0);
    norm = std::hypot(ar, xnorm);
  }
  const double beta = ar >= 0 ? -norm : norm;
  S tau;
  if constexpr (std::is_same_v<S, cd>) tau = cd((beta - ar) / beta, -alpha.imag() / beta);
  else tau = (beta - ar) / beta;
  const S scale = S(1) / (alpha - beta);
  for (int64_t i = 0; i < len; ++i) x[i * stride] *= scale;
  alpha = beta;
  return tau;
}

// A kernel run once per leading batch index (see the header comment).
class BatchedLinalgKernel : public CpuKernel {
 public:
  std::string name() const override { return name_; }
  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override;

  std::string name_;
  std::vector<Shape> in_shapes_, out_shapes_;
  int64_t batch_ = 1;
  int64_t work_ = 1;  // flops of one batch, roughly (the parallel grain)
  bool complex_ = false;

 protected:
  // Batch b of every operand and result; the kernel picks its arithmetic by complex_.
  virtual void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const = 0;
};

// Records instr's operand and result shapes in k (a tuple result as its elements), requiring
// `operands` array operands and `results` array results (1: an array or a 1-tuple); k's name
// becomes linalg[TARGET SHAPE-OF-OPERAND-0].
Status InitLinalgKernel(BatchedLinalgKernel& k, const HloInstruction& instr, int operands, int results);

// The (batch, m, n) of a matrix shape with leading batch dimensions; an error naming instr
// unless rank >= 2.
struct MatrixDims {
  int64_t batch = 1, m = 0, n = 0;
};
StatusOr<MatrixDims> MatrixDimsOf(const HloInstruction& instr, const Shape& s);

// linalg_reduce.cc: lapack_?sytrd/?hetrd, {cu,hip}solver_sytrd, lapack_?gehrd, lapack_?geqp3,
// {cu,hip}hybrid_geqp3, lapack_?gtsv, {cu,hip}_cholesky_update_ffi, {cu,hip}solver_syrk_ffi.
bool IsNativeLinalgReduce(const HloInstruction& instr);
StatusOr<std::unique_ptr<CpuKernel>> CreateLinalgReduceKernel(const HloInstruction& instr);

// linalg_eig.cc: lapack_?geev, {cu,hip}hybrid_eig_{real,comp}, lapack_?gees.
bool IsNativeLinalgEig(const HloInstruction& instr);
StatusOr<std::unique_ptr<CpuKernel>> CreateLinalgEigKernel(const HloInstruction& instr);

}  // namespace kiln::cpu::internal::linalg
