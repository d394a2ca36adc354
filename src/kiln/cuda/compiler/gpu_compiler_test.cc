// The GPU compiler without a GPU: every bench-suite module and a sample of the conformance
// cases compile for sm_90 (kernels generated and compiled by NVRTC), with the structure the
// fusion and rewrite passes promise.
#include "kiln/cuda/compiler/gpu_compiler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/base/strings.h"
#include "kiln/hlo/parser.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

StatusOr<std::unique_ptr<CompiledGpuModule>> CompileText(const std::string& text) {
  ParseOptions po;
  po.fill_elided_constants = true;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> m, ParseHloModule(text, po));
  GpuCompileOptions o;
  o.compile_threads = 2;
  return GpuCompiler::Compile(std::move(m), o);
}

bool NvrtcPresent() { return NvrtcCompiler::Create({}).ok(); }

int64_t Count(const CompiledGpuModule& c, std::string_view kind) {
  auto it = c.stats.thunks_by_kind.find(std::string(kind));
  return it == c.stats.thunks_by_kind.end() ? 0 : it->second;
}

TEST(GpuCompilerTest, BenchSuiteStructure) {
  if (!NvrtcPresent()) GTEST_SKIP() << "no NVRTC";
  const char* shared = std::getenv("KILN_SHARED_DIR");
  if (!shared) GTEST_SKIP() << "no KILN_SHARED_DIR";
  struct Want {
    const char* name;
    int64_t kernels, gemms, convs;  // -1: don't care
  };
  // softmax and layernorm: one normalization kernel; the GEMM workloads: no kernel at all
  // (epilogues in cuBLASLt) except mlp_bf16, whose bf16 bias adds stay outside the GEMMs (the
  // HLO rounds the product first: gemm_rewriter.h) -- one bias+GELU kernel, one bias kernel;
  // the residual block: cuDNN convolutions with fused epilogues.
  for (const Want& w : {Want{"softmax_f32", 1, 0, 0}, Want{"layernorm_f32", 1, 0, 0}, Want{"gemm_bf16", 0, 1, 0},
                        Want{"gemm_f32", 0, 1, 0}, Want{"mlp_bf16", 2, 2, 0}, Want{"resblock_f32", -1, 0, 2},
                        Want{"resblock_bf16", -1, 0, 2}, Want{"transformer_bf16", -1, -1, 0},
                        Want{"mlp_train_f32", -1, 5, 0}}) {
    SCOPED_TRACE(w.name);
    auto c = CompileText(Read(fs::path(shared) / "bench" / "suite" / w.name / "module.hlo"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE((*c)->stats.host_fallbacks.empty()) << (*c)->stats.ToString();
    if (w.kernels >= 0) {
      EXPECT_EQ(Count(**c, "kernel"), w.kernels) << (*c)->ThunkListing();
    }
    if (w.gemms >= 0) {
      EXPECT_EQ(Count(**c, "gemm"), w.gemms) << (*c)->ThunkListing();
    }
    if (w.convs >= 0) {
      EXPECT_EQ(Count(**c, "conv"), w.convs) << (*c)->ThunkListing();
    }
    EXPECT_EQ((*c)->stats.kernels, Count(**c, "kernel"));
  }
}

// A sample of the conformance cases: all compile; those of the families the device covers
// need no host fallback.
TEST(GpuCompilerTest, ConformanceCasesCompile) {
  if (!NvrtcPresent()) GTEST_SKIP() << "no NVRTC";
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (!src) GTEST_SKIP() << "no KILN_SOURCE_DIR";
  int compiled = 0, n = 0;
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(fs::path(src) / "tests" / "data")) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("_") || !fs::is_directory(e.path())) continue;
    cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  for (const fs::path& p : cases) {
    if (n++ % 40 != 0) continue;  // a sample: the whole list is the differential suite's job
    const std::string name = p.filename().string();
    SCOPED_TRACE(name);
    auto c = CompileText(Read(p / "module.hlo"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    ++compiled;
    const bool device_family = name.starts_with("ew_") || name.starts_with("red_sum") || name.starts_with("nn_softmax") ||
                               name.starts_with("nn_layernorm") || name.starts_with("dot_mm_f32") ||
                               name.starts_with("dot_mm_bf16");
    if (device_family) {
      EXPECT_TRUE((*c)->stats.host_fallbacks.empty()) << (*c)->stats.ToString();
    }
  }
  EXPECT_GT(compiled, 15);
}

TEST(GpuCompilerTest, KernelDumps) {
  if (!NvrtcPresent()) GTEST_SKIP() << "no NVRTC";
  const char* text = R"(HloModule m
ENTRY e {
  x = f32[128,256] parameter(0)
  y = f32[128,256] exponential(x)
  ROOT z = f32[256,128] transpose(y), dimensions={1,0}
})";
  ParseOptions po;
  auto m = ParseHloModule(text, po);
  ASSERT_TRUE(m.ok());
  GpuCompileOptions o;
  o.kernel_dump_dir = (fs::temp_directory_path() / "kiln_gpu_compiler_test_dump").string();
  fs::remove_all(o.kernel_dump_dir);
  auto c = GpuCompiler::Compile(std::move(*m), o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->stats.kernels, 1);
  EXPECT_TRUE(fs::exists(fs::path(o.kernel_dump_dir) / "kernels.txt"));
  fs::remove_all(o.kernel_dump_dir);
}

// Dots and convolutions the vendor libraries do not take -- integer (s32, u8 -> u32, pred,
// s16 with a middle batch dimension), grouped / dilated / reversed / batch-grouped integer
// convolutions, a c64 convolution -- are generated loop kernels (elemental_contraction.cc), not
// host fallbacks; the s8 -> s32 GEMM stays on cuBLASLt.
const char* kContractions = R"(HloModule contractions
ENTRY e {
  a = s32[33,20] parameter(0)
  b = s32[20,17] parameter(1)
  d0 = s32[33,17] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ua = u8[4,16,40] parameter(2)
  ub = u8[4,40,8] parameter(3)
  d1 = u32[4,16,8] dot(ua, ub), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  pa = pred[12,30] parameter(4)
  pb = pred[30,5] parameter(5)
  d2 = pred[12,5] dot(pa, pb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sa = s16[6,9,5] parameter(6)
  sb = s16[5,9,7] parameter(7)
  d3 = s16[9,6,7] dot(sa, sb), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  x = s8[2,12,12,6] parameter(8)
  k = s8[3,3,2,9] parameter(9)
  c0 = s32[2,6,12,9] convolution(x, k), window={size=3x3 stride=2x1 pad=1_1x2_2 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f, feature_group_count=3
  cx = c64[1,7,7,2] parameter(10)
  ck = c64[3,3,2,3] parameter(11)
  c1 = c64[1,7,7,3] convolution(cx, ck), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ix = s32[4,3,9,9] parameter(12)
  ik = s32[4,3,2,2] parameter(13)
  c2 = s32[2,4,10,10] convolution(ix, ik), window={size=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01, batch_group_count=2
  ROOT t = (s32[33,17], u32[4,16,8], pred[12,5], s16[9,6,7], s32[2,6,12,9], c64[1,7,7,3], s32[2,4,10,10]) tuple(d0, d1, d2, d3, c0, c1, c2)
})";

TEST(GpuCompilerTest, IntegerAndComplexContractionsAreKernels) {
  if (!NvrtcPresent()) GTEST_SKIP() << "no NVRTC";
  auto c = CompileText(kContractions);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE((*c)->stats.host_fallbacks.empty()) << (*c)->stats.ToString();
  EXPECT_EQ(Count(**c, "host"), 0) << (*c)->ThunkListing();
  EXPECT_GE(Count(**c, "kernel"), 7) << (*c)->ThunkListing();
  auto g = CompileText(R"(HloModule i8
ENTRY e {
  a = s8[64,128] parameter(0)
  b = s8[128,32] parameter(1)
  ROOT d = s32[64,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(Count(**g, "gemm"), 1) << (*g)->ThunkListing();
}

// Sorts whose comparator is not a single-key order -- lexicographic over two and three keys
// (masked integer keys: many ties), complex numbers, NaNs in total order with a tie-breaker,
// rows of 1 and of 5000 elements, a non-minor dimension -- are generated comparison-sort
// kernels (codegen/emit_sort.cc), not host fallbacks; single-key sorts keep the library sort.
const char* kMultiKeySorts = R"(HloModule sorts
lex2 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  p = s32[] parameter(4)
  q = s32[] parameter(5)
  m = s32[] constant(7)
  am = s32[] and(a, m)
  bm = s32[] and(b, m)
  lt0 = pred[] compare(am, bm), direction=LT
  eq0 = pred[] compare(am, bm), direction=EQ
  lt1 = pred[] compare(c, d), direction=LT, type=TOTALORDER
  e = pred[] and(eq0, lt1)
  ROOT r = pred[] or(lt0, e)
}
lex3 {
  a = u8[] parameter(0)
  b = u8[] parameter(1)
  c = s16[] parameter(2)
  d = s16[] parameter(3)
  x = s32[] parameter(4)
  y = s32[] parameter(5)
  m1 = u8[] constant(1)
  a1 = u8[] and(a, m1)
  b1 = u8[] and(b, m1)
  m2 = s16[] constant(3)
  c2 = s16[] and(c, m2)
  d2 = s16[] and(d, m2)
  lt0 = pred[] compare(a1, b1), direction=GT
  eq0 = pred[] compare(a1, b1), direction=EQ
  lt1 = pred[] compare(c2, d2), direction=LT
  eq1 = pred[] compare(c2, d2), direction=EQ
  lt2 = pred[] compare(x, y), direction=LT
  e1 = pred[] and(eq1, lt2)
  o1 = pred[] or(lt1, e1)
  e0 = pred[] and(eq0, o1)
  ROOT r = pred[] or(lt0, e0)
}
cplx {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ra = f32[] real(a)
  rb = f32[] real(b)
  ia = f32[] imag(a)
  ib = f32[] imag(b)
  lt = pred[] compare(ra, rb), direction=LT, type=TOTALORDER
  eq = pred[] compare(ra, rb), direction=EQ, type=TOTALORDER
  lti = pred[] compare(ia, ib), direction=LT, type=TOTALORDER
  e = pred[] and(eq, lti)
  ROOT r = pred[] or(lt, e)
}
nan2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[] compare(a, b), direction=EQ, type=TOTALORDER
  gt = pred[] compare(i, j), direction=GT
  e = pred[] and(eq, gt)
  ROOT r = pred[] or(lt, e)
}
ENTRY e {
  k0 = s32[6,37] parameter(0)
  k1 = f32[6,37] parameter(1)
  i0 = s32[6,37] iota(), iota_dimension=1
  s0 = (s32[6,37], f32[6,37], s32[6,37]) sort(k0, k1, i0), dimensions={1}, is_stable=true, to_apply=lex2
  u = u8[3,5000] parameter(2)
  v = s16[3,5000] parameter(3)
  i1 = s32[3,5000] iota(), iota_dimension=1
  s1 = (u8[3,5000], s16[3,5000], s32[3,5000]) sort(u, v, i1), dimensions={1}, to_apply=lex3
  w = u8[9,1] parameter(4)
  z = s16[9,1] parameter(5)
  i2 = s32[9,1] iota(), iota_dimension=0
  s2 = (u8[9,1], s16[9,1], s32[9,1]) sort(w, z, i2), dimensions={1}, is_stable=true, to_apply=lex3
  c = c64[4,129] parameter(6)
  s3 = c64[4,129] sort(c), dimensions={1}, to_apply=cplx
  n = f32[1,12] constant({{nan, 1, -0, 0, -inf, inf, -nan, 1, -1, 0, nan, -0}})
  i3 = s32[1,12] iota(), iota_dimension=1
  s4 = (f32[1,12], s32[1,12]) sort(n, i3), dimensions={1}, to_apply=nan2
  t0 = s32[40,7] parameter(7)
  t1 = f32[40,7] parameter(8)
  i4 = s32[40,7] iota(), iota_dimension=0
  s5 = (s32[40,7], f32[40,7], s32[40,7]) sort(t0, t1, i4), dimensions={0}, is_stable=true, to_apply=lex2
  ROOT t = ((s32[6,37], f32[6,37], s32[6,37]), (u8[3,5000], s16[3,5000], s32[3,5000]), (u8[9,1], s16[9,1], s32[9,1]), c64[4,129], (f32[1,12], s32[1,12]), (s32[40,7], f32[40,7], s32[40,7])) tuple(s0, s1, s2, s3, s4, s5)
})";

TEST(GpuCompilerTest, MultiKeySortsAreKernels) {
  if (!NvrtcPresent()) GTEST_SKIP() << "no NVRTC";
  auto c = CompileText(kMultiKeySorts);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE((*c)->stats.host_fallbacks.empty()) << (*c)->stats.ToString();
  EXPECT_EQ(Count(**c, "host"), 0) << (*c)->ThunkListing();
  EXPECT_EQ(Count(**c, "sort"), 0) << (*c)->ThunkListing();
  EXPECT_NE((*c)->ThunkListing().find(" sort b"), std::string::npos) << (*c)->ThunkListing();
}

// Sorts along non-minor dimensions (rank 2 along 0, rank 3 along 1, variadic argsort) become
// device sort thunks between transposes (sort_dimension_rewriter.h), none on the host.
TEST(GpuCompilerTest, NonMinorSortsBecomeDeviceSorts) {
  if (!NvrtcPresent()) GTEST_SKIP() << "no NVRTC";
  auto c = CompileText(R"(HloModule s
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
lt1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT l = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  x = f32[300,7] parameter(0)
  i0 = s32[300,7] iota(), iota_dimension=0
  s0 = (f32[300,7], s32[300,7]) sort(x, i0), dimensions={0}, is_stable=true, to_apply=lt
  z = f32[6,40,5] parameter(1)
  s1 = f32[6,40,5] sort(z), dimensions={1}, to_apply=lt1
  ROOT t = ((f32[300,7], s32[300,7]), f32[6,40,5]) tuple(s0, s1)
})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Count(**c, "sort"), 2) << (*c)->ThunkListing();
  EXPECT_EQ(Count(**c, "host"), 0) << (*c)->ThunkListing();
}

}  // namespace
}  // namespace kiln::cuda
