// MapExpander (Note [Map expansion]): elementwise bodies become array ops with exactly the
// evaluator's values; bodies with other instructions stay maps.
#include "kiln/passes/map_expander.h"

#include <gtest/gtest.h>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::RunPassAndCheck;

int Count(const HloModule& m, HloOpcode op) {
  int n = 0;
  for (const HloInstruction* i : m.entry_computation()->instructions()) n += i->opcode() == op;
  return n;
}

TEST(MapExpander, ElementwiseBodyWithConstantsCompareAndConvert) {
  MapExpander pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  t = f32[] multiply(a, two)
  s = f32[] add(t, b)
  gt = pred[] compare(s, a), direction=GT
  n = f32[] negate(s)
  sel = f32[] select(gt, s, n)
  ROOT c = s32[] convert(sel)
}
ENTRY e {
  x = f32[3,4] parameter(0)
  y = f32[3,4] parameter(1)
  ROOT r = s32[3,4] map(x, y), dimensions={0,1}, to_apply=f
}
)");
  EXPECT_EQ(Count(*m, HloOpcode::kMap), 0);
  EXPECT_EQ(Count(*m, HloOpcode::kCompare), 1);
  EXPECT_EQ(Count(*m, HloOpcode::kConvert), 1);
}

TEST(MapExpander, NestedMapsAndAParameterRoot) {
  MapExpander pass;
  auto m = RunPassAndCheck(pass, R"(
HloModule m
inner {
  a = f32[] parameter(0)
  ROOT e = f32[] exponential(a)
}
outer {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = f32[] map(a), dimensions={}, to_apply=inner
  ROOT s = f32[] subtract(i, b)
}
second {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY e {
  x = f32[5] parameter(0)
  y = f32[5] parameter(1)
  o = f32[5] map(x, y), dimensions={0}, to_apply=outer
  s = f32[5] map(x, o), dimensions={0}, to_apply=second
  ROOT r = (f32[5], f32[5]) tuple(o, s)
}
)");
  EXPECT_EQ(Count(*m, HloOpcode::kMap), 0);
}

TEST(MapExpander, OtherBodiesStayMaps) {
  MapExpander pass;
  // A body calling something that is not elementwise (an rng) is left alone.
  RunPassAndCheck(pass, R"(
HloModule m
f {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}
g {
  a = f32[] parameter(0)
  c = f32[] call(a), to_apply=f
  ROOT s = f32[] sine(c)
}
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] map(x), dimensions={0}, to_apply=g
}
)", false);
}

}  // namespace
}  // namespace kiln
