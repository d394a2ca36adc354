// reduce-window (pooling and the cumulative ops JAX writes as reduce-window: cumsum, cumprod,
// cummax, cummin), N inputs (variadic), any window: sizes, strides, padding, base and window
// dilation; and select-and-scatter (max pooling's gradient) over the same window geometry.
//
// Note [Reduce-window kernel]
//   For every dimension d the kernel precomputes, per output index o, the input indices the
//   window lands on (o * stride - padding_low + k * window_dilation, kept where it falls on a
//   base element after base dilation and inside the input), pre-multiplied by the input's
//   row-major stride. An output element folds the product of its dimensions' lists in
//   row-major window order into an accumulator that starts at the init value -- the order the
//   evaluator folds in (eval/reduce.cc), so results are the same bit for bit: every step rounds
//   to the element type as the reducer's ops do. Output elements are split across threads.
//   Reducers: one add / maximum / minimum / multiply of the two parameters on f32, f64, s32,
//   s64 runs as typed code (maximum/minimum with the elementwise ops' NaN rule); any other
//   scalar computation (variadic reducers included) runs as a ScalarProgram
//   (eval/scalar_program.h), the reduce kernel's general path. A reducer that is not a scalar
//   computation is declined (Unimplemented).
#include <cmath>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu::internal {
namespace {

enum class FastOp { kNone, kAdd, kMax, kMin, kMul };

template <class T>
inline T Apply(FastOp op, T a, T b) {
  switch (op) {
    case FastOp::kAdd: return a + b;
    case FastOp::kMul: return a * b;
    case FastOp::kMax:
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
      }
      return a < b ? b : a;
    case FastOp::kMin:
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
      }
      return b < a ? b : a;
    default: return a;
  }
}

// The per-dimension window lists of Note [Reduce-window kernel] over an input of `in_dims`:
// (*lists)[d][o] holds the input offsets (index * row-major stride) output index o reads along d.
Status WindowLists(const HloInstruction& instr, const std::vector<WindowDimension>& wd,
                   const std::vector<int64_t>& in_dims, std::vector<int64_t>* out_dims,
                   std::vector<std::vector<std::vector<int64_t>>>* lists, int64_t* window_count) {
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  if (static_cast<int64_t>(wd.size()) != rank)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": window rank differs from the input");
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * in_dims[d + 1];
  lists->assign(rank, {});
  out_dims->clear();
  *window_count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const WindowDimension& w = wd[d];
    if (w.size < 0 || w.stride < 1 || w.window_dilation < 1 || w.base_dilation < 1)
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": window sizes, strides and dilations must be positive");
    const int64_t n = in_dims[d];
    const int64_t dilated_base = n == 0 ? 0 : (n - 1) * w.base_dilation + 1;
    const int64_t padded = dilated_base + w.padding_low + w.padding_high;
    const int64_t dilated_window = (w.size - 1) * w.window_dilation + 1;
    const int64_t out = padded < dilated_window ? 0 : (padded - dilated_window) / w.stride + 1;
    out_dims->push_back(out);
    *window_count *= std::max<int64_t>(1, w.size);
    (*lists)[d].resize(out);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t e = 0; e < w.size; ++e) {
        int64_t pos = o * w.stride - w.padding_low + e * w.window_dilation;
        if (w.base_dilation > 1) {
          if (pos % w.base_dilation != 0) continue;
          pos /= w.base_dilation;
        }
        if (pos >= 0 && pos < n) (*lists)[d][o].push_back(pos * strides[d]);
      }
  }
  return OkStatus();
}

