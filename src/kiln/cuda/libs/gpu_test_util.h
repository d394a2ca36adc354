// Helpers for the library layer's GPU tests (label gpu): a device and stream per test, literals
// moved to and from device memory, poisoned outputs, fresh random inputs. Test code only.
//
// Every helper returns a Status so that a failing device call fails the test with the library's
// message instead of crashing.
#pragma once

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/cuda/cuda_test_util.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/literal.h"
#include "kiln/runtime/allocator.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda::libs::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<CudaDevice*> device = cuda::testing::TestDevice();
    if (!device.ok()) GTEST_SKIP() << "no cuda device: " << device.status().message();
    device_ = *device;
    StatusOr<std::unique_ptr<runtime::Stream>> stream = device_->CreateStream({});
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    stream_ = std::move(stream).value();
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      Status s = stream_->Synchronize();
      EXPECT_TRUE(s.ok()) << "stream error at the end of the test: " << s.ToString();
    }
    buffers_.clear();
    stream_.reset();
  }

  // A device buffer of `bytes` bytes owned by the test, filled with 0xFF bytes (NaN in every
  // float type, -1 in signed integers): results never pass by leftover zeros.
  StatusOr<runtime::DeviceMemory> Alloc(uint64_t bytes) {
    KILN_ASSIGN_OR_RETURN(runtime::OwnedDeviceMemory m,
                          runtime::OwnedDeviceMemory::Allocate(device_->device_allocator(),
                                                               std::max<uint64_t>(bytes, 1), "test"));
    runtime::DeviceMemory out = m.get();
    buffers_.push_back(std::move(m));
    KILN_RETURN_IF_ERROR(stream_->Memset8(out, 0xFF));
    return out;
  }
  StatusOr<runtime::DeviceMemory> Upload(const Literal& literal) {
    KILN_ASSIGN_OR_RETURN(runtime::DeviceMemory m, Alloc(literal.size_bytes()));
    KILN_RETURN_IF_ERROR(
        stream_->MemcpyHostToDevice(m, literal.untyped_data(), literal.size_bytes()));
    KILN_RETURN_IF_ERROR(stream_->Synchronize());
    return m;
  }
  // Reads `shape`'s bytes back (synchronizes the stream first; a stream error is returned).
  StatusOr<Literal> Download(runtime::DeviceMemory m, const Shape& shape) {
    Literal out(shape);
    KILN_RETURN_IF_ERROR(stream_->Synchronize());
    KILN_RETURN_IF_ERROR(stream_->MemcpyDeviceToHost(out.untyped_data(), m, out.size_bytes()));
    KILN_RETURN_IF_ERROR(stream_->Synchronize());
    return out;
  }

  CudaDevice* device_ = nullptr;
  std::unique_ptr<runtime::Stream> stream_;
  std::vector<runtime::OwnedDeviceMemory> buffers_;
};

// A literal of `type` and `dims` with values uniform in [lo, hi) (rounded into the type;
// integers: uniform integers in [lo, hi]). Never all zeros for a fresh seed in practice.
inline Literal RandomLiteral(PrimitiveType type, std::vector<int64_t> dims, uint64_t seed,
                             double lo = -1, double hi = 1) {
  Literal l(Shape::ArrayWithDefaultLayout(type, std::move(dims)));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(lo),
                                                 static_cast<int64_t>(hi));
  for (int64_t i = 0; i < l.element_count(); ++i) {
    if (IsComplexType(type)) {
      const double re = real(rng);
      l.SetFromComplex(i, {re, real(rng)});
    } else if (IsIntegralType(type) || type == PrimitiveType::kPred) {
      l.SetFromInt64(i, integer(rng));
    } else {
      l.SetFromDouble(i, real(rng));
    }
  }
  return l;
}

// Expect-style comparison with a readable failure; NaN never passes (see compare.h).
inline ::testing::AssertionResult Matches(const Literal& actual, const Literal& expected,
                                          const Tolerance& tolerance,
                                          const std::string& what = "out") {
  ArrayComparison c = CompareArrays(actual, expected, tolerance, what);
  if (c.ok()) return ::testing::AssertionSuccess() << c.ToString();
  return ::testing::AssertionFailure() << c.ToString();
}

}  // namespace kiln::cuda::libs::testing
