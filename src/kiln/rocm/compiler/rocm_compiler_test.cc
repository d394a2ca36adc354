// The deviceless ROCm compile: modules to code objects for gfx942 (clang) and gfx90a (hipRTC),
// library-call thunks for dots and convolutions, collective thunks on RCCL (and the combine
// kernel of a reduction RCCL lacks, compiled for gfx942), the dump directory, and the refusals
// (infeed, host transfers, custom calls without host fallback, unsupported targets). Skipped
// where no HIP compiler exists.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kiln/base/strings.h"
#include "kiln/hlo/parser.h"
#include "kiln/rocm/code_object.h"
#include "kiln/rocm/compiler/rocm_compiler.h"
#include "kiln/rocm/compiler/rocm_executor.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::rocm {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModule = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

cond {
  p = (s32[], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[64,64] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[64,64] tanh(x)
  ROOT t = (s32[], f32[64,64]) tuple(j, y)
}

ENTRY e {
  a = f32[64,128] parameter(0)
  b = f32[128,64] parameter(1)
  img = f32[1,8,8,4] parameter(2)
  k = f32[3,3,4,8] parameter(3)
  d = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[64,64] exponential(d)
  zero = f32[] constant(0)
  r = f32[64] reduce(e, zero), dimensions={1}, to_apply=add
  rb = f32[64,64] broadcast(r), dimensions={0}
  sm = f32[64,64] divide(e, rb)
  c = f32[1,8,8,8] convolution(img, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  i0 = s32[] constant(0)
  t0 = (s32[], f32[64,64]) tuple(i0, sm)
  w = (s32[], f32[64,64]) while(t0), condition=cond, body=body
  out = f32[64,64] get-tuple-element(w), index=1
  ROOT t = (f32[64,64], f32[1,8,8,8]) tuple(out, c)
}
)";

bool Can(const std::string& arch, HsacoPath path, std::string* why) {
  StatusOr<std::unique_ptr<HsacoCompiler>> c = HsacoCompiler::Create({});
  if (!c.ok()) {
    *why = c.status().message();
    return false;
  }
  StatusOr<HsacoPath> p = (*c)->ChoosePath(arch, path);
  if (!p.ok()) *why = p.status().message();
  return p.ok();
}

TEST(RocmCompiler, ModuleToGfx942CodeObjectsAndLibraryCalls) {
  std::string why;
  if (!Can("gfx942", HsacoPath::kClang, &why)) GTEST_SKIP() << why;
  const fs::path dump = fs::temp_directory_path() / ("kiln_rocm_compiler_test_" + std::to_string(::getpid()));
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> m, ParseHloModule(kModule));
  RocmCompileOptions o;
  KILN_ASSERT_OK_AND_ASSIGN(o.device, codegen::DeviceSpec::FromPreset("mi300x"));
  o.path = HsacoPath::kClang;
  o.hsaco.use_cache = false;
  o.kernel_dump_dir = dump.string();
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocmCompiledModule> c, RocmCompiler::Compile(std::move(m), o));
  ASSERT_EQ(c->code_objects.size(), 1u);
  KILN_ASSERT_OK_AND_ASSIGN(CodeObjectInfo info, InspectCodeObject(c->code_objects[0].image));
  EXPECT_EQ(info.gfx_arch, "gfx942");
  EXPECT_GE(c->kernels.size(), 2u);  // the softmax and the loop body's tanh at least
  for (const codegen::KernelSpec& k : c->kernels)
    for (const std::string& e : k.Entries()) EXPECT_NE(info.Find(e), nullptr) << e;
  // Every kernel's launches were planned from its metadata (Note [CDNA occupancy]).
  ASSERT_EQ(c->kernel_occupancy.size(), c->kernels.size());
  for (const KernelOccupancy& occ : c->kernel_occupancy) {
    EXPECT_GE(occ.waves_per_simd, 1);
    EXPECT_LE(occ.waves_per_simd, 8);
    EXPECT_FALSE(occ.limiter.empty());
  }
  EXPECT_GE(c->stats.min_waves_per_simd, 1);
  EXPECT_NE(c->stats.ToString().find("occupancy: lowest"), std::string::npos) << c->stats.ToString();
  EXPECT_EQ(c->stats.thunks_by_kind["gemm"], 1);
  EXPECT_EQ(c->stats.thunks_by_kind["convolution"], 1);
  EXPECT_EQ(c->stats.thunks_by_kind["while"], 1);
  const std::string listing = c->ThunkListing();
  EXPECT_NE(listing.find("rocblas_gemm_ex f32 x f32 -> f32, batch 1, m 64, n 64, k 128"), std::string::npos) << listing;
  EXPECT_NE(listing.find("miopenConvolutionForward"), std::string::npos) << listing;
  // The dump: sources, the code object (an AMDGPU ELF for gfx942), its metadata.
  EXPECT_TRUE(fs::exists(dump / "kernels.txt"));
  EXPECT_TRUE(fs::exists(dump / "code_objects.txt"));
  std::ifstream f(dump / ("m.0.gfx942.hsaco"), std::ios::binary);
  std::string image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  KILN_ASSERT_OK_AND_ASSIGN(CodeObjectInfo dumped, InspectCodeObject(image));
  EXPECT_EQ(dumped.gfx_arch, "gfx942");
  fs::remove_all(dump);
}