// Calls f(input_offset) for every window element of output element `o` of `out_dims` in
// row-major window order; idx/j are scratch of the rank.
template <class F>
void ForEachWindowElement(const std::vector<int64_t>& out_dims,
                          const std::vector<std::vector<std::vector<int64_t>>>& lists, int64_t o,
                          std::vector<int64_t>& idx, std::vector<size_t>& j, F&& f) {
  const int64_t rank = static_cast<int64_t>(out_dims.size());
  for (int64_t d = rank - 1; d >= 0; --d) {
    idx[d] = o % out_dims[d];
    o /= out_dims[d];
  }
  if (rank == 0) {
    f(0);
    return;
  }
  int64_t outer = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (lists[d][idx[d]].empty()) return;
    j[d] = 0;
    if (d + 1 < rank) outer += lists[d][idx[d]][0];
  }
  const std::vector<int64_t>& last = lists[rank - 1][idx[rank - 1]];
  for (;;) {
    for (int64_t x : last) f(outer + x);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      const std::vector<int64_t>& l = lists[d][idx[d]];
      outer -= l[j[d]];
      if (++j[d] < l.size()) {
        outer += l[j[d]];
        break;
      }
      j[d] = 0;
      outer += l[0];
    }
    if (d < 0) return;
  }
}

class ReduceWindowKernel final : public CpuKernel {
 public:
  std::string name_;
  int n_ = 1;                                   // inputs
  std::vector<PrimitiveType> types_;
  std::vector<int> widths_;
  std::vector<int64_t> in_dims_, out_dims_;
  // lists_[d][o]: input offsets (index * row-major stride) of output index o along d.
  std::vector<std::vector<std::vector<int64_t>>> lists_;
  std::unique_ptr<ScalarProgram> program_;
  FastOp fast_ = FastOp::kNone;
  int64_t out_count_ = 0;
  int64_t window_count_ = 1;  // elements of one window (work per output element)
  CpuKernelOptions options_;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != static_cast<size_t>(2 * n_) || outputs.size() != static_cast<size_t>(n_))
      return InvalidArgument(name_, ": got ", inputs.size(), " inputs and ", outputs.size(), " outputs");
    for (int k = 0; k < n_; ++k)
      if (inputs[k].shape.dimensions() != in_dims_ || outputs[k].shape.dimensions() != out_dims_ ||
          inputs[n_ + k].shape.num_elements() != 1)
        return InvalidArgument(name_, ": views do not match");
    if (out_count_ == 0) return OkStatus();
    const int64_t work = std::max<int64_t>(1, window_count_);
    const int64_t chunk = WorthParallel(options_, out_count_, work) ? MinChunkElements(options_, work) : out_count_;
    if (fast_ != FastOp::kNone) {
      switch (types_[0]) {
        case PrimitiveType::kF32: Fast<float>(inputs, outputs, ctx, chunk); break;
        case PrimitiveType::kF64: Fast<double>(inputs, outputs, ctx, chunk); break;
        case PrimitiveType::kS32: Fast<int32_t>(inputs, outputs, ctx, chunk); break;
        case PrimitiveType::kS64: Fast<int64_t>(inputs, outputs, ctx, chunk); break;
        default: return Internal(name_, ": no typed path for ", PrimitiveTypeName(types_[0]));
      }
      return OkStatus();
    }
    General(inputs, outputs, ctx, chunk);
    return OkStatus();
  }

 private:
  template <class T>
  void Fast(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs, const KernelContext& ctx,
            int64_t chunk) const {
    const T* x = inputs[0].as<const T>();
    const T init = *inputs[1].as<const T>();
    T* out = outputs[0].as<T>();
    const FastOp op = fast_;
    ParallelFor(ctx, out_count_, chunk, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(out_dims_.size());
      std::vector<size_t> j(out_dims_.size());
      for (int64_t o = b; o < e; ++o) {
        T acc = init;
        switch (op) {  // the switch hoisted out of the window loop
          case FastOp::kAdd: ForEachWindowElement(out_dims_, lists_, o, idx, j, [&](int64_t off) { acc = acc + x[off]; }); break;
          case FastOp::kMul: ForEachWindowElement(out_dims_, lists_, o, idx, j, [&](int64_t off) { acc = acc * x[off]; }); break;
          default: ForEachWindowElement(out_dims_, lists_, o, idx, j, [&](int64_t off) { acc = Apply(op, acc, x[off]); }); break;
        }
        out[o] = acc;
      }
    });
  }

  void General(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs, const KernelContext& ctx,
               int64_t chunk) const {
    const int n = n_;
    ParallelFor(ctx, out_count_, chunk, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(out_dims_.size());
      std::vector<size_t> j(out_dims_.size());
      struct alignas(16) Slot {
        uint8_t bytes[16];
      };
      std::vector<Slot> acc(n);
      std::vector<const void*> args(2 * n);
      std::vector<void*> results(n);
      for (int k = 0; k < n; ++k) {
        args[k] = acc[k].bytes;
        results[k] = acc[k].bytes;
      }
      for (int64_t o = b; o < e; ++o) {
        for (int k = 0; k < n; ++k) std::memcpy(acc[k].bytes, inputs[n + k].data, widths_[k]);
        ForEachWindowElement(out_dims_, lists_, o, idx, j, [&](int64_t off) {
          for (int k = 0; k < n; ++k) args[n + k] = static_cast<const uint8_t*>(inputs[k].data) + off * widths_[k];
          program_->Run(args, results);
        });
        for (int k = 0; k < n; ++k)
          std::memcpy(static_cast<uint8_t*>(outputs[k].data) + o * widths_[k], acc[k].bytes, widths_[k]);
      }
    });
  }
};

