// Shape inference for gather and scatter, including the batching dimensions
// (operand_batching_dims / start_indices_batching_dims, input_batching_dims /
// scatter_indices_batching_dims).
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

// The indices dimensions with an implicit trailing 1 when index_vector_dim == rank.
StatusOr<std::vector<int64_t>> ExpandedIndexDims(std::string_view op, const Shape& indices,
                                                 int64_t index_vector_dim) {
  KILN_RETURN_IF_ERROR(ExpectArray(indices, StrCat(op, " indices")));
  if (!IsIntegralType(indices.element_type()))
    return InvalidArgument(op, " indices must be integers, found ", Str(indices));
  if (index_vector_dim < 0 || index_vector_dim > indices.rank())
    return InvalidArgument(op, " index_vector_dim=", index_vector_dim, " must be in [0, ",
                           indices.rank(), "] for indices ", Str(indices));
  std::vector<int64_t> dims = indices.dimensions();
  if (index_vector_dim == indices.rank()) dims.push_back(1);
  return dims;
}

Status CheckSortedInRange(std::string_view what, const std::vector<int64_t>& dims, int64_t rank) {
  KILN_RETURN_IF_ERROR(CheckDimsInRangeUnique(dims, rank, what));
  if (!IsSortedStrict(dims)) return InvalidArgument(what, " ", DimsStr(dims), " must be sorted");
  return OkStatus();
}

// Shared checks of the operand-side dimension lists: `collapsed` (collapsed_slice_dims /
// inserted_window_dims), `batching` (operand / input batching dims), `index_map`
// (start_index_map / scatter_dims_to_operand_dims), and the indices-side batching dims.
Status CheckDimensionLists(std::string_view op, const Shape& operand,
                           const std::vector<int64_t>& expanded_indices, int64_t index_vector_dim,
                           const std::vector<int64_t>& collapsed, std::string_view collapsed_name,
                           const std::vector<int64_t>& batching, std::string_view batching_name,
                           const std::vector<int64_t>& index_map, std::string_view index_map_name,
                           const std::vector<int64_t>& indices_batching,
                           std::string_view indices_batching_name) {
  const int64_t rank = operand.rank();
  KILN_RETURN_IF_ERROR(CheckSortedInRange(StrCat(op, " ", collapsed_name), collapsed, rank));
  KILN_RETURN_IF_ERROR(CheckSortedInRange(StrCat(op, " ", batching_name), batching, rank));
  for (int64_t d : batching)
    if (Contains(collapsed, d))
      return InvalidArgument(op, " dimension ", d, " is both in ", collapsed_name, " and in ",
                             batching_name);
  if (static_cast<int64_t>(index_map.size()) != expanded_indices[index_vector_dim])
    return InvalidArgument(op, " ", index_map_name, " ", DimsStr(index_map), " has ",
                           index_map.size(), " entries but the index vector dimension ",
                           index_vector_dim, " of the indices has size ",
                           expanded_indices[index_vector_dim]);
  KILN_RETURN_IF_ERROR(CheckDimsInRangeUnique(index_map, rank, StrCat(op, " ", index_map_name)));
  for (int64_t d : index_map)
    if (Contains(batching, d))
      return InvalidArgument(op, " dimension ", d, " is both in ", index_map_name, " and in ",
                             batching_name);
  const int64_t indices_rank = static_cast<int64_t>(expanded_indices.size());
  KILN_RETURN_IF_ERROR(CheckDimsInRangeUnique(indices_batching, indices_rank,
                                              StrCat(op, " ", indices_batching_name)));
  if (Contains(indices_batching, index_vector_dim))
    return InvalidArgument(op, " ", indices_batching_name, " ", DimsStr(indices_batching),
                           " must not contain index_vector_dim=", index_vector_dim);
  if (indices_batching.size() != batching.size())
    return InvalidArgument(op, " ", batching_name, " ", DimsStr(batching), " and ",
                           indices_batching_name, " ", DimsStr(indices_batching),
                           " must have the same length");
  for (size_t i = 0; i < batching.size(); ++i)
    if (operand.dimensions(batching[i]) != expanded_indices[indices_batching[i]])
      return InvalidArgument(op, " batching dimension ", batching[i], " of the operand (size ",
                             operand.dimensions(batching[i]), ") does not match dimension ",
                             indices_batching[i], " of the indices (size ",
                             expanded_indices[indices_batching[i]], ")");
  return OkStatus();
}

}  // namespace

