// CUDA-specific behaviour on a real GPU (label gpu): the description, allocators under real
// allocations, NVRTC kernels with known results, module errors. Skipped without a GPU.
#include <cstring>
#include <iostream>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "kiln/cuda/cubin.h"
#include "kiln/cuda/cuda_test_util.h"
#include "kiln/runtime/bfc_allocator.h"
#include "kiln/runtime/cts/cts_kernels.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::cuda {
namespace {

using runtime::DeviceMemory;
using runtime::KernelArgs;
using runtime::LaunchDims;
using runtime::OwnedDeviceMemory;

constexpr uint64_t MiB = 1 << 20;

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<CudaDevice*> device = testing::TestDevice();
    if (!device.ok()) GTEST_SKIP() << "no cuda device: " << device.status().message();
    device_ = *device;
    StatusOr<std::unique_ptr<runtime::Stream>> stream = device_->CreateStream({});
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    stream_ = std::move(stream).value();
  }

  // The conformance kernels, compiled for this device.
  runtime::Kernel& CtsKernel(const std::string& name) {
    if (cts_ == nullptr) {
      NvrtcRequest request;
      request.source = runtime::cts::CudaCtsKernelSource();
      StatusOr<std::unique_ptr<runtime::Module>> module = testing::CompileAndLoad(*device_, request);
      EXPECT_TRUE(module.ok()) << module.status().ToString();
      cts_ = std::move(module).value();
    }
    StatusOr<runtime::Kernel*> kernel = cts_->GetKernel(name);
    EXPECT_TRUE(kernel.ok()) << kernel.status().ToString();
    return **kernel;
  }

  CudaDevice* device_ = nullptr;
  std::unique_ptr<runtime::Stream> stream_;
  std::unique_ptr<runtime::Module> cts_;
};

TEST_F(CudaDeviceTest, DescribesTheGpu) {
  const runtime::DeviceDescription& d = device_->description();
  std::cout << d.ToString();
  EXPECT_EQ(d.platform, "cuda");
  EXPECT_EQ(d.vendor, "NVIDIA");
  EXPECT_GE(d.compute_capability_major, 7);
  EXPECT_GT(d.multiprocessor_count, 0);
  EXPECT_GE(d.memory_bytes, uint64_t{1} << 30);
  EXPECT_GT(d.memory_bandwidth_bytes_per_s, 1e11);
  EXPECT_GT(d.l2_cache_bytes, 0u);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_GE(d.shared_memory_per_block_optin, d.shared_memory_per_block);
  EXPECT_GT(d.registers_per_multiprocessor, 0);
  EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
  EXPECT_FALSE(d.pci_bus_id.empty());
  EXPECT_FALSE(d.driver_version.empty());
  EXPECT_TRUE(d.supports_stream_ordered_allocation);
  ASSERT_FALSE(d.library_versions.empty());
  EXPECT_EQ(d.library_versions[0].first, "nvrtc");
}

