#include "kiln/autotune/redzone_allocator.h"

#include <algorithm>
#include <cstring>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"

namespace kiln::autotune {

std::string RedzoneDamage::ToString() const {
  return StrCat(buffer, ": ", bytes_damaged, " byte", bytes_damaged == 1 ? "" : "s", " written ",
                rear ? StrCat(offset, " bytes past the end") : StrCat(offset, " bytes before the start"),
                " (first damaged byte)");
}

RedzoneAllocator::RedzoneAllocator(runtime::Allocator& allocator, runtime::Stream* stream,
                                   const RedzoneOptions& options)
    : allocator_(allocator), stream_(stream), options_(options) {
  uint64_t align = std::max<uint64_t>(allocator.alignment(), 1);
  front_ = (options.redzone_bytes + align - 1) / align * align;
}

RedzoneAllocator::~RedzoneAllocator() {
  // Pending fills or candidate launches may still use the memory.
  if (stream_ != nullptr) (void)stream_->Synchronize();
  for (const Buffer& b : buffers_) {
    Status s = allocator_.Deallocate(b.whole);
    if (!s.ok()) {
      KILN_LOG(Warning) << "autotune: freeing " << b.tag << ": " << s.message();
    }
  }
}

StatusOr<runtime::DeviceMemory> RedzoneAllocator::Allocate(uint64_t bytes, std::string tag) {
  if (bytes == 0) return runtime::DeviceMemory{};
  uint64_t align = std::max<uint64_t>(allocator_.alignment(), 1);
  uint64_t slack = (align - bytes % align) % align;
  uint64_t total = front_ + bytes + slack + front_;
  KILN_ASSIGN_OR_RETURN(runtime::DeviceMemory whole,
                        allocator_.Allocate(total, StrCat("autotune ", tag)));
  Status fill = stream_->Memset8(whole, options_.pattern);
  if (!fill.ok()) {
    (void)allocator_.Deallocate(whole);
    return fill;
  }
  buffers_.push_back(Buffer{whole, bytes, std::move(tag)});
  return whole.Slice(front_, bytes);
}

Status RedzoneAllocator::Free(runtime::DeviceMemory user) {
  if (user.is_null()) return OkStatus();
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (static_cast<char*>(buffers_[i].whole.ptr) + front_ == user.ptr) {
      KILN_RETURN_IF_ERROR(stream_->Synchronize());
      Status s = allocator_.Deallocate(buffers_[i].whole);
      buffers_.erase(buffers_.begin() + static_cast<std::ptrdiff_t>(i));
      return s;
    }
  }
  return InvalidArgument("autotune: freeing a buffer the redzone allocator did not hand out");
}

StatusOr<std::vector<RedzoneDamage>> RedzoneAllocator::CheckAndRefill() {
  struct Zone {
    const Buffer* buffer;
    bool rear;
    runtime::DeviceMemory memory;
    std::vector<uint8_t>* host;
  };
  std::vector<Zone> zones;
  zones.reserve(buffers_.size() * 2);
  for (const Buffer& b : buffers_) {
    uint64_t rear_start = front_ + b.user_bytes;
    zones.push_back({&b, false, b.whole.Slice(0, front_), nullptr});
    zones.push_back({&b, true, b.whole.Slice(rear_start, b.whole.size - rear_start), nullptr});
  }
  // Host copies are kept between checks: fresh multi-MiB vectors per candidate cost more in
  // page faults than the copies themselves. Enqueue every read, then wait once.
  if (staging_.size() < zones.size()) staging_.resize(zones.size());
  for (size_t i = 0; i < zones.size(); ++i) {
    Zone& z = zones[i];
    z.host = &staging_[i];
    if (z.host->size() < z.memory.size) z.host->resize(z.memory.size);
    KILN_RETURN_IF_ERROR(stream_->MemcpyDeviceToHost(z.host->data(), z.memory, z.memory.size));
  }
  KILN_RETURN_IF_ERROR(stream_->Synchronize());

  std::vector<RedzoneDamage> damage;
  const uint8_t p = options_.pattern;
  // Intact zones are the common case: compare in blocks with memcmp (fast), and look at
  // single bytes only in a block that differs.
  constexpr size_t kBlock = 4096;
  std::vector<uint8_t> clean(kBlock, p);
  for (Zone& z : zones) {
    auto bad = [p](uint8_t v) { return v != p; };
    const uint8_t* begin = z.host->data();
    const uint8_t* end = begin + z.memory.size;
    const uint8_t* at = begin;
    while (at < end) {
      size_t n = std::min<size_t>(kBlock, end - at);
      if (std::memcmp(at, clean.data(), n) != 0) break;
      at += n;
    }
    if (at >= end) continue;
    const uint8_t* first = std::find_if(at, end, bad);
    if (first == end) continue;
    RedzoneDamage d;
    d.buffer = z.buffer->tag;
    d.rear = z.rear;
    d.bytes_damaged = static_cast<uint64_t>(std::count_if(first, end, bad));
    if (z.rear) {
      d.offset = static_cast<uint64_t>(first - begin);
    } else {
      // The write nearest the buffer is the telling one: report the last damaged byte.
      const uint8_t* last = end - 1;
      while (!bad(*last)) --last;
      d.offset = static_cast<uint64_t>(end - last);
    }
    damage.push_back(std::move(d));
    KILN_RETURN_IF_ERROR(stream_->Memset8(z.memory, p));
  }
  if (!damage.empty()) KILN_RETURN_IF_ERROR(stream_->Synchronize());
  return damage;
}

}  // namespace kiln::autotune
