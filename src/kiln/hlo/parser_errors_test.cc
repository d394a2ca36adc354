// Parser tests: malformed input gives InvalidArgument "FILE:LINE:COL: message", the offending
// line and a caret under the column; nothing crashes, hangs or recurses without bound.
#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

std::string ParseError(std::string_view text) {
  ParseOptions o;
  o.filename = "t.hlo";
  auto m = ParseHloModule(text, o);
  if (m.ok()) return "<parsed>";
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  return m.status().message();
}

// A module whose entry computation holds `body`.
std::string Entry(std::string_view body) {
  return "HloModule m\nENTRY e {\n" + std::string(body) + "\n}";
}

struct ErrorCase {
  std::string text;
  std::string error;
};

TEST(ParserErrorsTest, MessagesWithPositionAndCaret) {
  const ErrorCase cases[] = {
      {"HloModule", "t.hlo:1:10: expected module name, found end of input\nHloModule\n         ^"},
      {Entry("  ROOT p = f32[2 parameter(0)"),
       "t.hlo:3:18: expected ']' or ',', found identifier 'parameter'\n"
       "  ROOT p = f32[2 parameter(0)\n                 ^"},
      {Entry("  ROOT p = f33[2] parameter(0)"),
       "t.hlo:3:12: expected shape, found unknown element type 'f33'\n"
       "  ROOT p = f33[2] parameter(0)\n           ^"},
      {"HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n",
       "t.hlo:4:1: expected an instruction or '}', found end of input\n\n^"},
      {Entry("  p = f32[2] parameter(0)\n  p = f32[2] parameter(1)"),
       "t.hlo:4:3: instruction 'p' is defined twice in computation 'e'\n"
       "  p = f32[2] parameter(1)\n  ^"},
      {Entry("  p = f32[2] parameter(1)"),
       "t.hlo:3:23: parameter number 1 out of range: computation 'e' has 1 parameter\n"
       "  p = f32[2] parameter(1)\n                      ^"},
      {Entry("  p = f32[2] parameter(0)\n  q = f32[2] parameter(0)\n  ROOT a = f32[2] add(p, q)"),
       "t.hlo:4:23: duplicate parameter number 0 (also 'p')\n"
       "  q = f32[2] parameter(0)\n                      ^"},
      {Entry("  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(p)"),
       "t.hlo:4:22: add takes 2 operands, found 1\n  ROOT a = f32[2] add(p)\n                     ^"},
      {Entry("  p = f32[] parameter(0)\n  ROOT r = f32[] reduce(p, p), dimensions={}, to_apply=nope"),
       "t.hlo:4:56: computation 'nope' is not defined\n"
       "  ROOT r = f32[] reduce(p, p), dimensions={}, to_apply=nope\n"
       "                                                       ^"},
      {Entry("  ROOT c = f32[3] constant({1, 2})"),
       "t.hlo:3:28: expected 3 elements in dimension 0 of constant, found 2\n"
       "  ROOT c = f32[3] constant({1, 2})\n                           ^"},
      {Entry("  ROOT p = f32[16777232,1099510579201] parameter(0)"),
       "t.hlo:3:12: shape f32[16777232,1099510579201] has 18446744073709551632 elements, more than "
       "kiln supports (at most 2^62 bytes per array)\n"
       "  ROOT p = f32[16777232,1099510579201] parameter(0)\n           ^"},
      {Entry("  ROOT p = f32[4294967296,4294967296,4] parameter(0)"),
       "t.hlo:3:12: shape f32[4294967296,4294967296,4] has 73786976294838206464 elements, more than "
       "kiln supports (at most 2^62 bytes per array)\n"
       "  ROOT p = f32[4294967296,4294967296,4] parameter(0)\n           ^"},
      {Entry("  ROOT p = f32[1099511627776,4194304] parameter(0)"),
       "t.hlo:3:12: shape f32[1099511627776,4194304] has 4611686018427387904 elements, more than "
       "kiln supports (at most 2^62 bytes per array)\n"
       "  ROOT p = f32[1099511627776,4194304] parameter(0)\n           ^"},
      {Entry("  ROOT c = s8[] constant(300)"),
       "t.hlo:3:26: integer 300 out of range for s8\n  ROOT c = s8[] constant(300)\n                         ^"},
      {Entry("  ROOT c = pred[] constant(2)"),
       "t.hlo:3:28: expected pred value (true or false), found integer 2\n"
       "  ROOT c = pred[] constant(2)\n                           ^"},
      {Entry("  ROOT c = f32[] constant(1e99)"),
       "t.hlo:3:27: value 1e99 out of range for f32\n  ROOT c = f32[] constant(1e99)\n                          ^"},
      {Entry("  p = f32[2] parameter(0)\n  ROOT c = f32[2] compare(p, p), direction=XX"),
       "t.hlo:4:44: expected comparison direction (EQ, NE, GE, GT, LE, LT), found identifier 'XX'\n"
       "  ROOT c = f32[2] compare(p, p), direction=XX\n                                           ^"},
      {Entry("  p = f32[2,2] parameter(0)\n  ROOT t = f32[2,2]{1,2} transpose(p), dimensions={1,0}"),
       "t.hlo:4:23: layout dimension 2 out of range for rank 2\n"
       "  ROOT t = f32[2,2]{1,2} transpose(p), dimensions={1,0}\n                      ^"},
      {Entry("  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p), metadata={op_name=\"x}"),
       "t.hlo:4:48: expected string, found unterminated string\n"
       "  ROOT n = f32[2] negate(p), metadata={op_name=\"x}\n                                               ^"},
      {Entry("  p = f32[2] parameter(0) /* never closed"),
       "t.hlo:3:27: expected instruction name, found unterminated comment\n"
       "  p = f32[2] parameter(0) /* never closed\n                          ^"},
      {Entry("  p = f32[4] parameter(0)\n  ROOT c = f32[2] convolution(p, p), window={size=2 stride=1x1}"),
       "t.hlo:4:45: window stride has 2 dimensions, size has 1\n"
       "  ROOT c = f32[2] convolution(p, p), window={size=2 stride=1x1}\n"
       "                                            ^"},
      {Entry("  p = f32[4] parameter(0)\n  ROOT c = f32[2] convolution(p, p), dim_labels=b01f_01io->b0f"),
       "t.hlo:4:49: dimension labels 'b01f_01io->b0f' have different numbers of spatial dimensions\n"
       "  ROOT c = f32[2] convolution(p, p), dim_labels=b01f_01io->b0f\n"
       "                                                ^"},
      {Entry("  p = f32[4] parameter(0)\n  ROOT s = f32[2] slice(p), slice={[0:2}"),
       "t.hlo:4:40: expected ']', found '}'\n  ROOT s = f32[2] slice(p), slice={[0:2}\n"
       "                                       ^"},
      {Entry("  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(p, a)"),
       "t.hlo:4:8: instruction 'a' in computation 'e' depends on itself (cycle through its operands)\n"
       "  ROOT a = f32[2] add(p, a)\n       ^"},
      {"HloModule m, replica_count=two\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}",
       "t.hlo:1:28: expected integer, found identifier 'two'\nHloModule m, replica_count=two\n"
       "                           ^"},
      {Entry("  ROOT p = f32[2] parameter(0), sharding={devices=[2]<=[2]T(}"),
       "t.hlo:3:61: expected integer, found '}'\n"
       "  ROOT p = f32[2] parameter(0), sharding={devices=[2]<=[2]T(}\n"
       "                                                            ^"},
      {"HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\nENTRY f {\n  ROOT q = f32[2] parameter(0)\n}",
       "t.hlo:5:7: second ENTRY computation 'f'\nENTRY f {\n      ^"},
      {"HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\ne {\n  ROOT q = f32[2] parameter(0)\n}",
       "t.hlo:5:1: computation 'e' is defined twice\ne {\n^"},
      {"HloModule m\nENTRY e {\n\tROOT p = f32[2] parameter(0) @\n}",
       "t.hlo:3:31: expected instruction name, found unexpected character '@'\n"
       "\tROOT p = f32[2] parameter(0) @\n\t                             ^"},
      {Entry("  p = f32[2] parameter(0), control-predecessors={zz}"),
       "t.hlo:3:50: control predecessor 'zz' is not defined in computation 'e'\n"
       "  p = f32[2] parameter(0), control-predecessors={zz}\n"
       "                                                 ^"},
      {Entry("  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p), x=1, x=2"),
       "t.hlo:4:35: duplicate attribute 'x'\n  ROOT n = f32[2] negate(p), x=1, x=2\n"
       "                                  ^"},
      {Entry("  p = f32[2] parameter(0)\n  ROOT d = f32[2] negate-done(p)"),
       "t.hlo:4:19: async instruction 'd' does not follow an async start\n"
       "  ROOT d = f32[2] negate-done(p)\n                  ^"},
      {Entry("  ROOT c = (s32[], token[]) constant((1, ))"),
       "t.hlo:3:42: a literal cannot have shape token[] (arrays and tuples only)\n"
       "  ROOT c = (s32[], token[]) constant((1, ))\n                                         ^"},
      {Entry("  ROOT x = f32[] frobnicate()"),
       "t.hlo:3:18: unknown opcode 'frobnicate'\n  ROOT x = f32[] frobnicate()\n                 ^"},
  };
  for (const ErrorCase& c : cases) EXPECT_EQ(ParseError(c.text), c.error) << c.text;
}

