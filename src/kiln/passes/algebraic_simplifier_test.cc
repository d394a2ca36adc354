// One test per rewrite of algebraic_simplifier.h (named after it), plus the cases each rewrite
// must leave alone. Every test checks the values before and after on random and special inputs
// (NaN, infinities, signed zeros, extreme integers).
#include "kiln/passes/algebraic_simplifier.h"

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::EntryOps;
using testing::Match;
using testing::RootSummary;

std::unique_ptr<HloModule> Simplify(std::string_view text, bool expect_changed = true,
                                    Match match = Match::kExact) {
  AlgebraicSimplifier pass;
  return testing::RunPassAndCheck(pass, text, expect_changed, match);
}

// A module computing `op(p, c)` for a parameter p and a broadcast constant c of type `type`.
std::string BinaryWithConstant(std::string_view type, std::string_view op, std::string_view value,
                               bool constant_first = false) {
  return StrCat("HloModule m\nENTRY e {\n  p = ", type, "[4] parameter(0)\n  c = ", type,
                "[] constant(", value, ")\n  b = ", type,
                "[4] broadcast(c), dimensions={}\n  ROOT r = ", type, "[4] ", op,
                constant_first ? "(b, p)" : "(p, b)", "\n}\n");
}

// ---- Elementwise identities ----

TEST(AlgebraicSimplifierTest, AddZero) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("s32", "add", "0"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("u8", "add", "0", true))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("f32", "add", "-0"))), "parameter");
  // x + (+0) turns -0 into +0: kept for floats.
  Simplify(BinaryWithConstant("f32", "add", "0"), false);
  Simplify(BinaryWithConstant("bf16", "add", "0", true), false);
}

TEST(AlgebraicSimplifierTest, SubZero) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("s64", "subtract", "0"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("f32", "subtract", "0"))), "parameter");
  Simplify(BinaryWithConstant("f32", "subtract", "-0"), false);  // -0 - -0 = +0
  Simplify(BinaryWithConstant("s32", "subtract", "0", true), false);  // 0 - x
}

TEST(AlgebraicSimplifierTest, SubSelf) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  ROOT r = s32[4] subtract(p, p)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,constant,broadcast");
  // x - x is NaN for infinities and NaN: kept for floats.
  Simplify(R"(
HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT r = f32[4] subtract(p, p)
}
)", false);
}

TEST(AlgebraicSimplifierTest, MulOne) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("f32", "multiply", "1"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("bf16", "multiply", "1", true))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("s8", "multiply", "1"))), "parameter");
  // (a+bi)(1+0i) = a - b*0 + ...: NaN when b is infinite; kept for complex.
  Simplify(BinaryWithConstant("c64", "multiply", "(1, 0)"), false);
}

TEST(AlgebraicSimplifierTest, MulZero) {
  auto m = Simplify(BinaryWithConstant("s32", "multiply", "0"));
  EXPECT_EQ(EntryOps(*m), "parameter,constant,broadcast");
  // inf * 0 and NaN * 0 are NaN, -1 * 0 is -0: kept for floats.
  Simplify(BinaryWithConstant("f32", "multiply", "0"), false);
}

TEST(AlgebraicSimplifierTest, DivOne) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("f64", "divide", "1"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("u32", "divide", "1"))), "parameter");
  Simplify(BinaryWithConstant("s32", "divide", "1", true), false);  // 1 / x
}

TEST(AlgebraicSimplifierTest, DivPow2) {
  auto m = Simplify(BinaryWithConstant("f32", "divide", "1024"));
  EXPECT_EQ(RootSummary(*m), "multiply(parameter,broadcast)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(1)->operand(0)->literal().GetAsDouble(0),
            1.0 / 1024);
  EXPECT_EQ(RootSummary(*Simplify(BinaryWithConstant("bf16", "divide", "-0.25"))),
            "multiply(parameter,broadcast)");
  Simplify(BinaryWithConstant("f32", "divide", "3"), false);          // 1/3 is not exact
  Simplify(BinaryWithConstant("f16", "divide", "1.52587890625e-05"), false);  // 2^16 > f16 max
  Simplify(BinaryWithConstant("f32", "divide", "2", true), false);    // 2 / x
}

TEST(AlgebraicSimplifierTest, AndIdentity) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("pred", "and", "true"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("s32", "and", "-1", true))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("u8", "and", "255"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("pred", "and", "false"))),
            "parameter,constant,broadcast");
  Simplify(BinaryWithConstant("u8", "and", "127"), false);
}

