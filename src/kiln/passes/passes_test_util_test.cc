// The pass-test helpers must be able to fail: a value check that compared no input is no check.
#include "kiln/passes/passes_test_util.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace kiln::testing {
namespace {

// A pass that changes nothing.
class NoOpPass : public HloPass {
 public:
  std::string_view name() const override { return "no-op"; }
  StatusOr<bool> Run(HloModule&) override { return false; }
};

// A loop that never ends on any input (the counter steps by 3 from 0 and is compared with 10 for
// equality), so every input set is skipped.
constexpr char kEndlessLoop[] = R"(
HloModule m
cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT c = pred[] compare(i, n), direction=NE
}
body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[3] get-tuple-element(s), index=1
  k = s32[] constant(3)
  i2 = s32[] add(i, k)
  ROOT t = (s32[], f32[3]) tuple(i2, a)
}
ENTRY e {
  p = f32[3] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[3]) tuple(z, p)
  ROOT w = (s32[], f32[3]) while(init), condition=cond, body=body
}
)";

TEST(PassesTestUtilTest, ACheckThatComparedNoInputFails) {
  NoOpPass pass;
  EXPECT_NONFATAL_FAILURE(RunPassAndCheck(pass, kEndlessLoop, /*expect_changed=*/false),
                          "no input could be compared");
}

TEST(PassesTestUtilTest, ADifferenceFails) {
  // A "rewrite" to a different module: the comparison sees it.
  auto before = ParseOrDie("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n");
  auto after = ParseOrDie("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] abs(p)\n}\n");
  ASSERT_TRUE(before && after);
  EXPECT_NE(CompareModules(*before, *after, RandomArguments(*before, 1), Match::kExact), "");
  EXPECT_EQ(CompareModules(*before, *before, RandomArguments(*before, 1), Match::kExact), "");
}

}  // namespace
}  // namespace kiln::testing
