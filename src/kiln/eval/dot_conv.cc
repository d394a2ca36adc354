// Dot-like kernels: dot, ragged-dot, scaled-dot and convolution.
//
// Accumulation (the oracle is exact where it can be, never less precise than XLA's CPU):
//   - real results (f64, f32, f16, bf16, f8...): operands are read exactly into double, products
//     are summed in double, and the sum is rounded once to the result type;
//   - complex results: the same in std::complex<double>;
//   - integer results: operands are converted to the result type (as XLA's evaluator does), and
//     products are summed with wraparound in the result width (s8 x s8 -> s32 wraps at 32 bits;
//     XLA's CPU backend wraps the same way; XLA's HloEvaluator saturates instead for convolution);
//   - pred results: OR of ANDs.
// operand_precision and algorithm= are ignored (the oracle computes exactly); packed-nibble
// precision and sparsity are unsupported.
#include <algorithm>
#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/parallel.h"

namespace kiln {
namespace {

using eval_internal::ElementProduct;
using eval_internal::EvalParallelFor;
using eval_internal::ExpectArrayOperand;
using eval_internal::NextRowMajorIndex;

enum class AccKind { kReal, kComplex, kInt };

AccKind AccKindFor(PrimitiveType result) {
  if (IsComplexType(result)) return AccKind::kComplex;
  if (IsIntegralType(result) || result == PrimitiveType::kPred) return AccKind::kInt;
  return AccKind::kReal;
}

template <typename Acc>
void StoreAcc(const std::vector<Acc>& values, Literal& out) {
  if constexpr (std::is_same_v<Acc, double>) {
    eval_internal::StoreDoubles(values, out);
  } else if constexpr (std::is_same_v<Acc, std::complex<double>>) {
    eval_internal::StoreComplexes(values, out);
  } else {
    eval_internal::StoreInt64s(values, out);
  }
}

// acc + a * b in the accumulation type Acc, operands stored as In (float for f32 and narrower
// floats: their products are exact in double); integers wrap (computed in uint64).
template <typename Acc, typename In>
inline Acc MulAdd(Acc acc, In a, In b) {
  if constexpr (std::is_same_v<Acc, int64_t>) {
    return static_cast<int64_t>(static_cast<uint64_t>(acc) +
                                static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return acc + static_cast<Acc>(a) * static_cast<Acc>(b);
  }
}

// Four independent partial sums (latency, not order, limits a single chain; in double the
// order changes nothing at f32 precision, and integer sums are exact modulo 2^64).
template <typename Acc, typename In>
inline Acc DotRow(const In* a, const In* b, int64_t k) {
  Acc s0{}, s1{}, s2{}, s3{};
  int64_t i = 0;
  for (; i + 4 <= k; i += 4) {
    s0 = MulAdd(s0, a[i], b[i]);
    s1 = MulAdd(s1, a[i + 1], b[i + 1]);
    s2 = MulAdd(s2, a[i + 2], b[i + 2]);
    s3 = MulAdd(s3, a[i + 3], b[i + 3]);
  }
  for (; i < k; ++i) s0 = MulAdd(s0, a[i], b[i]);
  if constexpr (std::is_same_v<Acc, int64_t>) {
    return static_cast<int64_t>(static_cast<uint64_t>(s0) + static_cast<uint64_t>(s1) +
                                static_cast<uint64_t>(s2) + static_cast<uint64_t>(s3));
  } else {
    return (s0 + s1) + (s2 + s3);
  }
}

// Which dimensions of an operand play which role in a dot.
struct DotOperandDims {
  std::vector<int64_t> batch, contracting, free;
  // batch..., free..., contracting...: the packing permutation.
  std::vector<int64_t> Perm() const {
    std::vector<int64_t> p = batch;
    p.insert(p.end(), free.begin(), free.end());
    p.insert(p.end(), contracting.begin(), contracting.end());
    return p;
  }
};

StatusOr<DotOperandDims> ClassifyDims(const HloInstruction& instr, int64_t rank,
                                      const std::vector<int64_t>& batch,
                                      const std::vector<int64_t>& contracting,
                                      const std::vector<int64_t>& excluded = {}) {
  DotOperandDims d;
  d.batch = batch;
  d.contracting = contracting;
  std::vector<bool> used(rank, false);
  auto mark = [&](int64_t dim) -> Status {
    if (dim < 0 || dim >= rank || used[dim])
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": bad or repeated dimension ", dim, " for an operand of rank ", rank);
    used[dim] = true;
    return OkStatus();
  };
  for (int64_t x : batch) KILN_RETURN_IF_ERROR(mark(x));
  for (int64_t x : contracting) KILN_RETURN_IF_ERROR(mark(x));
  for (int64_t x : excluded) KILN_RETURN_IF_ERROR(mark(x));
  for (int64_t i = 0; i < rank; ++i)
    if (!used[i]) d.free.push_back(i);
  return d;
}

std::vector<int64_t> SizesOf(const Shape& s, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(s.dimensions(d));
  return out;
}

// An operand permuted (to [batch][free][contracting] for dots) and converted to the storage
// type In; for integer results, floats convert to the result type as XLA's evaluator does.
template <typename In>
std::vector<In> Pack(const Literal& l, const std::vector<int64_t>& perm, PrimitiveType result) {
  return eval_internal::PermuteToWide<In>(l, perm, result);
}

// Whether float holds every value of `t` exactly (then products are exact in double).
bool FitsFloat(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 ||
         IsF8Type(t) || t == PrimitiveType::kF4E2M1FN;
}

// Calls run(Acc{}, In{}) with the accumulation and operand storage types for a result of
// type `result` and operands of types `lt`, `rt`.
template <typename Run>
void DispatchAcc(PrimitiveType result, PrimitiveType lt, PrimitiveType rt, Run run) {
  switch (AccKindFor(result)) {
    case AccKind::kReal:
      if (FitsFloat(lt) && FitsFloat(rt)) {
        run(double{}, float{});
      } else {
        run(double{}, double{});
      }
      break;
    case AccKind::kComplex:
      run(std::complex<double>{}, std::complex<double>{});
      break;
    case AccKind::kInt:
      run(int64_t{}, int64_t{});
      break;
  }
}

Status CheckPrecision(const HloInstruction& instr) {
  for (Precision p : instr.attrs().precision_config.operand_precision)
    if (p == Precision::kPackedNibble)
      return UnsupportedInstruction(instr, "packed-nibble operand precision");
  if (!instr.attrs().sparsity.empty()) return UnsupportedInstruction(instr, "sparse dot");
  return OkStatus();
}

// The plain dot of two array literals with dimension numbers `dn`, into `result_shape`.
StatusOr<Literal> DotLiterals(const HloInstruction& instr, const Literal& lhs, const Literal& rhs,
                              const DotDimensionNumbers& dn, const Shape& result_shape,
                              const Evaluator& evaluator) {
  if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size() ||
      dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size())
    return InvalidArgument("dot %", instr.name(), ": mismatched dimension numbers");
  KILN_ASSIGN_OR_RETURN(DotOperandDims ld,
                        ClassifyDims(instr, lhs.shape().rank(), dn.lhs_batch_dimensions,
                                     dn.lhs_contracting_dimensions));
  KILN_ASSIGN_OR_RETURN(DotOperandDims rd,
                        ClassifyDims(instr, rhs.shape().rank(), dn.rhs_batch_dimensions,
                                     dn.rhs_contracting_dimensions));
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  if (SizesOf(ls, ld.batch) != SizesOf(rs, rd.batch) ||
      SizesOf(ls, ld.contracting) != SizesOf(rs, rd.contracting))
    return InvalidArgument("dot %", instr.name(), ": batch or contracting sizes differ between ",
                           ls.ToString(false), " and ", rs.ToString(false));
  const int64_t B = ElementProduct(SizesOf(ls, ld.batch));
  const int64_t M = ElementProduct(SizesOf(ls, ld.free));
  const int64_t N = ElementProduct(SizesOf(rs, rd.free));
  const int64_t K = ElementProduct(SizesOf(ls, ld.contracting));
  std::vector<int64_t> out_dims = SizesOf(ls, ld.batch);
  for (int64_t d : SizesOf(ls, ld.free)) out_dims.push_back(d);
  for (int64_t d : SizesOf(rs, rd.free)) out_dims.push_back(d);
  if (!result_shape.IsArray() || result_shape.dimensions() != out_dims)
    return InvalidArgument("dot %", instr.name(), ": result shape ", result_shape.ToString(false),
                           " does not match the operands (dims [", StrJoin(out_dims, ","), "])");
  Literal out(result_shape);
  auto run = [&](auto acc_tag, auto in_tag) {
    using Acc = decltype(acc_tag);
    using In = decltype(in_tag);
    std::vector<In> a = Pack<In>(lhs, ld.Perm(), result_shape.element_type());
    std::vector<In> b = Pack<In>(rhs, rd.Perm(), result_shape.element_type());
    std::vector<Acc> c(B * M * N);
    // Items are blocks of kRows lhs rows of one batch entry: each rhs row (K contiguous values)
    // is read once per block rather than once per lhs row, and the block's lhs rows stay in
    // cache. Every element is still one DotRow, so the order of its sum is the serial one.
    constexpr int64_t kRows = 8;
    const int64_t blocks = (M + kRows - 1) / kRows;
    EvalParallelFor(evaluator, B * blocks, std::min(M, kRows) * N * K, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t bi = item / blocks, m0 = (item % blocks) * kRows, m1 = std::min(M, m0 + kRows);
        for (int64_t n = 0; n < N; ++n) {
          const In* bn = b.data() + ((bi * N + n) * K);
          for (int64_t m = m0; m < m1; ++m)
            c[(bi * M + m) * N + n] = DotRow<Acc>(a.data() + ((bi * M + m) * K), bn, K);
        }
      }
    });
    StoreAcc(c, out);
  };
  DispatchAcc(result_shape.element_type(), ls.element_type(), rs.element_type(), run);
  return out;
}