TEST(AlgebraicSimplifierTest, OrIdentity) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("pred", "or", "false"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("s16", "or", "0", true))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("pred", "or", "true"))),
            "parameter,constant,broadcast");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("s32", "or", "-1"))),
            "parameter,constant,broadcast");
}

TEST(AlgebraicSimplifierTest, XorIdentity) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("u32", "xor", "0"))), "parameter");
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = pred[4] parameter(0)
  ROOT r = pred[4] xor(p, p)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,constant,broadcast");
}

TEST(AlgebraicSimplifierTest, Idempotent) {
  for (const char* op : {"maximum", "minimum"}) {
    auto m = Simplify(StrCat(R"(
HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  ROOT r = f32[4] )", op, R"((p, p)
}
)"));
    EXPECT_EQ(EntryOps(*m), "parameter") << op;
  }
  for (const char* op : {"and", "or"}) {
    auto m = Simplify(StrCat(R"(
HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  ROOT r = s32[4] )", op, R"((p, p)
}
)"));
    EXPECT_EQ(EntryOps(*m), "parameter") << op;
  }
}

TEST(AlgebraicSimplifierTest, MinMaxBound) {
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("f32", "maximum", "-inf"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("bf16", "minimum", "inf", true))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("s32", "maximum", "-2147483648"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("u8", "minimum", "255"))), "parameter");
  EXPECT_EQ(EntryOps(*Simplify(BinaryWithConstant("pred", "maximum", "false"))), "parameter");
  Simplify(BinaryWithConstant("f32", "maximum", "inf"), false);
  Simplify(BinaryWithConstant("f32", "maximum", "-3.4e38"), false);
}

TEST(AlgebraicSimplifierTest, SelectConst) {
  const char* text = R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  t = pred[] constant(%s)
  bt = pred[4] broadcast(t), dimensions={}
  ROOT r = f32[4] select(bt, a, b)
}
)";
  std::string yes = text, no = text;
  yes.replace(yes.find("%s"), 2, "true");
  no.replace(no.find("%s"), 2, "false");
  auto m1 = Simplify(yes);
  EXPECT_EQ(m1->entry_computation()->root_instruction()->parameter_number(), 0);
  auto m2 = Simplify(no);
  EXPECT_EQ(m2->entry_computation()->root_instruction()->parameter_number(), 1);
  // A constant predicate that is not uniform stays.
  Simplify(R"(
HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  t = pred[2] constant({true, false})
  ROOT r = f32[2] select(t, a, b)
}
)", false);
}

TEST(AlgebraicSimplifierTest, SelectSame) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = pred[4] parameter(0)
  a = f32[4] parameter(1)
  ROOT r = f32[4] select(p, a, a)
}
)");
  EXPECT_EQ(RootSummary(*m), "parameter");
}

TEST(AlgebraicSimplifierTest, SelectPred) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = pred[4] parameter(0)
  t = pred[] constant(true)
  f = pred[] constant(false)
  bt = pred[4] broadcast(t), dimensions={}
  bf = pred[4] broadcast(f), dimensions={}
  a = pred[4] select(p, bt, bf)
  b = pred[4] select(p, bf, bt)
  ROOT r = (pred[4], pred[4]) tuple(a, b)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(parameter,not)");
}

TEST(AlgebraicSimplifierTest, NegateNegate) {
  for (const char* type : {"f32", "s32", "s8"}) {
    auto m = Simplify(StrCat("HloModule m\nENTRY e {\n  p = ", type, "[4] parameter(0)\n  n = ", type,
                             "[4] negate(p)\n  ROOT r = ", type, "[4] negate(n)\n}\n"));
    EXPECT_EQ(EntryOps(*m), "parameter") << type;
  }
}

TEST(AlgebraicSimplifierTest, NotNot) {
  for (const char* type : {"pred", "u16"}) {
    auto m = Simplify(StrCat("HloModule m\nENTRY e {\n  p = ", type, "[4] parameter(0)\n  n = ", type,
                             "[4] not(p)\n  ROOT r = ", type, "[4] not(n)\n}\n"));
    EXPECT_EQ(EntryOps(*m), "parameter") << type;
  }
}

TEST(AlgebraicSimplifierTest, ConvertSame) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  c = f32[4] convert(p)
  b = f32[4] bitcast-convert(c)
  ROOT r = f32[4] negate(b)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, CopySame) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[4,3]{1,0} parameter(0)
  c = f32[4,3]{1,0} copy(p)
  d = f32[4,3]{0,1} copy(p)
  ROOT t = (f32[4,3]{1,0}, f32[4,3]{0,1}) tuple(c, d)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(parameter,copy)");
}

