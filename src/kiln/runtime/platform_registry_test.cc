#include "kiln/runtime/platform_registry.h"

#include <gtest/gtest.h>

#include "kiln/runtime/drivers.h"
#include "kiln/runtime/host/host_platform.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::runtime {
namespace {

TEST(PlatformRegistryTest, CreatesPlatformsOnFirstUse) {
  PlatformRegistry registry;
  int created = 0;
  KILN_ASSERT_OK(registry.Register("host", [&] {
    ++created;
    return CreateHostPlatform();
  }));
  EXPECT_EQ(created, 0);
  KILN_ASSERT_OK_AND_ASSIGN(Platform* a, registry.Get("host"));
  KILN_ASSERT_OK_AND_ASSIGN(Platform* b, registry.Get("host"));
  EXPECT_EQ(a, b);
  EXPECT_EQ(created, 1);
  EXPECT_EQ(a->name(), "host");
  EXPECT_EQ(a->device_count(), 1);
  EXPECT_EQ(a->GetDevice(1).status().code(), StatusCode::kOutOfRange);
}

TEST(PlatformRegistryTest, RejectsDuplicatesAndUnknownNames) {
  PlatformRegistry registry;
  KILN_ASSERT_OK(RegisterHostPlatform(registry));
  EXPECT_EQ(RegisterHostPlatform(registry).code(), StatusCode::kAlreadyExists);
  StatusOr<Platform*> missing = registry.Get("tpu");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("registered: host"), std::string::npos)
      << missing.status().message();
}

TEST(PlatformRegistryTest, RemembersCreationFailures) {
  PlatformRegistry registry;
  int attempts = 0;
  KILN_ASSERT_OK(registry.Register("broken", [&]() -> StatusOr<std::unique_ptr<Platform>> {
    ++attempts;
    return Unavailable("broken: no driver");
  }));
  EXPECT_EQ(registry.Get("broken").status().message(), "broken: no driver");
  EXPECT_EQ(registry.Get("broken").status().message(), "broken: no driver");
  EXPECT_EQ(attempts, 1);
}

TEST(PlatformRegistryTest, ListsBuiltinPlatforms) {
  std::vector<PlatformListing> listing = ListPlatformsAndDevices();
  ASSERT_GE(listing.size(), 2u);
  EXPECT_EQ(listing[0].name, "host");
  KILN_EXPECT_OK(listing[0].status);
  ASSERT_EQ(listing[0].devices.size(), 1u);
  EXPECT_EQ(listing[0].devices[0].platform, "host");
  EXPECT_EQ(listing[1].name, "cuda");
  // Here cuda is either usable or explains itself; the message starts with "cuda: ".
  if (!listing[1].status.ok()) {
    EXPECT_EQ(listing[1].status.message().rfind("cuda: ", 0), 0u) << listing[1].status.message();
  }
  std::string text = FormatPlatformListing(listing, /*verbose=*/true);
  EXPECT_NE(text.find("host: 1 device(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("cuda: "), std::string::npos) << text;
  std::cout << text;  // visible in the test log: what `kiln devices` will print
}

}  // namespace
}  // namespace kiln::runtime