TEST_F(CudaDeviceTest, BfcServesRealAllocations) {
  runtime::BfcOptions options;
  options.limit_fraction = 0.25;
  options.initial_region_bytes = 64 * MiB;
  KILN_ASSERT_OK_AND_ASSIGN(auto bfc, runtime::CreateBfcDeviceAllocator(*device_, options));
  std::mt19937 rng(11);
  struct Block {
    DeviceMemory memory;
    uint32_t value;
  };
  std::vector<Block> live;
  runtime::Kernel& fill = CtsKernel("kiln_cts_fill_u32");
  for (int step = 0; step < 400; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      uint64_t bytes = rng() % 8 == 0 ? 4 * (1 + rng() % (16 * MiB)) : 4 * (1 + rng() % 16384);
      KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, bfc->Allocate(bytes, "test"));
      uint32_t value = static_cast<uint32_t>(step + 1);
      KernelArgs args;
      args.Add(m).Add(value).Add(uint64_t{bytes / 4});
      KILN_ASSERT_OK(stream_->Launch(fill, LaunchDims::Linear(bytes / 4, 256), args));
      live.push_back({m, value});
    } else {
      size_t i = rng() % live.size();
      KILN_ASSERT_OK(stream_->Synchronize());  // see Note [Memory reuse across streams]
      KILN_ASSERT_OK(bfc->Deallocate(live[i].memory));
      live[i] = live.back();
      live.pop_back();
    }
  }
  // Every live block still holds its own value: no two allocations overlapped.
  for (const Block& b : live) {
    std::vector<uint32_t> host(b.memory.size / 4);
    KILN_ASSERT_OK(stream_->MemcpyDeviceToHost(host.data(), b.memory, b.memory.size));
    KILN_ASSERT_OK(stream_->Synchronize());
    for (uint32_t v : host) ASSERT_EQ(v, b.value);
  }
  KILN_ASSERT_OK(bfc->CheckInvariants());
  std::cout << bfc->GetStats()->ToString() << "\n";
  for (const Block& b : live) KILN_ASSERT_OK(bfc->Deallocate(b.memory));
  EXPECT_EQ(bfc->GetStats()->bytes_in_use, 0u);
  EXPECT_GT(bfc->ReleaseFreeRegions(), 0u);
}

TEST_F(CudaDeviceTest, BfcReportsOutOfMemory) {
  runtime::BfcOptions options;
  options.limit_bytes = 256 * MiB;
  KILN_ASSERT_OK_AND_ASSIGN(auto bfc, runtime::CreateBfcDeviceAllocator(*device_, options));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory weights, bfc->Allocate(200 * MiB, "weights"));
  StatusOr<DeviceMemory> more = bfc->Allocate(100 * MiB, "activations");
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(more.status().message().find("200.00 MiB 'weights'"), std::string::npos)
      << more.status().message();
  KILN_ASSERT_OK(bfc->Deallocate(weights));
}

TEST_F(CudaDeviceTest, RawAllocatorReportsOutOfMemoryAndRecovers) {
  StatusOr<DeviceMemory> huge = device_->device_allocator().Allocate(uint64_t{1} << 50, "huge");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted) << huge.status().ToString();
  EXPECT_NE(huge.status().message().find("device memory free"), std::string::npos)
      << huge.status().message();
  KILN_ASSERT_OK_AND_ASSIGN(auto small, OwnedDeviceMemory::Allocate(device_->device_allocator(), 4096));
  KILN_ASSERT_OK(stream_->Memset8(small, 1));
  KILN_ASSERT_OK(stream_->Synchronize());
}

TEST_F(CudaDeviceTest, StreamOrderedPoolKeepsStatistics) {
  KILN_ASSERT_OK_AND_ASSIGN(auto pool, device_->CreateStreamOrderedAllocator({}));
  std::vector<DeviceMemory> blocks;
  for (int i = 0; i < 8; ++i) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, pool->AllocateOnStream(8 * MiB, *stream_, "pool"));
    KILN_ASSERT_OK(stream_->Memset8(m, static_cast<uint8_t>(i)));
    blocks.push_back(m);
  }
  KILN_ASSERT_OK(stream_->Synchronize());
  std::optional<runtime::AllocatorStats> stats = pool->GetStats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GE(stats->bytes_in_use, 64 * MiB);
  EXPECT_GE(stats->bytes_reserved, stats->bytes_in_use);
  EXPECT_EQ(stats->num_live_allocs, 8u);
  for (DeviceMemory m : blocks) KILN_ASSERT_OK(pool->DeallocateOnStream(m, *stream_));
  KILN_ASSERT_OK(stream_->Synchronize());
  EXPECT_EQ(pool->GetStats()->bytes_in_use, 0u);
  EXPECT_EQ(pool->DeallocateOnStream(blocks[0], *stream_).code(), StatusCode::kInvalidArgument);
}

