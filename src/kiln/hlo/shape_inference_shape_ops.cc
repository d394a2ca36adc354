// Shape inference for ops that move or reshape data: broadcast, reshape, transpose, slice,
// dynamic-slice, dynamic-update-slice, concatenate, pad, reverse, iota, tuple,
// get-tuple-element, get/set-dimension-size, bitcast.
#include "kiln/hlo/shape_inference.h"
#include "kiln/base/saturating.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

// Checks dynamic-slice / dynamic-update-slice start indices: either one integer scalar per
// operand dimension (all of one type), or the legacy single rank-1 integer array.
Status CheckStartIndices(std::string_view op, const Shape& operand,
                         const std::vector<const Shape*>& indices) {
  if (indices.size() == 1 && indices[0]->IsArray() && indices[0]->rank() == 1) {
    if (!IsIntegralType(indices[0]->element_type()))
      return InvalidArgument(op, " start indices must be integers, found ", Str(*indices[0]));
    if (indices[0]->dimensions(0) != operand.rank())
      return InvalidArgument(op, " start index vector ", Str(*indices[0]),
                             " must have one entry per operand dimension (rank ",
                             operand.rank(), ")");
    return OkStatus();
  }
  if (static_cast<int64_t>(indices.size()) != operand.rank())
    return InvalidArgument(op, " has ", indices.size(), " start indices for an operand of rank ",
                           operand.rank(), " (", Str(operand), ")");
  for (const Shape* s : indices) {
    if (!s->IsScalar() || !IsIntegralType(s->element_type()))
      return InvalidArgument(op, " start indices must be integer scalars, found ", Str(*s));
    if (s->element_type() != indices[0]->element_type())
      return InvalidArgument(op, " start indices must all have one type, found ",
                             Str(*indices[0]), " and ", Str(*s));
  }
  return OkStatus();
}

}  // namespace

StatusOr<Shape> InferBroadcastShape(const Shape& operand, const std::vector<int64_t>& output_dims,
                                    const std::vector<int64_t>& dimensions) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of broadcast"));
  const int64_t out_rank = static_cast<int64_t>(output_dims.size());
  if (static_cast<int64_t>(dimensions.size()) != operand.rank())
    return InvalidArgument("broadcast dimensions=", DimsStr(dimensions), " must have one entry per ",
                           "operand dimension (operand ", Str(operand), ")");
  KILN_RETURN_IF_ERROR(CheckDimsInRangeUnique(dimensions, out_rank, "broadcast dimensions="));
  for (int64_t d : output_dims)
    if (d < 0) return InvalidArgument("broadcast to a negative dimension size ", d);
  Shape result = MakeArray(operand.element_type(), output_dims);
  KILN_RETURN_IF_ERROR(CheckShapeSize(result));
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const int64_t o = dimensions[i];
    if (output_dims[o] != operand.dimensions(i))
      return InvalidArgument("broadcast operand dimension ", i, " (size ", operand.dimensions(i),
                             ") maps to result dimension ", o, " of size ", output_dims[o],
                             "; sizes must be equal");
    if (operand.is_dynamic_dimension(i)) result.set_dynamic_dimension(o, true);
  }
  return result;
}

StatusOr<Shape> InferReshapeShape(const Shape& operand, const std::vector<int64_t>& new_dims) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of reshape"));
  Shape result = MakeArray(operand.element_type(), new_dims);
  for (int64_t d : new_dims)
    if (d < 0) return InvalidArgument("reshape to a negative dimension size ", d);
  KILN_RETURN_IF_ERROR(CheckShapeSize(result));  // element counts below must not saturate
  if (result.num_elements() != operand.num_elements())
    return InvalidArgument("reshape changes the element count: ", Str(operand), " has ",
                           operand.num_elements(), " elements, ", Str(result), " has ",
                           result.num_elements());
  return result;
}

