// Small value types shared by the runtime interfaces: launch dimensions, device memory handles,
// memory kinds, stream priorities.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>

namespace kiln::runtime {

// A 3-D extent (grid or block dimensions); every component is at least 1 for a valid launch.
struct Dim3 {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;

  uint64_t Count() const { return uint64_t{x} * y * z; }
  std::string ToString() const;
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

// Launch configuration: grid of blocks, threads per block, dynamic shared memory per block.
struct LaunchDims {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_memory_bytes = 0;

  // A 1-D launch covering `n` elements with `block_size` threads per block (n == 0 → one block).
  static LaunchDims Linear(uint64_t n, uint32_t block_size);
};

// Where memory lives.
enum class MemoryKind {
  kDevice,      // device memory (on the host platform: ordinary host memory)
  kPinnedHost,  // page-locked host memory the device can DMA from/to
  kHost,        // ordinary pageable host memory
};
const char* MemoryKindName(MemoryKind kind);

// A non-owning handle on device memory: an address in the device's address space and a size.
// On the host platform the address is an ordinary pointer; on CUDA it is a CUdeviceptr. The
// null handle (ptr == nullptr, size == 0) is what a zero-byte allocation returns.
struct DeviceMemory {
  void* ptr = nullptr;
  uint64_t size = 0;

  bool is_null() const { return ptr == nullptr; }
  uint64_t address() const { return reinterpret_cast<uint64_t>(ptr); }
  // The sub-range [offset, offset + bytes); the caller guarantees it lies inside this range.
  DeviceMemory Slice(uint64_t offset, uint64_t bytes) const {
    assert(offset + bytes <= size);
    return DeviceMemory{static_cast<char*>(ptr) + offset, bytes};
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
  friend bool operator==(const DeviceMemory&, const DeviceMemory&) = default;
};

// Scheduling priority of a stream. Drivers map it onto what the hardware offers: CUDA gives
// kHigh the context's greatest priority and kNormal its least (the default); the host driver
// records it (work queues are threads of equal priority).
enum class StreamPriority { kNormal, kHigh };
const char* StreamPriorityName(StreamPriority priority);

}  // namespace kiln::runtime
