#include "kiln/runtime/types.h"

#include "kiln/base/strings.h"

namespace kiln::runtime {

std::string Dim3::ToString() const { return StrCat("(", x, ", ", y, ", ", z, ")"); }

LaunchDims LaunchDims::Linear(uint64_t n, uint32_t block_size) {
  if (block_size == 0) block_size = 1;
  uint64_t blocks = n == 0 ? 1 : (n + block_size - 1) / block_size;
  LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(blocks);
  dims.block.x = block_size;
  return dims;
}

const char* MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kPinnedHost: return "pinned-host";
    case MemoryKind::kHost: return "host";
  }
  return "?";
}

const char* StreamPriorityName(StreamPriority priority) {
  switch (priority) {
    case StreamPriority::kNormal: return "normal";
    case StreamPriority::kHigh: return "high";
  }
  return "?";
}

}  // namespace kiln::runtime
