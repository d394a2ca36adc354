// The GPU executable on a device, against the reference evaluator: generated kernels, GEMMs
// with epilogues, convolutions, control flow, sorts, host fallbacks, CUDA graph replay.
// Skips (visibly) without a CUDA device.
#include "kiln/cuda/compiler/gpu_executable.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/cuda/compiler/gpu_test_modules.h"

namespace kiln::cuda {
namespace {

CudaDevice* TheDevice() {
  static runtime::Platform* platform = [] {
    auto p = CreateCudaPlatform();
    return p.ok() ? p->release() : nullptr;
  }();
  if (!platform || platform->device_count() == 0) return nullptr;
  auto d = platform->GetDevice(0);
  return d.ok() ? static_cast<CudaDevice*>(*d) : nullptr;
}

#define REQUIRE_DEVICE()                                      \
  CudaDevice* device = TheDevice();                           \
  if (!device) GTEST_SKIP() << "no CUDA device";

struct Result {
  Literal actual, expected;
  std::unique_ptr<GpuExecutable> exe;
};

// Compiles and runs `text` (twice when `runs` is 2: the second run replays the graph) on seeded
// random inputs; returns both results.
Result RunBoth(const std::string& text, int runs = 1, uint64_t seed = 3, GpuExecutableOptions eo = {}) {
  Result r;
  CudaDevice* device = TheDevice();
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return r;
  std::vector<Shape> shapes;
  for (const HloInstruction* p : (*m)->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
  std::vector<Literal> args = MakeRandomArguments(shapes, seed);
  auto expected = EvaluateModule(**m, args);
  EXPECT_TRUE(expected.ok()) << expected.status().ToString();
  GpuCompileOptions o;
  o.device = codegen::DeviceSpec::FromDescription(device->description());
  auto compiled = GpuCompiler::Compile(std::move(*m), o);
  EXPECT_TRUE(compiled.ok()) << compiled.status().ToString();
  if (!compiled.ok() || !expected.ok()) return r;
  auto exe = GpuExecutable::Create(std::move(*compiled), *device, eo);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return r;
  GpuRunOptions ro;
  ro.poison = true;
  for (int i = 0; i < runs; ++i) {
    auto got = (*exe)->Run(args, ro);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok()) return r;
    r.actual = std::move(*got);
  }
  r.expected = std::move(*expected);
  r.exe = std::move(*exe);
  return r;
}

void ExpectClose(const Result& r, bool tf32 = false) {
  if (!r.exe) return;
  CompareOptions co;
  co.backend_vs_evaluator = true;
  co.reference_tf32 = tf32;
  Comparison c = CompareLiterals(r.actual, r.expected, co);
  EXPECT_TRUE(c.ok()) << c.ToString() << "\n" << r.exe->compiled().ThunkListing();
}

TEST(GpuExecutableTest, SoftmaxIsOneKernelAndCorrect) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule softmax
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[300,1000] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[300] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  bm = f32[300,1000] broadcast(mx), dimensions={0}
  sub = f32[300,1000] subtract(x, bm)
  ex = f32[300,1000] exponential(sub)
  zero = f32[] constant(0)
  sm = f32[300] reduce(ex, zero), dimensions={1}, to_apply=add_f32
  bs = f32[300,1000] broadcast(sm), dimensions={0}
  ROOT out = f32[300,1000] divide(ex, bs)
})", 3);
  ExpectClose(r);
  ASSERT_TRUE(r.exe);
  EXPECT_EQ(r.exe->compiled().stats.kernels, 1);
  EXPECT_TRUE(r.exe->graph_captured());
}

TEST(GpuExecutableTest, GemmEpiloguesAndTransposedOperands) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule g
ENTRY e {
  x = f32[64,96] parameter(0)
  w = f32[80,96] parameter(1)
  b = f32[80] parameter(2)
  r = f32[64,80] parameter(3)
  d = f32[64,80] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}, operand_precision={highest,highest}
  bb = f32[64,80] broadcast(b), dimensions={1}
  a = f32[64,80] add(d, bb)
  a2 = f32[64,80] add(a, r)
  z = f32[] constant(0)
  zb = f32[64,80] broadcast(z), dimensions={}
  ROOT y = f32[64,80] maximum(a2, zb)
})", 2);
  ExpectClose(r);
  ASSERT_TRUE(r.exe);
  EXPECT_EQ(r.exe->compiled().stats.thunks_by_kind.count("kernel"), 0u) << r.exe->compiled().ThunkListing();
}

TEST(GpuExecutableTest, Bf16GeluMlp) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule mlp
ENTRY e {
  x = bf16[32,64] parameter(0)
  w = bf16[64,128] parameter(1)
  b = bf16[128] parameter(2)
  d = bf16[32,128] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = bf16[32,128] broadcast(b), dimensions={1}
  v = bf16[32,128] add(d, bb)
  v2 = bf16[32,128] multiply(v, v)
  v3 = bf16[32,128] multiply(v2, v)
  c1 = bf16[] constant(0.04468)
  c1b = bf16[32,128] broadcast(c1), dimensions={}
  t1 = bf16[32,128] multiply(v3, c1b)
  t2 = bf16[32,128] add(v, t1)
  c2 = bf16[] constant(0.7969)
  c2b = bf16[32,128] broadcast(c2), dimensions={}
  t3 = bf16[32,128] multiply(t2, c2b)
  th = bf16[32,128] tanh(t3)
  one = bf16[] constant(1)
  oneb = bf16[32,128] broadcast(one), dimensions={}
  t4 = bf16[32,128] add(th, oneb)
  half = bf16[] constant(0.5)
  halfb = bf16[32,128] broadcast(half), dimensions={}
  t5 = bf16[32,128] multiply(t4, halfb)
  ROOT g = bf16[32,128] multiply(v, t5)
})");
  ExpectClose(r);
}

