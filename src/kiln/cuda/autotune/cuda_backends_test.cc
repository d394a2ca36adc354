// The CUDA autotuning factory without a GPU: descriptors of the compiler's custom calls, the
// configs listed offline, and compiling from a complete cache with no device at all.
#include "kiln/cuda/autotune/cuda_backends.h"

#include <gtest/gtest.h>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/testing/test_util.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/libs/attention_cudnn.h"
#include "kiln/cuda/nvrtc_compiler.h"
#include "kiln/hlo/computation.h"

namespace kiln::cuda {
namespace {

using autotune::testing::ParseOrDie;

constexpr char kGemm[] = R"(
HloModule g
ENTRY e {
  a = bf16[2,64,32]{2,1,0} parameter(0)
  b = bf16[2,16,32]{2,1,0} parameter(1)
  bias = bf16[16]{0} parameter(2)
  ROOT g = bf16[2,64,16]{2,1,0} custom-call(a, b, bias), custom_call_target="__kiln$gemm", backend_config={"batch":2,"m":64,"n":16,"k":32,"lhs_transposed":false,"rhs_transposed":true,"alpha":0.5,"beta":0,"bias":true,"activation":"relu","precision":"default"}
})";

constexpr char kConv[] = R"(
HloModule c
ENTRY e {
  x = f32[4,8,8,3]{3,2,1,0} parameter(0)
  w = f32[16,3,3,3]{3,2,1,0} parameter(1)
  ROOT c = f32[4,8,8,16]{3,2,1,0} custom-call(x, w), custom_call_target="__kiln$conv", backend_config={"layout":"channels_last","batch":4,"input_features":3,"output_features":16,"input_spatial":[8,8],"filter_spatial":[3,3],"output_spatial":[8,8],"strides":[1,1],"padding_low":[1,1],"padding_high":[1,1],"dilations":[1,1],"feature_group_count":1,"alpha":1,"bias":false,"side_input_scale":0,"activation":"none","precision":"default"}
})";

runtime::DeviceDescription H200() {
  runtime::DeviceDescription d;
  d.platform = "cuda";
  d.name = "NVIDIA H200";
  d.compute_capability_major = 9;
  d.library_versions = {{"cublas", "13.0.2"}, {"cublasLt", "13.0.2"}, {"cudnn", "9.13.0"}};
  return d;
}

HloInstruction* Root(HloModule& m) { return m.entry_computation()->root_instruction(); }

