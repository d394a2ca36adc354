#include "kiln/cpu/thunk.h"

#include <algorithm>
#include <cstring>

#include "kiln/base/strings.h"

namespace kiln::cpu {

std::string_view ThunkKindName(Thunk::Kind kind) {
  switch (kind) {
    case Thunk::Kind::kKernel: return "kernel";
    case Thunk::Kind::kRowTiles: return "row-tiles";
    case Thunk::Kind::kCopy: return "copy";
    case Thunk::Kind::kWhile: return "while";
    case Thunk::Kind::kConditional: return "conditional";
    case Thunk::Kind::kCall: return "call";
  }
  return "?";
}

std::string Thunk::ToString() const {
  std::string s = StrCat(ThunkKindName(kind_), " %", name_);
  if (cost_ != INT64_MAX) s += StrCat(" cost ", cost_);
  return s;
}

void CopyBytes(void* dst, const void* src, int64_t size, ThreadPool* pool) {
  if (dst == src || size <= 0) return;
  constexpr int64_t kChunk = int64_t{1} << 20;
  if (!pool || size < 4 * kChunk) {
    std::memcpy(dst, src, static_cast<size_t>(size));
    return;
  }
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  pool->ParallelFor((size + kChunk - 1) / kChunk, 1, [&](int64_t begin, int64_t end) {
    int64_t lo = begin * kChunk, hi = std::min(size, end * kChunk);
    std::memcpy(d + lo, s + lo, static_cast<size_t>(hi - lo));
  });
}

}  // namespace kiln::cpu