TEST_F(CudaDeviceTest, RunsNvrtcKernelsWithCorrectResults) {
  NvrtcRequest request;
  request.source = R"(
#include <cuda_bf16.h>
#include <cub/block/block_reduce.cuh>
template <typename T, int kUnroll>
__global__ void scale(T* data, float factor, unsigned long long n) {
  unsigned long long base = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * kUnroll;
  #pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    if (base + u < n) data[base + u] = T(float(data[base + u]) * factor);
  }
}
template __global__ void scale<float, 4>(float*, float, unsigned long long);
template __global__ void scale<__nv_bfloat16, 2>(__nv_bfloat16*, float, unsigned long long);

extern "C" __global__ void block_sum(const float* in, float* out) {
  using Reduce = cub::BlockReduce<float, 256>;
  __shared__ typename Reduce::TempStorage storage;
  float sum = Reduce(storage).Sum(in[blockIdx.x * 256 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

extern "C" __global__ void reverse_big(const float* in, float* out, int n) {
  extern __shared__ float buffer[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buffer[n - 1 - i];
}
)";
  request.name_expressions = {"scale<float, 4>", "scale<__nv_bfloat16, 2>"};
  NvrtcProgram program;
  KILN_ASSERT_OK_AND_ASSIGN(auto module, testing::CompileAndLoad(*device_, request, &program));

  // scale<float, 4>
  const uint64_t n = 100001;
  std::vector<float> host(n);
  for (uint64_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 977) - 300.0f;
  KILN_ASSERT_OK_AND_ASSIGN(auto data, OwnedDeviceMemory::Allocate(device_->device_allocator(), n * 4));
  KILN_ASSERT_OK(stream_->MemcpyHostToDevice(data, host.data(), n * 4));
  KILN_ASSERT_OK_AND_ASSIGN(std::string scale_f32, program.LoweredName("scale<float, 4>"));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::Kernel * scale, module->GetKernel(scale_f32));
  KernelArgs args;
  args.Add(data.get()).Add(1.5f).Add(uint64_t{n});
  KILN_ASSERT_OK(stream_->Launch(*scale, LaunchDims::Linear((n + 3) / 4, 128), args));
  std::vector<float> out(n);
  KILN_ASSERT_OK(stream_->MemcpyDeviceToHost(out.data(), data, n * 4));
  KILN_ASSERT_OK(stream_->Synchronize());
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], host[i] * 1.5f) << i;

  // scale<__nv_bfloat16, 2>: doubling a bf16 value is exact.
  auto bf16_to_float = [](uint16_t v) {
    uint32_t bits = uint32_t{v} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  std::vector<uint16_t> bf16(1000);
  for (int i = 0; i < 1000; ++i) {
    float f = static_cast<float>(i - 500) * 0.75f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bf16[i] = static_cast<uint16_t>(bits >> 16);  // truncation: some bf16 value near f
  }
  KILN_ASSERT_OK_AND_ASSIGN(auto half_data, OwnedDeviceMemory::Allocate(device_->device_allocator(), 2000));
  KILN_ASSERT_OK(stream_->MemcpyHostToDevice(half_data, bf16.data(), 2000));
  KILN_ASSERT_OK_AND_ASSIGN(std::string scale_bf16, program.LoweredName("scale<__nv_bfloat16, 2>"));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::Kernel * scale2, module->GetKernel(scale_bf16));
  KernelArgs args2;
  args2.Add(half_data.get()).Add(2.0f).Add(uint64_t{1000});
  KILN_ASSERT_OK(stream_->Launch(*scale2, LaunchDims::Linear(500, 64), args2));
  std::vector<uint16_t> bf16_out(1000);
  KILN_ASSERT_OK(stream_->MemcpyDeviceToHost(bf16_out.data(), half_data, 2000));
  KILN_ASSERT_OK(stream_->Synchronize());
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(bf16_to_float(bf16_out[i]), 2.0f * bf16_to_float(bf16[i])) << i;
  }

  // block_sum (CUB): integers sum exactly in float.
  const int blocks = 37;
  std::vector<float> in(blocks * 256);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 13);
  KILN_ASSERT_OK_AND_ASSIGN(auto d_in, OwnedDeviceMemory::Allocate(device_->device_allocator(), in.size() * 4));
  KILN_ASSERT_OK_AND_ASSIGN(auto d_out, OwnedDeviceMemory::Allocate(device_->device_allocator(), blocks * 4));
  KILN_ASSERT_OK(stream_->MemcpyHostToDevice(d_in, in.data(), in.size() * 4));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::Kernel * block_sum, module->GetKernel("block_sum"));
  KernelArgs sum_args;
  sum_args.Add(d_in.get()).Add(d_out.get());
  LaunchDims dims;
  dims.grid.x = blocks;
  dims.block.x = 256;
  KILN_ASSERT_OK(stream_->Launch(*block_sum, dims, sum_args));
  std::vector<float> sums(blocks);
  KILN_ASSERT_OK(stream_->MemcpyDeviceToHost(sums.data(), d_out, blocks * 4));
  KILN_ASSERT_OK(stream_->Synchronize());
  for (int b = 0; b < blocks; ++b) {
    float expected = std::accumulate(in.begin() + b * 256, in.begin() + (b + 1) * 256, 0.0f);
    ASSERT_EQ(sums[b], expected) << b;
  }

  // reverse_big: 100 KiB of dynamic shared memory needs the opt-in attribute.
  const int count = 25600;  // floats
  const uint32_t shared = count * 4;
  if (device_->description().shared_memory_per_block_optin < shared) {
    GTEST_SKIP() << "device allows only " << device_->description().shared_memory_per_block_optin
                 << " bytes of shared memory per block";
  }
  std::vector<float> seq(count);
  std::iota(seq.begin(), seq.end(), 0.0f);
  KILN_ASSERT_OK_AND_ASSIGN(auto r_in, OwnedDeviceMemory::Allocate(device_->device_allocator(), shared));
  KILN_ASSERT_OK_AND_ASSIGN(auto r_out, OwnedDeviceMemory::Allocate(device_->device_allocator(), shared));
  KILN_ASSERT_OK(stream_->MemcpyHostToDevice(r_in, seq.data(), shared));
  KILN_ASSERT_OK_AND_ASSIGN(runtime::Kernel * reverse, module->GetKernel("reverse_big"));
  KernelArgs rev_args;
  rev_args.Add(r_in.get()).Add(r_out.get()).Add(count);
  LaunchDims big;
  big.block.x = 512;
  big.shared_memory_bytes = shared;
  Status without_opt_in = stream_->Launch(*reverse, big, rev_args);
  EXPECT_FALSE(without_opt_in.ok()) << "launching with 100 KiB of shared memory before opting in";
  KILN_ASSERT_OK(stream_->Synchronize());  // a rejected launch does not poison the stream
  KILN_ASSERT_OK(reverse->SetMaxDynamicSharedMemory(shared));
  KILN_ASSERT_OK(stream_->Launch(*reverse, big, rev_args));
  std::vector<float> reversed(count);
  KILN_ASSERT_OK(stream_->MemcpyDeviceToHost(reversed.data(), r_out, shared));
  KILN_ASSERT_OK(stream_->Synchronize());
  for (int i = 0; i < count; ++i) ASSERT_EQ(reversed[i], static_cast<float>(count - 1 - i)) << i;
}

