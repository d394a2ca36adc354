// The convolution kernel: im2col + GEMM (gemm.h), any dim_labels; f32 convolutions with 16+
// features per tap and no groups skip im2col (Note [Indirect convolution], conv_indirect.h).
//
// The input is brought to [N, spatial..., C], the kernel to a [spatial... * I, O] matrix and the
// output is computed as [N_out, spatial..., O] -- each in place when the instruction's layout
// already is that order and the element type is the compute type, else converted/permuted
// (array_convert.h). Output positions (rows) are processed in chunks of up to 256, one task per
// (group, chunk); the contraction (kernel taps x input features) in K blocks of whole "outer
// taps" (every kernel spatial dim but the innermost) sized so a block's patches stay ~1 MiB, the
// GEMMs of later blocks accumulating. A patch row holds, per tap, the input features the tap
// reads (zeros for taps in padding or between lhs-dilated elements); taps of the innermost dim
// that read consecutive input positions are copied as one run. Strides, padding (negative too),
// lhs (base) and rhs (window) dilation, window reversal (in the position tables),
// feature_group_count and batch_group_count (one of them 1) all enter through the patch
// construction and the group loop, so backward-data (lhs-dilated) and backward-filter
// (batch-grouped, large-window) convolutions run the same way. 1x1 convolutions with unit strides
// and no padding are one GEMM on the input itself; depthwise convolutions (one input feature per
// group) run a direct loop vectorized over features.
//
// Not native (evaluator fallback): feature_group_count and batch_group_count both above 1.
#include <algorithm>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/array_convert.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/conv_indirect.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/cpu/kernels/kernels.h"

namespace kiln::cpu::internal {
namespace {

enum class ConvCompute { kF32, kF64, kC64, kC128, kU32, kU64 };

template <class C>
inline constexpr bool kIntCompute = std::is_same_v<C, uint32_t> || std::is_same_v<C, uint64_t>;

class ConvKernel final : public CpuKernel {
 public:
  std::string name_;
  PrimitiveType in_type_, k_type_, out_type_;
  std::vector<int64_t> in_dims_, k_dims_, out_dims_;
  std::vector<int64_t> in_perm_, k_perm_, out_perm_;  // empty: already canonical
  int64_t n_in_ = 0, c_in_ = 0, n_out_ = 0, o_ = 0, c_g_ = 0;
  int64_t groups_ = 1;
  bool batch_groups_ = false;  // groups are batch groups (else feature groups)
  std::vector<int64_t> in_sp_, k_sp_, out_sp_;
  std::vector<WindowDimension> win_;
  std::vector<std::vector<int64_t>> pos_;  // per spatial dim: [x * K + k] -> input position or -1
  bool pointwise_ = false;                 // 1x1, unit stride, no padding/dilation
  // Per output position of the innermost spatial dim: runs of its kernel taps [t0, t0 + len)
  // reading input positions [p0, p0 + len) (taps outside the input are in no run).
  struct TapRun {
    int64_t t0, len, p0;
  };
  std::vector<std::vector<TapRun>> runs_;
  bool merge_runs_ = false;  // a patch takes every input channel: a run is one memcpy
  bool depthwise_ = false;
  bool indirect_ = false;  // f32 without im2col (Note [Indirect convolution])
  IndirectConvGeometry geo_;
  ConvCompute compute_ = ConvCompute::kF32;
  CpuKernelOptions options_;

  std::string name() const override { return name_; }

  template <class C>
  void ToC(PrimitiveType t, const void* src, C* dst, int64_t n) const {
    if constexpr (kIntCompute<C>) ToIntAcc<C>(t, src, out_type_, dst, n);
    else ToCompute<C>(t, src, dst, n);
  }

  // An operand in compute type C and canonical order.
  template <class C>
  const C* Canonical(const ArrayView& v, PrimitiveType t, const std::vector<int64_t>& perm,
                     std::vector<C>& buf, PrimitiveType ct) const {
    const int64_t n = v.shape.num_elements();
    const void* src = v.data;
    std::vector<uint8_t> permuted;
    if (!perm.empty()) {
      permuted.resize(n * PrimitiveByteWidth(t));
      PermuteBytes(src, v.shape.dimensions(), perm, permuted.data(), PrimitiveByteWidth(t));
      src = permuted.data();
    }
    if (!kIntCompute<C> && t == ct && perm.empty()) return static_cast<const C*>(src);
    buf.resize(n);
    ToC<C>(t, src, buf.data(), n);
    return buf.data();
  }

