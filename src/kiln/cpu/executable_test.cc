// End to end: HLO text -> CpuCompiler -> CpuExecutable::Run / Execute, checked against
// hand-computed values and the reference evaluator.
#include "kiln/cpu/executable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "kiln/cpu/cpu_test_util.h"

namespace kiln::cpu {
namespace {

using testing::ExpectMatchesEvaluator;
using testing::MustCompile;
using testing::TestOptions;

std::vector<float> F32s(const Literal& l) {
  auto d = l.data<float>();
  return std::vector<float>(d.begin(), d.end());
}

Literal R1F32(std::vector<float> v) { return Literal::CreateR1<float>(PrimitiveType::kF32, v); }

TEST(CpuExecutableTest, ElementwiseChain) {
  auto exe = MustCompile(R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = f32[4] add(a, b)
  ROOT m = f32[4] multiply(s, s)
})");
  ASSERT_NE(exe, nullptr);
  std::vector<Literal> args;
  args.push_back(R1F32({1, 2, 3, 4}));
  args.push_back(R1F32({1, 1, 1, -5}));
  auto r = exe->Run(args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(F32s(*r), (std::vector<float>{4, 9, 16, 1}));
}

TEST(CpuExecutableTest, ResultsOutliveTheirExecutable) {
  // A result's arena goes back to the executable's ArenaPool, shared with the result: the
  // executable may go first (the Python package's arrays outlive their executables).
  auto exe = MustCompile(R"(
HloModule m
ENTRY e {
  a = f32[256] parameter(0)
  b = f32[256] parameter(1)
  s = f32[256] add(a, b)
  t = f32[256] multiply(s, s)
  ROOT r = (f32[256], f32[256]) tuple(t, s)
})");
  ASSERT_NE(exe, nullptr);
  std::vector<float> a(256), b(256);
  for (int i = 0; i < 256; ++i) {
    a[i] = 0.5f * static_cast<float>(i);
    b[i] = 1.0f - static_cast<float>(i % 7);
  }
  std::vector<void*> raw = {a.data(), b.data()};
  auto first = exe->ExecuteRowMajor(raw);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = exe->ExecuteRowMajor(raw);  // a second arena, leased while the first is held
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  exe.reset();
  for (ExecutionOutput* out : {&*first, &*second}) {
    ASSERT_EQ(out->outputs().size(), 2u);
    const float* t = static_cast<const float*>(out->outputs()[0].data);
    const float* sum = static_cast<const float*>(out->outputs()[1].data);
    for (int i = 0; i < 256; ++i) {
      ASSERT_EQ(sum[i], a[i] + b[i]) << i;
      ASSERT_EQ(t[i], (a[i] + b[i]) * (a[i] + b[i])) << i;
    }
  }
  *first = ExecutionOutput();  // its arena back to the orphaned pool
  *second = ExecutionOutput();  // the last holder: the pool goes with it
}

TEST(CpuExecutableTest, NestedTupleOutputs) {
  auto exe = MustCompile(R"(
HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  n = f32[2] negate(a)
  c = s32[] constant(7)
  inner = (f32[2], s32[]) tuple(n, c)
  ROOT t = ((f32[2], s32[]), f32[2], f32[2]) tuple(inner, a, n)
})");
  ASSERT_NE(exe, nullptr);
  std::vector<Literal> args;
  args.push_back(R1F32({1, -2}));
  auto r = exe->Run(args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tuple_size(), 3);
  EXPECT_EQ(F32s(r->tuple_element(0).tuple_element(0)), (std::vector<float>{-1, 2}));
  EXPECT_EQ(r->tuple_element(0).tuple_element(1).data<int32_t>()[0], 7);
  EXPECT_EQ(F32s(r->tuple_element(1)), (std::vector<float>{1, -2}));
  EXPECT_EQ(F32s(r->tuple_element(2)), (std::vector<float>{-1, 2}));
  // The raw form: one view per leaf.
  std::vector<void*> raw = {const_cast<uint8_t*>(args[0].untyped_data())};
  auto out = exe->Execute(raw);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->outputs().size(), 4u);
  EXPECT_EQ(out->outputs()[1].as<int32_t>()[0], 7);
  EXPECT_EQ(out->outputs()[2].data, raw[0]);  // the parameter itself
}

TEST(CpuExecutableTest, WhileLoopCountsAndAccumulates) {
  ExpectMatchesEvaluator(R"(
HloModule m
cond {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[8] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  f = f32[] convert(i)
  fb = f32[8] broadcast(f), dimensions={}
  x1 = f32[8] add(x, fb)
  ROOT t = (s32[], f32[8]) tuple(i1, x1)
}
ENTRY e {
  x = f32[8] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[8]) tuple(z, x)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
})");
}

