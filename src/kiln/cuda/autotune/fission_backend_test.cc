// The fission backend without a GPU: which calls it takes, the rewrite Apply makes (printed,
// and evaluated against the unsplit call by the reference evaluator, both with their library
// calls expanded to HLO), and a forced fission choice going through the GPU compiler to its
// thunks (a tuned GEMM thunk with an f32 result, the epilogue's kernel).
#include "kiln/cuda/autotune/fission_backend.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/autotune/testing/test_util.h"
#include "kiln/cuda/autotune/cuda_backends.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/gpu_autotune.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/kernel_thunk.h"
#include "kiln/cuda/compiler/library_call_expander.h"
#include "kiln/cuda/compiler/library_thunks.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cuda {
namespace {

using autotune::testing::ParseOrDie;

// f32 GEMM + bias + GELU.
constexpr char kF32BiasGelu[] = R"(
HloModule a
ENTRY e {
  x = f32[64,32]{1,0} parameter(0)
  w = f32[32,16]{1,0} parameter(1)
  bias = f32[16]{0} parameter(2)
  g = f32[64,16]{1,0} custom-call(x, w, bias), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32,"bias":true,"activation":"gelu"}
  ROOT n = f32[64,16]{1,0} negate(g)
})";

// Batched bf16 GEMM, rhs transposed, alpha 0.5, bf16 bias + ReLU; the call is the root.
constexpr char kBf16BiasRelu[] = R"(
HloModule b
ENTRY e {
  a = bf16[2,64,32]{2,1,0} parameter(0)
  b = bf16[2,16,32]{2,1,0} parameter(1)
  bias = bf16[16]{0} parameter(2)
  ROOT g = bf16[2,64,16]{2,1,0} custom-call(a, b, bias), custom_call_target="__kiln$gemm", backend_config={"batch":2,"m":64,"n":16,"k":32,"lhs_transposed":false,"rhs_transposed":true,"alpha":0.5,"beta":0,"bias":true,"activation":"relu","precision":"default"}
})";

// f16 with a residual (beta 1) and ReLU, no bias; two users.
constexpr char kF16Residual[] = R"(
HloModule c
ENTRY e {
  x = f16[64,32]{1,0} parameter(0)
  w = f16[32,16]{1,0} parameter(1)
  r = f16[64,16]{1,0} parameter(2)
  g = f16[64,16]{1,0} custom-call(x, w, r), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32,"beta":1,"activation":"relu"}
  s = f16[64,16]{1,0} multiply(g, g)
  ROOT t = (f16[64,16]{1,0}, f16[64,16]{1,0}) tuple(g, s)
})";

// An f32 result whose last dimension is not n (the GEMM produced a reshaped dot): beta 2 with a
// c of the result's shape, and a bias.
constexpr char kF32Reshaped[] = R"(
HloModule d
ENTRY e {
  x = f32[64,32]{1,0} parameter(0)
  w = f32[32,16]{1,0} parameter(1)
  c = f32[64,4,4]{2,1,0} parameter(2)
  bias = f32[16]{0} parameter(3)
  ROOT g = f32[64,4,4]{2,1,0} custom-call(x, w, c, bias), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32,"beta":2,"bias":true}
})";

// A cuBLASLt algorithm as fission lists it (the words mean nothing without a device).
autotune::Config FakeAlgorithm(std::string backend = "fission") {
  nlohmann::json opaque = nlohmann::json::array();
  for (uint64_t w = 1; w <= 8; ++w) opaque.push_back(w);
  return autotune::Config(std::move(backend), {{"index", 2}, {"opaque", opaque}, {"workspace", 1048576u},
                                               {"waves", 1.0}, {"desc", "fake"}});
}

HloInstruction* Find(const HloModule& m, std::string_view name) {
  for (HloComputation* c : m.computations())
    for (HloInstruction* i : c->instructions())
      if (i->name() == name) return i;
  return nullptr;
}

std::unique_ptr<autotune::Backend> OfflineBackend() {
  auto spec = codegen::DeviceSpec::FromPreset("sm_90");
  EXPECT_TRUE(spec.ok());
  return CreateFissionBackend(spec.ok() ? *spec : codegen::DeviceSpec{}, nullptr, nullptr, {});
}

