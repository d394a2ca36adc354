// Parser tests: each syntax family read into the IR with exact expected fields, and error
// messages (position, caret) for malformed input.
#include "kiln/hlo/parser.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kiln/hlo/printer.h"

namespace kiln {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text, ParseOptions options = {}) {
  auto m = ParseHloModule(text, options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  return std::move(m).value();
}

HloInstruction* Find(const HloModule& m, std::string_view name) {
  for (HloComputation* c : m.computations())
    if (HloInstruction* i = c->GetInstructionWithName(name)) return i;
  return nullptr;
}

// The parse error message for `text`, or "" if it parsed.
std::string ParseError(std::string_view text, ParseOptions options = {}) {
  auto m = ParseHloModule(text, options);
  if (m.ok()) return "";
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  return m.status().message();
}

TEST(ParserTest, MinimalModule) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[2]{0} parameter(0)
  ROOT a = f32[2]{0} add(p, p)
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "m");
  HloComputation* e = m->entry_computation();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name(), "e");
  EXPECT_EQ(e->num_parameters(), 1);
  EXPECT_EQ(e->root_instruction()->name(), "a");
  EXPECT_EQ(e->root_instruction()->opcode(), HloOpcode::kAdd);
  ASSERT_EQ(e->root_instruction()->operand_count(), 2);
  EXPECT_EQ(e->root_instruction()->operand(0), e->parameter_instruction(0));
  EXPECT_EQ(e->root_instruction()->shape().ToString(), "f32[2]{0}");
}

TEST(ParserTest, WhatOlderXlaTestsWrite) {
  // A colon after the module name, and a scalar for an array constant (every element).
  auto m = Parse(R"(HloModule axpy_module:
ENTRY e {
  ROOT c = bf16[3,2] constant(1.5)
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "axpy_module");
  const Literal& c = m->entry_computation()->root_instruction()->literal();
  ASSERT_EQ(c.element_count(), 6);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.GetAsDouble(i), 1.5);
  // The issue's example: a bf16[512,128] zero written as one scalar.
  auto z = Parse("HloModule m\nENTRY e {\n  ROOT c = bf16[512,128] constant(0.)\n}\n");
  ASSERT_TRUE(z);
  const Literal& zc = z->entry_computation()->root_instruction()->literal();
  ASSERT_EQ(zc.element_count(), 512 * 128);
  for (int64_t i = 0; i < zc.element_count(); i += 4099) EXPECT_EQ(zc.GetAsDouble(i), 0.0);
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT c = f32[1099511627776] constant(0)\n}\n").find("would take more"),
            std::string::npos);
}

TEST(ParserTest, InstructionsWithoutShapesAndNestedOperands) {
  // XLA infers a shape left out, and reads an operand written as an instruction.
  auto m = Parse(R"(HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = add(a, b)
}
ENTRY e {
  x = f32[4,3] parameter(0)
  z = f32[] constant(0)
  t = (f32[4,3], f32[]) tuple(x, z)
  gte0 = get-tuple-element(t), index=0
  r = reduce(gte0, z), dimensions={1}, to_apply=sum
  k = s32[] add(s32[] parameter(1), s32[] constant(1))
  ROOT y = tuple(r, k)
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(Find(*m, "gte0")->shape().ToString(), "f32[4,3]{1,0}");
  EXPECT_EQ(Find(*m, "r")->shape().ToString(), "f32[4]{0}");
  EXPECT_EQ(Find(*m, "s")->shape().ToString(), "f32[]");
  EXPECT_EQ(m->entry_computation()->root_instruction()->shape().ToString(), "(f32[4]{0}, s32[])");
  const HloInstruction* k = Find(*m, "k");
  ASSERT_EQ(k->operand_count(), 2);
  EXPECT_EQ(k->operand(0)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(k->operand(0)->parameter_number(), 1);
  EXPECT_EQ(k->operand(1)->opcode(), HloOpcode::kConstant);
  EXPECT_EQ(m->entry_computation()->num_parameters(), 2);
  // What cannot be inferred says so, at the instruction.
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = broadcast(x), dimensions={0}\n}\n")
                .find("4:8: cannot infer the shape of 'y'"),
            std::string::npos);
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT y = parameter(0)\n}\n").find("expected shape"), std::string::npos);
}

