// The dot kernel: batched GEMM through Eigen (gemm.h).
//
// Operands whose dimensions already group as [batch, M, K] or [batch, K, M] (lhs) and
// [batch, K, N] or [batch, N, K] (rhs) -- every canonical dot (passes/dot_canonicalizer.h), and
// transposed-operand forms -- are read in place, the transposition expressed by Eigen's
// contraction dimensions. Other dimension numbers are first permuted into the canonical form.
// Operands and results of other types than the compute type (f16/bf16 -> f32, integers ->
// wrapping 32/64-bit) are converted around the GEMM.
//
// Threading: one multi-threaded GEMM per batch element, or batch elements in parallel (each a
// single-threaded GEMM) when there are many small ones.
#include <algorithm>
#include <complex>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/array_convert.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/cpu/kernels/kernels.h"

namespace kiln::cpu::internal {
namespace {

enum class DotCompute { kF32, kF64, kC64, kC128, kU32, kU64 };

struct DotOperand {
  PrimitiveType type;
  std::vector<int64_t> dims;
  std::vector<int64_t> perm;  // non-empty: permute into canonical order first
  bool transposed = false;    // lhs: [B, K, M]; rhs: [B, N, K]
};

class DotKernel final : public CpuKernel {
 public:
  std::string name_;
  DotOperand lhs_, rhs_;
  PrimitiveType out_type_;
  int64_t b_ = 1, m_ = 1, n_ = 1, k_ = 1;
  DotCompute compute_ = DotCompute::kF32;
  CpuKernelOptions options_;

  std::string name() const override { return name_; }

  // The operand in compute type C, [B][M][K]-ish as described by `op.transposed`.
  template <class C>
  const C* Prepare(const DotOperand& op, const ArrayView& v, std::vector<C>& tmp,
                   std::vector<uint8_t>& permuted, PrimitiveType ct) const {
    const void* src = v.data;
    const int64_t count = v.shape.num_elements();
    if (!op.perm.empty()) {
      permuted.resize(count * PrimitiveByteWidth(op.type));
      PermuteBytes(src, op.dims, op.perm, permuted.data(), PrimitiveByteWidth(op.type));
      src = permuted.data();
    }
    if (op.type == ct) return static_cast<const C*>(src);
    tmp.resize(count);
    ToCompute<C>(op.type, src, tmp.data(), count);
    return tmp.data();
  }

  template <class C>
  void RunBatches(const C* a, const C* b, C* c, const KernelContext& ctx) const {
    GemmShape s{m_, n_, k_, lhs_.transposed, rhs_.transposed};
    const int64_t per = m_ * n_ * std::max<int64_t>(k_, 1);
    auto one = [&](int64_t i, bool threads) {
      if constexpr (std::is_same_v<C, uint32_t> || std::is_same_v<C, uint64_t>)
        IntGemm<C>(s, a + i * m_ * k_, b + i * k_ * n_, c + i * m_ * n_, ctx, threads);
      else
        Gemm<C>(s, a + i * m_ * k_, b + i * k_ * n_, c + i * m_ * n_, ctx, threads, options_);
    };
    if (b_ > 1 && per < (int64_t{1} << 22) && NumThreads(ctx) > 1) {
      ParallelFor(ctx, b_, std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, per)),
                  [&](int64_t i0, int64_t i1) {
                    for (int64_t i = i0; i < i1; ++i) one(i, false);
                  });
    } else {
      for (int64_t i = 0; i < b_; ++i) one(i, true);
    }
  }

