#include "kiln/passes/simple_passes.h"

#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"
#include "kiln/hlo/printer.h"
#include "kiln/passes/pipeline.h"

namespace kiln {
namespace {

std::unique_ptr<HloModule> Parse(std::string_view text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Opcodes of the entry computation in post order, e.g. "parameter,parameter,add".
std::string EntryOps(const HloModule& m) {
  std::string s;
  for (HloInstruction* i : m.entry_computation()->MakeInstructionPostOrder()) {
    if (!s.empty()) s += ",";
    s += HloOpcodeString(i->opcode());
  }
  return s;
}

TEST(DceTest, RemovesUnusedAndKeepsSideEffects) {
  auto m = Parse(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  dead = f32[4] multiply(p, p)
  dead2 = f32[4] negate(dead)
  keep = f32[4] custom-call(p), custom_call_target="foo", custom_call_has_side_effect=true
  ROOT r = f32[4] add(p, p)
}
)");
  DeadCodeElimination dce;
  ASSERT_TRUE(dce.Run(*m).value());
  EXPECT_EQ(EntryOps(*m), "parameter,custom-call,add");
  EXPECT_FALSE(dce.Run(*m).value());
}

TEST(DceTest, RemovesUnreachableComputations) {
  auto m = Parse(R"(
HloModule m
unused {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}
ENTRY main {
  ROOT p = f32[] parameter(0)
}
)");
  DeadCodeElimination dce;
  EXPECT_TRUE(dce.Run(*m).value());
  EXPECT_EQ(m->computations().size(), 1u);
}

TEST(CseTest, MergesIdenticalInstructionsAndConstants) {
  auto m = Parse(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  c1 = f32[] constant(2)
  c2 = f32[] constant(2)
  c3 = f32[] constant(3)
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  b3 = f32[4] broadcast(c3), dimensions={}
  m1 = f32[4] multiply(p, b1)
  m2 = f32[4] multiply(p, b2)
  m3 = f32[4] multiply(p, b3)
  s = f32[4] add(m1, m2)
  ROOT r = f32[4] add(s, m3)
}
)");
  CommonSubexpressionElimination cse;
  ASSERT_TRUE(cse.Run(*m).value());
  // c1/c2, b1/b2 and m1/m2 merge; c3/b3/m3 differ.
  EXPECT_EQ(m->entry_computation()->instruction_count(), 9);
  HloInstruction* s = m->entry_computation()->GetInstructionWithName("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->operand(0), s->operand(1));
  EXPECT_FALSE(cse.Run(*m).value());
}

TEST(CseTest, KeepsDifferentAttributesAndRng) {
  auto m = Parse(R"(
HloModule m
ENTRY main {
  p = f32[2,3] parameter(0)
  a = f32[3,2] transpose(p), dimensions={1,0}
  b = f32[2,3] transpose(p), dimensions={0,1}
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r1 = f32[2] rng(lo, hi), distribution=rng_uniform
  r2 = f32[2] rng(lo, hi), distribution=rng_uniform
  ROOT t = (f32[3,2], f32[2,3], f32[2], f32[2]) tuple(a, b, r1, r2)
}
)");
  CommonSubexpressionElimination cse;
  EXPECT_FALSE(cse.Run(*m).value());
}

TEST(TupleSimplifierTest, ForwardsElementsAndCollapsesRebuiltTuples) {
  auto m = Parse(R"(
HloModule m
ENTRY main {
  p0 = f32[2] parameter(0)
  p1 = s32[] parameter(1)
  t = (f32[2], s32[]) tuple(p0, p1)
  g0 = f32[2] get-tuple-element(t), index=0
  g1 = s32[] get-tuple-element(t), index=1
  t2 = (f32[2], s32[]) tuple(g0, g1)
  x = (f32[2], s32[]) parameter(2)
  x0 = f32[2] get-tuple-element(x), index=0
  x1 = s32[] get-tuple-element(x), index=1
  x2 = (f32[2], s32[]) tuple(x0, x1)
  ROOT r = ((f32[2], s32[]), (f32[2], s32[])) tuple(t2, x2)
}
)");
  TupleSimplifier ts;
  ASSERT_TRUE(ts.Run(*m).value());
  HloInstruction* root = m->entry_computation()->root_instruction();
  // t2 rebuilt t's elements; gte(t) forwarded to p0/p1, so t2 is tuple(p0, p1).
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kTuple);
  EXPECT_EQ(root->operand(0)->operand(0)->opcode(), HloOpcode::kParameter);
  // x2 collapses to the parameter x.
  EXPECT_EQ(root->operand(1)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(root->operand(1)->parameter_number(), 2);
}

TEST(CallInlinerTest, InlinesNestedCalls) {
  auto m = Parse(R"(
HloModule m
inner {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}
outer {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  c = f32[] call(x), to_apply=inner
  ROOT s = f32[] add(c, y)
}
ENTRY main {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT r = f32[] call(p, q), to_apply=outer
}
)");
  CallInliner inliner;
  ASSERT_TRUE(inliner.Run(*m).value());
  EXPECT_EQ(m->computations().size(), 1u);
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,negate,add");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(0)->opcode(), HloOpcode::kNegate);
}

TEST(PipelineTest, RecordsStatsAndRunsVerifier) {
  auto m = Parse(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  dead = f32[4] multiply(p, p)
  ROOT r = f32[4] add(p, p)
}
)");
  int verified = 0;
  PipelineOptions options;
  options.verifier = [&](const HloModule&) {
    ++verified;
    return OkStatus();
  };
  HloPassPipeline pipeline("simplify", options);
  pipeline.AddPass<DeadCodeElimination>();
  pipeline.AddPass<CommonSubexpressionElimination>();
  ASSERT_TRUE(pipeline.Run(*m).value());
  ASSERT_EQ(pipeline.stats().size(), 2u);
  EXPECT_EQ(pipeline.stats()[0].name, "simplify/dce");
  EXPECT_TRUE(pipeline.stats()[0].changed);
  EXPECT_EQ(pipeline.stats()[0].instructions_before, 3);
  EXPECT_EQ(pipeline.stats()[0].instructions_after, 2);
  EXPECT_EQ(verified, 1);

  // A failing verifier stops the pipeline with the pass named.
  auto m2 = Parse(R"(
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  dead = f32[4] multiply(p, p)
  ROOT r = f32[4] add(p, p)
}
)");
  PipelineOptions bad;
  bad.verifier = [](const HloModule&) { return InvalidArgument("broken"); };
  HloPassPipeline p2("x", bad);
  p2.AddPass<DeadCodeElimination>();
  auto st = p2.Run(*m2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("after pass x/dce"), std::string::npos);
}

}  // namespace
}  // namespace kiln
