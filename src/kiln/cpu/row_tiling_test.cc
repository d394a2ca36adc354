// Row tiling (Note [Row tiling]): normalization patterns compiled with small tiles (several
// tiles and a remainder tile, over two threads and one), checked against the reference
// evaluator, and the row-locality analysis on fusions that are or are not row-local.
#include "kiln/cpu/row_tiling.h"

#include <gtest/gtest.h>

#include <string>

#include "kiln/cpu/cpu_test_util.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu {
namespace {

using testing::ExpectMatchesEvaluator;
using testing::TestOptions;

// Tiny tiles: any chain is tiled, tiles of a few rows, so that remainders and many tiles run.
CpuCompileOptions TilingOptions(int threads) {
  CpuCompileOptions o = TestOptions();
  o.threads = threads;
  o.row_tiling_options.min_chain_bytes = 0;
  o.row_tiling_options.tile_bytes = 2048;
  return o;
}

// Compiles `hlo` with tiny tiles, expects `chains` row-tiled chains and the evaluator's result,
// with one thread and with two.
void ExpectTiledMatches(const std::string& hlo, int64_t chains = 1) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    auto module = ParseHloModule(hlo);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto exe = CpuCompiler::Compile(std::move(*module), TilingOptions(threads));
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    EXPECT_EQ((*exe)->compile_stats().row_tiled_chains, chains) << (*exe)->ThunkListing();
    ExpectMatchesEvaluator(hlo, {}, TilingOptions(threads));
  }
}

constexpr char kAdd[] = R"(
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
)";

std::string LayerNorm(const std::string& x_shape, int64_t rows, int64_t cols) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string rc = "f32[" + r + "," + c + "]";
  return std::string("HloModule ln\n") + kAdd + R"(
ENTRY e {
  x = )" + x_shape + R"( parameter(0)
  g = f32[)" + c + R"(] parameter(1)
  b = f32[)" + c + R"(] parameter(2)
  zero = f32[] constant(0)
  sum = f32[)" + r + R"(] reduce(x, zero), dimensions={1}, to_apply=add
  inv = f32[] constant()" + std::to_string(1.0 / static_cast<double>(cols)) + R"()
  invb = f32[)" + r + R"(] broadcast(inv), dimensions={}
  mean = f32[)" + r + R"(] multiply(sum, invb)
  meanb = )" + rc + R"( broadcast(mean), dimensions={0}
  xc = )" + rc + R"( subtract(x, meanb)
  sq = )" + rc + R"( multiply(xc, xc)
  ss = f32[)" + r + R"(] reduce(sq, zero), dimensions={1}, to_apply=add
  var = f32[)" + r + R"(] multiply(ss, invb)
  eps = f32[] constant(1e-5)
  epsb = f32[)" + r + R"(] broadcast(eps), dimensions={}
  ve = f32[)" + r + R"(] add(var, epsb)
  rs = f32[)" + r + R"(] rsqrt(ve)
  rs1 = f32[)" + r + R"(,1] reshape(rs)
  rs2 = f32[)" + r + R"(] reshape(rs1)
  rsb = )" + rc + R"( broadcast(rs2), dimensions={0}
  xn = )" + rc + R"( multiply(xc, rsb)
  gb = )" + rc + R"( broadcast(g), dimensions={1}
  bb = )" + rc + R"( broadcast(b), dimensions={1}
  xg = )" + rc + R"( multiply(xn, gb)
  ROOT y = )" + rc + R"( add(xg, bb)
})";
}

TEST(RowTilingTest, LayerNormOddRows) { ExpectTiledMatches(LayerNorm("f32[301,37]", 301, 37)); }

// Rows of one element: the simplifier turns the reductions into their element, leaving one
// loop fusion (nothing to chain); the same over rows of 1 x 5 elements is tiled.
TEST(RowTilingTest, LayerNormRowsOfOne) { ExpectTiledMatches(LayerNorm("f32[67,1]", 67, 1), 0); }

TEST(RowTilingTest, LayerNormColumnMajorInput) {
  ExpectTiledMatches(LayerNorm("f32[129,33]{0,1}", 129, 33));
}

