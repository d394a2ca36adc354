// Reading AMDGPU code objects (HSACO: ELF64 images for EM_AMDGPU) without the ROCm tools: the
// target from the ELF header and each kernel's resource usage from the NT_AMDGPU_METADATA note
// (a MessagePack map, decoded here), so that compiled kernels can be checked, and launches and
// occupancy planned, on a machine without an AMD GPU.
//
// The metadata keys read are those of code object v4 and v5 (amdhsa.version 1.1 / 1.2):
//   amdhsa.target  "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
//   amdhsa.kernels [{.name, .symbol, .sgpr_count, .vgpr_count, .agpr_count,
//                    .group_segment_fixed_size (LDS), .private_segment_fixed_size (scratch),
//                    .kernarg_segment_size, .max_flat_workgroup_size, .wavefront_size,
//                    .sgpr_spill_count, .vgpr_spill_count, .uses_dynamic_stack}, ...]
// rocm_hsaco_test checks every field against `llvm-readelf --notes` on real compiled objects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"

namespace kiln::rocm {

struct KernelMetadata {
  std::string name;    // the entry point ("loop_fusion_3")
  std::string symbol;  // its kernel descriptor ("loop_fusion_3.kd")
  int64_t sgpr_count = 0;
  int64_t vgpr_count = 0;
  int64_t agpr_count = 0;  // accumulation registers (gfx90a and later; 0 elsewhere)
  int64_t lds_bytes = 0;      // .group_segment_fixed_size: static LDS (__shared__)
  int64_t scratch_bytes = 0;  // .private_segment_fixed_size: per work-item stack/spills
  int64_t kernarg_bytes = 0;
  int64_t max_flat_workgroup_size = 0;  // from __launch_bounds__, else 1024
  int64_t wavefront_size = 0;
  int64_t sgpr_spill_count = 0;
  int64_t vgpr_spill_count = 0;
  bool uses_dynamic_stack = false;
};

struct CodeObjectInfo {
  uint8_t abi_version = 0;  // e_ident[EI_ABIVERSION]: 2 = code object v4, 3 = v5
  uint32_t flags = 0;       // e_flags
  std::string gfx_arch;     // from e_flags' machine field: "gfx90a", "gfx942" ("" if unknown)
  bool xnack = false, sramecc = false;  // target features set on (e_flags, v4+)
  std::string target;       // amdhsa.target
  std::vector<int64_t> metadata_version;  // amdhsa.version
  std::vector<KernelMetadata> kernels;

  const KernelMetadata* Find(std::string_view name) const;
  // One line per kernel: "name: sgpr 11 vgpr 7 agpr 0 lds 1024 scratch 0 ...".
  std::string ToString() const;
};

// Parses `image`; InvalidArgument when it is not a well-formed little-endian ELF64 for
// EM_AMDGPU (224) or its metadata note does not decode.
StatusOr<CodeObjectInfo> InspectCodeObject(std::string_view image);

// The gfx name of an EF_AMDGPU_MACH value (0x3f → "gfx90a", 0x4c → "gfx942"), "" if unknown.
std::string GfxArchForMach(uint32_t mach);

}  // namespace kiln::rocm
