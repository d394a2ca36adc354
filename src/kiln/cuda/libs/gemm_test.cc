// GEMMs on the GPU (label gpu): cuBLASLt and cuBLAS plans against a host reference computed in
// double from the very (rounded) inputs, for every type, transpose, batch and epilogue the
// descriptor offers. Outputs start as NaN (poisoned), inputs are fresh random values, and NaN
// never passes. Skipped without a GPU.
#include <cmath>
#include <numbers>
#include <iostream>

#include "kiln/cuda/libs/cublas_gemm.h"
#include "kiln/cuda/libs/gemm.h"
#include "kiln/cuda/libs/gpu_test_util.h"

namespace kiln::cuda::libs {
namespace {

using testing::Matches;
using testing::RandomLiteral;

struct GemmCase {
  std::string name;
  PrimitiveType in = PrimitiveType::kBF16, out = PrimitiveType::kBF16;
  Precision precision = Precision::kDefault;
  bool lhs_t = false, rhs_t = false;
  int64_t batch = 1, m = 96, n = 80, k = 72;
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  double alpha = 1, beta = 0;
  bool c_separate = false;  // beta*c from its own buffer rather than in place in out
  bool f8_scales = false;
  bool f8_out_scale = false;  // f8 out: d_scale and d_amax as well
  bool c_scratch = false;     // f8 out: a separate bf16 C buffer (never read; beta = 0)
  bool rhs_broadcast = false;
};

std::ostream& operator<<(std::ostream& os, const GemmCase& c) { return os << c.name; }

double Gelu(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

Tolerance ToleranceForCase(const GemmCase& c) {
  if (c.in == PrimitiveType::kF8E4M3FN && c.out == PrimitiveType::kF32) {
    // Hopper's f8 tensor cores accumulate at reduced precision between promotions to f32; with
    // fast accumulation (XLA's default, all but HIGHEST) the error is ~4e-4 relative at k=64.
    return c.precision == Precision::kHighest ? Tolerance{1e-4, 1e-5, 1e-4}
                                              : Tolerance{2e-3, 1e-3, 2e-3};
  }
  if (c.out == PrimitiveType::kF32 && c.in == PrimitiveType::kF32) {
    return c.precision == Precision::kHighest ? Tolerance{1e-5, 1e-5, 1e-5} : kTf32Tolerance;
  }
  if (c.out == PrimitiveType::kC64) {
    return c.precision == Precision::kHighest ? Tolerance{1e-5, 1e-5, 1e-5} : kTf32Tolerance;
  }
  if (c.out == PrimitiveType::kF32) return {1e-5, 1e-5, 1e-5};  // bf16/f16/f8 inputs, exact products
  return DefaultTolerance(c.out);
}

class GemmTest : public testing::GpuTest {
 protected:
  GemmDesc DescFor(const GemmCase& c) {
    GemmDesc d;
    d.batch = c.batch;
    d.m = c.m;
    d.n = c.n;
    d.k = c.k;
    d.lhs.dtype = d.rhs.dtype = c.in;
    if (c.in == PrimitiveType::kF8E4M3FN) d.rhs.dtype = PrimitiveType::kF8E5M2;
    d.out.dtype = c.out;
    d.lhs.transposed = c.lhs_t;
    d.rhs.transposed = c.rhs_t;
    if (c.rhs_broadcast) d.rhs.batch_stride = 0;
    d.precision = c.precision;
    d.alpha = c.alpha;
    d.beta = c.beta;
    d.epilogue = c.epilogue;
    d.has_a_scale = d.has_b_scale = c.f8_scales;
    d.has_d_scale = d.has_d_amax = c.f8_out_scale;
    return d;
  }

  // Runs `c` with the first algorithm of each backend that takes it and checks the result.
  void RunCase(const GemmCase& c, bool cublas) {
    const GemmDesc desc = DescFor(c);
    SCOPED_TRACE(desc.ToString());
    const uint64_t seed = std::hash<std::string>()(c.name);
    const int64_t rhs_batch = c.rhs_broadcast ? 1 : c.batch;
    Literal lhs = RandomLiteral(desc.lhs.dtype,
                                {c.batch, c.lhs_t ? c.k : c.m, c.lhs_t ? c.m : c.k}, seed,
                                c.in == PrimitiveType::kS8 ? -4 : -1, c.in == PrimitiveType::kS8 ? 4 : 1);
    Literal rhs = RandomLiteral(desc.rhs.dtype,
                                {rhs_batch, c.rhs_t ? c.n : c.k, c.rhs_t ? c.k : c.n}, seed + 1,
                                c.in == PrimitiveType::kS8 ? -4 : -1, c.in == PrimitiveType::kS8 ? 4 : 1);
    const Shape out_shape = Shape::ArrayWithDefaultLayout(c.out, {c.batch, c.m, c.n});
    Literal c_in = RandomLiteral(c.out, {c.batch, c.m, c.n}, seed + 2,
                                 c.out == PrimitiveType::kS32 ? -8 : -1, c.out == PrimitiveType::kS32 ? 8 : 1);
    const PrimitiveType bias_type = c.out;
    Literal bias = RandomLiteral(bias_type, {c.n}, seed + 3);
    const float a_scale = 0.5f, b_scale = 4.0f, d_scale = 2.0f;
    double amax = 0;  // max |result before d_scale|

    // Host reference in double.
    const bool complex = IsComplexType(c.out);
    Literal expected(Shape::ArrayWithDefaultLayout(complex ? PrimitiveType::kC128 : PrimitiveType::kF64,
                                                   {c.batch, c.m, c.n}));
    for (int64_t p = 0; p < c.batch; ++p) {
      const int64_t rp = c.rhs_broadcast ? 0 : p;
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          std::complex<double> sum = 0;
          for (int64_t l = 0; l < c.k; ++l) {
            const int64_t li = c.lhs_t ? (p * c.k + l) * c.m + i : (p * c.m + i) * c.k + l;
            const int64_t ri = c.rhs_t ? (rp * c.n + j) * c.k + l : (rp * c.k + l) * c.n + j;
            sum += lhs.GetAsComplex(li) * rhs.GetAsComplex(ri);
          }
          const int64_t oi = (p * c.m + i) * c.n + j;
          std::complex<double> v = sum * std::complex<double>(c.alpha, 0);
          if (c.f8_scales) v *= static_cast<double>(a_scale) * b_scale;
          if (c.beta != 0) v += c.beta * c_in.GetAsComplex(oi);
          amax = std::max(amax, std::abs(v));
          if (c.f8_out_scale) v *= static_cast<double>(d_scale);
          if (GemmEpilogueHasBias(c.epilogue)) v += bias.GetAsDouble(j);
          if (c.epilogue == GemmEpilogue::kRelu || c.epilogue == GemmEpilogue::kBiasRelu)
            v = std::max(v.real(), 0.0);
          if (c.epilogue == GemmEpilogue::kGelu || c.epilogue == GemmEpilogue::kBiasGelu)
            v = Gelu(v.real());
          if (complex) expected.SetFromComplex(oi, v);
          else expected.SetFromDouble(oi, v.real());
        }
      }
    }

    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory d_lhs, Upload(lhs));
    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory d_rhs, Upload(rhs));
    GemmBuffers buffers;
    buffers.lhs = d_lhs;
    buffers.rhs = d_rhs;
    if (c.beta != 0) {
      KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory d_c, Upload(c_in));
      if (c.c_separate) {
        KILN_ASSERT_OK_AND_ASSIGN(buffers.out, Alloc(c_in.size_bytes()));
        buffers.c = d_c;
      } else {
        buffers.out = d_c;  // in place: out starts as c
      }
    } else {
      KILN_ASSERT_OK_AND_ASSIGN(buffers.out, Alloc(Literal(out_shape).size_bytes()));
    }
    if (GemmEpilogueHasBias(c.epilogue)) {
      KILN_ASSERT_OK_AND_ASSIGN(buffers.bias, Upload(bias));
    }
    if (c.f8_scales) {
      Literal as = Literal::CreateR0<float>(PrimitiveType::kF32, a_scale);
      Literal bs = Literal::CreateR0<float>(PrimitiveType::kF32, b_scale);
      KILN_ASSERT_OK_AND_ASSIGN(buffers.a_scale, Upload(as));
      KILN_ASSERT_OK_AND_ASSIGN(buffers.b_scale, Upload(bs));
    }
    if (c.f8_out_scale) {
      Literal ds = Literal::CreateR0<float>(PrimitiveType::kF32, d_scale);
      KILN_ASSERT_OK_AND_ASSIGN(buffers.d_scale, Upload(ds));
      KILN_ASSERT_OK_AND_ASSIGN(buffers.d_amax, Alloc(sizeof(float)));
    }
    if (c.c_scratch) {
      KILN_ASSERT_OK_AND_ASSIGN(buffers.c, Alloc(c.batch * c.m * c.n * 2));
    }

    std::vector<GemmAlgorithm> algorithms;
    std::unique_ptr<GemmPlan> lt;
    std::unique_ptr<CublasGemmPlan> blas;
    if (cublas) {
      KILN_ASSERT_OK_AND_ASSIGN(blas, CublasGemmPlan::Create(desc, *device_));
      KILN_ASSERT_OK_AND_ASSIGN(algorithms, blas->ListAlgorithms());
    } else {
      KILN_ASSERT_OK_AND_ASSIGN(lt, GemmPlan::Create(desc, *device_));
      KILN_ASSERT_OK_AND_ASSIGN(algorithms, lt->ListAlgorithms());
    }
    ASSERT_FALSE(algorithms.empty());
    const GemmAlgorithm& algo = algorithms[0];
    KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory workspace, Alloc(algo.workspace_bytes));
    if (cublas) {
      KILN_ASSERT_OK(blas->Run(algo, buffers, workspace, *stream_));
    } else {
      KILN_ASSERT_OK(lt->Run(algo, buffers, workspace, *stream_));
    }
    KILN_ASSERT_OK_AND_ASSIGN(Literal actual, Download(buffers.out, out_shape));
    EXPECT_TRUE(Matches(actual, expected, ToleranceForCase(c))) << algo.description;
    if (c.f8_out_scale) {
      KILN_ASSERT_OK_AND_ASSIGN(Literal got_amax,
                                Download(buffers.d_amax, Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {})));
      EXPECT_NEAR(got_amax.GetAsDouble(0), amax, 1e-3 * amax) << "d_amax";
    }
  }
};

