#include "kiln/cuda/libs/solver.h"

#include <cuComplex.h>

#include <algorithm>
#include <type_traits>

#include "kiln/base/strings.h"
#include "kiln/cuda/libs/handles.h"
#include "kiln/cuda/libs/kernel_loader.h"
#include "kiln/cuda/vendor_apis.h"

namespace kiln::cuda::libs {

namespace {

uint64_t Align(uint64_t v) { return (v + 255) / 256 * 256; }

bool IsSolverType(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF64 || t == PrimitiveType::kC64 ||
         t == PrimitiveType::kC128;
}
PrimitiveType RealOf(PrimitiveType t) {
  if (t == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (t == PrimitiveType::kC128) return PrimitiveType::kF64;
  return t;
}
bool CallsCusolver(SolverOp op) {
  switch (op) {
    case SolverOp::kPotrf: case SolverOp::kGetrf: case SolverOp::kGeqrf: case SolverOp::kOrgqr:
    case SolverOp::kSyevd: case SolverOp::kSytrd: case SolverOp::kGesvd: case SolverOp::kGesvdj:
      return true;
    default:
      return false;
  }
}
bool IsSvd(SolverOp op) { return op == SolverOp::kGesvd || op == SolverOp::kGesvdj; }

// Transposes the operand into a column-major copy (Note [Row-major solver buffers]).
bool TransposesIn(const SolverDesc& d) {
  switch (d.op) {
    case SolverOp::kGetrf: case SolverOp::kGeqrf: case SolverOp::kOrgqr: case SolverOp::kSyevd:
    case SolverOp::kSytrd: case SolverOp::kGesvdj:
      return true;
    case SolverOp::kGesvd:
      return d.m >= d.n;
    default:
      return false;
  }
}

template <class T>
T One() {
  if constexpr (std::is_same_v<T, cuComplex>) return make_cuComplex(1.f, 0.f);
  else if constexpr (std::is_same_v<T, cuDoubleComplex>) return make_cuDoubleComplex(1.0, 0.0);
  else return T(1);
}
template <class T>
T Zero() {
  if constexpr (std::is_same_v<T, cuComplex>) return make_cuComplex(0.f, 0.f);
  else if constexpr (std::is_same_v<T, cuDoubleComplex>) return make_cuDoubleComplex(0.0, 0.0);
  else return T(0);
}
template <class T>
using RealT = std::conditional_t<std::is_same_v<T, cuComplex>, float,
                                 std::conditional_t<std::is_same_v<T, cuDoubleComplex>, double, T>>;

// The member of `api` for T's precision: the S, D, C or Z form of a routine.
#define KILN_PICK(api, S, D, C, Z)                                        \
  [&]() {                                                                  \
    if constexpr (std::is_same_v<T, float>) return (api).S;                \
    else if constexpr (std::is_same_v<T, double>) return (api).D;          \
    else if constexpr (std::is_same_v<T, cuComplex>) return (api).C;       \
    else return (api).Z;                                                   \
  }()

cublasFillMode_t Fill(bool upper) { return upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER; }

}  // namespace

std::string_view SolverOpName(SolverOp op) {
  switch (op) {
    case SolverOp::kPotrf: return "potrf";
    case SolverOp::kGetrf: return "getrf";
    case SolverOp::kGeqrf: return "geqrf";
    case SolverOp::kOrgqr: return "orgqr";
    case SolverOp::kSyevd: return "syevd";
    case SolverOp::kSytrd: return "sytrd";
    case SolverOp::kGesvd: return "gesvd";
    case SolverOp::kGesvdj: return "gesvdj";
    case SolverOp::kTrsm: return "trsm";
    case SolverOp::kSyrk: return "syrk";
    case SolverOp::kPivotsToPermutation: return "lu_pivots_to_permutation";
    case SolverOp::kCholeskyUpdate: return "cholesky_update";
    case SolverOp::kGtsv: return "gtsv";
  }
  return "?";
}

std::string SolverDesc::ToString() const {
  std::string s = StrCat("solver ", SolverOpName(op), " ", PrimitiveTypeName(type), " batch=", batch,
                         " m=", m, " n=", n);
  if (op == SolverOp::kOrgqr || op == SolverOp::kTrsm || op == SolverOp::kSyrk ||
      op == SolverOp::kPivotsToPermutation)
    s += StrCat(" k=", k);
  if (op == SolverOp::kPotrf || op == SolverOp::kSyevd || op == SolverOp::kSytrd || op == SolverOp::kTrsm)
    s += lower ? " lower" : " upper";
  if (op == SolverOp::kTrsm)
    s += StrCat(left_side ? " left" : " right", transpose == 1 ? " T" : transpose == 2 ? " C" : " N",
                unit_diagonal ? " unit" : "");
  if (op == SolverOp::kSyrk && syrk_transpose) s += " transpose";
  if (op == SolverOp::kGtsv && gtsv_lapack) s += " lapack";
  if (IsSvd(op)) {
    s += StrCat(compute_uv ? "" : " no-uv",
                svd_layout == SvdLayout::kUVt ? " UVt" : svd_layout == SvdLayout::kVtU ? " VtU" : " UV",
                " x=", x_rows, "x", x_cols, " y=", y_rows, "x", y_cols);
  }
  return s;
}

bool SolverCapturable(SolverOp op) {
  return op != SolverOp::kSyevd && op != SolverOp::kGesvd && op != SolverOp::kGesvdj;
}

Status ValidateSolverDesc(const SolverDesc& d) {
  const std::string what = d.ToString();
  if (d.op == SolverOp::kPivotsToPermutation) {
    if (d.type != PrimitiveType::kS32) return Unimplemented(what, ": pivots of type ", PrimitiveTypeName(d.type));
  } else if (!IsSolverType(d.type)) {
    return Unimplemented(what, ": element type ", PrimitiveTypeName(d.type), " (f32, f64, c64, c128)");
  }
  if (d.batch < 0 || d.m < 0 || d.n < 0 || d.k < 0) return InvalidArgument(what, ": negative sizes");
  constexpr int64_t kMaxInt = 2147483647;
  if (d.m > kMaxInt / std::max<int64_t>(d.n, 1) || d.k > kMaxInt)
    return Unimplemented(what, ": matrices beyond 32-bit sizes");
  const int64_t k = std::min(d.m, d.n);
  switch (d.op) {
    case SolverOp::kPotrf: case SolverOp::kSyevd: case SolverOp::kSytrd:
      if (d.m != d.n) return InvalidArgument(what, ": matrix must be square");
      break;
    case SolverOp::kOrgqr:
      if (!(d.m >= d.n && d.n >= d.k)) return InvalidArgument(what, ": needs m >= n >= k");
      break;
    case SolverOp::kTrsm:
      if (d.k != (d.left_side ? d.m : d.n)) return InvalidArgument(what, ": a's order does not fit b");
      if (d.transpose < 0 || d.transpose > 2) return InvalidArgument(what, ": bad transpose");
      break;
    case SolverOp::kSyrk:
      if (d.m != d.n) return InvalidArgument(what, ": c must be square");
      break;
    case SolverOp::kCholeskyUpdate:
      if (d.m != d.n) return InvalidArgument(what, ": r must be square");
      if (IsComplexType(d.type)) return Unimplemented(what, ": complex types");
      break;
    case SolverOp::kGesvd: case SolverOp::kGesvdj: {
      if (!d.compute_uv) break;
      const int64_t m = d.m, n = d.n, xr = d.x_rows, xc = d.x_cols, yr = d.y_rows, yc = d.y_cols;
      bool ok = false;
      switch (d.svd_layout) {
        case SvdLayout::kUVt: ok = xr == m && xc >= k && xc <= m && yc == n && yr >= k && yr <= n; break;
        case SvdLayout::kVtU: ok = xc == n && xr >= k && xr <= n && yr == m && yc >= k && yc <= m; break;
        case SvdLayout::kUV: ok = xr == m && xc >= k && xc <= m && yr == n && yc >= k && yc <= n; break;
      }
      if (!ok) return InvalidArgument(what, ": result shapes do not fit the operand");
      if (d.op == SolverOp::kGesvdj && d.svd_layout != SvdLayout::kUV)
        return Unimplemented(what, ": gesvdj writes U and V");
      if (d.op == SolverOp::kGesvd && d.svd_layout == SvdLayout::kUV)
        return Unimplemented(what, ": gesvd writes U and V^H");
      break;
    }
    default:
      break;
  }
  return OkStatus();
}

int64_t SolverInputCount(const SolverDesc& d) {
  switch (d.op) {
    case SolverOp::kOrgqr: case SolverOp::kTrsm: case SolverOp::kCholeskyUpdate: return 2;
    case SolverOp::kSyrk: case SolverOp::kGtsv: return 4;
    default: return 1;
  }
}
int64_t SolverOutputCount(const SolverDesc& d) {
  switch (d.op) {
    case SolverOp::kPotrf: case SolverOp::kGeqrf: case SolverOp::kCholeskyUpdate: return 2;
    case SolverOp::kGetrf: case SolverOp::kSyevd: return 3;
    case SolverOp::kSytrd: case SolverOp::kGesvd: case SolverOp::kGesvdj: return 5;
    case SolverOp::kGtsv: return d.gtsv_lapack ? 5 : 1;
    default: return 1;
  }
}

uint64_t SolverInputBytes(const SolverDesc& d, int64_t i) {
  const uint64_t e = PrimitiveByteWidth(d.type), b = d.batch;
  switch (d.op) {
    case SolverOp::kOrgqr: return i == 0 ? b * d.m * d.n * e : b * d.k * e;
    case SolverOp::kTrsm: return i == 0 ? b * d.k * d.k * e : b * d.m * d.n * e;
    case SolverOp::kSyrk:
      if (i == 0) return b * d.n * d.k * e;
      if (i == 1) return b * d.n * d.n * e;
      return e;
    case SolverOp::kPivotsToPermutation: return b * d.k * 4;
    case SolverOp::kCholeskyUpdate: return i == 0 ? b * d.n * d.n * e : b * d.n * e;
    case SolverOp::kGtsv: return i < 3 ? b * d.m * e : b * d.m * d.n * e;
    default: return b * d.m * d.n * e;
  }
}

uint64_t SolverOutputBytes(const SolverDesc& d, int64_t i) {
  const uint64_t e = PrimitiveByteWidth(d.type), r = PrimitiveByteWidth(RealOf(d.type)), b = d.batch;
  const uint64_t mn = b * d.m * d.n * e, k = std::min(d.m, d.n), nm1 = d.n > 0 ? d.n - 1 : 0;
  switch (d.op) {
    case SolverOp::kPotrf: return i == 0 ? mn : b * 4;
    case SolverOp::kGetrf: return i == 0 ? mn : i == 1 ? b * k * 4 : b * 4;
    case SolverOp::kGeqrf: return i == 0 ? mn : b * k * e;
    case SolverOp::kOrgqr: return mn;
    case SolverOp::kSyevd: return i == 0 ? mn : i == 1 ? b * d.n * r : b * 4;
    case SolverOp::kSytrd:
      switch (i) {
        case 0: return mn;
        case 1: return b * d.n * r;
        case 2: return b * nm1 * r;
        case 3: return b * nm1 * e;
        default: return b * 4;
      }
    case SolverOp::kGesvd: case SolverOp::kGesvdj:
      switch (i) {
        case 0: return mn;
        case 1: return b * k * r;
        case 2: return b * d.x_rows * d.x_cols * e;
        case 3: return b * d.y_rows * d.y_cols * e;
        default: return b * 4;
      }
    case SolverOp::kTrsm: return mn;
    case SolverOp::kSyrk: return b * d.n * d.n * e;
    case SolverOp::kPivotsToPermutation: return b * d.m * 4;
    case SolverOp::kCholeskyUpdate: return i == 0 ? b * d.n * d.n * e : b * d.n * e;
    case SolverOp::kGtsv:
      if (!d.gtsv_lapack) return mn;
      return i < 3 ? b * d.m * e : i == 3 ? mn : b * 4;
  }
  return 0;
}

const char* SolverKernelSource() {
  return R"cuda(
// One thread per matrix: the permutation of m rows that applying the 0-based row interchanges
// pivots[0..k) in order to the identity gives; pivots outside [0, m) are skipped.
extern "C" __global__ void kiln_lu_pivots_to_permutation(const int* pivots, int* perm,
                                                         long long batch, long long k,
                                                         long long m) {
  const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const int* q = pivots + b * k;
  int* p = perm + b * m;
  for (long long i = 0; i < m; ++i) p[i] = (int)i;
  const long long steps = k < m ? k : m;
  for (long long i = 0; i < steps; ++i) {
    const int j = q[i];
    if (j >= 0 && j < m) {
      const int t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
  }
}

// One thread per matrix: r (n x n, upper triangular, row-major) becomes the Cholesky factor of
// r^T r + w w^T by rotations, w what they leave of it (eval/gpu_solver.cc's CholeskyUpdate), in
// double precision.
template <typename T>
__device__ void kiln_cholesky_update(T* r, T* w, long long batch, long long n) {
  const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  T* x = r + b * n * n;
  T* v = w + b * n;
  for (long long k = 0; k < n; ++k) {
    const double xkk = (double)x[k * n + k];
    const double vk = (double)v[k];
    const double nrm = hypot(fabs(xkk), fabs(vk));
    const double c = nrm / xkk, s = vk / xkk;
    x[k * n + k] = (T)nrm;
    for (long long j = k + 1; j < n; ++j) {
      const double xkj = ((double)x[k * n + j] + s * (double)v[j]) / c;
      x[k * n + j] = (T)xkj;
      v[j] = (T)(c * (double)v[j] - s * xkj);
    }
    v[k] = (T)0;
  }
}
extern "C" __global__ void kiln_cholesky_update_f32(float* r, float* w, long long batch, long long n) {
  kiln_cholesky_update(r, w, batch, n);
}
extern "C" __global__ void kiln_cholesky_update_f64(double* r, double* w, long long batch, long long n) {
  kiln_cholesky_update(r, w, batch, n);
}

// Tridiagonal systems as LAPACK's ?gtsv: one thread per system, in place on dl, d, du (batch x
// n each; LAPACK's DL(i) is dl[i + 1]) and x (batch x n x nrhs, row-major), in double (complex
// arithmetic on (re, im) pairs; pivots by |re| + |im| for complex types, as ?gtsv).
struct kiln_c { double r, i; };
__device__ inline kiln_c kiln_ld(const float* p, long long k) { kiln_c v = {(double)p[k], 0.0}; return v; }
__device__ inline kiln_c kiln_ld(const double* p, long long k) { kiln_c v = {p[k], 0.0}; return v; }
__device__ inline kiln_c kiln_ld(const float2* p, long long k) { kiln_c v = {(double)p[k].x, (double)p[k].y}; return v; }
__device__ inline kiln_c kiln_ld(const double2* p, long long k) { kiln_c v = {p[k].x, p[k].y}; return v; }
__device__ inline void kiln_st(float* p, long long k, kiln_c v) { p[k] = (float)v.r; }
__device__ inline void kiln_st(double* p, long long k, kiln_c v) { p[k] = v.r; }
__device__ inline void kiln_st(float2* p, long long k, kiln_c v) { p[k].x = (float)v.r; p[k].y = (float)v.i; }
__device__ inline void kiln_st(double2* p, long long k, kiln_c v) { p[k].x = v.r; p[k].y = v.i; }
__device__ inline kiln_c kiln_sub(kiln_c a, kiln_c b) { kiln_c v = {a.r - b.r, a.i - b.i}; return v; }
__device__ inline kiln_c kiln_mul(kiln_c a, kiln_c b) { kiln_c v = {a.r * b.r - a.i * b.i, a.r * b.i + a.i * b.r}; return v; }
__device__ inline kiln_c kiln_div(kiln_c a, kiln_c b) {
  const double den = b.r * b.r + b.i * b.i;
  kiln_c v = {(a.r * b.r + a.i * b.i) / den, (a.i * b.r - a.r * b.i) / den};
  return v;
}
__device__ inline kiln_c kiln_neg(kiln_c a) { kiln_c v = {-a.r, -a.i}; return v; }
__device__ inline bool kiln_is_zero(kiln_c a) { return a.r == 0.0 && a.i == 0.0; }

template <typename T>
__device__ void kiln_gtsv(T* dl0, T* d0, T* du0, T* x0, int* info_out, long long batch, long long n,
                          long long nrhs, int cplx) {
  const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  T* dl = dl0 + b * n + 1;
  T* d = d0 + b * n;
  T* du = du0 + b * n;
  T* x = x0 + b * n * nrhs;
  const kiln_c zero = {0.0, 0.0};
  long long info = 0;
  for (long long i = 0; i + 1 < n; ++i) {
    const bool last = i + 2 == n;
    const kiln_c di = kiln_ld(d, i), dli = kiln_ld(dl, i);
    const double mdi = cplx ? fabs(di.r) + fabs(di.i) : fabs(di.r);
    const double mdl = cplx ? fabs(dli.r) + fabs(dli.i) : fabs(dli.r);
    if (mdi >= mdl) {  // no interchange
      if (kiln_is_zero(di)) {
        info = i + 1;
        break;
      }
      const kiln_c fact = kiln_div(dli, di);
      kiln_st(d, i + 1, kiln_sub(kiln_ld(d, i + 1), kiln_mul(fact, kiln_ld(du, i))));
      for (long long c = 0; c < nrhs; ++c)
        kiln_st(x, (i + 1) * nrhs + c,
                kiln_sub(kiln_ld(x, (i + 1) * nrhs + c), kiln_mul(fact, kiln_ld(x, i * nrhs + c))));
      if (!last) kiln_st(dl, i, zero);
    } else {  // interchange rows i and i + 1
      const kiln_c fact = kiln_div(di, dli);
      kiln_st(d, i, dli);
      const kiln_c temp = kiln_ld(d, i + 1);
      kiln_st(d, i + 1, kiln_sub(kiln_ld(du, i), kiln_mul(fact, temp)));
      if (!last) {
        const kiln_c du1 = kiln_ld(du, i + 1);
        kiln_st(dl, i, du1);
        kiln_st(du, i + 1, kiln_neg(kiln_mul(fact, du1)));
      }
      kiln_st(du, i, temp);
      for (long long c = 0; c < nrhs; ++c) {
        const kiln_c t = kiln_ld(x, i * nrhs + c), u = kiln_ld(x, (i + 1) * nrhs + c);
        kiln_st(x, i * nrhs + c, u);
        kiln_st(x, (i + 1) * nrhs + c, kiln_sub(t, kiln_mul(fact, u)));
      }
    }
  }
  if (info == 0 && n > 0 && kiln_is_zero(kiln_ld(d, n - 1))) info = n;
  if (info_out) info_out[b] = (int)info;
  if (info != 0) return;
  for (long long c = 0; c < nrhs; ++c) {
    for (long long i = n; i-- > 0;) {
      kiln_c t = kiln_ld(x, i * nrhs + c);
      if (i + 1 < n) t = kiln_sub(t, kiln_mul(kiln_ld(du, i), kiln_ld(x, (i + 1) * nrhs + c)));
      if (i + 2 < n) t = kiln_sub(t, kiln_mul(kiln_ld(dl, i), kiln_ld(x, (i + 2) * nrhs + c)));
      kiln_st(x, i * nrhs + c, kiln_div(t, kiln_ld(d, i)));
    }
  }
}
#define KILN_GTSV(suffix, T, cplx)                                                               \
  extern "C" __global__ void kiln_gtsv_##suffix(T* dl, T* d, T* du, T* x, int* info,             \
                                                long long batch, long long n, long long nrhs) {  \
    kiln_gtsv(dl, d, du, x, info, batch, n, nrhs, cplx);                                         \
  }
KILN_GTSV(f32, float, 0)
KILN_GTSV(f64, double, 0)
KILN_GTSV(c64, float2, 1)
KILN_GTSV(c128, double2, 1)
)cuda";
}

StatusOr<std::unique_ptr<SolverPlan>> SolverPlan::Create(const SolverDesc& desc, CudaDevice& device,
                                                         runtime::Stream& stream) {
  KILN_RETURN_IF_ERROR(ValidateSolverDesc(desc));
  std::unique_ptr<SolverPlan> plan(new SolverPlan(desc, device));
  KILN_RETURN_IF_ERROR(plan->Build(stream).WithContext(desc.ToString()));
  return plan;
}

SolverPlan::~SolverPlan() {
  if (gesvdj_params_ == nullptr) return;
  StatusOr<std::shared_ptr<const CusolverApi>> api = CusolverApi::Default();
  if (api.ok() && device_.Activate().ok())
    (*api)->cusolverDnDestroyGesvdjInfo(static_cast<gesvdjInfo_t>(gesvdj_params_));
}

Status SolverPlan::Build(runtime::Stream& stream) {
  KILN_RETURN_IF_ERROR(device_.Activate());
  const SolverDesc& d = desc_;
  if (d.op == SolverOp::kPivotsToPermutation || d.op == SolverOp::kCholeskyUpdate || d.op == SolverOp::kGtsv) {
    NvrtcRequest request;
    request.source = SolverKernelSource();
    request.program_name = "kiln_solver_kernels.cu";
    KILN_ASSIGN_OR_RETURN(runtime::Module * module, LoadLibraryModule(device_, request));
    std::string name = d.op == SolverOp::kPivotsToPermutation ? "kiln_lu_pivots_to_permutation"
                       : d.op == SolverOp::kGtsv ? StrCat("kiln_gtsv_", PrimitiveTypeName(d.type))
                       : d.type == PrimitiveType::kF64 ? "kiln_cholesky_update_f64"
                                                       : "kiln_cholesky_update_f32";
    KILN_ASSIGN_OR_RETURN(kernel_, module->GetKernel(name));
    // gtsv2 modifies copies of its diagonals (its only result is x).
    if (d.op == SolverOp::kGtsv && !d.gtsv_lapack)
      workspace_bytes_ = 3 * Align(static_cast<uint64_t>(d.batch * d.m) * PrimitiveByteWidth(d.type));
    return OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device_));
  KILN_RETURN_IF_ERROR(handles->cublas_api().status());
  KILN_RETURN_IF_ERROR(handles->Cublas(stream).status());
  const uint64_t e = PrimitiveByteWidth(d.type);
  const uint64_t m = d.m, n = d.n;
  uint64_t a_elems = 0, u_elems = 0, v_elems = 0;
  if (TransposesIn(d) || d.op == SolverOp::kGesvd) a_elems = m * n;
  if (IsSvd(d.op)) {
    u_elems = std::max(m, n) * std::max(m, n);
    v_elems = std::min(m, n) * std::min(m, n);
    if (d.op == SolverOp::kGesvdj) u_elems = m * m, v_elems = n * n;
  }
  if (CallsCusolver(d.op)) {
    KILN_ASSIGN_OR_RETURN(const CusolverApi* api, handles->cusolver_api());
    KILN_ASSIGN_OR_RETURN(cusolverDnHandle_t h, handles->Cusolver(stream));
    if (d.op == SolverOp::kGesvdj) {
      gesvdjInfo_t params = nullptr;
      KILN_RETURN_IF_ERROR(CusolverStatus(api->cusolverDnCreateGesvdjInfo(&params), "cusolverDnCreateGesvdjInfo"));
      gesvdj_params_ = params;
    }
    if (m > 0 && n > 0) {
      auto query = [&]<class T>(T*) -> Status {
        const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(d.k);
        int lwork = 0;
        cusolverStatus_t st = CUSOLVER_STATUS_SUCCESS;
        const auto& a = *api;
        switch (d.op) {
          case SolverOp::kPotrf:
            st = KILN_PICK(a, cusolverDnSpotrf_bufferSize, cusolverDnDpotrf_bufferSize,
                           cusolverDnCpotrf_bufferSize, cusolverDnZpotrf_bufferSize)(
                h, Fill(d.lower), in, nullptr, in, &lwork);
            break;
          case SolverOp::kGetrf:
            st = KILN_PICK(a, cusolverDnSgetrf_bufferSize, cusolverDnDgetrf_bufferSize,
                           cusolverDnCgetrf_bufferSize, cusolverDnZgetrf_bufferSize)(
                h, im, in, nullptr, im, &lwork);
            break;
          case SolverOp::kGeqrf:
            st = KILN_PICK(a, cusolverDnSgeqrf_bufferSize, cusolverDnDgeqrf_bufferSize,
                           cusolverDnCgeqrf_bufferSize, cusolverDnZgeqrf_bufferSize)(
                h, im, in, nullptr, im, &lwork);
            break;
          case SolverOp::kOrgqr:
            st = KILN_PICK(a, cusolverDnSorgqr_bufferSize, cusolverDnDorgqr_bufferSize,
                           cusolverDnCungqr_bufferSize, cusolverDnZungqr_bufferSize)(
                h, im, in, ik, nullptr, im, nullptr, &lwork);
            break;
          case SolverOp::kSyevd:
            st = KILN_PICK(a, cusolverDnSsyevd_bufferSize, cusolverDnDsyevd_bufferSize,
                           cusolverDnCheevd_bufferSize, cusolverDnZheevd_bufferSize)(
                h, CUSOLVER_EIG_MODE_VECTOR, Fill(!d.lower), in, nullptr, in, nullptr, &lwork);
            break;
          case SolverOp::kSytrd:
            st = KILN_PICK(a, cusolverDnSsytrd_bufferSize, cusolverDnDsytrd_bufferSize,
                           cusolverDnChetrd_bufferSize, cusolverDnZhetrd_bufferSize)(
                h, Fill(!d.lower), in, nullptr, in, nullptr, nullptr, nullptr, &lwork);
            break;
          case SolverOp::kGesvd: {
            // The factored matrix is m x n (m >= n) or the buffer's n x m (Note [Row-major
            // solver buffers]).
            const int rows = static_cast<int>(std::max(m, n)), cols = static_cast<int>(std::min(m, n));
            st = KILN_PICK(a, cusolverDnSgesvd_bufferSize, cusolverDnDgesvd_bufferSize,
                           cusolverDnCgesvd_bufferSize, cusolverDnZgesvd_bufferSize)(h, rows, cols, &lwork);
            break;
          }
          case SolverOp::kGesvdj:
            st = KILN_PICK(a, cusolverDnSgesvdj_bufferSize, cusolverDnDgesvdj_bufferSize,
                           cusolverDnCgesvdj_bufferSize, cusolverDnZgesvdj_bufferSize)(
                h, d.compute_uv ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR, /*econ=*/0, im, in,
                nullptr, im, nullptr, nullptr, im, nullptr, in, &lwork, static_cast<gesvdjInfo_t>(gesvdj_params_));
            break;
          default:
            break;
        }
        KILN_RETURN_IF_ERROR(CusolverStatus(st, StrCat("cusolverDn", SolverOpName(d.op), "_bufferSize")));
        lwork_ = std::max(lwork, 1);
        return OkStatus();
      };
      switch (d.type) {
        case PrimitiveType::kF32: KILN_RETURN_IF_ERROR(query(static_cast<float*>(nullptr))); break;
        case PrimitiveType::kF64: KILN_RETURN_IF_ERROR(query(static_cast<double*>(nullptr))); break;
        case PrimitiveType::kC64: KILN_RETURN_IF_ERROR(query(static_cast<cuComplex*>(nullptr))); break;
        default: KILN_RETURN_IF_ERROR(query(static_cast<cuDoubleComplex*>(nullptr))); break;
      }
    }
  }
  uint64_t at = 0;
  a_offset_ = at;
  at += Align(a_elems * e);
  u_offset_ = at;
  at += Align(u_elems * e);
  v_offset_ = at;
  at += Align(v_elems * e);
  work_offset_ = at;
  at += Align(static_cast<uint64_t>(lwork_) * e);
  info_offset_ = at;
  at += CallsCusolver(d.op) ? Align(4) : 0;
  // cuBLAS's own workspace (Note [cuBLAS workspace of solver calls]).
  cublas_offset_ = at;
  at += kCublasWorkspaceBytes;
  workspace_bytes_ = at;
  return OkStatus();
}

