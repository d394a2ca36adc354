// Native cpu kernels for the linear-algebra custom calls that reduce a matrix to a condensed
// form or update a factor (Note [Linear-algebra kernels] in kernels/linalg.cc):
//   lapack_{s,d}sytrd_ffi / lapack_{c,z}hetrd_ffi (uplo 'L'/'U'), {cu,hip}solver_sytrd_ffi
//       (lower = true|false)   (a) -> (a', d, e, tau, info): LAPACK's ?sytd2 / ?hetd2;
//   lapack_{s,d,c,z}gehrd_ffi (low, high: ilo, ihi, 1-based)   (a) -> (a', tau, info): ?gehd2;
//   lapack_{s,d,c,z}geqp3_ffi, {cu,hip}hybrid_geqp3   (a, jpvt) -> (a', jpvt', tau): column-
//       pivoted QR, the columns with jpvt != 0 first, then the free column of largest remaining
//       norm (recomputed each step, the first on ties) -- the evaluator's rule, which follows
//       LAPACK's except where LAPACK's downdated norms break a near-tie the other way;
//   lapack_{s,d,c,z}gtsv_ffi   (dl, d, du, b) -> (dl', d', du', x, info): ?gtsv's Gaussian
//       elimination with partial pivoting (|re| + |im| for complex pivots), its modified
//       diagonals returned; dl[0] and du[n-1] are not read; an exactly zero pivot stops it
//       (info its 1-based row, x the partly transformed b);
//   {cu,hip}_cholesky_update_ffi   (r, w) -> (r', w'): the upper factor of r^H r + w w^H by
//       rotations (the strictly lower triangle is r's);
//   {cu,hip}solver_syrk_ffi   (a, c, alpha, beta) -> c': the lower triangle and diagonal of
//       alpha op(a) op(a)^T + beta c (op(a) = a, or a^T with transpose = true; no conjugation),
//       the strictly upper triangle c's (cuBLAS's upper fill mode on the row-major buffers).
// Contracts are the evaluator's (eval/lapack_reduce.cc, eval/lapack_eig.cc, eval/gpu_solver.cc):
// reflectors with ?larfg's conventions (linalg_util.h), the same update order, double precision
// (complex double for complex types), info = 0 where there is one.
#include <algorithm>
#include <cmath>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/linalg_util.h"
#include "kiln/eval/lapack_internal.h"  // BackendInt: the FFI backend_config reader

namespace kiln::cpu::internal::linalg {
namespace {

using eval_internal::BackendInt;

// ---- sytrd / hetrd ----

class SytrdKernel final : public BatchedLinalgKernel {
 public:
  int64_t n_ = 0;
  bool lower_ = true;

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    if (complex_) One<cd>(b, in, out);
    else One<double>(b, in, out);
  }

 private:
  // h -= v w^H + w v^H on the Hermitian len x len block at (off, off), w = x - (tau/2)(x^H v) v,
  // x = tau h v (?hemv + ?her2), the diagonal kept real.
  template <class S>
  static void Reflect(std::vector<S>& h, int64_t n, int64_t off, int64_t len, const std::vector<S>& v, S tau) {
    std::vector<S> x(len), w(len);
    for (int64_t r = 0; r < len; ++r) {
      S s = 0;
      for (int64_t c = 0; c < len; ++c) s += h[(off + r) * n + off + c] * v[c];
      x[r] = tau * s;
    }
    S dot = 0;
    for (int64_t k = 0; k < len; ++k) dot += Conj(x[k]) * v[k];
    const S alpha = -0.5 * tau * dot;
    for (int64_t k = 0; k < len; ++k) w[k] = x[k] + alpha * v[k];
    for (int64_t r = 0; r < len; ++r) {
      S* row = &h[(off + r) * n + off];
      for (int64_t c = 0; c < len; ++c) row[c] -= v[r] * Conj(w[c]) + w[r] * Conj(v[c]);
      row[r] = Re(row[r]);
    }
  }