TEST(RocmCompiler, Gfx90aWithHiprtc) {
  std::string why;
  if (!Can("gfx90a", HsacoPath::kHiprtc, &why)) GTEST_SKIP() << why;
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> m, ParseHloModule(kModule));
  RocmCompileOptions o;
  KILN_ASSERT_OK_AND_ASSIGN(o.device, codegen::DeviceSpec::FromPreset("mi250x"));
  o.path = HsacoPath::kHiprtc;
  o.hsaco.use_cache = false;
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocmCompiledModule> c, RocmCompiler::Compile(std::move(m), o));
  KILN_ASSERT_OK_AND_ASSIGN(CodeObjectInfo info, InspectCodeObject(c->code_objects.at(0).image));
  EXPECT_EQ(info.gfx_arch, "gfx90a");
  EXPECT_NE(c->stats.compiler.find("hiprtc"), std::string::npos) << c->stats.compiler;
}

// Every collective the NCCL API does becomes a collective thunk on RCCL (Note [Collectives on
// RCCL] in rocm_compiler.cc); a reduction RCCL lacks (s16, a custom reducer) is a gather plus a
// combine kernel compiled for gfx942; the -done forms wait for their starts.
constexpr const char* kCollectives = R"(HloModule m, replica_count=4

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

s16sum {
  a = s16[] parameter(0)
  b = s16[] parameter(1)
  ROOT c = s16[] add(a, b)
}

odd {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  m = f32[] multiply(a, two)
  ROOT c = f32[] add(m, b)
}

ENTRY e {
  x = f32[64,32] parameter(0)
  y = s16[256] parameter(1)
  ar = f32[64,32] all-reduce(x), replica_groups={{0,1},{2,3}}, to_apply=sum
  ag = f32[256,32] all-gather(x), dimensions={0}, replica_groups={}
  rs = f32[16,32] reduce-scatter(x), dimensions={0}, replica_groups={}, to_apply=sum
  cp = f32[64,32] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  a2a = f32[64,32] all-to-all(x), dimensions={0}, replica_groups={}
  cb = f32[64,32] collective-broadcast(x), replica_groups={}
  odd = f32[64,32] all-reduce(x), replica_groups={}, to_apply=odd
  s16 = s16[256] all-reduce(y), replica_groups={}, to_apply=s16sum
  ars = f32[64,32] all-reduce-start(x), replica_groups={}, to_apply=sum
  ard = f32[64,32] all-reduce-done(ars)
  rid = u32[] replica-id()
  pid = u32[] partition-id()
  ROOT t = (f32[64,32], f32[256,32], f32[16,32], f32[64,32], f32[64,32], f32[64,32], f32[64,32], s16[256],
            f32[64,32], u32[], u32[]) tuple(ar, ag, rs, cp, a2a, cb, odd, s16, ard, rid, pid)
}
)";

