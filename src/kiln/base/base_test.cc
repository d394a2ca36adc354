#include <gtest/gtest.h>

#include "kiln/base/fingerprint.h"
#include "kiln/base/status.h"
#include "kiln/base/strings.h"

namespace kiln {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd: ", x);
  return x / 2;
}

Status UseHalf(int x, int* out) {
  KILN_ASSIGN_OR_RETURN(*out, Half(x));
  KILN_RETURN_IF_ERROR(Status());
  return OkStatus();
}

TEST(StatusTest, Propagation) {
  int v = 0;
  EXPECT_TRUE(UseHalf(4, &v).ok());
  EXPECT_EQ(v, 2);
  Status s = UseHalf(3, &v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: odd: 3");
  EXPECT_EQ(s.WithContext("ctx").message(), "ctx: odd: 3");
}

TEST(FingerprintTest, Sha256KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string million(1000000, 'a');
  EXPECT_EQ(Sha256Hex(million),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(StringsTest, Basics) {
  EXPECT_EQ(StrJoin(std::vector<int>{1, 2, 3}, ","), "1,2,3");
  EXPECT_EQ(StrSplit("a,b,,c", ',').size(), 4u);
  EXPECT_EQ(RoundTripFloat(0.1f), "0.1");
  EXPECT_EQ(RoundTripDouble(-2.5), "-2.5");
  EXPECT_EQ(CEscapeQuoted("a\"b\n"), "\"a\\\"b\\n\"");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
}

}  // namespace
}  // namespace kiln
