// KernelArgs: the argument list of a kernel launch, packed by value.
//
// Arguments are appended in the order of the kernel's parameters; each is copied into an
// internal 16-byte-aligned slot. `pointers()` yields the array of pointers to each argument's
// bytes that cuLaunchKernel takes as kernelParams, and host kernels read arguments back with
// `Get<T>(i)`. A launch copies what it needs before returning, so KernelArgs may be destroyed or
// reused right after Stream::Launch.
//
// Example:
//   KernelArgs args;
//   args.Add(output);            // DeviceMemory → its device address (a pointer parameter)
//   args.Add(uint32_t{7});
//   args.Add(uint64_t{n});
//   KILN_RETURN_IF_ERROR(stream.Launch(*kernel, LaunchDims::Linear(n, 256), args));
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kiln/runtime/types.h"

namespace kiln::runtime {

class KernelArgs {
 public:
  KernelArgs() = default;

  // Appends a trivially copyable value (scalars, pointers, small POD structs).
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  KernelArgs& Add(const T& value) {
    AddBytes(&value, sizeof(T));
    return *this;
  }
  // Appends a device memory handle as a pointer parameter.
  KernelArgs& Add(const DeviceMemory& memory) { return Add(memory.ptr); }

  // Appends `size` raw bytes as one parameter.
  void AddBytes(const void* data, size_t size);

  size_t size() const { return offsets_.size(); }
  size_t arg_size(size_t i) const { return sizes_[i]; }
  const void* arg_data(size_t i) const { return &slots_[offsets_[i]]; }

  // Reads argument i as a T; its size must match what was added (checked in debug builds).
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  T Get(size_t i) const {
    assert(i < size() && sizes_[i] == sizeof(T));
    T value;
    std::memcpy(&value, arg_data(i), sizeof(T));
    return value;
  }

  // The kernelParams array: pointers into this object's storage, valid until the next
  // modification (or destruction) of this object.
  void** pointers() const;

 private:
  struct alignas(16) Slot {
    std::byte bytes[16];
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> offsets_;  // in slots
  std::vector<uint32_t> sizes_;    // in bytes
  mutable std::vector<void*> pointers_;
};

}  // namespace kiln::runtime
