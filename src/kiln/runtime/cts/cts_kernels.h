// Kernels of the runtime conformance suite, in every driver's form.
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

#include <memory>

#include "kiln/runtime/host/host_kernel.h"

namespace kiln::runtime::cts {

// Host implementations of the suite's kernels.
std::shared_ptr<const HostKernelLibrary> HostCtsKernels();
// CUDA C++ source of the suite's kernels (extern "C", for NVRTC or hipRTC).
const char* CudaCtsKernelSource();

}  // namespace kiln::runtime::cts
