// Shape kernels: broadcast, reshape, transpose, slice, concatenate, pad, reverse, shuffle, iota, bitcast
// (with layouts), get/set-dimension-size, size-0 and rank-0 shapes.
#include <gtest/gtest.h>

#include "kiln/eval/eval_test_util.h"

namespace kiln {
namespace {

using testing::Doubles;
using testing::Entry;
using testing::ExpectSameDoubles;
using testing::Ints;
using testing::MustRun;
using testing::RunHlo;

TEST(ShapeTest, Broadcast) {
  ExpectSameDoubles(Doubles(MustRun(Entry(R"(
  a = f32[2] constant({1, 2})
  ROOT r = f32[2,3] broadcast(a), dimensions={0})"))), {1, 1, 1, 2, 2, 2});
  ExpectSameDoubles(Doubles(MustRun(Entry(R"(
  a = f32[3] constant({1, 2, 3})
  ROOT r = f32[2,3] broadcast(a), dimensions={1})"))), {1, 2, 3, 1, 2, 3});
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s4[] constant(-3)
  ROOT r = s4[2,2] broadcast(a), dimensions={})"))), (std::vector<int64_t>{-3, -3, -3, -3}));
  // Operand dims map to result dims 2 and 0 (a transposing broadcast).
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[3,1,2] broadcast(a), dimensions={2,0})"))), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(MustRun(Entry(R"(
  a = f32[] constant(1)
  ROOT r = f32[0,3] broadcast(a), dimensions={})")).element_count(), 0);
}

// Empty arrays have no data pointer: the copies of reshape, convert to the same type,
// bitcast-convert and dynamic-update-slice must not memcpy from null (undefined even for 0
// bytes; eval_fuzzer's UBSan reports).
TEST(ShapeTest, EmptyArraysCopyNothing) {
  EXPECT_EQ(MustRun(Entry(R"(
  a = f32[0,3] parameter(0)
  ROOT r = f32[3,0] reshape(a))"), {Literal(Shape::Array(PrimitiveType::kF32, {0, 3}))}).element_count(), 0);
  EXPECT_EQ(MustRun(Entry(R"(
  a = f32[0,3] parameter(0)
  ROOT r = f32[0,3] convert(a))"), {Literal(Shape::Array(PrimitiveType::kF32, {0, 3}))}).element_count(), 0);
  EXPECT_EQ(MustRun(Entry(R"(
  a = f32[0,3] parameter(0)
  ROOT r = s32[0,3] bitcast-convert(a))"), {Literal(Shape::Array(PrimitiveType::kF32, {0, 3}))}).element_count(), 0);
  EXPECT_EQ(MustRun(Entry(R"(
  a = f32[0,3] parameter(0)
  u = f32[0,1] parameter(1)
  i = s32[] constant(1)
  ROOT r = f32[0,3] dynamic-update-slice(a, u, i, i))"),
                    {Literal(Shape::Array(PrimitiveType::kF32, {0, 3})), Literal(Shape::Array(PrimitiveType::kF32, {0, 1}))})
                .element_count(),
            0);
}

TEST(ShapeTest, ReshapeAndTranspose) {
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[3,2] reshape(a))"))), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[3,2] transpose(a), dimensions={1,0})"))), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  // Result dim i is operand dim dimensions[i]: out[k][i][j] = in[i][j][k].
  Literal t = MustRun(Entry(R"(
  a = s32[2,2,3] constant({{{0, 1, 2}, {3, 4, 5}}, {{6, 7, 8}, {9, 10, 11}}})
  ROOT r = s32[3,2,2] transpose(a), dimensions={2,0,1})"));
  EXPECT_EQ(Ints(t), (std::vector<int64_t>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[] constant(5)
  ROOT r = s32[1,1] reshape(a))"))), (std::vector<int64_t>{5}));
  EXPECT_FALSE(RunHlo(Entry(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[5] reshape(a))")).ok());
}

TEST(ShapeTest, Slice) {
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[3,4] constant({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}})
  ROOT r = s32[2,2] slice(a), slice={[1:3], [0:4:2]})"))), (std::vector<int64_t>{4, 6, 8, 10}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[7] constant({0, 1, 2, 3, 4, 5, 6})
  ROOT r = s32[2] slice(a), slice={[1:7:3]})"))), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[7] constant({0, 1, 2, 3, 4, 5, 6})
  ROOT r = s32[2] slice(a), slice={[1:6:3]})"))), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(MustRun(Entry(R"(
  a = s32[7] constant({0, 1, 2, 3, 4, 5, 6})
  ROOT r = s32[0] slice(a), slice={[3:3]})")).element_count(), 0);
}

TEST(ShapeTest, Concatenate) {
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,1] constant({{1}, {2}})
  b = s32[2,0] constant({{}, {}})
  c = s32[2,2] constant({{3, 4}, {5, 6}})
  ROOT r = s32[2,3] concatenate(a, b, c), dimensions={1})"))), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = u4[2] constant({1, 2})
  b = u4[1] constant({15})
  ROOT r = u4[3] concatenate(a, b), dimensions={0})"))), (std::vector<int64_t>{1, 2, 15}));
}

TEST(ShapeTest, Pad) {
  // low 1, high 2, interior 1.
  ExpectSameDoubles(Doubles(MustRun(Entry(R"(
  a = f32[3] constant({1, 2, 3})
  z = f32[] constant(0)
  ROOT r = f32[8] pad(a, z), padding=1_2_1)"))), {0, 1, 0, 2, 0, 3, 0, 0});
  // Negative edges crop the interior-padded operand.
  ExpectSameDoubles(Doubles(MustRun(Entry(R"(
  a = f32[3] constant({1, 2, 3})
  z = f32[] constant(9)
  ROOT r = f32[3] pad(a, z), padding=-1_-1_1)"))), {9, 2, 9});
  ExpectSameDoubles(Doubles(MustRun(Entry(R"(
  a = f32[4] constant({1, 2, 3, 4})
  z = f32[] constant(9)
  ROOT r = f32[2] pad(a, z), padding=-3_1)"))), {4, 9});
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,2] constant({{1, 2}, {3, 4}})
  z = s32[] constant(0)
  ROOT r = s32[3,4] pad(a, z), padding=1_0x0_1_1)"))),
            (std::vector<int64_t>{0, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0}));
  // Padding an empty operand gives the padding value everywhere.
  ExpectSameDoubles(Doubles(MustRun(Entry(R"(
  a = f32[0] constant({})
  z = f32[] constant(7)
  ROOT r = f32[2] pad(a, z), padding=1_1)"))), {7, 7});
}

TEST(ShapeTest, Reverse) {
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[2,3] reverse(a), dimensions={1})"))), (std::vector<int64_t>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[2,3] reverse(a), dimensions={0,1})"))), (std::vector<int64_t>{6, 5, 4, 3, 2, 1}));
}

TEST(ShapeTest, Iota) {
  ExpectSameDoubles(Doubles(MustRun(Entry("  ROOT r = f32[2,3] iota(), iota_dimension=1"))),
                    {0, 1, 2, 0, 1, 2});
  EXPECT_EQ(Ints(MustRun(Entry("  ROOT r = s32[2,3] iota(), iota_dimension=0"))),
            (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  // bf16 iota rounds: 257 -> 256, 259 -> 260.
  Literal b = MustRun(Entry("  ROOT r = bf16[260] iota(), iota_dimension=0"));
  EXPECT_EQ(b.GetAsDouble(257), 256);
  EXPECT_EQ(b.GetAsDouble(259), 260);
  // s4 iota wraps.
  EXPECT_EQ(Ints(MustRun(Entry("  ROOT r = s4[10] iota(), iota_dimension=0"))),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, -8, -7}));
  Literal c = MustRun(Entry("  ROOT r = c64[2] iota(), iota_dimension=0"));
  EXPECT_EQ(c.data<std::complex<float>>()[1], std::complex<float>(1, 0));
}

TEST(ShapeTest, BitcastFollowsLayouts) {
  // Default layouts: a reshape.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[3,2]{1,0} bitcast(a))"))), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  // A column-major operand reads back in its physical (column) order.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  c = s32[2,3]{0,1} copy(a)
  ROOT r = s32[6]{0} bitcast(c))"))), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  // Column-major [2,3] bitcast to row-major [3,2] is the transpose.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  c = s32[2,3]{0,1} copy(a)
  ROOT r = s32[3,2]{1,0} bitcast(c))"))), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  // Row-major [2,3] bitcast to column-major [3,2]: r[i][j] = physical[j*3 + i].
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[3,2]{0,1} bitcast(a))"))), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  // A layout-changing copy is the identity on values.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[2,3]{1,0} constant({{1, 2, 3}, {4, 5, 6}})
  ROOT c = s32[2,3]{0,1} copy(a))"))), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(ShapeTest, SubByteBitcastAcrossWidths) {
  // XLA's constant folding test (DontFoldSubByteWidthChangingBitcasts): a packed s4[16] read as
  // s8[8], element 2i in the low nibble of byte i.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  c4 = s4[16]{0:E(4)} constant({0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1})
  ROOT b = s8[8]{0} bitcast(c4))"))), (std::vector<int64_t>{16, 50, 84, 118, -104, -70, -36, -2}));
  // And back, as u4: 0xAB -> {0xB, 0xA}.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  c = u8[2] constant({171, 18})
  ROOT b = u4[4]{0:E(4)} bitcast(c))"))), (std::vector<int64_t>{11, 10, 2, 1}));
  // Same width, another type: the bits, canonical for the result type.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  c = s4[2] constant({-1, 7})
  ROOT b = u4[2] bitcast(c))"))), (std::vector<int64_t>{15, 7}));
  // Different bit sizes: refused.
  StatusOr<Literal> bad = RunHlo(Entry(R"(
  c = s4[16]{0:E(4)} constant({0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1})
  ROOT b = s8[16]{0} bitcast(c))"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("bit sizes differ"), std::string::npos) << bad.status().ToString();
}

TEST(ShapeTest, ShuffleRotates) {
  // mode=rotate: result[i] = x[(i + shift) mod n] along each listed dimension.
  ExpectSameDoubles(Doubles(MustRun(Entry(R"(
  v = f32[5] constant({1, 2, 3, 4, 5})
  ROOT r = f32[5] shuffle(v), dimensions={0}, mode=rotate, shifts={2})"))), {3, 4, 5, 1, 2});
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  v = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  ROOT r = s32[2,3] shuffle(v), dimensions={0,1}, mode=rotate, shifts={1,-1})"))),
            (std::vector<int64_t>{6, 4, 5, 3, 1, 2}));
  auto other = RunHlo(Entry(R"(
  v = f32[5] constant({1, 2, 3, 4, 5})
  ROOT r = f32[5] shuffle(v), dimensions={0}, mode=butterfly, shifts={2})"));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("shuffle mode=butterfly"), std::string::npos) << other.status().message();
}

TEST(ShapeTest, NonDefaultOperandLayoutsDoNotChangeValues) {
  // Layouts only matter to bitcast: every other op sees logical values.
  const char* hlo = R"(
HloModule m

add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}

ENTRY e {
  p = s32[2,3]{0,1} parameter(0)
  t = s32[3,2]{0,1} transpose(p), dimensions={1,0}
  z = s32[] constant(0)
  r = s32[3]{0} reduce(t, z), dimensions={1}, to_apply=add
  s = s32[2,2]{0,1} slice(p), slice={[0:2], [1:3]}
  n = s32[2,3]{1,0} negate(p)
  ROOT out = (s32[3,2]{0,1}, s32[3]{0}, s32[2,2]{0,1}, s32[2,3]{1,0}) tuple(t, r, s, n)
})";
  std::vector<Literal> args;
  args.push_back(Literal::FromInt64s(Shape::Array(PrimitiveType::kS32, {2, 3}), {1, 2, 3, 4, 5, 6}));
  Literal r = MustRun(hlo, args);
  EXPECT_EQ(Ints(r.tuple_element(0)), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(Ints(r.tuple_element(1)), (std::vector<int64_t>{5, 7, 9}));
  EXPECT_EQ(Ints(r.tuple_element(2)), (std::vector<int64_t>{2, 3, 5, 6}));
  EXPECT_EQ(Ints(r.tuple_element(3)), (std::vector<int64_t>{-1, -2, -3, -4, -5, -6}));
}

TEST(ShapeTest, MalformedInstructionsAreErrors) {
  const char* bad[] = {
      "  a = s32[2] constant({1, 2})\n  ROOT r = s32[2,3] broadcast(a), dimensions={1}",
      "  a = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n  ROOT r = s32[3,2] transpose(a), dimensions={0,0}",
      "  a = s32[3] constant({1, 2, 3})\n  ROOT r = s32[2] slice(a), slice={[2:4]}",
      "  a = s32[3] constant({1, 2, 3})\n  ROOT r = s32[4] concatenate(a, a), dimensions={0}",
      "  a = s32[3] constant({1, 2, 3})\n  z = s32[] constant(0)\n  ROOT r = s32[9] pad(a, z), padding=1_1_1",
      "  a = s32[3] constant({1, 2, 3})\n  ROOT r = s32[3] reverse(a), dimensions={1}",
      "  a = s32[3] constant({1, 2, 3})\n  ROOT r = s32[2] bitcast(a)",
      "  a = s32[3] constant({1, 2, 3})\n  ROOT r = s32[] get-dimension-size(a), dimensions={2}",
      "  a = f32[3] constant({1, 2, 3})\n  ROOT r = f16[3] reduce-precision(a), exponent_bits=5, mantissa_bits=10",
      "  a = f32[3] constant({1, 2, 3})\n  ROOT r = f32[3] reduce-precision(a), exponent_bits=0, mantissa_bits=10",
  };
  for (const char* body : bad) EXPECT_FALSE(RunHlo(Entry(body)).ok()) << body;
}

TEST(ShapeTest, DimensionSize) {
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = f32[2,5] constant({{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}})
  ROOT r = s32[] get-dimension-size(a), dimensions={1})"))), (std::vector<int64_t>{5}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[3] constant({1, 2, 3})
  n = s32[] constant(3)
  ROOT r = s32[3] set-dimension-size(a, n), dimensions={0})"))), (std::vector<int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace kiln