TEST(AlgebraicSimplifierTest, CompareSelf) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  f = f32[4] parameter(1)
  eq = pred[4] compare(p, p), direction=EQ
  lt = pred[4] compare(p, p), direction=LT
  te = pred[4] compare(f, f), direction=EQ, type=TOTALORDER
  fe = pred[4] compare(f, f), direction=EQ
  ROOT t = (pred[4], pred[4], pred[4], pred[4]) tuple(eq, lt, te, fe)
}
)");
  // NaN != NaN under the FLOAT comparison: that one stays.
  EXPECT_EQ(RootSummary(*m), "tuple(broadcast,broadcast,broadcast,compare)");
}

// ---- Shape-op chains ----

TEST(AlgebraicSimplifierTest, ReshapeNoop) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  r = f32[2,3] reshape(p)
  ROOT n = f32[2,3] negate(r)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, ReshapeReshape) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3,4] parameter(0)
  a = f32[6,4] reshape(p)
  b = f32[24] reshape(a)
  ROOT c = f32[4,6] reshape(b)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,reshape");
  auto m2 = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  a = f32[6] reshape(p)
  b = f32[2,3] reshape(a)
  ROOT n = f32[2,3] negate(b)
}
)");
  EXPECT_EQ(EntryOps(*m2), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, ScalarBcast) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[] parameter(0)
  b = f32[6,4] broadcast(p), dimensions={}
  r = f32[24] reshape(b)
  t = f32[4,6] transpose(b), dimensions={1,0}
  s = f32[2,2] slice(b), slice={[0:4:2], [1:3]}
  v = f32[6,4] reverse(b), dimensions={0}
  ROOT tu = (f32[24], f32[4,6], f32[2,2], f32[6,4]) tuple(r, t, s, v)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(broadcast,broadcast,broadcast,broadcast)");
  for (const HloInstruction* op : m->entry_computation()->root_instruction()->operands())
    EXPECT_EQ(op->operand(0)->opcode(), HloOpcode::kParameter);
}

TEST(AlgebraicSimplifierTest, TransposeId) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  t = f32[2,3] transpose(p), dimensions={0,1}
  ROOT n = f32[2,3] negate(t)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, TransposeTranspose) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3,4] parameter(0)
  a = f32[3,4,2] transpose(p), dimensions={1,2,0}
  ROOT b = f32[4,2,3] transpose(a), dimensions={1,2,0}
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,transpose");
  EXPECT_EQ(m->entry_computation()->root_instruction()->attrs().dimensions,
            (std::vector<int64_t>{2, 0, 1}));
  // Inverse permutations cancel.
  auto m2 = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3,4] parameter(0)
  a = f32[3,4,2] transpose(p), dimensions={1,2,0}
  b = f32[2,3,4] transpose(a), dimensions={2,0,1}
  ROOT n = f32[2,3,4] negate(b)
}
)");
  EXPECT_EQ(EntryOps(*m2), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, TransposeDegenerate) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[1,5,1,3] parameter(0)
  ROOT t = f32[5,1,3,1] transpose(p), dimensions={1,0,3,2}
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,reshape");
  Simplify(R"(
HloModule m
ENTRY e {
  p = f32[1,5,3] parameter(0)
  ROOT t = f32[3,1,5] transpose(p), dimensions={2,0,1}
}
)", false);
}

TEST(AlgebraicSimplifierTest, BroadcastId) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  b = f32[2,3] broadcast(p), dimensions={0,1}
  ROOT n = f32[2,3] negate(b)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, BroadcastBroadcast) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[3] parameter(0)
  a = f32[2,3] broadcast(p), dimensions={1}
  ROOT b = f32[2,4,3] broadcast(a), dimensions={0,2}
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,broadcast");
  EXPECT_EQ(m->entry_computation()->root_instruction()->attrs().dimensions,
            (std::vector<int64_t>{2}));
}

TEST(AlgebraicSimplifierTest, SliceFull) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  s = f32[2,3] slice(p), slice={[0:2], [0:3]}
  ROOT n = f32[2,3] negate(s)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, SliceSlice) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = s32[20,7] parameter(0)
  a = s32[9,5] slice(p), slice={[2:19:2], [1:6]}
  ROOT b = s32[3,2] slice(a), slice={[1:8:3], [2:4]}
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,slice");
  const auto& s = m->entry_computation()->root_instruction()->attrs().slice;
  EXPECT_EQ(s[0].start, 4);
  EXPECT_EQ(s[0].stride, 6);
  EXPECT_EQ(s[1].start, 3);
}