TEST(ParserTest, NestedOperandsWithoutShapes) {
  // An operand written as "opcode(...)" has its shape inferred like a top-level instruction
  // without one; a name spelled like an opcode ("add") stays a name unless '(' follows it.
  auto m = Parse(R"(HloModule m
ENTRY e {
  add = add(f32[10] parameter(0), f32[10] parameter(1))
  ROOT r = tuple(add, multiply(add, negate(add)), add)
})");
  ASSERT_TRUE(m);
  const HloInstruction* r = m->entry_computation()->root_instruction();
  EXPECT_EQ(r->shape().ToString(), "(f32[10]{0}, f32[10]{0}, f32[10]{0})");
  ASSERT_EQ(r->operand_count(), 3);
  EXPECT_EQ(r->operand(0), Find(*m, "add"));
  const HloInstruction* mul = r->operand(1);
  EXPECT_EQ(mul->opcode(), HloOpcode::kMultiply);
  EXPECT_EQ(mul->shape().ToString(), "f32[10]{0}");
  EXPECT_EQ(mul->operand(0), Find(*m, "add"));
  EXPECT_EQ(mul->operand(1)->opcode(), HloOpcode::kNegate);
  // parameter and constant still need their shape.
  EXPECT_NE(ParseError("HloModule m\nENTRY e {\n  ROOT a = f32[] add(parameter(0), parameter(1))\n}\n"),
            "");
}

TEST(ParserTest, ElidedNestedConstantFilledOnRequest) {
  const char* text = R"(HloModule m
ENTRY e {
  ROOT a = add(f32[3,2] reshape(f32[2,3] parameter(0)), f32[3,2] constant({...}))
})";
  EXPECT_NE(ParseError(text).find("has an elided value ({...}); set fill_elided_constants"), std::string::npos);
  ParseOptions fill;
  fill.fill_elided_constants = true;
  auto m = Parse(text, fill);
  ASSERT_TRUE(m);
  const HloInstruction* c = m->entry_computation()->root_instruction()->operand(1);
  ASSERT_EQ(c->opcode(), HloOpcode::kConstant);
  ASSERT_TRUE(c->has_literal());
  EXPECT_EQ(c->literal().element_count(), 6);
}

TEST(ParserTest, ScalarWindowOpsWithoutWindow) {
  // XLA writes no window= for a reduce-window or select-and-scatter of a scalar: a window of no
  // dimensions.
  auto m = Parse(R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ge { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = pred[] compare(a, b), direction=GE }
ENTRY e {
  x = f32[] parameter(0)
  i = f32[] constant(1)
  rw = f32[] reduce-window(x, i), to_apply=add
  ROOT ss = f32[] select-and-scatter(x, rw, i), select=ge, scatter=add
})");
  ASSERT_TRUE(m);
  for (const char* name : {"rw", "ss"}) {
    const HloInstruction* w = Find(*m, name);
    ASSERT_TRUE(w->attrs().window.has_value()) << name;
    EXPECT_TRUE(w->attrs().window->dimensions.empty()) << name;
  }
}

TEST(ParserTest, CustomCallLiteralInXlasTupleForm) {
  // XLA prints a tuple literal element by element, each with its shape; kiln prints the tuple
  // shape and then the value. Both read the same.
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[1] custom-call(), custom_call_target="t", literal=( s32[4]{0} {4, 128, 128, 3}, pred[2]{0} {1, 0} )
  b = f32[1] custom-call(), custom_call_target="t", literal=(s32[4]{0}, pred[2]{0}) ({4, 128, 128, 3}, {1, 0})
  c = f32[1] custom-call(), custom_call_target="t", literal=s32[2]{0} {1, 2}
  ROOT d = f32[1] custom-call(), custom_call_target="t", literal=f32[] 0.1
})");
  ASSERT_TRUE(m);
  const Literal& a = Find(*m, "a")->literal();
  ASSERT_EQ(a.tuple_size(), 2);
  EXPECT_EQ(a.shape().ToString(false), "(s32[4], pred[2])");
  EXPECT_EQ(a.tuple_element(0).GetAsDouble(1), 128);
  EXPECT_EQ(a.tuple_element(1).GetAsDouble(0), 1);
  EXPECT_EQ(Find(*m, "b")->literal().shape().ToString(false), "(s32[4], pred[2])");
  EXPECT_EQ(Find(*m, "b")->literal().tuple_element(0).GetAsDouble(3), 3);
  EXPECT_EQ(Find(*m, "c")->literal().GetAsDouble(1), 2);
  EXPECT_FLOAT_EQ(Find(*m, "d")->literal().GetAsDouble(0), 0.1f);
}

