// Shape kernels: broadcast, reshape, dynamic-reshape, transpose, slice, concatenate, pad,
// reverse, iota, bitcast, get-dimension-size, set-dimension-size. All but iota move whole
// elements (type-agnostic byte copies through StridedCopy).
#include <charconv>
#include <cstring>
#include <numeric>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/eval_util.h"
#include "kiln/eval/kernels.h"

namespace kiln {
namespace {

using eval_internal::ExpectArray;
using eval_internal::StridedCopy;
using eval_internal::StridesOf;

Status ShapeError(const HloInstruction& instr, std::string_view what) {
  return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": ", what);
}

int64_t ElementWidth(const Shape& s) { return PrimitiveByteWidth(s.element_type()); }

Status ExpectSameType(const HloInstruction& instr, const Literal& l) {
  if (!instr.shape().IsArray() || l.shape().element_type() != instr.shape().element_type())
    return ShapeError(instr, StrCat("operand type ", l.shape().ToString(false),
                                    " differs from the result ", instr.shape().ToString(false)));
  return OkStatus();
}

StatusOr<Literal> EvalBroadcast(const HloInstruction& instr, std::span<const Literal* const> ops,
                                Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
  const auto& map = instr.attrs().dimensions;
  const Shape& out_shape = instr.shape();
  if (static_cast<int64_t>(map.size()) != a.shape().rank())
    return ShapeError(instr, "dimensions= must name one result dimension per operand dimension");
  std::vector<int64_t> in_strides(out_shape.rank(), 0);
  std::vector<int64_t> a_strides = StridesOf(a.shape());
  for (size_t i = 0; i < map.size(); ++i) {
    int64_t d = map[i];
    if (d < 0 || d >= out_shape.rank() || out_shape.dimensions(d) != a.shape().dimensions(i))
      return ShapeError(instr, StrCat("operand dimension ", i, " cannot broadcast to result "
                                      "dimension ", d));
    in_strides[d] = a_strides[i];
  }
  Literal out(out_shape);
  StridedCopy(a.untyped_data(), out.untyped_data(), ElementWidth(out_shape),
              out_shape.dimensions(), in_strides, 0, StridesOf(out_shape), 0);
  return out;
}

// reshape, dynamic-reshape (static sizes), set-dimension-size: the same elements in row-major
// order under new dimensions.
StatusOr<Literal> EvalReshape(const HloInstruction& instr, std::span<const Literal* const> ops,
                              Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
  Literal out(instr.shape());
  if (out.element_count() != a.element_count())
    return ShapeError(instr, StrCat("cannot reshape ", a.shape().ToString(false), " to ",
                                    instr.shape().ToString(false)));
  if (a.size_bytes() > 0)  // empty: no data pointers, and memcpy of null is undefined (UBSan)
    std::memcpy(out.untyped_data(), a.untyped_data(), a.size_bytes());
  return out;
}

StatusOr<Literal> EvalTranspose(const HloInstruction& instr, std::span<const Literal* const> ops,
                                Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
  const auto& perm = instr.attrs().dimensions;
  const int64_t rank = a.shape().rank();
  if (static_cast<int64_t>(perm.size()) != rank || instr.shape().rank() != rank)
    return ShapeError(instr, "dimensions= must be a permutation of the operand's dimensions");
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> a_strides = StridesOf(a.shape()), in_strides(rank);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= rank || seen[p] || a.shape().dimensions(p) != instr.shape().dimensions(i))
      return ShapeError(instr, "dimensions= is not a permutation matching the result shape");
    seen[p] = true;
    in_strides[i] = a_strides[p];
  }
  Literal out(instr.shape());
  StridedCopy(a.untyped_data(), out.untyped_data(), ElementWidth(instr.shape()),
              instr.shape().dimensions(), in_strides, 0, StridesOf(instr.shape()), 0);
  return out;
}