  template <class S>
  void One(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = n_, nm1 = std::max<int64_t>(n - 1, 0);
    const std::vector<S> a = LoadRun<S>(in[0], b * n * n, n * n);
    // The Hermitian matrix the stored triangle defines.
    std::vector<S> h(n * n);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const bool stored = lower_ ? i >= j : i <= j;
        h[i * n + j] = stored ? a[i * n + j] : Conj(a[j * n + i]);
      }
    for (int64_t i = 0; i < n; ++i) h[i * n + i] = Re(h[i * n + i]);
    std::vector<S> result = a, tau(nm1), v;
    std::vector<double> d(n), e(nm1);
    if (lower_) {
      // H(i) annihilates column i below the subdiagonal; v(i+1) = 1, v(i+2:) below it.
      for (int64_t i = 0; i + 1 < n; ++i) {
        S alpha = h[(i + 1) * n + i];
        const int64_t len = n - i - 2;
        const S t = Larfg(alpha, len > 0 ? &h[(i + 2) * n + i] : nullptr, len, n);
        e[i] = Re(alpha);
        if (t != S(0)) {
          v.assign(n - i - 1, S(0));
          v[0] = 1;
          for (int64_t k = 1; k < n - i - 1; ++k) v[k] = h[(i + 1 + k) * n + i];
          Reflect(h, n, i + 1, n - i - 1, v, t);
        }
        d[i] = Re(h[i * n + i]);
        tau[i] = t;
      }
      if (n > 0) d[n - 1] = Re(h[(n - 1) * n + n - 1]);
      for (int64_t j = 0; j < n; ++j) {
        result[j * n + j] = d[j];
        if (j + 1 < n) result[(j + 1) * n + j] = e[j];
        for (int64_t r = j + 2; r < n; ++r) result[r * n + j] = h[r * n + j];
      }
    } else {
      // H(i) annihilates column i+1 above the superdiagonal, from the last column back;
      // v(i) = 1, v(:i-1) above it.
      for (int64_t i = n - 2; i >= 0; --i) {
        S alpha = h[i * n + i + 1];
        const S t = Larfg(alpha, i > 0 ? &h[i + 1] : nullptr, i, n);
        e[i] = Re(alpha);
        if (t != S(0)) {
          v.assign(i + 1, S(0));
          for (int64_t k = 0; k < i; ++k) v[k] = h[k * n + i + 1];
          v[i] = 1;
          Reflect(h, n, 0, i + 1, v, t);
        }
        d[i + 1] = Re(h[(i + 1) * n + i + 1]);
        tau[i] = t;
      }
      if (n > 0) d[0] = Re(h[0]);
      for (int64_t j = 0; j < n; ++j) {
        result[j * n + j] = d[j];
        if (j + 1 < n) result[j * n + j + 1] = e[j];
        for (int64_t k = 0; k + 1 < j; ++k) result[k * n + j] = h[k * n + j];
      }
    }
    StoreRun(out[0], b * n * n, result);
    StoreRun(out[1], b * n, d);
    StoreRun(out[2], b * nm1, e);
    StoreRun(out[3], b * nm1, tau);
    PutInt(out[4], b, 0);
  }
};

// ---- gehrd ----

class GehrdKernel final : public BatchedLinalgKernel {
 public:
  int64_t n_ = 0, ilo_ = 0, ihi_ = 0;  // 0-based

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    if (complex_) One<cd>(b, in, out);
    else One<double>(b, in, out);
  }

 private:
  template <class S>
  void One(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = n_, nm1 = std::max<int64_t>(n - 1, 0), ihi = ihi_;
    std::vector<S> x = LoadRun<S>(in[0], b * n * n, n * n);
    std::vector<S> tau(nm1, S(0)), v(n), w(n);
    for (int64_t i = ilo_; i < ihi; ++i) {
      S alpha = x[(i + 1) * n + i];
      const int64_t len = ihi - i - 1;
      const S t = Larfg(alpha, len > 0 ? &x[(i + 2) * n + i] : nullptr, len, n);
      // v: rows i+1..ihi of column i, v(i+1) = 1.
      std::fill(v.begin(), v.end(), S(0));
      v[i + 1] = 1;
      for (int64_t r = i + 2; r <= ihi; ++r) v[r] = x[r * n + i];
      // From the right: A(0:ihi, i+1:ihi) -= t (A v) v^H.
      for (int64_t r = 0; r <= ihi; ++r) {
        S s = 0;
        for (int64_t c = i + 1; c <= ihi; ++c) s += x[r * n + c] * v[c];
        for (int64_t c = i + 1; c <= ihi; ++c) x[r * n + c] -= t * s * Conj(v[c]);
      }
      // From the left with H^H: A(i+1:ihi, i+1:n) -= conj(t) v (v^H A).
      for (int64_t c = i + 1; c < n; ++c) {
        S s = 0;
        for (int64_t r = i + 1; r <= ihi; ++r) s += Conj(v[r]) * x[r * n + c];
        w[c] = s;
      }
      for (int64_t r = i + 1; r <= ihi; ++r)
        for (int64_t c = i + 1; c < n; ++c) x[r * n + c] -= Conj(t) * v[r] * w[c];
      x[(i + 1) * n + i] = alpha;
      tau[i] = t;
    }
    StoreRun(out[0], b * n * n, x);
    StoreRun(out[1], b * nm1, tau);
    PutInt(out[2], b, 0);
  }
};