Status SolverPlan::Run(std::span<const runtime::DeviceMemory> inputs,
                       std::span<const runtime::DeviceMemory> outputs, runtime::DeviceMemory workspace,
                       runtime::Stream& stream) const {
  const SolverDesc& d = desc_;
  if (static_cast<int64_t>(inputs.size()) != SolverInputCount(d) ||
      static_cast<int64_t>(outputs.size()) != SolverOutputCount(d))
    return InvalidArgument(d.ToString(), ": ", inputs.size(), " inputs and ", outputs.size(), " outputs, needs ",
                           SolverInputCount(d), " and ", SolverOutputCount(d));
  for (size_t i = 0; i < inputs.size(); ++i)
    KILN_RETURN_IF_ERROR(CheckBuffer(inputs[i], SolverInputBytes(d, i), StrCat(d.ToString(), " input ", i)));
  for (size_t i = 0; i < outputs.size(); ++i)
    KILN_RETURN_IF_ERROR(CheckBuffer(outputs[i], SolverOutputBytes(d, i), StrCat(d.ToString(), " output ", i)));
  KILN_RETURN_IF_ERROR(CheckBuffer(workspace, workspace_bytes_, StrCat(d.ToString(), " workspace")));
  KILN_RETURN_IF_ERROR(device_.Activate());
  if (d.op == SolverOp::kGtsv) {
    // In place on the results (LAPACK's) or on workspace copies of the diagonals (gtsv2).
    const uint64_t diag = SolverInputBytes(d, 0);
    runtime::DeviceMemory dl = d.gtsv_lapack ? outputs[0] : workspace.Slice(0, diag);
    runtime::DeviceMemory dg = d.gtsv_lapack ? outputs[1] : workspace.Slice(Align(diag), diag);
    runtime::DeviceMemory du = d.gtsv_lapack ? outputs[2] : workspace.Slice(2 * Align(diag), diag);
    runtime::DeviceMemory x = d.gtsv_lapack ? outputs[3] : outputs[0];
    const runtime::DeviceMemory dst[] = {dl, dg, du, x};
    for (int i = 0; i < 4; ++i)
      if (dst[i].ptr != inputs[i].ptr && SolverInputBytes(d, i) > 0)
        KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(dst[i], inputs[i], SolverInputBytes(d, i)));
    if (d.batch == 0) return OkStatus();
    runtime::KernelArgs args;
    args.Add(dl);
    args.Add(dg);
    args.Add(du);
    args.Add(x);
    args.Add(d.gtsv_lapack ? outputs[4].ptr : static_cast<void*>(nullptr));
    args.Add(static_cast<long long>(d.batch));
    args.Add(static_cast<long long>(d.m));
    args.Add(static_cast<long long>(d.n));
    runtime::LaunchDims dims;
    dims.block.x = 64;
    dims.grid.x = static_cast<uint32_t>((d.batch + 63) / 64);
    return stream.Launch(*kernel_, dims, args);
  }
  if (d.op == SolverOp::kPivotsToPermutation || d.op == SolverOp::kCholeskyUpdate) {
    if (d.op == SolverOp::kCholeskyUpdate) {
      for (int i = 0; i < 2; ++i)
        if (outputs[i].ptr != inputs[i].ptr)
          KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(outputs[i], inputs[i], SolverInputBytes(d, i)));
    }
    if (d.batch == 0) return OkStatus();
    runtime::KernelArgs args;
    if (d.op == SolverOp::kPivotsToPermutation) {
      args.Add(inputs[0]);
      args.Add(outputs[0]);
      args.Add(static_cast<long long>(d.batch));
      args.Add(static_cast<long long>(d.k));
      args.Add(static_cast<long long>(d.m));
    } else {
      args.Add(outputs[0]);
      args.Add(outputs[1]);
      args.Add(static_cast<long long>(d.batch));
      args.Add(static_cast<long long>(d.n));
    }
    runtime::LaunchDims dims;
    dims.block.x = 64;
    dims.grid.x = static_cast<uint32_t>((d.batch + 63) / 64);
    return stream.Launch(*kernel_, dims, args);
  }
  switch (d.type) {
    case PrimitiveType::kF32: return RunTyped<float>(inputs, outputs, workspace, stream);
    case PrimitiveType::kF64: return RunTyped<double>(inputs, outputs, workspace, stream);
    case PrimitiveType::kC64: return RunTyped<cuComplex>(inputs, outputs, workspace, stream);
    case PrimitiveType::kC128: return RunTyped<cuDoubleComplex>(inputs, outputs, workspace, stream);
    default: return Unimplemented(d.ToString());
  }
}