StatusOr<Literal> EvalSlice(const HloInstruction& instr, std::span<const Literal* const> ops,
                            Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
  const auto& slice = instr.attrs().slice;
  const int64_t rank = a.shape().rank();
  if (static_cast<int64_t>(slice.size()) != rank || instr.shape().rank() != rank)
    return ShapeError(instr, "slice= must have one range per dimension");
  std::vector<int64_t> a_strides = StridesOf(a.shape()), in_strides(rank);
  int64_t base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    const SliceDimension& s = slice[d];
    int64_t dim = a.shape().dimensions(d);
    if (s.stride <= 0 || s.start < 0 || s.limit > dim || s.start > s.limit)
      return ShapeError(instr, StrCat("slice range [", s.start, ":", s.limit, ":", s.stride,
                                      "] is invalid for dimension size ", dim));
    int64_t n = (s.limit - s.start + s.stride - 1) / s.stride;
    if (n != instr.shape().dimensions(d))
      return ShapeError(instr, StrCat("slice of dimension ", d, " has ", n,
                                      " elements, the result has ", instr.shape().dimensions(d)));
    base += s.start * a_strides[d];
    in_strides[d] = s.stride * a_strides[d];
  }
  Literal out(instr.shape());
  StridedCopy(a.untyped_data(), out.untyped_data(), ElementWidth(instr.shape()),
              instr.shape().dimensions(), in_strides, base, StridesOf(instr.shape()), 0);
  return out;
}

StatusOr<Literal> EvalConcatenate(const HloInstruction& instr,
                                  std::span<const Literal* const> ops, Evaluator&) {
  if (instr.attrs().dimensions.size() != 1) return ShapeError(instr, "needs one dimension");
  const int64_t dim = instr.attrs().dimensions[0];
  const Shape& out_shape = instr.shape();
  if (!out_shape.IsArray() || dim < 0 || dim >= out_shape.rank())
    return ShapeError(instr, "concatenate dimension out of range");
  Literal out(out_shape);
  std::vector<int64_t> out_strides = StridesOf(out_shape);
  int64_t offset = 0;
  for (size_t k = 0; k < ops.size(); ++k) {
    const Literal& a = *ops[k];
    KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
    KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
    if (a.shape().rank() != out_shape.rank())
      return ShapeError(instr, "operand ranks differ from the result");
    for (int64_t d = 0; d < out_shape.rank(); ++d)
      if (d != dim && a.shape().dimensions(d) != out_shape.dimensions(d))
        return ShapeError(instr, StrCat("operand ", k, " ", a.shape().ToString(false),
                                        " does not fit the result ", out_shape.ToString(false)));
    if (offset + a.shape().dimensions(dim) > out_shape.dimensions(dim))
      return ShapeError(instr, "operands are larger than the result");
    StridedCopy(a.untyped_data(), out.untyped_data(), ElementWidth(out_shape),
                a.shape().dimensions(), StridesOf(a.shape()), 0, out_strides,
                offset * out_strides[dim]);
    offset += a.shape().dimensions(dim);
  }
  if (offset != out_shape.dimensions(dim)) return ShapeError(instr, "operands do not fill the result");
  return out;
}

// pad(operand, value): result[low + i * (interior + 1)] = operand[i] where in range; negative
// low/high crop.
StatusOr<Literal> EvalPad(const HloInstruction& instr, std::span<const Literal* const> ops,
                          Evaluator&) {
  const Literal& a = *ops[0];
  const Literal& v = *ops[1];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, v));
  if (v.element_count() != 1) return ShapeError(instr, "the padding value must be a scalar");
  const auto& pad = instr.attrs().padding;
  const int64_t rank = a.shape().rank();
  const Shape& out_shape = instr.shape();
  if (static_cast<int64_t>(pad.size()) != rank || out_shape.rank() != rank)
    return ShapeError(instr, "padding= must have one entry per dimension");
  Literal out(out_shape);
  const int64_t w = ElementWidth(out_shape);
  const int64_t n = out.element_count();
  for (int64_t i = 0; i < n; ++i) std::memcpy(out.untyped_data() + i * w, v.untyped_data(), w);
  std::vector<int64_t> a_strides = StridesOf(a.shape()), o_strides = StridesOf(out_shape);
  std::vector<int64_t> count(rank), in_strides(rank), out_step(rank);
  int64_t in_base = 0, out_base = 0;
  for (int64_t d = 0; d < rank; ++d) {
    const PaddingDimension& p = pad[d];
    int64_t in_dim = a.shape().dimensions(d), out_dim = out_shape.dimensions(d);
    if (p.interior < 0) return ShapeError(instr, "negative interior padding");
    int64_t expect = p.low + p.high + in_dim + (in_dim > 0 ? (in_dim - 1) * p.interior : 0);
    if (expect != out_dim)
      return ShapeError(instr, StrCat("padded dimension ", d, " has size ", expect,
                                      ", the result has ", out_dim));
    const int64_t step = p.interior + 1;
    // Operand indices i with 0 <= low + i*step < out_dim.
    int64_t first = p.low >= 0 ? 0 : (-p.low + step - 1) / step;
    int64_t last = out_dim - 1 - p.low < 0 ? -1 : std::min(in_dim - 1, (out_dim - 1 - p.low) / step);
    count[d] = std::max<int64_t>(0, last - first + 1);
    in_base += first * a_strides[d];
    out_base += (p.low + first * step) * o_strides[d];
    in_strides[d] = a_strides[d];
    out_step[d] = step * o_strides[d];
  }
  StridedCopy(a.untyped_data(), out.untyped_data(), w, count, in_strides, in_base, out_step,
              out_base);
  return out;
}

