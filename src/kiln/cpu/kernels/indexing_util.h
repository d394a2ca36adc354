// Helpers of the gather and scatter kernels (internal to src/kiln/cpu/kernels).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"

namespace kiln::cpu::internal {

inline bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

inline std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

inline int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Index vectors of an indices array: vector k of batch position b (row-major over the indices'
// dimensions other than index_vector_dim) is element (b / after) * (V * after) + k * after +
// b % after, where `after` is the product of the dimensions after index_vector_dim.
struct IndexReader {
  PrimitiveType type = PrimitiveType::kS32;
  int64_t vector_size = 1;
  int64_t after = 1;
  std::vector<int64_t> batch_dims;

  static StatusOr<IndexReader> Create(const HloInstruction& instr, const Shape& s,
                                      int64_t index_vector_dim) {
    if (!s.IsArray() || !IsIntegralType(s.element_type()))
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": indices must be integers");
    const int64_t rank = s.rank();
    if (index_vector_dim < 0 || index_vector_dim > rank)
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": index_vector_dim out of range");
    IndexReader r;
    r.type = s.element_type();
    r.vector_size = index_vector_dim == rank ? 1 : s.dimensions(index_vector_dim);
    for (int64_t d = 0; d < rank; ++d) {
      if (d == index_vector_dim) continue;
      r.batch_dims.push_back(s.dimensions(d));
      if (d > index_vector_dim) r.after *= s.dimensions(d);
    }
    return r;
  }

  int64_t batch_count() const { return Product(batch_dims); }

  // vector of batch position b into v[0..vector_size).
  void Read(const void* data, int64_t b, int64_t* v) const {
    const int64_t base = (b / after) * (vector_size * after) + b % after;
    for (int64_t k = 0; k < vector_size; ++k) v[k] = Value(data, base + k * after);
  }

  int64_t Value(const void* data, int64_t i) const {
    switch (type) {
      case PrimitiveType::kS8: return static_cast<const int8_t*>(data)[i];
      case PrimitiveType::kS16: return static_cast<const int16_t*>(data)[i];
      case PrimitiveType::kS32: return static_cast<const int32_t*>(data)[i];
      case PrimitiveType::kS64: return static_cast<const int64_t*>(data)[i];
      case PrimitiveType::kU8: return static_cast<const uint8_t*>(data)[i];
      case PrimitiveType::kU16: return static_cast<const uint16_t*>(data)[i];
      case PrimitiveType::kU32: return static_cast<const uint32_t*>(data)[i];
      case PrimitiveType::kU64: {
        const uint64_t u = static_cast<const uint64_t*>(data)[i];
        return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                   ? std::numeric_limits<int64_t>::max()
                   : static_cast<int64_t>(u);
      }
      default: {
        // Sub-byte integers are stored one per byte, sign-extended for signed types.
        const uint8_t u = static_cast<const uint8_t*>(data)[i];
        if (IsSignedIntegralType(type)) {
          const int bits = PrimitiveBitWidth(type);
          return static_cast<int64_t>(static_cast<int8_t>(u << (8 - bits)) >> (8 - bits));
        }
        return u;
      }
    }
  }
};

// Copies n elements of `width` bytes with element strides.
inline void StridedCopy(uint8_t* dst, int64_t dstride, const uint8_t* src, int64_t sstride, int64_t n,
                 int width) {
  auto loop = [&](auto w) {
    constexpr int W = decltype(w)::value;
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * dstride * W, src + i * sstride * W, W);
  };
  if (dstride == 1 && sstride == 1) {
    std::memcpy(dst, src, n * width);
    return;
  }
  switch (width) {
    case 1: loop(std::integral_constant<int, 1>{}); break;
    case 2: loop(std::integral_constant<int, 2>{}); break;
    case 4: loop(std::integral_constant<int, 4>{}); break;
    case 8: loop(std::integral_constant<int, 8>{}); break;
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * dstride * width, src + i * sstride * width, width);
  }
}

}  // namespace kiln::cpu::internal
