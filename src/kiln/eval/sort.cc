// sort (multi-operand, comparator computation), topk, and the TopK custom call.
//
// Every sort is stable (std::stable_sort), which is a valid result for is_stable=false too.
// The comparator takes 2N scalars (lhs0, rhs0, lhs1, rhs1, ...) and returns "lhs goes first".
// A comparator that is a single compare of one operand's lhs/rhs parameters (LT or GT, any
// comparison type but complex) is run natively on precomputed keys; any other comparator runs
// per comparison as a ScalarProgram (ScalarCall), or interpreted when it does not compile.
//
// Total order (TOTALORDER compares, topk): -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN, on
// the element's own bits (NaN payloads order by magnitude). topk returns, per row of the last
// dimension, the k largest (largest=true) or smallest elements in that order, ties broken by
// lower index first, with their s32 indices.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/eval/array_util.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/scalar_call.h"
#include "kiln/eval/sort_internal.h"
#include "kiln/hlo/computation.h"

namespace kiln {
namespace {

using eval_internal::ExpectArrayOperand;

// The total-order key of an element from its storage bits.
template <typename T>
constexpr int StorageBits() {
  if constexpr (kIsMiniFloat<T>)
    return T::kFormat.total_bits;
  else
    return static_cast<int>(sizeof(T) * 8);
}

template <typename T>
int64_t TotalOrderKey(const T& v) {
  if constexpr (kIsMiniFloat<T> || std::is_floating_point_v<T>) {
    constexpr int kBits = StorageBits<T>();
    uint64_t bits = 0;
    if constexpr (kIsMiniFloat<T>) {
      bits = v.bits();
      if (!T::kFormat.has_sign) return static_cast<int64_t>(bits);
    } else {
      std::memcpy(&bits, &v, sizeof(T));
    }
    const uint64_t sign = uint64_t{1} << (kBits - 1);
    const int64_t mag = static_cast<int64_t>(bits & (sign - 1));
    return (bits & sign) ? -mag - 1 : mag;
  } else {
    return 0;
  }
}

enum class KeyKind { kDouble, kSigned, kUnsigned, kTotal };

// Keys of all elements of `l` for a compare of kind `kind`.
struct Keys {
  KeyKind kind;
  std::vector<double> d;
  std::vector<int64_t> s;   // kSigned, kTotal
  std::vector<uint64_t> u;  // kUnsigned
};

Keys MakeKeys(const Literal& l, KeyKind kind) {
  Keys k;
  k.kind = kind;
  const int64_t n = l.element_count();
  switch (kind) {
    case KeyKind::kDouble:
      k.d = eval_internal::LiteralToDoubles(l);
      break;
    case KeyKind::kSigned:
      k.s = eval_internal::LiteralToInt64s(l);
      break;
    case KeyKind::kUnsigned: {
      std::vector<int64_t> v = eval_internal::LiteralToInt64s(l);
      k.u.resize(n);
      // Mask to the type's width: a u8 255 stays 255, a s8 -1 compared unsigned is 255.
      int bits = PrimitiveBitWidth(l.shape().element_type());
      uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      for (int64_t i = 0; i < n; ++i) k.u[i] = static_cast<uint64_t>(v[i]) & mask;
      break;
    }
    case KeyKind::kTotal:
      k.s.resize(n);
      ArrayTypeSwitch(l.shape().element_type(), [&](auto tag) {
        using T = NativeTypeOf<decltype(tag)::value>;
        auto data = l.data<T>();
        if constexpr (kIsMiniFloat<T> || std::is_floating_point_v<T>) {
          for (int64_t i = 0; i < n; ++i) k.s[i] = TotalOrderKey(data[i]);
        } else {
          std::vector<int64_t> v = eval_internal::LiteralToInt64s(l);
          k.s = v;
        }
      });
      break;
  }
  return k;
}

// A comparator recognized as one compare of operand `operand`'s two parameters.
struct FastCompare {
  int64_t operand = 0;
  bool greater = false;
  KeyKind kind = KeyKind::kDouble;
};

std::optional<FastCompare> DetectFastCompare(const HloComputation& comp,
                                             std::span<const Literal* const> operands) {
  const HloInstruction* root = comp.root_instruction();
  if (!root || root->opcode() != HloOpcode::kCompare || root->operand_count() != 2) return {};
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter) return {};
  int64_t pa = a->parameter_number(), pb = b->parameter_number();
  if (pa / 2 != pb / 2 || pa == pb) return {};
  FastCompare fc;
  fc.operand = pa / 2;
  if (fc.operand >= static_cast<int64_t>(operands.size())) return {};
  bool swapped = pa % 2 == 1;
  switch (root->attrs().comparison_direction) {
    case ComparisonDirection::kLt:
      fc.greater = swapped;
      break;
    case ComparisonDirection::kGt:
      fc.greater = !swapped;
      break;
    default:
      return {};
  }
  PrimitiveType t = operands[fc.operand]->shape().element_type();
  if (a->shape().element_type() != t) return {};
  ComparisonType ct = root->attrs().comparison_type;
  if (ct == ComparisonType::kDefault) ct = DefaultComparisonType(t);
  if (IsComplexType(t)) return {};
  if (IsFloatingPointType(t)) {
    if (ct == ComparisonType::kFloat)
      fc.kind = KeyKind::kDouble;
    else if (ct == ComparisonType::kTotalOrder)
      fc.kind = KeyKind::kTotal;
    else
      return {};
  } else if (ct == ComparisonType::kSigned || ct == ComparisonType::kTotalOrder) {
    if (IsUnsignedIntegralType(t) && ct == ComparisonType::kSigned) return {};
    fc.kind = IsUnsignedIntegralType(t) || t == PrimitiveType::kPred ? KeyKind::kUnsigned
                                                                     : KeyKind::kSigned;
  } else if (ct == ComparisonType::kUnsigned) {
    fc.kind = KeyKind::kUnsigned;
  } else {
    return {};
  }
  return fc;
}

// Sorts `operands` (equal dimensions) along `dim`, stably, by `comparator`. Returns the
// sorted operands; with `perms`, also each row's permutation (rows in row-major order of the
// other dimensions; perms[row * n + j] is the source position of sorted position j).
StatusOr<std::vector<Literal>> SortOperands(const HloInstruction& instr,
                                            std::span<const Literal* const> operands, int64_t dim,
                                            const HloComputation& comparator, Evaluator& evaluator,
                                            std::vector<int32_t>* perms = nullptr) {
  const Shape& s0 = operands[0]->shape();
  const int64_t rank = s0.rank();
  if (dim < 0 || dim >= rank)
    return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(), ": sort dimension ",
                           dim, " out of range for ", s0.ToString(false));
  for (const Literal* l : operands)
    if (l->shape().dimensions() != s0.dimensions())
      return InvalidArgument(HloOpcodeString(instr.opcode()), " %", instr.name(),
                             ": sort operands differ in dimensions");
  const int64_t n = s0.dimensions(dim);
  const std::vector<int64_t> strides = RowMajorStrides(s0.dimensions());
  const int64_t stride = strides[dim];
  const int64_t total = s0.num_elements();
  std::vector<Literal> out;
  for (const Literal* l : operands) out.push_back(*l);
  if (perms) {
    perms->resize(total);
    for (int64_t i = 0; i < total; ++i) (*perms)[i] = static_cast<int32_t>(n ? i % n : 0);
  }
  if (total == 0 || n <= 1) return out;