// Evaluates `module` on `args` with its library calls expanded to HLO.
Literal Evaluate(const HloModule& module, const std::vector<Literal>& args) {
  auto copy = ParseOrDie(module.ToString());
  EXPECT_NE(copy, nullptr);
  if (!copy) return Literal();
  Status s = ExpandLibraryCalls(*copy);
  EXPECT_TRUE(s.ok()) << s.ToString();
  Evaluator evaluator;
  auto out = evaluator.Run(*copy, args);
  EXPECT_TRUE(out.ok()) << out.status().ToString() << "\n" << copy->ToString();
  return out.ok() ? std::move(out).value() : Literal();
}

// Applies fission to the call `g` of `text`, checks the printed result, and compares the
// evaluator's results before and after. Returns the rewritten module.
std::unique_ptr<HloModule> SplitAndCompare(const char* text, double rtol) {
  auto before = ParseOrDie(text);
  auto after = ParseOrDie(text);
  EXPECT_NE(before, nullptr);
  if (!before || !after) return nullptr;
  HloInstruction* g = Find(*after, "g");
  EXPECT_NE(g, nullptr);
  if (!g) return nullptr;
  auto backend = OfflineBackend();
  EXPECT_TRUE(FissionApplies(*g));
  Status s = backend->Apply(*g, FakeAlgorithm());
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(g->users().empty()) << "the old call is left dead";
  EXPECT_FALSE(g->IsRoot());

  // Printed: one plain f32 GEMM call carrying the algorithm as a cublaslt choice, and the
  // epilogue fusion reading it.
  const std::string printed = after->ToString();
  HloInstruction* plain = Find(*after, "g.plain");
  EXPECT_NE(plain, nullptr) << printed;
  if (!plain) return nullptr;
  EXPECT_EQ(plain->shape().element_type(), PrimitiveType::kF32);
  EXPECT_EQ(plain->shape().dimensions(), g->shape().dimensions());
  EXPECT_EQ(plain->operand_count(), 2);
  auto pc = GetGemmConfig(*plain);
  EXPECT_TRUE(pc.ok()) << pc.status().ToString();
  if (pc.ok()) {
    EXPECT_FALSE(pc->has_bias);
    EXPECT_EQ(pc->beta, 0);
    EXPECT_EQ(pc->activation, GemmActivation::kNone);
    EXPECT_EQ(pc->alpha, GetGemmConfig(*Find(*before, "g"))->alpha);
  }
  auto chosen = autotune::ReadConfigFromBackendConfig(*plain);
  EXPECT_TRUE(chosen.ok());
  if (chosen.ok()) {
    EXPECT_EQ(*chosen, FakeAlgorithm("cublaslt"));
  }
  EXPECT_EQ(plain->user_count(), 1);
  const HloInstruction* fusion = plain->users().empty() ? nullptr : plain->users().front();
  EXPECT_NE(fusion, nullptr);
  if (!fusion) return nullptr;
  EXPECT_EQ(fusion->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(fusion->attrs().fusion_kind, FusionKind::kLoop);
  EXPECT_EQ(fusion->shape(), g->shape());
  EXPECT_NE(printed.find("g.plain = f32["), std::string::npos) << printed;
  EXPECT_NE(printed.find("kind=kLoop"), std::string::npos) << printed;
  EXPECT_NE(printed.find("\"autotune\""), std::string::npos) << printed;

  // The same values as the unsplit call.
  std::vector<Shape> shapes;
  for (const HloInstruction* p : before->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
  std::vector<Literal> args = MakeRandomArguments(shapes, 7);
  Literal want = Evaluate(*before, args);
  Literal got = Evaluate(*after, args);
  CompareOptions co;
  co.rtol = rtol;
  Comparison cmp = CompareLiterals(got, want, co);
  EXPECT_TRUE(cmp.ok()) << cmp.ToString() << "\n" << printed;
  return after;
}

TEST(FissionBackendTest, TakesGemmCallsWithAnEpilogueOnly) {
  for (const char* text : {kF32BiasGelu, kBf16BiasRelu, kF16Residual, kF32Reshaped}) {
    auto m = ParseOrDie(text);
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(FissionApplies(*Find(*m, "g"))) << text;
    KILN_ASSERT_OK_AND_ASSIGN(libs::GemmDesc d, FissionGemmDesc(*Find(*m, "g")));
    EXPECT_EQ(d.out.dtype, PrimitiveType::kF32);
    EXPECT_EQ(d.epilogue, libs::GemmEpilogue::kNone);
    EXPECT_EQ(d.beta, 0);
    KILN_EXPECT_OK(libs::ResolveGemmTypes(d));
  }
  auto other = ParseOrDie(R"(
HloModule o
ENTRY e {
  x = f32[64,32]{1,0} parameter(0)
  w = f32[32,16]{1,0} parameter(1)
  y = f64[64,32]{1,0} parameter(2)
  v = f64[32,16]{1,0} parameter(3)
  r = f64[64,16]{1,0} parameter(4)
  plain = f32[64,16]{1,0} custom-call(x, w), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32}
  scaled = f32[64,16]{1,0} custom-call(x, w), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32,"alpha":3}
  wide = f64[64,16]{1,0} custom-call(y, v, r), custom_call_target="__kiln$gemm", backend_config={"batch":1,"m":64,"n":16,"k":32,"beta":1}
  add = f32[64,16]{1,0} add(plain, scaled)
  ROOT t = (f32[64,16]{1,0}, f64[64,16]{1,0}) tuple(add, wide)
})");
  ASSERT_NE(other, nullptr);
  for (const char* name : {"plain", "scaled", "wide", "add", "x"}) {
    EXPECT_FALSE(FissionApplies(*Find(*other, name))) << name;
  }
  EXPECT_EQ(SplitGemmEpilogue(Find(*other, "scaled"), FakeAlgorithm()).status().code(),
            StatusCode::kFailedPrecondition);
  // A call with control edges is left alone (its users could not be rewired).
  {
    auto m = ParseOrDie(kF32BiasGelu);
    ASSERT_NE(m, nullptr);
    Find(*m, "x")->AddControlDependencyTo(Find(*m, "g"));
    EXPECT_FALSE(FissionApplies(*Find(*m, "g")));
  }
  // Offline (no device): nothing listed, nothing compiled; trusted.
  auto backend = OfflineBackend();
  EXPECT_EQ(backend->name(), "fission");
  EXPECT_FALSE(backend->CanProduceWrongResults());
  auto m = ParseOrDie(kF32BiasGelu);
  ASSERT_NE(m, nullptr);
  KILN_ASSERT_OK_AND_ASSIGN(auto configs, backend->SupportedConfigs(*Find(*m, "g")));
  EXPECT_TRUE(configs.empty());
  EXPECT_EQ(backend->Compile(*Find(*m, "g"), FakeAlgorithm()).status().code(), StatusCode::kFailedPrecondition);
  // A malformed algorithm is refused and the module left alone.
  EXPECT_FALSE(backend->Apply(*Find(*m, "g"), autotune::Config("fission", {{"index", 1}})).ok());
  EXPECT_FALSE(backend->Apply(*Find(*m, "g"), autotune::Config("codegen", FakeAlgorithm().params())).ok());
  EXPECT_EQ(Find(*m, "g.plain"), nullptr);
  EXPECT_EQ(Find(*m, "n")->operand(0), Find(*m, "g"));
}

