#include "kiln/backend/buffer.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "kiln/base/strings.h"

namespace kiln {

Buffer::Buffer(Shape shape, std::string platform, int ordinal, void* ptr, std::shared_ptr<void> owner)
    : shape_(WithDefaultLayout(std::move(shape))),
      platform_(std::move(platform)),
      ordinal_(ordinal),
      ptr_(ptr),
      owner_(std::move(owner)) {
  auto bytes = BufferBytes(shape_);
  size_ = bytes.ok() ? *bytes : 0;
}

Buffer::~Buffer() = default;

std::string Buffer::device_name() const { return StrCat(platform_, ":", ordinal_); }

Status Buffer::CopyToHost(void* dst, uint64_t bytes) const {
  if (deleted_) return FailedPrecondition("buffer ", shape_.ToString(false), " on ", device_name(), " was ", deleted_reason_);
  if (bytes != size_)
    return InvalidArgument("copying buffer ", shape_.ToString(false), " (", size_, " bytes) into ", bytes, " bytes");
  if (bytes == 0) return OkStatus();
  return CopyToHostImpl(dst, bytes);
}

StatusOr<Literal> Buffer::ToLiteral() const {
  if (deleted_) return FailedPrecondition("buffer ", shape_.ToString(false), " on ", device_name(), " was ", deleted_reason_);
  KILN_ASSIGN_OR_RETURN(Literal literal, Literal::Create(shape_, StrCat("a copy of a buffer on ", device_name())));
  if (literal.size_bytes() != size_)
    return Internal("buffer ", shape_.ToString(false), " holds ", size_, " bytes, its literal ", literal.size_bytes());
  KILN_RETURN_IF_ERROR(CopyToHost(literal.untyped_data(), size_));
  return literal;
}

void Buffer::Delete() {
  if (deleted_) return;
  deleted_ = true;
  deleted_reason_ = "deleted";
  owner_.reset();
}

void Buffer::MarkDonated(std::string reason) {
  deleted_ = true;
  deleted_reason_ = std::move(reason);
  owner_.reset();
}

std::unique_ptr<HostBuffer> HostBuffer::FromLiteral(Literal literal, std::string platform, int ordinal) {
  auto owned = std::make_shared<Literal>(std::move(literal));
  Shape shape = owned->shape();
  void* ptr = owned->untyped_data();
  return std::make_unique<HostBuffer>(std::move(shape), std::move(platform), ordinal, ptr, std::move(owned));
}

StatusOr<std::unique_ptr<HostBuffer>> HostBuffer::Copy(const void* data, uint64_t bytes, Shape shape,
                                                       std::string platform, int ordinal) {
  KILN_ASSIGN_OR_RETURN(uint64_t want, BufferBytes(shape));
  if (bytes != want)
    return InvalidArgument("a buffer of ", shape.ToString(false), " takes ", want, " bytes, got ", bytes);
  // 64-byte aligned (vector kernels), at least one byte so that the pointer is never null.
  const uint64_t rounded = (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) return ResourceExhausted("out of host memory allocating ", rounded, " bytes for a ", shape.ToString(false), " buffer");
  if (bytes > 0) std::memcpy(p, data, bytes);
  std::shared_ptr<void> owner(p, [](void* q) { std::free(q); });
  return std::make_unique<HostBuffer>(std::move(shape), std::move(platform), ordinal, p, std::move(owner));
}

StatusOr<std::unique_ptr<HostBuffer>> HostBuffer::Wrap(void* ptr, Shape shape, std::string platform, int ordinal,
                                                       std::function<void()> release) {
  KILN_RETURN_IF_ERROR(BufferBytes(shape).status());
  if (ptr == nullptr) return InvalidArgument("BufferFromPointer: null pointer");
  std::shared_ptr<void> owner(ptr, [release = std::move(release)](void*) {
    if (release) release();
  });
  return std::make_unique<HostBuffer>(std::move(shape), std::move(platform), ordinal, ptr, std::move(owner));
}

Status HostBuffer::CopyToHostImpl(void* dst, uint64_t bytes) const {
  std::memcpy(dst, opaque_pointer(), bytes);
  return OkStatus();
}

StatusOr<uint64_t> BufferBytes(const Shape& shape) {
  if (!shape.IsArray()) return InvalidArgument("a buffer holds one array, not ", shape.ToString(false));
  if (shape.is_dynamic()) return InvalidArgument("buffers of dynamic shapes are not supported: ", shape.ToString(false));
  uint64_t n = static_cast<uint64_t>(PrimitiveByteWidth(shape.element_type()));
  for (int64_t d : shape.dimensions()) {
    if (d < 0) return InvalidArgument("negative dimension in ", shape.ToString(false));
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      return InvalidArgument("the size of ", shape.ToString(false), " overflows 64 bits");
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

Shape WithDefaultLayout(Shape shape) {
  shape.clear_layout();
  shape.set_default_layouts();
  return shape;
}

}  // namespace kiln
