// The ROCm driver against the real HIP runtime, on a machine without an AMD GPU: the symbol
// table resolves, "no device" and missing libraries are clean statuses, error names match the
// runtime's own. Skipped (with the reason) where libamdhip64 is not installed.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/rocm/hip_api.h"
#include "kiln/rocm/rocm_platform.h"
#include "kiln/rocm/vendor_apis.h"
#include "kiln/runtime/drivers.h"
#include "kiln/runtime/platform_registry.h"

namespace kiln::rocm {
namespace {

#define SKIP_WITHOUT_HIP()                                                              \
  StatusOr<std::shared_ptr<const HipApi>> hip = HipApi::Default();                      \
  if (!hip.ok()) GTEST_SKIP() << "no HIP runtime here: " << hip.status().message();

TEST(HipApiTest, RequiredSymbolsResolveAgainstTheRealRuntime) {
  SKIP_WITHOUT_HIP();
  const HipApi& api = **hip;
  EXPECT_NE(api.hipInit, nullptr);
  EXPECT_NE(api.hipModuleLaunchKernel, nullptr);
  EXPECT_NE(api.hipMallocAsync, nullptr);
  EXPECT_NE(api.library.path().find("libamdhip64"), std::string::npos) << api.library.path();
  // Version queries work without a device: 50221153 → "5.2.21153" on Debian 12.
  std::string version = api.RuntimeVersion();
  ASSERT_FALSE(version.empty());
  EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
  // The 6.x-only entry point is optional: absent from a 5.x runtime, and named.
  if (version[0] == '5') {
    EXPECT_EQ(api.MissingHip6Functions(), std::vector<std::string>{"hipGetDevicePropertiesR0600"});
  }
}

TEST(HipApiTest, VersionStrings) {
  EXPECT_EQ(HipVersionString(50221153), "5.2.21153");
  EXPECT_EQ(HipVersionString(60443484), "6.4.43484");
  EXPECT_EQ(HipVersionString(0), "");
  EXPECT_EQ(HipHeaderVersion().substr(0, 2), "6.");
}

TEST(HipApiTest, StatusNamesAndCodesFollowTheRuntime) {
  SKIP_WITHOUT_HIP();
  const HipApi& api = **hip;
  struct Case {
    hipError_t error;
    StatusCode code;
  } cases[] = {{hipErrorOutOfMemory, StatusCode::kResourceExhausted},
               {hipErrorInvalidValue, StatusCode::kInvalidArgument},
               {hipErrorNoDevice, StatusCode::kUnavailable},
               {hipErrorInvalidDevice, StatusCode::kUnavailable},
               {hipErrorNotReady, StatusCode::kFailedPrecondition},
               {hipErrorNotSupported, StatusCode::kUnimplemented},
               {hipErrorNotFound, StatusCode::kNotFound}};
  for (const Case& c : cases) {
    Status s = HipStatus(api, c.error, "hipFoo(x)");
    EXPECT_EQ(s.code(), c.code) << s.ToString();
    EXPECT_EQ(s.message(), std::string("rocm: hipFoo(x): ") + api.hipGetErrorName(c.error)) << s.ToString();
  }
  EXPECT_TRUE(HipStatus(api, hipSuccess, "hipFoo(x)").ok());
}

TEST(RocmPlatformTest, NoDeviceIsUnavailableAndSaysSo) {
  SKIP_WITHOUT_HIP();
  StatusOr<std::unique_ptr<runtime::Platform>> platform = CreateRocmPlatform();
  if (platform.ok()) GTEST_SKIP() << "an AMD GPU is visible: " << (*platform)->device_count();
  EXPECT_EQ(platform.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(platform.status().message().rfind("rocm: no device", 0), 0u) << platform.status().message();
  // hipInit is idempotent: a second platform gives the same answer, without hanging.
  StatusOr<std::unique_ptr<runtime::Platform>> again = CreateRocmPlatform();
  EXPECT_EQ(again.status().message(), platform.status().message());
}

TEST(RocmPlatformTest, MissingLibraryIsUnavailableAndNamesIt) {
  RocmPlatformOptions options;
  options.hip_library = "libamdhip64.so.kiln-missing";
  StatusOr<std::unique_ptr<runtime::Platform>> platform = CreateRocmPlatform(options);
  ASSERT_FALSE(platform.ok());
  EXPECT_EQ(platform.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(platform.status().message(),
            "rocm: libamdhip64 not found (looked for libamdhip64.so.kiln-missing)");
}

TEST(RocmPlatformTest, ListedByTheBuiltinDrivers) {
  runtime::PlatformRegistry registry;
  ASSERT_TRUE(runtime::RegisterBuiltinPlatforms(registry).ok());
  bool listed = false;
  for (const runtime::PlatformListing& p : runtime::ListPlatformsAndDevices(registry)) {
    if (p.name != "rocm") continue;
    listed = true;
    if (p.status.ok()) continue;  // a machine with an AMD GPU
    const std::string& m = p.status.message();
    EXPECT_TRUE(m.rfind("rocm: no device", 0) == 0 || m.rfind("rocm: libamdhip64 not found", 0) == 0) << m;
  }
  EXPECT_TRUE(listed);
}

TEST(RocmPlatformTest, GfxArchWithoutFeatures) {
  EXPECT_EQ(GfxArchWithoutFeatures("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(GfxArchWithoutFeatures("gfx942"), "gfx942");
}

// rocBLAS, hipBLASLt and MIOpen cannot be installed on Debian 12 (their builds need a newer
// libc): each reports NotFound (or Unavailable, where a copy exists but cannot load) cleanly.
TEST(VendorApisTest, AbsentLibrariesReportNotFound) {
  auto check = [](const Status& s, std::string_view what) {
    if (s.ok()) return;  // a machine with the library
    EXPECT_TRUE(s.code() == StatusCode::kNotFound || s.code() == StatusCode::kUnavailable) << s.ToString();
    EXPECT_EQ(s.message().rfind(std::string(what) + ": ", 0), 0u) << s.ToString();
  };
  check(RocblasApi::Default().status(), "rocblas");
  check(HipblasLtApi::Default().status(), "hipblaslt");
  check(MiopenApi::Default().status(), "miopen");
  StatusOr<std::shared_ptr<const RocblasApi>> missing = RocblasApi::Load("librocblas.so.kiln-missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "rocblas: librocblas.so.kiln-missing not found");
  for (const auto& [library, version] : RocmLibraryVersions()) EXPECT_FALSE(version.empty()) << library;
}

// RCCL (librccl.so.1; Debian 13's librccl1 needs a newer libc, so none here): the table is
// compiled against RCCL's own rccl.h and the absent library is a clean NotFound
// "rccl: librccl.so.1 not found (...)"; the headers' NCCL version is what kiln was built with.
TEST(VendorApisTest, RcclAbsentIsNotFound) {
  StatusOr<std::shared_ptr<const RcclApi>> rccl = RcclApi::Default();
  if (rccl.ok()) {
    EXPECT_FALSE((*rccl)->Version().empty());
  } else {
    EXPECT_TRUE(rccl.status().code() == StatusCode::kNotFound || rccl.status().code() == StatusCode::kUnavailable)
        << rccl.status().ToString();
    if (rccl.status().code() == StatusCode::kNotFound)
      EXPECT_EQ(rccl.status().message().rfind("rccl: librccl.so.1 not found", 0), 0u) << rccl.status().ToString();
  }
  StatusOr<std::shared_ptr<const RcclApi>> missing = RcclApi::Load("librccl.so.kiln-missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "rccl: librccl.so.kiln-missing not found");
  EXPECT_EQ(RcclCandidates().front(), "librccl.so.1");
  bool listed = false;
  for (const auto& [library, version] : RocmHeaderVersions())
    if (library == "rccl") {
      listed = true;
      EXPECT_EQ(version.rfind("2.", 0), 0u) << version;  // NCCL 2.x's API (RCCL 5.4: 2.13.4)
    }
  EXPECT_TRUE(listed);
}

TEST(VendorApisTest, HiprtcAndComgrResolveWhereInstalled) {
  StatusOr<std::shared_ptr<const HiprtcApi>> rtc = HiprtcApi::Default();
  StatusOr<std::shared_ptr<const ComgrApi>> comgr = ComgrApi::Default();
  if (!rtc.ok() || !comgr.ok()) {
    GTEST_SKIP() << "hipRTC or comgr missing: " << rtc.status().message() << "; "
                 << comgr.status().message();
  }
  EXPECT_FALSE((*rtc)->Version().empty());
  StatusOr<std::vector<std::string>> isas = ComgrIsaNames(**comgr);
  ASSERT_TRUE(isas.ok()) << isas.status().ToString();
  EXPECT_NE(std::find(isas->begin(), isas->end(), "gfx90a"), isas->end());
}

}  // namespace
}  // namespace kiln::rocm
