#include "kiln/backend/host_backend.h"

namespace kiln {

Status HostBackend::CheckOrdinal(int ordinal) const {
  if (ordinal != 0) return InvalidArgument("the ", name_, " backend has one device (0), not ", ordinal);
  return OkStatus();
}

StatusOr<std::unique_ptr<Buffer>> HostBackend::BufferFromHost(const void* data, uint64_t bytes, const Shape& shape,
                                                              int ordinal) {
  KILN_RETURN_IF_ERROR(CheckOrdinal(ordinal));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostBuffer> b, HostBuffer::Copy(data, bytes, shape, name_, 0));
  return std::unique_ptr<Buffer>(std::move(b));
}

StatusOr<std::unique_ptr<Buffer>> HostBackend::BufferFromPointer(void* ptr, const Shape& shape, int ordinal,
                                                                 std::function<void()> release) {
  KILN_RETURN_IF_ERROR(CheckOrdinal(ordinal));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostBuffer> b, HostBuffer::Wrap(ptr, shape, name_, 0, std::move(release)));
  return std::unique_ptr<Buffer>(std::move(b));
}

}  // namespace kiln