template <class T>
Status SolverPlan::RunTyped(std::span<const runtime::DeviceMemory> in, std::span<const runtime::DeviceMemory> out,
                            runtime::DeviceMemory ws, runtime::Stream& stream) const {
  using R = RealT<T>;
  const SolverDesc& d = desc_;
  KILN_ASSIGN_OR_RETURN(LibraryHandles * handles, LibraryHandles::ForDevice(device_));
  KILN_ASSIGN_OR_RETURN(const CublasApi* blas, handles->cublas_api());
  KILN_ASSIGN_OR_RETURN(cublasHandle_t bh, handles->Cublas(stream));
  const CusolverApi* solver = nullptr;
  cusolverDnHandle_t sh = nullptr;
  if (CallsCusolver(d.op)) {
    KILN_ASSIGN_OR_RETURN(solver, handles->cusolver_api());
    KILN_ASSIGN_OR_RETURN(sh, handles->Cusolver(stream));
  }
  const std::string what = d.ToString();
  auto blas_ok = [&](cublasStatus_t st, const char* call) { return CublasStatus(*blas, st, StrCat(call, " (", what, ")")); };
  // Note [cuBLAS workspace of solver calls]
  // The stream's cuBLAS handle may still carry the workspace a tuned cuBLAS GEMM gave it
  // (CublasGemmPlan: a slice of some executable's workspace, maybe freed since), so every solver
  // call sets its own: a slice of the thunk's workspace. Without any (cublasSetWorkspace(h, 0, 0))
  // cublasZtrsm with the matrix on the right fails with CUBLAS_STATUS_ALLOC_FAILED on the H200;
  // cuBLAS's default pool would allocate on first use, which a CUDA-graph capture cannot.
  KILN_RETURN_IF_ERROR(blas_ok(blas->cublasSetWorkspace(bh, static_cast<char*>(ws.ptr) + cublas_offset_,
                                                        kCublasWorkspaceBytes),
                               "cublasSetWorkspace"));
  auto solver_ok = [&](cusolverStatus_t st, const char* call) { return CusolverStatus(st, StrCat(call, " (", what, ")")); };
  auto at = [](const runtime::DeviceMemory& mem, uint64_t elems, uint64_t width) {
    return static_cast<void*>(static_cast<char*>(mem.ptr) + elems * width);
  };
  const uint64_t e = sizeof(T);
  const int64_t m = d.m, n = d.n, k = std::min(m, n);
  T* A = reinterpret_cast<T*>(static_cast<char*>(ws.ptr) + a_offset_);
  T* U = reinterpret_cast<T*>(static_cast<char*>(ws.ptr) + u_offset_);
  T* V = reinterpret_cast<T*>(static_cast<char*>(ws.ptr) + v_offset_);
  T* work = reinterpret_cast<T*>(static_cast<char*>(ws.ptr) + work_offset_);
  int* scratch_info = reinterpret_cast<int*>(static_cast<char*>(ws.ptr) + info_offset_);
  const T one = One<T>(), zero = Zero<T>();
  // dst (cols x rows, column-major, leading dimension ld_dst) = src^T, src rows x cols
  // column-major with leading dimension ld_src: geam's 1 src^T + 0 src^T (B is src too, so
  // nothing unwritten is read even if beta = 0 did not skip it).
  auto transpose = [&](const void* src, int64_t rows, int64_t cols, int64_t ld_src, void* dst,
                       int64_t ld_dst) -> Status {
    if (rows == 0 || cols == 0) return OkStatus();
    const auto geam = KILN_PICK(*blas, cublasSgeam, cublasDgeam, cublasCgeam, cublasZgeam);
    return blas_ok(geam(bh, CUBLAS_OP_T, CUBLAS_OP_T, static_cast<int>(cols), static_cast<int>(rows), &one,
                        static_cast<const T*>(src), static_cast<int>(ld_src), &zero, static_cast<const T*>(src),
                        static_cast<int>(ld_src), static_cast<T*>(dst), static_cast<int>(ld_dst)),
                   "cublas<t>geam");
  };
  auto copy = [&](void* dst, const void* src, uint64_t bytes) -> Status {
    if (bytes == 0 || dst == src) return OkStatus();
    return stream.MemcpyDeviceToDevice(runtime::DeviceMemory{dst, bytes},
                                       runtime::DeviceMemory{const_cast<void*>(src), bytes}, bytes);
  };
  auto zero_fill = [&](const runtime::DeviceMemory& mem, uint64_t bytes) -> Status {
    if (bytes == 0) return OkStatus();
    return stream.Memset8(runtime::DeviceMemory{mem.ptr, bytes}, 0);
  };
  // Empty matrices: nothing to factor; info, pivots and the like are zeros.
  if (m == 0 || n == 0) {
    for (int64_t i = 0; i < SolverOutputCount(d); ++i) {
      if (i == 0 && SolverInputCount(d) > 0 && d.op != SolverOp::kSyrk && d.op != SolverOp::kTrsm) continue;
      KILN_RETURN_IF_ERROR(zero_fill(out[i], SolverOutputBytes(d, i)));
    }
    if (d.op == SolverOp::kSyrk) return copy(out[0].ptr, in[1].ptr, SolverOutputBytes(d, 0));
    return OkStatus();
  }
  const int im = static_cast<int>(m), in_ = static_cast<int>(n), ik = static_cast<int>(d.k);
  const uint64_t mn = static_cast<uint64_t>(m * n);
  switch (d.op) {
    case SolverOp::kPotrf: {
      KILN_RETURN_IF_ERROR(copy(out[0].ptr, in[0].ptr, d.batch * mn * e));
      const auto potrf = KILN_PICK(*solver, cusolverDnSpotrf, cusolverDnDpotrf, cusolverDnCpotrf, cusolverDnZpotrf);
      for (int64_t b = 0; b < d.batch; ++b) {
        // The row-major lower triangle is the column-major upper one.
        KILN_RETURN_IF_ERROR(solver_ok(potrf(sh, Fill(d.lower), in_, static_cast<T*>(at(out[0], b * mn, e)), in_,
                                             work, lwork_, static_cast<int*>(at(out[1], b, 4))),
                                       "cusolverDn<t>potrf"));
      }
      return OkStatus();
    }
    case SolverOp::kGetrf: {
      const auto getrf = KILN_PICK(*solver, cusolverDnSgetrf, cusolverDnDgetrf, cusolverDnCgetrf, cusolverDnZgetrf);
      for (int64_t b = 0; b < d.batch; ++b) {
        KILN_RETURN_IF_ERROR(transpose(at(in[0], b * mn, e), n, m, n, A, m));
        KILN_RETURN_IF_ERROR(solver_ok(getrf(sh, im, in_, A, im, work, static_cast<int*>(at(out[1], b * k, 4)),
                                             static_cast<int*>(at(out[2], b, 4))),
                                       "cusolverDn<t>getrf"));
        KILN_RETURN_IF_ERROR(transpose(A, m, n, m, at(out[0], b * mn, e), n));
      }
      return OkStatus();
    }
    case SolverOp::kGeqrf: {
      const auto geqrf = KILN_PICK(*solver, cusolverDnSgeqrf, cusolverDnDgeqrf, cusolverDnCgeqrf, cusolverDnZgeqrf);
      for (int64_t b = 0; b < d.batch; ++b) {
        KILN_RETURN_IF_ERROR(transpose(at(in[0], b * mn, e), n, m, n, A, m));
        KILN_RETURN_IF_ERROR(solver_ok(geqrf(sh, im, in_, A, im, static_cast<T*>(at(out[1], b * k, e)), work, lwork_,
                                             scratch_info),
                                       "cusolverDn<t>geqrf"));
        KILN_RETURN_IF_ERROR(transpose(A, m, n, m, at(out[0], b * mn, e), n));
      }
      return OkStatus();
    }
    case SolverOp::kOrgqr: {
      const auto orgqr = KILN_PICK(*solver, cusolverDnSorgqr, cusolverDnDorgqr, cusolverDnCungqr, cusolverDnZungqr);
      for (int64_t b = 0; b < d.batch; ++b) {
        KILN_RETURN_IF_ERROR(transpose(at(in[0], b * mn, e), n, m, n, A, m));
        if (d.k > 0) {
          KILN_RETURN_IF_ERROR(solver_ok(orgqr(sh, im, in_, ik, A, im, static_cast<const T*>(at(in[1], b * d.k, e)),
                                               work, lwork_, scratch_info),
                                         "cusolverDn<t>orgqr"));
        } else {
          // No reflectors: Q is the identity's first n columns.
          KILN_RETURN_IF_ERROR(zero_fill(runtime::DeviceMemory{A, mn * e}, mn * e));
          for (int64_t j = 0; j < n; ++j)
            KILN_RETURN_IF_ERROR(stream.MemcpyHostToDevice(runtime::DeviceMemory{A + j * m + j, e}, &one, e));
        }
        KILN_RETURN_IF_ERROR(transpose(A, m, n, m, at(out[0], b * mn, e), n));
      }
      return OkStatus();
    }
    case SolverOp::kSyevd: {
      const auto syevd = KILN_PICK(*solver, cusolverDnSsyevd, cusolverDnDsyevd, cusolverDnCheevd, cusolverDnZheevd);
      for (int64_t b = 0; b < d.batch; ++b) {
        KILN_RETURN_IF_ERROR(transpose(at(in[0], b * mn, e), n, n, n, A, n));
        KILN_RETURN_IF_ERROR(solver_ok(syevd(sh, CUSOLVER_EIG_MODE_VECTOR, Fill(!d.lower), in_, A, in_,
                                             static_cast<R*>(at(out[1], b * n, sizeof(R))), work, lwork_,
                                             static_cast<int*>(at(out[2], b, 4))),
                                       "cusolverDn<t>syevd"));
        KILN_RETURN_IF_ERROR(transpose(A, n, n, n, at(out[0], b * mn, e), n));
      }
      return OkStatus();
    }
    case SolverOp::kSytrd: {
      const auto sytrd = KILN_PICK(*solver, cusolverDnSsytrd, cusolverDnDsytrd, cusolverDnChetrd, cusolverDnZhetrd);
      const int64_t nm1 = n - 1;
      for (int64_t b = 0; b < d.batch; ++b) {
        KILN_RETURN_IF_ERROR(transpose(at(in[0], b * mn, e), n, n, n, A, n));
        KILN_RETURN_IF_ERROR(solver_ok(sytrd(sh, Fill(!d.lower), in_, A, in_, static_cast<R*>(at(out[1], b * n, sizeof(R))),
                                             static_cast<R*>(at(out[2], b * nm1, sizeof(R))),
                                             static_cast<T*>(at(out[3], b * nm1, e)), work, lwork_,
                                             static_cast<int*>(at(out[4], b, 4))),
                                       "cusolverDn<t>sytrd"));
        KILN_RETURN_IF_ERROR(transpose(A, n, n, n, at(out[0], b * mn, e), n));
      }
      return OkStatus();
    }
    case SolverOp::kGesvd:
    case SolverOp::kGesvdj: {
      KILN_RETURN_IF_ERROR(copy(out[0].ptr, in[0].ptr, d.batch * mn * e));
      if (!d.compute_uv) {
        KILN_RETURN_IF_ERROR(zero_fill(out[2], SolverOutputBytes(d, 2)));
        KILN_RETURN_IF_ERROR(zero_fill(out[3], SolverOutputBytes(d, 3)));
      }
      const uint64_t xe = d.x_rows * d.x_cols, ye = d.y_rows * d.y_cols;
      const signed char job = d.compute_uv ? 'A' : 'N';
      for (int64_t b = 0; b < d.batch; ++b) {
        const void* a_b = at(out[0], b * mn, e);  // the input (copied above, or the same buffer)
        R* s_b = static_cast<R*>(at(out[1], b * k, sizeof(R)));
        int* info_b = static_cast<int*>(at(out[4], b, 4));
        void* x_b = at(out[2], b * xe, e);
        void* y_b = at(out[3], b * ye, e);
        if (d.op == SolverOp::kGesvdj) {
          const auto gesvdj = KILN_PICK(*solver, cusolverDnSgesvdj, cusolverDnDgesvdj, cusolverDnCgesvdj, cusolverDnZgesvdj);
          KILN_RETURN_IF_ERROR(transpose(a_b, n, m, n, A, m));
          KILN_RETURN_IF_ERROR(solver_ok(
              gesvdj(sh, d.compute_uv ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR, /*econ=*/0, im, in_, A,
                     im, s_b, U, im, V, in_, work, lwork_, info_b, static_cast<gesvdjInfo_t>(gesvdj_params_)),
              "cusolverDn<t>gesvdj"));
          if (!d.compute_uv) continue;
          KILN_RETURN_IF_ERROR(transpose(U, m, d.x_cols, m, x_b, d.x_cols));  // x = U[:, :xc]
          KILN_RETURN_IF_ERROR(transpose(V, n, d.y_cols, n, y_b, d.y_cols));  // y = V[:, :yc]
          continue;
        }
        const auto gesvd = KILN_PICK(*solver, cusolverDnSgesvd, cusolverDnDgesvd, cusolverDnCgesvd, cusolverDnZgesvd);
        // `u_cols` columns of U (m x m col-major in the workspace) and `vh_rows` rows of V^H
        // (n x n) into row-major results.
        void* u_out = d.svd_layout == SvdLayout::kUVt ? x_b : y_b;
        void* vh_out = d.svd_layout == SvdLayout::kUVt ? y_b : x_b;
        const int64_t u_cols = d.svd_layout == SvdLayout::kUVt ? d.x_cols : d.y_cols;
        const int64_t vh_rows = d.svd_layout == SvdLayout::kUVt ? d.y_rows : d.x_rows;
        if (m >= n) {
          KILN_RETURN_IF_ERROR(transpose(a_b, n, m, n, A, m));
          KILN_RETURN_IF_ERROR(solver_ok(gesvd(sh, job, job, im, in_, A, im, s_b, U, im, V, in_, work, lwork_,
                                               /*rwork=*/nullptr, info_b),
                                         "cusolverDn<t>gesvd"));
          if (!d.compute_uv) continue;
          KILN_RETURN_IF_ERROR(transpose(U, m, u_cols, m, u_out, u_cols));
          KILN_RETURN_IF_ERROR(transpose(V, vh_rows, n, n, vh_out, n));
        } else {
          // Note [Row-major solver buffers]: the buffer is B = A^T (n x m, n > m), B = U_B S V_B^H;
          // A's U (m x m, row-major) is V_B^H's buffer, A's V^H rows U_B's leading columns.
          KILN_RETURN_IF_ERROR(copy(A, a_b, mn * e));
          KILN_RETURN_IF_ERROR(solver_ok(gesvd(sh, job, job, in_, im, A, in_, s_b, U, in_, V, im, work, lwork_,
                                               /*rwork=*/nullptr, info_b),
                                         "cusolverDn<t>gesvd"));
          if (!d.compute_uv) continue;
          KILN_RETURN_IF_ERROR(copy(u_out, V, static_cast<uint64_t>(m * m) * e));
          KILN_RETURN_IF_ERROR(copy(vh_out, U, static_cast<uint64_t>(n * vh_rows) * e));
        }
      }
      return OkStatus();
    }
    case SolverOp::kTrsm: {
      // Note [Row-major solver buffers]: op(a) x = b row-major is x^T op(a)^T = b^T, i.e.
      // X' op(A') = B' column-major with A' = a's buffer (the other triangle), X' = x's.
      KILN_RETURN_IF_ERROR(copy(out[0].ptr, in[1].ptr, d.batch * mn * e));
      const auto trsm = KILN_PICK(*blas, cublasStrsm, cublasDtrsm, cublasCtrsm, cublasZtrsm);
      const cublasOperation_t op = d.transpose == 1 ? CUBLAS_OP_T : d.transpose == 2 ? CUBLAS_OP_C : CUBLAS_OP_N;
      const uint64_t kk = static_cast<uint64_t>(d.k * d.k);
      for (int64_t b = 0; b < d.batch; ++b) {
        KILN_RETURN_IF_ERROR(blas_ok(
            trsm(bh, d.left_side ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT, Fill(d.lower), op,
                 d.unit_diagonal ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, in_, im, &one,
                 static_cast<const T*>(at(in[0], b * kk, e)), ik,
                 static_cast<T*>(at(out[0], b * mn, e)), in_),
            "cublas<t>trsm"));
      }
      return OkStatus();
    }
    case SolverOp::kSyrk: {
      // The row-major lower triangle is the column-major upper one; a's buffer is a^T (k x n)
      // column-major, or (syrk_transpose) a^T's n x k.
      KILN_RETURN_IF_ERROR(copy(out[0].ptr, in[1].ptr, d.batch * mn * e));
      const auto syrk = KILN_PICK(*blas, cublasSsyrk, cublasDsyrk, cublasCsyrk, cublasZsyrk);
      cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
      KILN_RETURN_IF_ERROR(blas_ok(blas->cublasGetPointerMode(bh, &mode), "cublasGetPointerMode"));
      KILN_RETURN_IF_ERROR(blas_ok(blas->cublasSetPointerMode(bh, CUBLAS_POINTER_MODE_DEVICE), "cublasSetPointerMode"));
      Status status = OkStatus();
      const uint64_t nk = static_cast<uint64_t>(d.n * d.k);
      for (int64_t b = 0; b < d.batch && status.ok(); ++b) {
        status = blas_ok(syrk(bh, CUBLAS_FILL_MODE_UPPER, d.syrk_transpose ? CUBLAS_OP_N : CUBLAS_OP_T, in_, ik,
                              static_cast<const T*>(in[2].ptr), static_cast<const T*>(at(in[0], b * nk, e)),
                              d.syrk_transpose ? in_ : std::max(ik, 1), static_cast<const T*>(in[3].ptr),
                              static_cast<T*>(at(out[0], b * mn, e)), in_),
                         "cublas<t>syrk");
      }
      Status restore = blas_ok(blas->cublasSetPointerMode(bh, mode), "cublasSetPointerMode");
      KILN_RETURN_IF_ERROR(status);
      return restore;
    }
    default:
      return Unimplemented(what);
  }
}

#undef KILN_PICK

}  // namespace kiln::cuda::libs