TEST_F(CudaDeviceTest, DescribesCompiledKernels) {
  runtime::Kernel& fill = CtsKernel("kiln_cts_fill_u32");
  KILN_ASSERT_OK_AND_ASSIGN(runtime::KernelAttributes a, fill.GetAttributes());
  const runtime::DeviceDescription& d = device_->description();
  EXPECT_EQ(a.binary_version, d.compute_capability_major * 10 + d.compute_capability_minor);
  EXPECT_GT(a.registers_per_thread, 0);
  EXPECT_GE(a.max_threads_per_block, 256);
  KILN_ASSERT_OK_AND_ASSIGN(int blocks, fill.MaxActiveBlocksPerMultiprocessor(256, 0));
  EXPECT_GE(blocks, 1);
  EXPECT_LE(blocks * 256, d.max_threads_per_multiprocessor);
}

TEST_F(CudaDeviceTest, RejectsBadModulesAndStaysUsable) {
  StatusOr<std::unique_ptr<runtime::Module>> garbage =
      device_->LoadModule(runtime::ModuleSpec::FromCubin(std::string(4096, '\x42'), "garbage"));
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("module 'garbage'"), std::string::npos);
  std::cout << garbage.status().message() << "\n";

  StatusOr<std::unique_ptr<runtime::Module>> bad_ptx = device_->LoadModule(
      runtime::ModuleSpec::FromPtx(".version 8.0\n.target sm_80\n.address_size 64\n"
                                   ".visible .entry broken() { this is not ptx; }\n",
                                   "bad_ptx"));
  ASSERT_FALSE(bad_ptx.ok());
  std::cout << bad_ptx.status().message() << "\n";
  EXPECT_EQ(device_->LoadModule(runtime::ModuleSpec::FromCubin("", "empty")).status().code(),
            StatusCode::kInvalidArgument);

  // The context survived: ordinary work still runs.
  runtime::Kernel& fill = CtsKernel("kiln_cts_fill_u32");
  KILN_ASSERT_OK_AND_ASSIGN(auto m, OwnedDeviceMemory::Allocate(device_->device_allocator(), 64));
  KernelArgs args;
  args.Add(m.get()).Add(uint32_t{3}).Add(uint64_t{16});
  KILN_ASSERT_OK(stream_->Launch(fill, LaunchDims::Linear(16, 32), args));
  uint32_t host[16];
  KILN_ASSERT_OK(stream_->MemcpyDeviceToHost(host, m, 64));
  KILN_ASSERT_OK(stream_->Synchronize());
  for (uint32_t v : host) EXPECT_EQ(v, 3u);

  LaunchDims too_big;
  too_big.block.x = 4096;
  EXPECT_EQ(stream_->Launch(fill, too_big, args).code(), StatusCode::kInvalidArgument);
}

