#include "kiln/runtime/allocator.h"

#include <cstdio>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/runtime/stream.h"

namespace kiln::runtime {

std::string AllocatorStats::ToString() const {
  char frag[32];
  std::snprintf(frag, sizeof(frag), "%.3f", fragmentation);
  return StrCat("in use ", HumanBytes(bytes_in_use), " (peak ", HumanBytes(peak_bytes_in_use),
                "), reserved ", HumanBytes(bytes_reserved), " in ", num_regions,
                " region(s) (peak ", HumanBytes(peak_bytes_reserved), "), limit ",
                bytes_limit == 0 ? std::string("none") : HumanBytes(bytes_limit),
                ", largest free block ", HumanBytes(largest_free_block), ", fragmentation ", frag,
                ", ", num_live_allocs, " live / ", num_allocs, " total allocations, ", num_ooms,
                " OOM(s)");
}

StatusOr<DeviceMemory> Allocator::AllocateOnStream(uint64_t bytes, Stream& stream,
                                                   std::string_view tag) {
  (void)stream;
  return Allocate(bytes, tag);
}

Status Allocator::DeallocateOnStream(DeviceMemory memory, Stream& stream) {
  // Not stream-ordered: the memory becomes reusable at once, so the stream must be done with it.
  KILN_RETURN_IF_ERROR(stream.Synchronize());
  return Deallocate(memory);
}

OwnedDeviceMemory& OwnedDeviceMemory::operator=(OwnedDeviceMemory&& other) noexcept {
  if (this != &other) {
    Reset();
    allocator_ = std::exchange(other.allocator_, nullptr);
    memory_ = std::exchange(other.memory_, DeviceMemory{});
  }
  return *this;
}

StatusOr<OwnedDeviceMemory> OwnedDeviceMemory::Allocate(Allocator& allocator, uint64_t bytes,
                                                        std::string_view tag) {
  KILN_ASSIGN_OR_RETURN(DeviceMemory memory, allocator.Allocate(bytes, tag));
  return OwnedDeviceMemory(&allocator, memory);
}

void OwnedDeviceMemory::Reset() {
  if (allocator_ != nullptr && !memory_.is_null()) {
    Status status = allocator_->Deallocate(memory_);
    if (!status.ok()) {
      KILN_LOG(Error) << "freeing device memory: " << status.ToString();
    }
  }
  allocator_ = nullptr;
  memory_ = DeviceMemory{};
}

}  // namespace kiln::runtime