// ---- geqp3 ----

class Geqp3Kernel final : public BatchedLinalgKernel {
 public:
  int64_t m_ = 0, n_ = 0;

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    if (complex_) One<cd>(b, in, out);
    else One<double>(b, in, out);
  }

 private:
  template <class S>
  void One(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t m = m_, n = n_, k = std::min(m, n);
    std::vector<S> x = LoadRun<S>(in[0], b * m * n, m * n);
    std::vector<int64_t> p(n);
    for (int64_t j = 0; j < n; ++j) p[j] = GetInt(in[1], b * n + j);
    std::vector<S> tau(k), w(n);
    std::vector<double> norms(n);
    auto swap_columns = [&](int64_t i, int64_t j) {
      for (int64_t r = 0; r < m; ++r) std::swap(x[r * n + i], x[r * n + j]);
    };
    // The columns with a nonzero jpvt entry lead, in their order.
    int64_t fixed = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (p[j] == 0) {
        p[j] = j + 1;
        continue;
      }
      if (j != fixed) {
        swap_columns(j, fixed);
        p[j] = p[fixed];
        p[fixed] = j + 1;
      } else {
        p[j] = j + 1;
      }
      ++fixed;
    }
    for (int64_t i = 0; i < k; ++i) {
      if (i >= fixed) {
        int64_t best = i;
        for (int64_t j = i; j < n; ++j) {
          double t = 0;
          for (int64_t r = i; r < m; ++r) t += std::norm(x[r * n + j]);
          norms[j] = std::sqrt(t);
          if (norms[j] > norms[best]) best = j;
        }
        if (best != i) {
          swap_columns(i, best);
          std::swap(p[i], p[best]);
        }
      }
      S alpha = x[i * n + i];
      const int64_t len = m - i - 1;
      const S t = Larfg(alpha, len > 0 ? &x[(i + 1) * n + i] : nullptr, len, n);
      tau[i] = t;
      x[i * n + i] = 1;
      // The trailing columns := H^H them.
      for (int64_t c = i + 1; c < n; ++c) {
        S s = 0;
        for (int64_t r = i; r < m; ++r) s += Conj(x[r * n + i]) * x[r * n + c];
        w[c] = s;
      }
      for (int64_t c = i + 1; c < n; ++c)
        for (int64_t r = i; r < m; ++r) x[r * n + c] -= Conj(t) * x[r * n + i] * w[c];
      x[i * n + i] = alpha;
    }
    StoreRun(out[0], b * m * n, x);
    for (int64_t j = 0; j < n; ++j) PutInt(out[1], b * n + j, p[j]);
    StoreRun(out[2], b * k, tau);
  }
};

// ---- gtsv ----

