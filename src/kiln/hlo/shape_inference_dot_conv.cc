// Shape inference for dot, ragged-dot, scaled-dot, convolution, fft, cholesky,
// triangular-solve and the batch-norm ops.
#include <cstdlib>

#include "kiln/hlo/shape_inference.h"
#include "kiln/base/saturating.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

// XLA's "preferred element type" rule: the declared type wins, except that an integer result
// may not be narrower than integer operands.
StatusOr<PrimitiveType> ResultType(std::string_view op, PrimitiveType from,
                                   std::optional<PrimitiveType> preferred) {
  if (!preferred || *preferred == from) return from;
  if (!IsArrayType(*preferred))
    return InvalidArgument(op, " result type must be an array type, found ",
                           PrimitiveTypeName(*preferred));
  if (!IsFloatingPointType(from) && PrimitiveBitWidth(*preferred) < PrimitiveBitWidth(from))
    return InvalidArgument(op, " result type ", PrimitiveTypeName(*preferred),
                           " is narrower than the operand type ", PrimitiveTypeName(from));
  return *preferred;
}

PrimitiveType OperandType(const Shape& lhs, const Shape& rhs) {
  return SameTypeIgnoringFpPrecision(lhs.element_type(), rhs.element_type())
             ? HigherPrecisionType(lhs.element_type(), rhs.element_type())
             : lhs.element_type();
}

Status CheckDotDims(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& d) {
  std::vector<int64_t> lhs_all = d.lhs_contracting_dimensions;
  lhs_all.insert(lhs_all.end(), d.lhs_batch_dimensions.begin(), d.lhs_batch_dimensions.end());
  std::vector<int64_t> rhs_all = d.rhs_contracting_dimensions;
  rhs_all.insert(rhs_all.end(), d.rhs_batch_dimensions.begin(), d.rhs_batch_dimensions.end());
  KILN_RETURN_IF_ERROR(
      CheckDimsInRangeUnique(lhs_all, lhs.rank(), "dot lhs contracting+batch dimensions"));
  KILN_RETURN_IF_ERROR(
      CheckDimsInRangeUnique(rhs_all, rhs.rank(), "dot rhs contracting+batch dimensions"));
  if (d.lhs_contracting_dimensions.size() != d.rhs_contracting_dimensions.size())
    return InvalidArgument("dot has ", d.lhs_contracting_dimensions.size(),
                           " lhs contracting dimensions but ", d.rhs_contracting_dimensions.size(),
                           " rhs contracting dimensions");
  if (d.lhs_batch_dimensions.size() != d.rhs_batch_dimensions.size())
    return InvalidArgument("dot has ", d.lhs_batch_dimensions.size(), " lhs batch dimensions but ",
                           d.rhs_batch_dimensions.size(), " rhs batch dimensions");
  return OkStatus();
}

// Dimension sizes of a dot operand as the dot sees them: a structured-sparse operand stores
// its sparse dimension compressed by n:m, so the logical size is size * m / n.
std::vector<int64_t> LogicalDims(const Shape& s, int side,
                                 const std::vector<SparsityDescriptor>& sparsity) {
  std::vector<int64_t> dims = s.dimensions();
  for (const SparsityDescriptor& sd : sparsity) {
    // Text form "L.1@2:4": side, dimension, n:m.
    const std::string& t = sd.text;
    if (t.size() < 3 || (t[0] != (side == 0 ? 'L' : 'R')) || t[1] != '.') continue;
    char* end = nullptr;
    const long dim = std::strtol(t.c_str() + 2, &end, 10);
    if (!end || *end != '@') continue;
    const long n = std::strtol(end + 1, &end, 10);
    if (!end || *end != ':') continue;
    const long m = std::strtol(end + 1, &end, 10);
    if (n <= 0 || m <= 0 || dim < 0 || dim >= static_cast<long>(dims.size())) continue;
    dims[dim] = SaturatingMul(dims[dim], m) / n;
  }
  return dims;
}