  template <class C>
  Status RunTyped(const ArrayView& l, const ArrayView& r, const ArrayView& out, PrimitiveType ct,
                  const KernelContext& ctx) const {
    std::vector<C> lt, rt, ot;
    std::vector<uint8_t> lp, rp;
    constexpr bool kInt = std::is_same_v<C, uint32_t> || std::is_same_v<C, uint64_t>;
    const C* a;
    const C* b;
    if constexpr (kInt) {
      auto prep = [&](const DotOperand& op, const ArrayView& v, std::vector<C>& tmp,
                      std::vector<uint8_t>& permuted) {
        const void* src = v.data;
        const int64_t count = v.shape.num_elements();
        if (!op.perm.empty()) {
          permuted.resize(count * PrimitiveByteWidth(op.type));
          PermuteBytes(src, op.dims, op.perm, permuted.data(), PrimitiveByteWidth(op.type));
          src = permuted.data();
        }
        tmp.resize(count);
        ToIntAcc<C>(op.type, src, out_type_, tmp.data(), count);
        return tmp.data();
      };
      a = prep(lhs_, l, lt, lp);
      b = prep(rhs_, r, rt, rp);
    } else {
      a = Prepare<C>(lhs_, l, lt, lp, ct);
      b = Prepare<C>(rhs_, r, rt, rp, ct);
    }
    C* c;
    const int64_t count = b_ * m_ * n_;
    if (!kInt && out_type_ == ct) {
      c = static_cast<C*>(out.data);
    } else {
      ot.resize(count);
      c = ot.data();
    }
    RunBatches<C>(a, b, c, ctx);
    if constexpr (kInt) {
      FromIntAcc<C>(c, out_type_, out.data, count);
    } else if (c != out.data) {
      FromCompute<C>(c, out_type_, out.data, count);
    }
    return OkStatus();
  }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 2 || outputs.size() != 1)
      return InvalidArgument(name_, ": expected 2 inputs and 1 output");
    const ArrayView &l = inputs[0], &r = inputs[1], &o = outputs[0];
    if (l.shape.dimensions() != lhs_.dims || r.shape.dimensions() != rhs_.dims ||
        l.shape.element_type() != lhs_.type || r.shape.element_type() != rhs_.type ||
        o.shape.element_type() != out_type_ || o.shape.num_elements() != b_ * m_ * n_)
      return InvalidArgument(name_, ": views do not match the instruction");
    if (b_ * m_ * n_ == 0) return OkStatus();
    switch (compute_) {
      case DotCompute::kF32: return RunTyped<float>(l, r, o, PrimitiveType::kF32, ctx);
      case DotCompute::kF64: return RunTyped<double>(l, r, o, PrimitiveType::kF64, ctx);
      case DotCompute::kC64:
        return RunTyped<std::complex<float>>(l, r, o, PrimitiveType::kC64, ctx);
      case DotCompute::kC128:
        return RunTyped<std::complex<double>>(l, r, o, PrimitiveType::kC128, ctx);
      case DotCompute::kU32: return RunTyped<uint32_t>(l, r, o, PrimitiveType::kInvalid, ctx);
      case DotCompute::kU64: return RunTyped<uint64_t>(l, r, o, PrimitiveType::kInvalid, ctx);
    }
    return Internal("dot: bad compute type");
  }
};