  template <class C>
  void GemmC(const GemmShape& s, const C* a, const C* b, C* c, const KernelContext& ctx,
             bool threads) const {
    if constexpr (kIntCompute<C>) IntGemm<C>(s, a, b, c, ctx, threads);
    else Gemm<C>(s, a, b, c, ctx, threads, options_);
  }

  template <class C>
  Status RunTyped(const ArrayView& lhs, const ArrayView& rhs, const ArrayView& out,
                  PrimitiveType ct, const KernelContext& ctx) const {
    std::vector<C> in_buf, k_buf, out_buf;
    const C* in = Canonical<C>(lhs, in_type_, in_perm_, in_buf, ct);
    const C* kern = Canonical<C>(rhs, k_type_, k_perm_, k_buf, ct);
    const int64_t nsp = static_cast<int64_t>(in_sp_.size());
    int64_t in_spatial = 1, k_spatial = 1, out_spatial = 1;
    for (int64_t i = 0; i < nsp; ++i) {
      in_spatial *= in_sp_[i];
      k_spatial *= k_sp_[i];
      out_spatial *= out_sp_[i];
    }
    const int64_t rows = n_out_ * out_spatial;
    const int64_t out_count = rows * o_;
    C* res;
    const bool direct_out = !kIntCompute<C> && out_perm_.empty() && out_type_ == ct;
    if (direct_out) {
      res = static_cast<C*>(out.data);
    } else {
      out_buf.resize(out_count);
      res = out_buf.data();
    }
    if (out_count > 0) {
      if (depthwise_) {
        Depthwise<C>(in, kern, res, ctx);
      } else {
        Im2colGemm<C>(in, kern, res, ctx, in_spatial, k_spatial, out_spatial);
      }
    }
    if (!direct_out) {
      std::vector<uint8_t> typed(out_count * PrimitiveByteWidth(out_type_));
      void* dst = out_perm_.empty() ? out.data : typed.data();
      if constexpr (kIntCompute<C>) FromIntAcc<C>(res, out_type_, dst, out_count);
      else FromCompute<C>(res, out_type_, dst, out_count);
      if (!out_perm_.empty()) {
        std::vector<int64_t> cdims{n_out_};
        cdims.insert(cdims.end(), out_sp_.begin(), out_sp_.end());
        cdims.push_back(o_);
        PermuteBytes(typed.data(), cdims, out_perm_, out.data, PrimitiveByteWidth(out_type_));
      }
    }
    return OkStatus();
  }

  // Input position of (output position x, tap k) along spatial dim i, or -1.
  int64_t Pos(int64_t i, int64_t x, int64_t k) const { return pos_[i][x * k_sp_[i] + k]; }