// The dot result dimensions: batch, lhs free, rhs free (skipping rhs dimension `skip_rhs`).
StatusOr<Shape> DotResult(std::string_view op, const Shape& lhs, const Shape& rhs,
                          const std::vector<int64_t>& lhs_dims,
                          const std::vector<int64_t>& rhs_dims, const DotDimensionNumbers& d,
                          std::optional<PrimitiveType> preferred, int64_t skip_rhs = -1) {
  for (size_t i = 0; i < d.lhs_contracting_dimensions.size(); ++i) {
    const int64_t l = d.lhs_contracting_dimensions[i], r = d.rhs_contracting_dimensions[i];
    if (lhs_dims[l] != rhs_dims[r])
      return InvalidArgument(op, ": lhs contracting dimension ", l, " (size ", lhs_dims[l],
                             ") does not match rhs contracting dimension ", r, " (size ",
                             rhs_dims[r], ") in ", Str(lhs), " x ", Str(rhs));
  }
  for (size_t i = 0; i < d.lhs_batch_dimensions.size(); ++i) {
    const int64_t l = d.lhs_batch_dimensions[i], r = d.rhs_batch_dimensions[i];
    if (lhs_dims[l] != rhs_dims[r])
      return InvalidArgument(op, ": lhs batch dimension ", l, " (size ", lhs_dims[l],
                             ") does not match rhs batch dimension ", r, " (size ", rhs_dims[r],
                             ") in ", Str(lhs), " x ", Str(rhs));
  }
  KILN_ASSIGN_OR_RETURN(PrimitiveType type, ResultType(op, OperandType(lhs, rhs), preferred));
  Shape result = MakeArray(type, {});
  for (int64_t l : d.lhs_batch_dimensions) result.add_dimension(lhs_dims[l], lhs.is_dynamic_dimension(l));
  for (int64_t i = 0; i < lhs.rank(); ++i)
    if (!Contains(d.lhs_batch_dimensions, i) && !Contains(d.lhs_contracting_dimensions, i))
      result.add_dimension(lhs_dims[i], lhs.is_dynamic_dimension(i));
  for (int64_t i = 0; i < rhs.rank(); ++i)
    if (i != skip_rhs && !Contains(d.rhs_batch_dimensions, i) &&
        !Contains(d.rhs_contracting_dimensions, i))
      result.add_dimension(rhs_dims[i], rhs.is_dynamic_dimension(i));
  return result;
}

StatusOr<Shape> InferDotShapeWithSparsity(const Shape& lhs, const Shape& rhs,
                                          const DotDimensionNumbers& dnums,
                                          std::optional<PrimitiveType> preferred,
                                          const std::vector<SparsityDescriptor>& sparsity) {
  KILN_RETURN_IF_ERROR(ExpectArray(lhs, "the lhs of dot"));
  KILN_RETURN_IF_ERROR(ExpectArray(rhs, "the rhs of dot"));
  KILN_RETURN_IF_ERROR(CheckDotDims(lhs, rhs, dnums));
  return DotResult("dot", lhs, rhs, LogicalDims(lhs, 0, sparsity), LogicalDims(rhs, 1, sparsity),
                   dnums, preferred);
}

// Saturating: a huge dilation gives a huge bound (then a zero-size window output or a result
// CheckShapeSize rejects), never a wrapped one.
int64_t DilatedBound(int64_t bound, int64_t dilation) {
  return bound == 0 ? 0 : SaturatingAdd(SaturatingMul(bound - 1, dilation), 1);
}

Status CheckBatchNormInput(std::string_view op, const Shape& operand, int64_t feature_index) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, StrCat("the operand of ", op)));
  if (operand.rank() < 1) return InvalidArgument(op, " operand must have rank >= 1");
  if (feature_index < 0 || feature_index >= operand.rank())
    return InvalidArgument(op, " feature_index=", feature_index, " is out of range for ",
                           Str(operand));
  if (!IsFloatingPointType(operand.element_type()))
    return InvalidArgument(op, " operand must be floating-point, found ", Str(operand));
  return OkStatus();
}

// A per-feature vector input of a batch-norm op: rank 1, feature_count entries, operand type.
Status CheckFeatureVector(std::string_view op, std::string_view what, const Shape& v,
                          const Shape& operand, int64_t feature_count) {
  KILN_RETURN_IF_ERROR(ExpectArray(v, StrCat(op, " ", what)));
  if (v.rank() != 1 || v.dimensions(0) != feature_count ||
      !SameTypeIgnoringFpPrecision(v.element_type(), operand.element_type()))
    return InvalidArgument(op, " ", what, " must be a vector of ", feature_count, " ",
                           PrimitiveTypeName(operand.element_type()), " (the feature count), found ",
                           Str(v));
  return OkStatus();
}

}  // namespace