TEST(GpuExecutableTest, ConvolutionWithBiasReluResidual) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule conv
ENTRY e {
  x = f32[2,10,10,8] parameter(0)
  w = f32[3,3,8,8] parameter(1)
  b = f32[8] parameter(2)
  c = f32[2,10,10,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, operand_precision={highest,highest}
  bb = f32[2,10,10,8] broadcast(b), dimensions={3}
  a = f32[2,10,10,8] add(c, bb)
  a2 = f32[2,10,10,8] add(a, x)
  z = f32[] constant(0)
  zb = f32[2,10,10,8] broadcast(z), dimensions={}
  ROOT y = f32[2,10,10,8] maximum(a2, zb)
})", 2);
  ExpectClose(r);
}

TEST(GpuExecutableTest, StridedConvolutionGradientForms) {
  REQUIRE_DEVICE();
  // Gradient with respect to the input of a stride-2 convolution (lhs dilation) and with
  // respect to the filter (batch contracted), as JAX writes them.
  Result r = RunBoth(R"(HloModule grads
ENTRY e {
  dy = f32[2,4,4,6] parameter(0)
  w = f32[3,3,5,6] parameter(1)
  x = f32[2,9,9,5] parameter(2)
  wr = f32[3,3,5,6] reverse(w), dimensions={0,1}
  dx = f32[2,9,9,5] convolution(dy, wr), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f, operand_precision={highest,highest}
  dw = f32[3,3,5,6] convolution(x, dy), window={size=4x4 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf, operand_precision={highest,highest}
  ROOT t = (f32[2,9,9,5], f32[3,3,5,6]) tuple(dx, dw)
})");
  ExpectClose(r);
}

// The gradient forms map onto cuDNN's backward-data / backward-filter calls (conv_rewriter.h):
// strides 1 and 2, SAME/VALID, filter dilation, feature groups, depthwise, NCHW, 1-D and 3-D.
TEST(GpuExecutableTest, ConvolutionGradientsRunOnCudnnBackwardCalls) {
  REQUIRE_DEVICE();
  struct Case {
    const char* name;
    const char* body;  // the entry's instructions
    const char* kind;  // expected in the thunk listing
  };
  const Case cases[] = {
      {"bwd_data_nhwc_s2_same", R"(
  dy = f32[4,8,8,16] parameter(0)
  w = f32[3,3,8,16] parameter(1)
  r = f32[3,3,8,16] reverse(w), dimensions={0,1}
  ROOT dx = f32[4,16,16,8] convolution(dy, r), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f, operand_precision={highest,highest})",
       "backward_data"},
      {"bwd_data_nchw_s2_valid", R"(
  dy = f32[2,6,4,4] parameter(0)
  w = f32[6,4,3,3] parameter(1)
  r = f32[6,4,3,3] reverse(w), dimensions={2,3}
  ROOT dx = f32[2,4,9,9] convolution(dy, r), window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, dim_labels=bf01_io01->bf01, operand_precision={highest,highest})",
       "backward_data"},
      {"bwd_data_groups", R"(
  dy = f32[2,5,5,8] parameter(0)
  w = f32[3,3,6,4] parameter(1)
  r = f32[3,3,6,4] reverse(w), dimensions={0,1}
  ROOT dx = f32[2,10,10,6] convolution(dy, r), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f, feature_group_count=2, operand_precision={highest,highest})",
       "backward_data"},
      {"bwd_data_1d_dilated_s1", R"(
  dy = f32[2,10,5] parameter(0)
  w = f32[3,3,5] parameter(1)
  r = f32[3,3,5] reverse(w), dimensions={0}
  ROOT dx = f32[2,10,3] convolution(dy, r), window={size=3 pad=2_2 rhs_dilate=2}, dim_labels=b0f_0oi->b0f, operand_precision={highest,highest})",
       "backward_data"},
      {"bwd_data_3d_s2", R"(
  dy = f32[1,2,2,2,3] parameter(0)
  w = f32[2,2,2,2,3] parameter(1)
  r = f32[2,2,2,2,3] reverse(w), dimensions={0,1,2}
  ROOT dx = f32[1,5,5,5,2] convolution(dy, r), window={size=2x2x2 pad=1_2x1_2x1_2 lhs_dilate=2x2x2}, dim_labels=b012f_012oi->b012f, operand_precision={highest,highest})",
       "backward_data"},
      {"bwd_filter_nhwc_s2_same", R"(
  x = f32[4,16,16,8] parameter(0)
  dy = f32[4,8,8,16] parameter(1)
  ROOT dw = f32[3,3,8,16] convolution(x, dy), window={size=8x8 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf, operand_precision={highest,highest})",
       "backward_filter"},
      {"bwd_filter_sym_pad", R"(
  x = f32[2,7,7,3] parameter(0)
  dy = f32[2,4,4,5] parameter(1)
  ROOT dw = f32[3,3,3,5] convolution(x, dy), window={size=4x4 pad=1_1x1_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf, operand_precision={highest,highest})",
       "backward_filter"},
      {"bwd_filter_nchw_s1", R"(
  x = f32[2,3,7,7] parameter(0)
  dy = f32[2,5,5,5] parameter(1)
  ROOT dw = f32[5,3,3,3] convolution(x, dy), window={size=5x5}, dim_labels=fb01_io01->fb01, operand_precision={highest,highest})",
       "backward_filter"},
      {"bwd_filter_depthwise", R"(
  x = f32[2,6,6,4] parameter(0)
  dy = f32[2,6,6,4] parameter(1)
  ROOT dw = f32[3,3,1,4] convolution(x, dy), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=4, operand_precision={highest,highest})",
       "backward_filter"},
      {"bwd_filter_1d_dilated", R"(
  x = f32[1,9,3] parameter(0)
  dy = f32[1,5,2] parameter(1)
  ROOT dw = f32[3,3,2] convolution(x, dy), window={size=5 stride=2}, dim_labels=f0b_i0o->0bf, operand_precision={highest,highest})",
       "backward_filter"},
      {"bwd_filter_3d_s2", R"(
  x = f32[1,5,5,5,2] parameter(0)
  dy = f32[1,2,2,2,3] parameter(1)
  ROOT dw = f32[3,3,3,2,3] convolution(x, dy), window={size=2x2x2 rhs_dilate=2x2x2}, dim_labels=f012b_i012o->012bf, operand_precision={highest,highest})",
       "backward_filter"},
      {"bwd_data_bf16", R"(
  dy = bf16[2,4,4,8] parameter(0)
  w = bf16[3,3,8,8] parameter(1)
  r = bf16[3,3,8,8] reverse(w), dimensions={0,1}
  ROOT dx = bf16[2,8,8,8] convolution(dy, r), window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f)",
       "backward_data"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result r = RunBoth(StrCat("HloModule ", c.name, "\nENTRY e {", c.body, "\n}\n"), 2);
    ExpectClose(r);
    if (!r.exe) continue;
    const std::string listing = r.exe->compiled().ThunkListing();
    EXPECT_NE(listing.find(c.kind), std::string::npos) << listing;
    EXPECT_EQ(listing.find("[host fallback]"), std::string::npos) << listing;
    EXPECT_EQ(listing.find("host %"), std::string::npos) << listing;
  }
}

