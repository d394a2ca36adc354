#include "kiln/rocm/occupancy.h"

#include <algorithm>

#include "kiln/base/strings.h"

namespace kiln::rocm {

namespace {

int64_t AlignUp(int64_t v, int64_t g) { return (v + g - 1) / g * g; }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

StatusOr<CuLimits> CuLimitsFor(const std::string& gfx_arch) {
  // Every CDNA target of gfx9 shares the numbers of Note [CDNA occupancy].
  for (const char* a : {"gfx908", "gfx90a", "gfx940", "gfx941", "gfx942"})
    if (gfx_arch == a) return CuLimits{};
  return NotFound("rocm: occupancy limits of ", gfx_arch.empty() ? "(no architecture)" : gfx_arch,
                  " are not known (known: gfx908, gfx90a, gfx940, gfx941, gfx942)");
}

std::string KernelOccupancy::ToString() const {
  return StrCat(waves_per_simd, " waves/SIMD (", static_cast<int>(fraction * 100 + 0.5), "%, ",
                limiter, "), ", workgroups_per_cu, " workgroups/CU");
}

StatusOr<KernelOccupancy> ComputeOccupancy(const KernelMetadata& kernel, int64_t workgroup_size,
                                           const CuLimits& limits) {
  const int64_t bound = kernel.max_flat_workgroup_size > 0 ? kernel.max_flat_workgroup_size : 1024;
  if (workgroup_size < 1 || workgroup_size > bound)
    return InvalidArgument("rocm: kernel ", kernel.name, " is launched with workgroups of ",
                           workgroup_size, " work-items; its code object allows 1 to ", bound,
                           " (.max_flat_workgroup_size, from its launch bounds)");
  const int64_t wave = kernel.wavefront_size > 0 ? kernel.wavefront_size : limits.wavefront_size;
  KernelOccupancy o;
  o.waves_per_workgroup = static_cast<int>(CeilDiv(workgroup_size, wave));
  // A resource that allows `w` waves on each SIMD holds floor(simds * w / waves_per_workgroup)
  // workgroups on the CU (a workgroup's waves are spread over its SIMDs).
  const int64_t n = o.waves_per_workgroup;
  auto workgroups_for = [&](int64_t waves_per_simd) { return limits.simds_per_cu * waves_per_simd / n; };
  struct Limit {
    const char* name;
    int64_t workgroups;
  };
  std::vector<Limit> limits_wg;
  limits_wg.push_back({"waves", workgroups_for(limits.max_waves_per_simd)});
  const int64_t vgprs = AlignUp(AlignUp(std::max<int64_t>(kernel.vgpr_count, 1), 4) + kernel.agpr_count,
                                limits.vgpr_granule);
  limits_wg.push_back({"vgpr", workgroups_for(limits.vgprs_per_simd_lane / vgprs)});
  const int64_t sgprs = AlignUp(std::max<int64_t>(kernel.sgpr_count, 1), limits.sgpr_granule);
  limits_wg.push_back({"sgpr", workgroups_for(limits.sgprs_per_simd / sgprs)});
  if (kernel.lds_bytes > 0) limits_wg.push_back({"lds", limits.lds_per_cu / kernel.lds_bytes});
  const int64_t cap = o.waves_per_workgroup == 1
                          ? int64_t{limits.max_waves_per_simd} * limits.simds_per_cu
                          : limits.max_workgroups_per_cu;
  limits_wg.push_back({"workgroups", cap});

  const Limit* worst = &limits_wg[0];
  for (const Limit& l : limits_wg)
    if (l.workgroups < worst->workgroups) worst = &l;
  if (worst->workgroups < 1) {
    return InvalidArgument("rocm: kernel ", kernel.name, " cannot be resident with workgroups of ",
                           workgroup_size, " work-items: its ", worst->name, " use (vgpr ",
                           kernel.vgpr_count, " agpr ", kernel.agpr_count, " sgpr ", kernel.sgpr_count,
                           " lds ", kernel.lds_bytes, " B) exceeds one compute unit");
  }
  o.workgroups_per_cu = static_cast<int>(worst->workgroups);
  o.limiter = worst->name;
  // Resident waves spread over the SIMDs; never above the hardware cap.
  o.waves_per_simd = static_cast<int>(std::min<int64_t>(
      limits.max_waves_per_simd, CeilDiv(int64_t{o.workgroups_per_cu} * o.waves_per_workgroup, limits.simds_per_cu)));
  o.fraction = static_cast<double>(o.waves_per_simd) / limits.max_waves_per_simd;
  return o;
}

}  // namespace kiln::rocm
