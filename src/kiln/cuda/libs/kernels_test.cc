// The library layer's own kernels compile with NVRTC for sm_80 and sm_90 without a GPU (label
// cpu), for every key type and order of the sort, and the cubins hold the expected entry points.
// Also the descriptor checks of sort and FFT. NVRTC cases skip where libnvrtc is absent.
#include <algorithm>

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/cuda/cubin.h"
#include "kiln/cuda/libs/attention.h"
#include "kiln/cuda/libs/conv.h"
#include "kiln/cuda/libs/fft.h"
#include "kiln/cuda/libs/solver.h"
#include "kiln/cuda/libs/sort.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda::libs {
namespace {

class KernelCompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::shared_ptr<const NvrtcApi>> api = NvrtcApi::Default();
    if (!api.ok()) GTEST_SKIP() << "NVRTC is not installed here: " << api.status().message();
    NvrtcOptions options;
    options.use_cache = false;  // compile for real
    StatusOr<std::unique_ptr<NvrtcCompiler>> compiler = NvrtcCompiler::Create(options);
    ASSERT_TRUE(compiler.ok()) << compiler.status().ToString();
    compiler_ = std::move(compiler).value();
  }

  void ExpectKernels(NvrtcRequest request, const std::vector<std::string>& kernels) {
    for (const char* arch : {"sm_80", "sm_90"}) {
      request.arch = arch;
      StatusOr<NvrtcProgram> program = compiler_->Compile(request);
      ASSERT_TRUE(program.ok()) << request.program_name << " for " << arch << " with "
                                << ::testing::PrintToString(request.options) << ": "
                                << program.status().ToString();
      EXPECT_TRUE(program->log.empty()) << "NVRTC warnings:\n" << program->log;
      KILN_ASSERT_OK_AND_ASSIGN(CubinInfo info, InspectCubin(program->cubin));
      std::vector<std::string> found = info.Kernels();
      for (const std::string& k : kernels) {
        EXPECT_NE(std::find(found.begin(), found.end(), k), found.end())
            << k << " missing from " << request.program_name << " for " << arch;
      }
    }
  }

  std::unique_ptr<NvrtcCompiler> compiler_;
};

TEST_F(KernelCompileTest, SortKeyKernelsForEveryKeyType) {
  using PT = PrimitiveType;
  for (PT t : {PT::kPred, PT::kS8, PT::kU8, PT::kS16, PT::kU16, PT::kF16, PT::kBF16, PT::kS32,
               PT::kU32, PT::kF32, PT::kS64, PT::kU64, PT::kF64}) {
    SortDesc d;
    d.key_type = t;
    d.row_length = 10;
    SCOPED_TRACE(d.ToString());
    ExpectKernels(SortKeyKernelsRequest(d),
                  {"kiln_sort_small", "kiln_radix_init", "kiln_radix_hist", "kiln_radix_scatter"});
  }
  for (PT t : {PT::kBF16, PT::kF32, PT::kF64}) {
    SortDesc d;
    d.key_type = t;
    d.order = SortOrder::kDescending;
    d.canonicalize_floats = true;
    SCOPED_TRACE(d.ToString());
    ExpectKernels(SortKeyKernelsRequest(d), {"kiln_sort_small", "kiln_radix_scatter"});
  }
}

TEST_F(KernelCompileTest, SortCommonAndFftKernels) {
  ExpectKernels(SortCommonKernelsRequest(),
                {"kiln_sort_gather_w1", "kiln_sort_gather_w2", "kiln_sort_gather_w4",
                 "kiln_sort_gather_w8", "kiln_sort_gather_w16", "kiln_sort_indices_32",
                 "kiln_sort_indices_64", "kiln_radix_scan"});
  NvrtcRequest fft;
  fft.source = FftScaleKernelSource();
  fft.program_name = "kiln_fft_scale.cu";
  ExpectKernels(fft, {"kiln_fft_scale_f32", "kiln_fft_scale_f64", "kiln_fft_hermitian_fix_f32",
                      "kiln_fft_hermitian_fix_f64"});
  NvrtcRequest conv;
  conv.source = ConvEpilogueKernelSource();
  conv.program_name = "kiln_conv_epilogue.cu";
  ExpectKernels(conv, {"kiln_conv_epilogue_f32", "kiln_conv_epilogue_f64",
                       "kiln_conv_epilogue_f16", "kiln_conv_epilogue_bf16"});
  NvrtcRequest solver;
  solver.source = SolverKernelSource();
  solver.program_name = "kiln_solver_kernels.cu";
  ExpectKernels(solver, {"kiln_lu_pivots_to_permutation", "kiln_cholesky_update_f32",
                         "kiln_cholesky_update_f64", "kiln_gtsv_f32", "kiln_gtsv_f64", "kiln_gtsv_c64",
                         "kiln_gtsv_c128"});
}

TEST_F(KernelCompileTest, AttentionKernelInEveryConfig) {
  for (PrimitiveType t : {PrimitiveType::kBF16, PrimitiveType::kF16})
    for (int64_t dim : {64, 128}) {
      AttentionDesc d;
      d.type = t;
      d.head_dim = dim;
      for (const AttentionKernelConfig& c : AttentionConfigs(d)) {
        SCOPED_TRACE(StrCat(PrimitiveTypeName(t), " d", dim, " ", c.ToString()));
        ExpectKernels(AttentionKernelRequest(d, c), {"kiln_flash_attention_fwd"});
      }
    }
}

