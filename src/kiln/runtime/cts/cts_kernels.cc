// The conformance suite's kernels: host implementations and CUDA source.
#include <chrono>
#include <thread>

#include "kiln/base/status.h"

#include "kiln/runtime/cts/cts_kernels.h"

namespace kiln::runtime::cts {

namespace {

uint64_t GlobalIndex(const HostKernelContext& ctx, uint32_t thread) {
  return uint64_t{ctx.block_index.x} * ctx.dims.block.x + thread;
}

Status AddAll(HostKernelLibrary& lib) {
  KILN_RETURN_IF_ERROR(lib.Add("kiln_cts_fill_u32", [](const HostKernelContext& ctx) -> Status {
    auto* out = ctx.args.Get<uint32_t*>(0);
    auto value = ctx.args.Get<uint32_t>(1);
    auto n = ctx.args.Get<uint64_t>(2);
    for (uint32_t t = 0; t < ctx.dims.block.x; ++t) {
      uint64_t i = GlobalIndex(ctx, t);
      if (i < n) out[i] = value;
    }
    return OkStatus();
  }));
  KILN_RETURN_IF_ERROR(lib.Add("kiln_cts_axpy_f32", [](const HostKernelContext& ctx) -> Status {
    auto a = ctx.args.Get<float>(0);
    auto* x = ctx.args.Get<const float*>(1);
    auto* y = ctx.args.Get<float*>(2);
    auto n = ctx.args.Get<uint64_t>(3);
    for (uint32_t t = 0; t < ctx.dims.block.x; ++t) {
      uint64_t i = GlobalIndex(ctx, t);
      if (i < n) y[i] = a * x[i] + y[i];
    }
    return OkStatus();
  }));
  KILN_RETURN_IF_ERROR(lib.Add("kiln_cts_spin_write", [](const HostKernelContext& ctx) -> Status {
    if (ctx.block_index.x != 0 || ctx.block_index.y != 0 || ctx.block_index.z != 0) {
      return OkStatus();
    }
    auto* flag = ctx.args.Get<uint32_t*>(0);
    auto value = ctx.args.Get<uint32_t>(1);
    auto ns = ctx.args.Get<uint64_t>(2);
    std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
    *flag = value;
    return OkStatus();
  }));
  KILN_RETURN_IF_ERROR(lib.Add("kiln_cts_check_flag", [](const HostKernelContext& ctx) -> Status {
    auto* flag = ctx.args.Get<const uint32_t*>(0);
    auto expected = ctx.args.Get<uint32_t>(1);
    auto* result = ctx.args.Get<uint32_t*>(2);
    if (ctx.block_index.x == 0) *result = *flag == expected ? 1 : 2;
    return OkStatus();
  }));
  KILN_RETURN_IF_ERROR(
      lib.Add("kiln_cts_reverse_blocks_u32", [](const HostKernelContext& ctx) -> Status {
        auto* in = ctx.args.Get<const uint32_t*>(0);
        auto* out = ctx.args.Get<uint32_t*>(1);
        uint32_t b = ctx.dims.block.x;
        if (ctx.dims.shared_memory_bytes < uint64_t{b} * 4) {
          return InvalidArgument("kiln_cts_reverse_blocks_u32 needs ", b * 4,
                                 " bytes of shared memory");
        }
        auto* shared = static_cast<uint32_t*>(ctx.shared_memory);
        uint64_t base = uint64_t{ctx.block_index.x} * b;
        for (uint32_t t = 0; t < b; ++t) shared[t] = in[base + t];
        for (uint32_t t = 0; t < b; ++t) out[base + t] = shared[b - 1 - t];
        return OkStatus();
      }));
  return OkStatus();
}

}  // namespace

std::shared_ptr<const HostKernelLibrary> HostCtsKernels() {
  auto lib = std::make_shared<HostKernelLibrary>();
  Status status = AddAll(*lib);
  (void)status;  // fixed names on a fresh library: cannot collide
  return lib;
}

const char* CudaCtsKernelSource() {
  return R"cuda(
// kiln runtime conformance suite kernels (see kiln/runtime/cts/conformance.h).
__device__ __forceinline__ unsigned long long kiln_cts_now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void kiln_cts_fill_u32(unsigned int* out, unsigned int value,
                                             unsigned long long n) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

extern "C" __global__ void kiln_cts_axpy_f32(float a, const float* x, float* y,
                                             unsigned long long n) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void kiln_cts_spin_write(unsigned int* flag, unsigned int value,
                                               unsigned long long nanoseconds) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned long long start = kiln_cts_now_ns();
  while (kiln_cts_now_ns() - start < nanoseconds) __nanosleep(1000);
  *(volatile unsigned int*)flag = value;
}

extern "C" __global__ void kiln_cts_check_flag(const unsigned int* flag, unsigned int expected,
                                               unsigned int* result) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *result = (*(const volatile unsigned int*)flag == expected) ? 1u : 2u;
  }
}

extern "C" __global__ void kiln_cts_reverse_blocks_u32(const unsigned int* in,
                                                       unsigned int* out) {
  extern __shared__ unsigned int kiln_cts_shared[];
  unsigned int b = blockDim.x, t = threadIdx.x;
  unsigned long long base = (unsigned long long)blockIdx.x * b;
  kiln_cts_shared[t] = in[base + t];
  __syncthreads();
  out[base + t] = kiln_cts_shared[b - 1 - t];
}
)cuda";
}

}  // namespace kiln::runtime::cts