TEST(RocmCompiler, CollectivesOnRccl) {
  std::string why;
  if (!Can("gfx942", HsacoPath::kClang, &why)) GTEST_SKIP() << why;
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> m, ParseHloModule(kCollectives));
  RocmCompileOptions o;
  KILN_ASSERT_OK_AND_ASSIGN(o.device, codegen::DeviceSpec::FromPreset("gfx942"));
  o.path = HsacoPath::kClang;
  o.hsaco.use_cache = false;
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocmCompiledModule> c, RocmCompiler::Compile(std::move(m), o));
  const std::string listing = c->ThunkListing();
  EXPECT_EQ(c->stats.thunks_by_kind["collective"], 11) << listing;
  EXPECT_EQ(c->stats.thunks_by_kind["collective-done"], 1) << listing;
  EXPECT_EQ(c->stats.thunks_by_kind.count("host"), 0u) << listing;
  for (const char* want : {
           "collective %ar [e]: rccl ncclAllReduce sum f32[64,32] -> f32[64,32], groups of 2",
           "collective %ag [e]: rccl ncclAllGather f32[64,32] -> f32[256,32], groups of 4",
           "collective %rs [e]: rccl ncclReduceScatter sum f32[64,32] -> f32[16,32], groups of 4",
           "collective %cp [e]: rccl ncclSend / ncclRecv in one group f32[64,32] -> f32[64,32]\n",
           "collective %a2a [e]: rccl ncclAllToAll f32[64,32]",
           "collective %cb [e]: rccl ncclBroadcast from the group's first member",
           "collective %ars [e]: rccl ncclAllReduce sum f32[64,32] -> f32[64,32], groups of 4, async",
           "collective-done %ard [e]: waits for %ars",
           "collective %rid [e]: rccl the participant's id",
           "collective %pid [e]: rccl the participant's id",
       })
    EXPECT_NE(listing.find(want), std::string::npos) << want << "\n" << listing;
  // The two reductions RCCL lacks: gathered, then combined by kernels of their own code objects.
  int combined = 0;
  for (const RocmThunk& t : c->thunks) {
    if (t.instruction != "odd" && t.instruction != "s16") {
      EXPECT_EQ(t.code_object, -1) << t.instruction;
      continue;
    }
    ++combined;
    EXPECT_NE(t.detail.find("ncclAllGather of every member's operand + kiln_combine_N"), std::string::npos) << t.detail;
    EXPECT_NE(t.detail.find("kernels kiln_combine_0 in code object"), std::string::npos) << t.detail;
    ASSERT_GE(t.code_object, 0);
    ASSERT_LT(t.code_object, static_cast<int>(c->code_objects.size()));
    const CompiledHsaco& co = c->code_objects[t.code_object];
    EXPECT_TRUE(co.log.empty()) << co.log;
    KILN_ASSERT_OK_AND_ASSIGN(CodeObjectInfo info, InspectCodeObject(co.image));
    EXPECT_EQ(info.gfx_arch, "gfx942");
    ASSERT_NE(info.Find("kiln_combine_0"), nullptr) << info.ToString();
    EXPECT_EQ(info.Find("kiln_combine_0")->wavefront_size, 64);
  }
  EXPECT_EQ(combined, 2);
}