StatusOr<Shape> InferDynamicReshapeShape(const Shape& operand,
                                         const std::vector<const Shape*>& dim_sizes,
                                         const Shape& declared) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of dynamic-reshape"));
  KILN_RETURN_IF_ERROR(ExpectArray(declared, "the result of dynamic-reshape"));
  if (static_cast<int64_t>(dim_sizes.size()) != declared.rank())
    return InvalidArgument("dynamic-reshape needs one size operand per result dimension: ",
                           dim_sizes.size(), " sizes for ", Str(declared));
  for (const Shape* s : dim_sizes)
    if (!s->IsScalar() || s->element_type() != PrimitiveType::kS32)
      return InvalidArgument("dynamic-reshape sizes must be s32 scalars, found ", Str(*s));
  Shape result = WithType(declared, operand.element_type());
  if (result.num_elements() != operand.num_elements())
    return InvalidArgument("dynamic-reshape changes the element count (bounds): ", Str(operand),
                           " to ", Str(declared));
  return result;
}

StatusOr<Shape> InferTransposeShape(const Shape& operand, const std::vector<int64_t>& perm) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of transpose"));
  if (!IsPermutation(perm, operand.rank()))
    return InvalidArgument("transpose dimensions=", DimsStr(perm),
                           " is not a permutation of the operand dimensions (", Str(operand), ")");
  Shape result = MakeArray(operand.element_type(), {});
  for (int64_t p : perm) result.add_dimension(operand.dimensions(p), operand.is_dynamic_dimension(p));
  return result;
}

StatusOr<Shape> InferSliceShape(const Shape& operand, const std::vector<SliceDimension>& slice) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of slice"));
  if (static_cast<int64_t>(slice.size()) != operand.rank())
    return InvalidArgument("slice has ", slice.size(), " ranges for an operand of rank ",
                           operand.rank(), " (", Str(operand), ")");
  Shape result = MakeArray(operand.element_type(), {});
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const SliceDimension& s = slice[i];
    if (s.start < 0 || s.start > s.limit || s.limit > operand.dimensions(i))
      return InvalidArgument("slice [", s.start, ":", s.limit, "] of dimension ", i,
                             " is out of range [0:", operand.dimensions(i), "] for ", Str(operand));
    if (s.stride <= 0)
      return InvalidArgument("slice stride ", s.stride, " of dimension ", i, " must be positive");
    // limit - start is in [0, dimension]; start + stride - 1 could overflow for a huge stride.
    const int64_t extent = s.limit - s.start;
    const int64_t size = extent / s.stride + (extent % s.stride != 0);
    result.add_dimension(size, size != 1 && operand.is_dynamic_dimension(i));
  }
  return result;
}

StatusOr<Shape> InferDynamicSliceShape(const Shape& operand,
                                       const std::vector<const Shape*>& start_indices,
                                       const std::vector<int64_t>& slice_sizes) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of dynamic-slice"));
  KILN_RETURN_IF_ERROR(CheckStartIndices("dynamic-slice", operand, start_indices));
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank())
    return InvalidArgument("dynamic_slice_sizes=", DimsStr(slice_sizes),
                           " must have one entry per operand dimension (", Str(operand), ")");
  for (int64_t i = 0; i < operand.rank(); ++i)
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand.dimensions(i))
      return InvalidArgument("dynamic-slice size ", slice_sizes[i], " of dimension ", i,
                             " is out of range [0, ", operand.dimensions(i), "] for ",
                             Str(operand));
  return MakeArray(operand.element_type(), slice_sizes);
}