TEST(AlgebraicSimplifierTest, SliceConcat) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[2,4] parameter(1)
  c = f32[2,7] concatenate(a, b), dimensions={1}
  s0 = f32[2,3] slice(c), slice={[0:2], [0:3]}
  s1 = f32[2,2] slice(c), slice={[0:2], [4:6]}
  s2 = f32[2,2] slice(c), slice={[0:2], [2:4]}
  ROOT t = (f32[2,3], f32[2,2], f32[2,2]) tuple(s0, s1, s2)
}
)");
  // s0 is all of a; s1 lies within b; s2 straddles both and stays.
  EXPECT_EQ(RootSummary(*m), "tuple(parameter,slice,slice)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(1)->operand(0)->parameter_number(), 1);
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(2)->operand(0)->opcode(),
            HloOpcode::kConcatenate);
}

TEST(AlgebraicSimplifierTest, ConcatSingle) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  z = f32[2,0] parameter(1)
  b = f32[2,4] parameter(2)
  c1 = f32[2,3] concatenate(a), dimensions={1}
  c2 = f32[2,7] concatenate(a, z, b), dimensions={1}
  c3 = f32[2,3] concatenate(z, a), dimensions={1}
  ROOT t = (f32[2,3], f32[2,7], f32[2,3]) tuple(c1, c2, c3)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(parameter,concatenate,parameter)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(1)->operand_count(), 2);
}

TEST(AlgebraicSimplifierTest, PadNoop) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  a = f32[2,3] pad(p, z), padding=0_0x0_0
  ROOT n = f32[2,3] negate(a)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, ReverseDegenerate) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[1,3,1] parameter(0)
  a = f32[1,3,1] reverse(p), dimensions={0,2}
  b = f32[1,3,1] reverse(p), dimensions={0,1}
  ROOT t = (f32[1,3,1], f32[1,3,1]) tuple(a, b)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(parameter,reverse)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(1)->attrs().dimensions,
            (std::vector<int64_t>{1}));
}

TEST(AlgebraicSimplifierTest, ReverseReverse) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  a = f32[2,3] reverse(p), dimensions={0,1}
  b = f32[2,3] reverse(a), dimensions={1,0}
  ROOT n = f32[2,3] negate(b)
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,negate");
}

TEST(AlgebraicSimplifierTest, ConvertConvert) {
  // bf16 -> f32 is exact: bf16 -> f32 -> bf16 is the identity, s8 -> s32 -> f32 is s8 -> f32.
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = bf16[4] parameter(0)
  q = s8[4] parameter(1)
  a = f32[4] convert(p)
  b = bf16[4] convert(a)
  c = s32[4] convert(q)
  d = f32[4] convert(c)
  ROOT t = (bf16[4], f32[4]) tuple(b, d)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(parameter,convert)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(1)->operand(0)->opcode(),
            HloOpcode::kParameter);
  // Lossy inner converts, and int -> float -> int (saturating vs wrapping), stay.
  Simplify(R"(
HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  q = s32[4] parameter(1)
  a = bf16[4] convert(p)
  b = f32[4] convert(a)
  c = f64[4] convert(q)
  d = s8[4] convert(c)
  ROOT t = (f32[4], s8[4]) tuple(b, d)
}
)", false);
}

TEST(AlgebraicSimplifierTest, DynamicSliceConst) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[8,6] parameter(0)
  i = s32[] constant(3)
  j = s32[] constant(100)
  k = s32[] constant(-5)
  a = f32[2,3] dynamic-slice(p, i, j), dynamic_slice_sizes={2,3}
  b = f32[2,3] dynamic-slice(p, k, i), dynamic_slice_sizes={2,3}
  ROOT t = (f32[2,3], f32[2,3]) tuple(a, b)
}
)");
  EXPECT_EQ(RootSummary(*m), "tuple(slice,slice)");
  const auto& s = m->entry_computation()->root_instruction()->operand(0)->attrs().slice;
  EXPECT_EQ(s[0].start, 3);
  EXPECT_EQ(s[1].start, 3);  // 100 clamped to 6 - 3
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(1)->attrs().slice[0].start, 0);
}