  template <class C>
  void Im2colGemm(const C* in, const C* kern, C* res, const KernelContext& ctx, int64_t in_spatial,
                  int64_t k_spatial, int64_t out_spatial) const {
    const int64_t nsp = static_cast<int64_t>(in_sp_.size());
    const int64_t o_g = o_ / groups_;
    const int64_t kdim = k_spatial * c_g_;
    const int64_t rows = n_out_ * out_spatial;
    const int64_t c_stride = c_in_;  // channels per input position (canonical input)
    const int threads = NumThreads(ctx);
    if constexpr (std::is_same_v<C, float>) {
      if (indirect_) {
        IndirectConvF32(geo_, in, kern, res, ctx, true);
        return;
      }
    }
    if (pointwise_ && groups_ == 1) {
      // The input is the patch matrix: one GEMM, threaded by Eigen.
      GemmC<C>(GemmShape{rows, o_, kdim}, in, kern, res, ctx, true);
      return;
    }
    // Kernel matrix of each group: [k_spatial * c_g, o_g] (the canonical kernel is
    // [k_spatial, c_g, o]; a group's columns are a strided slice of it).
    std::vector<C> kgroup;
    if (groups_ > 1) {
      kgroup.resize(groups_ * kdim * o_g);
      for (int64_t g = 0; g < groups_; ++g)
        for (int64_t r = 0; r < kdim; ++r)
          std::memcpy(&kgroup[(g * kdim + r) * o_g], kern + r * o_ + g * o_g, o_g * sizeof(C));
    }
    std::vector<int64_t> in_str(nsp, 1);
    for (int64_t i = nsp - 1; i > 0; --i) in_str[i - 1] = in_str[i] * in_sp_[i];
    // Columns come in units of one outer tap (every kernel spatial dim but the last) times the
    // innermost kernel dim times c_g; a K block is a range of outer taps.
    const int64_t k_last = nsp > 0 ? k_sp_[nsp - 1] : 1;
    const int64_t outer_taps = k_last > 0 ? k_spatial / k_last : 0;
    const int64_t unit = k_last * c_g_;
    // Rows per task: ~256 (GEMMs that amortize packing the kernel), fewer when that leaves
    // threads idle; patches of ~1 MiB per K block.
    int64_t chunk = (rows * groups_ + threads - 1) / threads;
    chunk = std::min<int64_t>(rows, std::clamp<int64_t>(chunk, 32, 256));
    const int64_t chunks = (rows + chunk - 1) / chunk;
    const int64_t tasks = groups_ * chunks;
    const bool inner_threads = tasks < threads;
    const int64_t units = std::clamp<int64_t>(
        options_.conv_patch_bytes / std::max<int64_t>(1, chunk * unit * int64_t{sizeof(C)}), 1,
        std::max<int64_t>(outer_taps, 1));
    const int64_t kblocks = outer_taps == 0 ? 0 : (outer_taps + units - 1) / units;
    auto task = [&](int64_t t0, int64_t t1) {
      std::vector<C> patch, tmp;
      std::vector<int64_t> x(nsp), k(nsp);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t g = t / chunks, ch = t % chunks;
        const int64_t r0 = ch * chunk, r1 = std::min(rows, r0 + chunk), nr = r1 - r0;
        const int64_t c_off = batch_groups_ ? 0 : g * c_g_;
        const int64_t n_off = batch_groups_ ? g * n_out_ : 0;
        C* dst = res + r0 * o_;
        if (groups_ > 1) {
          tmp.resize(nr * o_g);
          dst = tmp.data();
        }
        const C* kmat = groups_ > 1 ? &kgroup[g * kdim * o_g] : kern;
        if (kblocks == 0) std::fill(dst, dst + nr * o_g, C(0));
        for (int64_t kb = 0; kb < kblocks; ++kb) {
          const int64_t ot0 = kb * units, ot1 = std::min(outer_taps, ot0 + units);
          const int64_t cols = (ot1 - ot0) * unit;
          const C* a;
          if (pointwise_) {
            // Rows of the input, c_stride apart: gather this group's channels.
            patch.resize(nr * cols);
            const C* src = in + (n_off * in_spatial + r0) * c_stride + c_off;
            for (int64_t r = 0; r < nr; ++r)
              std::memcpy(&patch[r * cols], src + r * c_stride, cols * sizeof(C));
            a = patch.data();
          } else {
            patch.resize(nr * cols);
            for (int64_t r = r0; r < r1; ++r) {
              const int64_t n = r / out_spatial;
              int64_t rem = r % out_spatial;
              for (int64_t i = nsp - 1; i >= 0; --i) {
                x[i] = rem % out_sp_[i];
                rem /= out_sp_[i];
              }
              FillPatchRow<C>(&patch[(r - r0) * cols],
                              in + ((n_off + n) * in_spatial) * c_stride + c_off, x, k, in_str,
                              ot0, ot1);
            }
            a = patch.data();
          }
          GemmShape s{nr, o_g, cols, false, false, kb > 0};
          GemmC<C>(s, a, kmat + ot0 * unit * o_g, dst, ctx, inner_threads);
        }
        if (groups_ > 1)
          for (int64_t r = 0; r < nr; ++r)
            std::memcpy(res + (r0 + r) * o_ + g * o_g, &tmp[r * o_g], o_g * sizeof(C));
      }
    };
    if (inner_threads) {
      task(0, tasks);
    } else {
      ParallelFor(ctx, tasks, 1, task);
    }
  }

