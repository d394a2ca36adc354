// Allocator: hands out device (or pinned host) memory.
//
// Implementations: each device's uncached allocators (Device::device_allocator,
// Device::pinned_host_allocator), the BFC caching allocator (bfc_allocator.h) layered over a
// device allocator, and stream-ordered allocators (CUDA memory pools). See
// Note [Allocator policy] in docs/runtime.md for which to use when.
//
// Contract:
//   - Allocate(0) returns the null DeviceMemory (OK); Deallocate of the null handle is a no-op.
//   - Allocate returns at least `bytes` bytes aligned to alignment(); the returned size is the
//     requested size (callers must not rely on slack).
//   - Out of memory is ResourceExhausted with a message that says how much was asked for and,
//     where the allocator knows, what holds the memory.
//   - Deallocate of memory this allocator did not hand out is InvalidArgument (where the
//     allocator can tell; the BFC allocator always can).
//   - Memory is reusable as soon as Deallocate returns: the caller guarantees no stream still
//     uses it (see Note [Memory reuse across streams]). Stream-ordered allocators relax this
//     through AllocateOnStream/DeallocateOnStream.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "kiln/base/status.h"
#include "kiln/runtime/types.h"

namespace kiln::runtime {

class Stream;

struct AllocatorStats {
  uint64_t bytes_in_use = 0;         // live allocations (as handed out, after rounding)
  uint64_t peak_bytes_in_use = 0;
  uint64_t bytes_reserved = 0;       // obtained from the backing allocator (regions)
  uint64_t peak_bytes_reserved = 0;
  uint64_t bytes_limit = 0;          // 0 = no limit
  uint64_t largest_free_block = 0;   // biggest allocation possible without growing
  uint64_t num_allocs = 0;           // successful allocations since creation
  uint64_t num_live_allocs = 0;
  uint64_t num_regions = 0;
  uint64_t num_ooms = 0;
  // 1 - largest_free_block / free bytes (0 when nothing is free): how badly the free space is
  // scattered.
  double fragmentation = 0;

  std::string ToString() const;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  virtual std::string_view name() const = 0;
  virtual MemoryKind memory_kind() const = 0;
  // Alignment of every returned address (a power of two).
  virtual uint64_t alignment() const = 0;

  // `tag` names the allocation in out-of-memory reports ("params", "temp buffer of fusion.3").
  StatusOr<DeviceMemory> Allocate(uint64_t bytes, std::string_view tag = {}) {
    if (bytes == 0) return DeviceMemory{};
    return DoAllocate(bytes, tag);
  }
  Status Deallocate(DeviceMemory memory) {
    if (memory.is_null()) return OkStatus();
    return DoDeallocate(memory);
  }

  // Stream-ordered allocation: the memory may be used by work enqueued on `stream` after this
  // call, and DeallocateOnStream frees it once the stream's earlier work is done, without
  // blocking the host. A stream-ordered allocator must outlive the frees it has queued
  // (synchronize those streams before destroying it). Allocators that are not stream-ordered allocate immediately and, for
  // DeallocateOnStream, synchronize the stream before freeing.
  virtual bool is_stream_ordered() const { return false; }
  virtual StatusOr<DeviceMemory> AllocateOnStream(uint64_t bytes, Stream& stream,
                                                  std::string_view tag = {});
  virtual Status DeallocateOnStream(DeviceMemory memory, Stream& stream);

  // Statistics, for allocators that keep them.
  virtual std::optional<AllocatorStats> GetStats() const { return std::nullopt; }

 protected:
  Allocator() = default;
  virtual StatusOr<DeviceMemory> DoAllocate(uint64_t bytes, std::string_view tag) = 0;
  virtual Status DoDeallocate(DeviceMemory memory) = 0;
};

// Owns one allocation and returns it to its allocator on destruction (errors are logged).
class OwnedDeviceMemory {
 public:
  OwnedDeviceMemory() = default;
  OwnedDeviceMemory(Allocator* allocator, DeviceMemory memory)
      : allocator_(allocator), memory_(memory) {}
  OwnedDeviceMemory(OwnedDeviceMemory&& other) noexcept
      : allocator_(std::exchange(other.allocator_, nullptr)),
        memory_(std::exchange(other.memory_, DeviceMemory{})) {}
  OwnedDeviceMemory& operator=(OwnedDeviceMemory&& other) noexcept;
  ~OwnedDeviceMemory() { Reset(); }

  // Allocates `bytes` from `allocator`.
  static StatusOr<OwnedDeviceMemory> Allocate(Allocator& allocator, uint64_t bytes,
                                              std::string_view tag = {});

  const DeviceMemory& get() const { return memory_; }
  const DeviceMemory* operator->() const { return &memory_; }
  operator DeviceMemory() const { return memory_; }  // NOLINT: a view, like a smart pointer
  // Frees now (logging any error).
  void Reset();
  // Gives up ownership without freeing.
  DeviceMemory Release() {
    allocator_ = nullptr;
    return std::exchange(memory_, DeviceMemory{});
  }

 private:
  Allocator* allocator_ = nullptr;
  DeviceMemory memory_;
};

}  // namespace kiln::runtime
