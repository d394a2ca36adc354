#include "kiln/runtime/bfc_allocator.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <sstream>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/runtime/device.h"

namespace kiln::runtime {

namespace {

class AllocatorSubAllocator final : public SubAllocator {
 public:
  explicit AllocatorSubAllocator(Allocator& backing) : backing_(backing) {}
  StatusOr<void*> AllocateRegion(uint64_t bytes) override {
    KILN_ASSIGN_OR_RETURN(DeviceMemory memory, backing_.Allocate(bytes, "bfc region"));
    return memory.ptr;
  }
  Status FreeRegion(void* base, uint64_t bytes) override {
    return backing_.Deallocate(DeviceMemory{base, bytes});
  }
  MemoryKind memory_kind() const override { return backing_.memory_kind(); }

 private:
  Allocator& backing_;
};

uint64_t RoundUp(uint64_t n, uint64_t alignment) { return (n + alignment - 1) & ~(alignment - 1); }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

}  // namespace

std::unique_ptr<SubAllocator> MakeAllocatorSubAllocator(Allocator& backing) {
  return std::make_unique<AllocatorSubAllocator>(backing);
}

int BfcAllocator::BinIndex(uint64_t bytes) {
  uint64_t units = bytes >> 8;  // bins start at 256 bytes
  if (units == 0) return 0;
  int index = std::bit_width(units) - 1;
  return std::min(index, kNumBins - 1);
}

StatusOr<std::unique_ptr<BfcAllocator>> BfcAllocator::Create(std::unique_ptr<SubAllocator> backing,
                                                             BfcOptions options) {
  if (backing == nullptr) return InvalidArgument("bfc '", options.name, "': no sub-allocator");
  if (options.alignment < 64 || !std::has_single_bit(options.alignment)) {
    return InvalidArgument("bfc '", options.name, "': alignment must be a power of two >= 64, got ",
                           options.alignment);
  }
  if (!(options.limit_fraction >= 0 && options.limit_fraction <= 1)) {
    return InvalidArgument("bfc '", options.name, "': limit_fraction must lie in (0, 1], got ",
                           options.limit_fraction);
  }
  uint64_t limit = std::numeric_limits<uint64_t>::max();
  if (options.limit_bytes > 0) limit = options.limit_bytes;
  if (options.limit_fraction > 0) {
    if (options.memory_size == 0) {
      return InvalidArgument("bfc '", options.name,
                             "': limit_fraction needs memory_size (the device's memory)");
    }
    limit = std::min(limit, static_cast<uint64_t>(options.limit_fraction *
                                                  static_cast<double>(options.memory_size)));
  }
  if (limit != std::numeric_limits<uint64_t>::max()) {
    limit &= ~(options.alignment - 1);
    if (limit == 0) return InvalidArgument("bfc '", options.name, "': limit rounds down to 0 bytes");
  }
  if (options.initial_region_bytes == 0) options.initial_region_bytes = options.alignment;
  if (options.preallocate && limit == std::numeric_limits<uint64_t>::max()) {
    return InvalidArgument("bfc '", options.name, "': preallocate needs a limit");
  }
  bool preallocate = options.preallocate;
  std::unique_ptr<BfcAllocator> allocator(
      new BfcAllocator(std::move(backing), std::move(options), limit));
  if (preallocate) {
    std::lock_guard<std::mutex> lock(allocator->mu_);
    allocator->next_region_bytes_ = limit;
    KILN_RETURN_IF_ERROR(allocator->Grow(limit));
  }
  return allocator;
}

BfcAllocator::BfcAllocator(std::unique_ptr<SubAllocator> backing, BfcOptions options,
                           uint64_t limit)
    : backing_(std::move(backing)),
      options_(std::move(options)),
      limit_(limit),
      next_region_bytes_(RoundUp(options_.initial_region_bytes, options_.alignment)) {
  stats_.bytes_limit = limit == std::numeric_limits<uint64_t>::max() ? 0 : limit;
}

BfcAllocator::~BfcAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_use_.empty()) {
    KILN_LOG(Warning) << "bfc '" << options_.name << "' destroyed with " << in_use_.size()
                      << " live allocation(s) (" << HumanBytes(stats_.bytes_in_use) << ")";
  }
  for (const Region& region : regions_) {
    Status status = backing_->FreeRegion(reinterpret_cast<void*>(region.base), region.size);
    if (!status.ok()) {
      KILN_LOG(Error) << "bfc '" << options_.name << "': " << status.ToString();
    }
  }
}