// Replace-mode scatter with heavily overlapping windows: the evaluator applies updates in
// order, so the last window to hit a row wins; the compiler serializes such scatters.
TEST(GpuExecutableTest, OverlappingReplaceScatterAppliesUpdatesInOrder) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule scat
replace {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY e {
  op = f32[8,256] parameter(0)
  upd = f32[4096,256] parameter(1)
  i = s32[4096,1] iota(), iota_dimension=0
  m = s32[] constant(5)
  mb = s32[4096,1] broadcast(m), dimensions={}
  idx = s32[4096,1] remainder(i, mb)
  ROOT s = f32[8,256] scatter(op, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=replace
})", 2);
  ExpectClose(r);
  if (r.exe) {
    EXPECT_EQ(r.exe->compiled().ThunkListing().find("host %"), std::string::npos);
  }
}

// s8 x s8 -> s32 runs on cuBLASLt's integer GEMM (exact), plain and batched.
TEST(GpuExecutableTest, Int8GemmOnCublasLt) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule i8
ENTRY e {
  a = s8[64,128] parameter(0)
  b = s8[128,32] parameter(1)
  d = s32[64,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ba = s8[4,32,64] parameter(2)
  bb = s8[4,32,64] parameter(3)
  bd = s32[4,32,32] dot(ba, bb), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
  ROOT t = (s32[64,32], s32[4,32,32]) tuple(d, bd)
})", 2);
  ExpectClose(r);
  if (!r.exe) return;
  const std::string listing = r.exe->compiled().ThunkListing();
  EXPECT_EQ(listing.find("host %"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("[host fallback]"), std::string::npos) << listing;
}

// Mixed floating-point dots: operands widened to the result type, full-precision GEMMs.
TEST(GpuExecutableTest, MixedFloatDotsRunAsWidenedGemms) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule mixed
ENTRY e {
  a = bf16[64,96] parameter(0)
  b = f32[96,32] parameter(1)
  d = f32[64,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f16[3,16,24] parameter(2)
  e = f32[3,24,8] parameter(3)
  f = f64[3,16,8] dot(c, e), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = (f32[64,32], f64[3,16,8]) tuple(d, f)
})", 2);
  ExpectClose(r);
  if (!r.exe) return;
  const std::string listing = r.exe->compiled().ThunkListing();
  EXPECT_EQ(listing.find("host %"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("[host fallback]"), std::string::npos) << listing;
}

// Complex dots run on cuBLASLt (CGEMM, ZGEMM), not on the host.
TEST(GpuExecutableTest, ComplexGemms) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule cplx
ENTRY e {
  a = c64[16,24] parameter(0)
  b = c64[24,8] parameter(1)
  d = c64[16,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  za = c128[3,16,24] parameter(2)
  zb = c128[3,24,8] parameter(3)
  zd = c128[3,16,8] dot(za, zb), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ROOT t = (c64[16,8], c128[3,16,8]) tuple(d, zd)
})", 2);
  ExpectClose(r);
  if (!r.exe) return;
  const std::string listing = r.exe->compiled().ThunkListing();
  EXPECT_EQ(listing.find("host %"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("[host fallback]"), std::string::npos) << listing;
}

