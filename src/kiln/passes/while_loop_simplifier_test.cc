#include "kiln/passes/while_loop_simplifier.h"

#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"
#include "kiln/passes/passes_test_util.h"

namespace kiln {
namespace {

using testing::EntryOps;
using testing::ParseOrDie;

// A counting loop: state (counter: T, acc: f32[3]); the condition is `cond_expr` over the
// counter %i (and %n, the constant bound `bound`); the body applies `update` to the counter.
std::string CountingLoop(std::string_view type, std::string_view init, std::string_view bound,
                         std::string_view direction, std::string_view update,
                         std::string_view step, bool swap_compare = false) {
  return StrCat(R"(
HloModule m
cond {
  s = ()", type, R"([], f32[3]) parameter(0)
  i = )", type, R"([] get-tuple-element(s), index=0
  n = )", type, R"([] constant()", bound, R"()
  ROOT c = pred[] compare()", swap_compare ? "n, i" : "i, n", R"(), direction=)", direction, R"(
}
body {
  s = ()", type, R"([], f32[3]) parameter(0)
  i = )", type, R"([] get-tuple-element(s), index=0
  a = f32[3] get-tuple-element(s), index=1
  k = )", type, R"([] constant()", step, R"()
  i2 = )", type, R"([] )", update, R"((i, k)
  one = f32[] constant(1)
  ones = f32[3] broadcast(one), dimensions={}
  a2 = f32[3] add(a, ones)
  ROOT t = ()", type, R"([], f32[3]) tuple(i2, a2)
}
ENTRY e {
  p = f32[3] parameter(0)
  z = )", type, R"([] constant()", init, R"()
  init = ()", type, R"([], f32[3]) tuple(z, p)
  ROOT w = ()", type, R"([], f32[3]) while(init), condition=cond, body=body
}
)");
}

// Checks `trips` against the evaluator: the loop finishes with trips + 1 allowed condition
// evaluations and not with trips.
void ExpectTrips(const std::string& text, std::optional<int64_t> want) {
  auto m = ParseOrDie(text);
  ASSERT_NE(m, nullptr);
  const HloInstruction* w = m->entry_computation()->root_instruction();
  std::optional<int64_t> got = ComputeWhileTripCount(*w);
  EXPECT_EQ(got, want) << text;
  if (!got) return;
  std::vector<Literal> args = testing::RandomArguments(*m, 1);
  EvaluatorOptions ok_options;
  ok_options.max_loop_iterations = *got + 1;
  EXPECT_TRUE(Evaluator(ok_options).Run(*m, args).ok());
  EvaluatorOptions short_options;
  short_options.max_loop_iterations = *got;
  EXPECT_FALSE(Evaluator(short_options).Run(*m, args).ok());
}

TEST(WhileTripCountTest, CommonForms) {
  ExpectTrips(CountingLoop("s32", "0", "10", "LT", "add", "1"), 10);
  ExpectTrips(CountingLoop("s32", "0", "10", "LT", "add", "3"), 4);
  ExpectTrips(CountingLoop("s32", "2", "10", "LE", "add", "2"), 5);
  ExpectTrips(CountingLoop("s64", "10", "0", "GT", "subtract", "1"), 10);
  ExpectTrips(CountingLoop("s32", "10", "-1", "GE", "add", "-3"), 4);
  ExpectTrips(CountingLoop("s32", "0", "12", "NE", "add", "4"), 3);
  ExpectTrips(CountingLoop("u8", "0", "200", "LT", "add", "7"), 29);
  ExpectTrips(CountingLoop("s32", "7", "7", "EQ", "add", "1"), 1);
  // Operands swapped: 10 > i.
  ExpectTrips(CountingLoop("s32", "0", "10", "GT", "add", "1", /*swap_compare=*/true), 10);
  // Never entered.
  ExpectTrips(CountingLoop("s32", "5", "3", "LT", "add", "1"), 0);
}

TEST(WhileTripCountTest, UnknownInfiniteOrWrapping) {
  ExpectTrips(CountingLoop("s32", "0", "10", "LT", "add", "-1"), std::nullopt);  // never ends
  ExpectTrips(CountingLoop("s32", "0", "10", "NE", "add", "3"), std::nullopt);   // skips 10
  ExpectTrips(CountingLoop("s8", "0", "127", "LT", "add", "100"), std::nullopt); // wraps
  ExpectTrips(CountingLoop("u8", "0", "255", "LE", "add", "1"), std::nullopt);   // wraps
  // A counter not initialized to a constant.
  std::string t = CountingLoop("s32", "0", "10", "LT", "add", "1");
  t.replace(t.find("z = s32[] constant(0)"), 21, "z = s32[] parameter(1)");
  auto m = ParseOrDie(t);
  EXPECT_EQ(ComputeWhileTripCount(*m->entry_computation()->root_instruction()), std::nullopt);
}

TEST(WhileTripCountTest, LoopInvariantBound) {
  // The JAX fori_loop form: (i, upper, x) with upper passed through unchanged.
  auto text = R"(
HloModule m
cond {
  s = (s32[], s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  u = s32[] get-tuple-element(s), index=1
  ROOT c = pred[] compare(i, u), direction=LT
}
body {
  s = (s32[], s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  u = s32[] get-tuple-element(s), index=1
  x = f32[2] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(one, i)
  x2 = f32[2] multiply(x, x)
  ROOT t = (s32[], s32[], f32[2]) tuple(i2, u, x2)
}
ENTRY e {
  p = f32[2] parameter(0)
  z = s32[] constant(0)
  n = s32[] constant(6)
  init = (s32[], s32[], f32[2]) tuple(z, n, p)
  ROOT w = (s32[], s32[], f32[2]) while(init), condition=cond, body=body
}
)";
  ExpectTrips(text, 6);
}

TEST(WhileTripCountTest, AnnotatorRecordsTheCountInXlaForm) {
  auto m = ParseOrDie(CountingLoop("s32", "0", "10", "LT", "add", "3"));
  HloInstruction* w = m->entry_computation()->root_instruction();
  EXPECT_EQ(KnownTripCount(*w), std::nullopt);
  WhileTripCountAnnotator pass;
  auto changed = pass.Run(*m);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(KnownTripCount(*w), 4);
  EXPECT_EQ(w->backend_config().text, R"({"known_trip_count":{"n":"4"}})");
  // A second run changes nothing; other fields of a JSON config are kept.
  EXPECT_FALSE(*pass.Run(*m));
  w->backend_config().text = R"({"dynamic_variables":[],"known_trip_count":{"n":"9"}})";
  EXPECT_TRUE(*pass.Run(*m));  // a recorded count that disagrees with the loop is corrected
  EXPECT_EQ(w->backend_config().text, R"({"dynamic_variables":[],"known_trip_count":{"n":"4"}})");
}

TEST(WhileTripCountTest, RecordedCountsAreReadLikeXla) {
  // Where the pattern does not match (the counter starts at a parameter), XLA's recorded
  // count is kept and read; malformed or negative ones are ignored.
  std::string t = CountingLoop("s32", "0", "10", "LT", "add", "1");
  t.replace(t.find("z = s32[] constant(0)"), 21, "z = s32[] parameter(1)");
  auto m = ParseOrDie(t);
  HloInstruction* w = m->entry_computation()->root_instruction();
  ASSERT_EQ(ComputeWhileTripCount(*w), std::nullopt);
  struct Case {
    const char* config;
    std::optional<int64_t> trips;
  };
  for (const Case& c : {Case{R"({"known_trip_count":{"n":"128"}})", 128}, Case{R"({"known_trip_count":{"n":7}})", 7},
                        Case{R"({"known_trip_count":{"n":"-3"}})", std::nullopt},
                        Case{R"({"known_trip_count":{"n":"12x"}})", std::nullopt},
                        Case{R"({"known_trip_count":{"n":"99999999999999999999"}})", std::nullopt},
                        Case{R"({"known_trip_count":"4"})", std::nullopt}, Case{R"({"known_trip_count":)", std::nullopt},
                        Case{R"(["n"])", std::nullopt}}) {
    w->backend_config().text = c.config;
    w->backend_config().is_json = true;
    EXPECT_EQ(KnownTripCount(*w), c.trips) << c.config;
    WhileTripCountAnnotator pass;
    EXPECT_FALSE(*pass.Run(*m)) << c.config;  // nothing to compute: the recorded value stays
  }
}

std::unique_ptr<HloModule> Simplify(std::string_view text, bool expect_changed = true) {
  WhileLoopSimplifier pass;
  return testing::RunPassAndCheck(pass, text, expect_changed);
}

int64_t CountOpcode(const HloModule& m, HloOpcode op) {
  int64_t n = 0;
  for (const HloComputation* c : m.computations())
    for (const HloInstruction* i : c->instructions()) n += i->opcode() == op;
  return n;
}

TEST(WhileLoopSimplifierTest, RemovesZeroTripLoops) {
  auto m = Simplify(CountingLoop("s32", "5", "3", "LT", "add", "1"));
  EXPECT_EQ(CountOpcode(*m, HloOpcode::kWhile), 0);
  EXPECT_EQ(m->entry_computation()->root_instruction()->opcode(), HloOpcode::kTuple);
}

TEST(WhileLoopSimplifierTest, InlinesSingleTripLoops) {
  auto m = Simplify(CountingLoop("s32", "0", "1", "LT", "add", "1"));
  EXPECT_EQ(CountOpcode(*m, HloOpcode::kWhile), 0);
  EXPECT_EQ(m->computations().size(), 1u);
}

TEST(WhileLoopSimplifierTest, KeepsLoopsWithMoreTripsOrUnknownCounts) {
  Simplify(CountingLoop("s32", "0", "2", "LT", "add", "1"), false);
  Simplify(CountingLoop("s32", "0", "12", "NE", "add", "3"), false);
  // 0, 3, 6, ... passes 10 and runs until s32 wraps around: no evaluation of it ends, so its
  // values cannot be compared (RunPassAndCheck would fail); the pass must still keep it.
  auto m = ParseOrDie(CountingLoop("s32", "0", "10", "NE", "add", "3"));
  WhileLoopSimplifier pass;
  auto changed = pass.Run(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(WhileLoopSimplifierTest, KeepsSingleTripLoopsWithSideEffectingConditions) {
  std::string t = CountingLoop("s32", "0", "1", "LT", "add", "1");
  t.replace(t.find("  ROOT c = pred[]"), 0,
            "  ar = s32[] custom-call(i), custom_call_target=\"log\", custom_call_has_side_effect=true\n");
  auto m = ParseOrDie(t);
  WhileLoopSimplifier pass;
  auto changed = pass.Run(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(WhileLoopSimplifierTest, RemovesDeadState) {
  // State: (i, n, pass-through p, accumulator acc, used x). Only x is read after the loop; i and
  // n feed the condition; p is passed through; acc is updated but never read afterwards.
  auto m = Simplify(R"(
HloModule m
cond {
  s = (s32[], s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] get-tuple-element(s), index=1
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] get-tuple-element(s), index=1
  p = f32[4] get-tuple-element(s), index=2
  acc = f32[4] get-tuple-element(s), index=3
  x = f32[4] get-tuple-element(s), index=4
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  acc2 = f32[4] add(acc, x)
  x2 = f32[4] sine(x)
  ROOT t = (s32[], s32[], f32[4], f32[4], f32[4]) tuple(i2, n, p, acc2, x2)
}
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  n = s32[] parameter(2)
  z = s32[] constant(0)
  init = (s32[], s32[], f32[4], f32[4], f32[4]) tuple(z, n, a, b, a)
  w = (s32[], s32[], f32[4], f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=4
}
)");
  const HloInstruction* root = m->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kGetTupleElement);
  const HloInstruction* w = root->operand(0);
  ASSERT_EQ(w->opcode(), HloOpcode::kWhile);
  EXPECT_EQ(w->shape().tuple_shapes_size(), 3);
  EXPECT_EQ(root->attrs().tuple_index, 2);
  EXPECT_EQ(m->computations().size(), 3u);  // the old condition and body are gone
}

TEST(WhileLoopSimplifierTest, KeepsStateReadBySideEffects) {
  // acc feeds a side-effecting custom call in the body: it stays even though nothing reads it
  // after the loop. (No evaluation: the custom call cannot run.)
  auto m = ParseOrDie(R"(
HloModule m
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = f32[4] get-tuple-element(s), index=1
  log = f32[4] custom-call(acc), custom_call_target="log", custom_call_has_side_effect=true
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[], f32[4]) tuple(i2, acc)
}
ENTRY e {
  a = f32[4] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4]) tuple(z, a)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = s32[] get-tuple-element(w), index=0
}
)");
  WhileLoopSimplifier pass;
  auto changed = pass.Run(*m);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(WhileLoopSimplifierTest, DeadStateWithNonTupleInit) {
  // The init comes from a parameter: the new init is built from get-tuple-elements.
  auto m = Simplify(R"(
HloModule m
cond {
  s = (s32[], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[2] get-tuple-element(s), index=1
  y = f32[2] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x2 = f32[2] add(x, x)
  y2 = f32[2] multiply(y, x)
  ROOT t = (s32[], f32[2], f32[2]) tuple(i2, x2, y2)
}
ENTRY e {
  p = (s32[], f32[2], f32[2]) parameter(0)
  w = (s32[], f32[2], f32[2]) while(p), condition=cond, body=body
  ROOT r = f32[2] get-tuple-element(w), index=1
}
)");
  const HloInstruction* w = m->entry_computation()->root_instruction()->operand(0);
  EXPECT_EQ(w->shape().tuple_shapes_size(), 2);
}

TEST(WhileLoopSimplifierTest, DeadStateFedByConstantsKeepsNamesUnique) {
  // Element 1 is dead and the body sets it to a constant, so every operand of the old root
  // exists in the rebuilt body; the new root must not take the old root's name (a name this
  // pass itself would have made).
  auto m = Simplify(R"(
HloModule m
cond {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  z = f32[2] constant({0, 0})
  ROOT tuple.k0 = (s32[], f32[2]) tuple(i2, z)
}
ENTRY e {
  p = f32[2] parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[2]) tuple(z, p)
  w = (s32[], f32[2]) while(init), condition=cond, body=body
  ROOT r = s32[] get-tuple-element(w), index=0
}
)");
  EXPECT_EQ(m->entry_computation()->root_instruction()->operand(0)->shape().tuple_shapes_size(), 1);
}

}  // namespace
}  // namespace kiln