StatusOr<Literal> EvalDot(const HloInstruction& instr, std::span<const Literal* const> ops,
                          Evaluator& evaluator) {
  if (!instr.attrs().sparsity.empty())
    return Unimplemented("unsupported: sparse dot %", instr.name(),
                         " (structured sparsity, sparsity=...; its metadata operands are not read by kiln)");
  if (ops.size() != 2) return InvalidArgument("dot %", instr.name(), " takes 2 operands");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[1], 1));
  KILN_RETURN_IF_ERROR(CheckPrecision(instr));
  DotDimensionNumbers dn;
  if (instr.attrs().dot_dimension_numbers) dn = *instr.attrs().dot_dimension_numbers;
  return DotLiterals(instr, *ops[0], *ops[1], dn, instr.shape(), evaluator);
}

// ---- scaled-dot ----
// scaled-dot(lhs, rhs, lhs_scale, rhs_scale): each operand is multiplied by its scale, broadcast
// in blocks (scale dimension i covers operand_dim(i) / scale_dim(i) consecutive elements; a
// scalar scale covers everything), then an exact dot as above.
StatusOr<Literal> Dequantize(const HloInstruction& instr, const Literal& x, const Literal& scale,
                             bool complex) {
  const Shape& xs = x.shape();
  const Shape& ss = scale.shape();
  if (!ss.IsArray() || (ss.rank() != 0 && ss.rank() != xs.rank()))
    return InvalidArgument("scaled-dot %", instr.name(), ": scale ", ss.ToString(false),
                           " does not fit operand ", xs.ToString(false));
  std::vector<int64_t> block(xs.rank(), 1);
  if (ss.rank() != 0) {
    for (int64_t d = 0; d < xs.rank(); ++d) {
      if (ss.dimensions(d) == 0 || xs.dimensions(d) % ss.dimensions(d) != 0)
        return InvalidArgument("scaled-dot %", instr.name(), ": scale ", ss.ToString(false),
                               " does not divide operand ", xs.ToString(false));
      block[d] = xs.dimensions(d) / ss.dimensions(d);
    }
  }
  Shape wide = Shape::Array(complex ? PrimitiveType::kC128 : PrimitiveType::kF64, xs.dimensions());
  Literal out(wide);
  std::vector<std::complex<double>> xv = eval_internal::LiteralToComplexes(x);
  std::vector<std::complex<double>> sv = eval_internal::LiteralToComplexes(scale);
  std::vector<int64_t> idx(xs.rank(), 0);
  std::vector<int64_t> sidx(xs.rank(), 0);
  const int64_t n = xs.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = 0;
    if (ss.rank() != 0) {
      for (int64_t d = 0; d < xs.rank(); ++d) sidx[d] = idx[d] / block[d];
      s = scale.LinearIndex(sidx);
    }
    xv[i] *= sv[s];
    NextRowMajorIndex(idx, xs.dimensions());
  }
  eval_internal::StoreComplexes(xv, out);
  return out;
}