TEST(CpuExecutableTest, WhileLoopSwapsStateElements) {
  // The body permutes its state: copies must be simultaneous (staging).
  auto exe = MustCompile(R"(
HloModule m
cond {
  p = (s32[], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[2] get-tuple-element(p), index=1
  b = f32[2] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[2], f32[2]) tuple(i1, b, a)
}
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[2], f32[2]) tuple(z, a, b)
  ROOT w = (s32[], f32[2], f32[2]) while(init), condition=cond, body=body
})");
  ASSERT_NE(exe, nullptr);
  std::vector<Literal> args;
  args.push_back(R1F32({1, 2}));
  args.push_back(R1F32({3, 4}));
  auto r = exe->Run(args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tuple_element(0).data<int32_t>()[0], 3);
  EXPECT_EQ(F32s(r->tuple_element(1)), (std::vector<float>{3, 4}));  // odd number of swaps
  EXPECT_EQ(F32s(r->tuple_element(2)), (std::vector<float>{1, 2}));
  // The swap needs staging slices.
  const HloInstruction* w = exe->module().entry_computation()->root_instruction();
  auto plan = exe->buffer_assignment().GetWhileCopyPlan(*w);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  int staged = 0;
  for (const BufferSlice& s : plan->staging) staged += s.valid();
  EXPECT_GE(staged, 1);
}

