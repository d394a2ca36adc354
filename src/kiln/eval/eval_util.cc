#include "kiln/eval/eval_util.h"

#include <algorithm>

namespace kiln::eval_internal {
namespace {

template <int W>
void CopyRow(const uint8_t* in, int64_t in_stride, uint8_t* out, int64_t out_stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out, in, W);
    in += in_stride * W;
    out += out_stride * W;
  }
}

void CopyRowAny(const uint8_t* in, int64_t in_stride, uint8_t* out, int64_t out_stride, int64_t n,
                int64_t width) {
  switch (width) {
    case 1: return CopyRow<1>(in, in_stride, out, out_stride, n);
    case 2: return CopyRow<2>(in, in_stride, out, out_stride, n);
    case 4: return CopyRow<4>(in, in_stride, out, out_stride, n);
    case 8: return CopyRow<8>(in, in_stride, out, out_stride, n);
    case 16: return CopyRow<16>(in, in_stride, out, out_stride, n);
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(out + i * out_stride * width, in + i * in_stride * width, width);
  }
}

}  // namespace

void StridedCopy(const uint8_t* in, uint8_t* out, int64_t width, std::span<const int64_t> dims,
                 std::span<const int64_t> in_strides, int64_t in_base,
                 std::span<const int64_t> out_strides, int64_t out_base) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  for (int64_t d : dims)
    if (d <= 0) return;
  if (rank == 0) {
    std::memcpy(out + out_base * width, in + in_base * width, width);
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t in_inner_stride = in_strides[rank - 1];
  const int64_t out_inner_stride = out_strides[rank - 1];
  // Contiguous on both sides: one memcpy per row.
  const bool contiguous = in_inner_stride == 1 && out_inner_stride == 1;
  std::vector<int64_t> idx(rank > 1 ? rank - 1 : 0, 0);
  int64_t in_off = in_base, out_off = out_base;
  while (true) {
    if (contiguous) {
      std::memcpy(out + out_off * width, in + in_off * width, inner * width);
    } else {
      CopyRowAny(in + in_off * width, in_inner_stride, out + out_off * width, out_inner_stride,
                 inner, width);
    }
    // Advance the odometer over the outer dimensions.
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      in_off += in_strides[d];
      out_off += out_strides[d];
      if (idx[d] < dims[d]) break;
      in_off -= in_strides[d] * dims[d];
      out_off -= out_strides[d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

Status ExpectArray(const Literal& l, const HloInstruction& instr, std::string_view what) {
  if (!l.shape().IsArray())
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": ", what,
                           " must be an array, got ", l.shape().ToString(false));
  return OkStatus();
}

int64_t ClampedIndex(const Literal& index, int64_t element, int64_t lo, int64_t hi) {
  PrimitiveType t = index.shape().element_type();
  if (IsUnsignedIntegralType(t)) {
    uint64_t v = ArrayTypeSwitch(t, [&](auto tag) -> uint64_t {
      using T = NativeTypeOf<decltype(tag)::value>;
      if constexpr (kIsInt<T>) return IntBitsOf(index.data<T>()[element]);
      else return 0;
    });
    if (hi < lo) return lo;
    if (lo >= 0 && v < static_cast<uint64_t>(lo)) return lo;
    if (v > static_cast<uint64_t>(hi)) return hi;
    return static_cast<int64_t>(v);
  }
  int64_t v = index.GetAsInt64(element);
  return std::max(lo, std::min(hi, v));
}

}  // namespace kiln::eval_internal
