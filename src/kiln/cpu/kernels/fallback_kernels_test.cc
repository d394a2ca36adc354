// The native kernels for what used to run on the evaluator's kernel (issue 16, "no silent
// fallback"): reduce-window (pooling with strides, padding, dilations; JAX's cumulative ops;
// variadic), bitcast-convert across widths, cholesky / triangular-solve and the LAPACK and
// cuSOLVER linear-algebra custom calls -- each against the evaluator, and each required to be
// native (CheckOptions::native).
#include <gtest/gtest.h>

#include <random>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cpu {
namespace {

using testing::CheckOptions;

const char* kReducers = R"(
add_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }
max_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] maximum(a, b) }
min_f64 { a = f64[] parameter(0)  b = f64[] parameter(1)  ROOT r = f64[] minimum(a, b) }
mul_s32 { a = s32[] parameter(0)  b = s32[] parameter(1)  ROOT r = s32[] multiply(a, b) }
add_bf16 { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT r = bf16[] add(a, b) }
argmax { a = f32[] parameter(0)  ai = s32[] parameter(1)  b = f32[] parameter(2)  bi = s32[] parameter(3)
         gt = pred[] compare(a, b), direction=GT
         v = f32[] select(gt, a, b)  i = s32[] select(gt, ai, bi)
         ROOT t = (f32[], s32[]) tuple(v, i) }
)";

std::string Module(const std::string& body) { return StrCat("HloModule m\n", kReducers, "\nENTRY e {\n", body, "\n}\n"); }

TEST(ReduceWindowKernelTest, MaxPoolingWithStridesAndPadding) {
  testing::CheckHlo(Module(R"(
  x = f32[2,9,11,3] parameter(0)  init = f32[] constant(-inf)
  ROOT r = f32[2,5,5,3] reduce-window(x, init), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x0_1x0_0}, to_apply=max_f32)"));
}