  std::optional<FastCompare> fast = DetectFastCompare(comparator, operands);
  Keys keys;
  std::optional<eval_internal::ScalarCall> call;
  if (fast) {
    keys = MakeKeys(*operands[fast->operand], fast->kind);
  } else {
    std::vector<PrimitiveType> ptypes;
    for (const Literal* l : operands) {
      ptypes.push_back(l->shape().element_type());
      ptypes.push_back(l->shape().element_type());
    }
    KILN_ASSIGN_OR_RETURN(eval_internal::ScalarCall c,
                          eval_internal::ScalarCall::Create(evaluator, comparator, ptypes, 1));
    call.emplace(std::move(c));
  }
  std::vector<int> widths;
  for (const Literal* l : operands) widths.push_back(PrimitiveByteWidth(l->shape().element_type()));
  std::vector<const void*> args(2 * operands.size());

  // Row bases: every index with index[dim] == 0.
  std::vector<int64_t> outer_dims = s0.dimensions();
  outer_dims[dim] = 1;
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> perm(n);
  Status error = OkStatus();
  const int64_t rows = total / n;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    for (int64_t d = 0; d < rank; ++d) base += idx[d] * strides[d];
    eval_internal::NextRowMajorIndex(idx, outer_dims);
    std::iota(perm.begin(), perm.end(), 0);
    if (fast) {
      auto by = [&](const auto& key) {
        if (fast->greater) {
          std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
            return key[base + x * stride] > key[base + y * stride];
          });
        } else {
          std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
            return key[base + x * stride] < key[base + y * stride];
          });
        }
      };
      switch (keys.kind) {
        case KeyKind::kDouble:
          by(keys.d);
          break;
        case KeyKind::kSigned:
        case KeyKind::kTotal:
          by(keys.s);
          break;
        case KeyKind::kUnsigned:
          by(keys.u);
          break;
      }
    } else {
      std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
        if (!error.ok()) return false;
        for (size_t i = 0; i < operands.size(); ++i) {
          const uint8_t* d = operands[i]->untyped_data();
          args[2 * i] = d + (base + x * stride) * widths[i];
          args[2 * i + 1] = d + (base + y * stride) * widths[i];
        }
        StatusOr<bool> lt = call->RunPredicate(args);
        if (!lt.ok()) {
          error = lt.status();
          return false;
        }
        return *lt;
      });
      KILN_RETURN_IF_ERROR(error);
    }
    if (perms)
      for (int64_t j = 0; j < n; ++j) (*perms)[r * n + j] = static_cast<int32_t>(perm[j]);
    for (size_t i = 0; i < operands.size(); ++i) {
      const uint8_t* src = operands[i]->untyped_data();
      uint8_t* dst = out[i].untyped_data();
      const int w = widths[i];
      for (int64_t j = 0; j < n; ++j)
        std::memcpy(dst + (base + j * stride) * w, src + (base + perm[j] * stride) * w, w);
    }
  }
  return out;
}

