#include "kiln/runtime/kernel_args.h"

namespace kiln::runtime {

void KernelArgs::AddBytes(const void* data, size_t size) {
  size_t offset = slots_.size();
  size_t count = (size + sizeof(Slot) - 1) / sizeof(Slot);
  if (count == 0) count = 1;  // a zero-size parameter still gets a distinct address
  slots_.resize(offset + count);
  if (size > 0) std::memcpy(&slots_[offset], data, size);
  offsets_.push_back(static_cast<uint32_t>(offset));
  sizes_.push_back(static_cast<uint32_t>(size));
}

void** KernelArgs::pointers() const {
  // Recomputed on every call: slots_ may have been reallocated (or this object copied) since.
  pointers_.resize(offsets_.size());
  for (size_t i = 0; i < offsets_.size(); ++i) {
    pointers_[i] = const_cast<Slot*>(&slots_[offsets_[i]]);
  }
  return pointers_.data();
}

}  // namespace kiln::runtime
