// Loop kernel (kLoop fusions and standalone elementwise/shape ops) against the evaluator.
#include <gtest/gtest.h>
#include <cmath>
#include <cstdlib>
#include <random>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/parser.h"

namespace kiln::cpu {
namespace {

using testing::CheckHlo;

TEST(LoopKernelTest, ElementwiseChainF32) {
  CheckHlo(R"(
HloModule m
fused {
  a = f32[37,61] parameter(0)
  b = f32[37,61] parameter(1)
  c = f32[] constant(0.5)
  cb = f32[37,61] broadcast(c), dimensions={}
  m = f32[37,61] multiply(a, cb)
  s = f32[37,61] add(m, b)
  e = f32[37,61] exponential(s)
  ROOT t = f32[37,61] tanh(e)
}
ENTRY e {
  a = f32[37,61] parameter(0)
  b = f32[37,61] parameter(1)
  ROOT f = f32[37,61] fusion(a, b), kind=kLoop, calls=fused
})");
}

TEST(LoopKernelTest, RowColumnScalarBroadcasts) {
  CheckHlo(R"(
HloModule m
fused {
  x = f32[19,33] parameter(0)
  row = f32[33] parameter(1)
  col = f32[19] parameter(2)
  s = f32[] parameter(3)
  rb = f32[19,33] broadcast(row), dimensions={1}
  cb = f32[19,33] broadcast(col), dimensions={0}
  sb = f32[19,33] broadcast(s), dimensions={}
  a = f32[19,33] add(x, rb)
  b = f32[19,33] multiply(a, cb)
  ROOT c = f32[19,33] subtract(b, sb)
}
ENTRY e {
  x = f32[19,33] parameter(0)
  row = f32[33] parameter(1)
  col = f32[19] parameter(2)
  s = f32[] parameter(3)
  ROOT f = f32[19,33] fusion(x, row, col, s), kind=kLoop, calls=fused
})");
}

TEST(LoopKernelTest, TransposeSliceReverseReshape) {
  CheckHlo(R"(
HloModule m
fused {
  x = f32[6,10,7] parameter(0)
  t = f32[7,6,10] transpose(x), dimensions={2,0,1}
  s = f32[7,3,4] slice(t), slice={[0:7], [1:6:2], [2:10:2]}
  r = f32[7,3,4] reverse(s), dimensions={0,2}
  y = f32[21,4] reshape(r)
  z = f32[4,21] transpose(y), dimensions={1,0}
  ROOT n = f32[4,21] negate(z)
}
ENTRY e {
  x = f32[6,10,7] parameter(0)
  ROOT f = f32[4,21] fusion(x), kind=kLoop, calls=fused
})");
}

TEST(LoopKernelTest, PadAndConcatenate) {
  CheckHlo(R"(
HloModule m
fused {
  x = f32[5,9] parameter(0)
  y = f32[5,4] parameter(1)
  z = f32[5,2] parameter(2)
  v = f32[] parameter(3)
  c = f32[5,15] concatenate(x, y, z), dimensions={1}
  p = f32[9,14] pad(c, v), padding=1_3x2_-3
  q = f32[9,14] exponential(p)
  ROOT r = f32[9,14] add(p, q)
}
ENTRY e {
  x = f32[5,9] parameter(0)
  y = f32[5,4] parameter(1)
  z = f32[5,2] parameter(2)
  v = f32[] parameter(3)
  ROOT f = f32[9,14] fusion(x, y, z, v), kind=kLoop, calls=fused
})");
}

TEST(LoopKernelTest, InteriorPaddingAndNegativePadding) {
  CheckHlo(R"(
ENTRY e {
  x = s32[4,5] parameter(0)
  v = s32[] constant(-7)
  ROOT p = s32[10,10] pad(x, v), padding=2_1_1x-1_-2_2
})");
}

TEST(LoopKernelTest, ConcatenateOuterDimension) {
  CheckHlo(R"(
ENTRY e {
  x = bf16[3,8] parameter(0)
  y = bf16[0,8] parameter(1)
  z = bf16[5,8] parameter(2)
  ROOT c = bf16[8,8] concatenate(x, y, z), dimensions={0}
})");
}

TEST(LoopKernelTest, IotaCompareSelect) {
  CheckHlo(R"(
HloModule m
fused {
  labels = s32[12] parameter(0)
  x = f32[12,10] parameter(1)
  io = s32[12,10] iota(), iota_dimension=1
  lb = s32[12,10] broadcast(labels), dimensions={0}
  eq = pred[12,10] compare(io, lb), direction=EQ
  zero = f32[] constant(0)
  zb = f32[12,10] broadcast(zero), dimensions={}
  ROOT s = f32[12,10] select(eq, x, zb)
}
ENTRY e {
  labels = s32[12] parameter(0)
  x = f32[12,10] parameter(1)
  ROOT f = f32[12,10] fusion(labels, x), kind=kLoop, calls=fused
})");
}

TEST(LoopKernelTest, DynamicSlice) {
  CheckHlo(R"(
HloModule m
fused {
  x = f32[9,13] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  one = s32[] constant(3)
  k = s32[] add(j, one)
  d = f32[4,6] dynamic-slice(x, i, k), dynamic_slice_sizes={4,6}
  ROOT n = f32[4,6] sqrt(d)
}
ENTRY e {
  x = f32[9,13] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT f = f32[4,6] fusion(x, i, j), kind=kLoop, calls=fused
})");
}

TEST(LoopKernelTest, MultiOutputDifferentTypes) {
  CheckHlo(R"(
HloModule m
fused {
  x = f32[300] parameter(0)
  y = bf16[300] parameter(1)
  yc = f32[300] convert(y)
  a = f32[300] add(x, yc)
  b = bf16[300] convert(a)
  c = pred[300] compare(x, yc), direction=LT
  ROOT t = (f32[300], bf16[300], pred[300], f32[300]) tuple(a, b, c, x)
}
ENTRY e {
  x = f32[300] parameter(0)
  y = bf16[300] parameter(1)
  ROOT f = (f32[300], bf16[300], pred[300], f32[300]) fusion(x, y), kind=kLoop, calls=fused
})");
}

TEST(LoopKernelTest, ScalarAndSizeOneAndEmpty) {
  CheckHlo(R"(
ENTRY e {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT a = f32[] atan2(x, y)
})");
  CheckHlo(R"(
ENTRY e {
  x = f32[1,5] parameter(0)
  ROOT b = f32[3,1,5,2] broadcast(x), dimensions={1,2}
})",
           "", {});
  CheckHlo(R"(
ENTRY e {
  x = f32[0,5] parameter(0)
  ROOT n = f32[0,5] negate(x)
})");
}

// Every elementwise op over every fast element type it accepts.
TEST(LoopKernelTest, ElementwiseOpsAllTypes) {
  const char* types[] = {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
                         "f16", "bf16", "f32", "f64", "c64", "c128", "s4", "f8e4m3fn"};
  const char* unary[] = {"abs", "negate", "sign", "not", "exponential", "log", "sqrt", "rsqrt",
                         "tanh", "floor", "ceil", "round-nearest-even", "round-nearest-afz",
                         "popcnt", "count-leading-zeros", "is-finite", "logistic", "sine",
                         "cosine", "exponential-minus-one", "log-plus-one", "cbrt", "real",
                         "imag", "erf", "tan", "atan", "acos", "asin", "acosh", "asinh", "atanh",
                         "cosh", "sinh"};
  const char* binary[] = {"add", "subtract", "multiply", "divide", "remainder", "maximum",
                          "minimum", "power", "and", "or", "xor", "shift-left",
                          "shift-right-logical", "shift-right-arithmetic", "atan2", "mulhi"};
  int checked = 0;
  for (const char* t : types) {
    for (const char* op : unary) {
      // Result type: real part / abs of complex, pred for is-finite.
      std::string rt = t;
      std::string sop = op;
      if ((sop == "abs" || sop == "real" || sop == "imag") && std::string(t) == "c64") rt = "f32";
      if ((sop == "abs" || sop == "real" || sop == "imag") && std::string(t) == "c128") rt = "f64";
      if (sop == "is-finite") rt = "pred";
      std::string hlo = StrCat("ENTRY e {\n  x = ", t, "[3,41] parameter(0)\n  ROOT r = ", rt,
                               "[3,41] ", op, "(x)\n}\n");
      auto m = ParseHloModule(hlo);
      if (!m.ok()) continue;  // op not defined for this type (parser/shape check)
      // Skip combinations the evaluator rejects.
      std::vector<Literal> ops = testing::RandomOperands(*testing::Find(**m), 3);
      if (!testing::Reference(*testing::Find(**m), ops).ok()) continue;
      testing::CheckOptions o;
      o.native = false;  // sub-byte/f8 types run the evaluator's element functions
      o.kernel.block_elements = 50;
      o.kernel.min_parallel_elements = 16;
      testing::ExpectMatchesEvaluator(*testing::Find(**m), o, std::move(ops));
      ++checked;
    }
    for (const char* op : binary) {
      std::string hlo = StrCat("ENTRY e {\n  x = ", t, "[3,41] parameter(0)\n  y = ", t,
                               "[3,41] parameter(1)\n  ROOT r = ", t, "[3,41] ", op, "(x, y)\n}\n");
      auto m = ParseHloModule(hlo);
      if (!m.ok()) continue;
      std::vector<Literal> ops = testing::RandomOperands(*testing::Find(**m), 5);
      if (!testing::Reference(*testing::Find(**m), ops).ok()) continue;
      testing::CheckOptions o;
      o.native = false;
      o.kernel.block_elements = 50;
      o.kernel.min_parallel_elements = 16;
      testing::ExpectMatchesEvaluator(*testing::Find(**m), o, std::move(ops));
      ++checked;
    }
    for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
      for (const char* ct : {"", ", type=TOTALORDER", ", type=UNSIGNED", ", type=SIGNED"}) {
        std::string hlo = StrCat("ENTRY e {\n  x = ", t, "[3,41] parameter(0)\n  y = ", t,
                                 "[3,41] parameter(1)\n  ROOT r = pred[3,41] compare(x, y), direction=",
                                 dir, ct, "\n}\n");
        auto m = ParseHloModule(hlo);
        if (!m.ok()) continue;
        std::vector<Literal> ops = testing::RandomOperands(*testing::Find(**m), 7);
        if (!testing::Reference(*testing::Find(**m), ops).ok()) continue;
        testing::CheckOptions o;
        o.native = false;
        testing::ExpectMatchesEvaluator(*testing::Find(**m), o, std::move(ops));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 400);
}

TEST(LoopKernelTest, ConvertAllPairs) {
  const char* types[] = {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16",
                         "bf16", "f32", "f64", "c64", "c128", "s4", "u4", "f8e5m2", "f8e4m3fn"};
  for (const char* from : types)
    for (const char* to : types) {
      std::string hlo = StrCat("ENTRY e {\n  x = ", from, "[5,17] parameter(0)\n  ROOT r = ", to,
                               "[5,17] convert(x)\n}\n");
      auto m = ParseHloModule(hlo);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      const HloInstruction* instr = testing::Find(**m);
      // Random values plus special ones: scale floats so that they overflow integer ranges.
      std::vector<Literal> ops = testing::RandomOperands(*instr, 11);
      Literal& x = ops[0];
      const PrimitiveType ft = x.shape().element_type();
      if (IsFloatingPointType(ft)) {
        const double specials[] = {NAN, INFINITY, -INFINITY, 1e10, -1e10, 3e9, -3e9, 65504,
                                   70000, -0.0, 2.5, -2.5, 255.5, 127.9, 1e-8, 300};
        for (int i = 0; i < 16; ++i) x.SetFromDouble(i, specials[i]);
      }
      testing::CheckOptions o;
      o.native = false;
      testing::ExpectMatchesEvaluator(*instr, o, std::move(ops));
    }
}

TEST(LoopKernelTest, DynamicUpdateSliceFusion) {
  // In place (the buffer parameter has no other user) and not.
  CheckHlo(R"(
HloModule m
fused {
  buf = f32[10,12] parameter(0)
  u = f32[3,12] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  e = f32[3,12] exponential(u)
  ROOT d = f32[10,12] dynamic-update-slice(buf, e, i, z)
}
ENTRY e {
  buf = f32[10,12] parameter(0)
  u = f32[3,12] parameter(1)
  i = s32[] parameter(2)
  ROOT f = f32[10,12] fusion(buf, u, i), kind=kLoop, calls=fused
})");
  CheckHlo(R"(
ENTRY e {
  buf = s64[7,9,5] parameter(0)
  u = s64[2,4,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  k = u8[] parameter(4)
  ROOT d = s64[7,9,5] dynamic-update-slice(buf, u, i, j, k)
})");
}

TEST(LoopKernelTest, DynamicUpdateSliceInPlace) {
  auto m = testing::Parse(R"(
ENTRY e {
  buf = f32[6,4] parameter(0)
  u = f32[2,4] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = f32[6,4] dynamic-update-slice(buf, u, i, z)
})");
  const HloInstruction* dus = testing::Find(*m);
  auto k = CreateCpuKernel(*dus);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE((*k)->SupportsInPlace(0, 0));
  std::vector<Literal> ops = testing::RandomOperands(*dus, 3);
  auto want = testing::Reference(*dus, ops);
  ASSERT_TRUE(want.ok());
  // Run with the output aliasing operand 0.
  std::vector<ArrayView> in, out;
  for (Literal& l : ops) in.push_back({l.untyped_data(), l.shape()});
  out.push_back({ops[0].untyped_data(), ops[0].shape()});
  KernelContext ctx;
  ctx.pool = testing::TestPool();
  ASSERT_TRUE((*k)->Run(in, out, ctx).ok());
  EXPECT_TRUE(ops[0].BitwiseEquals(*want));
}

// Note [In-place loop kernels]: an output that is also an input (a loop state updated from its
// old value), with a second root that reads the same input after the first is computed, over
// many blocks and both threads. Without the scratch path the second root (and exp's operand)
// would read values the first root already overwrote.
TEST(LoopKernelTest, OutputOverlappingAnInputReadsOnlyOldValues) {
  auto m = ParseHloModule(R"(
HloModule m
fused {
  x = f32[5000] parameter(0)
  e = f32[5000] exponential(x)
  a = f32[5000] add(e, x)
  b = f32[5000] multiply(x, x)
  ROOT t = (f32[5000], f32[5000]) tuple(a, b)
}
ENTRY e {
  x = f32[5000] parameter(0)
  ROOT f = (f32[5000], f32[5000]) fusion(x), kind=kLoop, calls=fused
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HloInstruction* f = (*m)->entry_computation()->root_instruction();
  CpuKernelOptions options;
  options.block_elements = 256;
  auto kernel = CreateCpuKernel(*f, options);
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
  std::vector<float> x(5000), second(5000, std::nanf(""));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2, 2);
  for (float& v : x) v = u(rng);
  const std::vector<float> old = x;
  const Shape s = Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {5000});
  const ArrayView in[1] = {{x.data(), s}};
  const ArrayView out[2] = {{x.data(), s}, {second.data(), s}};
  KernelContext ctx;
  ctx.pool = testing::TestPool();
  ASSERT_TRUE((*kernel)->Run(in, out, ctx).ok());
  for (size_t i = 0; i < old.size(); ++i) {
    ASSERT_NEAR(x[i], std::exp(old[i]) + old[i], 1e-5 * (1 + std::abs(x[i]))) << i;
    ASSERT_FLOAT_EQ(second[i], old[i] * old[i]) << i;
  }
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Rows of 256+ elements make a block one row (or an even part of one): values broadcast along
// the rows are then one element per block (Note [Uniform block values]). Every consumer kind of
// such values: scalar-operand loops on either side, chains of uniform values, generic
// per-element ops, select/clamp/compare, pad and concatenate operands, uniform roots.
TEST(LoopKernelTest, UniformRowValues) {
  for (const char* t : {"f32", "f64", "bf16", "s32", "f16"}) {
    const std::string hlo = StrCat(R"(
HloModule m
fused {
  x = $T[6,300] parameter(0)
  v = $T[6] parameter(1)
  w = $T[6] parameter(2)
  vb = $T[6,300] broadcast(v), dimensions={0}
  wb = $T[6,300] broadcast(w), dimensions={0}
  u = $T[6,300] multiply(vb, wb)
  u2 = $T[6,300] maximum(u, vb)
  a = $T[6,300] subtract(x, u2)
  b = $T[6,300] divide(vb, x)
  c = $T[6,300] minimum(a, b)
  p = pred[6,300] compare(vb, x), direction=LT
  s = $T[6,300] select(p, c, wb)
  cl = $T[6,300] clamp(wb, s, u)
  ROOT r = $T[6,300] add(cl, x)
}
ENTRY e {
  x = $T[6,300] parameter(0)
  v = $T[6] parameter(1)
  w = $T[6] parameter(2)
  ROOT f = $T[6,300] fusion(x, v, w), kind=kLoop, calls=fused
})");
    SCOPED_TRACE(t);
    std::string text = hlo;
    for (size_t p = text.find("$T"); p != std::string::npos; p = text.find("$T"))
      text.replace(p, 2, t);
    CheckHlo(text);
    if (HasFailure()) return;
  }
}

TEST(LoopKernelTest, UniformRootsPadConcatAndMultiOutput) {
  CheckHlo(R"(
HloModule m
fused {
  x = f32[4,512] parameter(0)
  v = f32[4] parameter(1)
  vb = f32[4,512] broadcast(v), dimensions={0}
  e = f32[4,512] exponential(vb)
  l = f32[4,512] log(e)
  neg = f32[4,512] negate(l)
  ROOT t = (f32[4,512], f32[4,512], f32[4,512]) tuple(neg, vb, x)
}
ENTRY e {
  x = f32[4,512] parameter(0)
  v = f32[4] parameter(1)
  ROOT f = (f32[4,512], f32[4,512], f32[4,512]) fusion(x, v), kind=kLoop, calls=fused
})");
  CheckHlo(R"(
HloModule m
fused {
  v = f32[3] parameter(0)
  x = f32[3,200] parameter(1)
  vb = f32[3,100] broadcast(v), dimensions={0}
  z = f32[] constant(-2)
  pd = f32[3,300] pad(vb, z), padding=0_0x50_150
  cc = f32[3,300] concatenate(vb, x), dimensions={1}
  ROOT r = f32[3,300] add(pd, cc)
}
ENTRY e {
  v = f32[3] parameter(0)
  x = f32[3,200] parameter(1)
  ROOT f = f32[3,300] fusion(v, x), kind=kLoop, calls=fused
})");
  // Rows longer than a block: blocks are an even split of a row.
  CheckHlo(R"(
HloModule m
fused {
  x = f32[3,5000] parameter(0)
  v = f32[3] parameter(1)
  vb = f32[3,5000] broadcast(v), dimensions={0}
  s = f32[3,5000] subtract(vb, x)
  ROOT r = f32[3,5000] multiply(s, vb)
}
ENTRY e {
  x = f32[3,5000] parameter(0)
  v = f32[3] parameter(1)
  ROOT f = f32[3,5000] fusion(x, v), kind=kLoop, calls=fused
})");
}


// Outputs of 4 MiB or more are streamed out (Note [Streaming stores]); rows of 1031 elements
// put the blocks' destinations off 64-byte boundaries, and one root is a parameter (its
// block points into the input).
TEST(LoopKernelTest, LargeOutputsStreamed) {
  testing::CheckOptions o;
  o.kernel.min_parallel_elements = 1 << 16;
  std::unique_ptr<HloModule> m = testing::Parse(R"(
HloModule m
fused {
  x = f32[520,1031] parameter(0)
  r = f32[520] parameter(1)
  rb = f32[520,1031] broadcast(r), dimensions={0}
  s = f32[520,1031] subtract(x, rb)
  e = f32[520,1031] exponential(s)
  ROOT t = (f32[520,1031], f32[520,1031]) tuple(e, x)
}
ENTRY e {
  x = f32[520,1031] parameter(0)
  r = f32[520] parameter(1)
  ROOT f = (f32[520,1031], f32[520,1031]) fusion(x, r), kind=kLoop, calls=fused
})");
  ASSERT_NE(m, nullptr);
  const HloInstruction* instr = testing::Find(*m, "f");
  ASSERT_NE(instr, nullptr);
  for (bool pool : {false, true}) {
    o.with_pool = pool;
    testing::ExpectMatchesEvaluator(*instr, o);
  }
}

// One kernel run several times on new operands: the second and later runs take the first's
// recycled scratch (Note [Recycled scratch]) and the precomputed block runs (Note [Precomputed
// block runs]), except for the dynamic-slice read, whose runs follow the start index.
namespace reuse {
TEST(LoopKernelTest, SameKernelManyRunsNewOperands) {
  std::unique_ptr<HloModule> m = testing::Parse(R"(
HloModule m
fused {
  x = f32[37,64] parameter(0)
  r = f32[37] parameter(1)
  c = f32[64] parameter(2)
  i = s32[] parameter(3)
  big = f32[45,64] parameter(4)
  zero = s32[] constant(0)
  rb = f32[37,64] broadcast(r), dimensions={0}
  cb = f32[37,64] broadcast(c), dimensions={1}
  s = f32[37,64] subtract(x, rb)
  p = f32[37,64] multiply(s, cb)
  d = f32[37,64] dynamic-slice(big, i, zero), dynamic_slice_sizes={37,64}
  ROOT a = f32[37,64] add(p, d)
}
ENTRY e {
  x = f32[37,64] parameter(0)
  r = f32[37] parameter(1)
  c = f32[64] parameter(2)
  i = s32[] parameter(3)
  big = f32[45,64] parameter(4)
  ROOT f = f32[37,64] fusion(x, r, c, i, big), kind=kLoop, calls=fused
})");
  ASSERT_NE(m, nullptr);
  const HloInstruction* instr = testing::Find(*m, "f");
  ASSERT_NE(instr, nullptr);
  for (int64_t block : {int64_t{64}, int64_t{7}, int64_t{2048}}) {
    CpuKernelOptions o;
    o.block_elements = block;
    o.min_parallel_elements = 16;
    StatusOr<std::unique_ptr<CpuKernel>> kernel = CreateCpuKernel(*instr, o);
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      std::vector<Literal> ops = testing::RandomOperands(*instr, seed);
      // Start rows 0..8 (clamped to 8): a different window each run.
      ops[3] = Literal::CreateR0<int32_t>(PrimitiveType::kS32, static_cast<int32_t>(seed * 3 - 3));
      StatusOr<Literal> want = testing::Reference(*instr, ops);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      for (bool pool : {false, true}) {
        StatusOr<Literal> got =
            testing::RunKernel(**kernel, *instr, ops, pool ? testing::TestPool() : nullptr);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        Comparison c = CompareLiterals(*got, *want, CompareOptions{});
        EXPECT_TRUE(c.ok()) << "block " << block << " seed " << seed << " pool " << pool << ":\n"
                            << c.ToString();
      }
    }
  }
}
}  // namespace reuse

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Note [Parallel grain]: loops split by work (many ops over few elements go parallel; chunks of
// whole blocks), repeated subexpressions computed once (Note [Common elementwise values]);
// pools of 1, 2, 3 and 16 threads, fresh random inputs, against the evaluator.
TEST(LoopKernelTest, ParallelGrainAndCommonValuesMatchEvaluator) {
  const uint64_t seed = static_cast<uint64_t>(std::random_device{}());
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t : {1, 2, 3, 16}) pools.push_back(std::make_unique<ThreadPool>(t));
  for (const char* dims : {"16,256", "1,1", "3,5", "7,1031", "256,2048", "2,1,4097"}) {
    const std::string hlo = StrCat(R"(
HloModule m
fused {
  x = f32[)", dims, R"(] parameter(0)
  y = f32[)", dims, R"(] parameter(1)
  h = f32[] constant(0.5)
  hb = f32[)", dims, R"(] broadcast(h), dimensions={}
  p = f32[)", dims, R"(] multiply(x, y)
  q = f32[)", dims, R"(] multiply(p, hb)
  p2 = f32[)", dims, R"(] multiply(x, y)
  q2 = f32[)", dims, R"(] multiply(p2, hb)
  t = f32[)", dims, R"(] tanh(q2)
  l = f32[)", dims, R"(] logistic(p)
  e = f32[)", dims, R"(] exponential(l)
  c = pred[)", dims, R"(] compare(x, y), direction=LT
  c2 = pred[)", dims, R"(] compare(x, y), direction=GT
  s = f32[)", dims, R"(] select(c, t, e)
  s2 = f32[)", dims, R"(] select(c2, t, e)
  a = f32[)", dims, R"(] add(s, q)
  ROOT r = (f32[)", dims, R"(], f32[)", dims, R"(]) tuple(a, s2)
}
ENTRY e {
  x = f32[)", dims, R"(] parameter(0)
  y = f32[)", dims, R"(] parameter(1)
  ROOT f = (f32[)", dims, R"(], f32[)", dims, R"(]) fusion(x, y), kind=kLoop, calls=fused
})");
    testing::CheckOnPools(hlo, pools, seed, StrCat("dims ", dims));
  }
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Note [Common elementwise values]: a fusion that computes x*y*0.5 twice (as fusion duplicates
// producers) compiles to as many block ops as one that computes it once.
TEST(LoopKernelTest, RepeatedSubexpressionsComputedOnce) {
  auto ops_of = [](const std::string& body) -> std::string {
    const std::string hlo = StrCat(R"(
HloModule m
fused {
  x = f32[8,300] parameter(0)
  y = f32[8,300] parameter(1)
  h = f32[] constant(0.5)
  hb = f32[8,300] broadcast(h), dimensions={}
  p = f32[8,300] multiply(x, y)
  q = f32[8,300] multiply(p, hb)
)", body, R"(
}
ENTRY e {
  x = f32[8,300] parameter(0)
  y = f32[8,300] parameter(1)
  ROOT f = f32[8,300] fusion(x, y), kind=kLoop, calls=fused
})");
    std::unique_ptr<HloModule> m = testing::Parse(hlo);
    if (!m) return "";
    StatusOr<std::unique_ptr<CpuKernel>> k = CreateCpuKernel(*testing::Find(*m));
    if (!k.ok()) return k.status().ToString();
    testing::CheckOptions o;
    testing::ExpectMatchesEvaluator(*testing::Find(*m), o);
    return (*k)->name();
  };
  const std::string once = ops_of("  ROOT s = f32[8,300] add(q, q)");
  const std::string twice = ops_of(R"(  hb2 = f32[8,300] broadcast(h), dimensions={}
  p2 = f32[8,300] multiply(x, y)
  q2 = f32[8,300] multiply(p2, hb2)
  ROOT s = f32[8,300] add(q, q2))");
  EXPECT_NE(once.find(" ops"), std::string::npos) << once;
  EXPECT_EQ(once, twice);
  // Different comparison directions are different values.
  const std::string lt_gt = ops_of(R"(  c = pred[8,300] compare(x, y), direction=LT
  c2 = pred[8,300] compare(x, y), direction=GT
  a = f32[8,300] select(c, q, p)
  ROOT s = f32[8,300] select(c2, a, q))");
  const std::string lt_lt = ops_of(R"(  c = pred[8,300] compare(x, y), direction=LT
  c2 = pred[8,300] compare(x, y), direction=LT
  a = f32[8,300] select(c, q, p)
  ROOT s = f32[8,300] select(c2, a, q))");
  EXPECT_NE(lt_gt, lt_lt);
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Note [Fused op chains] (expr_compile.cc): runs of f32 add/subtract/multiply/divide (and tanh)
// whose intermediates have one reader become one register-resident op. Each pattern against the
// evaluator on random inputs, bit-exact where no tanh is involved (the same IEEE operations in
// the same order), with block operands, row-uniform operands (rows of 256+ elements), scalar
// broadcasts, the chain value on either side, odd sizes (packet tails) and the kernel's
// block sizes.
std::string ChainHlo(const std::string& dims, const std::string& body) {
  std::string text = StrCat(R"(
HloModule m
fused {
  x = f32[$D] parameter(0)
  y = f32[$D] parameter(1)
  v = f32[$R] parameter(2)
  w = f32[$R] parameter(3)
  g = f32[$C] parameter(4)
  vb = f32[$D] broadcast(v), dimensions={0}
  wb = f32[$D] broadcast(w), dimensions={0}
  gb = f32[$D] broadcast(g), dimensions={1}
  k = f32[] constant(0.375)
  kb = f32[$D] broadcast(k), dimensions={}
)", body, R"(
}
ENTRY e {
  x = f32[$D] parameter(0)
  y = f32[$D] parameter(1)
  v = f32[$R] parameter(2)
  w = f32[$R] parameter(3)
  g = f32[$C] parameter(4)
  ROOT f = f32[$D] fusion(x, y, v, w, g), kind=kLoop, calls=fused
})");
  const size_t comma = dims.find(',');
  const std::string rows = dims.substr(0, comma), cols = dims.substr(comma + 1);
  for (const auto& [key, val] : {std::pair<std::string, std::string>{"$D", dims},
                                 {"$R", rows}, {"$C", cols}})
    for (size_t p = text.find(key); p != std::string::npos; p = text.find(key))
      text.replace(p, key.size(), val);
  return text;
}

struct ChainCase {
  const char* name;
  const char* body;
  bool exact;
};

const ChainCase kChainCases[] = {
    {"layernorm_final", R"(  s = f32[$D] subtract(x, vb)
  t = f32[$D] multiply(s, wb)
  u = f32[$D] multiply(t, gb)
  ROOT r = f32[$D] add(u, y))", true},
    {"square_of_difference", R"(  s = f32[$D] subtract(x, vb)
  ROOT r = f32[$D] multiply(s, s))", true},
    {"reversed_operands", R"(  s = f32[$D] subtract(vb, x)
  t = f32[$D] divide(y, s)
  u = f32[$D] subtract(kb, t)
  a = f32[$D] add(gb, u)
  d = f32[$D] divide(a, wb)
  ROOT r = f32[$D] multiply(kb, d))", true},
    {"uniform_head", R"(  s = f32[$D] multiply(vb, wb)
  t = f32[$D] add(s, vb)
  u = f32[$D] subtract(t, x)
  ROOT r = f32[$D] multiply(u, u))", true},
    {"uniform_only", R"(  s = f32[$D] multiply(vb, wb)
  t = f32[$D] add(s, vb)
  ROOT r = f32[$D] divide(t, kb))", true},
    {"shared_intermediate", R"(  s = f32[$D] subtract(x, vb)
  t = f32[$D] multiply(s, wb)
  u = f32[$D] multiply(t, s)
  a = f32[$D] add(u, t)
  ROOT r = f32[$D] multiply(a, y))", true},
    {"long_chain_split", R"(  a1 = f32[$D] add(x, y)
  a2 = f32[$D] multiply(a1, kb)
  a3 = f32[$D] subtract(a2, vb)
  a4 = f32[$D] multiply(a3, gb)
  a5 = f32[$D] add(y, a4)
  a6 = f32[$D] multiply(a5, a5)
  a7 = f32[$D] subtract(a6, x)
  a8 = f32[$D] divide(a7, wb)
  a9 = f32[$D] add(a8, kb)
  a10 = f32[$D] multiply(a9, x)
  a11 = f32[$D] subtract(a10, gb)
  ROOT r = f32[$D] multiply(a11, y))", true},
    {"gelu_tanh", R"(  x2 = f32[$D] multiply(x, x)
  x3 = f32[$D] multiply(x2, x)
  m1 = f32[$D] multiply(x3, kb)
  a1 = f32[$D] add(x, m1)
  m2 = f32[$D] multiply(a1, wb)
  t = f32[$D] tanh(m2)
  a2 = f32[$D] add(t, kb)
  m3 = f32[$D] multiply(a2, gb)
  ROOT r = f32[$D] multiply(x, m3))", false},
    {"tanh_head_and_tail", R"(  t = f32[$D] tanh(x)
  a = f32[$D] multiply(t, y)
  ROOT r = f32[$D] tanh(a))", false},
};

TEST(LoopKernelTest, FusedChainsMatchEvaluator) {
  for (bool chains : {true, false}) {  // CpuKernelOptions::expr_chains (cpu_expr_chains)
    for (const char* dims : {"37,61", "5,301", "3,1024", "1,17", "2,7"}) {
      for (const ChainCase& c : kChainCases) {
        SCOPED_TRACE(StrCat(c.name, " f32[", dims, "]", chains ? "" : " without chains"));
        testing::CheckOptions o;
        o.kernel.expr_chains = chains;
        if (c.exact) {
          o.rtol = 0.0;
          o.atol = 0.0;
        }
        CheckHlo(ChainHlo(dims, c.body), "", o);
        if (HasFailure()) return;
      }
    }
  }
}

// A chain is one block op: the layer norm's final loop (4 ops) and GELU (9 ops) each become one,
// a shared intermediate keeps its producer separate, and a multi-output fusion's roots stay
// materialized.
TEST(LoopKernelTest, FusedChainsAreOneOp) {
  auto ops_of = [](const std::string& hlo, const CpuKernelOptions& options = {}) -> std::string {
    std::unique_ptr<HloModule> m = testing::Parse(hlo);
    if (!m) return "";
    StatusOr<std::unique_ptr<CpuKernel>> k = CreateCpuKernel(*testing::Find(*m), options);
    if (!k.ok()) return k.status().ToString();
    return (*k)->name();
  };
  // Each program: maps and reads of x, y, v, w, g (as used) plus its computed ops.
  const std::string ln = ops_of(ChainHlo("5,301", kChainCases[0].body));
  const std::string gelu = ops_of(ChainHlo("5,301", kChainCases[7].body));
  const std::string shared = ops_of(ChainHlo("5,301", kChainCases[5].body));
  // ln: the loop map, 5 reads (x, y, v, w, g), 3 broadcast maps, 1 chain (4 ops before).
  EXPECT_EQ(ln, "loop_fusion[f32[5,301], 10 ops]");
  // gelu: the loop map, the scalar map, 3 reads (x, w, g), 2 broadcast maps, 1 chain (9
  // ops before, tanh included).
  EXPECT_EQ(gelu, "loop_fusion[f32[5,301], 8 ops]");
  // shared: s and t have two readers each and stay; u, a, r are one chain (5 ops -> 3).
  EXPECT_EQ(shared, "loop_fusion[f32[5,301], 10 ops]");
  // CpuKernelOptions::expr_chains off (flag cpu_expr_chains=off): every op stays separate.
  CpuKernelOptions separate;
  separate.expr_chains = false;
  EXPECT_EQ(ops_of(ChainHlo("5,301", kChainCases[0].body), separate),
            "loop_fusion[f32[5,301], 13 ops]");
  EXPECT_EQ(ops_of(ChainHlo("5,301", kChainCases[7].body), separate),
            "loop_fusion[f32[5,301], 15 ops]");
  EXPECT_EQ(ops_of(ChainHlo("5,301", kChainCases[5].body), separate),
            "loop_fusion[f32[5,301], 12 ops]");
}

}  // namespace
}  // namespace kiln::cpu

namespace kiln::cpu {
namespace {

// Note [Contiguous dynamic slices]: a slice that is one range of its operand (a scan's step of
// stacked weights) is one copy from the clamped start; others stay on the block program.
TEST(LoopKernelTest, ContiguousDynamicSliceIsOneCopy) {
  struct Case {
    const char* hlo;
    bool contiguous;
  };
  const Case cases[] = {
      {R"(
HloModule m
fused {
  x = f32[3,5,7] parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  d = f32[1,5,7] dynamic-slice(x, i, z, z), dynamic_slice_sizes={1,5,7}
  ROOT r = f32[5,7] reshape(d)
}
ENTRY e {
  x = f32[3,5,7] parameter(0)
  i = s32[] parameter(1)
  ROOT f = f32[5,7] fusion(x, i), kind=kLoop, calls=fused
})", true},
      // Rows [i, i+2) of dim 1 under a unit dim 0 (one range), s64 indices, computed start.
      {R"(
HloModule m
fused {
  x = f32[4,6,8] parameter(0)
  i = s64[] parameter(1)
  j = s64[] parameter(2)
  one = s64[] constant(1)
  k = s64[] add(j, one)
  z = s64[] constant(0)
  d = f32[1,2,8] dynamic-slice(x, i, k, z), dynamic_slice_sizes={1,2,8}
  ROOT r = f32[16] reshape(d)
}
ENTRY e {
  x = f32[4,6,8] parameter(0)
  i = s64[] parameter(1)
  j = s64[] parameter(2)
  ROOT f = f32[16] fusion(x, i, j), kind=kLoop, calls=fused
})", true},
      // Columns: not one range.
      {R"(
HloModule m
fused {
  x = f32[4,6] parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
  ROOT d = f32[4,2] dynamic-slice(x, z, i), dynamic_slice_sizes={4,2}
}
ENTRY e {
  x = f32[4,6] parameter(0)
  i = s32[] parameter(1)
  ROOT f = f32[4,2] fusion(x, i), kind=kLoop, calls=fused
})", false},
      // Standalone dynamic-slice, not fused.
      {R"(
HloModule m
ENTRY e {
  x = f32[5,3] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT d = f32[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,3}
})", true},
  };
  for (const Case& c : cases) {
    std::unique_ptr<HloModule> m = testing::Parse(c.hlo);
    ASSERT_NE(m, nullptr);
    const HloInstruction* instr = testing::Find(*m);
    StatusOr<std::unique_ptr<CpuKernel>> kernel = CreateCpuKernel(*instr);
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    EXPECT_EQ((*kernel)->name().find("slice_copy") == 0, c.contiguous) << (*kernel)->name();
    // Starts below 0, in range and past the end (clamped).
    for (int64_t start : {-3, 0, 1, 2, 9}) {
      std::vector<Literal> ops = testing::RandomOperands(*instr, static_cast<uint64_t>(start + 10));
      for (size_t o = 1; o < ops.size(); ++o) {
        const PrimitiveType t = instr->operand(o)->shape().element_type();
        ops[o] = t == PrimitiveType::kS64
                     ? Literal::CreateR0<int64_t>(t, start)
                     : Literal::CreateR0<int32_t>(t, static_cast<int32_t>(start));
      }
      StatusOr<Literal> want = testing::Reference(*instr, ops);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      for (bool pool : {false, true}) {
        StatusOr<Literal> got =
            testing::RunKernel(**kernel, *instr, ops, pool ? testing::TestPool() : nullptr);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        Comparison cmp = CompareLiterals(*got, *want, CompareOptions{});
        EXPECT_TRUE(cmp.ok()) << (*kernel)->name() << " start " << start << ":\n" << cmp.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace kiln::cpu