StatusOr<Shape> InferDynamicUpdateSliceShape(const Shape& operand, const Shape& update,
                                             const std::vector<const Shape*>& start_indices) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of dynamic-update-slice"));
  KILN_RETURN_IF_ERROR(ExpectArray(update, "the update of dynamic-update-slice"));
  KILN_RETURN_IF_ERROR(CheckStartIndices("dynamic-update-slice", operand, start_indices));
  if (update.rank() != operand.rank())
    return InvalidArgument("dynamic-update-slice update ", Str(update),
                           " must have the operand's rank (", Str(operand), ")");
  if (!SameTypeIgnoringFpPrecision(operand.element_type(), update.element_type()))
    return InvalidArgument("dynamic-update-slice update ", Str(update),
                           " must have the operand's element type (", Str(operand), ")");
  Shape result = NoLayout(operand);
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (update.dimensions(i) > operand.dimensions(i))
      return InvalidArgument("dynamic-update-slice update ", Str(update), " is larger than the ",
                             "operand ", Str(operand), " in dimension ", i);
    if (update.is_dynamic_dimension(i) && update.dimensions(i) == operand.dimensions(i))
      result.set_dynamic_dimension(i, true);
  }
  return result;
}

StatusOr<Shape> InferConcatenateShape(const std::vector<const Shape*>& operands,
                                      int64_t dimension) {
  if (operands.empty()) return InvalidArgument("concatenate needs at least one operand");
  for (const Shape* s : operands) KILN_RETURN_IF_ERROR(ExpectArray(*s, "concatenate operands"));
  const Shape& first = *operands[0];
  if (dimension < 0 || dimension >= first.rank())
    return InvalidArgument("concatenate dimension ", dimension, " is out of range for ",
                           Str(first));
  Shape result = NoLayout(first);
  int64_t total = 0;
  for (const Shape* s : operands) {
    if (s->rank() != first.rank())
      return InvalidArgument("concatenate operands have different ranks: ", Str(first), " and ",
                             Str(*s));
    if (!SameTypeIgnoringFpPrecision(s->element_type(), first.element_type()))
      return InvalidArgument("concatenate operands have different element types: ", Str(first),
                             " and ", Str(*s));
    for (int64_t i = 0; i < first.rank(); ++i) {
      if (i != dimension && s->dimensions(i) != first.dimensions(i))
        return InvalidArgument("concatenate operands ", Str(first), " and ", Str(*s),
                               " differ in dimension ", i, ", which is not the concatenated one (",
                               dimension, ")");
      if (s->is_dynamic_dimension(i)) result.set_dynamic_dimension(i, true);
    }
    total = SaturatingAdd(total, s->dimensions(dimension));  // too large: CheckShapeSize says so
    result.set_element_type(HigherPrecisionType(result.element_type(), s->element_type()));
  }
  result.set_dimensions(dimension, total);
  return result;
}

StatusOr<Shape> InferPadShape(const Shape& operand, const Shape& padding_value,
                              const std::vector<PaddingDimension>& padding) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of pad"));
  if (!padding_value.IsScalar())
    return InvalidArgument("pad value must be a scalar, found ", Str(padding_value));
  if (!SameTypeIgnoringFpPrecision(operand.element_type(), padding_value.element_type()))
    return InvalidArgument("pad value ", Str(padding_value), " must have the operand's type (",
                           Str(operand), ")");
  if (static_cast<int64_t>(padding.size()) != operand.rank())
    return InvalidArgument("padding has ", padding.size(), " entries for an operand of rank ",
                           operand.rank(), " (", Str(operand), ")");
  Shape result = MakeArray(HigherPrecisionType(operand.element_type(), padding_value.element_type()),
                           {});
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const PaddingDimension& p = padding[i];
    if (p.interior < 0)
      return InvalidArgument("pad interior padding ", p.interior, " of dimension ", i,
                             " must not be negative");
    const int64_t d = operand.dimensions(i);
    int64_t size = 0;
    if (__builtin_mul_overflow(std::max<int64_t>(d - 1, 0), p.interior, &size) ||
        __builtin_add_overflow(size, d, &size) || __builtin_add_overflow(size, p.low, &size) ||
        __builtin_add_overflow(size, p.high, &size))
      return InvalidArgument("padding ", p.low, "_", p.high, "_", p.interior, " of dimension ", i,
                             " (size ", d, ") gives a size that does not fit in 64 bits");
    if (size < 0)
      return InvalidArgument("padding ", p.low, "_", p.high, "_", p.interior, " of dimension ", i,
                             " (size ", d, ") gives a negative size ", size);
    result.add_dimension(size, operand.is_dynamic_dimension(i));
  }
  return result;
}

