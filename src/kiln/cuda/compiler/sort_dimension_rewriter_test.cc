#include "kiln/cuda/compiler/sort_dimension_rewriter.h"

#include <gtest/gtest.h>

#include <string>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln::cuda {
namespace {

using testing::EntryOps;
using testing::RunPassAndCheck;

// The sort of the entry computation (exactly one expected).
const HloInstruction* EntrySort(const HloModule& m) {
  const HloInstruction* found = nullptr;
  for (const HloInstruction* i : m.entry_computation()->MakeInstructionPostOrder())
    if (i->opcode() == HloOpcode::kSort) {
      EXPECT_EQ(found, nullptr) << "more than one sort";
      found = i;
    }
  return found;
}

constexpr const char* kLessF32 = R"(
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
)";

// argsort as JAX writes it: keys and an iota payload, the comparator looking at the keys only.
constexpr const char* kArgsortCmp = R"(
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=LT
}
)";

TEST(SortDimensionRewriter, SingleOperandRank2Dim0) {
  std::string text = std::string("HloModule m\n") + kLessF32 + R"(
ENTRY e {
  x = f32[5,7] parameter(0)
  ROOT s = f32[5,7] sort(x), dimensions={0}, to_apply=lt
}
)";
  SortDimensionRewriter pass;
  auto m = RunPassAndCheck(pass, text);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,transpose,sort,transpose");
  const HloInstruction* s = EntrySort(*m);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->attrs().dimensions, std::vector<int64_t>({1}));
  EXPECT_EQ(s->shape().dimensions(), std::vector<int64_t>({7, 5}));
  EXPECT_EQ(s->operand(0)->attrs().dimensions, std::vector<int64_t>({1, 0}));
  const HloInstruction* root = m->entry_computation()->root_instruction();
  EXPECT_EQ(root->opcode(), HloOpcode::kTranspose);
  EXPECT_EQ(root->attrs().dimensions, std::vector<int64_t>({1, 0}));
  EXPECT_EQ(root->shape().dimensions(), std::vector<int64_t>({5, 7}));
  // The printed form carries the new sort dimension and the comparator.
  const std::string printed = m->ToString();
  EXPECT_NE(printed.find("dimensions={1}, to_apply=%lt"), std::string::npos) << printed;
}

TEST(SortDimensionRewriter, MinorDimensionUnchanged) {
  std::string text = std::string("HloModule m\n") + kLessF32 + R"(
ENTRY e {
  x = f32[5,7] parameter(0)
  ROOT s = f32[5,7] sort(x), dimensions={1}, to_apply=lt
}
)";
  SortDimensionRewriter pass;
  auto m = RunPassAndCheck(pass, text, /*expect_changed=*/false);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(EntryOps(*m), "parameter,sort");
}

TEST(SortDimensionRewriter, Rank1Unchanged) {
  std::string text = std::string("HloModule m\n") + kLessF32 + R"(
ENTRY e {
  x = f32[9] parameter(0)
  ROOT s = f32[9] sort(x), dimensions={0}, to_apply=lt
}
)";
  SortDimensionRewriter pass;
  auto m = RunPassAndCheck(pass, text, /*expect_changed=*/false);
  ASSERT_NE(m, nullptr);
}

// Variadic argsort (keys with many ties: x & 3, plus an iota payload), ranks 2 and 3, every
// non-minor dimension, stable and not. The evaluator's values before and after must agree
// exactly (for stable sorts that includes the payload order among equal keys).
struct ArgsortCase {
  std::string dims;      // "4,6" / "3,4,5"
  int64_t rank;
  int64_t dim;
  bool stable;
};

std::string ArgsortModule(const ArgsortCase& c) {
  std::string shape = "s32[" + c.dims + "]";
  std::string text = std::string("HloModule m\n") + kArgsortCmp + "\nENTRY e {\n";
  text += "  x = " + shape + " parameter(0)\n";
  text += "  three = s32[] constant(3)\n";
  text += "  b = " + shape + " broadcast(three), dimensions={}\n";
  text += "  k = " + shape + " and(x, b)\n";
  text += "  i = " + shape + " iota(), iota_dimension=" + std::to_string(c.dim) + "\n";
  text += "  ROOT s = (" + shape + ", " + shape + ") sort(k, i), dimensions={" + std::to_string(c.dim) + "}" +
          (c.stable ? ", is_stable=true" : "") + ", to_apply=cmp\n}\n";
  return text;
}

TEST(SortDimensionRewriter, VariadicArgsortMatchesEvaluator) {
  const ArgsortCase cases[] = {
      {"4,6", 2, 0, true},   {"4,6", 2, 0, false},  {"3,4,5", 3, 0, true}, {"3,4,5", 3, 0, false},
      {"3,4,5", 3, 1, true}, {"3,4,5", 3, 1, false}, {"9,2", 2, 0, true},
  };
  for (const ArgsortCase& c : cases) {
    SCOPED_TRACE(ArgsortModule(c));
    SortDimensionRewriter pass;
    auto m = RunPassAndCheck(pass, ArgsortModule(c));
    ASSERT_NE(m, nullptr);
    const HloInstruction* s = EntrySort(*m);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->attrs().dimensions, std::vector<int64_t>({c.rank - 1}));
    EXPECT_EQ(s->attrs().is_stable, c.stable);
    ASSERT_EQ(s->operand_count(), 2);
    EXPECT_EQ(s->operand(0)->opcode(), HloOpcode::kTranspose);
    EXPECT_EQ(s->operand(1)->opcode(), HloOpcode::kTranspose);
    const HloInstruction* root = m->entry_computation()->root_instruction();
    ASSERT_EQ(root->opcode(), HloOpcode::kTuple);
    for (const HloInstruction* t : root->operands()) {
      EXPECT_EQ(t->opcode(), HloOpcode::kTranspose);
      EXPECT_EQ(t->operand(0)->opcode(), HloOpcode::kGetTupleElement);
    }
  }
}

// Rank 3, dimension 1, f32 keys with a descending comparator and an f32 payload; the sort
// result used by another instruction (not the root).
TEST(SortDimensionRewriter, Rank3Dim1FloatPayloadWithUser) {
  std::string text = R"(HloModule m
gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[2,6,3] parameter(0)
  y = f32[2,6,3] parameter(1)
  s = (f32[2,6,3], f32[2,6,3]) sort(x, y), dimensions={1}, to_apply=gt
  g0 = f32[2,6,3] get-tuple-element(s), index=0
  g1 = f32[2,6,3] get-tuple-element(s), index=1
  ROOT a = f32[2,6,3] add(g0, g1)
}
)";
  SortDimensionRewriter pass;
  auto m = RunPassAndCheck(pass, text);
  ASSERT_NE(m, nullptr);
  const HloInstruction* s = EntrySort(*m);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->attrs().dimensions, std::vector<int64_t>({2}));
  EXPECT_EQ(s->operand(0)->attrs().dimensions, std::vector<int64_t>({0, 2, 1}));
  EXPECT_EQ(s->shape().tuple_shapes(0).dimensions(), std::vector<int64_t>({2, 3, 6}));
}

}  // namespace
}  // namespace kiln::cuda