StatusOr<Shape> InferGatherShape(const Shape& operand, const Shape& start_indices,
                                 const GatherDimensionNumbers& d,
                                 const std::vector<int64_t>& slice_sizes) {
  KILN_RETURN_IF_ERROR(ExpectArray(operand, "the operand of gather"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                        ExpandedIndexDims("gather", start_indices, d.index_vector_dim));
  const int64_t batch_rank = static_cast<int64_t>(idx.size()) - 1;
  const int64_t out_rank = static_cast<int64_t>(d.offset_dims.size()) + batch_rank;
  KILN_RETURN_IF_ERROR(CheckSortedInRange("gather offset_dims", d.offset_dims, out_rank));
  KILN_RETURN_IF_ERROR(CheckDimensionLists(
      "gather", operand, idx, d.index_vector_dim, d.collapsed_slice_dims, "collapsed_slice_dims",
      d.operand_batching_dims, "operand_batching_dims", d.start_index_map, "start_index_map",
      d.start_indices_batching_dims, "start_indices_batching_dims"));
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank())
    return InvalidArgument("gather slice_sizes=", DimsStr(slice_sizes),
                           " must have one entry per operand dimension (", Str(operand), ")");
  if (d.offset_dims.size() + d.collapsed_slice_dims.size() + d.operand_batching_dims.size() !=
      slice_sizes.size())
    return InvalidArgument("gather: each operand dimension must be an offset dimension, ",
                           "collapsed or a batching dimension; offset_dims=",
                           DimsStr(d.offset_dims), " collapsed_slice_dims=",
                           DimsStr(d.collapsed_slice_dims), " operand_batching_dims=",
                           DimsStr(d.operand_batching_dims), " for operand rank ", operand.rank());
  for (int64_t i = 0; i < operand.rank(); ++i)
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand.dimensions(i))
      return InvalidArgument("gather slice size ", slice_sizes[i], " of dimension ", i,
                             " is out of range [0, ", operand.dimensions(i), "] for ", Str(operand));
  for (int64_t c : d.collapsed_slice_dims)
    if (slice_sizes[c] > 1)
      return InvalidArgument("gather collapses dimension ", c, " whose slice size is ",
                             slice_sizes[c], " (must be 0 or 1)");
  for (int64_t b : d.operand_batching_dims)
    if (slice_sizes[b] > 1)
      return InvalidArgument("gather batching dimension ", b, " has slice size ", slice_sizes[b],
                             " (must be 0 or 1)");
  // Offset dimensions take the slice sizes of the remaining operand dimensions in order;
  // the others take the index dimensions, skipping index_vector_dim.
  std::vector<int64_t> window_dims;
  for (int64_t i = 0; i < operand.rank(); ++i)
    if (!Contains(d.collapsed_slice_dims, i) && !Contains(d.operand_batching_dims, i))
      window_dims.push_back(i);
  Shape result = MakeArray(operand.element_type(), {});
  size_t offset_seen = 0;
  int64_t batch_seen = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (Contains(d.offset_dims, i)) {
      const int64_t od = window_dims[offset_seen++];
      result.add_dimension(slice_sizes[od], slice_sizes[od] == operand.dimensions(od) &&
                                                operand.is_dynamic_dimension(od));
    } else {
      if (batch_seen == d.index_vector_dim) ++batch_seen;
      const bool dyn = batch_seen < start_indices.rank() && start_indices.is_dynamic_dimension(batch_seen);
      result.add_dimension(idx[batch_seen++], dyn);
    }
  }
  return result;
}