bool SameBytes(const Literal& a, const Literal& b) {
  if (a.tuple_size() != b.tuple_size()) return false;
  for (int64_t i = 0; i < a.tuple_size(); ++i)
    if (!SameBytes(a.tuple_element(i), b.tuple_element(i))) return false;
  return a.size_bytes() == b.size_bytes() &&
         std::equal(a.untyped_data(), a.untyped_data() + a.size_bytes(), b.untyped_data());
}

// Note [Side stream]: a GEMM and an independent kernel run on two streams, forked and joined
// with events: the results are the single-stream ones (bit for bit) eagerly, profiled, and
// replayed from the CUDA graph that captured the fork and join; the trace puts the kernel on
// its own lane.
TEST(GpuExecutableTest, IndependentKernelRunsBesideTheGemmOnASideStream) {
  REQUIRE_DEVICE();
  const std::string text = R"(HloModule side
ENTRY e {
  a = f32[256,512] parameter(0)
  b = f32[512,384] parameter(1)
  c = f32[1024,1024] parameter(2)
  d = f32[256,384] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  t = f32[1024,1024] tanh(c)
  two = f32[] constant(2)
  tb = f32[1024,1024] broadcast(two), dimensions={}
  e = f32[1024,1024] multiply(t, tb)
  ROOT r = (f32[256,384], f32[1024,1024]) tuple(d, e)
})";
  Result two = RunBoth(text, 3);
  ExpectClose(two);
  if (!two.exe) return;
  const std::string listing = two.exe->compiled().ThunkListing();
  EXPECT_EQ(two.exe->side_stream_pairs(), 1) << listing;
  EXPECT_TRUE(two.exe->graph_captured());
  GpuExecutableOptions single;
  single.use_side_stream = false;
  Result one = RunBoth(text, 1, 3, single);
  ASSERT_TRUE(one.exe);
  EXPECT_EQ(one.exe->side_stream_pairs(), 0);
  EXPECT_TRUE(SameBytes(two.actual, one.actual));
  // Profiled (eager) runs use the side stream too.
  GpuRunOptions po;
  po.profile = true;
  ASSERT_TRUE(two.exe->Execute(po).ok());
  ASSERT_TRUE(two.exe->Execute(po).ok());
  auto again = two.exe->FetchResult();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(SameBytes(*again, one.actual));
  const std::string trace = ::testing::TempDir() + "/side_stream_trace.json";
  ASSERT_TRUE(two.exe->WriteChromeTrace(trace).ok());
  std::ifstream in(trace);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_NE(s.str().find("\"tid\":1"), std::string::npos) << s.str();
  EXPECT_NE(s.str().find("\"tid\":0"), std::string::npos) << s.str();
}

TEST(GpuExecutableTest, WhileLoopAndConditional) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule loop
cond {
  s = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[16] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  two = f32[] constant(1.5)
  tb = f32[16] broadcast(two), dimensions={}
  v2 = f32[16] multiply(v, tb)
  ROOT t = (s32[], f32[16]) tuple(i2, v2)
}
yes {
  p = f32[16] parameter(0)
  ROOT n = f32[16] negate(p)
}
no {
  p = f32[16] parameter(0)
  ROOT e = f32[16] exponential(p)
}
ENTRY e {
  x = f32[16] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[16]) tuple(zero, x)
  w = (s32[], f32[16]) while(init), condition=cond, body=body
  v = f32[16] get-tuple-element(w), index=1
  k = f32[] constant(0)
  s = f32[] reduce-precision(k), exponent_bits=8, mantissa_bits=23
  c0 = f32[1] slice(v), slice={[0:1]}
  c1 = f32[] reshape(c0)
  p = pred[] compare(c1, s), direction=GT
  ROOT c = f32[16] conditional(p, v, v), true_computation=yes, false_computation=no
})");
  ExpectClose(r);
}

