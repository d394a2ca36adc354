// Helpers for the autotune tests (test code only).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "kiln/hlo/module.h"
#include "kiln/hlo/parser.h"
#include "kiln/runtime/host/host_platform.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::autotune::testing {

// A fresh directory under the test temp dir, removed by the destructor.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = ::testing::TempDir() + "kiln_autotune_XXXXXX";
    char* made = mkdtemp(pattern.data());
    path_ = made != nullptr ? made : "";
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The host platform and its device 0 (the platform owns the device).
struct HostDevice {
  std::unique_ptr<runtime::Platform> platform;
  runtime::Device* device = nullptr;

  static HostDevice Create() {
    HostDevice h;
    auto platform = runtime::CreateHostPlatform();
    EXPECT_TRUE(platform.ok()) << platform.status().ToString();
    if (!platform.ok()) return h;
    h.platform = std::move(platform).value();
    auto device = h.platform->GetDevice(0);
    EXPECT_TRUE(device.ok()) << device.status().ToString();
    if (device.ok()) h.device = *device;
    return h;
  }
};

inline std::unique_ptr<HloModule> ParseOrDie(std::string_view text) {
  auto module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  return module.ok() ? std::move(module).value() : nullptr;
}

}  // namespace kiln::autotune::testing