TEST(ParserErrorsTest, WhatXlaRefusesKilnRefuses) {
  // A declared operand shape that is not the operand's, a signature whose result is not the
  // root's, and a finite constant beyond its type's range (it would become inf).
  EXPECT_EQ(ParseError(Entry("  p = f32[2,2] parameter(0)\n  c = f32[2,2] constant({{1, 2}, {3, 4}})\n"
                             "  ROOT a = f32[2,2] add(f32[2,2] p, f32[2,5] c)")),
            "t.hlo:5:46: the declared operand shape f32[2,5] of 'c' is not its shape f32[2,2]\n"
            "  ROOT a = f32[2,2] add(f32[2,2] p, f32[2,5] c)\n"
            "                                             ^");
  EXPECT_NE(ParseError("HloModule m\nENTRY %e () -> f32[1] {\n  ROOT c = f32[2] constant({1, 2})\n}")
                .find("t.hlo:2:16: computation 'e' returns f32[1] but its root 'c' is f32[2]"),
            std::string::npos);
  EXPECT_NE(ParseError(Entry("  ROOT c = f16[] constant(-65520)")).find("value -65520 out of range for f16"),
            std::string::npos);
  EXPECT_NE(ParseError(Entry("  ROOT c = f8e4m3fn[] constant(1000)")).find("out of range for f8e4m3fn"),
            std::string::npos);
  // In range: the largest f16 and bf16 values, inf, and a u64 written as a negative int64
  // (its two's complement, as XLA reads it); narrower unsigned types still refuse negatives.
  EXPECT_EQ(ParseError(Entry("  a = f16[] constant(-65504)\n  b = bf16[] constant(-65505)\n"
                             "  c = f16[] constant(-inf)\n  d = u64[] constant(-1)\n  ROOT t = (f16[], bf16[], f16[], u64[]) tuple(a, b, c, d)")),
            "<parsed>");
  EXPECT_NE(ParseError(Entry("  ROOT c = u32[] constant(-1)")).find("integer -1 out of range for u32"),
            std::string::npos);
}

