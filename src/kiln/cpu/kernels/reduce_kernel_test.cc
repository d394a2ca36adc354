// Reduction kernel against the evaluator: row, column, middle and full reductions, every native
// reducer and type family, general (variadic) reducers, kInput fusions with multiple outputs.
#include <gtest/gtest.h>

#include <complex>
#include <cmath>
#include <random>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"
#include "kiln/hlo/parser.h"

namespace kiln::cpu {
namespace {

using testing::CheckHlo;

std::string ReduceHlo(const std::string& type, const std::string& dims, const std::string& out,
                      const std::string& rdims, const std::string& op, const std::string& init) {
  return StrCat("HloModule m\nred {\n  a = ", type, "[] parameter(0)\n  b = ", type,
                "[] parameter(1)\n  ROOT c = ", type, "[] ", op, "(a, b)\n}\nENTRY e {\n  x = ",
                type, "[", dims, "] parameter(0)\n  i = ", type, "[] constant(", init,
                ")\n  ROOT r = ", type, "[", out, "] reduce(x, i), dimensions={", rdims,
                "}, to_apply=red\n}\n");
}

TEST(ReduceKernelTest, Layouts) {
  struct Case {
    const char* dims;
    const char* out;
    const char* rdims;
  };
  const Case cases[] = {
      {"37,129", "37", "1"},         // rows
      {"129,37", "37", "0"},         // columns
      {"5,77,9", "5,9", "1"},        // middle: batched columns
      {"6,7,8,9", "7,9", "0,2"},     // interleaved
      {"4000", "", "0"},             // full
      {"3,5000", "", "0,1"},         // full, 2-D
      {"2,3000", "2", "1"},          // few long rows: split rows
      {"3000,3", "3", "0"},          // few columns, long: split columns
      {"1,1,7", "1,1", "2"},
      {"0,5", "5", "0"},             // empty reduction
      {"5,0", "5", "1"},
      {"0,5", "0", "1"},             // empty output
      {"6,1,4", "6,1,4", ""},        // no reduced dims
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(StrCat("[", c.dims, "] dims={", c.rdims, "}"));
    CheckHlo(ReduceHlo("f32", c.dims, c.out, c.rdims, "add", "0"));
    CheckHlo(ReduceHlo("s32", c.dims, c.out, c.rdims, "maximum", "-2147483648"));
  }
}

// Maps a random operand's floats v in [-1, 1) to 1 + v / 10 (complex: each part), for products.
void NearOne(Literal& l) {
  const PrimitiveType t = l.shape().element_type();
  for (int64_t i = 0; i < l.element_count(); ++i) {
    if (IsComplexType(t)) {
      const std::complex<double> v = l.GetAsComplex(i);
      l.SetFromComplex(i, {1 + v.real() / 10, v.imag() / 10});
    } else if (IsFloatingPointType(t)) {
      l.SetFromDouble(i, 1 + l.GetAsDouble(i) / 10);
    }
  }
}

TEST(ReduceKernelTest, OpsAndTypes) {
  const char* types[] = {"pred", "s8", "s32", "s64", "u8", "u32", "u64", "f16", "bf16", "f32",
                         "f64", "c64", "c128"};
  const char* ops[] = {"add", "multiply", "maximum", "minimum", "and", "or", "xor"};
  int checked = 0;
  for (const char* t : types)
    for (const char* op : ops)
      for (const char* layout : {"rows", "cols"}) {
        const bool rows = std::string(layout) == "rows";
        std::string init = std::string(t) == "pred" ? "false" : "1";
        std::string hlo = ReduceHlo(t, "23,45", rows ? "23" : "45", rows ? "1" : "0", op, init);
        auto m = ParseHloModule(hlo);
        if (!m.ok()) continue;
        std::vector<Literal> operands = testing::RandomOperands(*testing::Find(**m), 9);
        const bool product = std::string(op) == "multiply";
        // Products of 23 or 45 values in [-1, 1) are ~1e-10 and pass any atol even when zero:
        // floats are multiplied near 1 (in [0.9, 1.1)), so the products stay near 1 too.
        if (product) NearOne(operands[0]);
        StatusOr<Literal> want = testing::Reference(*testing::Find(**m), operands);
        if (!want.ok()) continue;
        if (product && (IsFloatingPointType(want->shape().element_type()) ||
                        IsComplexType(want->shape().element_type())))
          for (int64_t i = 0; i < want->element_count(); ++i)  // a zero result would fail
            ASSERT_GT(std::abs(want->GetAsComplex(i)), 0.05) << t << " " << layout << " element " << i;
        testing::CheckOptions o;
        o.kernel.block_elements = 64;
        o.kernel.min_parallel_elements = 16;
        // Products of 45 narrow floats drift from the evaluator's per-step rounding.
        if (product && (std::string(t) == "f16" || std::string(t) == "bf16")) o.rtol = 0.1;
        testing::ExpectMatchesEvaluator(*testing::Find(**m), o, std::move(operands));
        ++checked;
      }
  EXPECT_GT(checked, 100);
}

TEST(ReduceKernelTest, NaNPropagatesThroughMaximum) {
  auto m = testing::Parse(ReduceHlo("f32", "4,100", "4", "1", "maximum", "-inf"));
  const HloInstruction* r = testing::Find(*m);
  std::vector<Literal> ops = testing::RandomOperands(*r, 1);
  ops[0].SetFromDouble(150, NAN);
  ops[0].SetFromDouble(399, NAN);
  testing::ExpectMatchesEvaluator(*r, {}, std::move(ops));
}

TEST(ReduceKernelTest, ArgmaxVariadic) {
  CheckHlo(R"(
HloModule m
argmax {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  pick = pred[] or(gt, tie)
  v = f32[] select(pick, a, b)
  i = s32[] select(pick, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[17,300] parameter(0)
  io = s32[17,300] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  z = s32[] constant(0)
  ROOT r = (f32[17], s32[17]) reduce(x, io, ninf, z), dimensions={1}, to_apply=argmax
})");
}

TEST(ReduceKernelTest, InputFusionMultiOutput) {
  // Layer-norm statistics: sum and sum of squares of the rows, plus the centred input.
  CheckHlo(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
fused {
  x = f32[33,257] parameter(0)
  bias = f32[257] parameter(1)
  bb = f32[33,257] broadcast(bias), dimensions={1}
  y = f32[33,257] add(x, bb)
  sq = f32[33,257] multiply(y, y)
  z = f32[] constant(0)
  s1 = f32[33] reduce(y, z), dimensions={1}, to_apply=add
  s2 = f32[33] reduce(sq, z), dimensions={1}, to_apply=add
  ROOT t = (f32[33], f32[33], f32[33,257]) tuple(s1, s2, y)
}
ENTRY e {
  x = f32[33,257] parameter(0)
  bias = f32[257] parameter(1)
  ROOT f = (f32[33], f32[33], f32[33,257]) fusion(x, bias), kind=kInput, calls=fused
})");
  // A column reduction with a loop output (permuted loop space: the outputs are strided).
  CheckHlo(R"(
HloModule m
mx {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT c = bf16[] maximum(a, b)
}
fused {
  x = bf16[7,50,9] parameter(0)
  e = bf16[7,50,9] exponential(x)
  init = bf16[] constant(-inf)
  r = bf16[7,9] reduce(e, init), dimensions={1}, to_apply=mx
  ROOT t = (bf16[7,9], bf16[7,50,9]) tuple(r, e)
}
ENTRY e {
  x = bf16[7,50,9] parameter(0)
  ROOT f = (bf16[7,9], bf16[7,50,9]) fusion(x), kind=kInput, calls=fused
})");
  CheckHlo(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
fused {
  x = f32[6,40,8] parameter(0)
  c = f32[6,40,8] cosine(x)
  init = f32[] constant(0)
  r = f32[40] reduce(c, init), dimensions={0,2}, to_apply=add
  ROOT t = (f32[40], f32[6,40,8]) tuple(r, c)
}
ENTRY e {
  x = f32[6,40,8] parameter(0)
  ROOT f = (f32[40], f32[6,40,8]) fusion(x), kind=kInput, calls=fused
})");
}

TEST(ReduceKernelTest, NonIdentityInit) {
  CheckHlo(ReduceHlo("f32", "9,31", "9", "1", "add", "5.5"));
  CheckHlo(ReduceHlo("s32", "31,9", "9", "0", "multiply", "3"));
  CheckHlo(ReduceHlo("f32", "31,9", "9", "0", "minimum", "-0.25"));
}

TEST(ReduceKernelTest, LargeSumAccuracy) {
  // A long f32 sum: the evaluator sums in double; the kernel must stay within f32 tolerance.
  CheckHlo(ReduceHlo("f32", "3,200000", "3", "1", "add", "0"));
  CheckHlo(ReduceHlo("f32", "200000,3", "3", "0", "add", "0"));
  CheckHlo(ReduceHlo("bf16", "1000000", "", "0", "add", "0"));
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// A row reduction over rows of 256+ elements whose inputs involve row-broadcast (uniform) values,
// with a loop output beside it (softmax's middle kernel).
TEST(ReduceKernelTest, UniformRowValuesSoftmaxMiddle) {
  testing::CheckHlo(R"(
HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }
fused {
  x = f32[5,700] parameter(0)
  m = f32[5] parameter(1)
  mb = f32[5,700] broadcast(m), dimensions={0}
  d = f32[5,700] subtract(x, mb)
  e = f32[5,700] exponential(d)
  z = f32[] constant(0)
  s = f32[5] reduce(e, z), dimensions={1}, to_apply=add
  ROOT t = (f32[5], f32[5,700]) tuple(s, e)
}
ENTRY e {
  x = f32[5,700] parameter(0)
  m = f32[5] parameter(1)
  ROOT f = (f32[5], f32[5,700]) fusion(x, m), kind=kInput, calls=fused
})", "", [] {
    testing::CheckOptions o;
    o.rtol = 1e-5;
    o.atol = 1e-4;
    return o;
  }());
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Float max/min rows fold NaN-free lanes with plain compares and fold a row's first NaN in
// separately: NaNs early, late, in the tail past the last 64 lanes, two in one row, with
// infinities and signed zeros beside them; f32, f64 and bf16 (f32 lanes).
TEST(ReduceKernelTest, NaNAndInfinitiesInFloatMaxMinRows) {
  for (const char* t : {"f32", "f64", "bf16"})
    for (const char* op : {"maximum", "minimum"}) {
      auto m = testing::Parse(ReduceHlo(t, "6,300", "6", "1", op,
                                        std::string(op) == "maximum" ? "-inf" : "inf"));
      const HloInstruction* r = testing::Find(*m);
      std::vector<Literal> ops = testing::RandomOperands(*r, 2);
      ops[0].SetFromDouble(0 * 300 + 3, NAN);
      ops[0].SetFromDouble(1 * 300 + 130, NAN);
      ops[0].SetFromDouble(1 * 300 + 200, -NAN);
      ops[0].SetFromDouble(2 * 300 + 299, NAN);  // the tail (300 = 4 * 64 + 44)
      ops[0].SetFromDouble(3 * 300 + 10, INFINITY);
      ops[0].SetFromDouble(3 * 300 + 11, -INFINITY);
      ops[0].SetFromDouble(4 * 300 + 70, -0.0);
      ops[0].SetFromDouble(5 * 300 + 5, -INFINITY);
      SCOPED_TRACE(StrCat(t, " ", op));
      testing::ExpectMatchesEvaluator(*r, {}, std::move(ops));
    }
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Note [Parallel grain]: column reductions split into parts of R and column tiles, row
// reductions split along rows or within long rows; pools of 1, 2, 3 and 16 threads, default
// and tiny grains, fresh random inputs (the seed is printed on failure), against the evaluator.
TEST(ReduceKernelTest, ParallelSplitsMatchEvaluator) {
  struct Case {
    const char* dims;
    const char* rdims;
    const char* out;
  };
  const Case cases[] = {
      {"256,1024", "0", "1024"},   // bias gradient: one output row, many columns
      {"256,256", "0", "256"},     {"4096,3", "0", "3"},      // few columns, many rows
      {"3,4096", "1", "3"},        // few long rows
      {"1024,128", "1", "1024"},   // many short rows
      {"1,1", "0", "1"},           {"1,777", "0", "777"},     // size-1 reduced dim
      {"777,1", "0", "1"},         {"37,1000,3", "1", "37,3"},  // middle, odd sizes
      {"2,515,1031", "1", "2,1031"}, {"9,2049", "1", "9"},    {"5,33,2", "0,2", "33"},
  };
  const uint64_t seed = static_cast<uint64_t>(std::random_device{}());
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t : {1, 2, 3, 16}) pools.push_back(std::make_unique<ThreadPool>(t));
  for (const Case& c : cases) {
    // A kInput fusion with a loop output, like the GELU-backward bias gradient.
    const std::string hlo = StrCat(R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
fused {
  x = f32[)", c.dims, R"(] parameter(0)
  y = f32[)", c.dims, R"(] parameter(1)
  h = f32[] constant(0.5)
  hb = f32[)", c.dims, R"(] broadcast(h), dimensions={}
  p = f32[)", c.dims, R"(] multiply(x, y)
  q = f32[)", c.dims, R"(] multiply(p, hb)
  p2 = f32[)", c.dims, R"(] multiply(x, y)
  q2 = f32[)", c.dims, R"(] multiply(p2, hb)
  s = f32[)", c.dims, R"(] add(q, q2)
  z = f32[] constant(0)
  r = f32[)", c.out, R"(] reduce(s, z), dimensions={)", c.rdims, R"(}, to_apply=add
  ROOT t = (f32[)", c.out, R"(], f32[)", c.dims, R"(]) tuple(r, s)
}
ENTRY e {
  x = f32[)", c.dims, R"(] parameter(0)
  y = f32[)", c.dims, R"(] parameter(1)
  ROOT f = (f32[)", c.out, R"(], f32[)", c.dims, R"(]) fusion(x, y), kind=kInput, calls=fused
})");
    testing::CheckOnPools(hlo, pools, seed, StrCat("dims ", c.dims));
  }
}

}  // namespace
}  // namespace kiln::cpu