StatusOr<Literal> EvalReverse(const HloInstruction& instr, std::span<const Literal* const> ops,
                              Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
  if (a.shape().dimensions() != instr.shape().dimensions())
    return ShapeError(instr, "result dimensions differ from the operand's");
  std::vector<int64_t> strides = StridesOf(a.shape());
  int64_t base = 0;
  for (int64_t d : instr.attrs().dimensions) {
    if (d < 0 || d >= a.shape().rank()) return ShapeError(instr, "dimension out of range");
    if (a.shape().dimensions(d) == 0) continue;
    base += (a.shape().dimensions(d) - 1) * strides[d];
    strides[d] = -strides[d];
  }
  Literal out(instr.shape());
  StridedCopy(a.untyped_data(), out.untyped_data(), ElementWidth(instr.shape()),
              instr.shape().dimensions(), strides, base, StridesOf(instr.shape()), 0);
  return out;
}

// An attribute kept verbatim (attrs().extra) as an integer list "{a,b,...}".
StatusOr<std::vector<int64_t>> ExtraIntList(const HloInstruction& instr, std::string_view name) {
  for (const auto& [key, value] : instr.attrs().extra) {
    if (key != name) continue;
    std::string_view v = value;
    if (v.size() < 2 || v.front() != '{' || v.back() != '}')
      return ShapeError(instr, StrCat(name, "= must be a list of integers, got ", value));
    std::vector<int64_t> out;
    for (std::string_view part : StrSplit(v.substr(1, v.size() - 2), ',')) {
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      if (part.empty()) continue;
      int64_t x = 0;
      auto r = std::from_chars(part.data(), part.data() + part.size(), x);
      if (r.ec != std::errc() || r.ptr != part.data() + part.size())
        return ShapeError(instr, StrCat(name, "= must be a list of integers, got ", value));
      out.push_back(x);
    }
    return out;
  }
  return ShapeError(instr, StrCat("has no ", name, "="));
}

// shuffle(x), dimensions={d...}, mode=rotate, shifts={s...}: a rotation of each listed
// dimension, result[.., i, ..] = x[.., (i + s) mod n, ..] (XLA's constant folding of
// shuffle({1,2,3,4,5}) with shifts={2} gives {3,4,5,1,2}). Other modes are refused.
StatusOr<Literal> EvalShuffle(const HloInstruction& instr, std::span<const Literal* const> ops,
                              Evaluator&) {
  if (ops.size() != 1) return ShapeError(instr, "takes one operand");
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameType(instr, a));
  if (a.shape().dimensions() != instr.shape().dimensions())
    return ShapeError(instr, "result dimensions differ from the operand's");
  std::string mode;
  for (const auto& [key, value] : instr.attrs().extra)
    if (key == "mode") mode = value;
  if (mode != "rotate") return UnsupportedInstruction(instr, StrCat("shuffle mode=", mode.empty() ? "(none)" : mode));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ExtraIntList(instr, "dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shifts, ExtraIntList(instr, "shifts"));
  if (dims.size() != shifts.size()) return ShapeError(instr, "dimensions and shifts differ in length");
  const Shape& s = a.shape();
  std::vector<int64_t> shift(s.rank(), 0);
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] < 0 || dims[k] >= s.rank()) return ShapeError(instr, "dimension out of range");
    const int64_t n = s.dimensions(dims[k]);
    if (n > 0) shift[dims[k]] = ((shifts[k] % n) + n) % n;
  }
  Literal out(instr.shape());
  const int64_t w = ElementWidth(s);
  const std::vector<int64_t> strides = StridesOf(s);
  std::vector<int64_t> idx(s.rank(), 0);
  const uint8_t* src = a.untyped_data();
  uint8_t* dst = out.untyped_data();
  for (int64_t e = 0; e < out.element_count(); ++e) {
    int64_t lin = 0;
    for (int64_t d = 0; d < s.rank(); ++d) {
      int64_t i = idx[d] + shift[d];
      if (i >= s.dimensions(d)) i -= s.dimensions(d);
      lin += i * strides[d];
    }
    std::memcpy(dst + e * w, src + lin * w, w);
    eval_internal::NextRowMajorIndex(idx, s.dimensions());
  }
  return out;
}