BfcAllocator::ChunkId BfcAllocator::NewChunk() {
  ChunkId id;
  if (!free_slots_.empty()) {
    id = free_slots_.back();
    free_slots_.pop_back();
    chunks_[id] = Chunk{};
  } else {
    id = static_cast<ChunkId>(chunks_.size());
    chunks_.emplace_back();
  }
  chunks_[id].live = true;
  return id;
}

void BfcAllocator::DeleteChunk(ChunkId id) {
  chunks_[id] = Chunk{};
  free_slots_.push_back(id);
}

void BfcAllocator::InsertFree(ChunkId id) {
  const Chunk& c = chunks_[id];
  bins_[BinIndex(c.size)].emplace(c.size, c.address, id);
}

void BfcAllocator::RemoveFree(ChunkId id) {
  const Chunk& c = chunks_[id];
  bins_[BinIndex(c.size)].erase({c.size, c.address, id});
}

BfcAllocator::ChunkId BfcAllocator::FindFit(uint64_t rounded) const {
  // Bins hold disjoint, increasing size classes, so the first hit is the best fit overall.
  for (int b = BinIndex(rounded); b < kNumBins; ++b) {
    auto it = bins_[b].lower_bound({rounded, 0, std::numeric_limits<ChunkId>::min()});
    if (it != bins_[b].end()) return std::get<2>(*it);
  }
  return kNoChunk;
}

Status BfcAllocator::Grow(uint64_t rounded) {
  uint64_t remaining = limit_ - stats_.bytes_reserved;
  if (rounded > remaining) {
    ReleaseFreeRegionsLocked();
    remaining = limit_ - stats_.bytes_reserved;
    if (rounded > remaining) {
      return ResourceExhausted("the limit of ", HumanBytes(limit_), " leaves ",
                               HumanBytes(remaining), " to reserve");
    }
  }
  uint64_t size = std::max(rounded, std::min(next_region_bytes_, remaining));
  size &= ~(options_.alignment - 1);
  size = std::max(size, rounded);
  StatusOr<void*> base = backing_->AllocateRegion(size);
  if (!base.ok() && size > rounded) {
    size = rounded;
    base = backing_->AllocateRegion(size);
  }
  if (!base.ok() && ReleaseFreeRegionsLocked() > 0) base = backing_->AllocateRegion(size);
  if (!base.ok()) return base.status();
  uint64_t address = reinterpret_cast<uint64_t>(*base);
  if (address % options_.alignment != 0) {
    Status ignored = backing_->FreeRegion(*base, size);
    (void)ignored;
    return Internal("backing allocator returned region ", Hex(address), " not aligned to ",
                    options_.alignment);
  }
  ChunkId id = NewChunk();
  chunks_[id].address = address;
  chunks_[id].size = size;
  regions_.push_back(Region{address, size, id});
  InsertFree(id);
  stats_.bytes_reserved += size;
  stats_.peak_bytes_reserved = std::max(stats_.peak_bytes_reserved, stats_.bytes_reserved);
  stats_.num_regions = regions_.size();
  if (size >= next_region_bytes_) {
    uint64_t next = next_region_bytes_ * 2;
    if (options_.max_region_bytes > 0) next = std::min(next, options_.max_region_bytes);
    next_region_bytes_ = std::max(next_region_bytes_, RoundUp(next, options_.alignment));
  }
  return OkStatus();
}

StatusOr<DeviceMemory> BfcAllocator::DoAllocate(uint64_t bytes, std::string_view tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > std::numeric_limits<uint64_t>::max() - options_.alignment) {
    return OutOfMemory(bytes, tag, "the request is larger than any address space");
  }
  uint64_t rounded = RoundUp(bytes, options_.alignment);
  ChunkId id = FindFit(rounded);
  if (id == kNoChunk) {
    Status grown = Grow(rounded);
    if (!grown.ok()) return OutOfMemory(bytes, tag, grown.message());
    id = FindFit(rounded);
    if (id == kNoChunk) return Internal("bfc '", options_.name, "': no fit after growing");
  }
  RemoveFree(id);
  if (chunks_[id].size - rounded >= options_.alignment) {
    ChunkId rest = NewChunk();  // may reallocate chunks_: index, don't hold references
    chunks_[rest].address = chunks_[id].address + rounded;
    chunks_[rest].size = chunks_[id].size - rounded;
    chunks_[rest].prev = id;
    chunks_[rest].next = chunks_[id].next;
    if (chunks_[id].next != kNoChunk) chunks_[chunks_[id].next].prev = rest;
    chunks_[id].next = rest;
    chunks_[id].size = rounded;
    InsertFree(rest);
  }
  Chunk& chunk = chunks_[id];
  chunk.in_use = true;
  chunk.requested = bytes;
  chunk.id = next_id_++;
  chunk.tag = std::string(tag);
  in_use_[chunk.address] = id;
  stats_.bytes_in_use += chunk.size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  stats_.num_live_allocs = in_use_.size();
  return DeviceMemory{reinterpret_cast<void*>(chunk.address), bytes};
}

