// The transpose kernel: dimensions of size 1 dropped and dimensions that stay adjacent merged;
// then either a batched copy of contiguous rows (the input's innermost dimension stays
// innermost) or cache-blocked 32x32 tiles over the two innermost dimensions (input's and
// output's), all other dimensions outer, split across threads.
#include <algorithm>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"

namespace kiln::cpu::internal {
namespace {

struct B16 {
  uint64_t a, b;
};

class TransposeKernel final : public CpuKernel {
 public:
  std::string name_;
  std::vector<int64_t> in_dims_;   // collapsed input dims
  std::vector<int64_t> perm_;      // collapsed: output dim i = input dim perm_[i]
  int width_ = 4;
  int64_t total_ = 0;
  CpuKernelOptions options_;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 1 || outputs.size() != 1 || inputs[0].shape.num_elements() != total_ ||
        outputs[0].shape.num_elements() != total_)
      return InvalidArgument(name_, ": views do not match");
    if (total_ == 0) return OkStatus();
    switch (width_) {
      case 1: Go<uint8_t>(inputs[0].data, outputs[0].data, ctx); break;
      case 2: Go<uint16_t>(inputs[0].data, outputs[0].data, ctx); break;
      case 4: Go<uint32_t>(inputs[0].data, outputs[0].data, ctx); break;
      case 8: Go<uint64_t>(inputs[0].data, outputs[0].data, ctx); break;
      case 16: Go<B16>(inputs[0].data, outputs[0].data, ctx); break;
      default: return Internal(name_, ": element width ", width_);
    }
    return OkStatus();
  }

