// Gather and scatter, with XLA's full dimension numbers (including the batching dimensions).
//
// Index vectors: start_indices / scatter_indices hold one index vector per position of their
// other dimensions, along index_vector_dim; index_vector_dim == rank means an implicit
// trailing dimension of size 1. Index values of any integer type are read as int64 (u64 values
// above INT64_MAX count as huge).
//
// gather: each start is clamped so the whole slice fits in the operand (XLA's semantics); a
// gather from an empty operand (a collapsed dimension of size 0) gives zeros.
// scatter: an update window that does not fit entirely in the operand is skipped as a whole
// (not clamped), exactly as XLA's evaluator and CPU backend do. Windows are applied in
// row-major order of the update scatter dimensions, and within a window in row-major order, so
// non-unique indices with a non-commutative combiner give XLA's result. The combiner
// (to_apply) takes (operand values..., update values...) and returns the new operand values.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/scalar_call.h"

namespace kiln {
namespace {

using eval_internal::ExpectArrayOperand;
using eval_internal::NextRowMajorIndex;

// Index vectors of an indices literal: for each "batch" position (all dimensions except
// index_vector_dim, row-major), the index vector and the batch coordinates.
struct IndexVectors {
  std::vector<int64_t> batch_dims;      // sizes of the indices' batch dimensions
  std::vector<int64_t> batch_to_index;  // batch dimension i -> dimension of the indices array
  int64_t vector_size = 0;
  std::vector<int64_t> values;  // [batch position][vector_size]

  const int64_t* Vector(int64_t batch_pos) const { return &values[batch_pos * vector_size]; }
};

StatusOr<IndexVectors> ReadIndexVectors(const HloInstruction& instr, const Literal& indices,
                                        int64_t index_vector_dim) {
  const Shape& s = indices.shape();
  if (!IsIntegralType(s.element_type()))
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                           ": indices must be integers, got ", s.ToString(false));
  const int64_t rank = s.rank();
  if (index_vector_dim < 0 || index_vector_dim > rank)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                           ": index_vector_dim ", index_vector_dim, " out of range");
  IndexVectors iv;
  iv.vector_size = index_vector_dim == rank ? 1 : s.dimensions(index_vector_dim);
  for (int64_t d = 0; d < rank; ++d) {
    if (d == index_vector_dim) continue;
    iv.batch_dims.push_back(s.dimensions(d));
    iv.batch_to_index.push_back(d);
  }
  std::vector<int64_t> raw = eval_internal::LiteralToInt64s(indices);
  if (s.element_type() == PrimitiveType::kU64)
    for (int64_t& v : raw)
      if (v < 0) v = std::numeric_limits<int64_t>::max();
  const int64_t nb = eval_internal::ElementProduct(iv.batch_dims);
  iv.values.resize(nb * iv.vector_size);
  if (index_vector_dim == rank) {
    iv.values = raw;
    return iv;
  }
  // Move the index vector dimension last.
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != index_vector_dim) perm.push_back(d);
  perm.push_back(index_vector_dim);
  eval_internal::PermuteInto(raw.data(), s.dimensions(), perm, iv.values.data());
  return iv;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The position of indices dimension `dim` among the batch dimensions, or -1.
int64_t BatchPosition(const IndexVectors& iv, int64_t dim) {
  for (size_t i = 0; i < iv.batch_to_index.size(); ++i)
    if (iv.batch_to_index[i] == dim) return static_cast<int64_t>(i);
  return -1;
}

