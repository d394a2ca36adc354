// The runtime conformance suite: one set of GoogleTest cases that every driver passes.
//
// A driver's test binary instantiates the suite with a Driver describing how to reach a device
// and how to load the suite's kernels on it:
//
//   INSTANTIATE_TEST_SUITE_P(Host, ConformanceTest, ::testing::Values(HostCtsDriver()),
//                            CtsDriverName);
//
// When `device` fails (no driver, no device), every case is skipped with that message, so GPU
// suites skip visibly on machines without a GPU.
//
// The suite's kernels (each driver provides all of them, with these exact names):
//   kiln_cts_fill_u32(uint32_t* out, uint32_t value, uint64_t n)
//       out[i] = value for every i < n (1-D grid, any block size).
//   kiln_cts_axpy_f32(float a, const float* x, float* y, uint64_t n)
//       y[i] = a * x[i] + y[i] for every i < n.
//   kiln_cts_spin_write(uint32_t* flag, uint32_t value, uint64_t nanoseconds)
//       thread 0 of block 0 waits `nanoseconds`, then writes *flag = value.
//   kiln_cts_check_flag(const uint32_t* flag, uint32_t expected, uint32_t* result)
//       *result = (*flag == expected) ? 1 : 2.
//   kiln_cts_reverse_blocks_u32(const uint32_t* in, uint32_t* out)
//       each block reverses its blockDim.x elements through dynamic shared memory
//       (blockDim.x * 4 bytes): out[b*B + t] = in[b*B + (B-1-t)].
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "kiln/base/status.h"
#include "kiln/runtime/device.h"
#include "kiln/runtime/host/host_kernel.h"

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

// Host implementations of the suite's kernels.
std::shared_ptr<const HostKernelLibrary> HostCtsKernels();
// CUDA C++ source of the suite's kernels (extern "C", for NVRTC or hipRTC).
const char* CudaCtsKernelSource();

// The host driver: device 0 of a host platform created once per process.
Driver HostCtsDriver();

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
