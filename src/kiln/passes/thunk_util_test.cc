#include "kiln/passes/thunk_util.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kiln {
namespace {

int64_t Branch(PrimitiveType t, int32_t value, int64_t n) {
  uint8_t bytes[4];
  if (t == PrimitiveType::kPred) {
    bytes[0] = static_cast<uint8_t>(value);
  } else {
    std::memcpy(bytes, &value, sizeof value);
  }
  return SelectConditionalBranch(t, bytes, n);
}

TEST(SelectConditionalBranchTest, XlaSemantics) {
  EXPECT_EQ(Branch(PrimitiveType::kPred, 1, 2), 0);  // true: the first branch
  EXPECT_EQ(Branch(PrimitiveType::kPred, 0, 2), 1);
  EXPECT_EQ(Branch(PrimitiveType::kS32, 0, 3), 0);
  EXPECT_EQ(Branch(PrimitiveType::kS32, 2, 3), 2);
  EXPECT_EQ(Branch(PrimitiveType::kS32, 3, 3), 2);   // past the end: the last branch
  EXPECT_EQ(Branch(PrimitiveType::kS32, -1, 3), 2);  // negative: the last branch
}

}  // namespace
}  // namespace kiln