// select-and-scatter (the gradient of max pooling): for every source element, its window over
// the operand selects one element -- the first, replaced by each later one the select
// computation does not keep over it, as the evaluator folds -- and the scatter computation
// combines scatter(source, output) into the output there, which starts as the init value.
// Selection runs in parallel over source elements; the scatter, whose targets may repeat
// (overlapping windows), runs in source order.
class SelectAndScatterKernel final : public CpuKernel {
 public:
  std::string name_;
  PrimitiveType type_ = PrimitiveType::kF32;
  int width_ = 4;
  std::vector<int64_t> in_dims_, src_dims_;
  std::vector<std::vector<std::vector<int64_t>>> lists_;
  std::unique_ptr<ScalarProgram> select_, scatter_;
  int64_t src_count_ = 0, out_count_ = 0, window_count_ = 1;
  CpuKernelOptions options_;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 3 || outputs.size() != 1 || inputs[0].shape.dimensions() != in_dims_ ||
        inputs[1].shape.dimensions() != src_dims_ || inputs[2].shape.num_elements() != 1 ||
        outputs[0].shape.dimensions() != in_dims_)
      return InvalidArgument(name_, ": views do not match");
    const auto* in = static_cast<const uint8_t*>(inputs[0].data);
    const auto* src = static_cast<const uint8_t*>(inputs[1].data);
    auto* out = static_cast<uint8_t*>(outputs[0].data);
    const int w = width_;
    std::vector<int64_t> selected(src_count_, -1);
    const int64_t work = std::max<int64_t>(1, window_count_);
    const int64_t chunk = WorthParallel(options_, src_count_, work) ? MinChunkElements(options_, work) : src_count_;
    ParallelFor(ctx, src_count_, chunk, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(src_dims_.size());
      std::vector<size_t> j(src_dims_.size());
      for (int64_t o = b; o < e; ++o) {
        int64_t sel = -1;
        ForEachWindowElement(src_dims_, lists_, o, idx, j, [&](int64_t off) {
          if (sel < 0) {
            sel = off;
            return;
          }
          alignas(16) uint8_t keep[16] = {0};
          const void* args[2] = {in + sel * w, in + off * w};
          void* res[1] = {keep};
          select_->Run(args, res);
          if (!keep[0]) sel = off;
        });
        selected[o] = sel;
      }
    });
    for (int64_t i = 0; i < out_count_; ++i) std::memcpy(out + i * w, inputs[2].data, w);
    for (int64_t o = 0; o < src_count_; ++o) {
      if (selected[o] < 0) continue;
      uint8_t* dst = out + selected[o] * w;
      alignas(16) uint8_t tmp[16];
      const void* args[2] = {src + o * w, dst};
      void* res[1] = {tmp};
      scatter_->Run(args, res);
      std::memcpy(dst, tmp, w);
    }
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateSelectAndScatterKernel(const HloInstruction& instr,
                                                                  const CpuKernelOptions& options) {
  if (instr.operand_count() != 3) return InvalidArgument("select-and-scatter %", instr.name(), " takes 3 operands");
  if (!instr.attrs().window) return InvalidArgument("select-and-scatter %", instr.name(), " has no window=");
  if (instr.called_computations().size() < 2 || !instr.select() || !instr.scatter())
    return InvalidArgument("select-and-scatter %", instr.name(), " needs select and scatter");
  const Shape& in = instr.operand(0)->shape();
  const Shape& src = instr.operand(1)->shape();
  const Shape& init = instr.operand(2)->shape();
  if (!in.IsArray() || !src.IsArray() || !init.IsArray() || !instr.shape().IsArray() || init.rank() != 0 ||
      src.element_type() != in.element_type() || init.element_type() != in.element_type() ||
      instr.shape().element_type() != in.element_type() || instr.shape().dimensions() != in.dimensions())
    return InvalidArgument("select-and-scatter %", instr.name(),
                           ": operand, source, init value and result must share the element type");
  auto k = std::make_unique<SelectAndScatterKernel>();
  k->options_ = options;
  k->type_ = in.element_type();
  k->width_ = PrimitiveByteWidth(k->type_);
  if (k->width_ <= 0 || k->width_ > 16) return Unimplemented("select-and-scatter of ", PrimitiveTypeName(k->type_));
  k->in_dims_ = in.dimensions();
  KILN_RETURN_IF_ERROR(
      WindowLists(instr, instr.attrs().window->dimensions, k->in_dims_, &k->src_dims_, &k->lists_, &k->window_count_));
  if (k->src_dims_ != src.dimensions())
    return InvalidArgument("select-and-scatter %", instr.name(), ": source ", ShapeText(src),
                           " does not match the window over the operand");
  k->select_ = ScalarProgram::Compile(*instr.select());
  k->scatter_ = ScalarProgram::Compile(*instr.scatter());
  if (!k->select_ || !k->scatter_)
    return Unimplemented("select-and-scatter kernel: select or scatter is not a scalar computation");
  if (k->select_->num_parameters() != 2 || k->select_->num_results() != 1 ||
      k->select_->parameter_type(0) != k->type_ || k->select_->parameter_type(1) != k->type_ ||
      k->select_->result_type(0) != PrimitiveType::kPred || k->scatter_->num_parameters() != 2 ||
      k->scatter_->num_results() != 1 || k->scatter_->parameter_type(0) != k->type_ ||
      k->scatter_->parameter_type(1) != k->type_ || k->scatter_->result_type(0) != k->type_)
    return InvalidArgument("select-and-scatter %", instr.name(), ": select or scatter does not match the operands");
  k->src_count_ = src.num_elements();
  k->out_count_ = in.num_elements();
  k->name_ = StrCat("select_and_scatter[", ShapeText(instr.shape()), " <- ", ShapeText(src), "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

StatusOr<std::unique_ptr<CpuKernel>> CreateReduceWindowKernel(const HloInstruction& instr,
                                                              const CpuKernelOptions& options) {
  const int64_t ops = instr.operand_count();
  if (ops < 2 || ops % 2 != 0) return InvalidArgument("reduce-window %", instr.name(), ": odd operand count");
  if (!instr.attrs().window) return InvalidArgument("reduce-window %", instr.name(), " has no window=");
  const HloComputation* f = instr.to_apply();
  if (!f) return InvalidArgument("reduce-window %", instr.name(), " has no to_apply");
  auto k = std::make_unique<ReduceWindowKernel>();
  k->options_ = options;
  k->n_ = static_cast<int>(ops / 2);
  const Shape& in0 = instr.operand(0)->shape();
  if (!in0.IsArray()) return Unimplemented("reduce-window of a non-array");
  k->in_dims_ = in0.dimensions();
  for (int i = 0; i < k->n_; ++i) {
    const Shape& s = instr.operand(i)->shape();
    const Shape& init = instr.operand(k->n_ + i)->shape();
    if (!s.IsArray() || s.dimensions() != k->in_dims_ || !init.IsArray() || init.rank() != 0 ||
        init.element_type() != s.element_type())
      return InvalidArgument("reduce-window %", instr.name(), ": inputs and init values do not match");
    const int w = PrimitiveByteWidth(s.element_type());
    if (w <= 0 || w > 16) return Unimplemented("reduce-window of ", PrimitiveTypeName(s.element_type()));
    k->types_.push_back(s.element_type());
    k->widths_.push_back(w);
  }
  const std::vector<WindowDimension>& wd = instr.attrs().window->dimensions;
  KILN_RETURN_IF_ERROR(WindowLists(instr, wd, k->in_dims_, &k->out_dims_, &k->lists_, &k->window_count_));
  // The result's dimensions must be the window's (checked here too: --no-verify skips it).
  for (int i = 0; i < k->n_; ++i) {
    const Shape& r = instr.shape().IsTuple() ? instr.shape().tuple_shapes()[i] : instr.shape();
    if (!r.IsArray() || r.dimensions() != k->out_dims_ || r.element_type() != k->types_[i])
      return InvalidArgument("reduce-window %", instr.name(), ": result ", ShapeText(instr.shape()),
                             " does not match its window");
  }
  k->out_count_ = 1;
  for (int64_t d : k->out_dims_) k->out_count_ *= d;
  std::unique_ptr<ScalarProgram> prog = ScalarProgram::Compile(*f);
  if (!prog) return Unimplemented("reduce-window kernel: the reducer is not a scalar computation");
  bool ok = prog->num_parameters() == 2 * k->n_ && prog->num_results() == k->n_;
  for (int i = 0; ok && i < k->n_; ++i)
    ok = prog->parameter_type(i) == k->types_[i] && prog->parameter_type(k->n_ + i) == k->types_[i] &&
         prog->result_type(i) == k->types_[i];
  if (!ok) return InvalidArgument("reduce-window %", instr.name(), ": the reducer does not match the inputs");
  const PrimitiveType t = k->types_[0];
  const bool fast_type = t == PrimitiveType::kF32 || t == PrimitiveType::kF64 || t == PrimitiveType::kS32 ||
                         t == PrimitiveType::kS64;
  if (k->n_ == 1 && fast_type && prog->single_op_instr() && prog->single_op_params().size() == 2 &&
      prog->single_op_params()[0] == 0 && prog->single_op_params()[1] == 1 &&
      prog->single_op_instr()->shape().element_type() == t) {
    switch (prog->single_op_instr()->opcode()) {
      case HloOpcode::kAdd: k->fast_ = FastOp::kAdd; break;
      case HloOpcode::kMultiply: k->fast_ = FastOp::kMul; break;
      case HloOpcode::kMaximum: k->fast_ = FastOp::kMax; break;
      case HloOpcode::kMinimum: k->fast_ = FastOp::kMin; break;
      default: break;
    }
  }
  k->program_ = std::move(prog);
  k->name_ = StrCat("reduce_window[", ShapeText(instr.shape()), " <- ", ShapeText(in0), ", ",
                    k->fast_ != FastOp::kNone ? HloOpcodeString(k->program_->single_op_instr()->opcode()) : "program",
                    "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