std::vector<GemmCase> LtCases() {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) { cases.push_back(std::move(c)); };
  for (bool lt : {false, true}) {
    for (bool rt : {false, true}) {
      const std::string t = std::string(lt ? "T" : "N") + (rt ? "T" : "N");
      add({.name = "bf16_" + t, .lhs_t = lt, .rhs_t = rt});
      add({.name = "f32_tf32_" + t, .in = PrimitiveType::kF32, .out = PrimitiveType::kF32,
           .lhs_t = lt, .rhs_t = rt});
      add({.name = "f16_" + t, .in = PrimitiveType::kF16, .out = PrimitiveType::kF16,
           .lhs_t = lt, .rhs_t = rt});
    }
  }
  add({.name = "f32_highest", .in = PrimitiveType::kF32, .out = PrimitiveType::kF32,
       .precision = Precision::kHighest});
  add({.name = "bf16_to_f32", .out = PrimitiveType::kF32});
  add({.name = "f16_to_f32", .in = PrimitiveType::kF16, .out = PrimitiveType::kF32});
  add({.name = "f64", .in = PrimitiveType::kF64, .out = PrimitiveType::kF64, .lhs_t = true});
  add({.name = "c64", .in = PrimitiveType::kC64, .out = PrimitiveType::kC64, .rhs_t = true,
       .alpha = 0.5});
  add({.name = "c64_highest", .in = PrimitiveType::kC64, .out = PrimitiveType::kC64,
       .precision = Precision::kHighest});
  add({.name = "s8_tn", .in = PrimitiveType::kS8, .out = PrimitiveType::kS32, .rhs_t = true,
       .m = 64, .n = 64, .k = 64});
  add({.name = "f8_e4m3_e5m2_to_bf16_scaled", .in = PrimitiveType::kF8E4M3FN,
       .out = PrimitiveType::kBF16, .rhs_t = true, .m = 64, .n = 48, .k = 64,
       .f8_scales = true});
  add({.name = "f8_to_f32", .in = PrimitiveType::kF8E4M3FN, .out = PrimitiveType::kF32,
       .rhs_t = true, .m = 64, .n = 48, .k = 64});
  add({.name = "f8_to_f32_highest", .in = PrimitiveType::kF8E4M3FN, .out = PrimitiveType::kF32,
       .precision = Precision::kHighest, .rhs_t = true, .m = 64, .n = 48, .k = 64});
  add({.name = "f8_to_f8_scaled_amax", .in = PrimitiveType::kF8E4M3FN,
       .out = PrimitiveType::kF8E4M3FN, .rhs_t = true, .m = 64, .n = 48, .k = 64,
       .f8_scales = true, .f8_out_scale = true});
  add({.name = "f8_to_f8_scaled_amax_c_scratch", .in = PrimitiveType::kF8E4M3FN,
       .out = PrimitiveType::kF8E4M3FN, .rhs_t = true, .m = 64, .n = 48, .k = 64,
       .f8_scales = true, .f8_out_scale = true, .c_scratch = true});
  add({.name = "bf16_batched", .batch = 3});
  add({.name = "bf16_batched_broadcast_rhs", .rhs_t = true, .batch = 3, .rhs_broadcast = true});
  add({.name = "f32_batched_TN", .in = PrimitiveType::kF32, .out = PrimitiveType::kF32,
       .lhs_t = true, .batch = 4});
  add({.name = "bf16_alpha_beta_inplace", .alpha = 0.5, .beta = 1});
  add({.name = "bf16_beta_separate_c", .beta = -2, .c_separate = true});
  add({.name = "f32_beta_inplace", .in = PrimitiveType::kF32, .out = PrimitiveType::kF32,
       .beta = 1});
  for (GemmEpilogue e : {GemmEpilogue::kBias, GemmEpilogue::kRelu, GemmEpilogue::kGelu,
                         GemmEpilogue::kBiasRelu, GemmEpilogue::kBiasGelu}) {
    const std::string en(GemmEpilogueName(e));
    add({.name = "bf16_" + en, .epilogue = e});
    add({.name = "f32_" + en, .in = PrimitiveType::kF32, .out = PrimitiveType::kF32,
         .epilogue = e});
    add({.name = "f16_" + en + "_batched", .in = PrimitiveType::kF16, .out = PrimitiveType::kF16,
         .rhs_t = true, .batch = 2, .epilogue = e});
  }
  add({.name = "bf16_bias_gelu_residual", .epilogue = GemmEpilogue::kBiasGelu, .beta = 1});
  return cases;
}