TEST(AlgebraicSimplifierTest, DynamicSliceFull) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[4,3] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT a = f32[4,3] dynamic-slice(p, i, j), dynamic_slice_sizes={4,3}
}
)");
  EXPECT_EQ(RootSummary(*m), "parameter");
}

TEST(AlgebraicSimplifierTest, DusFull) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[4,3] parameter(0)
  u = f32[4,3] parameter(1)
  i = s32[] parameter(2)
  ROOT a = f32[4,3] dynamic-update-slice(p, u, i, i)
}
)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->parameter_number(), 1);
}

TEST(AlgebraicSimplifierTest, DusEmpty) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  p = f32[4,3] parameter(0)
  u = f32[0,3] parameter(1)
  i = s32[] parameter(2)
  ROOT a = f32[4,3] dynamic-update-slice(p, u, i, i)
}
)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->parameter_number(), 0);
}

// ---- Dots and reductions ----

TEST(AlgebraicSimplifierTest, DotEmpty) {
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  a = f32[3,0] parameter(0)
  b = f32[0,5] parameter(1)
  ROOT d = f32[3,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,constant,broadcast");
}

TEST(AlgebraicSimplifierTest, DotK1) {
  // A batched outer product with the batch dimension last on the lhs and mixed types.
  auto m = Simplify(R"(
HloModule m
ENTRY e {
  a = bf16[3,1,2] parameter(0)
  b = f32[2,1,5] parameter(1)
  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={2}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
)", true, Match::kExactIgnoreZeroSign);
  EXPECT_EQ(RootSummary(*m), "multiply(broadcast,broadcast)");
  // Integers: exact, wraparound included.
  auto m2 = Simplify(R"(
HloModule m
ENTRY e {
  a = s8[4,1] parameter(0)
  b = s32[1,6] parameter(1)
  ROOT d = s32[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  EXPECT_EQ(RootSummary(*m2), "multiply(broadcast,broadcast)");
  // An f32 dot with a bf16 result rounds once; converting first would round twice: kept.
  Simplify(R"(
HloModule m
ENTRY e {
  a = f32[4,1] parameter(0)
  b = f32[1,6] parameter(1)
  ROOT d = bf16[4,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)", false);
}

TEST(AlgebraicSimplifierTest, ReduceEmpty) {
  auto m = Simplify(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[3,0] parameter(0)
  i = f32[] parameter(1)
  ROOT r = f32[3] reduce(p, i), dimensions={1}, to_apply=add
}
)");
  EXPECT_EQ(RootSummary(*m), "broadcast(parameter)");
}

TEST(AlgebraicSimplifierTest, ReduceDegenerate) {
  auto m = Simplify(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4,1,5,1] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[5] reduce(p, z), dimensions={0,1,3}, to_apply=add
}
)");
  EXPECT_EQ(EntryOps(*m), "parameter,constant,reshape,reduce");
  EXPECT_EQ(m->entry_computation()->root_instruction()->attrs().dimensions,
            (std::vector<int64_t>{0}));
}

TEST(AlgebraicSimplifierTest, ReduceTrivial) {
  // Sum over a size-1 dimension is init + x (with +0 as init, -0 becomes +0, as in the reduce).
  auto m = Simplify(R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4,1] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(p, z), dimensions={1}, to_apply=add
}
)");
  EXPECT_EQ(RootSummary(*m), "add(broadcast,reshape)");
  // max with -inf: the init then disappears (minmax-bound); reduce over no dimensions.
  auto m2 = Simplify(R"(
HloModule m
mx {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] maximum(y, x)
}
ENTRY e {
  p = f32[4,3] parameter(0)
  z = f32[] constant(-inf)
  ROOT r = f32[4,3] reduce(p, z), dimensions={}, to_apply=mx
}
)");
  EXPECT_EQ(RootSummary(*m2), "parameter");
  // A reducer that is not a single op stays a reduce.
  Simplify(R"(
HloModule m
f {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  s = f32[] add(x, y)
  ROOT t = f32[] multiply(s, s)
}
ENTRY e {
  p = f32[4,1] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(p, z), dimensions={1}, to_apply=f
}
)", false);
}

TEST(AlgebraicSimplifierTest, KeepsTheEntryResultLayout) {
  // transpose(transpose(p)) is p, but p's layout differs from the declared result layout.
  Simplify(R"(
HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{0,1}}
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  a = f32[3,2]{1,0} transpose(p), dimensions={1,0}
  ROOT b = f32[2,3]{0,1} transpose(a), dimensions={1,0}
}
)", false);
}

}  // namespace
}  // namespace kiln