  // One patch row (output position x) for outer taps [ot0, ot1): per outer tap, the innermost
  // kernel dim's taps; runs of taps that read consecutive input positions are one memcpy when
  // the patch takes every input channel (merge_runs_). Taps outside the input are zeros.
  template <class C>
  void FillPatchRow(C* prow, const C* ibase, const std::vector<int64_t>& x, std::vector<int64_t>& k,
                    const std::vector<int64_t>& in_str, int64_t ot0, int64_t ot1) const {
    const int64_t nsp = static_cast<int64_t>(in_sp_.size());
    const int64_t k_last = k_sp_[nsp - 1];
    const int64_t unit = k_last * c_g_;
    const int64_t c_stride = c_in_;
    // Outer tap indices of ot0.
    int64_t rem = ot0;
    for (int64_t i = nsp - 2; i >= 0; --i) {
      k[i] = rem % k_sp_[i];
      rem /= k_sp_[i];
    }
    const std::vector<TapRun>& runs = runs_[x[nsp - 1]];
    for (int64_t ot = ot0; ot < ot1; ++ot) {
      C* seg = prow + (ot - ot0) * unit;
      int64_t off = 0;
      bool ok = true;
      for (int64_t i = 0; i + 1 < nsp && ok; ++i) {
        const int64_t p = Pos(i, x[i], k[i]);
        ok = p >= 0;
        off += p * in_str[i];
      }
      if (!ok) {
        std::fill(seg, seg + unit, C(0));
      } else {
        const C* irow = ibase + off * c_stride;
        int64_t t = 0;
        for (const TapRun& run : runs) {
          std::fill(seg + t * c_g_, seg + run.t0 * c_g_, C(0));
          if (merge_runs_) {
            std::memcpy(seg + run.t0 * c_g_, irow + run.p0 * c_stride,
                        run.len * c_g_ * sizeof(C));
          } else {
            for (int64_t j = 0; j < run.len; ++j)
              std::memcpy(seg + (run.t0 + j) * c_g_, irow + (run.p0 + j) * c_stride,
                          c_g_ * sizeof(C));
          }
          t = run.t0 + run.len;
        }
        std::fill(seg + t * c_g_, seg + unit, C(0));
      }
      for (int64_t i = nsp - 2; i >= 0; --i) {
        if (++k[i] < k_sp_[i]) break;
        k[i] = 0;
      }
    }
  }