TEST_F(CudaDeviceTest, TimesACopyWithEvents) {
  const uint64_t bytes = 256 * MiB;
  KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device_->device_allocator(), bytes));
  KILN_ASSERT_OK_AND_ASSIGN(auto b, OwnedDeviceMemory::Allocate(device_->device_allocator(), bytes));
  runtime::EventOptions timing;
  timing.enable_timing = true;
  KILN_ASSERT_OK_AND_ASSIGN(auto start, device_->CreateEvent(timing));
  KILN_ASSERT_OK_AND_ASSIGN(auto end, device_->CreateEvent(timing));
  KILN_ASSERT_OK(stream_->Memset8(a, 7));
  KILN_ASSERT_OK(stream_->RecordEvent(*start));
  KILN_ASSERT_OK(stream_->MemcpyDeviceToDevice(b, a, bytes));
  KILN_ASSERT_OK(stream_->RecordEvent(*end));
  KILN_ASSERT_OK(end->Synchronize());
  KILN_ASSERT_OK_AND_ASSIGN(float ms, end->ElapsedMillisSince(*start));
  double gbps = 2.0 * bytes / (ms * 1e-3) / 1e9;
  std::cout << "256 MiB device-to-device copy: " << ms << " ms, " << gbps
            << " GB/s (read + write)\n";
  EXPECT_GT(ms, 0.0f);
  EXPECT_GT(gbps, 10.0);
}

TEST_F(CudaDeviceTest, DetectsForeignFrees) {
  int on_stack = 0;
  EXPECT_EQ(device_->pinned_host_allocator().Deallocate(runtime::DeviceMemory{&on_stack, 4}).code(),
            StatusCode::kInvalidArgument);
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, device_->device_allocator().Allocate(1024));
  KILN_ASSERT_OK(device_->device_allocator().Deallocate(m));
  EXPECT_EQ(device_->device_allocator().Deallocate(m).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::cuda