template <class T>
T IotaValue(int64_t v) {
  using namespace eval_internal;  // NOLINT
  if constexpr (kIsPred<T>) return v != 0;
  else if constexpr (kIsInt<T>) return FromU64<T>(static_cast<uint64_t>(v));
  else if constexpr (kIsComplex<T>) return T(static_cast<typename T::value_type>(v), 0);
  else if constexpr (kIsMiniFloat<T>) return T(static_cast<double>(v));
  else return static_cast<T>(v);
}

StatusOr<Literal> EvalIota(const HloInstruction& instr, std::span<const Literal* const>,
                           Evaluator&) {
  const Shape& s = instr.shape();
  if (!s.IsArray()) return ShapeError(instr, "must produce an array");
  const int64_t dim = instr.attrs().iota_dimension;
  if (s.rank() == 0 || dim < 0 || dim >= s.rank()) return ShapeError(instr, "iota_dimension out of range");
  Literal out(s);
  const int64_t n = out.element_count();
  const int64_t stride = StridesOf(s)[dim];
  const int64_t size = s.dimensions(dim);
  ArrayTypeSwitch(s.element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    T* o = out.data<T>().data();
    for (int64_t i = 0; i < n; ++i) o[i] = IotaValue<T>((i / stride) % size);
  });
  return out;
}

// The physical order of a layout: dimensions major to minor; default when absent or invalid.
std::vector<int64_t> MajorToMinor(const Shape& s) {
  const int64_t rank = s.rank();
  std::vector<int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  if (!s.has_layout()) return order;
  const auto& m2m = s.layout().minor_to_major();
  if (static_cast<int64_t>(m2m.size()) != rank) return order;
  std::vector<bool> seen(rank, false);
  for (int64_t d : m2m) {
    if (d < 0 || d >= rank || seen[d]) return order;
    seen[d] = true;
  }
  for (int64_t i = 0; i < rank; ++i) order[i] = m2m[rank - 1 - i];
  return order;
}