Status BfcAllocator::DoDeallocate(DeviceMemory memory) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(memory.address());
  if (it == in_use_.end()) {
    return InvalidArgument("bfc '", options_.name, "': deallocating ", Hex(memory.address()),
                           ", which is not a live allocation of this allocator (double free?)");
  }
  ChunkId id = it->second;
  in_use_.erase(it);
  stats_.bytes_in_use -= chunks_[id].size;
  stats_.num_live_allocs = in_use_.size();
  chunks_[id].in_use = false;
  chunks_[id].tag.clear();
  // Merge with the next chunk, then let the previous chunk absorb this one.
  ChunkId next = chunks_[id].next;
  if (next != kNoChunk && !chunks_[next].in_use) {
    RemoveFree(next);
    chunks_[id].size += chunks_[next].size;
    chunks_[id].next = chunks_[next].next;
    if (chunks_[next].next != kNoChunk) chunks_[chunks_[next].next].prev = id;
    DeleteChunk(next);
  }
  ChunkId prev = chunks_[id].prev;
  if (prev != kNoChunk && !chunks_[prev].in_use) {
    RemoveFree(prev);
    chunks_[prev].size += chunks_[id].size;
    chunks_[prev].next = chunks_[id].next;
    if (chunks_[id].next != kNoChunk) chunks_[chunks_[id].next].prev = prev;
    DeleteChunk(id);
    id = prev;
  }
  InsertFree(id);
  return OkStatus();
}

uint64_t BfcAllocator::ReleaseFreeRegions() {
  std::lock_guard<std::mutex> lock(mu_);
  return ReleaseFreeRegionsLocked();
}

uint64_t BfcAllocator::ReleaseFreeRegionsLocked() {
  uint64_t released = 0;
  std::vector<Region> kept;
  for (const Region& region : regions_) {
    const Chunk& first = chunks_[region.first];
    if (first.in_use || first.size != region.size) {
      kept.push_back(region);
      continue;
    }
    Status status = backing_->FreeRegion(reinterpret_cast<void*>(region.base), region.size);
    if (!status.ok()) {
      KILN_LOG(Error) << "bfc '" << options_.name << "': releasing a region: " << status.ToString();
      kept.push_back(region);
      continue;
    }
    RemoveFree(region.first);
    DeleteChunk(region.first);
    stats_.bytes_reserved -= region.size;
    released += region.size;
  }
  regions_ = std::move(kept);
  stats_.num_regions = regions_.size();
  return released;
}

uint64_t BfcAllocator::LargestFreeLocked() const {
  for (int b = kNumBins - 1; b >= 0; --b) {
    if (!bins_[b].empty()) return std::get<0>(*bins_[b].rbegin());
  }
  return 0;
}

AllocatorStats BfcAllocator::StatsLocked() const {
  AllocatorStats stats = stats_;
  stats.largest_free_block = LargestFreeLocked();
  uint64_t free_bytes = stats.bytes_reserved - stats.bytes_in_use;
  stats.fragmentation =
      free_bytes == 0 ? 0.0
                      : 1.0 - static_cast<double>(stats.largest_free_block) /
                                  static_cast<double>(free_bytes);
  return stats;
}

std::optional<AllocatorStats> BfcAllocator::GetStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return StatsLocked();
}

std::vector<BfcAllocator::LiveAllocation> BfcAllocator::LargestLiveAllocations(size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LiveAllocation> live;
  live.reserve(in_use_.size());
  for (const auto& [address, id] : in_use_) {
    const Chunk& c = chunks_[id];
    live.push_back(LiveAllocation{c.address, c.size, c.requested, c.id, c.tag});
  }
  std::sort(live.begin(), live.end(), [](const LiveAllocation& a, const LiveAllocation& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.id < b.id;
  });
  if (live.size() > n) live.resize(n);
  return live;
}