  // Depthwise: one input feature per group (c_g == 1, groups == C_in), o = c * mult + m.
  template <class C>
  void Depthwise(const C* in, const C* kern, C* res, const KernelContext& ctx) const {
    const int64_t nsp = static_cast<int64_t>(in_sp_.size());
    int64_t in_spatial = 1, k_spatial = 1, out_spatial = 1;
    for (int64_t i = 0; i < nsp; ++i) {
      in_spatial *= in_sp_[i];
      k_spatial *= k_sp_[i];
      out_spatial *= out_sp_[i];
    }
    const int64_t mult = o_ / c_in_;
    std::vector<int64_t> in_str(nsp, 1);
    for (int64_t i = nsp - 1; i > 0; --i) in_str[i - 1] = in_str[i] * in_sp_[i];
    const int64_t rows = n_out_ * out_spatial;
    ParallelFor(ctx, rows, std::max<int64_t>(1, options_.min_parallel_elements / (o_ * k_spatial)),
                [&](int64_t r0, int64_t r1) {
                  std::vector<int64_t> x(nsp), k(nsp);
                  for (int64_t r = r0; r < r1; ++r) {
                    const int64_t n = r / out_spatial;
                    int64_t rem = r % out_spatial;
                    for (int64_t i = nsp - 1; i >= 0; --i) {
                      x[i] = rem % out_sp_[i];
                      rem /= out_sp_[i];
                    }
                    C* __restrict o = res + r * o_;
                    std::fill(o, o + o_, C(0));
                    std::fill(k.begin(), k.end(), 0);
                    for (int64_t tap = 0; tap < k_spatial; ++tap) {
                      int64_t off = 0;
                      bool ok = true;
                      for (int64_t i = 0; i < nsp; ++i) {
                        const int64_t p = Pos(i, x[i], k[i]);
                        if (p < 0) {
                          ok = false;
                          break;
                        }
                        off += p * in_str[i];
                      }
                      if (ok) {
                        const C* __restrict iv = in + (n * in_spatial + off) * c_in_;
                        const C* __restrict w = kern + tap * o_;  // [k_spatial, 1, o]
                        if (mult == 1) {
                          for (int64_t c = 0; c < o_; ++c) o[c] += iv[c] * w[c];
                        } else {
                          for (int64_t c = 0; c < o_; ++c) o[c] += iv[c / mult] * w[c];
                        }
                      }
                      for (int64_t i = nsp - 1; i >= 0; --i) {
                        if (++k[i] < k_sp_[i]) break;
                        k[i] = 0;
                      }
                    }
                  }
                });
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 2 || outputs.size() != 1)
      return InvalidArgument(name_, ": expected 2 inputs and 1 output");
    if (inputs[0].shape.dimensions() != in_dims_ || inputs[1].shape.dimensions() != k_dims_ ||
        outputs[0].shape.dimensions() != out_dims_)
      return InvalidArgument(name_, ": views do not match the instruction");
    switch (compute_) {
      case ConvCompute::kF32:
        return RunTyped<float>(inputs[0], inputs[1], outputs[0], PrimitiveType::kF32, ctx);
      case ConvCompute::kF64:
        return RunTyped<double>(inputs[0], inputs[1], outputs[0], PrimitiveType::kF64, ctx);
      case ConvCompute::kC64:
        return RunTyped<std::complex<float>>(inputs[0], inputs[1], outputs[0],
                                             PrimitiveType::kC64, ctx);
      case ConvCompute::kC128:
        return RunTyped<std::complex<double>>(inputs[0], inputs[1], outputs[0],
                                              PrimitiveType::kC128, ctx);
      case ConvCompute::kU32:
        return RunTyped<uint32_t>(inputs[0], inputs[1], outputs[0], PrimitiveType::kInvalid, ctx);
      case ConvCompute::kU64:
        return RunTyped<uint64_t>(inputs[0], inputs[1], outputs[0], PrimitiveType::kInvalid, ctx);
    }
    return Internal("convolution: bad compute type");
  }
};