StatusOr<Literal> EvalGather(const HloInstruction& instr, std::span<const Literal* const> ops,
                             Evaluator&) {
  if (ops.size() != 2) return InvalidArgument("gather %", instr.name(), " takes 2 operands");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[1], 1));
  const HloAttributes& at = instr.attrs();
  if (!at.gather_dimension_numbers)
    return InvalidArgument("gather %", instr.name(), " has no dimension numbers");
  const GatherDimensionNumbers& dn = *at.gather_dimension_numbers;
  const Literal& operand = *ops[0];
  const Shape& os = operand.shape();
  const Shape& rs = instr.shape();
  const int64_t orank = os.rank();
  const std::vector<int64_t>& slice = at.gather_slice_sizes;
  if (static_cast<int64_t>(slice.size()) != orank)
    return InvalidArgument("gather %", instr.name(), ": slice_sizes has ", slice.size(),
                           " entries for an operand of rank ", orank);
  KILN_ASSIGN_OR_RETURN(IndexVectors iv, ReadIndexVectors(instr, *ops[1], dn.index_vector_dim));
  if (iv.vector_size != static_cast<int64_t>(dn.start_index_map.size()))
    return InvalidArgument("gather %", instr.name(), ": index vectors have ", iv.vector_size,
                           " entries, start_index_map has ", dn.start_index_map.size());
  if (dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size())
    return InvalidArgument("gather %", instr.name(), ": batching dimension lists differ in size");
  for (int64_t d = 0; d < orank; ++d)
    if (slice[d] < 0 || slice[d] > os.dimensions(d))
      return InvalidArgument("gather %", instr.name(), ": slice size ", slice[d],
                             " exceeds operand dimension ", d);
  // Operand dims that appear in the output (offset dims), in increasing order.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < orank; ++d)
    if (!Contains(dn.collapsed_slice_dims, d) && !Contains(dn.operand_batching_dims, d))
      window_operand_dims.push_back(d);
  if (window_operand_dims.size() != dn.offset_dims.size() ||
      rs.rank() != static_cast<int64_t>(dn.offset_dims.size() + iv.batch_dims.size()))
    return InvalidArgument("gather %", instr.name(), ": result ", rs.ToString(false),
                           " does not match the dimension numbers");
  // Output dimension roles.
  std::vector<int64_t> out_offset_of(rs.rank(), -1);  // output dim -> index into window dims
  std::vector<int64_t> out_batch_of(rs.rank(), -1);   // output dim -> batch dim position
  {
    std::vector<int64_t> offs = dn.offset_dims;
    std::sort(offs.begin(), offs.end());
    for (size_t j = 0; j < offs.size(); ++j) {
      if (offs[j] < 0 || offs[j] >= rs.rank())
        return InvalidArgument("gather %", instr.name(), ": bad offset dim ", offs[j]);
      out_offset_of[offs[j]] = static_cast<int64_t>(j);
    }
    int64_t b = 0;
    for (int64_t d = 0; d < rs.rank(); ++d)
      if (out_offset_of[d] < 0) out_batch_of[d] = b++;
    for (int64_t d = 0; d < rs.rank(); ++d) {
      if (out_batch_of[d] >= 0 && rs.dimensions(d) != iv.batch_dims[out_batch_of[d]])
        return InvalidArgument("gather %", instr.name(), ": result ", rs.ToString(false),
                               " does not match the indices' batch dimensions");
      if (out_offset_of[d] >= 0 && rs.dimensions(d) != slice[window_operand_dims[out_offset_of[d]]])
        return InvalidArgument("gather %", instr.name(), ": result ", rs.ToString(false),
                               " does not match slice_sizes");
    }
  }
  // Clamped start of every batch position.
  const int64_t nbatch = eval_internal::ElementProduct(iv.batch_dims);
  std::vector<int64_t> starts(nbatch * orank, 0);
  std::vector<int64_t> bidx(iv.batch_dims.size(), 0);
  std::vector<int64_t> batching_pos;
  for (int64_t d : dn.start_indices_batching_dims) batching_pos.push_back(BatchPosition(iv, d));
  for (int64_t b = 0; b < nbatch; ++b) {
    int64_t* st = &starts[b * orank];
    const int64_t* v = iv.Vector(b);
    for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
      int64_t d = dn.start_index_map[k];
      if (d < 0 || d >= orank)
        return InvalidArgument("gather %", instr.name(), ": bad start_index_map entry ", d);
      st[d] = v[k];
    }
    for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
      if (batching_pos[i] < 0)
        return InvalidArgument("gather %", instr.name(), ": bad start_indices_batching_dims");
      st[dn.operand_batching_dims[i]] = bidx[batching_pos[i]];
    }
    for (int64_t d = 0; d < orank; ++d)
      st[d] = std::clamp<int64_t>(st[d], 0, os.dimensions(d) - slice[d]);
    NextRowMajorIndex(bidx, iv.batch_dims);
  }

  Literal out(rs);
  // An empty operand (a collapsed dimension of size 0 with slice size 0) has nothing to read:
  // every gathered element is zero, as XLA's gather simplifier rewrites such a gather.
  if (os.num_elements() == 0) return out;
  const int width = PrimitiveByteWidth(os.element_type());
  const std::vector<int64_t> ostrides = RowMajorStrides(os.dimensions());
  std::vector<int64_t> bstrides(iv.batch_dims.size(), 1);
  for (size_t i = iv.batch_dims.size(); i-- > 1;) bstrides[i - 1] = bstrides[i] * iv.batch_dims[i];
  const int64_t n = rs.num_elements();
  std::vector<int64_t> oi(rs.rank(), 0);
  const uint8_t* src = operand.untyped_data();
  uint8_t* dst = out.untyped_data();
  for (int64_t e = 0; e < n; ++e) {
    int64_t b = 0, lin = 0;
    for (int64_t d = 0; d < rs.rank(); ++d)
      if (out_batch_of[d] >= 0) b += oi[d] * bstrides[out_batch_of[d]];
    const int64_t* st = &starts[b * orank];
    for (int64_t d = 0; d < orank; ++d) lin += st[d] * ostrides[d];
    for (int64_t d = 0; d < rs.rank(); ++d)
      if (out_offset_of[d] >= 0) lin += oi[d] * ostrides[window_operand_dims[out_offset_of[d]]];
    std::memcpy(dst + e * width, src + lin * width, width);
    NextRowMajorIndex(oi, rs.dimensions());
  }
  return out;
}

