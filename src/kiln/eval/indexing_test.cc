// dynamic-slice and dynamic-update-slice: start clamping, index types, the vector form.
#include <gtest/gtest.h>

#include "kiln/eval/eval_test_util.h"

namespace kiln {
namespace {

using testing::Entry;
using testing::Ints;
using testing::MustRun;
using testing::RunHlo;

std::vector<int64_t> Slice3(std::string_view index_type, std::string_view index) {
  return Ints(MustRun(Entry("  a = s32[5] constant({0, 1, 2, 3, 4})\n  i = " +
                            std::string(index_type) + "[] constant(" + std::string(index) +
                            ")\n  ROOT r = s32[3] dynamic-slice(a, i), dynamic_slice_sizes={3}")));
}

TEST(IndexingTest, DynamicSliceClampsStarts) {
  EXPECT_EQ(Slice3("s32", "1"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Slice3("s32", "3"), (std::vector<int64_t>{2, 3, 4}));    // clamped to 5 - 3
  EXPECT_EQ(Slice3("s32", "-1"), (std::vector<int64_t>{0, 1, 2}));   // clamped to 0
  EXPECT_EQ(Slice3("s8", "-128"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Slice3("u8", "200"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Slice3("u32", "4294967295"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Slice3("u64", "18446744073709551615"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Slice3("s64", "-9223372036854775808"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Slice3("u4", "15"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Slice3("s4", "1"), (std::vector<int64_t>{1, 2, 3}));
}

TEST(IndexingTest, DynamicSlice2D) {
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[3,4] constant({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}})
  i = s32[] constant(2)
  j = u16[] constant(1)
  ROOT r = s32[2,2] dynamic-slice(a, i, j), dynamic_slice_sizes={2,2})"))),
            (std::vector<int64_t>{5, 6, 9, 10}));
  // The old form with one index vector.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[3,4] constant({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}})
  i = s32[2] constant({0, 3})
  ROOT r = s32[1,2] dynamic-slice(a, i), dynamic_slice_sizes={1,2})"))),
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(MustRun(Entry(R"(
  a = s32[3,4] constant({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}})
  i = s32[] constant(7)
  j = s32[] constant(7)
  ROOT r = s32[0,4] dynamic-slice(a, i, j), dynamic_slice_sizes={0,4})")).element_count(), 0);
  EXPECT_FALSE(RunHlo(Entry(R"(
  a = s32[3] constant({0, 1, 2})
  i = s32[] constant(0)
  ROOT r = s32[4] dynamic-slice(a, i), dynamic_slice_sizes={4})")).ok());
}

TEST(IndexingTest, DynamicUpdateSliceClampsStarts) {
  auto dus = [](std::string_view index_type, std::string_view index) {
    return Ints(MustRun(Entry("  a = s32[5] constant({0, 1, 2, 3, 4})\n  u = s32[2] constant({8, 9})\n"
                              "  i = " + std::string(index_type) + "[] constant(" + std::string(index) +
                              ")\n  ROOT r = s32[5] dynamic-update-slice(a, u, i)")));
  };
  EXPECT_EQ(dus("s32", "1"), (std::vector<int64_t>{0, 8, 9, 3, 4}));
  EXPECT_EQ(dus("s32", "4"), (std::vector<int64_t>{0, 1, 2, 8, 9}));
  EXPECT_EQ(dus("s32", "-3"), (std::vector<int64_t>{8, 9, 2, 3, 4}));
  EXPECT_EQ(dus("u64", "18446744073709551615"), (std::vector<int64_t>{0, 1, 2, 8, 9}));
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s8[10,1] constant({{0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}, {0}})
  one = s8[] constant(1)
  u = s8[5,1] broadcast(one), dimensions={}
  i = s32[] constant(5)
  j = s32[] constant(0)
  ROOT r = s8[10,1] dynamic-update-slice(a, u, i, j))"))),
            (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  // Rank 0: no indices.
  EXPECT_EQ(Ints(MustRun(Entry(R"(
  a = s32[] constant(1)
  u = s32[] constant(2)
  ROOT r = s32[] dynamic-update-slice(a, u))"))), (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace kiln