TEST(ParserErrorsTest, LongLinesAreWindowed) {
  std::string body = "  ROOT t = (" ;
  for (int i = 0; i < 100; ++i) body += "f32[], ";
  body += "f32[) tuple()";
  std::string err = ParseError(Entry(body));
  EXPECT_NE(err.find("t.hlo:3:717: expected integer, found ')'"), std::string::npos) << err;
  // The shown line is a window with "..." and the caret still points at the column.
  size_t nl1 = err.find('\n'), nl2 = err.find('\n', nl1 + 1);
  std::string shown = err.substr(nl1 + 1, nl2 - nl1 - 1);
  std::string caret = err.substr(nl2 + 1);
  EXPECT_EQ(shown.substr(0, 3), "...");
  EXPECT_LE(shown.size(), 170u);
  ASSERT_EQ(caret.back(), '^');
  EXPECT_EQ(shown[caret.size() - 1], ')');
}

TEST(ParserErrorsTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep_shape = Entry("  ROOT p = " + std::string(100000, '(') + "f32[]" +
                                 std::string(100000, ')') + " parameter(0)");
  EXPECT_NE(ParseError(deep_shape).find("nesting deeper than"), std::string::npos);
  std::string deep_literal_shape = std::string(300, '(') + "s32[]" + std::string(300, ')');
  std::string deep_literal = Entry("  ROOT c = " + deep_literal_shape + " constant(" +
                                   std::string(300, '(') + "1" + std::string(300, ')') + ")");
  EXPECT_NE(ParseError(deep_literal).find("nesting deeper than"), std::string::npos);
  std::string deep_sharding = Entry("  ROOT p = f32[] parameter(0), sharding=" +
                                    std::string(100000, '{') + "replicated" + std::string(100000, '}'));
  EXPECT_NE(ParseError(deep_sharding).find("nesting deeper than"), std::string::npos);
  std::string deep_attr = Entry("  ROOT p = f32[] parameter(0), x=" + std::string(100000, '[') +
                                std::string(100000, ']'));
  EXPECT_EQ(ParseError(deep_attr), "<parsed>");  // raw values nest without recursion
  std::string dims;
  for (int i = 0; i < 5000; ++i) dims += i ? ",1" : "1";
  std::string high_rank = Entry("  ROOT c = f32[" + dims + "] constant(" + std::string(5000, '{') +
                                "1" + std::string(5000, '}') + ")");
  EXPECT_NE(ParseError(high_rank).find("nesting deeper than"), std::string::npos);
}