TEST(CudaBackendsTest, GemmDescriptorOfTheCustomCall) {
  auto module = ParseOrDie(kGemm);
  ASSERT_NE(module, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(libs::GemmDesc d, GemmDescForCall(*Root(*module)));
  EXPECT_EQ(d.batch, 2);
  EXPECT_EQ(d.m, 64);
  EXPECT_EQ(d.n, 16);
  EXPECT_EQ(d.k, 32);
  EXPECT_FALSE(d.lhs.transposed);
  EXPECT_TRUE(d.rhs.transposed);
  EXPECT_EQ(d.lhs.dtype, PrimitiveType::kBF16);
  EXPECT_EQ(d.out.dtype, PrimitiveType::kBF16);
  EXPECT_EQ(d.alpha, 0.5);
  EXPECT_EQ(d.epilogue, libs::GemmEpilogue::kBiasRelu);
  EXPECT_EQ(d.bias_dtype, PrimitiveType::kBF16);
  KILN_EXPECT_OK(libs::ResolveGemmTypes(d));
}

TEST(CudaBackendsTest, ConvDescriptorOfTheCustomCall) {
  auto module = ParseOrDie(kConv);
  ASSERT_NE(module, nullptr);
  auto d = ConvDescForCall(*Root(*module));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->input_layout, libs::ConvLayout::kChannelsLast);
  EXPECT_EQ(d->batch, 4);
  EXPECT_EQ(d->output_features, 16);
  EXPECT_EQ(d->padding_low, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(d->InputDims(), (std::vector<int64_t>{4, 8, 8, 3}));
  EXPECT_EQ(d->OutputDims(), (std::vector<int64_t>{4, 8, 8, 16}));
}

// An attention call (passes/attention_rewriter.h): the flash kernel's configs are listed without
// a device, cuDNN's SDPA its heuristic plan (where the build has it); no other backend takes it.
TEST(CudaBackendsTest, AttentionCallsGoToTheAttentionBackends) {
  AttentionConfig c;
  c.batch = {2};
  c.q_len = c.kv_len = 128;
  c.head_dim = c.v_head_dim = 64;
  c.scale = 0.125;
  c.mask = AttentionMask::kCausal;
  c.input_type = c.score_type = c.probs_type = c.output_type = PrimitiveType::kBF16;
  c.softmax_type = PrimitiveType::kF32;
  c.q = c.k = c.v = {0, 0, {128 * 64}, 64, 1};
  c.k.operand = 1;
  c.v.operand = 2;
  c.out = {0, 0, {128 * 64}, 64, 1};
  std::string json = c.ToJson();
  std::string escaped;
  for (char ch : json) {
    if (ch == '"') escaped += '\\';
    escaped += ch;
  }
  auto module = ParseOrDie(StrCat(R"(
HloModule a
body {
  q = bf16[2,128,64]{2,1,0} parameter(0)
  k = bf16[2,128,64]{2,1,0} parameter(1)
  v = bf16[2,128,64]{2,1,0} parameter(2)
  ROOT o = bf16[2,128,64]{2,1,0} add(q, v)
}
ENTRY e {
  q = bf16[2,128,64]{2,1,0} parameter(0)
  k = bf16[2,128,64]{2,1,0} parameter(1)
  v = bf16[2,128,64]{2,1,0} parameter(2)
  ROOT a = bf16[2,128,64]{2,1,0} custom-call(q, k, v), custom_call_target="__kiln$attention", called_computations={body}, backend_config=")", escaped, R"("
})"));
  ASSERT_NE(module, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList backends, CreateCudaBackends(H200(), nullptr, {}));
  for (const auto& b : backends) {
    KILN_ASSERT_OK_AND_ASSIGN(auto configs, b->SupportedConfigs(*Root(*module)));
    if (b->name() == "flash") {
      ASSERT_FALSE(configs.empty());
      EXPECT_EQ(configs[0].ToString(), "flash {\"config\":\"w4.m2.n64\"}");
      KILN_ASSERT_OK_AND_ASSIGN(autotune::Config d, b->DefaultConfig(*Root(*module)));
      EXPECT_EQ(d, configs[0]);
    } else if (b->name() == "cudnn_sdpa") {
      EXPECT_EQ(configs.size(), libs::CudnnAttentionBuilt() ? 1u : 0u);
    } else {
      EXPECT_TRUE(configs.empty()) << b->name();
    }
  }
}

TEST(CudaBackendsTest, OfflineConfigLists) {
  auto module = ParseOrDie(kGemm);
  ASSERT_NE(module, nullptr);
  // bf16 with a bias epilogue: cuBLAS cannot fuse it, cuBLASLt needs a device to list.
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList backends, CreateCudaBackends(H200(), nullptr, {}));
  // cublas, cublaslt, cudnn, cudnn_sdpa, flash, and fission (after cublaslt) and codegen where
  // NVRTC loads.
  const size_t libraries = 5;
  const bool nvrtc = NvrtcCompiler::Create({}).ok();
  ASSERT_EQ(backends.size(), libraries + (nvrtc ? 2 : 0));
  EXPECT_EQ(backends[0]->name(), "cublas");
  EXPECT_EQ(backends[0]->version(), "cublas 13.0.2");
  EXPECT_EQ(backends[1]->name(), "cublaslt");
  if (nvrtc) {
    EXPECT_EQ(backends[2]->name(), "fission");
    EXPECT_EQ(backends[6]->name(), "codegen");
  }
  EXPECT_EQ(backends[nvrtc ? 3 : 2]->version(), "cudnn 9.13.0");
  EXPECT_EQ(backends[nvrtc ? 4 : 3]->name(), "cudnn_sdpa");
  EXPECT_EQ(backends[nvrtc ? 5 : 4]->name(), "flash");
  for (const auto& b : backends) {
    KILN_ASSERT_OK_AND_ASSIGN(auto configs, b->SupportedConfigs(*Root(*module)));
    EXPECT_TRUE(configs.empty()) << b->name();
    EXPECT_EQ(b->CanProduceWrongResults(), b->name() == "codegen" || b->name() == "flash") << b->name();
  }
  auto plain = ParseOrDie(R"(
HloModule g
ENTRY e {
  a = f32[64,32]{1,0} parameter(0)
  b = f32[32,16]{1,0} parameter(1)
  ROOT g = f32[64,16]{1,0} custom-call(a, b), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32}
})");
  ASSERT_NE(plain, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(auto on, backends[0]->SupportedConfigs(*Root(*plain)));
  EXPECT_EQ(on.size(), 2u);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList all,
                            CreateCudaBackends(H200(), nullptr, {.exhaustive = true}));
  KILN_ASSERT_OK_AND_ASSIGN(auto every, all[0]->SupportedConfigs(*Root(*plain)));
  EXPECT_EQ(every.size(), 2u + 24 + 16);
  // Without a device nothing compiles, as a status.
  EXPECT_EQ(backends[0]->Compile(*Root(*plain), on[0]).status().code(),
            StatusCode::kFailedPrecondition);
  // Not a library call: nobody takes it.
  HloInstruction* param = plain->entry_computation()->parameter_instruction(0);
  KILN_ASSERT_OK_AND_ASSIGN(auto none, backends[1]->SupportedConfigs(*param));
  EXPECT_TRUE(none.empty());
}