TEST(FissionBackendTest, F32BiasGeluComputesTheSame) {
  auto m = SplitAndCompare(kF32BiasGelu, 1e-5);
  ASSERT_NE(m, nullptr);
  // The negate now reads the epilogue fusion.
  EXPECT_EQ(Find(*m, "n")->operand(0)->opcode(), HloOpcode::kFusion);
}

TEST(FissionBackendTest, Bf16BiasReluComputesTheSame) {
  // The unsplit expansion rounds the product to bf16 before the bias (fission, as cuBLASLt,
  // does not): bf16 tolerance.
  auto m = SplitAndCompare(kBf16BiasRelu, 2e-2);
  ASSERT_NE(m, nullptr);
  const HloInstruction* root = m->entry_computation()->root_instruction();
  EXPECT_EQ(root->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(root->shape().element_type(), PrimitiveType::kBF16);
  // bias and the plain GEMM feed it; the plain GEMM reads a and b only.
  EXPECT_EQ(root->operand_count(), 2);
}

TEST(FissionBackendTest, F16ResidualComputesTheSame) {
  auto m = SplitAndCompare(kF16Residual, 1e-2);
  ASSERT_NE(m, nullptr);
  const HloInstruction* t = m->entry_computation()->root_instruction();
  EXPECT_EQ(t->operand(0)->opcode(), HloOpcode::kFusion);
  EXPECT_EQ(Find(*m, "s")->operand(0), t->operand(0));
}

TEST(FissionBackendTest, ReshapedResultComputesTheSame) { ASSERT_NE(SplitAndCompare(kF32Reshaped, 1e-5), nullptr); }

// The kernel Compile would run: emitted for sm_90 and compiled by NVRTC (where it loads) for
// every case, reading the intermediate, c and bias as the roles say.
TEST(FissionBackendTest, EpilogueKernelsEmitAndCompile) {
  KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec spec, codegen::DeviceSpec::FromPreset("sm_90"));
  auto nvrtc = NvrtcCompiler::Create({});
  for (const char* text : {kF32BiasGelu, kBf16BiasRelu, kF16Residual, kF32Reshaped}) {
    auto m = ParseOrDie(text);
    ASSERT_NE(m, nullptr);
    const HloInstruction* g = Find(*m, "g");
    KILN_ASSERT_OK_AND_ASSIGN(GemmConfig gc, GetGemmConfig(*g));
    std::vector<int> roles;
    KILN_ASSERT_OK_AND_ASSIGN(codegen::KernelSpec k, FissionEpilogueKernel(*g, spec, &roles));
    std::vector<int> want = {0};
    if (gc.beta != 0) want.push_back(1);
    if (gc.has_bias) want.push_back(2);
    std::sort(roles.begin(), roles.end());
    EXPECT_EQ(roles, want) << text;
    EXPECT_EQ(k.scratch_bytes, 0);
    EXPECT_FALSE(k.launches.empty());
    int operands = 0, outputs = 0;
    for (const codegen::KernelParam& p : k.params) {
      operands += p.kind == codegen::KernelParam::Kind::kOperand;
      outputs += p.kind == codegen::KernelParam::Kind::kOutput;
    }
    EXPECT_EQ(operands, static_cast<int>(want.size()));
    EXPECT_EQ(outputs, 1);
    if (!nvrtc.ok()) continue;
    NvrtcRequest r;
    r.source = k.source;
    r.headers = k.headers;
    r.arch = spec.arch();
    r.program_name = k.name + ".cu";
    auto program = (*nvrtc)->Compile(r);
    EXPECT_TRUE(program.ok()) << program.status().ToString() << "\n" << k.source;
  }
  EXPECT_FALSE(FissionEpilogueKernel(*ParseOrDie(kF32BiasGelu)->entry_computation()->parameter_instruction(0), spec).ok());
}