Status BfcAllocator::OutOfMemory(uint64_t bytes, std::string_view tag, const std::string& why) {
  ++stats_.num_ooms;
  std::ostringstream os;
  os << "bfc '" << options_.name << "': out of memory allocating " << HumanBytes(bytes);
  if (!tag.empty()) os << " for '" << tag << "'";
  os << ": " << why << ". " << StatsLocked().ToString() << ".";
  // Largest live allocations (mu_ is held: collect inline rather than via the public method).
  std::vector<const Chunk*> live;
  for (const auto& [address, id] : in_use_) live.push_back(&chunks_[id]);
  std::sort(live.begin(), live.end(), [](const Chunk* a, const Chunk* b) {
    return a->size != b->size ? a->size > b->size : a->id < b->id;
  });
  if (!live.empty()) {
    os << " Largest live allocations:";
    size_t n = std::min(live.size(), options_.oom_report_allocations);
    for (size_t i = 0; i < n; ++i) {
      os << (i == 0 ? " " : "; ") << HumanBytes(live[i]->size) << " "
         << (live[i]->tag.empty() ? std::string("(untagged)") : "'" + live[i]->tag + "'")
         << " #" << live[i]->id;
    }
    if (live.size() > n) os << "; and " << live.size() - n << " more";
    os << ".";
  }
  return ResourceExhausted(os.str());
}

Status BfcAllocator::CheckInvariants() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t in_use_bytes = 0, reserved = 0;
  size_t free_chunks = 0, used_chunks = 0;
  for (const Region& region : regions_) {
    reserved += region.size;
    uint64_t address = region.base;
    ChunkId prev = kNoChunk;
    for (ChunkId id = region.first; id != kNoChunk; id = chunks_[id].next) {
      const Chunk& c = chunks_[id];
      if (!c.live) return Internal("chunk ", id, " in region ", Hex(region.base), " is dead");
      if (c.address != address) {
        return Internal("gap or overlap at ", Hex(address), " (chunk starts at ", Hex(c.address),
                        ")");
      }
      if (c.prev != prev) return Internal("chunk ", id, " has a broken prev link");
      if (c.size == 0 || c.size % options_.alignment != 0) {
        return Internal("chunk ", id, " has size ", c.size);
      }
      if (c.in_use) {
        ++used_chunks;
        in_use_bytes += c.size;
        auto it = in_use_.find(c.address);
        if (it == in_use_.end() || it->second != id) {
          return Internal("in-use chunk at ", Hex(c.address), " missing from the address map");
        }
      } else {
        ++free_chunks;
        if (prev != kNoChunk && !chunks_[prev].in_use) {
          return Internal("adjacent free chunks at ", Hex(chunks_[prev].address), " and ",
                          Hex(c.address), " were not merged");
        }
        if (bins_[BinIndex(c.size)].count({c.size, c.address, id}) != 1) {
          return Internal("free chunk at ", Hex(c.address), " is not in bin ", BinIndex(c.size));
        }
      }
      address += c.size;
      prev = id;
    }
    if (address != region.base + region.size) {
      return Internal("chunks of region ", Hex(region.base), " cover ", address - region.base,
                      " of ", region.size, " bytes");
    }
  }
  size_t binned = 0;
  for (const Bin& bin : bins_) binned += bin.size();
  if (binned != free_chunks) return Internal(binned, " binned chunks but ", free_chunks, " free");
  if (used_chunks != in_use_.size()) return Internal("address map size mismatch");
  if (in_use_bytes != stats_.bytes_in_use) return Internal("bytes_in_use mismatch");
  if (reserved != stats_.bytes_reserved) return Internal("bytes_reserved mismatch");
  if (reserved > limit_) return Internal("reserved ", reserved, " exceeds the limit ", limit_);
  return OkStatus();
}

std::string BfcAllocator::DebugString() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  os << "bfc '" << options_.name << "': " << StatsLocked().ToString() << "\n";
  for (const Region& region : regions_) {
    os << "region " << Hex(region.base) << " " << HumanBytes(region.size) << "\n";
    for (ChunkId id = region.first; id != kNoChunk; id = chunks_[id].next) {
      const Chunk& c = chunks_[id];
      os << "  " << Hex(c.address) << " " << c.size << (c.in_use ? " used" : " free");
      if (c.in_use) os << " #" << c.id << (c.tag.empty() ? "" : " '" + c.tag + "'");
      os << "\n";
    }
  }
  return os.str();
}

StatusOr<std::unique_ptr<BfcAllocator>> CreateBfcDeviceAllocator(Device& device,
                                                                  BfcOptions options) {
  const DeviceDescription& d = device.description();
  if (options.memory_size == 0) options.memory_size = d.memory_bytes;
  if (options.name == BfcOptions{}.name) options.name = StrCat("bfc:", d.platform, ":", d.ordinal);
  return BfcAllocator::Create(MakeAllocatorSubAllocator(device.device_allocator()),
                              std::move(options));
}

}  // namespace kiln::runtime
