// The scatter kernel, with XLA's full dimension numbers (batching dimensions too) and the
// evaluator's semantics (eval/gather_scatter.cc): a window that does not fit entirely in the
// operand is skipped; windows apply in row-major order of the update scatter dimensions, so
// repeated indices with any combiner give the evaluator's (and XLA's) result.
//
// The outputs start as copies of the operands (skipped when buffer assignment made them in
// place: SupportsInPlace(i, i)). A window is walked as runs along its innermost update window
// dimension. Threads own disjoint ranges of operand elements and each walks every window in order,
// applying only the elements it owns: every operand element sees its updates in the sequential
// order, so results do not depend on the thread count.
//
// Combiners: replace (the update, or a tuple of the updates), and add / multiply / maximum /
// minimum of operand and update run natively for f32, f64 and the 32/64-bit integers with the
// evaluator's element semantics (eval/elementwise_ops.h); other single-op combiners run the
// evaluator's element function, any other scalar combiner (variadic too) the evaluator's
// compiled ScalarProgram. A combiner that does not compile falls back to the evaluator's kernel.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/indexing_util.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/eval/elementwise_ops.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu::internal {
namespace {

// Applies a combiner to n elements: dst[i * ds] = f(dst[i * ds], upd[i * us]).
using RunFn = void (*)(uint8_t* dst, int64_t ds, const uint8_t* upd, int64_t us, int64_t n);

template <class Op, class T, bool kSwap>
void NativeRun(uint8_t* dst, int64_t ds, const uint8_t* upd, int64_t us, int64_t n) {
  T* d = reinterpret_cast<T*>(dst);
  const T* u = reinterpret_cast<const T*>(upd);
  if (ds == 1 && us == 1) {
    for (int64_t i = 0; i < n; ++i)
      d[i] = kSwap ? Op::template Apply<T>(nullptr, u[i], d[i])
                   : Op::template Apply<T>(nullptr, d[i], u[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      d[i * ds] = kSwap ? Op::template Apply<T>(nullptr, u[i * us], d[i * ds])
                        : Op::template Apply<T>(nullptr, d[i * ds], u[i * us]);
  }
}

template <class Op, bool kSwap>
RunFn NativeFor(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF32: return NativeRun<Op, float, kSwap>;
    case PrimitiveType::kF64: return NativeRun<Op, double, kSwap>;
    case PrimitiveType::kS32: return NativeRun<Op, int32_t, kSwap>;
    case PrimitiveType::kS64: return NativeRun<Op, int64_t, kSwap>;
    case PrimitiveType::kU32: return NativeRun<Op, uint32_t, kSwap>;
    case PrimitiveType::kU64: return NativeRun<Op, uint64_t, kSwap>;
    default: return nullptr;
  }
}

template <bool kSwap>
RunFn NativeOp(HloOpcode op, PrimitiveType t) {
  using namespace eval_internal;  // NOLINT
  switch (op) {
    case HloOpcode::kAdd: return NativeFor<AddOp, kSwap>(t);
    case HloOpcode::kMultiply: return NativeFor<MultiplyOp, kSwap>(t);
    case HloOpcode::kMaximum: return NativeFor<MaximumOp, kSwap>(t);
    case HloOpcode::kMinimum: return NativeFor<MinimumOp, kSwap>(t);
    default: return nullptr;
  }
}

class ScatterKernel final : public CpuKernel {
 public:
  std::string name_;
  CpuKernelOptions options_;
  int64_t nops_ = 1;
  Shape operand_shape_, indices_shape_, update_shape_;
  std::vector<int> owidth_, uwidth_;
  IndexReader idx_;
  std::vector<int64_t> scatter_dims_to_operand_dims_, input_batching_dims_, batching_pos_;
  std::vector<int64_t> window_size_;  // per operand dim
  std::vector<int64_t> ostrides_, bstrides_;
  std::vector<int64_t> upd_scatter_dims_;  // update dims that enumerate index vectors
  int64_t window_span_ = 0;                // operand offset of a window's last element
  // The window as runs: the innermost update window dim (length run_len_, strides run_os_ in
  // the operand and run_us_ in the update) and, per run, its offsets from the window start.
  int64_t run_len_ = 1, run_os_ = 1, run_us_ = 1;
  std::vector<int64_t> run_ooff_, run_uoff_;
  // Combiner.
  bool replace_ = false;
  RunFn native_ = nullptr;
  eval_internal::ElementFn element_fn_ = nullptr;  // single op of (operand, update)
  const HloInstruction* element_instr_ = nullptr;
  bool element_swap_ = false;  // element_fn_ takes (update, operand)
  std::unique_ptr<ScalarProgram> program_;

  std::string name() const override { return name_; }
  bool SupportsInPlace(int64_t output, int64_t operand) const override {
    return output == operand && output < nops_;
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (static_cast<int64_t>(inputs.size()) != 2 * nops_ + 1 ||
        static_cast<int64_t>(outputs.size()) != nops_)
      return InvalidArgument(name_, ": wrong number of inputs or outputs");
    for (int64_t i = 0; i < nops_; ++i)
      if (inputs[i].shape.dimensions() != operand_shape_.dimensions() ||
          outputs[i].shape.dimensions() != operand_shape_.dimensions() ||
          inputs[nops_ + 1 + i].shape.dimensions() != update_shape_.dimensions())
        return InvalidArgument(name_, ": views do not match the instruction");
    if (inputs[nops_].shape.dimensions() != indices_shape_.dimensions())
      return InvalidArgument(name_, ": indices view does not match the instruction");
    for (int64_t i = 0; i < nops_; ++i)
      if (outputs[i].data != inputs[i].data)
        ParallelCopy(ctx, outputs[i].data, inputs[i].data, outputs[i].byte_size());
    const int64_t nscatter = idx_.batch_count();
    const int64_t nruns = static_cast<int64_t>(run_ooff_.size());
    const int64_t osize = operand_shape_.num_elements();
    if (nscatter == 0 || nruns == 0 || run_len_ == 0 || osize == 0) return OkStatus();
    const int64_t orank = operand_shape_.rank();
    // Window start (operand offset) of every index vector, -1 when out of bounds.
    std::vector<int64_t> starts(nscatter);
    ParallelFor(ctx, nscatter, 4096, [&](int64_t s0, int64_t s1) {
      std::vector<int64_t> v(idx_.vector_size), st(orank);
      for (int64_t s = s0; s < s1; ++s) {
        std::fill(st.begin(), st.end(), 0);
        idx_.Read(inputs[nops_].data, s, v.data());
        for (size_t k = 0; k < scatter_dims_to_operand_dims_.size(); ++k)
          st[scatter_dims_to_operand_dims_[k]] = v[k];
        for (size_t i = 0; i < input_batching_dims_.size(); ++i) {
          const int64_t p = batching_pos_[i];
          st[input_batching_dims_[i]] = (s / bstrides_[p]) % idx_.batch_dims[p];
        }
        int64_t lin = 0;
        for (int64_t d = 0; d < orank && lin >= 0; ++d) {
          if (st[d] < 0 || st[d] > operand_shape_.dimensions(d) - window_size_[d]) lin = -1;
          else lin += st[d] * ostrides_[d];
        }
        starts[s] = lin;
      }
    });
    // Update offset of every index vector's window.
    const std::vector<int64_t> ustrides = Strides(update_shape_.dimensions());
    std::vector<int64_t> ubase(nscatter);
    {
      std::vector<int64_t> si(upd_scatter_dims_.size(), 0);
      for (int64_t s = 0; s < nscatter; ++s) {
        int64_t u = 0;
        for (size_t j = 0; j < si.size(); ++j) u += si[j] * ustrides[upd_scatter_dims_[j]];
        ubase[s] = u;
        for (size_t j = si.size(); j-- > 0;) {
          if (++si[j] < update_shape_.dimensions(upd_scatter_dims_[j])) break;
          si[j] = 0;
        }
      }
    }
    std::vector<uint8_t*> out(nops_);
    std::vector<const uint8_t*> upd(nops_);
    for (int64_t i = 0; i < nops_; ++i) {
      out[i] = static_cast<uint8_t*>(outputs[i].data);
      upd[i] = static_cast<const uint8_t*>(inputs[nops_ + 1 + i].data);
    }
    // Threads own operand ranges [lo, hi).
    const int64_t work = nscatter * nruns * run_len_;
    int64_t parts = 1;
    if (work >= 2 * options_.min_parallel_elements && ctx.pool != nullptr)
      parts = std::min<int64_t>(NumThreads(ctx), osize);
    ParallelFor(ctx, parts, 1, [&](int64_t p0, int64_t p1) {
      std::vector<const void*> args(2 * nops_);
      std::vector<void*> res(nops_);
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t lo = osize * p / parts, hi = osize * (p + 1) / parts;
        for (int64_t s = 0; s < nscatter; ++s) {
          const int64_t start = starts[s];
          if (start < 0 || start + window_span_ < lo || start >= hi) continue;
          for (int64_t r = 0; r < nruns; ++r) {
            const int64_t o0 = start + run_ooff_[r];
            int64_t i0 = 0, i1 = run_len_;
            if (o0 < lo) i0 = (lo - o0 + run_os_ - 1) / run_os_;
            if (o0 + (run_len_ - 1) * run_os_ >= hi) i1 = std::min(i1, (hi - o0 + run_os_ - 1) / run_os_);
            if (i0 >= i1) continue;
            const int64_t ob = o0 + i0 * run_os_, ub = ubase[s] + run_uoff_[r] + i0 * run_us_;
            Apply(out, upd, ob, ub, i1 - i0, args, res);
          }
        }
      }
    });
    return OkStatus();
  }

  // Combines n elements from operand offset ob (stride run_os_) and update offset ub (stride
  // run_us_).
  void Apply(const std::vector<uint8_t*>& out, const std::vector<const uint8_t*>& upd, int64_t ob,
             int64_t ub, int64_t n, std::vector<const void*>& args,
             std::vector<void*>& res) const {
    if (replace_) {
      for (int64_t i = 0; i < nops_; ++i)
        StridedCopy(out[i] + ob * owidth_[i], run_os_, upd[i] + ub * uwidth_[i], run_us_, n,
                    owidth_[i]);
      return;
    }
    if (native_) {
      native_(out[0] + ob * owidth_[0], run_os_, upd[0] + ub * uwidth_[0], run_us_, n);
      return;
    }
    if (element_fn_) {
      const int ow = owidth_[0], uw = uwidth_[0];
      for (int64_t i = 0; i < n; ++i) {
        uint8_t* d = out[0] + (ob + i * run_os_) * ow;
        const void* in[2] = {d, upd[0] + (ub + i * run_us_) * uw};
        if (element_swap_) std::swap(in[0], in[1]);
        alignas(16) uint8_t tmp[16];
        element_fn_(element_instr_, in, tmp);
        std::memcpy(d, tmp, ow);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < nops_; ++j) {
        uint8_t* d = out[j] + (ob + i * run_os_) * owidth_[j];
        args[j] = d;
        res[j] = d;
        args[nops_ + j] = upd[j] + (ub + i * run_us_) * uwidth_[j];
      }
      program_->Run(args, res);
    }
  }
};

// Recognizes the combiner; Unimplemented when it does not compile to a scalar program.
Status SetCombiner(ScatterKernel& k, const HloComputation& comp,
                   const std::vector<PrimitiveType>& ptypes) {
  const int64_t nops = k.nops_;
  const HloInstruction* root = comp.root_instruction();
  auto param = [&](const HloInstruction* i, int64_t n) {
    return i->opcode() == HloOpcode::kParameter && i->parameter_number() == n;
  };
  if (comp.num_parameters() != 2 * nops)
    return InvalidArgument("scatter combiner takes ", comp.num_parameters(), " parameters, not ",
                           2 * nops);
  for (int64_t i = 0; i < 2 * nops; ++i) {
    const Shape& s = comp.parameter_instruction(i)->shape();
    if (!s.IsArray() || s.rank() != 0 || s.element_type() != ptypes[i])
      return InvalidArgument("scatter combiner parameter ", i, " has the wrong type");
  }
  if (nops == 1 && param(root, 1)) {
    k.replace_ = true;
    return OkStatus();
  }
  if (nops > 1 && root->opcode() == HloOpcode::kTuple && root->operand_count() == nops) {
    bool all = true;
    for (int64_t i = 0; i < nops; ++i) all &= param(root->operand(i), nops + i);
    if (all) {
      k.replace_ = true;
      return OkStatus();
    }
  }
  if (nops == 1 && root->operand_count() == 2 && root->shape().IsArray() &&
      root->shape().element_type() == ptypes[0] && ptypes[0] == ptypes[1]) {
    const bool direct = param(root->operand(0), 0) && param(root->operand(1), 1);
    const bool swapped = param(root->operand(0), 1) && param(root->operand(1), 0);
    if (direct) k.native_ = NativeOp<false>(root->opcode(), ptypes[0]);
    if (swapped) k.native_ = NativeOp<true>(root->opcode(), ptypes[0]);
    if (k.native_) return OkStatus();
  }
  k.program_ = ScalarProgram::Compile(comp);
  if (!k.program_) return Unimplemented("scatter kernel: the combiner is not a scalar program");
  if (k.program_->num_parameters() != 2 * nops || k.program_->num_results() != nops)
    return Unimplemented("scatter kernel: combiner arity");
  for (int64_t i = 0; i < nops; ++i)
    if (k.program_->result_type(i) != ptypes[i])
      return InvalidArgument("scatter combiner result ", i, " has the wrong type");
  if (nops == 1 && k.program_->single_op()) {
    const std::vector<int>& ps = k.program_->single_op_params();
    if (ps.size() == 2 && ps[0] != ps[1]) {
      k.element_fn_ = k.program_->single_op();
      k.element_instr_ = k.program_->single_op_instr();
      k.element_swap_ = ps[0] == 1;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateScatterKernel(const HloInstruction& instr,
                                                         const CpuKernelOptions& options) {
  if (instr.opcode() != HloOpcode::kScatter) return Unimplemented("scatter kernel: not a scatter");
  const int64_t nin = instr.operand_count();
  if (nin < 3 || nin % 2 == 0)
    return InvalidArgument("scatter %", instr.name(), " takes 2N+1 operands");
  const HloAttributes& at = instr.attrs();
  if (!at.scatter_dimension_numbers || !instr.to_apply())
    return InvalidArgument("scatter %", instr.name(), " has no dimension numbers or combiner");
  auto bad = [&](std::string_view what) {
    return InvalidArgument("scatter %", instr.name(), ": ", what);
  };
  const ScatterDimensionNumbers& dn = *at.scatter_dimension_numbers;
  auto k = std::make_unique<ScatterKernel>();
  k->options_ = options;
  k->nops_ = (nin - 1) / 2;
  const int64_t nops = k->nops_;
  const Shape& os = instr.operand(0)->shape();
  const Shape& is = instr.operand(nops)->shape();
  const Shape& us = instr.operand(nops + 1)->shape();
  std::vector<PrimitiveType> ptypes;
  for (int64_t i = 0; i < nin; ++i)
    if (!instr.operand(i)->shape().IsArray()) return bad("operands must be arrays");
  for (int64_t i = 0; i < nops; ++i) {
    if (instr.operand(i)->shape().dimensions() != os.dimensions() ||
        instr.operand(nops + 1 + i)->shape().dimensions() != us.dimensions())
      return bad("operands or updates differ in shape");
    ptypes.push_back(instr.operand(i)->shape().element_type());
    k->owidth_.push_back(PrimitiveByteWidth(ptypes.back()));
  }
  for (int64_t i = 0; i < nops; ++i) {
    ptypes.push_back(instr.operand(nops + 1 + i)->shape().element_type());
    k->uwidth_.push_back(PrimitiveByteWidth(ptypes.back()));
    if (ptypes.back() != ptypes[i])
      return Unimplemented("scatter kernel: operand and update types differ");
  }
  KILN_ASSIGN_OR_RETURN(k->idx_, IndexReader::Create(instr, is, dn.index_vector_dim));
  const int64_t orank = os.rank(), urank = us.rank();
  if (k->idx_.vector_size != static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()))
    return bad("index vector size != scatter_dims_to_operand_dims size");
  if (dn.input_batching_dims.size() != dn.scatter_indices_batching_dims.size())
    return bad("batching dimension lists differ");
  for (int64_t d : dn.scatter_dims_to_operand_dims)
    if (d < 0 || d >= orank) return bad("bad scatter_dims_to_operand_dims");
  for (int64_t d : dn.input_batching_dims)
    if (d < 0 || d >= orank) return bad("bad input_batching_dims");
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < orank; ++d)
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d))
      window_operand_dims.push_back(d);
  std::vector<int64_t> uw = dn.update_window_dims;
  std::sort(uw.begin(), uw.end());
  const int64_t nb = static_cast<int64_t>(k->idx_.batch_dims.size());
  if (uw.size() != window_operand_dims.size() || urank != static_cast<int64_t>(uw.size()) + nb)
    return bad("updates do not match the dimension numbers");
  for (int64_t d : uw)
    if (d < 0 || d >= urank) return bad("bad update_window_dims");
  k->ostrides_ = Strides(os.dimensions());
  k->bstrides_ = Strides(k->idx_.batch_dims);
  k->window_size_.assign(orank, 1);
  std::vector<int64_t> win_upd_dims, win_ostride;
  {
    size_t w = 0;
    int64_t b = 0;
    for (int64_t d = 0; d < urank; ++d) {
      if (w < uw.size() && uw[w] == d) {
        const int64_t od = window_operand_dims[w++];
        // A window larger than the operand never fits: every window is skipped.
        k->window_size_[od] = us.dimensions(d);
        win_upd_dims.push_back(d);
        win_ostride.push_back(k->ostrides_[od]);
      } else {
        if (us.dimensions(d) != k->idx_.batch_dims[b++])
          return bad("updates do not match the indices' batch dimensions");
        k->upd_scatter_dims_.push_back(d);
      }
    }
  }
  const int64_t ivd = dn.index_vector_dim;
  for (int64_t d : dn.scatter_indices_batching_dims) {
    if (d == ivd || d < 0 || d >= is.rank()) return bad("bad scatter_indices_batching_dims");
    k->batching_pos_.push_back(d < ivd ? d : d - 1);
  }
  for (int64_t d = 0; d < orank; ++d)
    k->window_span_ += std::max<int64_t>(k->window_size_[d] - 1, 0) * k->ostrides_[d];
  // Runs along the innermost window dim.
  const std::vector<int64_t> ustrides = Strides(us.dimensions());
  const int64_t nwd = static_cast<int64_t>(win_upd_dims.size());
  if (nwd > 0) {
    k->run_len_ = us.dimensions(win_upd_dims.back());
    k->run_os_ = win_ostride.back();
    k->run_us_ = ustrides[win_upd_dims.back()];
  }
  int64_t nruns = 1;
  for (int64_t j = 0; j + 1 < nwd; ++j) nruns *= us.dimensions(win_upd_dims[j]);
  if (k->run_len_ > 0) {
    std::vector<int64_t> wi(std::max<int64_t>(nwd - 1, 0), 0);
    for (int64_t r = 0; r < nruns; ++r) {
      int64_t oo = 0, uo = 0;
      for (int64_t j = 0; j + 1 < nwd; ++j) {
        oo += wi[j] * win_ostride[j];
        uo += wi[j] * ustrides[win_upd_dims[j]];
      }
      k->run_ooff_.push_back(oo);
      k->run_uoff_.push_back(uo);
      for (int64_t j = nwd - 2; j >= 0; --j) {
        if (++wi[j] < us.dimensions(win_upd_dims[j])) break;
        wi[j] = 0;
      }
    }
  }
  k->operand_shape_ = os;
  k->indices_shape_ = is;
  k->update_shape_ = us;
  k->scatter_dims_to_operand_dims_ = dn.scatter_dims_to_operand_dims;
  k->input_batching_dims_ = dn.input_batching_dims;
  KILN_RETURN_IF_ERROR(SetCombiner(*k, *instr.to_apply(), ptypes));
  k->name_ = StrCat("scatter[", ShapeText(os), nops > 1 ? StrCat(" x", nops) : "", " at ",
                    ShapeText(is), " from ", ShapeText(us),
                    k->replace_  ? ", replace"
                    : k->native_ ? ", native combiner"
                    : k->element_fn_ ? ", element combiner"
                                     : ", program combiner",
                    "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