StatusOr<Shape> InferDotShape(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dnums,
                              std::optional<PrimitiveType> preferred_type) {
  return InferDotShapeWithSparsity(lhs, rhs, dnums, preferred_type, {});
}

// Used by InferShape for dot instructions with sparsity descriptors.
StatusOr<Shape> InferSparseDotShape(const Shape& lhs, const Shape& rhs,
                                    const DotDimensionNumbers& dnums,
                                    std::optional<PrimitiveType> preferred_type,
                                    const std::vector<SparsityDescriptor>& sparsity) {
  return InferDotShapeWithSparsity(lhs, rhs, dnums, preferred_type, sparsity);
}

StatusOr<Shape> InferRaggedDotShape(const Shape& lhs, const Shape& rhs, const Shape& group_sizes,
                                    const DotDimensionNumbers& dnums,
                                    const RaggedDotDimensionNumbers& ragged,
                                    std::optional<PrimitiveType> preferred_type) {
  KILN_RETURN_IF_ERROR(ExpectArray(lhs, "the lhs of ragged-dot"));
  KILN_RETURN_IF_ERROR(ExpectArray(rhs, "the rhs of ragged-dot"));
  KILN_RETURN_IF_ERROR(ExpectArray(group_sizes, "the group sizes of ragged-dot"));
  if (!IsIntegralType(group_sizes.element_type()) || group_sizes.rank() < 1)
    return InvalidArgument("ragged-dot group sizes must be an integer array, found ",
                           Str(group_sizes));
  KILN_RETURN_IF_ERROR(CheckDotDims(lhs, rhs, dnums));
  if (ragged.lhs_ragged_dimensions.size() != 1)
    return InvalidArgument("ragged-dot needs exactly one lhs_ragged_dims entry, found ",
                           DimsStr(ragged.lhs_ragged_dimensions));
  const int64_t r = ragged.lhs_ragged_dimensions[0];
  if (r < 0 || r >= lhs.rank())
    return InvalidArgument("ragged-dot lhs_ragged_dims={", r, "} is out of range for ", Str(lhs));
  const int64_t num_groups = group_sizes.dimensions(group_sizes.rank() - 1);
  const bool contracting = Contains(dnums.lhs_contracting_dimensions, r);
  const bool batch = Contains(dnums.lhs_batch_dimensions, r);
  if (contracting || batch) {
    if (!ragged.rhs_group_dimensions.empty())
      return InvalidArgument("ragged-dot with a ", contracting ? "contracting" : "batch",
                             " ragged dimension takes no rhs_group_dims, found ",
                             DimsStr(ragged.rhs_group_dimensions));
    KILN_ASSIGN_OR_RETURN(Shape result, DotResult("ragged-dot", lhs, rhs, lhs.dimensions(),
                                                   rhs.dimensions(), dnums, preferred_type));
    if (batch) return result;
    // Ragged contracting dimension: one result per group, in a new major dimension.
    Shape grouped = MakeArray(result.element_type(), {num_groups});
    for (int64_t i = 0; i < result.rank(); ++i)
      grouped.add_dimension(result.dimensions(i), result.is_dynamic_dimension(i));
    return grouped;
  }
  // Ragged non-contracting dimension: rhs has one group dimension, dropped from the result.
  if (ragged.rhs_group_dimensions.size() != 1)
    return InvalidArgument("ragged-dot with a non-contracting ragged dimension needs exactly one ",
                           "rhs_group_dims entry, found ", DimsStr(ragged.rhs_group_dimensions));
  const int64_t g = ragged.rhs_group_dimensions[0];
  if (g < 0 || g >= rhs.rank() || Contains(dnums.rhs_contracting_dimensions, g) ||
      Contains(dnums.rhs_batch_dimensions, g))
    return InvalidArgument("ragged-dot rhs_group_dims={", g,
                           "} must be a free dimension of the rhs ", Str(rhs));
  if (rhs.dimensions(g) != num_groups)
    return InvalidArgument("ragged-dot rhs group dimension ", g, " has ", rhs.dimensions(g),
                           " groups but group sizes ", Str(group_sizes), " describe ", num_groups);
  return DotResult("ragged-dot", lhs, rhs, lhs.dimensions(), rhs.dimensions(), dnums,
                   preferred_type, g);
}