StatusOr<Shape> InferReverseShape(const Shape& operand, const std::vector<int64_t>& dimensions) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of reverse"));
  KILN_RETURN_IF_ERROR(CheckDimsInRangeUnique(dimensions, operand.rank(), "reverse dimensions="));
  return NoLayout(operand);
}

StatusOr<Shape> InferIotaShape(const Shape& declared, int64_t iota_dimension) {
  KILN_RETURN_IF_ERROR(ExpectArray(declared, "iota"));
  if (declared.rank() == 0) return InvalidArgument("iota must have rank >= 1, found ", Str(declared));
  if (iota_dimension < 0 || iota_dimension >= declared.rank())
    return InvalidArgument("iota_dimension=", iota_dimension, " is out of range for ",
                           Str(declared));
  const PrimitiveType t = declared.element_type();
  if (!IsIntegralType(t) && !IsFloatingPointType(t) && !IsComplexType(t))
    return InvalidArgument("iota must have an integer, floating-point or complex type, found ",
                           Str(declared));
  return NoLayout(declared);
}

StatusOr<Shape> InferTupleShape(const std::vector<const Shape*>& operands) {
  std::vector<Shape> elements;
  elements.reserve(operands.size());
  for (const Shape* s : operands) elements.push_back(NoLayout(*s));
  return Shape::Tuple(std::move(elements));
}

StatusOr<Shape> InferGetTupleElementShape(const Shape& tuple, int64_t index) {
  if (!tuple.IsTuple())
    return InvalidArgument("get-tuple-element of a non-tuple ", Str(tuple));
  if (index < 0 || index >= tuple.tuple_shapes_size())
    return InvalidArgument("get-tuple-element index=", index, " is out of range for ",
                           Str(tuple), " (", tuple.tuple_shapes_size(), " elements)");
  return NoLayout(tuple.tuple_shapes(index));
}

StatusOr<Shape> InferGetDimensionSizeShape(const Shape& operand, int64_t dimension) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of get-dimension-size"));
  if (dimension < 0 || dimension >= operand.rank())
    return InvalidArgument("get-dimension-size dimension ", dimension, " is out of range for ",
                           Str(operand));
  return Shape::Scalar(PrimitiveType::kS32);
}

StatusOr<Shape> InferSetDimensionSizeShape(const Shape& operand, const Shape& size,
                                           int64_t dimension) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of set-dimension-size"));
  if (dimension < 0 || dimension >= operand.rank())
    return InvalidArgument("set-dimension-size dimension ", dimension, " is out of range for ",
                           Str(operand));
  if (!size.IsScalar() || size.element_type() != PrimitiveType::kS32)
    return InvalidArgument("set-dimension-size size must be an s32 scalar, found ", Str(size));
  Shape result = NoLayout(operand);
  result.set_dynamic_dimension(dimension, true);
  return result;
}

StatusOr<Shape> InferBitcastShape(const Shape& operand, const Shape& declared) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of bitcast"));
  KILN_RETURN_IF_ERROR(ExpectArray(declared, "the result of bitcast"));
  // In 128 bits: a 2^62-byte array holds 2^65 bits.
  const __int128 in_bits = static_cast<__int128>(operand.num_elements()) * PrimitiveBitWidth(operand.element_type());
  const __int128 out_bits = static_cast<__int128>(declared.num_elements()) * PrimitiveBitWidth(declared.element_type());
  if (in_bits != out_bits) {
    auto bits = [](__int128 v) {  // non-negative
      std::string s;
      do {
        s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
        v /= 10;
      } while (v > 0);
      return s;
    };
    return InvalidArgument("bitcast changes the size: ", Str(operand), " holds ", bits(in_bits),
                           " bits, ", Str(declared), " holds ", bits(out_bits));
  }
  return NoLayout(declared);
}

}  // namespace kiln