TEST(ParserTest, U64ConstantFromANegativeInteger) {
  auto m = Parse("HloModule m\nENTRY e {\n  ROOT c = u64[2] constant({-1, 9223372036854775808})\n}\n");
  ASSERT_TRUE(m);
  const Literal& c = m->entry_computation()->root_instruction()->literal();
  EXPECT_EQ(c.data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_EQ(c.data<uint64_t>()[1], uint64_t{1} << 63);
}

TEST(ParserTest, DimLabelsWithUnknownDimensions) {
  // XLA's custom calls may mark a dimension of no role with '?'.
  auto m = Parse(R"(HloModule m
ENTRY e {
  ROOT r = f32[100]{0} custom-call(), window={size=2x2}, dim_labels=?b01f_0?1io->b01?f, custom_call_target="t"
})");
  ASSERT_TRUE(m);
  const ConvolutionDimensionNumbers& d = *m->entry_computation()->root_instruction()->attrs().convolution_dimension_numbers;
  EXPECT_EQ(d.input_batch_dimension, 1);
  EXPECT_EQ(d.input_feature_dimension, 4);
  EXPECT_EQ(d.input_spatial_dimensions, (std::vector<int64_t>{2, 3, -1}));
  EXPECT_EQ(d.kernel_spatial_dimensions, (std::vector<int64_t>{0, 2, -1}));
  EXPECT_EQ(d.output_spatial_dimensions, (std::vector<int64_t>{1, 2, -1}));
  std::string printed = PrintModule(*m);
  EXPECT_NE(printed.find("dim_labels=?b01f_0?1io->b01?f"), std::string::npos) << printed;
}

TEST(ParserTest, PercentNamesSignatureAndCalledComputations) {
  auto m = Parse(R"(HloModule m, is_scheduled=true

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[4,8]) -> f32[4] {
  %p = f32[4,8]{1,0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[4]{0} reduce(f32[4,8]{1,0} %p, f32[] %z), dimensions={1}, to_apply=%add
})");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->header().is_scheduled);
  HloInstruction* r = Find(*m, "r");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->attrs().dimensions, std::vector<int64_t>{1});
  ASSERT_EQ(r->called_computations().size(), 1u);
  EXPECT_EQ(r->to_apply()->name(), "add");
  EXPECT_EQ(m->entry_computation()->name(), "main");
}

TEST(ParserTest, ForwardReferencesToComputations) {
  auto m = Parse(R"(HloModule m
ENTRY main {
  p = (s32[], f32[]) parameter(0)
  ROOT w = (s32[], f32[]) while(p), condition=cond, body=body
}
body {
  b = (s32[], f32[]) parameter(0)
  ROOT t = (s32[], f32[]) copy(b)
}
cond {
  c = (s32[], f32[]) parameter(0)
  ROOT f = pred[] constant(false)
})");
  ASSERT_TRUE(m);
  HloInstruction* w = Find(*m, "w");
  EXPECT_EQ(w->while_condition()->name(), "cond");
  EXPECT_EQ(w->while_body()->name(), "body");
  EXPECT_EQ(m->entry_computation()->name(), "main");
}

TEST(ParserTest, BareComputationWithoutRoot) {
  auto m = Parse(R"(e {
  a = u4[1024,512]{1,0:E(4)} parameter(0)
  b = u4[1024,4096]{1,0:E(4)} all-gather(a), dimensions={1}
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry_computation()->name(), "e");
  EXPECT_EQ(m->entry_computation()->root_instruction()->name(), "b");
  const Shape& s = m->entry_computation()->root_instruction()->shape();
  EXPECT_EQ(s.layout().element_size_in_bits, 4);
}