TEST(ParserErrorsTest, HugeShapesAndNumbersAreRejectedWithoutAllocating) {
  EXPECT_NE(ParseError(Entry("  ROOT c = f32[1099511627776,4] constant({1})")).find(
                "has more elements than the text"),
            std::string::npos);
  EXPECT_NE(ParseError(Entry("  ROOT c = f32[1099511627776,1099511627776] constant({1})")).find(
                "has 1208925819614629174706176 elements, more than kiln supports"),
            std::string::npos);
  EXPECT_NE(ParseError(Entry("  ROOT p = f32[2] parameter(9000000000000)")).find("too large"),
            std::string::npos);
  EXPECT_NE(ParseError(Entry("  ROOT p = f32[99999999999999999999] parameter(0)"))
                .find("does not fit in 64 bits"),
            std::string::npos);
  ParseOptions fill;
  fill.fill_elided_constants = true;
  auto m = ParseHloModule(Entry("  ROOT c = f32[1099511627776,1024] constant({...})"), fill);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("cannot fill an elided constant"), std::string::npos);
}

// Issue 16: element counts and byte sizes are checked as products, not per dimension, both for
// shapes written in the text and for shapes the parser infers.
TEST(ParserErrorsTest, ShapeSizesAreCheckedAsProducts) {
  const std::string too_many = "elements, more than kiln supports (at most 2^62 bytes per array)";
  EXPECT_NE(ParseError(Entry("  ROOT p = f32[4294967296,4294967296,4294967296] parameter(0)"))
                .find("shape f32[4294967296,4294967296,4294967296] has 79228162514264337593543950336 " + too_many),
            std::string::npos);
  // One past the limit in bytes, not in elements: s8 may have 2^62 elements, f32 2^60.
  EXPECT_NE(ParseError(Entry("  ROOT p = s8[1099511627776,4194305] parameter(0)"))
                .find("has 4611687117939015680 " + too_many),
            std::string::npos);
  EXPECT_EQ(ParseError(Entry("  ROOT p = s8[1099511627776,4194304] parameter(0)")), "<parsed>");
  EXPECT_EQ(ParseError(Entry("  ROOT p = f32[1073741824,1073741824] parameter(0)")), "<parsed>");
  // A zero dimension makes any product zero.
  EXPECT_EQ(ParseError(Entry("  ROOT p = f32[1099511627776,1099511627776,0] parameter(0)")), "<parsed>");
  // In a tuple, in a program shape.
  EXPECT_NE(ParseError(Entry("  ROOT p = (f32[2], f32[1099511627776,1099511627776]) parameter(0)"))
                .find("t.hlo:3:21: shape f32[1099511627776,1099511627776] has 1208925819614629174706176 "),
            std::string::npos);
  EXPECT_NE(ParseError("HloModule m, entry_computation_layout={(f32[1099511627776,1099511627776]{1,0})->f32[]{}}\n"
                       "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}")
                .find("more than kiln supports"),
            std::string::npos);
  // Inferred shapes: a concatenate whose result dimension sums past the limit.
  EXPECT_NE(ParseError(Entry("  a = f32[1099511627776,1048576] parameter(0)\n"
                             "  ROOT c = concatenate(a, a, a, a, a), dimensions={0}"))
                .find("shape f32[5497558138880,1048576] has 5764607523034234880 " + too_many),
            std::string::npos);
  // Padding arithmetic that would overflow int64 is an error, not a wrapped size.
  EXPECT_NE(ParseError(Entry("  a = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                             "  ROOT p = pad(a, z), padding=0_9223372036854775807"))
                .find("cannot infer the shape of 'p'"),
            std::string::npos);
}

TEST(ParserErrorsTest, EveryPrefixOfAValidModuleFailsCleanly) {
  const std::string text = R"(HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0), sharding={devices=[2]<=[2]}, metadata={op_name="p"}
  %c = f32[2]{0} constant({1.5, -inf})
  %r = f32[] reduce(f32[2]{0} %p, f32[] %z), dimensions={0}, to_apply=add
  %z = f32[] constant(0)
  ROOT %a = f32[2]{0} add(%p, %c), backend_config={"k":"}"}
}
)";
  auto full = ParseHloModule(text);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  for (size_t n = 0; n < text.size(); ++n) {
    auto m = ParseHloModule(std::string_view(text).substr(0, n));
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace kiln