bool IsIota(const std::vector<int64_t>& v, int64_t from) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != from + static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateDotKernel(const HloInstruction& instr,
                                                     const CpuKernelOptions& options) {
  if (instr.opcode() != HloOpcode::kDot || instr.operand_count() != 2)
    return Unimplemented("dot kernel: not a dot");
  if (!instr.attrs().sparsity.empty()) return Unimplemented("dot kernel: sparse dot");
  for (Precision p : instr.attrs().precision_config.operand_precision)
    if (p == Precision::kPackedNibble) return Unimplemented("dot kernel: packed nibbles");
  const Shape& ls = instr.operand(0)->shape();
  const Shape& rs = instr.operand(1)->shape();
  const Shape& os = instr.shape();
  if (!ls.IsArray() || !rs.IsArray() || !os.IsArray()) return Unimplemented("dot kernel: shapes");
  DotDimensionNumbers dn;
  if (instr.attrs().dot_dimension_numbers) dn = *instr.attrs().dot_dimension_numbers;
  const std::vector<int64_t> &lb = dn.lhs_batch_dimensions, &rb = dn.rhs_batch_dimensions;
  const std::vector<int64_t> &lc = dn.lhs_contracting_dimensions,
                             &rc = dn.rhs_contracting_dimensions;
  if (lb.size() != rb.size() || lc.size() != rc.size())
    return InvalidArgument("dot %", instr.name(), ": mismatched dimension numbers");
  auto free_dims = [](int64_t rank, const std::vector<int64_t>& a, const std::vector<int64_t>& b)
      -> StatusOr<std::vector<int64_t>> {
    std::vector<bool> used(rank, false);
    for (const std::vector<int64_t>* v : {&a, &b})
      for (int64_t d : *v) {
        if (d < 0 || d >= rank || used[d]) return InvalidArgument("dot: bad dimension numbers");
        used[d] = true;
      }
    std::vector<int64_t> f;
    for (int64_t d = 0; d < rank; ++d)
      if (!used[d]) f.push_back(d);
    return f;
  };
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lf, free_dims(ls.rank(), lb, lc));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rf, free_dims(rs.rank(), rb, rc));
  auto k = std::make_unique<DotKernel>();
  k->options_ = options;
  for (size_t i = 0; i < lb.size(); ++i) {
    if (ls.dimensions(lb[i]) != rs.dimensions(rb[i]))
      return InvalidArgument("dot %", instr.name(), ": batch sizes differ");
    k->b_ *= ls.dimensions(lb[i]);
  }
  for (size_t i = 0; i < lc.size(); ++i) {
    if (ls.dimensions(lc[i]) != rs.dimensions(rc[i]))
      return InvalidArgument("dot %", instr.name(), ": contracting sizes differ");
    k->k_ *= ls.dimensions(lc[i]);
  }
  std::vector<int64_t> out_dims;
  for (int64_t d : lb) out_dims.push_back(ls.dimensions(d));
  for (int64_t d : lf) {
    k->m_ *= ls.dimensions(d);
    out_dims.push_back(ls.dimensions(d));
  }
  for (int64_t d : rf) {
    k->n_ *= rs.dimensions(d);
    out_dims.push_back(rs.dimensions(d));
  }
  if (out_dims != os.dimensions())
    return InvalidArgument("dot %", instr.name(), ": result shape does not match the operands");

  // In-place layouts: batch dims leading in order; the contracting dims in memory order pair up
  // in the same order on both sides.
  const int64_t nb = static_cast<int64_t>(lb.size());
  std::vector<int64_t> lc_mem = lc, rc_mem = rc;
  std::sort(lc_mem.begin(), lc_mem.end());
  std::sort(rc_mem.begin(), rc_mem.end());
  bool direct = IsIota(lb, 0) && IsIota(rb, 0);
  for (size_t i = 0; direct && i < lc_mem.size(); ++i) {
    const size_t j = std::find(lc.begin(), lc.end(), lc_mem[i]) - lc.begin();
    direct = rc[j] == rc_mem[i];
  }
  auto contiguous = [](const std::vector<int64_t>& v) {
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] != v[i - 1] + 1) return false;
    return true;
  };
  direct = direct && contiguous(lc_mem) && contiguous(rc_mem) && contiguous(lf) && contiguous(rf);
  if (direct) {
    // lhs: [B, M, K] when free dims come first, [B, K, M] otherwise.
    k->lhs_.transposed = !lf.empty() && !lc_mem.empty() && lc_mem.front() < lf.front();
    k->rhs_.transposed = !rf.empty() && !rc_mem.empty() && rf.front() < rc_mem.front();
    if (!lf.empty() && lf.front() != nb && !k->lhs_.transposed) direct = false;
    if (!rc_mem.empty() && rc_mem.front() != nb && !k->rhs_.transposed) direct = false;
  }
  k->lhs_.type = ls.element_type();
  k->rhs_.type = rs.element_type();
  k->lhs_.dims = ls.dimensions();
  k->rhs_.dims = rs.dimensions();
  if (!direct) {
    k->lhs_.transposed = k->rhs_.transposed = false;
    k->lhs_.perm = lb;
    k->lhs_.perm.insert(k->lhs_.perm.end(), lf.begin(), lf.end());
    k->lhs_.perm.insert(k->lhs_.perm.end(), lc.begin(), lc.end());
    k->rhs_.perm = rb;
    k->rhs_.perm.insert(k->rhs_.perm.end(), rc.begin(), rc.end());
    k->rhs_.perm.insert(k->rhs_.perm.end(), rf.begin(), rf.end());
    if (IsIota(k->lhs_.perm, 0)) k->lhs_.perm.clear();
    if (IsIota(k->rhs_.perm, 0)) k->rhs_.perm.clear();
  }
  k->out_type_ = os.element_type();
  const PrimitiveType rt = os.element_type();
  auto any = [&](auto pred) { return pred(rt) || pred(ls.element_type()) || pred(rs.element_type()); };
  if (IsComplexType(rt)) {
    k->compute_ = any([](PrimitiveType t) {
                    return t == PrimitiveType::kC128 || t == PrimitiveType::kF64;
                  })
                      ? DotCompute::kC128
                      : DotCompute::kC64;
  } else if (IsFloatingPointType(rt)) {
    k->compute_ = any([](PrimitiveType t) { return t == PrimitiveType::kF64; }) ? DotCompute::kF64
                                                                                : DotCompute::kF32;
  } else if (IsIntegralType(rt) || rt == PrimitiveType::kPred) {
    k->compute_ = PrimitiveBitWidth(rt) > 32 ? DotCompute::kU64 : DotCompute::kU32;
  } else {
    return Unimplemented("dot kernel: result type ", PrimitiveTypeName(rt));
  }
  k->name_ = StrCat("dot[", ShapeText(ls), " x ", ShapeText(rs), " -> ", ShapeText(os), " B=",
                    k->b_, " M=", k->m_, " N=", k->n_, " K=", k->k_,
                    direct ? "" : ", permuted operands", "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