std::string Softmax(const std::string& in_type, int64_t rows, int64_t cols, bool log) {
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  const std::string rc = "f32[" + r + "," + c + "]";
  std::string s = std::string("HloModule sm\n") + kAdd + R"(
ENTRY e {
  xin = )" + in_type + "[" + r + "," + c + R"(] parameter(0)
  x = )" + rc + R"( convert(xin)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[)" + r + R"(] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = )" + rc + R"( broadcast(m), dimensions={0}
  d = )" + rc + R"( subtract(x, mb)
  ex = )" + rc + R"( exponential(d)
  s = f32[)" + r + R"(] reduce(ex, zero), dimensions={1}, to_apply=add
)";
  if (log) {
    s += "  ls = f32[" + r + "] log(s)\n  lsb = " + rc + " broadcast(ls), dimensions={0}\n  y = " + rc +
         " subtract(d, lsb)\n";
  } else {
    s += "  sb = " + rc + " broadcast(s), dimensions={0}\n  y = " + rc + " divide(ex, sb)\n";
  }
  s += "  ROOT out = " + in_type + "[" + r + "," + c + "] convert(y)\n}";
  return s;
}

TEST(RowTilingTest, SoftmaxOddRows) { ExpectTiledMatches(Softmax("f32", 203, 129, false)); }

TEST(RowTilingTest, LogSoftmax) { ExpectTiledMatches(Softmax("f32", 100, 31, true)); }

TEST(RowTilingTest, SoftmaxBf16) { ExpectTiledMatches(Softmax("bf16", 97, 64, false)); }

TEST(RowTilingTest, SoftmaxRowsOfOne) { ExpectTiledMatches(Softmax("f32", 50, 1, false), 0); }

TEST(RowTilingTest, SoftmaxOverUnitAndMinorDimensions) {
  ExpectTiledMatches(std::string("HloModule m\n") + kAdd + R"(
ENTRY e {
  x = f32[77,1,5] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[77] reduce(x, ninf), dimensions={1,2}, to_apply=max
  mb = f32[77,1,5] broadcast(m), dimensions={0}
  d = f32[77,1,5] subtract(x, mb)
  ex = f32[77,1,5] exponential(d)
  s = f32[77] reduce(ex, zero), dimensions={1,2}, to_apply=add
  sb = f32[77,1,5] broadcast(s), dimensions={0}
  ROOT y = f32[77,1,5] divide(ex, sb)
})");
}

// A value computed inside the chain that is also a result of the module must reach the arena.
TEST(RowTilingTest, InternalValueAlsoAResult) {
  ExpectTiledMatches(std::string("HloModule m\n") + kAdd + R"(
ENTRY e {
  x = f32[90,40] parameter(0)
  zero = f32[] constant(0)
  e = f32[90,40] exponential(x)
  s = f32[90] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[90,40] broadcast(s), dimensions={0}
  y = f32[90,40] divide(e, sb)
  ROOT t = (f32[90,40], f32[90]) tuple(y, s)
})");
}

// Rank 3 with the reduction over the two minor dimensions, and an iota along a minor one.
TEST(RowTilingTest, Rank3RowsWithIota) {
  ExpectTiledMatches(std::string("HloModule m\n") + kAdd + R"(
ENTRY e {
  x = f32[45,4,9] parameter(0)
  zero = f32[] constant(0)
  i = s32[45,4,9] iota(), iota_dimension=2
  fi = f32[45,4,9] convert(i)
  xi = f32[45,4,9] multiply(x, fi)
  s = f32[45] reduce(xi, zero), dimensions={1,2}, to_apply=add
  sb = f32[45,4,9] broadcast(s), dimensions={0}
  ROOT y = f32[45,4,9] subtract(x, sb)
})");
}