// The executor's plan (Note [ROCm executor]; nothing runs): every step's slices resolved, the
// library calls listed as not implemented, and a module of kernels, a loop, a host fallback and
// one-participant collectives fully planned.
TEST(RocmExecutor, PlansWithoutADevice) {
  std::string why;
  if (!Can("gfx942", HsacoPath::kClang, &why)) GTEST_SKIP() << why;
  RocmCompileOptions o;
  KILN_ASSERT_OK_AND_ASSIGN(o.device, codegen::DeviceSpec::FromPreset("gfx942"));
  o.path = HsacoPath::kClang;
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> m, ParseHloModule(kModule));
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocmCompiledModule> c, RocmCompiler::Compile(std::move(m), o));
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocmExecutor> e, RocmExecutor::Create(*c));
  ASSERT_EQ(e->unsupported().size(), 1u) << e->PlanListing();
  EXPECT_EQ(e->unsupported()[0], "convolution %c: MIOpen calls are not implemented");
  const std::string plan = e->PlanListing();
  // The dot as a row-major rocBLAS GEMM (M 64, N 64, K 128).
  EXPECT_NE(plan.find("d [e]: rocblas gemm batch 1 m 64 n 64 k 128, solution 0, a"), std::string::npos) << plan;
  EXPECT_NE(plan.find("while cond / body, predicate a"), std::string::npos) << plan;
  EXPECT_NE(plan.find(": kernel 0 (code object 0), args a"), std::string::npos) << plan;

  KILN_ASSERT_OK_AND_ASSIGN(m, ParseHloModule(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[64] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[64] all-reduce(x), replica_groups={}, to_apply=add
  z = f32[64] tanh(y)
  ROOT t = (s32[], f32[64]) tuple(j, z)
}
ENTRY e {
  x = f32[64] parameter(0)
  h = f32[64] custom-call(x), custom_call_target="foo"
  i0 = s32[] constant(0)
  t0 = (s32[], f32[64]) tuple(i0, h)
  w = (s32[], f32[64]) while(t0), condition=cond, body=body
  r = u32[] replica-id()
  out = f32[64] get-tuple-element(w), index=1
  ROOT t = (f32[64], u32[]) tuple(out, r)
}
)"));
  KILN_ASSERT_OK_AND_ASSIGN(c, RocmCompiler::Compile(std::move(m), o));
  KILN_ASSERT_OK_AND_ASSIGN(e, RocmExecutor::Create(*c));
  EXPECT_TRUE(e->unsupported().empty()) << StrJoin(e->unsupported(), "\n");
  const std::string plan2 = e->PlanListing();
  for (const char* want : {"h [e]: host evaluator", "w [e]: while cond / body", "r [e]: zeros into 1 leaves",
                           "y [body]: alone: "})
    EXPECT_NE(plan2.find(want), std::string::npos) << want << "\n" << plan2;
}

TEST(RocmCompiler, RefusesWhatItCannotCompile) {
  KILN_ASSERT_OK_AND_ASSIGN(codegen::DeviceSpec device, codegen::DeviceSpec::FromPreset("gfx942"));
  struct Case {
    const char* hlo;
    const char* message;
    bool allow_host_fallback = true;
  } cases[] = {
      {"HloModule m\nENTRY e {\n  t = token[] after-all()\n  ROOT i = ((f32[4]), token[]) infeed(t)\n}\n",
       "(infeed) is not supported by the rocm backend"},
      {"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  t = token[] after-all()\n"
       "  s = (f32[4], u32[], token[]) send(x, t), channel_id=1, is_host_transfer=true\n"
       "  ROOT d = token[] send-done(s), channel_id=1, is_host_transfer=true\n}\n",
       "a host transfer"},
      {"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] custom-call(x), custom_call_target=\"foo\"\n}\n",
       "custom-call %y (target \"foo\") has no ROCm implementation", false},
  };
  for (const Case& c : cases) {
    KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> m, ParseHloModule(c.hlo));
    RocmCompileOptions o;
    o.device = device;
    o.allow_host_fallback = c.allow_host_fallback;
    StatusOr<std::unique_ptr<RocmCompiledModule>> out = RocmCompiler::Compile(std::move(m), o);
    ASSERT_FALSE(out.ok()) << c.hlo;
    EXPECT_EQ(out.status().code(), StatusCode::kUnimplemented) << out.status().ToString();
    EXPECT_NE(out.status().message().find(c.message), std::string::npos) << out.status().ToString();
  }
  // An architecture no compiler here knows: InvalidArgument before any pass.
  runtime::DeviceDescription d;
  d.platform = "rocm";
  d.gpu_arch = "gfx9999";
  RocmCompileOptions o;
  o.device = codegen::DeviceSpec::FromDescription(d);
  EXPECT_EQ(o.device.arch(), "gfx9999");
  KILN_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HloModule> m, ParseHloModule(kModule));
  StatusOr<std::unique_ptr<RocmCompiledModule>> out = RocmCompiler::Compile(std::move(m), o);
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << out.status().ToString();
  EXPECT_NE(out.status().message().find("gfx9999"), std::string::npos) << out.status().ToString();
}

}  // namespace
}  // namespace kiln::rocm
