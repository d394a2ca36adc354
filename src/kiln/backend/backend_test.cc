// The seam's own pieces: buffer sizes, host buffers, donation marks, literal flattening, flags.
#include <gtest/gtest.h>

#include "kiln/backend/backend.h"
#include "kiln/backend/buffer.h"
#include "kiln/backend/executable.h"
#include "kiln/hlo/literal.h"

namespace kiln {
namespace {

Shape F32(std::vector<int64_t> dims) { return Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, dims); }

TEST(BufferBytesTest, SizesAndErrors) {
  EXPECT_EQ(*BufferBytes(F32({2, 3})), 24u);
  EXPECT_EQ(*BufferBytes(Shape::ArrayWithDefaultLayout(PrimitiveType::kS4, {5})), 5u);  // a byte each
  EXPECT_EQ(*BufferBytes(F32({0, 7})), 0u);
  EXPECT_FALSE(BufferBytes(Shape::Tuple({F32({1})})).ok());
  // 2^32 * 2^32 * 4 bytes overflows 64 bits: an error, not a wrapped size.
  auto huge = BufferBytes(F32({int64_t{1} << 32, int64_t{1} << 32}));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("overflows"), std::string::npos);
}

TEST(HostBufferTest, CopyReadDelete) {
  const float data[3] = {1.5f, -2.0f, 3.25f};
  auto b = HostBuffer::Copy(data, sizeof data, F32({3}), "cpu", 0);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE((*b)->on_host());
  EXPECT_EQ((*b)->device_name(), "cpu:0");
  EXPECT_NE((*b)->opaque_pointer(), static_cast<const void*>(data));  // a copy
  auto lit = (*b)->ToLiteral();
  ASSERT_TRUE(lit.ok());
  EXPECT_EQ(lit->Get<float>({2}), 3.25f);
  float out[3] = {};
  EXPECT_FALSE((*b)->CopyToHost(out, 8).ok());  // wrong size
  (*b)->MarkDonated("donated to main");
  EXPECT_TRUE((*b)->is_deleted());
  EXPECT_EQ((*b)->opaque_pointer(), nullptr);
  auto after = (*b)->ToLiteral();
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(after.status().message().find("donated to main"), std::string::npos);
  EXPECT_FALSE(HostBuffer::Copy(data, 4, F32({3}), "cpu", 0).ok());  // bytes do not match
}

TEST(HostBufferTest, OwnerKeepsMemoryAlive) {
  auto b = HostBuffer::FromLiteral(Literal::CreateR1<float>(PrimitiveType::kF32, {1, 2, 3, 4}), "interpreter", 0);
  std::shared_ptr<void> keep = b->memory_owner();
  void* p = b->opaque_pointer();
  b->Delete();
  EXPECT_EQ(static_cast<float*>(p)[3], 4.0f);  // still alive through `keep`
}

TEST(FlattenLiteralTest, RoundTrip) {
  Literal t = Literal::MakeTuple({Literal::CreateR1<float>(PrimitiveType::kF32, {1, 2}),
                                  Literal::MakeTuple({Literal::CreateR0<int32_t>(PrimitiveType::kS32, 7)})});
  std::vector<Literal> leaves = FlattenLiteral(t);
  ASSERT_EQ(leaves.size(), 2u);
  EXPECT_EQ(leaves[1].Get<int32_t>({}), 7);
  Shape shape = t.shape();
  auto back = NestLiterals(std::move(leaves), shape);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->tuple_element(1).tuple_element(0).Get<int32_t>({}), 7);
  EXPECT_FALSE(NestLiterals({}, shape).ok());
}

TEST(BackendFlagsTest, UnknownNamesOfTheBackendFail) {
  constexpr FlagSpec kKnown[] = {{"cpu_row_tiling", "on|off  x"}};
  BackendFlags flags{{"cpu_row_tiling", "0"}, {"cuda_graph", "0"}};
  EXPECT_TRUE(CheckBackendFlags(flags, "cpu_", kKnown).ok());  // cuda_* is not ours
  flags["cpu_typo"] = "1";
  Status s = CheckBackendFlags(flags, "cpu_", kKnown);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown flag 'cpu_typo'"), std::string::npos);
  EXPECT_NE(s.message().find("cpu_row_tiling"), std::string::npos);
  EXPECT_EQ(FlagOr(flags, "cuda_graph", "1"), "0");
  EXPECT_EQ(FlagOr(flags, "cuda_side_stream", "1"), "1");
  EXPECT_EQ(FlagHelp(kKnown), "cpu_row_tiling=on|off  x\n");
}

}  // namespace
}  // namespace kiln
