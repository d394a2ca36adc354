// Tests of gather and scatter.
//
// gather_scatter_cases.json (testdata/gen_eval_b_cases.py) holds cases checked against XLA's
// CPU backend through jax (PROMISE_IN_BOUNDS, so XLA's own clamping and skipping apply):
// clamped out-of-bounds starts, implicit and leading index_vector_dim, batching dimensions,
// offset dims first; scatter with non-unique indices (in-order application), out-of-bounds
// windows skipped whole, point updates, batching dimensions, variadic scatter.
#include <gtest/gtest.h>

#include "kiln/eval/kernels.h"
#include "kiln/eval/reference_cases.h"

namespace kiln {
namespace {

using reference_cases::RunHlo;

Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal::FromDoubles(Shape::Array(PrimitiveType::kF32, std::move(dims)), v);
}
Literal Ints(PrimitiveType t, std::vector<int64_t> dims, std::vector<int64_t> v) {
  return Literal::FromInt64s(Shape::Array(t, std::move(dims)), v);
}
std::vector<double> Values(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}

TEST(GatherScatter, ReferenceCases) {
  EXPECT_GE(reference_cases::RunJsonCases("gather_scatter_cases.json"), 12);
}

TEST(GatherScatter, GatherClampsStartSoTheSliceFits) {
  // Slices of 2 from [10,11,12,13]: start 3 clamps to 2, start -5 to 0.
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[3] parameter(1)
  ROOT g = f32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={2}
})",
                  {F32({4}, {10, 11, 12, 13}), Ints(PrimitiveType::kS32, {3}, {1, 3, -5})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{11, 12, 12, 13, 10, 11}));
}

TEST(GatherScatter, GatherU64IndexAboveInt64Clamps) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  i = u64[1] parameter(1)
  ROOT g = f32[1] gather(x, i), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
})",
                  [] {
                    std::vector<Literal> a;
                    a.push_back(F32({4}, {10, 11, 12, 13}));
                    Literal i(Shape::Array(PrimitiveType::kU64, {1}));
                    i.data<uint64_t>()[0] = ~uint64_t{0};
                    a.push_back(std::move(i));
                    return a;
                  }());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{13}));
}

// A combiner that is not commutative: new = old * 10 + update (needs the elementwise kernels).
constexpr char kOrderedScatter[] = R"(
comb {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ten = s32[] constant(10)
  m = s32[] multiply(a, ten)
  ROOT s = s32[] add(m, b)
}
ENTRY e {
  x = s32[3] parameter(0)
  i = s32[4,1] parameter(1)
  u = s32[4] parameter(2)
  ROOT s = s32[3] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
})";

TEST(GatherScatter, GatherFromAnEmptyOperandGivesZeros) {
  // A collapsed dimension of size 0 (slice size 0) leaves nothing to read; the result still has
  // elements (the offset dimension), all zero. Reading the operand here ran off its buffer.
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[0,2] parameter(0)
  i = s32[3] parameter(1)
  ROOT g = f32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={0,2}
})",
                  {F32({0, 2}, {}), Ints(PrimitiveType::kS32, {3}, {0, 1, 2})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>(6, 0.0)));
}

TEST(GatherScatter, ScatterAppliesUpdatesInIndexOrder) {
  if (!KernelRegistry::Global().Find(HloOpcode::kCompare) ||
      !KernelRegistry::Global().Find(HloOpcode::kAdd))
    GTEST_SKIP() << "needs the elementwise kernels (elementwise.cc), not registered yet";
  // Element 1 receives 1, 2, 3 in that order: ((0*10+1)*10+2)*10+3 = 123; element 2 gets 4;
  // element 0 is untouched.
  auto r = RunHlo(kOrderedScatter, {Ints(PrimitiveType::kS32, {3}, {7, 0, 0}),
                                    Ints(PrimitiveType::kS32, {4, 1}, {1, 1, 2, 1}),
                                    Ints(PrimitiveType::kS32, {4}, {1, 2, 4, 3})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{7, 123, 4}));
}

TEST(GatherScatter, ScatterSkipsPartlyOutOfBoundsWindowsWhole) {
  // Windows of 2 into [0,0,0,0]: start 3 would write [3] and [4]; XLA skips the whole window
  // (a clamping implementation would write [2] and [3]).
  auto r = RunHlo(
      R"(
upd {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[2] parameter(1)
  u = f32[2,2] parameter(2)
  ROOT s = f32[4] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=upd
})",
      {F32({4}, {0, 0, 0, 0}), Ints(PrimitiveType::kS32, {2}, {3, 0}), F32({2, 2}, {5, 6, 7, 8})});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Values(*r), (std::vector<double>{7, 8, 0, 0}));
}

TEST(GatherScatter, ScatterWithoutCombinerIsAnError) {
  auto r = RunHlo(R"(
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[1] parameter(1)
  u = f32[1] parameter(2)
  ROOT s = f32[4] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1
})",
                  {F32({4}, {0, 0, 0, 0}), Ints(PrimitiveType::kS32, {1}, {0}), F32({1}, {1})});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace kiln