// A reduction over the rows themselves (a column sum) is not row-local: nothing is tiled, and
// the result is still right.
TEST(RowTilingTest, ColumnReductionIsNotTiled) {
  ExpectTiledMatches(std::string("HloModule m\n") + kAdd + R"(
ENTRY e {
  x = f32[80,30] parameter(0)
  zero = f32[] constant(0)
  c = f32[30] reduce(x, zero), dimensions={0}, to_apply=add
  cb = f32[80,30] broadcast(c), dimensions={1}
  ROOT y = f32[80,30] subtract(x, cb)
})",
                     0);
}

// A chain member that only the evaluator's fallback kernel runs would run it once per tile:
// such chains are emitted kernel by kernel instead.
TEST(RowTilingTest, ChainsWithFallbackKernelsAreNotTiled) {
  const std::string hlo = Softmax("f32", 64, 33, false);
  for (int threads : {1, 2}) {
    CpuCompileOptions o = TilingOptions(threads);
    o.kernel_factory = [](const HloInstruction& instr) -> StatusOr<std::unique_ptr<CpuKernel>> {
      if (instr.opcode() == HloOpcode::kFusion && instr.attrs().fusion_kind == FusionKind::kLoop)
        return CreateEvaluatorFallbackKernel(instr);
      return CreateCpuKernel(instr);
    };
    auto module = ParseHloModule(hlo);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto exe = CpuCompiler::Compile(std::move(*module), o);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    EXPECT_EQ((*exe)->compile_stats().row_tiled_chains, 0) << (*exe)->ThunkListing();
    EXPECT_NE((*exe)->ThunkListing().find("evaluator["), std::string::npos) << (*exe)->ThunkListing();
    ExpectMatchesEvaluator(hlo, {}, o);
  }
}

// Row-locality of single fusions, from their fused computations.
const HloInstruction* EntryRoot(const HloModule& m) { return m.entry_computation()->root_instruction(); }

TEST(RowTilingTest, AnalyzeRowLocality) {
  auto m = ParseHloModule(std::string("HloModule m\n") + kAdd + R"(
fused {
  p0 = f32[8,16] parameter(0)
  p1 = f32[16] parameter(1)
  p2 = f32[8] parameter(2)
  b1 = f32[8,16] broadcast(p1), dimensions={1}
  b2 = f32[8,16] broadcast(p2), dimensions={0}
  a = f32[8,16] add(p0, b1)
  ROOT s = f32[8,16] subtract(a, b2)
}
ENTRY e {
  x = f32[8,16] parameter(0)
  v = f32[16] parameter(1)
  w = f32[8] parameter(2)
  ROOT f = f32[8,16] fusion(x, v, w), kind=kLoop, calls=fused
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  RowLocality r = AnalyzeRowLocality(*EntryRoot(**m));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.rows, 8);
  EXPECT_EQ(r.row_operand, (std::vector<bool>{true, false, true}));
}

TEST(RowTilingTest, SliceAndRowBroadcastAreNotRowLocal) {
  auto slice = ParseHloModule(R"(
HloModule m
fused {
  p0 = f32[9,16] parameter(0)
  ROOT s = f32[8,16] slice(p0), slice={[1:9], [0:16]}
}
ENTRY e {
  x = f32[9,16] parameter(0)
  ROOT f = f32[8,16] fusion(x), kind=kLoop, calls=fused
})");
  ASSERT_TRUE(slice.ok()) << slice.status().ToString();
  EXPECT_FALSE(AnalyzeRowLocality(*EntryRoot(**slice)).ok);
  // Row r of the output reads column r of the operand: a transpose in disguise.
  auto cross = ParseHloModule(R"(
HloModule m
fused {
  p0 = f32[8] parameter(0)
  ROOT b = f32[8,8] broadcast(p0), dimensions={1}
}
ENTRY e {
  x = f32[8] parameter(0)
  ROOT f = f32[8,8] fusion(x), kind=kLoop, calls=fused
})");
  ASSERT_TRUE(cross.ok()) << cross.status().ToString();
  RowLocality r = AnalyzeRowLocality(*EntryRoot(**cross));
  ASSERT_TRUE(r.ok);  // row-local, with the vector read whole by every tile
  EXPECT_EQ(r.row_operand, (std::vector<bool>{false}));
}

}  // namespace
}  // namespace kiln::cpu