StatusOr<Shape> InferScaledDotShape(const Shape& lhs, const Shape& rhs, const Shape& lhs_scale,
                                    const Shape& rhs_scale, const DotDimensionNumbers& dnums,
                                    std::optional<PrimitiveType> preferred_type) {
  KILN_RETURN_IF_ERROR(ExpectArray(lhs, "the lhs of scaled-dot"));
  KILN_RETURN_IF_ERROR(ExpectArray(rhs, "the rhs of scaled-dot"));
  const std::pair<const Shape*, const Shape*> pairs[] = {{&lhs, &lhs_scale}, {&rhs, &rhs_scale}};
  for (const auto& [operand, scale] : pairs) {
    KILN_RETURN_IF_ERROR(ExpectArray(*scale, "a scaled-dot scale"));
    if (scale->IsScalar()) continue;
    if (scale->rank() != operand->rank())
      return InvalidArgument("scaled-dot scale ", Str(*scale), " must have the rank of its operand ",
                             Str(*operand));
    for (int64_t i = 0; i < scale->rank(); ++i)
      if (scale->dimensions(i) == 0 || operand->dimensions(i) % scale->dimensions(i) != 0)
        return InvalidArgument("scaled-dot scale ", Str(*scale), " dimension ", i,
                               " does not divide the operand ", Str(*operand));
  }
  KILN_RETURN_IF_ERROR(CheckDotDims(lhs, rhs, dnums));
  return DotResult("scaled-dot", lhs, rhs, lhs.dimensions(), rhs.dimensions(), dnums,
                   preferred_type);
}

StatusOr<Shape> InferWindowOutputShape(const Shape& base, const Window& window,
                                       PrimitiveType element_type) {
  if (static_cast<int64_t>(window.dimensions.size()) != base.rank())
    return InvalidArgument("window has ", window.dimensions.size(),
                           " dimensions but the operand ", Str(base), " has rank ", base.rank());
  Shape result = MakeArray(element_type, {});
  for (int64_t i = 0; i < base.rank(); ++i) {
    const WindowDimension& w = window.dimensions[i];
    if (w.size <= 0) return InvalidArgument("window size ", w.size, " of dimension ", i, " must be positive");
    if (w.stride <= 0)
      return InvalidArgument("window stride ", w.stride, " of dimension ", i, " must be positive");
    if (w.base_dilation < 1)
      return InvalidArgument("window lhs_dilate ", w.base_dilation, " of dimension ", i,
                             " must be >= 1");
    if (w.window_dilation < 1)
      return InvalidArgument("window rhs_dilate ", w.window_dilation, " of dimension ", i,
                             " must be >= 1");
    int64_t padded = 0;
    if (__builtin_add_overflow(w.padding_low, DilatedBound(base.dimensions(i), w.base_dilation), &padded) ||
        __builtin_add_overflow(padded, w.padding_high, &padded))
      return InvalidArgument("window padding ", w.padding_low, "_", w.padding_high, " of dimension ", i,
                             " gives a size that does not fit in 64 bits");
    const int64_t window_size = DilatedBound(w.size, w.window_dilation);
    const int64_t out = window_size > padded ? 0 : (padded - window_size) / w.stride + 1;
    result.add_dimension(out, base.is_dynamic_dimension(i));
  }
  return result;
}