std::vector<int64_t> PermOrEmpty(std::vector<int64_t> p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return p;
  return {};
}

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateConvolutionKernel(const HloInstruction& instr,
                                                             const CpuKernelOptions& options) {
  if (instr.opcode() != HloOpcode::kConvolution || instr.operand_count() != 2)
    return Unimplemented("convolution kernel: not a convolution");
  const HloAttributes& at = instr.attrs();
  if (!at.convolution_dimension_numbers)
    return InvalidArgument("convolution %", instr.name(), " has no dim_labels");
  for (Precision p : at.precision_config.operand_precision)
    if (p == Precision::kPackedNibble) return Unimplemented("convolution: packed nibbles");
  const ConvolutionDimensionNumbers& dn = *at.convolution_dimension_numbers;
  const Shape& ls = instr.operand(0)->shape();
  const Shape& rs = instr.operand(1)->shape();
  const Shape& os = instr.shape();
  if (!ls.IsArray() || !rs.IsArray() || !os.IsArray())
    return InvalidArgument("convolution %", instr.name(), ": operands must be arrays");
  const int64_t nsp = static_cast<int64_t>(dn.input_spatial_dimensions.size());
  if (static_cast<int64_t>(dn.kernel_spatial_dimensions.size()) != nsp ||
      static_cast<int64_t>(dn.output_spatial_dimensions.size()) != nsp || ls.rank() != nsp + 2 ||
      rs.rank() != nsp + 2 || os.rank() != nsp + 2)
    return InvalidArgument("convolution %", instr.name(), ": ranks do not match dim_labels");
  const int64_t fgc = at.feature_group_count, bgc = at.batch_group_count;
  if (fgc > 1 && bgc > 1)
    return Unimplemented("convolution kernel: feature and batch groups together");
  auto k = std::make_unique<ConvKernel>();
  k->options_ = options;
  k->in_type_ = ls.element_type();
  k->k_type_ = rs.element_type();
  k->out_type_ = os.element_type();
  k->in_dims_ = ls.dimensions();
  k->k_dims_ = rs.dimensions();
  k->out_dims_ = os.dimensions();
  k->n_in_ = ls.dimensions(dn.input_batch_dimension);
  k->c_in_ = ls.dimensions(dn.input_feature_dimension);
  k->c_g_ = rs.dimensions(dn.kernel_input_feature_dimension);
  k->o_ = rs.dimensions(dn.kernel_output_feature_dimension);
  k->n_out_ = os.dimensions(dn.output_batch_dimension);
  if (fgc < 1 || bgc < 1 || k->c_in_ != k->c_g_ * fgc || k->o_ % fgc != 0 || k->o_ % bgc != 0 ||
      k->n_in_ % bgc != 0 || k->n_out_ != k->n_in_ / bgc ||
      os.dimensions(dn.output_feature_dimension) != k->o_)
    return InvalidArgument("convolution %", instr.name(), ": group counts do not fit the shapes");
  k->groups_ = std::max(fgc, bgc);
  k->batch_groups_ = bgc > 1;
  k->win_.assign(nsp, WindowDimension{});
  if (at.window) {
    if (static_cast<int64_t>(at.window->dimensions.size()) != nsp)
      return InvalidArgument("convolution %", instr.name(), ": window rank");
    k->win_ = at.window->dimensions;
  }
  for (int64_t i = 0; i < nsp; ++i) {
    k->in_sp_.push_back(ls.dimensions(dn.input_spatial_dimensions[i]));
    k->k_sp_.push_back(rs.dimensions(dn.kernel_spatial_dimensions[i]));
    k->out_sp_.push_back(os.dimensions(dn.output_spatial_dimensions[i]));
    const WindowDimension& w = k->win_[i];
    if (w.size != k->k_sp_[i] || w.base_dilation < 1 || w.window_dilation < 1)
      return InvalidArgument("convolution %", instr.name(), ": bad window");
    std::vector<int64_t> pos(k->out_sp_[i] * k->k_sp_[i], -1);
    for (int64_t x = 0; x < k->out_sp_[i]; ++x)
      for (int64_t t = 0; t < k->k_sp_[i]; ++t) {
        // Window reversal is applied to the packed kernel (see below), so tap t here reads
        // kernel element t of the reversed kernel.
        const int64_t u = x * w.stride - w.padding_low + t * w.window_dilation;
        if (u % w.base_dilation != 0) continue;
        const int64_t p = u / w.base_dilation;
        if (p >= 0 && p < k->in_sp_[i]) pos[x * k->k_sp_[i] + t] = p;
      }
    k->pos_.push_back(std::move(pos));
  }
  // Canonical orders.
  std::vector<int64_t> ip{dn.input_batch_dimension}, kp, op{dn.output_batch_dimension};
  for (int64_t i = 0; i < nsp; ++i) {
    ip.push_back(dn.input_spatial_dimensions[i]);
    kp.push_back(dn.kernel_spatial_dimensions[i]);
    op.push_back(dn.output_spatial_dimensions[i]);
  }
  ip.push_back(dn.input_feature_dimension);
  kp.push_back(dn.kernel_input_feature_dimension);
  kp.push_back(dn.kernel_output_feature_dimension);
  op.push_back(dn.output_feature_dimension);
  k->in_perm_ = PermOrEmpty(ip);
  k->k_perm_ = PermOrEmpty(kp);
  // Output: result dim r comes from canonical dim q(r).
  std::vector<int64_t> out_perm(nsp + 2);
  for (int64_t c = 0; c < nsp + 2; ++c) out_perm[op[c]] = c;
  k->out_perm_ = PermOrEmpty(out_perm);
  // Window reversal: fold it into the kernel permutation by reading reversed dims backwards.
  bool any_reversal = false;
  for (const WindowDimension& w : k->win_) any_reversal |= w.window_reversal;
  if (any_reversal) {
    // Reverse the tap order in the position tables instead: tap t reads input position of
    // t' = K-1-t, so that patch column t pairs with kernel element t.
    for (int64_t i = 0; i < nsp; ++i) {
      if (!k->win_[i].window_reversal) continue;
      const int64_t ks = k->k_sp_[i];
      std::vector<int64_t>& pos = k->pos_[i];
      for (int64_t x = 0; x < k->out_sp_[i]; ++x) std::reverse(&pos[x * ks], &pos[x * ks] + ks);
    }
  }
  if (nsp > 0) {
    const int64_t last = nsp - 1, ks = k->k_sp_[last];
    for (int64_t x = 0; x < k->out_sp_[last]; ++x) {
      std::vector<ConvKernel::TapRun> runs;
      for (int64_t t = 0; t < ks; ++t) {
        const int64_t p = k->pos_[last][x * ks + t];
        if (p < 0) continue;
        if (!runs.empty() && runs.back().t0 + runs.back().len == t &&
            runs.back().p0 + runs.back().len == p) {
          ++runs.back().len;
        } else {
          runs.push_back({t, 1, p});
        }
      }
      k->runs_.push_back(std::move(runs));
    }
  }
  k->merge_runs_ = k->c_g_ == k->c_in_;
  bool unit = true;
  for (int64_t i = 0; i < nsp; ++i) {
    const WindowDimension& w = k->win_[i];
    unit &= k->k_sp_[i] == 1 && w.stride == 1 && w.padding_low == 0 && w.padding_high == 0 &&
            w.base_dilation == 1 && w.window_dilation == 1 && k->out_sp_[i] == k->in_sp_[i];
  }
  k->pointwise_ = unit;
  k->depthwise_ = fgc > 1 && k->c_g_ == 1 && fgc == k->c_in_ && bgc == 1;
  if (!k->pointwise_ && !k->depthwise_ && k->groups_ == 1 && nsp > 0) {
    IndirectConvGeometry& g = k->geo_;
    g.batch = k->n_out_;
    g.in_stride = k->c_in_;
    g.channels = k->c_g_;
    g.out_features = k->o_;
    g.in_sp = k->in_sp_;
    g.k_sp = k->k_sp_;
    g.out_sp = k->out_sp_;
    g.pos = &k->pos_;  // k is heap-allocated and never moved
    // options.conv_indirect false (flag cpu_conv=im2col) keeps every convolution on im2col +
    // GEMM (A/B runs).
    k->indirect_ = options.conv_indirect && IndirectConvAvailable() && IndirectConvWorthIt(g);
  }
  const PrimitiveType rt = os.element_type();
  auto any = [&](PrimitiveType t) {
    return rt == t || ls.element_type() == t || rs.element_type() == t;
  };
  if (IsComplexType(rt)) {
    k->compute_ = any(PrimitiveType::kC128) || any(PrimitiveType::kF64) ? ConvCompute::kC128
                                                                         : ConvCompute::kC64;
  } else if (IsFloatingPointType(rt)) {
    k->compute_ = any(PrimitiveType::kF64) ? ConvCompute::kF64 : ConvCompute::kF32;
  } else if (IsIntegralType(rt) || rt == PrimitiveType::kPred) {
    k->compute_ = PrimitiveBitWidth(rt) > 32 ? ConvCompute::kU64 : ConvCompute::kU32;
  } else {
    return Unimplemented("convolution kernel: result type");
  }
  k->name_ = StrCat("convolution[", ShapeText(ls), " * ", ShapeText(rs), " -> ", ShapeText(os),
                    k->depthwise_    ? ", depthwise"
                    : k->pointwise_ ? ", pointwise"
                    : k->indirect_  ? ", indirect"
                                    : ", im2col",
                    k->groups_ > 1 ? StrCat(", ", k->groups_, k->batch_groups_ ? " batch" : "",
                                            " groups")
                                   : std::string(),
                    "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
