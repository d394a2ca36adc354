// BufferAllocations: the memory of one execution of a CPU executable -- one base address per
// allocation of the buffer assignment (passes/buffer_assignment.h):
//   kParameter -- the caller's argument memory (read-only unless the parameter is donated and
//                 the assignment writes it), or a per-run copy (a relayouted argument, or a
//                 donated argument given as a const Literal);
//   kConstant  -- the executable's constant block, filled once at load time (read-only);
//   kTemp      -- the run's arena (one aligned block, leased from the executable's pool).
// A BufferSlice becomes an address with Get(): base + offset. Slices were checked against their
// allocations when the executable was built; in debug builds every access is checked again
// against the sizes given here (a caller passing a short buffer, a kiln bug), and a failure is
// an Internal error rather than a stray write.
//
// Thread safety: immutable once built; one per run.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/passes/buffer_assignment.h"

namespace kiln::cpu {

#if defined(NDEBUG)
inline constexpr bool kCheckSliceBounds = false;
#else
inline constexpr bool kCheckSliceBounds = true;
#endif

class BufferAllocations {
 public:
  struct Memory {
    uint8_t* base = nullptr;
    int64_t size = 0;
  };
  BufferAllocations() = default;
  explicit BufferAllocations(std::vector<Memory> memory) : memory_(std::move(memory)) {}

  int64_t size() const { return static_cast<int64_t>(memory_.size()); }
  const Memory& allocation(int64_t i) const { return memory_[i]; }
  void set_allocation(int64_t i, Memory m) { memory_[i] = m; }

  // The address of `slice` (nullptr for a zero-size slice of an absent allocation). Checked
  // against the allocation's size in debug builds (kCheckSliceBounds).
  StatusOr<uint8_t*> Get(const BufferSlice& slice) const {
    if constexpr (kCheckSliceBounds) KILN_RETURN_IF_ERROR(Check(slice));
    return GetUnchecked(slice);
  }
  uint8_t* GetUnchecked(const BufferSlice& slice) const {
    uint8_t* base = memory_[slice.allocation].base;
    return base ? base + slice.offset : nullptr;
  }
  // OK if `slice` lies inside its allocation.
  Status Check(const BufferSlice& slice) const;

 private:
  std::vector<Memory> memory_;
};

}  // namespace kiln::cpu
