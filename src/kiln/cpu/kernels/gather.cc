// The gather kernel, with XLA's full dimension numbers (batching dimensions too) and the
// evaluator's semantics (eval/gather_scatter.cc): each start is clamped so the whole slice fits.
//
// The output is walked as rows of its innermost dimension: a row is a strided run of operand
// elements (copied with memcpy when contiguous) when that dimension is an offset dimension, or
// one element from each of consecutive index vectors when it is a batch dimension. Rows are split
// across threads; the clamped start of every index vector is computed once per run.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/indexing_util.h"
#include "kiln/cpu/kernels/kernels.h"

namespace kiln::cpu::internal {
namespace {

// ---------------------------------------------------------------------------------------------
// gather

class GatherKernel final : public CpuKernel {
 public:
  std::string name_;
  CpuKernelOptions options_;
  Shape operand_shape_, indices_shape_, out_shape_;
  IndexReader idx_;
  int width_ = 0;
  std::vector<int64_t> start_index_map_, slice_;
  std::vector<int64_t> operand_batching_dims_, batching_pos_;  // pos in the indices' batch dims
  std::vector<int64_t> ostrides_, bstrides_;
  // Per output dim: operand stride (offset dims) or batch stride (batch dims; 0 for offset).
  std::vector<int64_t> out_ostride_, out_bstride_;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 2 || outputs.size() != 1)
      return InvalidArgument(name_, ": expected 2 inputs and 1 output");
    if (inputs[0].shape.dimensions() != operand_shape_.dimensions() ||
        inputs[1].shape.dimensions() != indices_shape_.dimensions() ||
        outputs[0].shape.dimensions() != out_shape_.dimensions())
      return InvalidArgument(name_, ": views do not match the instruction");
    const int64_t n = out_shape_.num_elements();
    if (n == 0) return OkStatus();
    if (operand_shape_.num_elements() == 0) {  // nothing to read: zeros, as the evaluator
      std::memset(outputs[0].data, 0, static_cast<size_t>(n) * width_);
      return OkStatus();
    }
    const int64_t orank = operand_shape_.rank();
    const int64_t nbatch = idx_.batch_count();
    // Linear operand offset of every batch position's clamped start.
    std::vector<int64_t> starts(nbatch);
    ParallelFor(ctx, nbatch, 4096, [&](int64_t b0, int64_t b1) {
      std::vector<int64_t> v(idx_.vector_size), st(orank);
      for (int64_t b = b0; b < b1; ++b) {
        std::fill(st.begin(), st.end(), 0);
        idx_.Read(inputs[1].data, b, v.data());
        for (size_t k = 0; k < start_index_map_.size(); ++k) st[start_index_map_[k]] = v[k];
        for (size_t i = 0; i < operand_batching_dims_.size(); ++i) {
          const int64_t p = batching_pos_[i];
          st[operand_batching_dims_[i]] = (b / bstrides_[p]) % idx_.batch_dims[p];
        }
        int64_t lin = 0;
        for (int64_t d = 0; d < orank; ++d)
          lin += std::clamp<int64_t>(st[d], 0, operand_shape_.dimensions(d) - slice_[d]) *
                 ostrides_[d];
        starts[b] = lin;
      }
    });
    const int64_t rank = out_shape_.rank();
    const std::vector<int64_t>& od = out_shape_.dimensions();
    const int64_t inner = rank == 0 ? 1 : od[rank - 1];
    const int64_t rows = n / inner;
    const int64_t in_os = rank == 0 ? 0 : out_ostride_[rank - 1];
    const int64_t in_bs = rank == 0 ? 0 : out_bstride_[rank - 1];
    const uint8_t* src = static_cast<const uint8_t*>(inputs[0].data);
    uint8_t* dst = static_cast<uint8_t*>(outputs[0].data);
    const int w = width_;
    ParallelFor(ctx, rows, std::max<int64_t>(1, options_.min_parallel_elements / inner),
                [&](int64_t r0, int64_t r1) {
                  std::vector<int64_t> idx(std::max<int64_t>(rank - 1, 0));
                  int64_t rem = r0;
                  for (int64_t d = rank - 2; d >= 0; --d) {
                    idx[d] = rem % od[d];
                    rem /= od[d];
                  }
                  for (int64_t r = r0; r < r1; ++r) {
                    int64_t b = 0, off = 0;
                    for (int64_t d = 0; d + 1 < rank; ++d) {
                      b += idx[d] * out_bstride_[d];
                      off += idx[d] * out_ostride_[d];
                    }
                    uint8_t* drow = dst + r * inner * w;
                    if (in_bs == 0) {
                      StridedCopy(drow, 1, src + (starts[b] + off) * w, in_os, inner, w);
                    } else {
                      for (int64_t i = 0; i < inner; ++i)
                        std::memcpy(drow + i * w, src + (starts[b + i * in_bs] + off) * w, w);
                    }
                    for (int64_t d = rank - 2; d >= 0; --d) {
                      if (++idx[d] < od[d]) break;
                      idx[d] = 0;
                    }
                  }
                });
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateGatherKernel(const HloInstruction& instr,
                                                        const CpuKernelOptions& options) {
  if (instr.opcode() != HloOpcode::kGather || instr.operand_count() != 2)
    return Unimplemented("gather kernel: not a gather");
  const HloAttributes& at = instr.attrs();
  if (!at.gather_dimension_numbers)
    return InvalidArgument("gather %", instr.name(), " has no dimension numbers");
  const GatherDimensionNumbers& dn = *at.gather_dimension_numbers;
  const Shape& os = instr.operand(0)->shape();
  const Shape& is = instr.operand(1)->shape();
  const Shape& rs = instr.shape();
  if (!os.IsArray() || !rs.IsArray()) return InvalidArgument("gather: shapes");
  auto k = std::make_unique<GatherKernel>();
  KILN_ASSIGN_OR_RETURN(k->idx_, IndexReader::Create(instr, is, dn.index_vector_dim));
  const int64_t orank = os.rank();
  const std::vector<int64_t>& slice = at.gather_slice_sizes;
  auto bad = [&](std::string_view what) {
    return InvalidArgument("gather %", instr.name(), ": ", what);
  };
  if (static_cast<int64_t>(slice.size()) != orank) return bad("slice_sizes rank");
  if (k->idx_.vector_size != static_cast<int64_t>(dn.start_index_map.size()))
    return bad("index vector size != start_index_map size");
  if (dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size())
    return bad("batching dimension lists differ in size");
  for (int64_t d = 0; d < orank; ++d)
    if (slice[d] < 0 || slice[d] > os.dimensions(d)) return bad("slice size out of range");
  for (int64_t d : dn.start_index_map)
    if (d < 0 || d >= orank) return bad("bad start_index_map");
  for (int64_t d : dn.operand_batching_dims)
    if (d < 0 || d >= orank) return bad("bad operand_batching_dims");
  std::vector<int64_t> window_dims;
  for (int64_t d = 0; d < orank; ++d)
    if (!Contains(dn.collapsed_slice_dims, d) && !Contains(dn.operand_batching_dims, d))
      window_dims.push_back(d);
  const int64_t nb = static_cast<int64_t>(k->idx_.batch_dims.size());
  if (window_dims.size() != dn.offset_dims.size() ||
      rs.rank() != static_cast<int64_t>(window_dims.size()) + nb)
    return bad("result does not match the dimension numbers");
  k->ostrides_ = Strides(os.dimensions());
  k->bstrides_ = Strides(k->idx_.batch_dims);
  // Indices dimension -> batch position.
  const int64_t ivd = dn.index_vector_dim;
  for (int64_t d : dn.start_indices_batching_dims) {
    if (d == ivd || d < 0 || d >= is.rank()) return bad("bad start_indices_batching_dims");
    k->batching_pos_.push_back(d < ivd ? d : d - 1);
  }
  std::vector<int64_t> offs = dn.offset_dims;
  std::sort(offs.begin(), offs.end());
  k->out_ostride_.assign(rs.rank(), 0);
  k->out_bstride_.assign(rs.rank(), 0);
  int64_t b = 0, o = 0;
  for (int64_t d = 0; d < rs.rank(); ++d) {
    if (o < static_cast<int64_t>(offs.size()) && offs[o] == d) {
      const int64_t od = window_dims[o++];
      if (rs.dimensions(d) != slice[od]) return bad("result does not match slice_sizes");
      k->out_ostride_[d] = k->ostrides_[od];
    } else {
      if (b >= nb || rs.dimensions(d) != k->idx_.batch_dims[b])
        return bad("result does not match the indices' batch dimensions");
      k->out_bstride_[d] = k->bstrides_[b++];
    }
  }
  if (o != static_cast<int64_t>(offs.size())) return bad("bad offset_dims");
  k->options_ = options;
  k->operand_shape_ = os;
  k->indices_shape_ = is;
  k->out_shape_ = rs;
  k->width_ = PrimitiveByteWidth(os.element_type());
  k->start_index_map_ = dn.start_index_map;
  k->slice_ = slice;
  k->operand_batching_dims_ = dn.operand_batching_dims;
  k->name_ = StrCat("gather[", ShapeText(os), " at ", ShapeText(is), " -> ", ShapeText(rs), "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