// A backend that lists one config for GEMM calls offline, so that the autotuner considers them
// (fission itself needs a device to list) and a forced fission choice applies.
class GemmLister : public autotune::Backend {
 public:
  std::string_view name() const override { return "lister"; }
  std::string version() const override { return "1"; }
  StatusOr<std::vector<autotune::Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsGemmCall(instr)) return std::vector<autotune::Config>{};
    return std::vector<autotune::Config>{autotune::Config("lister", {{"id", 0}})};
  }
  StatusOr<autotune::Config> DefaultConfig(const HloInstruction&) override {
    return autotune::Config("lister", {{"id", 0}});
  }
  StatusOr<std::unique_ptr<autotune::Candidate>> Compile(const HloInstruction&, const autotune::Config&) override {
    return Unimplemented("lister");
  }
  Status Apply(HloInstruction&, const autotune::Config&) override { return OkStatus(); }
  bool CanProduceWrongResults() const override { return false; }
};

runtime::DeviceDescription H200() {
  runtime::DeviceDescription d;
  d.platform = "cuda";
  d.name = "NVIDIA H200";
  d.compute_capability_major = 9;
  d.library_versions = {{"cublas", "13.0.2"}, {"cublasLt", "13.0.2"}, {"cudnn", "9.13.0"}};
  return d;
}

