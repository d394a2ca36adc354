// Tests of sort, topk and the TopK custom call.
//
// sort_cases.json (testdata/gen_eval_b_cases.py): a TOTALORDER sort of signed zeros, NaNs of
// both signs and infinities; a stable two-operand sort with ties (GT); a sort along dimension 0
// with the comparator's parameters swapped; unsigned keys above INT32_MAX; topk (largest, with
// ties and NaN; smallest) and the TopK custom call against XLA's CPU results through jax.
#include <gtest/gtest.h>

#include <chrono>

#include "kiln/eval/kernels.h"
#include "kiln/eval/reference_cases.h"

namespace kiln {
namespace {

using reference_cases::RunHlo;

Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal::FromDoubles(Shape::Array(PrimitiveType::kF32, std::move(dims)), v);
}
Literal S32(std::vector<int64_t> dims, std::vector<int64_t> v) {
  return Literal::FromInt64s(Shape::Array(PrimitiveType::kS32, std::move(dims)), v);
}
std::vector<double> Values(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}

TEST(Sort, ReferenceCases) { EXPECT_GE(reference_cases::RunJsonCases("sort_cases.json"), 7); }

// JAX's comparator for a two-key lexicographic sort (jax.lax.sort(..., num_keys=2)): runs
// through the general path (elementwise kernels).
constexpr char kLexicographic[] = R"(
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[] compare(a, b), direction=EQ, type=TOTALORDER
  lt2 = pred[] compare(c, d), direction=LT
  both = pred[] and(eq, lt2)
  ROOT r = pred[] or(lt, both)
}
ENTRY e {
  x = f32[6] parameter(0)
  y = s32[6] parameter(1)
  ROOT s = (f32[6], s32[6]) sort(x, y), dimensions={0}, is_stable=true, to_apply=cmp
})";

TEST(Sort, GeneralComparatorLexicographic) {
  if (!KernelRegistry::Global().Find(HloOpcode::kCompare) ||
      !KernelRegistry::Global().Find(HloOpcode::kAdd))
    GTEST_SKIP() << "needs the elementwise kernels (elementwise.cc), not registered yet";
  auto r = RunHlo(kLexicographic, {F32({6}, {2, 1, 2, 1, 0, 2}), S32({6}, {5, 9, 1, 3, 7, 3})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r->tuple_element(0)), (std::vector<double>{0, 1, 1, 2, 2, 2}));
  EXPECT_EQ(Values(r->tuple_element(1)), (std::vector<double>{7, 3, 9, 1, 3, 5}));
}

TEST(Sort, StableForEqualKeysWithUnstableAttribute) {
  // is_stable=false allows any order of ties; kiln keeps them stable.
  auto r = RunHlo(R"(
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[5] parameter(0)
  y = s32[5] parameter(1)
  ROOT s = (f32[5], s32[5]) sort(x, y), dimensions={0}, to_apply=cmp
})",
                  {F32({5}, {1, 0, 1, 0, 1}), S32({5}, {0, 1, 2, 3, 4})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r->tuple_element(1)), (std::vector<double>{1, 3, 0, 2, 4}));
}

TEST(Sort, LargeSortTakesTheFastPath) {
  const int64_t n = 1 << 20;
  std::vector<double> v(n);
  uint64_t s = 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<double>(s >> 40) / 16777216.0 - 0.5;
  }
  auto start = std::chrono::steady_clock::now();
  auto r = RunHlo(R"(
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  x = f32[1048576] parameter(0)
  ROOT s = f32[1048576] sort(x), dimensions={0}, to_apply=cmp
})",
                  {F32({n}, v)});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int64_t i = 1; i < n; ++i) ASSERT_LE(r->GetAsDouble(i - 1), r->GetAsDouble(i)) << i;
  EXPECT_LT(secs, 10.0);
}

TEST(Sort, TopKKOutOfRangeIsAnError) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[3] parameter(0)
  ROOT t = (f32[4], s32[4]) topk(x), k=4, largest=true
})",
                  {F32({3}, {1, 2, 3})});
  EXPECT_FALSE(r.ok());
}

TEST(Sort, TopKCustomCallWithTwoParameterComparator) {
  auto r = RunHlo(R"(
cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT gt = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = s32[6] parameter(0)
  ROOT t = (s32[2], s32[2]) custom-call(x), custom_call_target="TopK", to_apply=cmp
})",
                  {S32({6}, {4, 9, 1, 9, 3, 0})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(r->tuple_element(0)), (std::vector<double>{9, 9}));
  EXPECT_EQ(Values(r->tuple_element(1)), (std::vector<double>{1, 3}));
}

}  // namespace
}  // namespace kiln