StatusOr<Shape> InferScatterShape(const std::vector<const Shape*>& operands,
                                  const Shape& scatter_indices,
                                  const std::vector<const Shape*>& updates,
                                  const ScatterDimensionNumbers& d,
                                  const ProgramShape& to_apply) {
  if (operands.empty() || operands.size() != updates.size())
    return InvalidArgument("scatter needs N operands, the indices and N updates; found ",
                           operands.size(), " operands and ", updates.size(), " updates");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> idx,
                        ExpandedIndexDims("scatter", scatter_indices, d.index_vector_dim));
  const Shape& first = *operands[0];
  for (size_t n = 0; n < operands.size(); ++n) {
    const Shape& operand = *operands[n];
    const Shape& upd = *updates[n];
    KILN_RETURN_IF_ERROR(ExpectArray(operand, "scatter operands"));
    KILN_RETURN_IF_ERROR(ExpectArray(upd, "scatter updates"));
    if (operand.dimensions() != first.dimensions())
      return InvalidArgument("scatter operands must have the same dimensions, found ", Str(first),
                             " and ", Str(operand));
    const int64_t expected_rank =
        static_cast<int64_t>(idx.size()) - 1 + static_cast<int64_t>(d.update_window_dims.size());
    if (upd.rank() != expected_rank)
      return InvalidArgument("scatter updates ", Str(upd), " must have rank ", expected_rank,
                             " (update_window_dims plus the index dimensions)");
    KILN_RETURN_IF_ERROR(
        CheckSortedInRange("scatter update_window_dims", d.update_window_dims, upd.rank()));
    KILN_RETURN_IF_ERROR(CheckDimensionLists(
        "scatter", operand, idx, d.index_vector_dim, d.inserted_window_dims,
        "inserted_window_dims", d.input_batching_dims, "input_batching_dims",
        d.scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims",
        d.scatter_indices_batching_dims, "scatter_indices_batching_dims"));
    if (d.update_window_dims.size() + d.inserted_window_dims.size() +
            d.input_batching_dims.size() !=
        static_cast<size_t>(operand.rank()))
      return InvalidArgument("scatter: update_window_dims=", DimsStr(d.update_window_dims),
                             " inserted_window_dims=", DimsStr(d.inserted_window_dims),
                             " input_batching_dims=", DimsStr(d.input_batching_dims),
                             " do not cover the operand rank ", operand.rank());
    std::vector<int64_t> window_operand_dims;
    for (int64_t i = 0; i < operand.rank(); ++i)
      if (!Contains(d.inserted_window_dims, i) && !Contains(d.input_batching_dims, i))
        window_operand_dims.push_back(i);
    for (size_t i = 0; i < d.update_window_dims.size(); ++i) {
      const int64_t ud = d.update_window_dims[i], od = window_operand_dims[i];
      if (upd.dimensions(ud) > operand.dimensions(od))
        return InvalidArgument("scatter update window dimension ", ud, " (size ",
                               upd.dimensions(ud), ") exceeds operand dimension ", od, " (size ",
                               operand.dimensions(od), ")");
    }
    int64_t scatter_seen = 0;
    for (int64_t i = 0; i < upd.rank(); ++i) {
      if (Contains(d.update_window_dims, i)) continue;
      if (scatter_seen == d.index_vector_dim) ++scatter_seen;
      if (upd.dimensions(i) != idx[scatter_seen])
        return InvalidArgument("scatter update dimension ", i, " (size ", upd.dimensions(i),
                               ") must equal index dimension ", scatter_seen, " (size ",
                               idx[scatter_seen], ")");
      ++scatter_seen;
    }
  }
  std::vector<PrimitiveType> init_types, input_types;
  for (size_t n = 0; n < operands.size(); ++n) {
    init_types.push_back(operands[n]->element_type());
    input_types.push_back(updates[n]->element_type());
  }
  KILN_RETURN_IF_ERROR(VerifyReducerShape(to_apply, init_types, input_types)
                           .WithContext("scatter update computation"));
  if (operands.size() == 1) return NoLayout(*operands[0]);
  return InferTupleShape(operands);
}

}  // namespace kiln