// dot + bias + GELU in f32 (the rewriter folds the epilogue into the call), then forced
// fission in the GPU compiler's autotune step: the thunks are a tuned GEMM with an f32 result
// and the epilogue's kernel.
TEST(FissionBackendTest, ForcedFissionReachesTheThunks) {
  if (!NvrtcCompiler::Create({}).ok()) GTEST_SKIP() << "no NVRTC (thunk emission compiles kernels)";
  constexpr char kMlp[] = R"(
HloModule mlp
ENTRY e {
  x = f32[128,64]{1,0} parameter(0)
  w = f32[64,256]{1,0} parameter(1)
  b = f32[256]{0} parameter(2)
  d = f32[128,256]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[128,256]{1,0} broadcast(b), dimensions={1}
  ROOT r = f32[128,256]{1,0} add(d, bb)
})";
  GpuAutotuneOptions o;
  o.factory = [](const runtime::DeviceDescription& target, runtime::Device*,
                 const autotune::BackendOptions& bo) -> StatusOr<autotune::BackendList> {
    autotune::BackendList list;
    list.push_back(std::make_unique<GemmLister>());
    KILN_ASSIGN_OR_RETURN(codegen::DeviceSpec spec, codegen::DeviceSpec::FromPreset("sm_90"));
    list.push_back(CreateFissionBackend(spec, nullptr, nullptr, bo));
    (void)target;
    return list;
  };
  o.target = H200();
  o.options.level = autotune::TuningLevel::kOff;
  KILN_ASSERT_OK_AND_ASSIGN(auto force,
                            autotune::ParseForcedConfig("custom-call:__kiln$gemm=fission:" + FakeAlgorithm().params().dump()));
  o.options.forced = {force};
  GpuCompileOptions co;
  co.compile_threads = 2;
  co.autotune = o;
  KILN_ASSERT_OK_AND_ASSIGN(auto c, GpuCompiler::Compile(ParseOrDie(kMlp), co));
  ASSERT_NE(c->stats.autotune, nullptr);
  EXPECT_EQ(c->stats.autotune->CountSource(autotune::ChoiceSource::kForced), 1);
  int kernels = 0, gemms = 0;
  for (const GpuThunk* t : c->entry.Flatten()) {
    if (dynamic_cast<const KernelThunk*>(t)) ++kernels;
    if (const auto* g = dynamic_cast<const GemmThunk*>(t)) {
      ++gemms;
      ASSERT_TRUE(g->tuned().has_value()) << g->ToString();
      EXPECT_EQ(g->tuned()->backend, libs::GemmAlgorithm::Backend::kCublasLt);
      EXPECT_EQ(g->tuned()->opaque[7], 8u);
    }
  }
  EXPECT_EQ(gemms, 1) << c->ThunkListing();
  EXPECT_EQ(kernels, 1) << c->ThunkListing();
  // The compiled module: the GEMM call computes f32 without an epilogue, a fusion the rest.
  int calls = 0;
  for (const HloInstruction* i : c->module->entry_computation()->instructions()) {
    if (!IsGemmCall(*i)) continue;
    ++calls;
    EXPECT_EQ(i->operand_count(), 2) << i->ToString();
    KILN_ASSERT_OK_AND_ASSIGN(GemmConfig g, GetGemmConfig(*i));
    EXPECT_FALSE(g.has_bias);
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(c->module->entry_computation()->root_instruction()->opcode(), HloOpcode::kFusion);

  // Without the forced choice the epilogue stays in the call: one GEMM thunk, no kernel.
  GpuCompileOptions plain;
  plain.compile_threads = 2;
  KILN_ASSERT_OK_AND_ASSIGN(auto u, GpuCompiler::Compile(ParseOrDie(kMlp), plain));
  int untuned_kernels = 0;
  for (const GpuThunk* t : u->entry.Flatten()) untuned_kernels += dynamic_cast<const KernelThunk*>(t) != nullptr;
  EXPECT_EQ(untuned_kernels, 0) << u->ThunkListing();
}

}  // namespace
}  // namespace kiln::cuda