// What `kiln compile` on a machine without a GPU does with a shared cache: every GEMM's entry
// is found and applied, cuBLASLt's opaque algorithm included, and nothing is measured.
TEST(CudaBackendsTest, RequireCompleteCompilesWithoutADevice) {
  autotune::testing::ScopedTempDir dir;
  auto plain = ParseOrDie(R"(
HloModule g
ENTRY e {
  a = f32[64,32]{1,0} parameter(0)
  b = f32[32,16]{1,0} parameter(1)
  ROOT g = f32[64,16]{1,0} custom-call(a, b), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32}
})");
  ASSERT_NE(plain, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::BackendList backends, CreateCudaBackends(H200(), nullptr, {}));
  std::vector<const autotune::Backend*> in_use;
  for (const auto& b : backends) in_use.push_back(b.get());
  autotune::CacheEntry entry;
  entry.key = autotune::MakeCacheKey(H200(), in_use, false, *Root(*plain));
  entry.kind = "custom-call:__kiln$gemm";
  nlohmann::json opaque = nlohmann::json::array();
  for (uint64_t w : {1ull, 2ull, 3ull, 4ull, 5ull, 6ull, 7ull, 18446744073709551615ull}) opaque.push_back(w);
  entry.result.config = autotune::Config(
      "cublaslt", {{"index", 3}, {"opaque", opaque}, {"workspace", 4194304u}, {"desc", "x"}});
  entry.result.time_us = 12;
  {
    KILN_ASSERT_OK_AND_ASSIGN(auto rw, autotune::Cache::Create({.directory = dir.path()}));
    KILN_ASSERT_OK(rw->Store(entry));
  }
  KILN_ASSERT_OK_AND_ASSIGN(
      auto cache,
      autotune::Cache::Create({.directory = dir.path(),
                               .mode = autotune::CacheMode::kRequireComplete}));
  KILN_ASSERT_OK_AND_ASSIGN(
      auto tuner, autotune::Autotuner::Create(std::move(backends), H200(), nullptr, cache.get(), {}));
  KILN_ASSERT_OK_AND_ASSIGN(autotune::AutotuneReport report, tuner->Run(*plain));
  ASSERT_EQ(report.groups.size(), 1u);
  EXPECT_EQ(report.groups[0].source, autotune::ChoiceSource::kCache);
  KILN_ASSERT_OK_AND_ASSIGN(autotune::Config applied,
                            autotune::ReadConfigFromBackendConfig(*Root(*plain)));
  EXPECT_EQ(applied, entry.result.config);
  EXPECT_EQ(applied.params()["opaque"][7].get<uint64_t>(), 18446744073709551615ull);
  // The GEMM config beside it is intact.
  KILN_ASSERT_OK_AND_ASSIGN(GemmConfig gemm, GetGemmConfig(*Root(*plain)));
  EXPECT_EQ(gemm.m, 64);
}