StatusOr<Shape> InferConvolutionShape(const Shape& lhs, const Shape& rhs,
                                      int64_t feature_group_count, int64_t batch_group_count,
                                      const Window& window,
                                      const ConvolutionDimensionNumbers& d,
                                      std::optional<PrimitiveType> preferred_type) {
  KILN_RETURN_IF_ERROR(ExpectArray(lhs, "the lhs of convolution"));
  KILN_RETURN_IF_ERROR(ExpectArray(rhs, "the rhs of convolution"));
  if (feature_group_count < 1)
    return InvalidArgument("convolution feature_group_count=", feature_group_count,
                           " must be positive");
  if (batch_group_count < 1)
    return InvalidArgument("convolution batch_group_count=", batch_group_count,
                           " must be positive");
  if (feature_group_count > 1 && batch_group_count > 1)
    return InvalidArgument("convolution cannot have both feature_group_count=",
                           feature_group_count, " and batch_group_count=", batch_group_count);
  const PrimitiveType lt = lhs.element_type(), rt = rhs.element_type();
  if (!SameTypeIgnoringFpPrecision(lt, rt) && !(IsIntegralType(lt) && IsIntegralType(rt)))
    return InvalidArgument("convolution operands have different element types: ", Str(lhs),
                           " and ", Str(rhs));
  if (lhs.rank() != rhs.rank())
    return InvalidArgument("convolution operands have different ranks: ", Str(lhs), " and ",
                           Str(rhs));
  if (lhs.rank() < 2)
    return InvalidArgument("convolution operands need rank >= 2, found ", Str(lhs));
  const int64_t rank = lhs.rank(), spatial = rank - 2;
  if (static_cast<int64_t>(d.input_spatial_dimensions.size()) != spatial ||
      static_cast<int64_t>(d.kernel_spatial_dimensions.size()) != spatial ||
      static_cast<int64_t>(d.output_spatial_dimensions.size()) != spatial)
    return InvalidArgument("convolution dim_labels name ", d.input_spatial_dimensions.size(), "/",
                           d.kernel_spatial_dimensions.size(), "/",
                           d.output_spatial_dimensions.size(),
                           " spatial dimensions for operands of rank ", rank);
  if (static_cast<int64_t>(window.dimensions.size()) != spatial)
    return InvalidArgument("convolution window has ", window.dimensions.size(),
                           " dimensions for ", spatial, " spatial dimensions");
  auto perm_check = [&](std::vector<int64_t> all, std::string_view which) -> Status {
    if (!IsPermutation(all, rank))
      return InvalidArgument("convolution ", which, " dimensions ", DimsStr(all),
                             " must name each of the ", rank, " dimensions once");
    return OkStatus();
  };
  std::vector<int64_t> in = {d.input_batch_dimension, d.input_feature_dimension};
  in.insert(in.end(), d.input_spatial_dimensions.begin(), d.input_spatial_dimensions.end());
  std::vector<int64_t> ker = {d.kernel_input_feature_dimension, d.kernel_output_feature_dimension};
  ker.insert(ker.end(), d.kernel_spatial_dimensions.begin(), d.kernel_spatial_dimensions.end());
  std::vector<int64_t> out = {d.output_batch_dimension, d.output_feature_dimension};
  out.insert(out.end(), d.output_spatial_dimensions.begin(), d.output_spatial_dimensions.end());
  KILN_RETURN_IF_ERROR(perm_check(in, "input"));
  KILN_RETURN_IF_ERROR(perm_check(ker, "kernel"));
  KILN_RETURN_IF_ERROR(perm_check(out, "output"));

  const int64_t input_batch = lhs.dimensions(d.input_batch_dimension);
  const int64_t input_features = lhs.dimensions(d.input_feature_dimension);
  const int64_t kernel_in = rhs.dimensions(d.kernel_input_feature_dimension);
  const int64_t kernel_out = rhs.dimensions(d.kernel_output_feature_dimension);
  if (kernel_out % batch_group_count != 0)
    return InvalidArgument("convolution output features (", kernel_out,
                           ") must be a multiple of batch_group_count=", batch_group_count);
  if (input_batch % batch_group_count != 0)
    return InvalidArgument("convolution input batch (", input_batch,
                           ") must be a multiple of batch_group_count=", batch_group_count);
  if (input_features % feature_group_count != 0 ||
      input_features / feature_group_count != kernel_in)
    return InvalidArgument("convolution input features (", input_features,
                           ") must equal feature_group_count=", feature_group_count,
                           " times the kernel input features (", kernel_in, "): ", Str(lhs),
                           " and ", Str(rhs));
  if (kernel_out % feature_group_count != 0)
    return InvalidArgument("convolution output features (", kernel_out,
                           ") must be a multiple of feature_group_count=", feature_group_count);
  Shape base = MakeArray(lt, {});
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t k = rhs.dimensions(d.kernel_spatial_dimensions[i]);
    if (window.dimensions[i].size != k)
      return InvalidArgument("convolution window size ", window.dimensions[i].size,
                             " of spatial dimension ", i, " does not match the kernel size ", k,
                             " (", Str(rhs), ")");
    base.add_dimension(lhs.dimensions(d.input_spatial_dimensions[i]),
                       lhs.is_dynamic_dimension(d.input_spatial_dimensions[i]));
  }
  KILN_ASSIGN_OR_RETURN(Shape spatial_out, InferWindowOutputShape(base, window, lt));
  KILN_ASSIGN_OR_RETURN(PrimitiveType type,
                        ResultType("convolution", OperandType(lhs, rhs), preferred_type));
  std::vector<int64_t> dims(rank);
  std::vector<bool> dyn(rank, false);
  dims[d.output_batch_dimension] = input_batch / batch_group_count;
  dyn[d.output_batch_dimension] = lhs.is_dynamic_dimension(d.input_batch_dimension);
  dims[d.output_feature_dimension] = kernel_out;
  for (int64_t i = 0; i < spatial; ++i) {
    dims[d.output_spatial_dimensions[i]] = spatial_out.dimensions(i);
    dyn[d.output_spatial_dimensions[i]] = spatial_out.is_dynamic_dimension(i);
  }
  return MakeArray(type, dims, dyn);
}

