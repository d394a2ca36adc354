// Occupancy of AMD CDNA kernels (gfx90a, gfx942) from their code-object metadata: how many
// wavefronts of a kernel one SIMD holds at once, and which resource limits it. Computed without
// a device from what InspectCodeObject reads (code_object.h), so that a deviceless compile can
// check its launches and report occupancy the way the CUDA side reports it from cuFunc
// attributes.
//
// Note [CDNA occupancy]
// A compute unit (CU) has 4 SIMDs; a workgroup's wavefronts (64 lanes each) are spread over the
// SIMDs of one CU. Per SIMD (gfx90a and gfx942 alike, CDNA2/CDNA3 ISA guides, LLVM's
// AMDGPUBaseInfo):
//   - at most 8 wavefronts;
//   - 512 vector registers per lane, shared by the architected VGPRs and the accumulation
//     registers (AGPRs): a wavefront takes align(vgpr, 4) + agpr, rounded up to the allocation
//     granule of 8;
//   - 800 scalar registers, allocated in granules of 16 (.sgpr_count already counts VCC,
//     FLAT_SCRATCH and XNACK_MASK);
// per CU: 64 KiB of LDS shared by its resident workgroups, and at most 16 workgroups of several
// waves (one-wave workgroups are bounded by the waves alone; LLVM's getMaxWorkGroupsPerCU).
// Resident workgroups per CU = min(registers: floor(4 * waves_by_registers / waves_per_wg),
// LDS: floor(65536 / lds), the workgroup cap); waves per SIMD follow from that. A workgroup
// larger than the kernel's .max_flat_workgroup_size (its launch bound) cannot be launched at all:
// hipModuleLaunchKernel fails with hipErrorInvalidValue, so the compiler refuses it up front
// (CheckLaunch).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/base/status.h"
#include "kiln/rocm/code_object.h"

namespace kiln::rocm {

// The per-SIMD / per-CU limits of one architecture (Note [CDNA occupancy]).
struct CuLimits {
  int simds_per_cu = 4;
  int max_waves_per_simd = 8;
  int vgprs_per_simd_lane = 512;  // architected + accumulation registers
  int vgpr_granule = 8;
  int sgprs_per_simd = 800;
  int sgpr_granule = 16;
  int64_t lds_per_cu = 64 * 1024;
  int max_workgroups_per_cu = 16;
  int wavefront_size = 64;
};
// The limits of "gfx90a" and "gfx942" (and other gfx9 CDNA targets: gfx908, gfx940, gfx941);
// NotFound for an architecture whose limits are not known.
StatusOr<CuLimits> CuLimitsFor(const std::string& gfx_arch);

struct KernelOccupancy {
  int waves_per_workgroup = 0;
  int workgroups_per_cu = 0;   // resident at once
  int waves_per_simd = 0;      // resident at once, 1..max_waves_per_simd
  double fraction = 0;         // waves_per_simd / max_waves_per_simd
  std::string limiter;         // "vgpr", "sgpr", "lds", "workgroups", "waves" (the hardware cap)
  std::string ToString() const;  // "4 waves/SIMD (50%, vgpr), 4 workgroups/CU"
};

// Occupancy of `kernel` launched with workgroups of `workgroup_size` work-items. InvalidArgument
// when the launch is impossible: workgroup_size < 1 or over the kernel's max_flat_workgroup_size,
// or one workgroup needs more LDS than a CU has or more registers than its SIMDs hold.
StatusOr<KernelOccupancy> ComputeOccupancy(const KernelMetadata& kernel, int64_t workgroup_size,
                                           const CuLimits& limits);

}  // namespace kiln::rocm