class CublasLtGemmTest : public GemmTest, public ::testing::WithParamInterface<GemmCase> {};
TEST_P(CublasLtGemmTest, MatchesHostReference) { RunCase(GetParam(), /*cublas=*/false); }
INSTANTIATE_TEST_SUITE_P(Cases, CublasLtGemmTest, ::testing::ValuesIn(LtCases()),
                         [](const auto& info) { return info.param.name; });

std::vector<GemmCase> CublasCases() {
  std::vector<GemmCase> cases;
  for (const GemmCase& c : LtCases()) {
    if (c.epilogue != GemmEpilogue::kNone || c.in == PrimitiveType::kF8E4M3FN) continue;
    cases.push_back(c);
  }
  return cases;
}

class CublasGemmTest : public GemmTest, public ::testing::WithParamInterface<GemmCase> {};
TEST_P(CublasGemmTest, MatchesHostReference) { RunCase(GetParam(), /*cublas=*/true); }
INSTANTIATE_TEST_SUITE_P(Cases, CublasGemmTest, ::testing::ValuesIn(CublasCases()),
                         [](const auto& info) { return info.param.name; });

TEST_F(GemmTest, ListsSeveralAlgorithmsForALargeBf16Gemm) {
  GemmDesc d;
  d.m = d.n = d.k = 4096;
  d.lhs.dtype = d.rhs.dtype = d.out.dtype = PrimitiveType::kBF16;
  KILN_ASSERT_OK_AND_ASSIGN(auto plan, GemmPlan::Create(d, *device_));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<GemmAlgorithm> algos, plan->ListAlgorithms());
  std::cout << algos.size() << " cuBLASLt algorithms for " << d.ToString() << ":\n";
  for (const GemmAlgorithm& a : algos) {
    std::cout << "  " << a.description << "\n";
    EXPECT_LE(a.workspace_bytes, d.max_workspace_bytes);
  }
  EXPECT_GT(algos.size(), 1u);
  KILN_ASSERT_OK_AND_ASSIGN(GemmAlgorithm default_algo, plan->DefaultAlgorithm());
  EXPECT_EQ(default_algo.opaque, algos[0].opaque) << default_algo.description;
  KILN_ASSERT_OK_AND_ASSIGN(auto blas, CublasGemmPlan::Create(d, *device_));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<GemmAlgorithm> blas_algos, blas->ListAlgorithms());
  EXPECT_GT(blas_algos.size(), 1u);
  KILN_ASSERT_OK_AND_ASSIGN(GemmAlgorithm blas_default, blas->DefaultAlgorithm());
  EXPECT_EQ(blas_default.cublas_algo, blas_algos[0].cublas_algo);
}

