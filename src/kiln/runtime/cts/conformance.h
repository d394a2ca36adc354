// The runtime conformance suite: one set of GoogleTest cases that every driver passes.
//
// A driver's test binary instantiates the suite with a Driver describing how to reach a device
// and how to load the suite's kernels on it:
//
//   INSTANTIATE_TEST_SUITE_P(Host, ConformanceTest, ::testing::Values(HostCtsDriver()),
//                            CtsDriverName);
//
// (host/host_conformance_test.cc and cuda/cuda_conformance_test.cc are the two drivers' files.)
//
// When `device` fails (no driver, no device), every case is skipped with that message, so GPU
// suites skip visibly on machines without a GPU.
//
// The suite's kernels are described in cts_kernels.h.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "kiln/base/status.h"
#include "kiln/runtime/device.h"
#include "kiln/runtime/cts/cts_kernels.h"

namespace kiln::runtime::cts {

struct Driver {
  std::string name;  // test-name suffix: "host", "cuda"
  // The device under test; an error skips every case with its message. Called once per case:
  // cache the platform (e.g. in a function-local static).
  std::function<StatusOr<Device*>()> device;
  // The suite's kernels for `device`.
  std::function<StatusOr<ModuleSpec>(Device& device)> kernels;
};

inline void PrintTo(const Driver& driver, std::ostream* os) { *os << driver.name; }
inline std::string CtsDriverName(const ::testing::TestParamInfo<Driver>& info) {
  return info.param.name;
}

class ConformanceTest : public ::testing::TestWithParam<Driver> {
 protected:
  void SetUp() override;

  Device& device() { return *device_; }
  // The kernel `name` from the suite's module (loaded once per case).
  Kernel& kernel(const std::string& name);

  Device* device_ = nullptr;
  std::unique_ptr<Module> module_;
};

}  // namespace kiln::runtime::cts
