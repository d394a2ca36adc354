#include "kiln/runtime/stream.h"

#include "kiln/runtime/device_description.h"

namespace kiln::runtime {

Status CheckDeviceRange(const DeviceMemory& memory, uint64_t bytes, std::string_view what) {
  if (bytes > memory.size) {
    return InvalidArgument(what, ": ", bytes, " bytes exceed the ", memory.size,
                           "-byte device buffer");
  }
  if (bytes > 0 && memory.is_null()) return InvalidArgument(what, ": null device buffer");
  return OkStatus();
}

Status CheckLaunchDims(const DeviceDescription& d, std::string_view kernel,
                       const LaunchDims& dims, int max_threads_per_block) {
  if (dims.grid.Count() == 0 || dims.block.Count() == 0) {
    return InvalidArgument("launch of '", kernel, "' with an empty grid ", dims.grid.ToString(),
                           " or block ", dims.block.ToString());
  }
  if (max_threads_per_block > 0 && dims.block.Count() > static_cast<uint64_t>(max_threads_per_block)) {
    return InvalidArgument("launch of '", kernel, "': block ", dims.block.ToString(),
                           " has more than the kernel's limit of ", max_threads_per_block,
                           " threads");
  }
  const Dim3& mb = d.max_block_dims;
  const Dim3& mg = d.max_grid_dims;
  if ((mb.Count() > 1 && (dims.block.x > mb.x || dims.block.y > mb.y || dims.block.z > mb.z)) ||
      (mg.Count() > 1 && (dims.grid.x > mg.x || dims.grid.y > mg.y || dims.grid.z > mg.z))) {
    return InvalidArgument("launch of '", kernel, "': grid ", dims.grid.ToString(), " / block ",
                           dims.block.ToString(), " exceed the device limits (grid ",
                           mg.ToString(), ", block ", mb.ToString(), ")");
  }
  return OkStatus();
}

}  // namespace kiln::runtime