StatusOr<Literal> EvalScaledDot(const HloInstruction& instr, std::span<const Literal* const> ops,
                                Evaluator& evaluator) {
  if (ops.size() != 4)
    return UnsupportedInstruction(instr, StrCat("scaled-dot with ", ops.size(),
                                                " operands (only lhs, rhs, lhs_scale, rhs_scale)"));
  for (size_t i = 0; i < 4; ++i) KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[i], i));
  KILN_RETURN_IF_ERROR(CheckPrecision(instr));
  bool complex = IsComplexType(instr.shape().element_type());
  KILN_ASSIGN_OR_RETURN(Literal lhs, Dequantize(instr, *ops[0], *ops[2], complex));
  KILN_ASSIGN_OR_RETURN(Literal rhs, Dequantize(instr, *ops[1], *ops[3], complex));
  DotDimensionNumbers dn;
  if (instr.attrs().dot_dimension_numbers) dn = *instr.attrs().dot_dimension_numbers;
  return DotLiterals(instr, lhs, rhs, dn, instr.shape(), evaluator);
}

// ---- ragged-dot ----
// Three modes, by the kind of the lhs ragged dimension (one ragged dimension; group sizes
// partition it into consecutive groups; positions past the sum of the sizes produce zeros):
//   1. non-contracting (m): rhs has a group dimension; [b,m,k] x [g,b,k,n] -> [b,m,n]; each row
//      of lhs is multiplied with the rhs of its group.
//   2. contracting (k): [b,m,k] x [b,k,n] -> [g,b,m,n]; output g sums only over group g's k.
//   3. batch (b): [b,m,k] x [b,k,n] -> [b,m,n]: the plain batched dot, whatever the group
//      sizes (as jax.lax.ragged_dot_general defines it).
// group_sizes may be [g], or (modes 1 and 2) carry the batch dimensions in front: [b...,g];
// mode 1 also accepts [b..., x..., g] where x are the lhs non-contracting dimensions before the
// ragged one.
struct GroupLookup {
  std::vector<int64_t> sizes;  // all group sizes, row-major
  int64_t g = 0;
  int64_t Group(int64_t row, int64_t coord) const {
    int64_t start = 0;
    for (int64_t i = 0; i < g; ++i) {
      int64_t s = sizes[row * g + i];
      if (s < 0) s = 0;
      if (coord < start + s) return i;
      start += s;
    }
    return -1;
  }
};