StatusOr<Shape> InferFftShape(const Shape& in, FftType type, const std::vector<int64_t>& fft_length) {
  KILN_RETURN_IF_ERROR(ExpectArray(in, "the operand of fft"));
  const int64_t n = static_cast<int64_t>(fft_length.size());
  if (n < 1 || n > 3) return InvalidArgument("fft_length must have 1 to 3 entries, found ", DimsStr(fft_length));
  if (in.rank() < n)
    return InvalidArgument("fft of rank ", n, " needs an operand of rank >= ", n, ", found ", Str(in));
  const int64_t first = in.rank() - n;
  switch (type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (!IsComplexType(in.element_type()))
        return InvalidArgument(FftTypeString(type), " needs a complex operand, found ", Str(in));
      return NoLayout(in);
    case FftType::kRfft: {
      if (in.element_type() != PrimitiveType::kF32 && in.element_type() != PrimitiveType::kF64)
        return InvalidArgument("RFFT needs an f32 or f64 operand, found ", Str(in));
      for (int64_t i = 0; i < n; ++i)
        if (in.dimensions(first + i) != fft_length[i])
          return InvalidArgument("RFFT operand dimension ", first + i, " (", in.dimensions(first + i),
                                 ") must equal fft_length[", i, "]=", fft_length[i]);
      Shape result = WithType(in, in.element_type() == PrimitiveType::kF32 ? PrimitiveType::kC64
                                                                           : PrimitiveType::kC128);
      if (fft_length[n - 1] != 0) result.set_dimensions(in.rank() - 1, fft_length[n - 1] / 2 + 1);
      return result;
    }
    case FftType::kIrfft: {
      if (!IsComplexType(in.element_type()))
        return InvalidArgument("IRFFT needs a complex operand, found ", Str(in));
      for (int64_t i = 0; i + 1 < n; ++i)
        if (in.dimensions(first + i) != fft_length[i])
          return InvalidArgument("IRFFT operand dimension ", first + i, " (", in.dimensions(first + i),
                                 ") must equal fft_length[", i, "]=", fft_length[i]);
      const int64_t last = in.dimensions(in.rank() - 1);
      if ((last != 0 || fft_length[n - 1] != 0) && last != fft_length[n - 1] / 2 + 1)
        return InvalidArgument("IRFFT operand minor dimension (", last, ") must be fft_length/2+1 = ",
                               fft_length[n - 1] / 2 + 1);
      Shape result = WithType(in, ComplexComponentType(in.element_type()));
      result.set_dimensions(in.rank() - 1, fft_length[n - 1]);
      return result;
    }
  }
  return InvalidArgument("unknown fft_type");
}

StatusOr<Shape> InferCholeskyShape(const Shape& a) {
  KILN_RETURN_IF_ERROR(ExpectArray(a, "the operand of cholesky"));
  if (!IsFloatingPointType(a.element_type()) && !IsComplexType(a.element_type()))
    return InvalidArgument("cholesky needs a floating-point or complex operand, found ", Str(a));
  if (a.rank() < 2 || a.dimensions(a.rank() - 1) != a.dimensions(a.rank() - 2))
    return InvalidArgument("cholesky needs square matrices in the two minor dimensions, found ",
                           Str(a));
  return NoLayout(a);
}

