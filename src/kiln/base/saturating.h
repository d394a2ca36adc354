// int64 arithmetic that clamps to [INT64_MIN, INT64_MAX] instead of overflowing: for sizes and
// counts that only need to compare against a limit (graph sizes, work estimates).
#pragma once

#include <cstdint>
#include <limits>

namespace kiln {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

}  // namespace kiln