class GtsvKernel final : public BatchedLinalgKernel {
 public:
  int64_t n_ = 0, nrhs_ = 0;

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    if (complex_) One<cd>(b, in, out);
    else One<double>(b, in, out);
  }

 private:
  template <class S>
  void One(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = n_, nrhs = nrhs_;
    std::vector<S> dlv = LoadRun<S>(in[0], b * n, n), d = LoadRun<S>(in[1], b * n, n);
    std::vector<S> du = LoadRun<S>(in[2], b * n, n), x = LoadRun<S>(in[3], b * n * nrhs, n * nrhs);
    S* dl = dlv.data() + (n > 0 ? 1 : 0);  // LAPACK's DL(i) is JAX's dl[i + 1]
    auto row = [&](int64_t i) { return x.data() + i * nrhs; };
    int64_t info = 0;
    for (int64_t i = 0; i + 1 < n; ++i) {
      const bool last = i + 2 == n;
      if (Cabs1(d[i]) >= Cabs1(dl[i])) {  // no interchange
        if (d[i] == S(0)) {
          info = i + 1;
          break;
        }
        const S fact = dl[i] / d[i];
        d[i + 1] -= fact * du[i];
        for (int64_t c = 0; c < nrhs; ++c) row(i + 1)[c] -= fact * row(i)[c];
        if (!last) dl[i] = 0;
      } else {  // rows i and i + 1 interchanged
        const S fact = d[i] / dl[i];
        d[i] = dl[i];
        const S temp = d[i + 1];
        d[i + 1] = du[i] - fact * temp;
        if (!last) {
          dl[i] = du[i + 1];
          du[i + 1] = -fact * dl[i];
        }
        du[i] = temp;
        for (int64_t c = 0; c < nrhs; ++c) {
          const S t = row(i)[c];
          row(i)[c] = row(i + 1)[c];
          row(i + 1)[c] = t - fact * row(i + 1)[c];
        }
      }
    }
    if (info == 0 && n > 0 && d[n - 1] == S(0)) info = n;
    if (info == 0) {
      for (int64_t c = 0; c < nrhs; ++c)
        for (int64_t i = n; i-- > 0;) {
          S t = row(i)[c];
          if (i + 1 < n) t -= du[i] * row(i + 1)[c];
          if (i + 2 < n) t -= dl[i] * row(i + 2)[c];
          row(i)[c] = t / d[i];
        }
    }
    StoreRun(out[0], b * n, dlv);
    StoreRun(out[1], b * n, d);
    StoreRun(out[2], b * n, du);
    StoreRun(out[3], b * n * nrhs, x);
    PutInt(out[4], b, info);
  }
};

// ---- cholesky_update ----

class CholeskyUpdateKernel final : public BatchedLinalgKernel {
 public:
  int64_t n_ = 0;

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    if (complex_) One<cd>(b, in, out);
    else One<double>(b, in, out);
  }

 private:
  // Rotation k makes (r_kk, w_k) -> (|(r_kk, w_k)|, 0) and carries rows k of r and w along.
  template <class S>
  void One(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = n_;
    std::vector<S> r = LoadRun<S>(in[0], b * n * n, n * n), w = LoadRun<S>(in[1], b * n, n);
    for (int64_t k = 0; k < n; ++k) {
      const S rkk = r[k * n + k];
      const double nrm = std::hypot(std::abs(rkk), std::abs(w[k]));
      const S c = nrm / rkk, s = w[k] / rkk;
      r[k * n + k] = nrm;
      for (int64_t j = k + 1; j < n; ++j) {
        r[k * n + j] = (r[k * n + j] + Conj(s) * w[j]) / Conj(c);
        w[j] = Conj(c) * w[j] - s * r[k * n + j];
      }
      w[k] = 0;
    }
    StoreRun(out[0], b * n * n, r);
    StoreRun(out[1], b * n, w);
  }
};

// ---- syrk ----

class SyrkKernel final : public BatchedLinalgKernel {
 public:
  int64_t am_ = 0, an_ = 0, n_ = 0, k_ = 0;
  bool transpose_ = false;

 protected:
  void RunBatch(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const override {
    if (complex_) One<cd>(b, in, out);
    else One<double>(b, in, out);
  }

 private:
  template <class S>
  void One(int64_t b, std::span<const ArrayView> in, std::span<const ArrayView> out) const {
    const int64_t n = n_, k = k_, an = an_;
    const std::vector<S> a = LoadRun<S>(in[0], b * am_ * an, am_ * an);
    std::vector<S> c = LoadRun<S>(in[1], b * n * n, n * n);
    const S alpha = Get<S>(in[2], 0), beta = Get<S>(in[3], 0);
    // Row i of op(a) (n x k).
    auto at = [&](int64_t i, int64_t l) { return transpose_ ? a[l * an + i] : a[i * an + l]; };
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        S s = 0;
        for (int64_t l = 0; l < k; ++l) s += at(i, l) * at(j, l);
        c[i * n + j] = alpha * s + beta * c[i * n + j];
      }
    StoreRun(out[0], b * n * n, c);
  }
};

enum class Family { kNone, kSytrd, kGehrd, kGeqp3, kGtsv, kCholeskyUpdate, kSyrk };