// Loop state the body passes through unchanged lives in its init buffer (a parameter, a
// constant, a value also read after the loop): no copies, same results.
TEST(CpuExecutableTest, WhileLoopPassThroughStateIsNotCopied) {
  const char* hlo = R"(
HloModule m
cond {
  s = (s32[], f32[4,8], f32[8], f32[4,8], f32[4,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  k = s32[] constant(5)
  ROOT lt = pred[] compare(i, k), direction=LT
}
body {
  s = (s32[], f32[4,8], f32[8], f32[4,8], f32[4,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  w = f32[4,8] get-tuple-element(s), index=1
  c = f32[8] get-tuple-element(s), index=2
  e = f32[4,8] get-tuple-element(s), index=3
  acc = f32[4,8] get-tuple-element(s), index=4
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  cb = f32[4,8] broadcast(c), dimensions={1}
  m = f32[4,8] multiply(acc, w)
  a = f32[4,8] add(m, cb)
  t = f32[4,8] tanh(a)
  acc1 = f32[4,8] add(t, e)
  ROOT r = (s32[], f32[4,8], f32[8], f32[4,8], f32[4,8]) tuple(i1, w, c, e, acc1)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  z = s32[] constant(0)
  c = f32[8] constant({1, -2, 3, -4, 0.5, 0.25, -1, 2})
  e = f32[4,8] exponential(x)
  zf = f32[] constant(0.1)
  acc = f32[4,8] broadcast(zf), dimensions={}
  init = (s32[], f32[4,8], f32[8], f32[4,8], f32[4,8]) tuple(z, x, c, e, acc)
  w = (s32[], f32[4,8], f32[8], f32[4,8], f32[4,8]) while(init), condition=cond, body=body
  r = f32[4,8] get-tuple-element(w), index=4
  we = f32[4,8] get-tuple-element(w), index=3
  wx = f32[4,8] get-tuple-element(w), index=1
  wc = f32[8] get-tuple-element(w), index=2
  after = f32[4,8] subtract(r, e)
  ROOT out = (f32[4,8], f32[4,8], f32[4,8], f32[4,8], f32[8]) tuple(after, we, x, wx, wc)
})";
  ExpectMatchesEvaluator(hlo);
  auto exe = MustCompile(hlo);
  ASSERT_NE(exe, nullptr);
  // Only the counter (from a constant) is copied in; the accumulator takes over its init.
  EXPECT_NE(exe->ThunkListing().find("copies in 1 leaf (4 B)"), std::string::npos) << exe->ThunkListing();
}

TEST(CpuExecutableTest, ZeroTripWhile) {
  ExpectMatchesEvaluator(R"(
HloModule m
cond {
  p = (s32[], f32[3]) parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  p = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[3] get-tuple-element(p), index=1
  y = f32[3] negate(x)
  ROOT t = (s32[], f32[3]) tuple(i, y)
}
ENTRY e {
  x = f32[3] parameter(0)
  z = s32[] parameter(1)
  init = (s32[], f32[3]) tuple(z, x)
  ROOT w = (s32[], f32[3]) while(init), condition=cond, body=body
})");
}

const char* kSwitch = R"(
HloModule m
b0 {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
b1 {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}
b2 {
  p = f32[4] parameter(0)
  ROOT p2 = f32[4] multiply(p, p)
}
ENTRY e {
  i = s32[] parameter(0)
  x = f32[4] parameter(1)
  ROOT c = f32[4] conditional(i, x, x, x), branch_computations={b0, b1, b2}
})";

TEST(CpuExecutableTest, ConditionalIndexInAndOutOfRange) {
  auto exe = MustCompile(kSwitch);
  ASSERT_NE(exe, nullptr);
  for (int32_t i : {0, 1, 2, 3, -1, 100}) {
    std::vector<Literal> args;
    args.push_back(Literal::CreateR0<int32_t>(PrimitiveType::kS32, i));
    args.push_back(R1F32({1, 2, -1, 0.5f}));
    auto r = exe->Run(args);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto expected = EvaluateModule(exe->module(), args);
    ASSERT_TRUE(expected.ok());
    EXPECT_TRUE(r->BitwiseEquals(*expected)) << "index " << i << ": " << r->ToShortString();
    // Out of range picks the last branch (x*x).
    if (i < 0 || i > 2) {
      EXPECT_EQ(F32s(*r), (std::vector<float>{1, 4, 1, 0.25f}));
    }
  }
}

TEST(CpuExecutableTest, ConditionalOnPredWithParameterRoot) {
  ExpectMatchesEvaluator(R"(
HloModule m
t {
  p = (f32[2], f32[2]) parameter(0)
  ROOT a = f32[2] get-tuple-element(p), index=0
}
f {
  p = (f32[2], f32[2]) parameter(0)
  a = f32[2] get-tuple-element(p), index=0
  b = f32[2] get-tuple-element(p), index=1
  ROOT s = f32[2] subtract(a, b)
}
ENTRY e {
  c = pred[] parameter(0)
  x = f32[2] parameter(1)
  y = f32[2] parameter(2)
  tp = (f32[2], f32[2]) tuple(x, y)
  ROOT r = f32[2] conditional(c, tp, tp), true_computation=t, false_computation=f
})");
}

TEST(CpuExecutableTest, SizeZeroArrays) {
  ExpectMatchesEvaluator(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[3,0] parameter(0)
  y = f32[0] parameter(1)
  z = f32[] constant(0)
  r = f32[3] reduce(x, z), dimensions={1}, to_apply=add
  n = f32[0] negate(y)
  ROOT t = (f32[3], f32[0], f32[3,0]) tuple(r, n, x)
})");
}

const char* kDonatedDus = R"(
HloModule m, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY e {
  buf = f32[8] parameter(0)
  upd = f32[2] parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[8] dynamic-update-slice(buf, upd, i)
})";

TEST(CpuExecutableTest, DonatedParameterUpdatedInPlace) {
  auto exe = MustCompile(kDonatedDus);
  ASSERT_NE(exe, nullptr);
  // Buffer assignment placed the result in the parameter: no arena, the update in place.
  const BufferSlice& out = exe->buffer_assignment().output_slices()[0];
  EXPECT_EQ(exe->buffer_assignment().allocations()[out.allocation].kind, BufferAllocation::Kind::kParameter);
  std::vector<float> buf = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<float> upd = {-1, -2};
  int32_t i = 3;
  std::vector<void*> raw = {buf.data(), upd.data(), &i};
  auto r = exe->Execute(raw);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs()[0].data, buf.data());
  EXPECT_EQ(buf, (std::vector<float>{0, 1, 2, -1, -2, 5, 6, 7}));
  // Through Run, the caller's literal is never written.
  std::vector<Literal> args;
  args.push_back(R1F32({0, 1, 2, 3, 4, 5, 6, 7}));
  args.push_back(R1F32({9, 9}));
  args.push_back(Literal::CreateR0<int32_t>(PrimitiveType::kS32, 100));  // clamped to 6
  auto lit = exe->Run(args);
  ASSERT_TRUE(lit.ok()) << lit.status().ToString();
  EXPECT_EQ(F32s(*lit), (std::vector<float>{0, 1, 2, 3, 4, 5, 9, 9}));
  EXPECT_EQ(F32s(args[0]), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(CpuExecutableTest, InPlaceDynamicUpdateSliceInLoop) {
  // A loop writing one row per iteration into its state: the state is updated in place.
  ExpectMatchesEvaluator(R"(
HloModule m
cond {
  p = (s32[], f32[6,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[6,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  m = f32[6,4] get-tuple-element(p), index=1
  f = f32[] convert(i)
  row = f32[1,4] broadcast(f), dimensions={}
  z = s32[] constant(0)
  m1 = f32[6,4] dynamic-update-slice(m, row, i, z)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[6,4]) tuple(i1, m1)
}
ENTRY e {
  x = f32[6,4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[6,4]) tuple(z, x)
  w = (s32[], f32[6,4]) while(init), condition=cond, body=body
  ROOT r = f32[6,4] get-tuple-element(w), index=1
})");
}

const char* kTransposedLayouts = R"(
HloModule m, entry_computation_layout={(f32[2,3]{0,1}, f32[2,3]{1,0})->f32[2,3]{0,1}}
ENTRY e {
  a = f32[2,3]{0,1} parameter(0)
  b = f32[2,3]{1,0} parameter(1)
  ROOT s = f32[2,3]{0,1} add(a, b)
})";

TEST(CpuExecutableTest, NonDefaultEntryLayouts) {
  auto exe = MustCompile(kTransposedLayouts);
  ASSERT_NE(exe, nullptr);
  // Logical a = [[0,1,2],[3,4,5]]; column-major memory: 0,3,1,4,2,5.
  std::vector<float> a_phys = {0, 3, 1, 4, 2, 5};
  std::vector<float> b = {10, 20, 30, 40, 50, 60};  // row-major
  std::vector<void*> raw = {a_phys.data(), b.data()};
  auto out = exe->Execute(raw);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const float* r = out->outputs()[0].as<float>();
  // Logical sum [[10,21,32],[43,54,65]] in column-major order.
  EXPECT_EQ(std::vector<float>(r, r + 6), (std::vector<float>{10, 43, 21, 54, 32, 65}));
  EXPECT_EQ(out->outputs()[0].shape.layout().minor_to_major(), (std::vector<int64_t>{0, 1}));
  // Literals are logical whatever the layout.
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape(PrimitiveType::kF32, {2, 3}), {0, 1, 2, 3, 4, 5}));
  args.push_back(Literal::FromDoubles(Shape(PrimitiveType::kF32, {2, 3}), {10, 20, 30, 40, 50, 60}));
  auto lit = exe->Run(args);
  ASSERT_TRUE(lit.ok()) << lit.status().ToString();
  EXPECT_EQ(F32s(*lit), (std::vector<float>{10, 21, 32, 43, 54, 65}));
}

TEST(CpuExecutableTest, BitcastWithLayoutsIsNormalized) {
  // f32[2,3]{0,1} bitcast to f32[3,2]{1,0}: the same bytes, i.e. a transpose.
  ExpectMatchesEvaluator(R"(
HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  t = f32[2,3]{0,1} copy(a)
  ROOT b = f32[3,2]{1,0} bitcast(t)
})");
}