// Note [Attention bias and masks]: each bias type, with and without a data mask, and a mask alone.
TEST_F(KernelCompileTest, AttentionKernelWithBiasAndMask) {
  for (int64_t dim : {64, 128})
    for (int bias = 0; bias < 4; ++bias)
      for (bool mask : {false, true}) {
        if (bias == 0 && !mask) continue;
        AttentionDesc d;
        d.type = PrimitiveType::kBF16;
        d.head_dim = dim;
        d.has_bias = bias != 0;
        d.bias_type = bias == 1 ? PrimitiveType::kF32 : bias == 2 ? PrimitiveType::kBF16 : PrimitiveType::kF16;
        d.has_mask = mask;
        const AttentionKernelConfig c = DefaultAttentionConfig(d);
        SCOPED_TRACE(StrCat("d", dim, " bias ", bias, " mask ", mask, " ", c.ToString()));
        ExpectKernels(AttentionKernelRequest(d, c), {"kiln_flash_attention_fwd"});
      }
}

TEST(AttentionDescTest, RefusesWhatTheKernelDoesNotRun) {
  AttentionDesc d;
  d.batch[0] = 2;
  d.q_len = d.kv_len = 100;
  d.head_dim = 64;
  d.q.row = d.k.row = d.v.row = d.out.row = 64;
  d.q.batch[0] = d.k.batch[0] = d.v.batch[0] = d.out.batch[0] = 6400;
  KILN_EXPECT_OK(CheckAttentionSupported(d, 9));
  EXPECT_EQ(CheckAttentionSupported(d, 7).code(), StatusCode::kUnimplemented);
  AttentionDesc f32 = d;
  f32.type = PrimitiveType::kF32;
  EXPECT_EQ(CheckAttentionSupported(f32, 9).code(), StatusCode::kUnimplemented);
  AttentionDesc d96 = d;
  d96.head_dim = 96;
  EXPECT_EQ(CheckAttentionSupported(d96, 9).code(), StatusCode::kUnimplemented);
  AttentionDesc odd = d;
  odd.q.row = 12;
  EXPECT_EQ(CheckAttentionSupported(odd, 9).code(), StatusCode::kUnimplemented);
  AttentionDesc neg = d;
  neg.causal = true;
  neg.causal_offset = -1;
  EXPECT_EQ(CheckAttentionSupported(neg, 9).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(AttentionKernelConfig::Parse("w8.m2.n128")->ToString(), "w8.m2.n128");
  EXPECT_FALSE(AttentionKernelConfig::Parse("w3.m1.n64").ok());
  EXPECT_FALSE(AttentionKernelConfig::Parse("w4.m1.n64x").ok());
  AttentionDesc negative = d;
  negative.scale = -1;
  EXPECT_EQ(CheckAttentionSupported(negative, 9).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(d.ExtentOf(d.q, 100), 6400 * 2);
}

TEST(AttentionDescTest, FlopsCountTheKeptHalf) {
  AttentionDesc d;
  d.q_len = d.kv_len = 4;
  d.head_dim = 64;
  d.causal = true;
  EXPECT_DOUBLE_EQ(d.Flops(), 4.0 * 10 * 64);  // 1 + 2 + 3 + 4 pairs
  d.causal = false;
  EXPECT_DOUBLE_EQ(d.Flops(), 4.0 * 16 * 64);
}

TEST(SortDescTest, Validation) {
  SortDesc d;
  d.key_type = PrimitiveType::kF32;
  d.rows = 4;
  d.row_length = 100;
  KILN_EXPECT_OK(ValidateSortDesc(d));
  d.k = 101;
  EXPECT_EQ(ValidateSortDesc(d).code(), StatusCode::kInvalidArgument);
  d.k = 5;
  d.value_types = {PrimitiveType::kS4};
  EXPECT_EQ(ValidateSortDesc(d).code(), StatusCode::kUnimplemented);
  d.value_types = {PrimitiveType::kC128, PrimitiveType::kPred};
  KILN_EXPECT_OK(ValidateSortDesc(d));
  d.index_type = PrimitiveType::kS16;
  EXPECT_EQ(ValidateSortDesc(d).code(), StatusCode::kUnimplemented);
  d.index_type = PrimitiveType::kS32;
  d.key_type = PrimitiveType::kC64;
  EXPECT_EQ(ValidateSortDesc(d).code(), StatusCode::kUnimplemented);
  d.key_type = PrimitiveType::kBF16;
  EXPECT_EQ(d.output_length(), 5);
  EXPECT_EQ(d.ToString(), "sort bf16[4,100] ascending +c128 +pred indices=s32 k=5");
}

TEST(FftDescTest, TypesAndSizes) {
  FftDesc d;
  d.type = FftType::kRfft;
  d.batch = 3;
  d.fft_length = {8, 10};
  KILN_EXPECT_OK(ValidateFftDesc(d));
  EXPECT_EQ(d.input_type(), PrimitiveType::kF32);
  EXPECT_EQ(d.output_type(), PrimitiveType::kC64);
  EXPECT_EQ(d.input_elements(), 3 * 80);
  EXPECT_EQ(d.output_elements(), 3 * 8 * 6);
  d.type = FftType::kIrfft;
  d.precision = PrimitiveType::kF64;
  EXPECT_EQ(d.input_type(), PrimitiveType::kC128);
  EXPECT_EQ(d.output_type(), PrimitiveType::kF64);
  EXPECT_EQ(d.input_elements(), 3 * 8 * 6);
  EXPECT_EQ(d.ToString(), "fft IRFFT f64 batch=3 length=8x10");
  d.fft_length = {2, 2, 2, 2};
  EXPECT_EQ(ValidateFftDesc(d).code(), StatusCode::kUnimplemented);
  d.fft_length = {0};
  EXPECT_EQ(ValidateFftDesc(d).code(), StatusCode::kInvalidArgument);
  d.fft_length = {4};
  d.precision = PrimitiveType::kF16;
  EXPECT_EQ(ValidateFftDesc(d).code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln::cuda::libs