Family FamilyOf(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kCustomCall) return Family::kNone;
  const std::string& t = instr.attrs().custom_call_target;
  const std::string_view u = Unvendored(t);
  if (LapackTarget(t, "sytrd") || LapackTarget(t, "hetrd") || u == "solver_sytrd_ffi") return Family::kSytrd;
  if (LapackTarget(t, "gehrd")) return Family::kGehrd;
  if (LapackTarget(t, "geqp3") || u == "hybrid_geqp3") return Family::kGeqp3;
  if (LapackTarget(t, "gtsv")) return Family::kGtsv;
  if (u == "_cholesky_update_ffi") return Family::kCholeskyUpdate;
  if (u == "solver_syrk_ffi") return Family::kSyrk;
  return Family::kNone;
}

Status Expect(bool ok, const HloInstruction& instr, std::string_view what) {
  if (ok) return OkStatus();
  return InvalidArgument(instr.attrs().custom_call_target, " %", instr.name(), ": ", what);
}

}  // namespace

bool IsNativeLinalgReduce(const HloInstruction& instr) { return FamilyOf(instr) != Family::kNone; }

StatusOr<std::unique_ptr<CpuKernel>> CreateLinalgReduceKernel(const HloInstruction& instr) {
  const std::string& t = instr.attrs().custom_call_target;
  const bool vendor = !Unvendored(t).empty();
  auto bint = [&](std::string_view key, int fallback) { return BackendInt(instr, key, fallback); };
  std::unique_ptr<BatchedLinalgKernel> kernel;
  switch (FamilyOf(instr)) {
    case Family::kSytrd: {
      auto k = std::make_unique<SytrdKernel>();
      KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 1, 5));
      KILN_ASSIGN_OR_RETURN(MatrixDims d, MatrixDimsOf(instr, k->in_shapes_[0]));
      const int64_t nm1 = std::max<int64_t>(d.n - 1, 0);
      KILN_RETURN_IF_ERROR(Expect(d.m == d.n && k->out_shapes_[0].dimensions() == k->in_shapes_[0].dimensions() &&
                                      k->out_shapes_[1].num_elements() == d.batch * d.n &&
                                      k->out_shapes_[2].num_elements() == d.batch * nm1 &&
                                      k->out_shapes_[3].num_elements() == d.batch * nm1 &&
                                      k->out_shapes_[4].num_elements() == d.batch,
                                  instr, "needs square matrices and (a', d, e, tau, info) results that fit"));
      k->n_ = d.n;
      k->batch_ = d.batch;
      k->work_ = d.n * d.n * d.n;
      k->lower_ = vendor ? bint("lower", 1) != 0 : bint("uplo", 'L') == 'L';
      kernel = std::move(k);
      break;
    }
    case Family::kGehrd: {
      auto k = std::make_unique<GehrdKernel>();
      KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 1, 3));
      KILN_ASSIGN_OR_RETURN(MatrixDims d, MatrixDimsOf(instr, k->in_shapes_[0]));
      const int64_t nm1 = std::max<int64_t>(d.n - 1, 0);
      KILN_RETURN_IF_ERROR(Expect(d.m == d.n && k->out_shapes_[0].dimensions() == k->in_shapes_[0].dimensions() &&
                                      k->out_shapes_[1].num_elements() == d.batch * nm1 &&
                                      k->out_shapes_[2].num_elements() == d.batch,
                                  instr, "needs square matrices and (a', tau, info) results that fit"));
      k->n_ = d.n;
      k->ilo_ = bint("low", 1) - 1;
      k->ihi_ = bint("high", static_cast<int>(d.n)) - 1;
      KILN_RETURN_IF_ERROR(Expect(d.n == 0 || (k->ilo_ >= 0 && k->ilo_ <= k->ihi_ && k->ihi_ < d.n), instr,
                                  StrCat("needs 1 <= low <= high <= ", d.n)));
      k->batch_ = d.batch;
      k->work_ = d.n * d.n * d.n;
      kernel = std::move(k);
      break;
    }
    case Family::kGeqp3: {
      auto k = std::make_unique<Geqp3Kernel>();
      KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 2, 3));
      KILN_ASSIGN_OR_RETURN(MatrixDims d, MatrixDimsOf(instr, k->in_shapes_[0]));
      const PrimitiveType pt = k->in_shapes_[1].element_type(), po = k->out_shapes_[1].element_type();
      KILN_RETURN_IF_ERROR(Expect((pt == PrimitiveType::kS32 || pt == PrimitiveType::kS64) &&
                                      (po == PrimitiveType::kS32 || po == PrimitiveType::kS64) &&
                                      k->in_shapes_[1].num_elements() == d.batch * d.n &&
                                      k->out_shapes_[0].dimensions() == k->in_shapes_[0].dimensions() &&
                                      k->out_shapes_[1].num_elements() == d.batch * d.n &&
                                      k->out_shapes_[2].num_elements() == d.batch * std::min(d.m, d.n),
                                  instr, "needs (a, jpvt) with s32/s64 pivots and results that fit"));
      k->m_ = d.m;
      k->n_ = d.n;
      k->batch_ = d.batch;
      k->work_ = d.m * d.n * d.n;
      kernel = std::move(k);
      break;
    }
    case Family::kGtsv: {
      auto k = std::make_unique<GtsvKernel>();
      KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 4, 5));
      KILN_ASSIGN_OR_RETURN(MatrixDims d, MatrixDimsOf(instr, k->in_shapes_[3]));
      bool ok = k->out_shapes_[3].dimensions() == k->in_shapes_[3].dimensions() &&
                k->out_shapes_[4].num_elements() == d.batch;
      for (int i = 0; i < 3; ++i)
        ok = ok && k->in_shapes_[i].num_elements() == d.batch * d.m &&
             k->out_shapes_[i].num_elements() == d.batch * d.m;
      KILN_RETURN_IF_ERROR(Expect(ok, instr, "diagonals, right-hand sides or results do not fit"));
      k->n_ = d.m;
      k->nrhs_ = d.n;
      k->batch_ = d.batch;
      k->work_ = d.m * std::max<int64_t>(d.n, 1) * 8;
      k->complex_ = IsComplex(k->in_shapes_[3].element_type());
      kernel = std::move(k);
      break;
    }
    case Family::kCholeskyUpdate: {
      auto k = std::make_unique<CholeskyUpdateKernel>();
      KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 2, 2));
      KILN_ASSIGN_OR_RETURN(MatrixDims d, MatrixDimsOf(instr, k->in_shapes_[0]));
      KILN_RETURN_IF_ERROR(Expect(d.m == d.n && k->in_shapes_[1].num_elements() == d.batch * d.n &&
                                      k->out_shapes_[0].dimensions() == k->in_shapes_[0].dimensions() &&
                                      k->out_shapes_[1].num_elements() == d.batch * d.n,
                                  instr, "needs an n x n r and an n-vector w"));
      k->n_ = d.n;
      k->batch_ = d.batch;
      k->work_ = d.n * d.n * 4;
      kernel = std::move(k);
      break;
    }
    case Family::kSyrk: {
      auto k = std::make_unique<SyrkKernel>();
      KILN_RETURN_IF_ERROR(InitLinalgKernel(*k, instr, 4, 1));
      KILN_ASSIGN_OR_RETURN(MatrixDims ad, MatrixDimsOf(instr, k->in_shapes_[0]));
      KILN_ASSIGN_OR_RETURN(MatrixDims cd_, MatrixDimsOf(instr, k->in_shapes_[1]));
      k->transpose_ = bint("transpose", 0) != 0;
      k->n_ = k->transpose_ ? ad.n : ad.m;
      k->k_ = k->transpose_ ? ad.m : ad.n;
      k->am_ = ad.m;
      k->an_ = ad.n;
      KILN_RETURN_IF_ERROR(Expect(cd_.m == k->n_ && cd_.n == k->n_ && cd_.batch == ad.batch &&
                                      k->in_shapes_[2].num_elements() == 1 && k->in_shapes_[3].num_elements() == 1 &&
                                      k->out_shapes_[0].dimensions() == k->in_shapes_[1].dimensions(),
                                  instr, "shapes of (a, c, alpha, beta) do not fit"));
      KILN_RETURN_IF_ERROR(Expect(IsLinalgType(k->in_shapes_[2].element_type()) &&
                                      IsLinalgType(k->in_shapes_[3].element_type()),
                                  instr, "alpha and beta must be floats"));
      k->batch_ = ad.batch;
      k->work_ = k->n_ * k->n_ * std::max<int64_t>(k->k_, 1);
      kernel = std::move(k);
      break;
    }
    case Family::kNone: return Unimplemented("no native linear-algebra kernel for %", instr.name());
  }
  return std::unique_ptr<CpuKernel>(std::move(kernel));
}

}  // namespace kiln::cpu::internal::linalg
