// The collective thunks (collective_thunks.h). Everywhere (label cpu): which collectives the
// emitter puts on NCCL (none on the host), and the NCCL loader's message without the library.
// On a GPU (label gpu, skipped without one): every op, its -start/-done and async-start forms
// over one participant against the evaluator, through a 1-rank NCCL communicator (the real
// NCCL path; skipped without libnccl) and alone without NCCL (copies), eagerly and replayed
// as a CUDA graph.
#include "kiln/cuda/compiler/collective_thunks.h"

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/gpu_executable.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/cuda/nccl_api.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/passes/send_recv_ordering.h"

namespace kiln::cuda {
namespace {

constexpr const char* kSum = R"(HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
smax {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] maximum(a, b)
}
pand {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT s = pred[] and(a, b)
}
odd {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  m = f32[] multiply(a, two)
  ROOT c = f32[] add(m, b)
}
cmul {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT c = c64[] multiply(a, b)
}
s16sum {
  a = s16[] parameter(0)
  b = s16[] parameter(1)
  ROOT c = s16[] add(a, b)
}
rs_body {
  p = f32[4,6] parameter(0)
  ROOT rs = f32[4,6] reduce-scatter(p), dimensions={1}, replica_groups={}, to_apply=sum
}
)";

struct Case {
  const char* name;
  const char* entry;
};

const Case kCases[] = {
    {"all_reduce", R"(ENTRY e {
  x = f32[64] parameter(0)
  y = s32[3,5] parameter(1)
  a = f32[64] all-reduce(x), replica_groups={}, to_apply=sum
  b = s32[3,5] all-reduce(y), replica_groups={{0}}, to_apply=smax
  ROOT t = (f32[64], s32[3,5]) tuple(a, b)
})"},
    {"all_reduce_tuple_pred", R"(ENTRY e {
  x = f32[16] parameter(0)
  y = f32[8] parameter(1)
  z = pred[8] parameter(2)
  a = (f32[16], f32[8]) all-reduce(x, y), replica_groups={}, to_apply=sum
  p = pred[8] all-reduce(z), replica_groups={}, to_apply=pand
  a0 = f32[16] get-tuple-element(a), index=0
  a1 = f32[8] get-tuple-element(a), index=1
  ROOT t = (f32[16], f32[8], pred[8]) tuple(a0, a1, p)
})"},
    {"async_forms", R"(ENTRY e {
  x = f32[4,6] parameter(0)
  ars = f32[4,6] all-reduce-start(x), replica_groups={}, to_apply=sum
  n = f32[4,6] negate(x)
  ard = f32[4,6] all-reduce-done(ars)
  ags = (f32[4,6], f32[4,6]) all-gather-start(ard), dimensions={0}, replica_groups={}
  agd = f32[4,6] all-gather-done(ags)
  cps = (f32[4,6], f32[4,6], u32[], u32[]) collective-permute-start(agd), source_target_pairs={{0,0}}
  cpd = f32[4,6] collective-permute-done(cps)
  as = ((f32[4,6]), f32[4,6], s32[]) async-start(n), calls=rs_body
  ad = f32[4,6] async-done(as)
  ROOT t = (f32[4,6], f32[4,6]) tuple(cpd, ad)
})"},
    {"minor_dimensions", R"(ENTRY e {
  x = f32[4,6] parameter(0)
  g = f32[4,6] all-gather(x), dimensions={1}, replica_groups={}
  r = f32[4,6] reduce-scatter(x), dimensions={1}, replica_groups={}, to_apply=sum
  a = f32[4,6] all-to-all(x), dimensions={1}, replica_groups={}
  ROOT t = (f32[4,6], f32[4,6], f32[4,6]) tuple(g, r, a)
})"},
    {"all_to_all_broadcast", R"(ENTRY e {
  x = f32[5] parameter(0)
  a = f32[5] all-to-all(x), dimensions={0}, replica_groups={}
  b = f32[5] collective-broadcast(x), replica_groups={}
  ROOT t = (f32[5], f32[5]) tuple(a, b)
})"},
    {"permute_ids", R"(ENTRY e {
  x = f32[7] parameter(0)
  p = f32[7] collective-permute(x), source_target_pairs={{0,0}}
  q = f32[7] collective-permute(x), source_target_pairs={}
  r = u32[] replica-id()
  s = u32[] partition-id()
  ROOT t = (f32[7], f32[7], u32[], u32[]) tuple(p, q, r, s)
})"},
    // Reductions NCCL lacks (Note [Reductions NCCL lacks]): gathered and combined on the device.
    {"device_reductions", R"(ENTRY e {
  x = f32[4,6] parameter(0)
  y = c64[5] parameter(1)
  z = s16[3,2] parameter(2)
  a = f32[4,6] all-reduce(x), replica_groups={}, to_apply=odd
  r = f32[4,6] reduce-scatter(x), dimensions={1}, replica_groups={}, to_apply=odd
  b = c64[5] all-reduce(y), replica_groups={}, to_apply=cmul
  c = s16[3,2] all-reduce(z), replica_groups={}, to_apply=s16sum
  ROOT t = (f32[4,6], f32[4,6], c64[5], s16[3,2]) tuple(a, r, b, c)
})"},
    // Note [Ragged all-to-all on NCCL]: rows 2..4 of x land at rows 4..6 of the output.
    {"ragged_all_to_all", R"(ENTRY e {
  x = f32[8,4] parameter(0)
  o = f32[8,4] parameter(1)
  io = s32[1] constant({2})
  ss = s32[1] constant({3})
  oo = s32[1] constant({4})
  rs = s32[1] constant({3})
  ROOT r = f32[8,4] ragged-all-to-all(x, o, io, ss, oo, rs), replica_groups={{0}}
})"},
    // Two channels' sends queued before either recv-done: each recv-done takes its own
    // channel's (Note [Send and recv on NCCL]).
    {"send_recv_two_channels", R"(ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] negate(x)
  tok = token[] after-all()
  sa = (f32[4], u32[], token[]) send(x, tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sb = (f32[4], u32[], token[]) send(y, tok), channel_id=2, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  ra = (f32[4], u32[], token[]) recv(tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  rb = (f32[4], u32[], token[]) recv(tok), channel_id=2, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  rdb = (f32[4], token[]) recv-done(rb), channel_id=2, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  rda = (f32[4], token[]) recv-done(ra), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sdda = token[] send-done(sa), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sddb = token[] send-done(sb), channel_id=2, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  a = f32[4] get-tuple-element(rda), index=0
  b = f32[4] get-tuple-element(rdb), index=0
  ROOT t = (f32[4], f32[4]) tuple(a, b)
})"},
    {"send_recv", R"(ENTRY e {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  rv = (f32[4], u32[], token[]) recv(tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  rd = (f32[4], token[]) recv-done(rv), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sd = (f32[4], u32[], token[]) send(x, tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sdd = token[] send-done(sd), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  ROOT g = f32[4] get-tuple-element(rd), index=0
})"},
};