// A scan-like loop: N trips of x <- x * 1.5 + y[i] (dynamic-slice of the stacked input by
// the counter), with the bound `bound` (a constant, or parameter 2 when "p").
std::string ScanLoop(const std::string& bound) {
  const bool dynamic = bound == "p";
  return StrCat(R"(HloModule scan
cond {
  s = (s32[], f32[16], f32[8,16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  )", dynamic ? "n = s32[] get-tuple-element(s), index=3" : StrCat("n = s32[] constant(", bound, ")"), R"(
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16], f32[8,16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[16] get-tuple-element(s), index=1
  ys = f32[8,16] get-tuple-element(s), index=2
  n = s32[] get-tuple-element(s), index=3
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  zero = s32[] constant(0)
  y = f32[1,16] dynamic-slice(ys, i, zero), dynamic_slice_sizes={1,16}
  yr = f32[16] reshape(y)
  c = f32[] constant(1.5)
  cb = f32[16] broadcast(c), dimensions={}
  m = f32[16] multiply(v, cb)
  v2 = f32[16] add(m, yr)
  ROOT t = (s32[], f32[16], f32[8,16], s32[]) tuple(i2, v2, ys, n)
}
ENTRY e {
  x = f32[16] parameter(0)
  ys = f32[8,16] parameter(1)
  )", dynamic ? "n = s32[] parameter(2)" : "n = s32[] constant(0)", R"(
  zero = s32[] constant(0)
  init = (s32[], f32[16], f32[8,16], s32[]) tuple(zero, x, ys, n)
  w = (s32[], f32[16], f32[8,16], s32[]) while(init), condition=cond, body=body
  ROOT v = f32[16] get-tuple-element(w), index=1
})");
}

TEST(GpuExecutableTest, LoopOfKnownTripCountIsCapturedWithoutHostWaits) {
  REQUIRE_DEVICE();
  Result r = RunBoth(ScanLoop("8"), /*runs=*/3);
  ExpectClose(r);
  ASSERT_TRUE(r.exe);
  const std::string listing = r.exe->compiled().ThunkListing();
  EXPECT_NE(listing.find("(8 trips, known)"), std::string::npos) << listing;
  EXPECT_TRUE(r.exe->graph_eligible()) << listing;
  EXPECT_TRUE(r.exe->graph_captured()) << listing;
}

TEST(GpuExecutableTest, ScanStepCounterRunsBesideTheNextStepsGemm) {
  // Note [Pairs across iterations]: an RNN scan's step is the recurrent GEMM, one gate kernel
  // (with the write into the stacked output) and the counter; the counter of step k runs on
  // the side stream beside step k+1's GEMM. (The recurrent weight is scaled by 1/8 so that the
  // recurrence contracts: tanh's last-ulp differences must not grow over the steps.)
  REQUIRE_DEVICE();
  const std::string text = R"(HloModule rnn
cond {
  s = (s32[], f32[8,64], f32[6,8,64], f32[64,64], f32[6,8,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,64], f32[6,8,64], f32[64,64], f32[6,8,64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[8,64] get-tuple-element(s), index=1
  ys = f32[6,8,64] get-tuple-element(s), index=2
  w = f32[64,64] get-tuple-element(s), index=3
  xs = f32[6,8,64] get-tuple-element(s), index=4
  z = s32[] constant(0)
  x = f32[1,8,64] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,8,64}
  xr = f32[8,64] reshape(x)
  g0 = f32[8,64] dot(h, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  eighth = f32[] constant(0.125)
  e8 = f32[8,64] broadcast(eighth), dimensions={}
  g = f32[8,64] multiply(g0, e8)
  a = f32[8,64] add(g, xr)
  h1 = f32[8,64] tanh(a)
  u = f32[1,8,64] reshape(h1)
  ys1 = f32[6,8,64] dynamic-update-slice(ys, u, i, z, z)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[8,64], f32[6,8,64], f32[64,64], f32[6,8,64]) tuple(i1, h1, ys1, w, xs)
}
ENTRY e {
  h0 = f32[8,64] parameter(0)
  w = f32[64,64] parameter(1)
  xs = f32[6,8,64] parameter(2)
  zero = s32[] constant(0)
  zf = f32[] constant(0)
  ys = f32[6,8,64] broadcast(zf), dimensions={}
  init = (s32[], f32[8,64], f32[6,8,64], f32[64,64], f32[6,8,64]) tuple(zero, h0, ys, w, xs)
  l = (s32[], f32[8,64], f32[6,8,64], f32[64,64], f32[6,8,64]) while(init), condition=cond, body=body
  hn = f32[8,64] get-tuple-element(l), index=1
  yn = f32[6,8,64] get-tuple-element(l), index=2
  ROOT r = (f32[8,64], f32[6,8,64]) tuple(hn, yn)
})";
  Result two = RunBoth(text, 3);
  ExpectClose(two);
  ASSERT_TRUE(two.exe);
  const std::string listing = two.exe->compiled().ThunkListing();
  EXPECT_NE(listing.find("per iteration 0 copies"), std::string::npos) << listing;
  EXPECT_NE(listing.find("dus_in_place"), std::string::npos) << listing;
  EXPECT_NE(listing.find("beside the next trip's first library call"), std::string::npos) << listing;
  EXPECT_GE(two.exe->side_stream_pairs(), 1) << listing;
  EXPECT_TRUE(two.exe->graph_captured()) << listing;
  GpuExecutableOptions single;
  single.use_side_stream = false;
  Result one = RunBoth(text, 1, 3, single);
  ASSERT_TRUE(one.exe);
  EXPECT_EQ(one.exe->side_stream_pairs(), 0);
  EXPECT_TRUE(SameBytes(two.actual, one.actual));
  // Eager (profiled) runs pair the same way.
  GpuRunOptions po;
  po.profile = true;
  ASSERT_TRUE(two.exe->Execute(po).ok());
  auto again = two.exe->FetchResult();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(SameBytes(*again, one.actual));
}

TEST(GpuExecutableTest, LoopOfDeviceTripCountRunsAsAConditionalNode) {
  REQUIRE_DEVICE();
  // The bound is an argument: one executable runs it with several bounds, each three times (the
  // first run eager, then captured -- with a conditional WHILE node where the device runtime
  // allows, Note [Device-side loops] -- then the graph replayed with the new bound).
  auto m = ParseHloModule(ScanLoop("p"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<Shape> shapes;
  for (const HloInstruction* p : (*m)->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
  auto clone = ParseHloModule(ScanLoop("p"));
  ASSERT_TRUE(clone.ok());
  GpuCompileOptions o;
  o.device = codegen::DeviceSpec::FromDescription(TheDevice()->description());
  auto compiled = GpuCompiler::Compile(std::move(*clone), o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  auto exe = GpuExecutable::Create(std::move(*compiled), *TheDevice());
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::string listing = (*exe)->compiled().ThunkListing();
  const bool device_loop = listing.find("a conditional node in graphs") != std::string::npos;
  EXPECT_EQ((*exe)->graph_eligible(), device_loop) << listing;
  for (int32_t n : {5, 0, 8, 1, 3}) {
    std::vector<Literal> args = MakeRandomArguments(shapes, 7 + n);
    args[2] = Literal::CreateR0<int32_t>(PrimitiveType::kS32, n);
    auto expected = EvaluateModule(**m, args);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    for (int run = 0; run < 3; ++run) {
      GpuRunOptions ro;
      ro.poison = true;
      auto got = (*exe)->Run(args, ro);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      CompareOptions co;
      co.backend_vs_evaluator = true;
      EXPECT_TRUE(CompareLiterals(*got, *expected, co).ok()) << "n=" << n << " run " << run << "\n" << listing;
    }
  }
  if (device_loop) {
    EXPECT_TRUE((*exe)->graph_captured()) << listing;
  }
}

// Note [Device-side conditionals]: a conditional whose index is an argument. `pred`: pred[]
// index, two branches; else s32[] index, three branches. Each branch computes something else
// from x, so the result says which one ran.
std::string ConditionalModule(bool pred) {
  return StrCat(R"(HloModule cond
b0 {
  p = f32[16] parameter(0)
  one = f32[] constant(1)
  ob = f32[16] broadcast(one), dimensions={}
  ROOT r = f32[16] add(p, ob)
}
b1 {
  p = f32[16] parameter(0)
  three = f32[] constant(3)
  tb = f32[16] broadcast(three), dimensions={}
  ROOT r = f32[16] multiply(p, tb)
}
b2 {
  p = f32[16] parameter(0)
  ROOT r = f32[16] negate(p)
}
ENTRY e {
  x = f32[16] parameter(0)
  )", pred ? R"(i = pred[] parameter(1)
  ROOT c = f32[16] conditional(i, x, x), true_computation=b0, false_computation=b1)"
           : R"(i = s32[] parameter(1)
  ROOT c = f32[16] conditional(i, x, x, x), branch_computations={b0, b1, b2})", R"(
})");
}

// The branch XLA runs for `index` (pred: 0 when true; s32: out of range -> the last).
int64_t XlaBranch(bool pred, int32_t index, int64_t n) {
  if (pred) return index != 0 ? 0 : 1;
  return index < 0 || index >= n ? n - 1 : index;
}

// What branch `b` of ConditionalModule computes from x.
Literal BranchValue(const Literal& x, int64_t b) {
  Literal out(x.shape());
  for (int64_t k = 0; k < 16; ++k) {
    const float v = x.data<float>()[k];
    out.data<float>()[k] = b == 0 ? v + 1 : b == 1 ? v * 3 : -v;
  }
  return out;
}

// One executable, run several times per index (the first run eager, then captured with
// conditional nodes, then replayed with the new index): results must be the branch's every run.
void RunConditionalWithIndices(bool pred, bool switch_nodes) {
  auto m = ParseHloModule(ConditionalModule(pred));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto clone = ParseHloModule(ConditionalModule(pred));
  ASSERT_TRUE(clone.ok());
  GpuCompileOptions o;
  o.device = codegen::DeviceSpec::FromDescription(TheDevice()->description());
  auto compiled = GpuCompiler::Compile(std::move(*clone), o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  GpuExecutableOptions eo;
  eo.use_graph_switch_nodes = switch_nodes;
  auto exe = GpuExecutable::Create(std::move(*compiled), *TheDevice(), eo);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::string listing = (*exe)->compiled().ThunkListing();
  const bool switch_node = listing.find("a SWITCH node in graphs") != std::string::npos;
  const bool if_chain = listing.find("a chain of IF nodes in graphs") != std::string::npos;
  const bool device_conditional = switch_node || if_chain;
  EXPECT_EQ((*exe)->graph_eligible(), device_conditional) << listing;
  if (!switch_nodes) {
    EXPECT_FALSE(switch_node) << listing;
  }
  const std::vector<int32_t> indices = pred ? std::vector<int32_t>{1, 0, 0, 1} : std::vector<int32_t>{0, 1, 2, -1, 7, 1, 0, 2};
  std::vector<Literal> args = MakeRandomArguments({(*m)->entry_computation()->parameter_instruction(0)->shape()}, 11);
  args.push_back(pred ? Literal::CreateR0<bool>(PrimitiveType::kPred, true) : Literal::CreateR0<int32_t>(PrimitiveType::kS32, 0));
  for (int32_t index : indices) {
    if (pred) args[1].data<bool>()[0] = index != 0;
    else args[1].data<int32_t>()[0] = index;
    const int64_t branch = XlaBranch(pred, index, pred ? 2 : 3);
    const Literal want = BranchValue(args[0], branch);
    auto expected = EvaluateModule(**m, args);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    CompareOptions co;
    co.backend_vs_evaluator = true;
    ASSERT_TRUE(CompareLiterals(*expected, want, co).ok()) << "the evaluator disagrees on index " << index;
    for (int run = 0; run < 3; ++run) {
      GpuRunOptions ro;
      ro.poison = true;
      auto got = (*exe)->Run(args, ro);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      Comparison c = CompareLiterals(*got, want, co);
      EXPECT_TRUE(c.ok()) << "index " << index << " (branch " << branch << ") run " << run << ": " << c.ToString()
                          << "\n" << listing;
    }
  }
  if (device_conditional) {
    EXPECT_TRUE((*exe)->graph_captured()) << listing;
    // Every index replayed the one graph (the parameters never moved).
    EXPECT_EQ((*exe)->graphs_captured(), 1) << listing;
  }
}

TEST(GpuExecutableTest, PredConditionalRunsAsConditionalNodes) {
  REQUIRE_DEVICE();
  RunConditionalWithIndices(/*pred=*/true, /*switch_nodes=*/true);
}

TEST(GpuExecutableTest, IndexedConditionalRunsAsASwitchNode) {
  REQUIRE_DEVICE();
  RunConditionalWithIndices(/*pred=*/false, /*switch_nodes=*/true);
}

TEST(GpuExecutableTest, ConditionalsRunAsChainsOfIfNodesWithoutSwitch) {
  REQUIRE_DEVICE();
  RunConditionalWithIndices(/*pred=*/true, /*switch_nodes=*/false);
  RunConditionalWithIndices(/*pred=*/false, /*switch_nodes=*/false);
}

// Nesting (Note [Device-side conditionals]): a loop of device-side trip count n whose body runs
// a 3-branch conditional on i - 1 (-1 first: the last branch; then 0, 1, 2, 3 -> 2, ...), and
// after it a pred conditional whose true branch holds a loop of device-side trip count m.
std::string NestedControlFlowModule() {
  return R"(HloModule nested
b0 {
  p = f32[16] parameter(0)
  one = f32[] constant(1)
  ob = f32[16] broadcast(one), dimensions={}
  ROOT r = f32[16] add(p, ob)
}
b1 {
  p = f32[16] parameter(0)
  h = f32[] constant(1.5)
  hb = f32[16] broadcast(h), dimensions={}
  ROOT r = f32[16] multiply(p, hb)
}
b2 {
  p = f32[16] parameter(0)
  ROOT r = f32[16] negate(p)
}
cond {
  s = (s32[], f32[16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] get-tuple-element(s), index=2
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[16] get-tuple-element(s), index=1
  n = s32[] get-tuple-element(s), index=2
  one = s32[] constant(1)
  k = s32[] subtract(i, one)
  v2 = f32[16] conditional(k, v, v, v), branch_computations={b0, b1, b2}
  i2 = s32[] add(i, one)
  ROOT t = (s32[], f32[16], s32[]) tuple(i2, v2, n)
}
inner_cond {
  s = (s32[], f32[16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] get-tuple-element(s), index=2
  ROOT lt = pred[] compare(i, n), direction=LT
}
inner_body {
  s = (s32[], f32[16], s32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[16] get-tuple-element(s), index=1
  n = s32[] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  h = f32[] constant(0.5)
  hb = f32[16] broadcast(h), dimensions={}
  v2 = f32[16] add(v, hb)
  ROOT t = (s32[], f32[16], s32[]) tuple(i2, v2, n)
}
looping {
  a = (f32[16], s32[]) parameter(0)
  v = f32[16] get-tuple-element(a), index=0
  m = s32[] get-tuple-element(a), index=1
  zero = s32[] constant(0)
  init = (s32[], f32[16], s32[]) tuple(zero, v, m)
  w = (s32[], f32[16], s32[]) while(init), condition=inner_cond, body=inner_body
  ROOT r = f32[16] get-tuple-element(w), index=1
}
plain {
  a = (f32[16], s32[]) parameter(0)
  v = f32[16] get-tuple-element(a), index=0
  ROOT r = f32[16] exponential(v)
}
ENTRY e {
  x = f32[16] parameter(0)
  n = s32[] parameter(1)
  m = s32[] parameter(2)
  take = pred[] parameter(3)
  zero = s32[] constant(0)
  init = (s32[], f32[16], s32[]) tuple(zero, x, n)
  w = (s32[], f32[16], s32[]) while(init), condition=cond, body=body
  v = f32[16] get-tuple-element(w), index=1
  a = (f32[16], s32[]) tuple(v, m)
  ROOT c = f32[16] conditional(take, a, a), true_computation=looping, false_computation=plain
})";
}

TEST(GpuExecutableTest, ConditionalInALoopAndALoopInABranchRunAsNestedConditionalNodes) {
  REQUIRE_DEVICE();
  auto m = ParseHloModule(NestedControlFlowModule());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto clone = ParseHloModule(NestedControlFlowModule());
  ASSERT_TRUE(clone.ok());
  for (bool switch_nodes : {true, false}) {
    auto again = ParseHloModule(NestedControlFlowModule());
    ASSERT_TRUE(again.ok());
    GpuCompileOptions o;
    o.device = codegen::DeviceSpec::FromDescription(TheDevice()->description());
    auto compiled = GpuCompiler::Compile(std::move(*again), o);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    GpuExecutableOptions eo;
    eo.use_graph_switch_nodes = switch_nodes;
    auto exe = GpuExecutable::Create(std::move(*compiled), *TheDevice(), eo);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    const std::string listing = (*exe)->compiled().ThunkListing();
    const bool device = listing.find("a conditional node in graphs") != std::string::npos &&
                        (listing.find("a SWITCH node in graphs") != std::string::npos ||
                         listing.find("a chain of IF nodes in graphs") != std::string::npos);
    EXPECT_EQ((*exe)->graph_eligible(), device) << listing;
    std::vector<Literal> args = MakeRandomArguments({(*m)->entry_computation()->parameter_instruction(0)->shape()}, 5);
    args.push_back(Literal::CreateR0<int32_t>(PrimitiveType::kS32, 0));
    args.push_back(Literal::CreateR0<int32_t>(PrimitiveType::kS32, 0));
    args.push_back(Literal::CreateR0<bool>(PrimitiveType::kPred, true));
    struct Case {
      int32_t n, m;
      bool take;
    };
    for (Case k : {Case{6, 3, true}, Case{0, 2, true}, Case{4, 0, false}, Case{1, 5, true}, Case{5, 1, false}}) {
      args[1].data<int32_t>()[0] = k.n;
      args[2].data<int32_t>()[0] = k.m;
      args[3].data<bool>()[0] = k.take;
      auto expected = EvaluateModule(**m, args);
      ASSERT_TRUE(expected.ok()) << expected.status().ToString();
      for (int run = 0; run < 3; ++run) {
        GpuRunOptions ro;
        ro.poison = true;
        auto got = (*exe)->Run(args, ro);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        CompareOptions co;
        co.backend_vs_evaluator = true;
        Comparison c = CompareLiterals(*got, *expected, co);
        EXPECT_TRUE(c.ok()) << "switch " << switch_nodes << " n=" << k.n << " m=" << k.m << " take=" << k.take << " run "
                            << run << ": " << c.ToString() << "\n" << listing;
      }
    }
    if (device) {
      EXPECT_TRUE((*exe)->graph_captured()) << listing;
      EXPECT_EQ((*exe)->graphs_captured(), 1) << listing;
    }
  }
}

TEST(GpuExecutableTest, SortTopKAndHostFallback) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule s
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  x = f32[8,100] parameter(0)
  io = s32[8,100] iota(), iota_dimension=1
  s = (f32[8,100], s32[8,100]) sort(x, io), dimensions={1}, is_stable=true, to_apply=lt
  k = (f32[8,5], s32[8,5]) topk(x), k=5, largest=true
  idx = s32[3,1] parameter(1)
  g = f32[3,100] gather(x, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,100}
  ROOT t = ((f32[8,100], s32[8,100]), (f32[8,5], s32[8,5]), f32[3,100]) tuple(s, k, g)
})");
  ExpectClose(r);
}

// Sorts along a non-minor dimension run on the device as transpose -> row sort -> transpose
// (sort_dimension_rewriter.h): rank 2 along dimension 0, rank 3 along dimensions 0 and 1,
// variadic argsort (keys + iota payload, s32 keys with many ties: the device sort is stable,
// so the payload order among equal keys must match the evaluator's), f32 keys unstable.
TEST(GpuExecutableTest, SortsAlongNonMinorDimensionsRunOnTheDevice) {
  REQUIRE_DEVICE();
  Result r = RunBoth(R"(HloModule s
ltf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
lti {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT l = pred[] compare(a, b), direction=LT
}
gt1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT l = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
ENTRY e {
  x = f32[300,7] parameter(0)
  i0 = s32[300,7] iota(), iota_dimension=0
  s0 = (f32[300,7], s32[300,7]) sort(x, i0), dimensions={0}, to_apply=ltf
  y = s32[6,40,5] parameter(1)
  three = s32[] constant(3)
  b3 = s32[6,40,5] broadcast(three), dimensions={}
  k = s32[6,40,5] and(y, b3)
  i1 = s32[6,40,5] iota(), iota_dimension=1
  s1 = (s32[6,40,5], s32[6,40,5]) sort(k, i1), dimensions={1}, is_stable=true, to_apply=lti
  i2 = s32[6,40,5] iota(), iota_dimension=0
  s2 = (s32[6,40,5], s32[6,40,5]) sort(k, i2), dimensions={0}, is_stable=true, to_apply=lti
  z = f32[33,4,9] parameter(2)
  s3 = f32[33,4,9] sort(z), dimensions={0}, to_apply=gt1
  ROOT t = ((f32[300,7], s32[300,7]), (s32[6,40,5], s32[6,40,5]), (s32[6,40,5], s32[6,40,5]), f32[33,4,9]) tuple(s0, s1, s2, s3)
})");
  ExpectClose(r);
  if (!r.exe) return;
  const std::string listing = r.exe->compiled().ThunkListing();
  EXPECT_EQ(listing.find("host %"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("[host fallback]"), std::string::npos) << listing;
}

// Dots and convolutions the libraries do not take run as generated kernels, bit-exact with the
// evaluator for integers (sums wrap in the result width): s32, u8 -> u32 batched, pred, s16
// with a middle batch dimension, a grouped strided dilated s8 -> s32 convolution, a
// batch-grouped reversed s32 convolution, and a c64 convolution (within tolerance).
TEST(GpuExecutableTest, IntegerAndComplexContractionsRunAsKernels) {
  REQUIRE_DEVICE();
  Result r = RunBoth(test_modules::kContractionsModule, 2);
  ExpectClose(r);
  if (!r.exe) return;
  EXPECT_TRUE(r.exe->compiled().stats.host_fallbacks.empty()) << r.exe->compiled().stats.ToString();
  for (int64_t i : {0, 1, 2, 3, 4, 6})
    EXPECT_TRUE(SameBytes(r.actual.tuple_element(i), r.expected.tuple_element(i))) << "output " << i;
}

// Sorts with multi-key comparators run as generated comparison sorts, bit for bit the
// evaluator's stable sort: lexsort of 2 and 3 keys with ties (payload order = stability), a
// c64 sort, NaNs / signed zeros with TOTALORDER, rows of 1 and of 5000 elements (scratch-buffer
// path), a sort along dimension 0 (transposed to the minor one).
TEST(GpuExecutableTest, MultiKeySortsRunAsKernels) {
  REQUIRE_DEVICE();
  Result r = RunBoth(test_modules::kMultiKeySortsModule, 2);
  ExpectClose(r);
  if (!r.exe) return;
  EXPECT_TRUE(r.exe->compiled().stats.host_fallbacks.empty()) << r.exe->compiled().stats.ToString();
  EXPECT_TRUE(SameBytes(r.actual, r.expected));
}

}  // namespace
}  // namespace kiln::cuda