TEST(ParserTest, Constants) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,3]{1,0} constant({ { 1, 2.5, -3 }, { inf, -inf, 1e-3 } })
  b = pred[2]{0} constant({true, false})
  c = u64[] constant(18446744073709551615)
  d = s8[] constant(-128)
  e = c64[] constant((1, -2))
  f = f32[0]{0} constant({})
  g = (s32[], f32[2]{0}) constant((7, {1, 2}))
  h = bf16[] constant(0.1)
  i = f32[] constant(nan)
  ROOT t = (s32[]) tuple(d)
})");
  ASSERT_TRUE(m);
  const Literal& a = Find(*m, "a")->literal();
  EXPECT_EQ(a.Get<float>({0, 1}), 2.5f);
  EXPECT_EQ(a.Get<float>({0, 2}), -3.0f);
  EXPECT_TRUE(std::isinf(a.Get<float>({1, 0})) && a.Get<float>({1, 0}) > 0);
  EXPECT_EQ(a.Get<float>({1, 2}), 1e-3f);
  EXPECT_TRUE(Find(*m, "b")->literal().Get<bool>({0}));
  EXPECT_EQ(Find(*m, "c")->literal().Get<uint64_t>({}), 18446744073709551615ull);
  EXPECT_EQ(Find(*m, "d")->literal().Get<int8_t>({}), -128);
  EXPECT_EQ(Find(*m, "e")->literal().Get<std::complex<float>>({}), std::complex<float>(1, -2));
  EXPECT_EQ(Find(*m, "f")->literal().element_count(), 0);
  const Literal& g = Find(*m, "g")->literal();
  ASSERT_EQ(g.tuple_size(), 2);
  EXPECT_EQ(g.tuple_element(0).Get<int32_t>({}), 7);
  EXPECT_EQ(g.tuple_element(1).Get<float>({1}), 2.0f);
  EXPECT_EQ(float(Find(*m, "h")->literal().Get<bfloat16>({})), float(bfloat16(0.1f)));
  EXPECT_TRUE(std::isnan(Find(*m, "i")->literal().Get<float>({})));
}

TEST(ParserTest, ElidedConstantIsAnErrorUnlessFilled) {
  const char* text = "HloModule m\nENTRY e {\n  ROOT c = f32[4]{0} constant({...})\n}\n";
  std::string err = ParseError(text);
  EXPECT_NE(err.find("<text>:3:8: constant 'c' has an elided value"), std::string::npos) << err;
  ParseOptions o;
  o.fill_elided_constants = true;
  auto m1 = Parse(text, o);
  auto m2 = Parse(text, o);
  ASSERT_TRUE(m1 && m2);
  HloInstruction* c = m1->entry_computation()->root_instruction();
  ASSERT_TRUE(c->has_literal());
  EXPECT_FALSE(c->literal_elided());
  EXPECT_TRUE(c->literal().BitwiseEquals(m2->entry_computation()->root_instruction()->literal()));
}

TEST(ParserTest, ErrorHasPositionLineAndCaret) {
  std::string err = ParseError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(p p)\n}\n");
  EXPECT_EQ(err,
            "<text>:4:25: expected ')', found identifier 'p'\n"
            "  ROOT a = f32[2] add(p p)\n"
            "                        ^");
}

TEST(ParserTest, UnknownOpcodeAndUndefinedOperand) {
  EXPECT_EQ(ParseError("ENTRY e {\n  ROOT a = f32[] frobnicate()\n}"),
            "<text>:2:18: unknown opcode 'frobnicate'\n  ROOT a = f32[] frobnicate()\n                 ^");
  EXPECT_EQ(ParseError("ENTRY e {\n  ROOT a = f32[] negate(q)\n}"),
            "<text>:2:25: operand 'q' is not defined in computation 'e'\n  ROOT a = f32[] negate(q)\n                        ^");
}

TEST(ParserTest, UnknownAttributeKeptVerbatim) {
  auto m = Parse(R"(ENTRY e {
  p = f32[2]{0} parameter(0), parameter_replication={true}
  ROOT n = f32[2]{0} negate(p), some_future_attr={a=[1,2] b="x,y"}, result_accuracy={tolerance={atol=1e-05}}
})");
  ASSERT_TRUE(m);
  HloInstruction* n = Find(*m, "n");
  ASSERT_EQ(n->attrs().extra.size(), 2u);
  EXPECT_EQ(n->attrs().extra[0].first, "some_future_attr");
  EXPECT_EQ(n->attrs().extra[0].second, "{a=[1,2] b=\"x,y\"}");
  EXPECT_EQ(n->attrs().extra[1].second, "{tolerance={atol=1e-05}}");
  EXPECT_EQ(Find(*m, "p")->attrs().extra[0].second, "{true}");
}

}  // namespace
}  // namespace kiln
