// HostBackend: the part every backend whose one device is the host shares (interpreter, cpu):
// its name, the single device 0, and buffers in host memory (HostBuffer).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/backend/backend.h"

namespace kiln {

class HostBackend : public Backend {
 public:
  std::string_view name() const final { return name_; }
  StatusOr<std::unique_ptr<Buffer>> BufferFromHost(const void* data, uint64_t bytes, const Shape& shape,
                                                   int ordinal) final;
  StatusOr<std::unique_ptr<Buffer>> BufferFromPointer(void* ptr, const Shape& shape, int ordinal,
                                                      std::function<void()> release) final;

 protected:
  explicit HostBackend(std::string name) : name_(std::move(name)) {}
  // InvalidArgument unless `ordinal` is 0, the one host device.
  Status CheckOrdinal(int ordinal) const;

 private:
  std::string name_;
};

}  // namespace kiln
