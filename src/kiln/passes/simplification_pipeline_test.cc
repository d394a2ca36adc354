#include "kiln/passes/simplification_pipeline.h"

#include <gtest/gtest.h>

#include "kiln/hlo/verifier.h"
#include "kiln/passes/dot_canonicalizer.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::EntryOps;

// The passes working together: the call is inlined, its constant arithmetic folds, the loop
// whose bound folds to 0 disappears, x * 1 and reshape(reshape(x)) go, and the copies CSE
// merges.
constexpr char kModule[] = R"(
HloModule m
scale {
  x = f32[2,3] parameter(0)
  a = f32[] constant(3)
  b = f32[] constant(3)
  d = f32[] divide(a, b)
  bd = f32[2,3] broadcast(d), dimensions={}
  ROOT m = f32[2,3] multiply(x, bd)
}
cond {
  s = (s32[], f32[2,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(0)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[2,3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[2,3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  y = f32[2,3] sine(x)
  ROOT t = (s32[], f32[2,3]) tuple(i2, y)
}
ENTRY e {
  p = f32[2,3] parameter(0)
  q = f32[3,2] parameter(1)
  c = f32[2,3] call(p), to_apply=scale
  z = s32[] constant(0)
  init = (s32[], f32[2,3]) tuple(z, c)
  w = (s32[], f32[2,3]) while(init), condition=cond, body=body
  r = f32[2,3] get-tuple-element(w), index=1
  r1 = f32[6] reshape(r)
  r2 = f32[3,2] reshape(r1)
  d = f32[3,3] dot(r2, q), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  e1 = f32[3,3] exponential(d)
  e2 = f32[3,3] exponential(d)
  ROOT s = f32[3,3] add(e1, e2)
}
)";

TEST(SimplificationPipelineTest, PassesWorkTogether) {
  PipelineOptions options;
  options.verifier = [](const HloModule& m) { return VerifyModule(m); };
  HloPassPipeline pipeline("neutral", options);
  AddSimplificationPasses(pipeline);
  auto m = testing::RunPassAndCheck(pipeline, kModule);
  EXPECT_EQ(EntryOps(*m), "parameter,parameter,reshape,dot,exponential,add");
  EXPECT_EQ(m->computations().size(), 1u);
  ASSERT_FALSE(pipeline.stats().empty());
  EXPECT_EQ(pipeline.stats()[0].name, "neutral/call-inliner");
}

TEST(SimplificationPipelineTest, CanonicalDotsOption) {
  HloPassPipeline pipeline("neutral");
  SimplificationOptions options;
  options.canonicalize_dots = true;
  AddSimplificationPasses(pipeline, options);
  auto m = testing::RunPassAndCheck(pipeline, kModule);
  for (const HloInstruction* i : m->entry_computation()->instructions()) {
    if (i->opcode() == HloOpcode::kDot) {
      EXPECT_TRUE(IsCanonicalDot(*i)) << i->ToString();
    }
  }
}

}  // namespace
}  // namespace kiln