StatusOr<Literal> EvalSort(const HloInstruction& instr, std::span<const Literal* const> ops,
                           Evaluator& evaluator) {
  if (ops.empty()) return InvalidArgument("sort %", instr.name(), " has no operands");
  for (size_t i = 0; i < ops.size(); ++i)
    KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[i], i));
  if (!instr.to_apply()) return InvalidArgument("sort %", instr.name(), " has no comparator");
  if (instr.attrs().dimensions.size() != 1)
    return InvalidArgument("sort %", instr.name(), " needs dimensions={d}");
  KILN_ASSIGN_OR_RETURN(
      std::vector<Literal> sorted,
      SortOperands(instr, ops, instr.attrs().dimensions[0], *instr.to_apply(), evaluator));
  if (!instr.shape().IsTuple()) return std::move(sorted[0]);
  return Literal::MakeTuple(std::move(sorted));
}

// Per-row indices of the k first elements along the last dimension under the total order.
StatusOr<Literal> TopKByTotalOrder(const HloInstruction& instr, const Literal& x, int64_t k,
                                   bool largest) {
  const Shape& xs = x.shape();
  if (xs.rank() < 1)
    return InvalidArgument("topk %", instr.name(), ": operand must have rank >= 1");
  const int64_t n = xs.dimensions(xs.rank() - 1);
  if (k < 0 || k > n)
    return InvalidArgument("topk %", instr.name(), ": k=", k, " exceeds the row length ", n);
  const PrimitiveType t = xs.element_type();
  if (IsComplexType(t)) return UnsupportedInstruction(instr, "topk of complex values");
  Keys keys =
      MakeKeys(x, IsFloatingPointType(t)                                     ? KeyKind::kTotal
                  : (IsUnsignedIntegralType(t) || t == PrimitiveType::kPred) ? KeyKind::kUnsigned
                                                                             : KeyKind::kSigned);
  std::vector<int64_t> out_dims = xs.dimensions();
  out_dims.back() = k;
  Literal values(Shape::Array(t, out_dims));
  Literal indices(Shape::Array(PrimitiveType::kS32, out_dims));
  const int64_t rows = n == 0 ? 0 : xs.num_elements() / n;
  const int w = PrimitiveByteWidth(t);
  std::vector<int64_t> perm(n);
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(perm.begin(), perm.end(), 0);
    const int64_t base = r * n;
    auto pick = [&](const auto& key) {
      auto cmp = [&](int64_t a, int64_t b) {
        return largest ? key[base + a] > key[base + b] : key[base + a] < key[base + b];
      };
      std::stable_sort(perm.begin(), perm.end(), cmp);
    };
    if (keys.kind == KeyKind::kUnsigned)
      pick(keys.u);
    else
      pick(keys.s);
    for (int64_t j = 0; j < k; ++j) {
      std::memcpy(values.untyped_data() + (r * k + j) * w, x.untyped_data() + (base + perm[j]) * w,
                  w);
      indices.data<int32_t>()[r * k + j] = static_cast<int32_t>(perm[j]);
    }
  }
  std::vector<Literal> parts;
  parts.push_back(std::move(values));
  parts.push_back(std::move(indices));
  return Literal::MakeTuple(std::move(parts));
}