// The module as the cuda backend compiles it: send -> recv-done -> send-done ordered
// (passes/send_recv_ordering.h), as in the pipeline (cuda_backend.cc).
StatusOr<std::unique_ptr<HloModule>> ParseForPipeline(const std::string& text) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> m, ParseHloModule(text));
  KILN_RETURN_IF_ERROR(OrderSendsBeforeRecvDones(*m).status());
  return m;
}

StatusOr<std::unique_ptr<CompiledGpuModule>> CompileForPreset(const std::string& text) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> m, ParseForPipeline(text));
  GpuCompileOptions o;
  KILN_ASSIGN_OR_RETURN(o.device, codegen::DeviceSpec::FromPreset("sm_90"));
  return GpuCompiler::Compile(std::move(m), o);
}

TEST(CollectiveThunks, EveryCaseCompilesToNcclThunksWithoutHostFallbacks) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto compiled = CompileForPreset(StrCat(kSum, c.entry));
    if (!compiled.ok() && compiled.status().message().find("nvrtc") != std::string::npos)
      GTEST_SKIP() << "no NVRTC: " << compiled.status().ToString();
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    EXPECT_TRUE((*compiled)->stats.host_fallbacks.empty()) << (*compiled)->ThunkListing();
    EXPECT_NE((*compiled)->ThunkListing().find("collective %"), std::string::npos) << (*compiled)->ThunkListing();
  }
}

TEST(CollectiveThunks, AnotherReductionCombinesOnTheDevice) {
  auto compiled = CompileForPreset(R"(HloModule m
odd {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  ROOT t = f32[] multiply(s, b)
}
ENTRY e {
  x = f32[8] parameter(0)
  ROOT a = f32[8] all-reduce(x), replica_groups={}, to_apply=odd
})");
  if (!compiled.ok() && compiled.status().message().find("nvrtc") != std::string::npos) GTEST_SKIP();
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_TRUE((*compiled)->stats.host_fallbacks.empty()) << (*compiled)->ThunkListing();
  EXPECT_NE((*compiled)->ThunkListing().find("combine odd on the device"), std::string::npos) << (*compiled)->ThunkListing();
}

TEST(CollectiveThunks, MissingNcclIsAClearError) {
  auto api = NcclApi::Load("/nonexistent/libnccl.so.2");
  ASSERT_FALSE(api.ok());
  EXPECT_NE(api.status().message().find("NCCL not found"), std::string::npos) << api.status().ToString();
}

