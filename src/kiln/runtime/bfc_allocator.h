// BfcAllocator: a best-fit-with-coalescing caching allocator over large regions.
//
// The allocator asks a SubAllocator for big regions (CUDA: cuMemAlloc; tests: a fake address
// range) and carves them into chunks. Policy (Note [Allocator policy] in docs/runtime.md):
//   - Sizes round up to `alignment` (default 256 bytes, what CUDA guarantees).
//   - Free chunks sit in 21 bins by size class (bin i holds [256·2^i, 256·2^(i+1)), the last bin
//     everything from 256 MiB up); each bin is ordered by (size, address). An allocation takes
//     the smallest free chunk that fits (exact best fit, lowest address on ties) and splits off
//     the remainder when it is at least `alignment` bytes.
//   - A freed chunk merges with free neighbours in its region at once, so no two adjacent chunks
//     are ever both free.
//   - When nothing fits, a new region is reserved: max(request, next_region_bytes), where
//     next_region_bytes starts at initial_region_bytes and doubles with every region, never
//     exceeding the limit. If the backing allocator refuses the larger size, exactly the request
//     is tried; if that fails too, wholly free regions are released and it is tried once more.
//   - Regions are kept until ReleaseFreeRegions() or destruction: the allocator caches.
//   - Out of memory is ResourceExhausted listing the request, the statistics and the largest
//     live allocations with their tags.
//
// The allocator is device-agnostic: it never touches the memory it manages (addresses may not
// even be dereferenceable on the host). It is not stream-aware: see
// Note [Memory reuse across streams].
//
// Thread safety: all methods may be called concurrently (one mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/allocator.h"

namespace kiln::runtime {

class Device;

// Supplies the regions a BfcAllocator carves up.
class SubAllocator {
 public:
  virtual ~SubAllocator() = default;
  // A region of exactly `bytes` bytes, aligned to at least 256 bytes; ResourceExhausted when the
  // backing store cannot provide it.
  virtual StatusOr<void*> AllocateRegion(uint64_t bytes) = 0;
  virtual Status FreeRegion(void* base, uint64_t bytes) = 0;
  virtual MemoryKind memory_kind() const = 0;
};

// Regions taken from another allocator (e.g. Device::device_allocator()), which must outlive
// the sub-allocator.
std::unique_ptr<SubAllocator> MakeAllocatorSubAllocator(Allocator& backing);

struct BfcOptions {
  // Name used in messages and statistics. Default "bfc".
  std::string name = "bfc";
  // Most bytes the allocator may reserve. 0 (default): no byte limit.
  uint64_t limit_bytes = 0;
  // Limit as a fraction (0, 1] of `memory_size`; 0 (default): none. When both limits are set
  // the smaller wins. With neither, the allocator grows until the backing allocator refuses.
  double limit_fraction = 0;
  // Total memory the fraction applies to; CreateBfcDeviceAllocator fills it from the device.
  uint64_t memory_size = 0;
  // Size of the first region; later regions double. Default 2 MiB.
  uint64_t initial_region_bytes = uint64_t{2} << 20;
  // Cap on the size regions grow to (a bigger single request still gets a region of its own
  // size). 0 (default): no cap.
  uint64_t max_region_bytes = 0;
  // Reserve the whole limit as one region at creation (needs a limit). Default off.
  bool preallocate = false;
  // Alignment and rounding granularity of allocations: a power of two >= 64. Default 256.
  uint64_t alignment = 256;
  // How many of the largest live allocations an out-of-memory error lists. Default 8.
  size_t oom_report_allocations = 8;
};

class BfcAllocator final : public Allocator {
 public:
  static StatusOr<std::unique_ptr<BfcAllocator>> Create(std::unique_ptr<SubAllocator> backing,
                                                        BfcOptions options);
  // Returns every region to the backing allocator; live allocations become invalid (logged).
  ~BfcAllocator() override;

  std::string_view name() const override { return options_.name; }
  MemoryKind memory_kind() const override { return backing_->memory_kind(); }
  uint64_t alignment() const override { return options_.alignment; }
  std::optional<AllocatorStats> GetStats() const override;

  // Returns wholly free regions to the backing allocator; the bytes released.
  uint64_t ReleaseFreeRegions();

  struct LiveAllocation {
    uint64_t address = 0;
    uint64_t bytes = 0;            // chunk size (rounded)
    uint64_t requested_bytes = 0;  // what the caller asked for
    uint64_t id = 0;               // sequence number of the allocation
    std::string tag;
  };
  // The `n` largest live allocations, largest first.
  std::vector<LiveAllocation> LargestLiveAllocations(size_t n) const;

  // Verifies the internal invariants (chunks tile their regions, free neighbours are merged,
  // bins and statistics agree); Internal error describing the first violation. For tests.
  Status CheckInvariants() const;
  // Regions and chunks, one per line. For debugging.
  std::string DebugString() const;

  static constexpr int kNumBins = 21;
  // The bin of a free chunk of `bytes` bytes.
  static int BinIndex(uint64_t bytes);

 protected:
  StatusOr<DeviceMemory> DoAllocate(uint64_t bytes, std::string_view tag) override;
  Status DoDeallocate(DeviceMemory memory) override;

 private:
  using ChunkId = int32_t;
  static constexpr ChunkId kNoChunk = -1;
  struct Chunk {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requested = 0;
    ChunkId prev = kNoChunk;  // neighbours in address order within the region
    ChunkId next = kNoChunk;
    bool in_use = false;
    bool live = false;  // slot holds a chunk (false: recycled slot)
    uint64_t id = 0;
    std::string tag;
  };
  struct Region {
    uint64_t base = 0;
    uint64_t size = 0;
    ChunkId first = kNoChunk;
  };
  // Free chunks of one bin, ordered by (size, address).
  using Bin = std::set<std::tuple<uint64_t, uint64_t, ChunkId>>;

  BfcAllocator(std::unique_ptr<SubAllocator> backing, BfcOptions options, uint64_t limit);

  ChunkId NewChunk();
  void DeleteChunk(ChunkId id);
  void InsertFree(ChunkId id);
  void RemoveFree(ChunkId id);
  ChunkId FindFit(uint64_t rounded) const;
  Status Grow(uint64_t rounded);
  uint64_t ReleaseFreeRegionsLocked();
  uint64_t LargestFreeLocked() const;
  AllocatorStats StatsLocked() const;
  Status OutOfMemory(uint64_t bytes, std::string_view tag, const std::string& why);

  std::unique_ptr<SubAllocator> backing_;
  const BfcOptions options_;
  const uint64_t limit_;  // UINT64_MAX when unlimited

  mutable std::mutex mu_;
  std::vector<Chunk> chunks_;
  std::vector<ChunkId> free_slots_;
  std::vector<Region> regions_;
  Bin bins_[kNumBins];
  std::unordered_map<uint64_t, ChunkId> in_use_;  // address → chunk
  uint64_t next_region_bytes_;
  uint64_t next_id_ = 1;
  AllocatorStats stats_;
};

// A BFC allocator over `device`'s uncached device allocator; fills options.memory_size from the
// device description when it is 0 and names the allocator "bfc:<platform>:<ordinal>" when the
// name is the default.
StatusOr<std::unique_ptr<BfcAllocator>> CreateBfcDeviceAllocator(Device& device,
                                                                  BfcOptions options);

}  // namespace kiln::runtime