StatusOr<Literal> EvalRaggedDot(const HloInstruction& instr, std::span<const Literal* const> ops,
                                Evaluator&) {
  if (ops.size() != 3)
    return UnsupportedInstruction(instr, "ragged-dot takes lhs, rhs and group_sizes");
  for (size_t i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[i], i));
  KILN_RETURN_IF_ERROR(CheckPrecision(instr));
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  const Literal& gs = *ops[2];
  if (!IsIntegralType(gs.shape().element_type()) || gs.shape().rank() < 1)
    return InvalidArgument("ragged-dot %", instr.name(), ": group_sizes must be an integer array");
  DotDimensionNumbers dn;
  if (instr.attrs().dot_dimension_numbers) dn = *instr.attrs().dot_dimension_numbers;
  RaggedDotDimensionNumbers rdn;
  if (instr.attrs().ragged_dot_dimension_numbers) rdn = *instr.attrs().ragged_dot_dimension_numbers;
  if (rdn.lhs_ragged_dimensions.size() != 1)
    return UnsupportedInstruction(instr, "ragged-dot needs exactly one lhs ragged dimension");
  const int64_t r = rdn.lhs_ragged_dimensions[0];
  auto contains = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  const bool mode2 = contains(dn.lhs_contracting_dimensions, r);
  const bool mode3 = contains(dn.lhs_batch_dimensions, r);
  const bool mode1 = !mode2 && !mode3;
  if (mode1 != (rdn.rhs_group_dimensions.size() == 1))
    return InvalidArgument("ragged-dot %", instr.name(),
                           ": rhs group dimension must be present exactly in the "
                           "non-contracting mode");

  GroupLookup groups;
  groups.sizes = eval_internal::LiteralToInt64s(gs);
  groups.g = gs.shape().dimensions(gs.shape().rank() - 1);

  KILN_ASSIGN_OR_RETURN(DotOperandDims ld,
                        ClassifyDims(instr, lhs.shape().rank(), dn.lhs_batch_dimensions,
                                     dn.lhs_contracting_dimensions));
  KILN_ASSIGN_OR_RETURN(DotOperandDims rd,
                        ClassifyDims(instr, rhs.shape().rank(), dn.rhs_batch_dimensions,
                                     dn.rhs_contracting_dimensions, rdn.rhs_group_dimensions));
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  const std::vector<int64_t> bsz = SizesOf(ls, ld.batch);
  const std::vector<int64_t> msz = SizesOf(ls, ld.free);
  const std::vector<int64_t> ksz = SizesOf(ls, ld.contracting);
  const std::vector<int64_t> nsz = SizesOf(rs, rd.free);
  if (bsz != SizesOf(rs, rd.batch) || ksz != SizesOf(rs, rd.contracting))
    return InvalidArgument("ragged-dot %", instr.name(), ": batch or contracting sizes differ");
  const int64_t B = ElementProduct(bsz), M = ElementProduct(msz), K = ElementProduct(ksz),
                N = ElementProduct(nsz);
  const int64_t G = mode1 ? rs.dimensions(rdn.rhs_group_dimensions[0]) : groups.g;
  if (mode1 && G != groups.g)
    return InvalidArgument("ragged-dot %", instr.name(), ": rhs has ", G,
                           " groups but group_sizes has ", groups.g);

  std::vector<int64_t> out_dims;
  if (mode2) out_dims.push_back(G);
  out_dims.insert(out_dims.end(), bsz.begin(), bsz.end());
  out_dims.insert(out_dims.end(), msz.begin(), msz.end());
  out_dims.insert(out_dims.end(), nsz.begin(), nsz.end());
  if (instr.shape().dimensions() != out_dims)
    return InvalidArgument("ragged-dot %", instr.name(), ": result shape ",
                           instr.shape().ToString(false), " does not match [",
                           StrJoin(out_dims, ","), "]");

  // How the group-sizes row is chosen, and the ragged coordinate's stride/size in its packed axis.
  const int64_t gs_rank = gs.shape().rank();
  int64_t coord_stride = 1, coord_size = 1, outer_free = 0;
  if (mode1) {
    size_t p = std::find(ld.free.begin(), ld.free.end(), r) - ld.free.begin();
    outer_free = static_cast<int64_t>(p);
    coord_size = msz[p];
    for (size_t i = p + 1; i < msz.size(); ++i) coord_stride *= msz[i];
  } else if (mode2) {
    size_t q = std::find(ld.contracting.begin(), ld.contracting.end(), r) - ld.contracting.begin();
    coord_size = ksz[q];
    for (size_t i = q + 1; i < ksz.size(); ++i) coord_stride *= ksz[i];
  }
  const int64_t nb = static_cast<int64_t>(bsz.size());
  bool rows_by_batch = false, rows_by_outer = false;
  if (gs_rank == 1 || mode3) {
    // Mode 3 ignores the group sizes.
  } else if (gs_rank == nb + 1) {
    rows_by_batch = true;
  } else if (mode1 && gs_rank == nb + outer_free + 1) {
    rows_by_batch = true;
    rows_by_outer = true;
  } else {
    return UnsupportedInstruction(instr,
                                  StrCat("group_sizes of shape ", gs.shape().ToString(false)));
  }
  // Row of group sizes for batch bi and lhs free index m (mode 1 with outer dims).
  int64_t outer_count = 1;
  for (int64_t i = 0; i < outer_free; ++i) outer_count *= msz[i];
  const int64_t inner_m = M / std::max<int64_t>(outer_count, 1);
  auto row_of = [&](int64_t bi, int64_t m) -> int64_t {
    int64_t row = rows_by_batch ? bi : 0;
    if (rows_by_outer) row = row * outer_count + (inner_m ? m / inner_m : 0);
    return row;
  };

  Literal out(instr.shape());
  const PrimitiveType rt = instr.shape().element_type();
  auto run = [&](auto acc_tag, auto in_tag) {
    using Acc = decltype(acc_tag);
    using In = decltype(in_tag);
    std::vector<In> a = Pack<In>(lhs, ld.Perm(), rt);
    std::vector<int64_t> rperm;
    if (mode1) rperm.push_back(rdn.rhs_group_dimensions[0]);
    for (int64_t d : rd.Perm()) rperm.push_back(d);
    std::vector<In> b = Pack<In>(rhs, rperm, rt);
    std::vector<Acc> c(ElementProduct(out_dims), Acc{});
    for (int64_t bi = 0; bi < B; ++bi) {
      for (int64_t m = 0; m < M; ++m) {
        const In* arow = a.data() + ((bi * M + m) * K);
        if (mode1) {
          int64_t gi = groups.Group(row_of(bi, m), (m / coord_stride) % coord_size);
          if (gi < 0) continue;
          for (int64_t n = 0; n < N; ++n)
            c[(bi * M + m) * N + n] =
                DotRow<Acc>(arow, b.data() + (((gi * B + bi) * N + n) * K), K);
        } else if (mode2) {
          const int64_t row = rows_by_batch ? bi : 0;
          for (int64_t n = 0; n < N; ++n) {
            const In* brow = b.data() + ((bi * N + n) * K);
            for (int64_t k = 0; k < K; ++k) {
              int64_t gi = groups.Group(row, (k / coord_stride) % coord_size);
              if (gi < 0) continue;
              Acc& dst = c[((gi * B + bi) * M + m) * N + n];
              dst = MulAdd(dst, arow[k], brow[k]);
            }
          }
        } else {
          for (int64_t n = 0; n < N; ++n)
            c[(bi * M + m) * N + n] = DotRow<Acc>(arow, b.data() + ((bi * N + n) * K), K);
        }
      }
    }
    StoreAcc(c, out);
  };
  DispatchAcc(rt, ls.element_type(), rs.element_type(), run);
  return out;
}