bool IsIdentityOrder(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// bitcast: reinterprets the operand's physical buffer (in its layout) as the result shape (in
// its layout). Tiling and other layout attributes are not modelled: only minor_to_major.
StatusOr<Literal> EvalBitcast(const HloInstruction& instr, std::span<const Literal* const> ops,
                              Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  const Shape& rs = instr.shape();
  if (!rs.IsArray()) return ShapeError(instr, "must produce an array");
  Literal out(rs);
  const PrimitiveType in_type = a.shape().element_type(), out_type = rs.element_type();
  const int in_bits = eval_internal::BitcastWidth(in_type), out_bits = eval_internal::BitcastWidth(out_type);
  if (in_type != out_type && (in_bits % 8 != 0 || out_bits % 8 != 0)) {
    // A sub-byte side: XLA's bitcast of a packed array (layout E(n)), e.g. s4[16]{0:E(4)} ->
    // s8[8]: the same bits, elements packed little-endian. Only default (row-major) layouts.
    // The E(n) itself is not required (the compiled backends drop layouts before their
    // evaluator kernels run): the element counts times the widths must match.
    const Shape& in_shape = instr.operand(0)->shape();
    if (a.element_count() * in_bits != out.element_count() * out_bits)
      return ShapeError(instr, StrCat("cannot bitcast ", a.shape().ToString(false), " to ",
                                      rs.ToString(false), " (bit sizes differ)"));
    if (!IsIdentityOrder(MajorToMinor(in_shape)) || !IsIdentityOrder(MajorToMinor(rs)))
      return UnsupportedInstruction(instr, "sub-byte bitcast with a non-default layout");
    eval_internal::UnpackBits(eval_internal::PackBits(a), out);
    return out;
  }
  if (out.size_bytes() != a.size_bytes() ||
      PrimitiveByteWidth(rs.element_type()) != PrimitiveByteWidth(a.shape().element_type()))
    return ShapeError(instr, StrCat("cannot bitcast ", a.shape().ToString(false), " to ",
                                    rs.ToString(false), " (sizes differ)"));
  const int64_t w = ElementWidth(rs);
  // Operand layout: as the HLO declares it for the operand.
  const Shape& in_shape = instr.operand(0)->shape();
  std::vector<int64_t> in_order = MajorToMinor(in_shape.rank() == a.shape().rank() ? in_shape : a.shape());
  std::vector<int64_t> out_order = MajorToMinor(rs);
  std::vector<uint8_t> physical;
  const uint8_t* phys = a.untyped_data();
  if (!IsIdentityOrder(in_order)) {
    // Logical -> physical: iterate physical dims, reading logical strides.
    physical.resize(a.size_bytes());
    std::vector<int64_t> dims, strides;
    std::vector<int64_t> ls = StridesOf(a.shape());
    for (int64_t d : in_order) {
      dims.push_back(a.shape().dimensions(d));
      strides.push_back(ls[d]);
    }
    StridedCopy(a.untyped_data(), physical.data(), w, dims, strides, 0, RowMajorStrides(dims), 0);
    phys = physical.data();
  }
  if (IsIdentityOrder(out_order)) {
    std::memcpy(out.untyped_data(), phys, out.size_bytes());
    return out;
  }
  // Physical -> result logical: a result dimension's stride is its stride in physical order.
  std::vector<int64_t> phys_dims;
  for (int64_t d : out_order) phys_dims.push_back(rs.dimensions(d));
  std::vector<int64_t> ps = RowMajorStrides(phys_dims), in_strides(rs.rank());
  for (size_t k = 0; k < out_order.size(); ++k) in_strides[out_order[k]] = ps[k];
  StridedCopy(phys, out.untyped_data(), w, rs.dimensions(), in_strides, 0, StridesOf(rs), 0);
  return out;
}

StatusOr<Literal> EvalGetDimensionSize(const HloInstruction& instr,
                                       std::span<const Literal* const> ops, Evaluator& e) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  if (instr.attrs().dimensions.size() != 1) return ShapeError(instr, "needs one dimension");
  int64_t d = instr.attrs().dimensions[0];
  if (d < 0 || d >= a.shape().rank()) return ShapeError(instr, "dimension out of range");
  if (!instr.shape().IsArray() || instr.shape().rank() != 0)
    return ShapeError(instr, "must produce a scalar");
  Literal out(instr.shape());
  // A dynamic dimension's runtime size (Note [Dynamic sizes] in dynamic_shapes.h).
  int64_t size = a.shape().dimensions(d);
  if (instr.operand_count() == 1 && instr.operand(0)->shape().IsArray() &&
      instr.operand(0)->shape().rank() == a.shape().rank() &&
      instr.operand(0)->shape().is_dynamic_dimension(d)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, e.DynamicSizes(*instr.operand(0)));
    size = sizes[d];
  }
  out.SetFromInt64(0, size);
  return out;
}

}  // namespace

void RegisterShapeKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kBroadcast, EvalBroadcast);
  r.Register(HloOpcode::kReshape, EvalReshape);
  r.Register(HloOpcode::kDynamicReshape, EvalReshape);
  r.Register(HloOpcode::kSetDimensionSize, EvalReshape);
  r.Register(HloOpcode::kTranspose, EvalTranspose);
  r.Register(HloOpcode::kSlice, EvalSlice);
  r.Register(HloOpcode::kConcatenate, EvalConcatenate);
  r.Register(HloOpcode::kPad, EvalPad);
  r.Register(HloOpcode::kReverse, EvalReverse);
  r.Register(HloOpcode::kShuffle, EvalShuffle);
  r.Register(HloOpcode::kIota, EvalIota);
  r.Register(HloOpcode::kBitcast, EvalBitcast);
  r.Register(HloOpcode::kGetDimensionSize, EvalGetDimensionSize);
}

}  // namespace kiln