// Every algorithm the autotuner would try gives the right answer (or fails cleanly).
TEST_F(GemmTest, EveryListedAlgorithmIsCorrect) {
  const int64_t m = 256, n = 192, k = 320;
  GemmDesc d;
  d.m = m;
  d.n = n;
  d.k = k;
  d.lhs.dtype = d.rhs.dtype = d.out.dtype = PrimitiveType::kBF16;
  d.rhs.transposed = true;
  Literal lhs = RandomLiteral(PrimitiveType::kBF16, {m, k}, 11);
  Literal rhs = RandomLiteral(PrimitiveType::kBF16, {n, k}, 12);
  Literal expected(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, {m, n}));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) s += lhs.GetAsDouble(i * k + l) * rhs.GetAsDouble(j * k + l);
      expected.SetFromDouble(i * n + j, s);
    }
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory d_lhs, Upload(lhs));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory d_rhs, Upload(rhs));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory out, Alloc(m * n * 2));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory workspace, Alloc(d.max_workspace_bytes));
  GemmBuffers buffers;
  buffers.lhs = d_lhs;
  buffers.rhs = d_rhs;
  buffers.out = out;
  const Shape out_shape = Shape::ArrayWithDefaultLayout(PrimitiveType::kBF16, {m, n});

  KILN_ASSERT_OK_AND_ASSIGN(auto lt, GemmPlan::Create(d, *device_));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<GemmAlgorithm> algos, lt->ListAlgorithms());
  int ran = 0;
  for (const GemmAlgorithm& a : algos) {
    KILN_ASSERT_OK(stream_->Memset8(out, 0xFF));
    Status s = lt->Run(a, buffers, workspace, *stream_);
    if (!s.ok()) {
      std::cout << "  " << a.description << ": " << s.ToString() << "\n";
      continue;
    }
    ++ran;
    KILN_ASSERT_OK_AND_ASSIGN(Literal actual, Download(out, out_shape));
    EXPECT_TRUE(Matches(actual, expected, DefaultTolerance(PrimitiveType::kBF16)))
        << a.description;
  }
  EXPECT_EQ(ran, static_cast<int>(algos.size())) << "cuBLASLt listed algorithms that do not run";

  KILN_ASSERT_OK_AND_ASSIGN(auto blas, CublasGemmPlan::Create(d, *device_));
  KILN_ASSERT_OK_AND_ASSIGN(algos, blas->ListAlgorithms());
  ran = 0;
  for (const GemmAlgorithm& a : algos) {
    KILN_ASSERT_OK(stream_->Memset8(out, 0xFF));
    Status s = blas->Run(a, buffers, workspace, *stream_);
    if (!s.ok()) {
      std::cout << "  " << a.description << ": " << s.ToString() << "\n";
      continue;
    }
    Status sync = stream_->Synchronize();
    ASSERT_TRUE(sync.ok()) << a.description << ": " << sync.ToString();
    ++ran;
    KILN_ASSERT_OK_AND_ASSIGN(Literal actual, Download(out, out_shape));
    EXPECT_TRUE(Matches(actual, expected, DefaultTolerance(PrimitiveType::kBF16)))
        << a.description;
  }
  std::cout << ran << " of " << algos.size() << " cuBLAS algorithm ids ran\n";
  EXPECT_GE(ran, 1);
}

TEST_F(GemmTest, RunChecksBuffers) {
  GemmDesc d;
  d.m = d.n = d.k = 64;
  d.lhs.dtype = d.rhs.dtype = d.out.dtype = PrimitiveType::kF32;
  KILN_ASSERT_OK_AND_ASSIGN(auto plan, GemmPlan::Create(d, *device_));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<GemmAlgorithm> algos, plan->ListAlgorithms(4));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory small, Alloc(64 * 64 * 4 - 4));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory ok, Alloc(64 * 64 * 4));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::DeviceMemory ws, Alloc(algos[0].workspace_bytes));
  GemmBuffers buffers;
  buffers.lhs = ok;
  buffers.rhs = small;
  buffers.out = ok;
  Status s = plan->Run(algos[0], buffers, ws, *stream_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  buffers.rhs = ok;
  buffers.out = runtime::DeviceMemory{static_cast<char*>(ok.ptr) + 4, ok.size - 4};
  s = plan->Run(algos[0], buffers, ws, *stream_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();  // misaligned
}

}  // namespace
}  // namespace kiln::cuda::libs
