// DeviceSpec: what code generation needs to know about the GPU it generates for.
//
// Built from a device's runtime::DeviceDescription (what the driver reported) or from a named
// preset, so kernels can be generated and compiled on a machine without a GPU (CI, `kiln compile
// --arch sm_90`). Launch sizes (grids of a few waves, rows per block, split factors) and limits
// (threads per block, shared memory) come from here, never from constants in the emitters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/device_description.h"

namespace kiln::codegen {

// The language generated kernels are written in (Note [HIP dialect] in prelude.cc).
//   kCuda  CUDA C++ for NVRTC: 32-lane warps, cuda_fp16.h / cuda_bf16.h, inline PTX where it helps.
//   kHip   HIP C++ for hipRTC or clang (-x hip): 64-lane wavefronts, shuffles without masks, no
//          CUDA-only intrinsics and no PTX; f16 from hip_fp16.h, bf16 as kiln's own storage type.
enum class GpuDialect { kCuda, kHip };
std::string_view GpuDialectName(GpuDialect dialect);  // "cuda", "hip"

struct DeviceSpec {
  std::string name;  // "NVIDIA H200", or the preset's name
  int compute_capability_major = 9;
  int compute_capability_minor = 0;
  int sm_count = 132;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  // Shared memory: the default per-block limit (static + dynamic without opting in), the
  // opt-in maximum per block (cuFuncSetAttribute), and what one SM has.
  int64_t shared_memory_per_block = 48 * 1024;
  int64_t shared_memory_per_block_optin = 227 * 1024;
  int64_t shared_memory_per_sm = 228 * 1024;
  int registers_per_sm = 65536;
  int registers_per_block = 65536;
  int64_t l2_cache_bytes = 50 << 20;
  // Peak DRAM bandwidth (bytes/s): the performance model's floor (0 = unknown).
  double memory_bandwidth_bytes_per_s = 3.35e12;
  // The kernel language, and for kHip the AMDGPU target ("gfx90a", "gfx942"). AMD presets leave
  // the compute capability at 0.0 (no NVIDIA feature level applies).
  GpuDialect dialect = GpuDialect::kCuda;
  std::string gfx_arch;

  // "sm_90" (compute capability as an NVRTC architecture), or gfx_arch for kHip.
  std::string arch() const;
  bool is_hip() const { return dialect == GpuDialect::kHip; }
  // Resident threads that saturate the device: sm_count * max_threads_per_sm.
  int64_t resident_threads() const { return int64_t{sm_count} * max_threads_per_sm; }
  // Multi-line description ("name: ...").
  std::string ToString() const;

  // From a driver's description; fields the driver left at 0 keep the defaults of the preset of
  // the same compute capability (or of sm_90).
  static DeviceSpec FromDescription(const runtime::DeviceDescription& description);
  // Presets: "sm_80" / "a100", "sm_86" / "a10", "sm_89" / "l40s", "sm_90" / "h100", "h200",
  // "sm_100" / "b200" (case-insensitive; an "sm_XYa" suffix is accepted and ignored); AMD (HIP
  // dialect): "gfx90a" / "mi250x" (one of its two dies), "gfx942" / "mi300x". A ROCm
  // description (platform "rocm", or gpu_arch "gfxNNN") starts from the AMD preset of its
  // architecture (or gfx90a).
  // NotFound lists the known names.
  static StatusOr<DeviceSpec> FromPreset(std::string_view name);
  // The preset names of one dialect (NVIDIA's by default, AMD's for kHip).
  static std::vector<std::string> PresetNames(GpuDialect dialect = GpuDialect::kCuda);
};

}  // namespace kiln::codegen