// The configs the backends list and the cache stores are the algorithms the thunks run.
TEST(CudaBackendsTest, ConfigsAndAlgorithmsRoundTrip) {
  auto module = ParseOrDie(kGemm);
  ASSERT_NE(module, nullptr);
  HloInstruction* gemm = Root(*module);
  KILN_ASSERT_OK_AND_ASSIGN(libs::GemmDesc desc, GemmDescForCall(*gemm));
  EXPECT_EQ(desc.min_alignment_bytes, 256u);

  libs::GemmAlgorithm lt;
  lt.backend = libs::GemmAlgorithm::Backend::kCublasLt;
  lt.index = 3;
  for (int i = 0; i < 8; ++i) lt.opaque[i] = 1000 + i;
  lt.workspace_bytes = 4 << 20;
  lt.waves = 0.5f;
  lt.description = "cublasLt#3 algo=66";
  autotune::Config c = GemmAlgorithmToConfig(lt);
  EXPECT_EQ(c.backend(), "cublaslt");
  KILN_ASSERT_OK_AND_ASSIGN(libs::GemmAlgorithm back, GemmAlgorithmFromConfig(c, desc));
  EXPECT_EQ(back.backend, lt.backend);
  EXPECT_EQ(back.index, 3);
  EXPECT_EQ(back.opaque, lt.opaque);
  EXPECT_EQ(back.workspace_bytes, lt.workspace_bytes);
  EXPECT_EQ(back.description, lt.description);

  libs::GemmAlgorithm blas;
  blas.backend = libs::GemmAlgorithm::Backend::kCublas;
  blas.cublas_algo = 7;
  KILN_ASSERT_OK_AND_ASSIGN(libs::GemmAlgorithm blas_back,
                            GemmAlgorithmFromConfig(GemmAlgorithmToConfig(blas), desc));
  EXPECT_EQ(blas_back.cublas_algo, 7);
  EXPECT_EQ(blas_back.workspace_bytes, desc.max_workspace_bytes);

  EXPECT_FALSE(GemmAlgorithmFromConfig(autotune::Config("cublaslt", {{"opaque", {1, 2}}}), desc).ok());
  EXPECT_FALSE(GemmAlgorithmFromConfig(autotune::Config("cublas", {{"algo", "x"}}), desc).ok());
  EXPECT_FALSE(GemmAlgorithmFromConfig(autotune::Config("cudnn", {{"algo", 1}}), desc).ok());

  // No choice written: nothing; a cuBLASLt choice on less aligned buffers: nothing (the
  // heuristic picks again); on aligned ones: that algorithm.
  KILN_ASSERT_OK_AND_ASSIGN(auto none, TunedGemmAlgorithm(*gemm, desc));
  EXPECT_FALSE(none.has_value());
  KILN_ASSERT_OK(autotune::WriteConfigToBackendConfig(*gemm, c));
  KILN_ASSERT_OK_AND_ASSIGN(libs::GemmDesc still, GemmDescForCall(*gemm));  // config keys kept
  EXPECT_EQ(still.m, desc.m);
  KILN_ASSERT_OK_AND_ASSIGN(auto tuned, TunedGemmAlgorithm(*gemm, desc));
  ASSERT_TRUE(tuned.has_value());
  EXPECT_EQ(tuned->opaque, lt.opaque);
  KILN_ASSERT_OK_AND_ASSIGN(libs::GemmDesc loose, GemmDescForCall(*gemm, 16));
  KILN_ASSERT_OK_AND_ASSIGN(auto dropped, TunedGemmAlgorithm(*gemm, loose));
  EXPECT_FALSE(dropped.has_value());

  libs::ConvAlgorithm conv;
  conv.index = 2;
  conv.algo = 1;
  conv.math_type = 2;
  conv.workspace_bytes = 1 << 20;
  conv.deterministic = true;
  conv.tensor_ops = true;
  conv.split_epilogue = true;
  conv.description = "cudnn fwd#2";
  KILN_ASSERT_OK_AND_ASSIGN(libs::ConvAlgorithm conv_back,
                            ConvAlgorithmFromConfig(ConvAlgorithmToConfig(conv)));
  EXPECT_EQ(conv_back.algo, 1);
  EXPECT_EQ(conv_back.math_type, 2);
  EXPECT_EQ(conv_back.workspace_bytes, conv.workspace_bytes);
  EXPECT_TRUE(conv_back.deterministic && conv_back.tensor_ops && conv_back.split_epilogue);
  EXPECT_FALSE(ConvAlgorithmFromConfig(autotune::Config("cudnn", {{"algo", 1}})).ok());
}

}  // namespace
}  // namespace kiln::cuda