TEST(ReduceWindowKernelTest, SumPoolingWithDilations) {
  testing::CheckHlo(Module(R"(
  x = f32[13,10] parameter(0)  init = f32[] constant(0)
  ROOT r = f32[12,9] reduce-window(x, init), window={size=3x2 stride=2x1 pad=2_1x0_0 lhs_dilate=2x1 rhs_dilate=2x1}, to_apply=add_f32)"));
}

TEST(ReduceWindowKernelTest, CumulativeOpsAsJaxWritesThem) {
  // cumsum / cummax / cumprod over an axis: a window as long as the axis, padded in front.
  testing::CheckHlo(Module(R"(
  x = f32[4,33] parameter(0)  init = f32[] constant(0)
  ROOT r = f32[4,33] reduce-window(x, init), window={size=1x33 pad=0_0x32_0}, to_apply=add_f32)"));
  testing::CheckHlo(Module(R"(
  x = f64[17,3] parameter(0)  init = f64[] constant(inf)
  ROOT r = f64[17,3] reduce-window(x, init), window={size=17x1 pad=16_0x0_0}, to_apply=min_f64)"));
  testing::CheckHlo(Module(R"(
  x = s32[20] parameter(0)  init = s32[] constant(1)
  ROOT r = s32[20] reduce-window(x, init), window={size=20 pad=19_0}, to_apply=mul_s32)"));
  // Reverse cumsum (padding behind) in bf16: the general path, rounding every step.
  testing::CheckHlo(Module(R"(
  x = bf16[40] parameter(0)  init = bf16[] constant(0)
  ROOT r = bf16[40] reduce-window(x, init), window={size=40 pad=0_39}, to_apply=add_bf16)"));
}

TEST(ReduceWindowKernelTest, VariadicArgmaxPooling) {
  testing::CheckHlo(Module(R"(
  x = f32[6,8] parameter(0)  i = s32[6,8] parameter(1)
  vi = f32[] constant(-inf)  ii = s32[] constant(-1)
  ROOT r = (f32[3,4], s32[3,4]) reduce-window(x, i, vi, ii), window={size=2x2 stride=2x2}, to_apply=argmax)"));
}

TEST(ReduceWindowKernelTest, EmptyWindowsKeepTheInitValue) {
  testing::CheckHlo(Module(R"(
  x = f32[3] parameter(0)  init = f32[] constant(7)
  ROOT r = f32[6] reduce-window(x, init), window={size=1 pad=2_1}, to_apply=add_f32)"));
}

TEST(SelectAndScatterKernelTest, MaxPoolGradientOverlappingAndPadded) {
  const char* comps = R"(
ge_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = pred[] compare(a, b), direction=GE }
le_f32 { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = pred[] compare(a, b), direction=LE }
)";
  testing::CheckHlo(StrCat("HloModule m\n", kReducers, comps, R"(
ENTRY e {
  x = f32[2,8,9] parameter(0)  s = f32[2,4,4] parameter(1)  init = f32[] constant(0)
  ROOT r = f32[2,8,9] select-and-scatter(x, s, init), window={size=1x3x3 stride=1x2x2 pad=0_0x1_0x0_0}, select=ge_f32, scatter=add_f32
})"));
  testing::CheckHlo(StrCat("HloModule m\n", kReducers, comps, R"(
ENTRY e {
  x = f32[10] parameter(0)  s = f32[8] parameter(1)  init = f32[] constant(1)
  ROOT r = f32[10] select-and-scatter(x, s, init), window={size=3}, select=le_f32, scatter=add_f32
})"));
}

TEST(BitcastConvertKernelTest, AcrossWidths) {
  for (const char* body : {
           "x = f32[5,3] parameter(0)\n  ROOT r = u8[5,3,4] bitcast-convert(x)",
           "x = u8[7,4] parameter(0)\n  ROOT r = f32[7] bitcast-convert(x)",
           "x = f64[6] parameter(0)\n  ROOT r = u32[6,2] bitcast-convert(x)",
           "x = u32[3,2] parameter(0)\n  ROOT r = f64[3] bitcast-convert(x)",
           "x = s16[4,4] parameter(0)\n  ROOT r = pred[4,4,2] bitcast-convert(x)",
           "x = s8[9] parameter(0)\n  ROOT r = s4[9,2] bitcast-convert(x)",
           "x = u4[9,2] parameter(0)\n  ROOT r = u8[9] bitcast-convert(x)",
           "x = s4[3,8] parameter(0)\n  ROOT r = f32[3] bitcast-convert(x)",
           "x = f32[3] parameter(0)\n  ROOT r = s4[3,8] bitcast-convert(x)",
       }) {
    SCOPED_TRACE(body);
    std::unique_ptr<HloModule> m = testing::Parse(StrCat("HloModule m\nENTRY e {\n  ", body, "\n}\n"));
    ASSERT_NE(m, nullptr);
    const std::string name = testing::ExpectMatchesEvaluator(*testing::Find(*m));
    EXPECT_EQ(name.rfind("bitcast_convert[", 0), 0u) << name;
  }
}

// Batched Hermitian positive definite matrices (A A^H + n I) of `type`; batch 0: one matrix
// without a batch dimension.
Literal Spd(PrimitiveType type, int64_t batch, int64_t n, uint64_t seed) {
  const std::vector<int64_t> dims = batch == 0 ? std::vector<int64_t>{n, n} : std::vector<int64_t>{batch, n, n};
  batch = std::max<int64_t>(batch, 1);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const bool complex = type == PrimitiveType::kC64 || type == PrimitiveType::kC128;
  Literal l(Shape::ArrayWithDefaultLayout(type, dims));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<std::complex<double>> a(n * n);
    for (auto& z : a) z = {u(rng), complex ? u(rng) : 0.0};
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        std::complex<double> s = i == j ? double(n) : 0.0;
        for (int64_t k = 0; k < n; ++k) s += a[i * n + k] * std::conj(a[j * n + k]);
        const int64_t at = b * n * n + i * n + j;
        switch (type) {
          case PrimitiveType::kF32: l.data<float>()[at] = float(s.real()); break;
          case PrimitiveType::kF64: l.data<double>()[at] = s.real(); break;
          case PrimitiveType::kC64: l.data<std::complex<float>>()[at] = std::complex<float>(s); break;
          default: l.data<std::complex<double>>()[at] = s; break;
        }
      }
  }
  return l;
}

void CheckLinalg(const std::string& body, std::vector<Literal> operands = {}) {
  SCOPED_TRACE(body);
  std::unique_ptr<HloModule> m = testing::Parse(StrCat("HloModule m\nENTRY e {\n  ", body, "\n}\n"));
  ASSERT_NE(m, nullptr);
  const std::string name = testing::ExpectMatchesEvaluator(*testing::Find(*m), CheckOptions{}, std::move(operands));
  EXPECT_EQ(name.rfind("linalg[", 0), 0u) << name;
}

TEST(LinalgKernelTest, CholeskyAndPotrf) {
  CheckLinalg("a = f32[3,40,40] parameter(0)\n  ROOT r = f32[3,40,40] cholesky(a), lower=true",
              [] { std::vector<Literal> v; v.push_back(Spd(PrimitiveType::kF32, 3, 40, 1)); return v; }());
  CheckLinalg("a = c64[2,6,6] parameter(0)\n  ROOT r = c64[2,6,6] cholesky(a), lower=false",
              [] { std::vector<Literal> v; v.push_back(Spd(PrimitiveType::kC64, 2, 6, 2)); return v; }());
  for (const char* uplo : {"76", "85"}) {
    CheckLinalg(StrCat("a = f64[2,7,7] parameter(0)\n  ROOT r = (f64[2,7,7], s32[2]) custom-call(a), "
                       "custom_call_target=\"lapack_dpotrf_ffi\", api_version=API_VERSION_TYPED_FFI, "
                       "backend_config={uplo = ", uplo, " : ui8}"),
                [] { std::vector<Literal> v; v.push_back(Spd(PrimitiveType::kF64, 2, 7, 3)); return v; }());
  }
  CheckLinalg("a = c64[5,5] parameter(0)\n  ROOT r = (c64[5,5], s32[]) custom-call(a), "
              "custom_call_target=\"cusolver_potrf_ffi\", api_version=API_VERSION_TYPED_FFI, "
              "backend_config={lower = false}",
              [] { std::vector<Literal> v; v.push_back(Spd(PrimitiveType::kC64, 0, 5, 4)); return v; }());
}

TEST(LinalgKernelTest, NotPositiveDefiniteReportsTheMinor) {
  Literal a(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {3, 3}));
  const float v[9] = {4, 2, 0, 2, 1, 0, 0, 0, 1};  // the 2x2 leading minor is singular
  std::copy(v, v + 9, a.data<float>().begin());
  std::unique_ptr<HloModule> m = testing::Parse(
      "HloModule m\nENTRY e {\n  a = f32[3,3] parameter(0)\n  ROOT r = (f32[3,3], s32[]) custom-call(a), "
      "custom_call_target=\"lapack_spotrf_ffi\", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}\n}\n");
  ASSERT_NE(m, nullptr);
  const HloInstruction* instr = testing::Find(*m);
  auto k = CreateCpuKernel(*instr);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_FALSE((*k)->runs_evaluator());
  std::vector<Literal> ops;
  ops.push_back(std::move(a));
  auto r = testing::RunKernel(**k, *instr, ops, testing::TestPool());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tuple_element(1).data<int32_t>()[0], 2);
}

TEST(LinalgKernelTest, TriangularSolves) {
  for (const char* opts : {"left_side=true, lower=true, transpose_a=NO_TRANSPOSE",
                           "left_side=true, lower=false, transpose_a=TRANSPOSE, unit_diagonal=true",
                           "left_side=false, lower=true, transpose_a=NO_TRANSPOSE",
                           "left_side=false, lower=false, transpose_a=ADJOINT"}) {
    // Diagonally dominant triangles: Spd matrices have a large diagonal.
    std::vector<Literal> ops;
    ops.push_back(Spd(PrimitiveType::kF32, 2, 6, 5));
    const bool left = std::string_view(opts).find("left_side=true") != std::string_view::npos;
    Literal b(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, left ? std::vector<int64_t>{2, 6, 4}
                                                                          : std::vector<int64_t>{2, 4, 6}));
    for (int64_t i = 0; i < b.element_count(); ++i) b.data<float>()[i] = float((i * 7) % 11) - 5;
    ops.push_back(std::move(b));
    CheckLinalg(StrCat("a = f32[2,6,6] parameter(0)\n  b = f32[2,", left ? "6,4" : "4,6", "] parameter(1)\n  ROOT r = f32[2,",
                       left ? "6,4" : "4,6", "] triangular-solve(a, b), ", opts),
                std::move(ops));
  }
}

TEST(LinalgKernelTest, LuQrEighSvd) {
  // LU: square, tall, wide; real (Eigen's blocked LU) and complex (|re| + |im| pivots).
  CheckLinalg("a = f32[3,40,40] parameter(0)\n  ROOT r = (f32[3,40,40], s32[3,40], s32[3]) custom-call(a), "
              "custom_call_target=\"lapack_sgetrf_ffi\", api_version=API_VERSION_TYPED_FFI");
  CheckLinalg("a = f64[9,5] parameter(0)\n  ROOT r = (f64[9,5], s32[5], s32[]) custom-call(a), "
              "custom_call_target=\"cusolver_getrf_ffi\", api_version=API_VERSION_TYPED_FFI");
  CheckLinalg("a = c64[4,7] parameter(0)\n  ROOT r = (c64[4,7], s32[4], s32[]) custom-call(a), "
              "custom_call_target=\"lapack_cgetrf_ffi\", api_version=API_VERSION_TYPED_FFI");
  CheckLinalg("p = s32[2,4] parameter(0)\n  ROOT r = s32[2,6] custom-call(p), "
              "custom_call_target=\"cu_lu_pivots_to_permutation\", api_version=API_VERSION_TYPED_FFI");
  // QR: geqrf and orgqr (tau as LAPACK's: the conjugates of Eigen's coefficients).
  CheckLinalg("a = c64[2,7,4] parameter(0)\n  ROOT r = (c64[2,7,4], c64[2,4]) custom-call(a), "
              "custom_call_target=\"lapack_cgeqrf_ffi\", api_version=API_VERSION_TYPED_FFI");
  CheckLinalg("a = f32[5,8] parameter(0)\n  ROOT r = (f32[5,8], f32[5]) custom-call(a), "
              "custom_call_target=\"lapack_sgeqrf_ffi\", api_version=API_VERSION_TYPED_FFI");
  CheckLinalg("a = c128[6,4] parameter(0)\n  t = c128[3] parameter(1)\n  ROOT r = c128[6,4] custom-call(a, t), "
              "custom_call_target=\"lapack_zungqr_ffi\", api_version=API_VERSION_TYPED_FFI");
  // Hermitian eigen: eigenvalues ascending, vectors with the evaluator's phase convention.
  CheckLinalg("a = f32[2,6,6] parameter(0)\n  ROOT r = (f32[2,6,6], f32[2,6], s32[2]) custom-call(a), "
              "custom_call_target=\"lapack_ssyevd_ffi\", api_version=API_VERSION_TYPED_FFI, "
              "backend_config={mode = 86 : ui8, uplo = 76 : ui8}");
  CheckLinalg("a = c64[5,5] parameter(0)\n  ROOT r = (c64[5,5], f32[5], s32[]) custom-call(a), "
              "custom_call_target=\"cusolver_syevd_ffi\", api_version=API_VERSION_TYPED_FFI, "
              "backend_config={algorithm = 0 : ui8, lower = false}");
  // cuSPARSE's tridiagonal solve (diagonally dominant: d in [4, 5)).
  {
    std::vector<Literal> ops;
    for (int i = 0; i < 3; ++i) {
      Literal l(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, {2, 7}));
      for (int64_t j = 0; j < 14; ++j) l.data<double>()[j] = i == 1 ? 4.0 + 0.1 * (j % 10) : 0.3 * ((j * 5) % 7) - 1;
      ops.push_back(std::move(l));
    }
    Literal b(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, {2, 7, 3}));
    for (int64_t j = 0; j < 42; ++j) b.data<double>()[j] = (j % 9) - 4.0;
    ops.push_back(std::move(b));
    CheckLinalg("dl = f64[2,7] parameter(0)\n  d = f64[2,7] parameter(1)\n  du = f64[2,7] parameter(2)\n"
                "  b = f64[2,7,3] parameter(3)\n  ROOT x = f64[2,7,3] custom-call(dl, d, du, b), "
                "custom_call_target=\"cusparse_gtsv2_ffi\", api_version=API_VERSION_TYPED_FFI",
                std::move(ops));
  }
  // SVD: full and thin, the three result layouts.
  CheckLinalg("a = f32[7,5] parameter(0)\n  ROOT r = (f32[7,5], f32[5], f32[7,5], f32[5,5], s32[]) custom-call(a), "
              "custom_call_target=\"lapack_sgesdd_ffi\", api_version=API_VERSION_TYPED_FFI, "
              "backend_config={mode = 83 : ui8}");
  CheckLinalg("a = f64[2,4,6] parameter(0)\n  ROOT r = (f64[2,4,6], f64[2,4], f64[2,4,4], f64[2,6,4], s32[2]) custom-call(a), "
              "custom_call_target=\"cusolver_gesvdj_ffi\", api_version=API_VERSION_TYPED_FFI, "
              "backend_config={compute_uv = true, full_matrices = false}");
  CheckLinalg("a = c64[6,3] parameter(0)\n  ROOT r = (c64[6,3], f32[3], c64[6,3], c64[3,3], s32[]) custom-call(a), "
              "custom_call_target=\"lapack_cgesdd_ffi\", api_version=API_VERSION_TYPED_FFI, "
              "backend_config={mode = 83 : ui8}");
}

}  // namespace
}  // namespace kiln::cpu