CudaDevice* TheDevice() {
  static runtime::Platform* platform = [] {
    auto p = CreateCudaPlatform();
    return p.ok() ? p->release() : nullptr;
  }();
  if (!platform || platform->device_count() == 0) return nullptr;
  auto d = platform->GetDevice(0);
  return d.ok() ? static_cast<CudaDevice*>(*d) : nullptr;
}

// A 1-rank NCCL world on `device` (null without with_nccl); NotFound without libnccl.
StatusOr<std::shared_ptr<NcclWorld>> OneRankWorld(CudaDevice& device, bool with_nccl) {
  if (!with_nccl) return std::shared_ptr<NcclWorld>();
  auto api = NcclApi::Default();
  if (!api.ok()) return NotFound(api.status().ToString());
  return NcclWorld::CreateInProcess(*api, {&device});
}

// Runs every case on the device (twice: eager, then the CUDA graph) against the evaluator.
void RunCases(bool with_nccl) {
  CudaDevice* device = TheDevice();
  if (device == nullptr) GTEST_SKIP() << "no CUDA device";
  auto world = OneRankWorld(*device, with_nccl);
  if (!world.ok() && world.status().code() == StatusCode::kNotFound) GTEST_SKIP() << world.status().ToString();
  ASSERT_TRUE(world.ok()) << world.status().ToString();
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto m = ParseForPipeline(StrCat(kSum, c.entry));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::vector<Shape> shapes;
    for (const HloInstruction* p : (*m)->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
    std::vector<Literal> args = MakeRandomArguments(shapes, 7);
    auto expected = EvaluateModule(**m, args);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    GpuCompileOptions o;
    o.device = codegen::DeviceSpec::FromDescription(device->description());
    auto compiled = GpuCompiler::Compile(std::move(*m), o);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    auto exe = GpuExecutable::Create(std::move(*compiled), *device);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    EXPECT_TRUE((*exe)->has_collectives());
    auto participant = std::make_shared<GpuParticipant>();
    participant->world = *world;
    (*exe)->set_participant(participant);
    GpuRunOptions ro;
    ro.poison = true;
    for (int run = 0; run < 3; ++run) {
      auto got = (*exe)->Run(args, ro);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      CompareOptions co;
      co.backend_vs_evaluator = true;
      Comparison cmp = CompareLiterals(*got, *expected, co);
      EXPECT_TRUE(cmp.ok()) << "run " << run << ": " << cmp.ToString() << "\n" << (*exe)->compiled().ThunkListing();
    }
    EXPECT_TRUE((*exe)->graph_captured()) << c.name;
  }
}

TEST(CollectiveThunksGpu, OneRankNccl) { RunCases(true); }
TEST(CollectiveThunksGpu, AloneWithoutNccl) { RunCases(false); }

// A recv-done whose source is the participant itself, where the send of its channel comes only
// after it (the send needs the received value, so no ordering can help): a clean
// FailedPrecondition, never a hang on NCCL nor zeros.
void RunRecvBeforeItsSelfSend(bool with_nccl) {
  CudaDevice* device = TheDevice();
  if (device == nullptr) GTEST_SKIP() << "no CUDA device";
  auto world = OneRankWorld(*device, with_nccl);
  if (!world.ok() && world.status().code() == StatusCode::kNotFound) GTEST_SKIP() << world.status().ToString();
  ASSERT_TRUE(world.ok()) << world.status().ToString();
  auto m = ParseForPipeline(StrCat(kSum, R"(ENTRY e {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  rv = (f32[4], u32[], token[]) recv(tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  rd = (f32[4], token[]) recv-done(rv), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  v = f32[4] get-tuple-element(rd), index=0
  sd = (f32[4], u32[], token[]) send(v, tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sdd = token[] send-done(sd), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  ROOT r = f32[4] get-tuple-element(rd), index=0
})"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  GpuCompileOptions o;
  o.device = codegen::DeviceSpec::FromDescription(device->description());
  auto compiled = GpuCompiler::Compile(std::move(*m), o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  auto exe = GpuExecutable::Create(std::move(*compiled), *device);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto participant = std::make_shared<GpuParticipant>();
  participant->world = *world;
  (*exe)->set_participant(participant);
  std::vector<Literal> args = MakeRandomArguments({Shape::Array(PrimitiveType::kF32, {4})}, 7);
  auto got = (*exe)->Run(args, GpuRunOptions{});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition) << got.status().ToString();
  EXPECT_NE(got.status().message().find("no send of the channel came before it"), std::string::npos)
      << got.status().ToString();
}

TEST(CollectiveThunksGpu, RecvDoneBeforeItsSelfSendFailsWithNccl) { RunRecvBeforeItsSelfSend(true); }
TEST(CollectiveThunksGpu, RecvDoneBeforeItsSelfSendFailsAlone) { RunRecvBeforeItsSelfSend(false); }

}  // namespace
}  // namespace kiln::cuda