// ---- convolution ----
// XLA's semantics (HloEvaluator): for output (batch n, feature o, spatial x...), sum over the
// kernel window k... and the input features of o's feature group of
//   lhs[batch n + bg(o) * (N_in / batch_groups), feature fg(o) * C_g + c, spatial p...] *
//   rhs[o, c, k' ...]
// where per spatial dim: u = x * stride - pad_low + k * window_dilation; u must be a multiple of
// the base (lhs) dilation and p = u / base_dilation must lie in [0, in_size); k' = size-1-k when
// the window is reversed. fg(o) = o / (O / feature_groups), bg(o) = o / (O / batch_groups).
StatusOr<Literal> EvalConvolution(const HloInstruction& instr, std::span<const Literal* const> ops,
                                  Evaluator& evaluator) {
  if (ops.size() != 2) return InvalidArgument("convolution %", instr.name(), " takes 2 operands");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[1], 1));
  KILN_RETURN_IF_ERROR(CheckPrecision(instr));
  const Literal& lhs = *ops[0];
  const Literal& rhs = *ops[1];
  const HloAttributes& at = instr.attrs();
  if (!at.convolution_dimension_numbers)
    return InvalidArgument("convolution %", instr.name(), " has no dim_labels");
  const ConvolutionDimensionNumbers& dn = *at.convolution_dimension_numbers;
  const size_t nsp = dn.input_spatial_dimensions.size();
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  const Shape& os = instr.shape();
  if (dn.kernel_spatial_dimensions.size() != nsp || dn.output_spatial_dimensions.size() != nsp ||
      ls.rank() != static_cast<int64_t>(nsp) + 2 || rs.rank() != static_cast<int64_t>(nsp) + 2 ||
      os.rank() != static_cast<int64_t>(nsp) + 2)
    return InvalidArgument("convolution %", instr.name(), ": ranks do not match dim_labels");
  std::vector<WindowDimension> win(nsp);
  if (at.window) {
    if (at.window->dimensions.size() != nsp)
      return InvalidArgument("convolution %", instr.name(), ": window has ",
                             at.window->dimensions.size(), " dimensions, expected ", nsp);
    win = at.window->dimensions;
  }
  const int64_t fgc = at.feature_group_count, bgc = at.batch_group_count;
  const int64_t n_in = ls.dimensions(dn.input_batch_dimension);
  const int64_t c_in = ls.dimensions(dn.input_feature_dimension);
  const int64_t c_g = rs.dimensions(dn.kernel_input_feature_dimension);
  const int64_t o_out = rs.dimensions(dn.kernel_output_feature_dimension);
  const int64_t n_out = os.dimensions(dn.output_batch_dimension);
  if (fgc < 1 || bgc < 1 || c_in != c_g * fgc || o_out % fgc != 0 || o_out % bgc != 0 ||
      n_in % bgc != 0 || n_out != n_in / bgc || os.dimensions(dn.output_feature_dimension) != o_out)
    return InvalidArgument("convolution %", instr.name(), ": feature/batch group counts (", fgc,
                           ", ", bgc, ") do not fit lhs ", ls.ToString(false), ", rhs ",
                           rs.ToString(false), ", result ", os.ToString(false));
  std::vector<int64_t> in_sp(nsp), k_sp(nsp), out_sp(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    in_sp[i] = ls.dimensions(dn.input_spatial_dimensions[i]);
    k_sp[i] = rs.dimensions(dn.kernel_spatial_dimensions[i]);
    out_sp[i] = os.dimensions(dn.output_spatial_dimensions[i]);
    if (win[i].size != k_sp[i])
      return InvalidArgument("convolution %", instr.name(), ": window size ", win[i].size,
                             " differs from kernel size ", k_sp[i]);
    if (win[i].base_dilation < 1 || win[i].window_dilation < 1)
      return InvalidArgument("convolution %", instr.name(), ": dilation must be >= 1");
  }
  // Per spatial dim: input position for (output x, kernel k), or -1.
  std::vector<std::vector<int64_t>> in_pos(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    in_pos[i].assign(out_sp[i] * k_sp[i], -1);
    const WindowDimension& w = win[i];
    for (int64_t x = 0; x < out_sp[i]; ++x)
      for (int64_t k = 0; k < k_sp[i]; ++k) {
        int64_t u = x * w.stride - w.padding_low + k * w.window_dilation;
        if (u % w.base_dilation != 0) continue;
        int64_t p = u / w.base_dilation;
        if (p < 0 || p >= in_sp[i]) continue;
        in_pos[i][x * k_sp[i] + k] = p;
      }
  }
  // Packing: lhs [N][S...][C], rhs [O][I][K...], result computed as [N][X...][O]. For each
  // output position and input batch entry, the input window is gathered into a patch laid out
  // [C][K...] (zeros at taps outside the input), so every output feature is one contiguous dot
  // of its group's C_g * K patch entries with its kernel row.
  std::vector<int64_t> lperm{dn.input_batch_dimension},
      rperm{dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension};
  for (size_t i = 0; i < nsp; ++i) {
    lperm.push_back(dn.input_spatial_dimensions[i]);
    rperm.push_back(dn.kernel_spatial_dimensions[i]);
  }
  lperm.push_back(dn.input_feature_dimension);
  const int64_t in_spatial = ElementProduct(in_sp), k_spatial = ElementProduct(k_sp),
                out_spatial = ElementProduct(out_sp);
  const int64_t o_per_fg = o_out / fgc, o_per_bg = o_out / bgc;
  std::vector<int64_t> in_strides(nsp, 1), k_strides(nsp, 1);
  for (size_t i = nsp; i-- > 1;) {
    in_strides[i - 1] = in_strides[i] * in_sp[i];
    k_strides[i - 1] = k_strides[i] * k_sp[i];
  }
  // Result dimension r comes from computed dimension perm[r].
  std::vector<int64_t> comp_dims{n_out};
  comp_dims.insert(comp_dims.end(), out_sp.begin(), out_sp.end());
  comp_dims.push_back(o_out);
  std::vector<int64_t> res_perm(nsp + 2);
  res_perm[dn.output_batch_dimension] = 0;
  res_perm[dn.output_feature_dimension] = static_cast<int64_t>(nsp) + 1;
  for (size_t i = 0; i < nsp; ++i) res_perm[dn.output_spatial_dimensions[i]] = 1 + i;

  Literal out(os);
  const PrimitiveType rt = os.element_type();
  auto run = [&](auto acc_tag, auto in_tag) {
    using Acc = decltype(acc_tag);
    using In = decltype(in_tag);
    std::vector<In> a = Pack<In>(lhs, lperm, rt);
    std::vector<In> b = Pack<In>(rhs, rperm, rt);
    std::vector<Acc> c(n_out * out_spatial * o_out, Acc{});
    const int64_t group_len = c_g * k_spatial;
    // Items are (output position xs, input batch entry nb), xs major; each writes its own
    // output features of one output row, so chunks run on separate threads (eval/parallel.h).
    EvalParallelFor(evaluator, out_spatial * n_in, std::max<int64_t>(1, o_per_bg * group_len),
                    [&](int64_t begin, int64_t end) {
      std::vector<int64_t> x(nsp, 0), k(nsp, 0);
      std::vector<std::pair<int64_t, int64_t>> taps;  // (lhs spatial, kernel spatial) offsets
      std::vector<In> patch(c_in * k_spatial);
      int64_t taps_of = -1;  // the xs `taps` were computed for
      for (int64_t item = begin; item < end; ++item) {
        const int64_t xs = item / n_in, nb = item % n_in;
        if (xs != taps_of) {
          // The valid kernel taps for this output position.
          taps_of = xs;
          int64_t rest = xs;
          for (size_t i = nsp; i-- > 0;) {
            x[i] = rest % out_sp[i];
            rest /= out_sp[i];
          }
          taps.clear();
          if (k_spatial > 0) {
            std::fill(k.begin(), k.end(), 0);
            do {
              int64_t lin = 0, kin = 0;
              bool ok = true;
              for (size_t i = 0; i < nsp; ++i) {
                int64_t p = in_pos[i][x[i] * k_sp[i] + k[i]];
                if (p < 0) {
                  ok = false;
                  break;
                }
                lin += p * in_strides[i];
                kin += (win[i].window_reversal ? k_sp[i] - 1 - k[i] : k[i]) * k_strides[i];
              }
              if (ok) taps.emplace_back(lin, kin);
            } while (NextRowMajorIndex(k, k_sp));
          }
        }
        // Input batch entry nb feeds output batch nb % N_out, for the output features of batch
        // group nb / N_out.
        const int64_t bg = nb / n_out, n = nb % n_out;
        std::fill(patch.begin(), patch.end(), In{});
        for (const auto& [lin, kin] : taps) {
          const In* ap = a.data() + ((nb * in_spatial + lin) * c_in);
          for (int64_t ci = 0; ci < c_in; ++ci) patch[ci * k_spatial + kin] = ap[ci];
        }
        Acc* dst = c.data() + ((n * out_spatial + xs) * o_out);
        for (int64_t o = bg * o_per_bg; o < (bg + 1) * o_per_bg; ++o) {
          const int64_t fg = o / o_per_fg;
          dst[o] =
              DotRow<Acc>(patch.data() + (fg * group_len), b.data() + (o * group_len), group_len);
        }
      }
    });
    eval_internal::StorePermuted(c.data(), comp_dims, res_perm, out);
  };
  DispatchAcc(rt, ls.element_type(), rs.element_type(), run);
  return out;
}

}  // namespace

void RegisterDotConvKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kDot, EvalDot);
  r.Register(HloOpcode::kScaledDot, EvalScaledDot);
  r.Register(HloOpcode::kRaggedDot, EvalRaggedDot);
  r.Register(HloOpcode::kConvolution, EvalConvolution);
}

}  // namespace kiln