  template <class T>
  void Go(const void* src_v, void* dst_v, const KernelContext& ctx) const {
    const T* src = static_cast<const T*>(src_v);
    T* dst = static_cast<T*>(dst_v);
    const int64_t rank = static_cast<int64_t>(perm_.size());
    if (rank <= 1) {
      ParallelCopy(ctx, dst, src, total_ * static_cast<int64_t>(sizeof(T)));
      return;
    }
    const std::vector<int64_t> istr = RowMajorStrides(in_dims_);
    std::vector<int64_t> out_dims(rank);
    for (int64_t i = 0; i < rank; ++i) out_dims[i] = in_dims_[perm_[i]];
    // Input stride of each output dim.
    std::vector<int64_t> ostr_in(rank);
    for (int64_t i = 0; i < rank; ++i) ostr_in[i] = istr[perm_[i]];
    const std::vector<int64_t> ostr = RowMajorStrides(out_dims);
    if (perm_[rank - 1] == rank - 1) {
      // Rows of the input's innermost dimension stay contiguous.
      const int64_t row = out_dims[rank - 1];
      const int64_t rows = total_ / row;
      ParallelFor(ctx, rows, std::max<int64_t>(1, options_.min_parallel_elements / row),
                  [&](int64_t r0, int64_t r1) {
                    for (int64_t r = r0; r < r1; ++r) {
                      int64_t rem = r, in = 0;
                      for (int64_t d = rank - 2; d >= 0; --d) {
                        in += (rem % out_dims[d]) * ostr_in[d];
                        rem /= out_dims[d];
                      }
                      std::memcpy(dst + r * row, src + in, row * sizeof(T));
                    }
                  });
      return;
    }
    // Output dim q reads the input's innermost dim; the output's innermost dim reads input dim p.
    int64_t q = 0;
    for (int64_t i = 0; i < rank; ++i)
      if (perm_[i] == rank - 1) q = i;
    const int64_t rows_q = out_dims[q], cols = out_dims[rank - 1];
    const int64_t in_col_stride = ostr_in[rank - 1];  // input stride along the output's columns
    const int64_t out_row_stride = ostr[q];
    // Outer dims: all output dims but q and rank-1.
    std::vector<int64_t> outer_dims, outer_in, outer_out;
    for (int64_t i = 0; i < rank - 1; ++i) {
      if (i == q) continue;
      outer_dims.push_back(out_dims[i]);
      outer_in.push_back(ostr_in[i]);
      outer_out.push_back(ostr[i]);
    }
    int64_t outer = 1;
    for (int64_t d : outer_dims) outer *= d;
    constexpr int64_t kTile = sizeof(T) <= 2 ? 64 : 32;
    const int64_t tr = (rows_q + kTile - 1) / kTile, tc = (cols + kTile - 1) / kTile;
    const int64_t tasks = outer * tr * tc;
    ParallelFor(ctx, tasks, std::max<int64_t>(1, options_.min_parallel_elements / (kTile * kTile)),
                [&](int64_t t0, int64_t t1) {
                  for (int64_t t = t0; t < t1; ++t) {
                    const int64_t o = t / (tr * tc), ti = (t / tc) % tr, tj = t % tc;
                    int64_t rem = o, ib = 0, ob = 0;
                    for (int64_t d = static_cast<int64_t>(outer_dims.size()) - 1; d >= 0; --d) {
                      const int64_t x = rem % outer_dims[d];
                      rem /= outer_dims[d];
                      ib += x * outer_in[d];
                      ob += x * outer_out[d];
                    }
                    const int64_t i0 = ti * kTile, i1 = std::min(rows_q, i0 + kTile);
                    const int64_t j0 = tj * kTile, j1 = std::min(cols, j0 + kTile);
                    for (int64_t i = i0; i < i1; ++i) {
                      T* __restrict d = dst + ob + i * out_row_stride;
                      const T* __restrict s = src + ib + i;  // input innermost index i
                      for (int64_t j = j0; j < j1; ++j) d[j] = s[j * in_col_stride];
                    }
                  }
                });
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateTransposeKernel(const HloInstruction& instr,
                                                           const CpuKernelOptions& options) {
  if (instr.opcode() != HloOpcode::kTranspose || instr.operand_count() != 1)
    return Unimplemented("transpose kernel: not a transpose");
  const Shape& is = instr.operand(0)->shape();
  const std::vector<int64_t>& perm = instr.attrs().dimensions;
  if (!is.IsArray() || static_cast<int64_t>(perm.size()) != is.rank())
    return InvalidArgument("transpose %", instr.name(), ": bad dimensions");
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= is.rank() || seen[perm[i]])
      return InvalidArgument("transpose %", instr.name(), ": bad dimensions");
    seen[perm[i]] = true;
    if (instr.shape().dimensions(i) != is.dimensions(perm[i]))
      return InvalidArgument("transpose %", instr.name(), ": result shape");
  }
  auto k = std::make_unique<TransposeKernel>();
  k->width_ = PrimitiveByteWidth(is.element_type());
  k->total_ = is.num_elements();
  k->options_ = options;
  // Drop size-1 dims, then merge output-adjacent dims that are input-adjacent.
  std::vector<int64_t> keep_in;  // input dims kept, in input order
  for (int64_t d = 0; d < is.rank(); ++d)
    if (is.dimensions(d) != 1) keep_in.push_back(d);
  std::vector<int64_t> p;  // output order of kept input dims
  for (int64_t d : perm)
    if (is.dimensions(d) != 1) p.push_back(d);
  // Groups: maximal runs of p that are consecutive input dims.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t d : p) {
    if (!groups.empty() && groups.back().back() + 1 == d) {
      // consecutive among kept dims? (size-1 dims between them do not matter)
      groups.back().push_back(d);
      continue;
    }
    auto it = std::find(keep_in.begin(), keep_in.end(), d);
    if (!groups.empty() && it != keep_in.begin() && *(it - 1) == groups.back().back()) {
      groups.back().push_back(d);
      continue;
    }
    groups.push_back({d});
  }
  // Input order of the groups.
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return groups[a].front() < groups[b].front(); });
  std::vector<int64_t> rank_of(groups.size());
  for (size_t i = 0; i < order.size(); ++i) rank_of[order[i]] = static_cast<int64_t>(i);
  for (size_t i = 0; i < order.size(); ++i) {
    int64_t size = 1;
    for (int64_t d : groups[order[i]]) size *= is.dimensions(d);
    k->in_dims_.push_back(size);
  }
  for (size_t g = 0; g < groups.size(); ++g) k->perm_.push_back(rank_of[g]);
  bool identity = true;
  for (size_t i = 0; i < k->perm_.size(); ++i) identity &= k->perm_[i] == static_cast<int64_t>(i);
  if (identity) {
    k->perm_.clear();
    k->in_dims_ = {k->total_};
  }
  k->name_ = StrCat("transpose[", ShapeText(is), " {", StrJoin(perm, ","), "} as [",
                    StrJoin(k->in_dims_, ","), "] {", StrJoin(k->perm_, ","), "}]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
