// Buffer: one array on one device -- an argument or a result of Executable::Execute.
//
// A buffer has an array shape (element type, dimensions; its layout is always the default
// row-major one: a backend whose module wants another entry layout converts at its boundary),
// lives on one device of one platform ("cpu:0", "cuda:1"), and owns or
// borrows size_bytes() bytes there. Elements are stored as in a Literal: PrimitiveByteWidth
// bytes each, so pred and the sub-byte types (s4, u2, f4e2m1fn, ...) take one byte an element.
//
// Making buffers: Backend::BufferFromHost / BufferFromLiteral copy host memory onto a device;
// Backend::BufferFromPointer wraps memory that already lives there (a framework's tensor, the
// DLPack hook) without copying, and calls the caller's release function when the buffer is
// destroyed. Results of Execute are buffers the executable made.
//
// Lifetime and donation: a buffer's memory is released when the last owner lets go of it. An
// argument that the module donates (input_output_alias, buffer_donor) is consumed by Execute:
// afterwards is_deleted() is true, its memory may hold a result, and every read fails with
// FailedPrecondition ("buffer was donated"). Delete() releases the memory early.
//
// Thread safety: reading a buffer (CopyToHost, ToLiteral) from several threads at once is safe;
// deleting or donating it while another thread reads it is not.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/shape.h"

namespace kiln {

class Buffer {
 public:
  virtual ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // The array's shape, with the default (row-major) layout set.
  const Shape& shape() const { return shape_; }
  // The platform ("interpreter", "cpu", "cuda") and device ordinal the memory belongs to.
  const std::string& platform() const { return platform_; }
  int device_ordinal() const { return ordinal_; }
  // "cpu:0"
  std::string device_name() const;
  // Whether the host can read the memory directly (host platforms: interpreter, cpu).
  virtual bool on_host() const = 0;
  // Bytes of the array (elements * PrimitiveByteWidth).
  uint64_t size_bytes() const { return size_; }

  // The first byte's address in the device's address space: a host pointer on host platforms,
  // a CUdeviceptr on cuda. Null once the buffer is deleted. Valid while the buffer lives.
  void* opaque_pointer() const { return deleted_ ? nullptr : ptr_; }

  // Copies the whole array into host memory (`bytes` must be size_bytes()); waits for the copy.
  Status CopyToHost(void* dst, uint64_t bytes) const;
  // The array as a Literal (a copy).
  StatusOr<Literal> ToLiteral() const;

  // Donated to an execution or deleted: the memory is no longer this buffer's.
  bool is_deleted() const { return deleted_; }
  // Why reads fail after deletion ("donated to main.12"), for error messages.
  const std::string& deleted_reason() const { return deleted_reason_; }
  // Releases the memory now (idempotent).
  void Delete();
  // Marks the buffer consumed by an execution it was donated to: reads fail from now on. The
  // memory stays alive as long as a result that took it over shares memory_owner(). For
  // Executable implementations.
  void MarkDonated(std::string reason);
  // The owner of the memory (kept alive by every result that aliases it).
  const std::shared_ptr<void>& memory_owner() const { return owner_; }

 protected:
  // `ptr`: size_bytes(shape) bytes at an address of the platform's device; `owner` keeps them
  // alive (released when the last reference goes).
  Buffer(Shape shape, std::string platform, int ordinal, void* ptr, std::shared_ptr<void> owner);
  // Copies to host memory; only called on a live buffer, with bytes == size_bytes().
  virtual Status CopyToHostImpl(void* dst, uint64_t bytes) const = 0;

 private:
  Shape shape_;
  std::string platform_;
  int ordinal_ = 0;
  void* ptr_ = nullptr;
  uint64_t size_ = 0;
  std::shared_ptr<void> owner_;
  bool deleted_ = false;
  std::string deleted_reason_;
};

// A buffer in host memory (the interpreter's and the cpu backend's).
class HostBuffer final : public Buffer {
 public:
  // Wraps `ptr` (size_bytes of `shape`), kept alive by `owner`.
  HostBuffer(Shape shape, std::string platform, int ordinal, void* ptr, std::shared_ptr<void> owner)
      : Buffer(std::move(shape), std::move(platform), ordinal, ptr, std::move(owner)) {}
  // Takes the literal over (no copy). `literal` must be an array.
  static std::unique_ptr<HostBuffer> FromLiteral(Literal literal, std::string platform, int ordinal);
  // Copies `bytes` bytes from `data` into fresh 64-byte-aligned memory.
  static StatusOr<std::unique_ptr<HostBuffer>> Copy(const void* data, uint64_t bytes, Shape shape,
                                                    std::string platform, int ordinal);
  // Wraps host memory the caller owns (BufferFromPointer of the host backends): `release`
  // (may be empty) runs once the buffer and every result sharing the memory are gone.
  // InvalidArgument for a null pointer or a shape that is no buffer's.
  static StatusOr<std::unique_ptr<HostBuffer>> Wrap(void* ptr, Shape shape, std::string platform, int ordinal,
                                                    std::function<void()> release);
  bool on_host() const override { return true; }

 private:
  Status CopyToHostImpl(void* dst, uint64_t bytes) const override;
};

// Bytes a buffer of `shape` takes; InvalidArgument for tuples, dynamic shapes and sizes that
// overflow.
StatusOr<uint64_t> BufferBytes(const Shape& shape);
// `shape` with the default (row-major) layout.
Shape WithDefaultLayout(Shape shape);

}  // namespace kiln