StatusOr<Shape> InferTriangularSolveShape(const Shape& a, const Shape& b,
                                          const TriangularSolveOptions& options) {
  KILN_RETURN_IF_ERROR(ExpectArray(a, "the 'a' operand of triangular-solve"));
  KILN_RETURN_IF_ERROR(ExpectArray(b, "the 'b' operand of triangular-solve"));
  if ((!IsFloatingPointType(a.element_type()) && !IsComplexType(a.element_type())) ||
      a.element_type() != b.element_type())
    return InvalidArgument("triangular-solve needs floating-point or complex operands of one ",
                           "type, found ", Str(a), " and ", Str(b));
  if (a.rank() < 2) return InvalidArgument("triangular-solve 'a' needs rank >= 2, found ", Str(a));
  if (b.rank() != a.rank())
    return InvalidArgument("triangular-solve operands must have equal ranks: ", Str(a), " and ",
                           Str(b));
  const int64_t r = a.rank();
  if (a.dimensions(r - 2) != a.dimensions(r - 1))
    return InvalidArgument("triangular-solve 'a' must be square in its two minor dimensions: ",
                           Str(a));
  const int64_t shared = b.dimensions(r - (options.left_side ? 2 : 1));
  if (a.dimensions(r - 1) != shared)
    return InvalidArgument("triangular-solve: 'a' ", Str(a), " and 'b' ", Str(b),
                           " do not share the ", options.left_side ? "row" : "column",
                           " dimension (left_side=", options.left_side ? "true" : "false", ")");
  for (int64_t i = 0; i + 2 < r; ++i)
    if (a.dimensions(i) != b.dimensions(i))
      return InvalidArgument("triangular-solve batch dimensions differ: ", Str(a), " and ", Str(b));
  return NoLayout(b);
}

StatusOr<Shape> InferBatchNormTrainingShape(const Shape& operand, const Shape& scale,
                                            const Shape& offset, int64_t feature_index) {
  const std::string_view op = "batch-norm-training";
  KILN_RETURN_IF_ERROR(CheckBatchNormInput(op, operand, feature_index));
  const int64_t f = operand.dimensions(feature_index);
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "scale", scale, operand, f));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "offset", offset, operand, f));
  Shape stats = MakeArray(operand.element_type(), {f});
  return Shape::Tuple({NoLayout(operand), stats, stats});
}

StatusOr<Shape> InferBatchNormInferenceShape(const Shape& operand, const Shape& scale,
                                             const Shape& offset, const Shape& mean,
                                             const Shape& variance, int64_t feature_index) {
  const std::string_view op = "batch-norm-inference";
  KILN_RETURN_IF_ERROR(CheckBatchNormInput(op, operand, feature_index));
  const int64_t f = operand.dimensions(feature_index);
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "scale", scale, operand, f));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "offset", offset, operand, f));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "mean", mean, operand, f));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "variance", variance, operand, f));
  return NoLayout(operand);
}

StatusOr<Shape> InferBatchNormGradShape(const Shape& operand, const Shape& scale,
                                        const Shape& mean, const Shape& variance,
                                        const Shape& grad_output, int64_t feature_index) {
  const std::string_view op = "batch-norm-grad";
  KILN_RETURN_IF_ERROR(CheckBatchNormInput(op, operand, feature_index));
  KILN_RETURN_IF_ERROR(ExpectArray(grad_output, "batch-norm-grad grad_output"));
  if (grad_output.dimensions() != operand.dimensions() ||
      !SameTypeIgnoringFpPrecision(grad_output.element_type(), operand.element_type()))
    return InvalidArgument("batch-norm-grad grad_output ", Str(grad_output),
                           " must have the operand's shape ", Str(operand));
  const int64_t f = operand.dimensions(feature_index);
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "scale", scale, operand, f));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "mean", mean, operand, f));
  KILN_RETURN_IF_ERROR(CheckFeatureVector(op, "variance", variance, operand, f));
  Shape per_feature = MakeArray(operand.element_type(), {f});
  return Shape::Tuple({NoLayout(operand), per_feature, per_feature});
}

}  // namespace kiln
