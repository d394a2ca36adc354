#include "kiln/cpu/buffer_allocations.h"

namespace kiln::cpu {

Status BufferAllocations::Check(const BufferSlice& slice) const {
  if (slice.allocation < 0 || slice.allocation >= size())
    return Internal("cpu executable: slice ", slice.ToString(), " names no allocation (",
                    size(), " allocations)");
  const Memory& m = memory_[slice.allocation];
  if (slice.offset < 0 || slice.size < 0 || slice.offset + slice.size > m.size)
    return Internal("cpu executable: slice ", slice.ToString(), " lies outside allocation ",
                    slice.allocation, " of ", m.size, " bytes");
  if (slice.size > 0 && m.base == nullptr)
    return Internal("cpu executable: allocation ", slice.allocation, " has no memory");
  return OkStatus();
}

}  // namespace kiln::cpu