TEST(CpuExecutableTest, ConcurrentRunsOnOneExecutable) {
  auto exe = MustCompile(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,64] parameter(0)
  y = f32[64,64] exponential(x)
  d = f32[64,64] dot(y, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(d, z), dimensions={1}, to_apply=add
})");
  ASSERT_NE(exe, nullptr);
  std::vector<std::vector<Literal>> inputs;
  std::vector<Literal> expected;
  for (int t = 0; t < 4; ++t) {
    inputs.push_back(testing::RandomArgs(exe->module(), 100 + t));
    auto r = exe->Run(inputs.back(), {.profile = false, .sequential = true});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    expected.push_back(std::move(*r));
  }
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) {
        auto r = exe->Run(inputs[t]);
        if (!r.ok() || !r->BitwiseEquals(expected[t])) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(CpuExecutableTest, ProfileCountsEveryThunk) {
  auto exe = MustCompile(kSwitch);
  ASSERT_NE(exe, nullptr);
  std::vector<Literal> args;
  args.push_back(Literal::CreateR0<int32_t>(PrimitiveType::kS32, 1));
  args.push_back(R1F32({1, 2, 3, 4}));
  ASSERT_TRUE(exe->Run(args, {.profile = true}).ok());
  std::string report = exe->ProfileReport();
  EXPECT_NE(report.find("conditional %c"), std::string::npos) << report;
  EXPECT_NE(report.find("1 calls"), std::string::npos) << report;
}

TEST(CpuExecutableTest, WrongArgumentsAreErrors) {
  auto exe = MustCompile(kTransposedLayouts);
  ASSERT_NE(exe, nullptr);
  std::vector<Literal> args;
  args.push_back(R1F32({1, 2}));
  auto r = exe->Run(args);
  EXPECT_FALSE(r.ok());
  std::vector<void*> raw = {nullptr, nullptr};
  EXPECT_FALSE(exe->Execute(raw).ok());
}

TEST(CpuExecutableTest, InfeedIsUnsupported) {
  auto module = ParseHloModule(R"(
HloModule m
ENTRY e {
  t = token[] after-all()
  i = (f32[2], token[]) infeed(t)
  ROOT x = f32[2] get-tuple-element(i), index=0
})");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto exe = CpuCompiler::Compile(std::move(*module), TestOptions());
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(exe.status().message().find("infeed"), std::string::npos) << exe.status().message();
}

}  // namespace
}  // namespace kiln::cpu