StatusOr<Literal> EvalTopK(const HloInstruction& instr, std::span<const Literal* const> ops,
                           Evaluator&) {
  if (ops.size() != 1) return InvalidArgument("topk %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  return TopKByTotalOrder(instr, *ops[0], instr.attrs().k, instr.attrs().largest);
}

}  // namespace

namespace eval_internal {

StatusOr<Literal> EvalTopKCustomCall(const HloInstruction& instr,
                                     std::span<const Literal* const> ops, Evaluator& evaluator) {
  if (ops.size() != 1)
    return InvalidArgument("TopK custom call %", instr.name(), " takes one operand");
  KILN_RETURN_IF_ERROR(ExpectArrayOperand(instr, *ops[0], 0));
  const Shape& rs = instr.shape();
  if (!rs.IsTuple() || rs.tuple_shapes_size() != 2 || !rs.tuple_shapes(0).IsArray() ||
      rs.tuple_shapes(0).rank() != ops[0]->shape().rank())
    return InvalidArgument("TopK custom call %", instr.name(),
                           ": result must be (values, indices)");
  const int64_t k = rs.tuple_shapes(0).dimensions().back();
  const HloComputation* comparator = instr.to_apply();
  if (!comparator) return TopKByTotalOrder(instr, *ops[0], k, /*largest=*/true);

  const Literal& x = *ops[0];
  const int64_t last = x.shape().rank() - 1;
  if (last < 0) return InvalidArgument("TopK custom call %", instr.name(), ": scalar operand");
  const int64_t n = x.shape().dimensions(last);
  if (k > n) return InvalidArgument("TopK custom call %", instr.name(), ": k=", k, " > ", n);
  if (comparator->num_parameters() != 2 && comparator->num_parameters() != 4)
    return InvalidArgument("TopK custom call %", instr.name(), ": comparator takes ",
                           comparator->num_parameters(), " parameters, expected 2 or 4");
  std::vector<Literal> sorted;
  if (comparator->num_parameters() == 4) {
    // Sort (values, iota) as a two-operand sort.
    Literal iota(Shape::Array(PrimitiveType::kS32, x.shape().dimensions()));
    for (int64_t i = 0; i < iota.element_count(); ++i)
      iota.data<int32_t>()[i] = static_cast<int32_t>(i % n);
    std::vector<const Literal*> sort_ops{&x, &iota};
    KILN_ASSIGN_OR_RETURN(sorted, SortOperands(instr, sort_ops, last, *comparator, evaluator));
  } else {
    // The comparator looks at the values only; the indices are the row permutations.
    std::vector<const Literal*> sort_ops{&x};
    std::vector<int32_t> perms;
    KILN_ASSIGN_OR_RETURN(sorted,
                          SortOperands(instr, sort_ops, last, *comparator, evaluator, &perms));
    Literal idx(Shape::Array(PrimitiveType::kS32, x.shape().dimensions()));
    std::copy(perms.begin(), perms.end(), idx.data<int32_t>().begin());
    sorted.push_back(std::move(idx));
  }
  // Slice the first k of each row.
  std::vector<int64_t> out_dims = x.shape().dimensions();
  out_dims.back() = k;
  Literal values(Shape::Array(x.shape().element_type(), out_dims));
  Literal indices(Shape::Array(PrimitiveType::kS32, out_dims));
  const int64_t rows = n == 0 ? 0 : x.element_count() / n;
  const int w = PrimitiveByteWidth(x.shape().element_type());
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(values.untyped_data() + r * k * w, sorted[0].untyped_data() + r * n * w, k * w);
    std::memcpy(indices.untyped_data() + r * k * 4, sorted[1].untyped_data() + r * n * 4, k * 4);
  }
  std::vector<Literal> parts;
  parts.push_back(std::move(values));
  parts.push_back(std::move(indices));
  return Literal::MakeTuple(std::move(parts));
}

}  // namespace eval_internal

void RegisterSortKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kSort, EvalSort);
  r.Register(HloOpcode::kTopK, EvalTopK);
}

}  // namespace kiln