StatusOr<Literal> EvalScatter(const HloInstruction& instr, std::span<const Literal* const> ops,
                              Evaluator& evaluator) {
  if (ops.size() < 3 || ops.size() % 2 == 0)
    return InvalidArgument("scatter %", instr.name(), " takes 2N+1 operands, got ", ops.size());
  const int64_t nops = static_cast<int64_t>(ops.size() - 1) / 2;
  for (size_t i = 0; i < ops.size(); ++i)
    KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[i], i));
  const HloAttributes& at = instr.attrs();
  if (!at.scatter_dimension_numbers)
    return InvalidArgument("scatter %", instr.name(), " has no dimension numbers");
  if (!instr.to_apply()) return InvalidArgument("scatter %", instr.name(), " has no to_apply");
  const ScatterDimensionNumbers& dn = *at.scatter_dimension_numbers;
  const Shape& os = ops[0]->shape();
  const Shape& us = ops[nops + 1]->shape();
  const int64_t orank = os.rank(), urank = us.rank();
  for (int64_t i = 1; i < nops; ++i)
    if (ops[i]->shape().dimensions() != os.dimensions() ||
        ops[nops + 1 + i]->shape().dimensions() != us.dimensions())
      return InvalidArgument("scatter %", instr.name(), ": operands or updates differ in shape");
  KILN_ASSIGN_OR_RETURN(IndexVectors iv, ReadIndexVectors(instr, *ops[nops], dn.index_vector_dim));
  if (iv.vector_size != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()))
    return InvalidArgument("scatter %", instr.name(), ": index vectors have ", iv.vector_size,
                           " entries, scatter_dims_to_operand_dims has ",
                           dn.scatter_dims_to_operand_dims.size());
  if (dn.input_batching_dims.size() != dn.scatter_indices_batching_dims.size())
    return InvalidArgument("scatter %", instr.name(), ": batching dimension lists differ");
  // Operand window dims (not inserted, not batching), matched in order with update_window_dims.
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < orank; ++d)
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d))
      window_operand_dims.push_back(d);
  std::vector<int64_t> uw = dn.update_window_dims;
  std::sort(uw.begin(), uw.end());
  if (uw.size() != window_operand_dims.size() ||
      urank != static_cast<int64_t>(uw.size() + iv.batch_dims.size()))
    return InvalidArgument("scatter %", instr.name(), ": updates ", us.ToString(false),
                           " do not match the dimension numbers");
  std::vector<int64_t> upd_window_of(urank, -1), upd_scatter_of(urank, -1);
  for (size_t j = 0; j < uw.size(); ++j) {
    if (uw[j] < 0 || uw[j] >= urank)
      return InvalidArgument("scatter %", instr.name(), ": bad update window dim ", uw[j]);
    upd_window_of[uw[j]] = static_cast<int64_t>(j);
  }
  {
    int64_t b = 0;
    for (int64_t d = 0; d < urank; ++d)
      if (upd_window_of[d] < 0) {
        if (us.dimensions(d) != iv.batch_dims[b])
          return InvalidArgument("scatter %", instr.name(), ": updates ", us.ToString(false),
                                 " do not match the indices' batch dimensions");
        upd_scatter_of[d] = b++;
      }
  }
  // Window extent per operand dim (1 for inserted / batching dims).
  std::vector<int64_t> window_size(orank, 1);
  for (size_t j = 0; j < uw.size(); ++j) window_size[window_operand_dims[j]] = us.dimensions(uw[j]);
  std::vector<int64_t> batching_pos;
  for (int64_t d : dn.scatter_indices_batching_dims) batching_pos.push_back(BatchPosition(iv, d));
  for (int64_t p : batching_pos)
    if (p < 0)
      return InvalidArgument("scatter %", instr.name(), ": bad scatter_indices_batching_dims");
  for (int64_t d : dn.scatter_dims_to_operand_dims)
    if (d < 0 || d >= orank)
      return InvalidArgument("scatter %", instr.name(), ": bad scatter_dims_to_operand_dims");

  std::vector<PrimitiveType> ptypes;
  for (int64_t i = 0; i < nops; ++i) ptypes.push_back(ops[i]->shape().element_type());
  for (int64_t i = 0; i < nops; ++i) ptypes.push_back(ops[nops + 1 + i]->shape().element_type());
  KILN_ASSIGN_OR_RETURN(eval_internal::ScalarCall combiner,
                        eval_internal::ScalarCall::Create(evaluator, *instr.to_apply(), ptypes,
                                                          static_cast<int>(nops)));
  std::vector<Literal> results;
  for (int64_t i = 0; i < nops; ++i) results.push_back(*ops[i]);
  std::vector<int> owidth, uwidth;
  for (int64_t i = 0; i < nops; ++i) {
    owidth.push_back(PrimitiveByteWidth(ops[i]->shape().element_type()));
    uwidth.push_back(PrimitiveByteWidth(ops[nops + 1 + i]->shape().element_type()));
  }
  const std::vector<int64_t> ostrides = RowMajorStrides(os.dimensions());
  const std::vector<int64_t> ustrides = RowMajorStrides(us.dimensions());
  // Iteration spaces: scatter dims of the updates (outer), window dims (inner).
  std::vector<int64_t> scatter_sizes, window_sizes_u;
  for (int64_t d = 0; d < urank; ++d) {
    if (upd_scatter_of[d] >= 0)
      scatter_sizes.push_back(us.dimensions(d));
    else
      window_sizes_u.push_back(us.dimensions(d));
  }
  std::vector<int64_t> scatter_upd_dims, window_upd_dims;
  for (int64_t d = 0; d < urank; ++d)
    (upd_scatter_of[d] >= 0 ? scatter_upd_dims : window_upd_dims).push_back(d);
  const int64_t nscatter = eval_internal::ElementProduct(scatter_sizes);
  const int64_t nwindow = eval_internal::ElementProduct(window_sizes_u);
  std::vector<int64_t> si(scatter_sizes.size(), 0), wi(window_sizes_u.size(), 0);
  std::vector<int64_t> start(orank);
  std::vector<const void*> args(2 * nops);
  std::vector<void*> res(nops);
  for (int64_t s = 0; s < nscatter; ++s, NextRowMajorIndex(si, scatter_sizes)) {
    if (nwindow == 0) continue;
    // The batch position in the indices equals the position over the update scatter dims
    // (both row-major over the same sizes in the same order).
    const int64_t* v = iv.Vector(s);
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k)
      start[dn.scatter_dims_to_operand_dims[k]] = v[k];
    for (size_t i = 0; i < dn.input_batching_dims.size(); ++i)
      start[dn.input_batching_dims[i]] = si[batching_pos[i]];
    bool in_bounds = true;
    for (int64_t d = 0; d < orank; ++d)
      if (start[d] < 0 || start[d] > os.dimensions(d) - window_size[d]) in_bounds = false;
    if (!in_bounds) continue;
    int64_t obase = 0, ubase = 0;
    for (int64_t d = 0; d < orank; ++d) obase += start[d] * ostrides[d];
    for (size_t j = 0; j < scatter_upd_dims.size(); ++j)
      ubase += si[j] * ustrides[scatter_upd_dims[j]];
    std::fill(wi.begin(), wi.end(), 0);
    for (int64_t w = 0; w < nwindow; ++w, NextRowMajorIndex(wi, window_sizes_u)) {
      int64_t olin = obase, ulin = ubase;
      for (size_t j = 0; j < window_upd_dims.size(); ++j) {
        const int64_t ud = window_upd_dims[j];
        ulin += wi[j] * ustrides[ud];
        olin += wi[j] * ostrides[window_operand_dims[upd_window_of[ud]]];
      }
      for (int64_t i = 0; i < nops; ++i) {
        void* p = results[i].untyped_data() + olin * owidth[i];
        args[i] = p;
        res[i] = p;
        args[nops + i] = ops[nops + 1 + i]->untyped_data() + ulin * uwidth[i];
      }
      KILN_RETURN_IF_ERROR(combiner.Run(args, res));
    }
  }
  if (nops == 1) return std::move(results[0]);
  return Literal::MakeTuple(std::move(results));
}

}  // namespace

void RegisterGatherScatterKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kGather, EvalGather);
  r.Register(HloOpcode::kScatter, EvalScatter);
}

}  // namespace kiln
