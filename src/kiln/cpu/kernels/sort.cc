// The sort and topk kernels, with the evaluator's semantics (eval/sort.cc): every sort is stable;
// topk returns per row of the last dimension the k largest (smallest) elements under the total
// order, ties broken by lower index first, with their s32 indices.
//
// Fast path: a comparator that is one LT/GT compare of one operand's two parameters (any
// comparison type but complex; TOTALORDER is JAX's) sorts (key, index) items of each row with
// std::sort, ties broken by index -- the stable result, since these keys are strictly weakly
// ordered. Float comparisons (not TOTALORDER) of rows that hold a NaN are not: such rows use
// std::stable_sort on the keys alone, which makes exactly the evaluator's comparisons. Other
// operands follow the permutation. Any other comparator runs as the evaluator's compiled
// ScalarProgram under std::stable_sort; comparators that do not compile fall back to the
// evaluator's kernel. Rows are sorted in parallel; one long row of strictly ordered keys is
// sorted in parallel chunks merged pairwise (std::merge keeps the stable order).
//
// topk (the op, and the "TopK" custom call XLA's CPU pipeline produces, whose comparator is a
// GT/LT compare of the values) uses std::partial_sort on the same items.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/common.h"
#include "kiln/cpu/kernels/convert_ops.h"
#include "kiln/cpu/kernels/kernels.h"
#include "kiln/eval/scalar_program.h"
#include "kiln/hlo/computation.h"

namespace kiln::cpu::internal {
namespace {

enum class KeyKind { kFloat, kTotal, kSigned, kUnsigned };

// The (element type, key kind) pairs the fast path covers.
template <class T, KeyKind kKind>
inline constexpr bool kKeyOk =
    !eval_internal::kIsComplex<T> &&
    (kKind == KeyKind::kTotal ||
     ((kKind == KeyKind::kFloat) == (std::is_floating_point_v<T> || kIsHalfLike<T>)));

template <class K>
struct Item {
  K key;
  int32_t idx;
};

// The key of one element of type T for a compare of kind `kind`.
template <class T, KeyKind kKind>
auto KeyOf(T v) {
  if constexpr (kKind == KeyKind::kFloat) {
    if constexpr (kIsHalfLike<T>) return HalfToFloat(v);
    else return v;
  } else if constexpr (kKind == KeyKind::kTotal &&
                       (std::is_floating_point_v<T> || kIsHalfLike<T>)) {
    // -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN on the element's bits.
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4,
                                                                               uint32_t, uint16_t>>;
    using S = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;
    U bits;
    std::memcpy(&bits, &v, sizeof(T));
    constexpr U kSign = U(1) << (sizeof(T) * 8 - 1);
    const S mag = static_cast<S>(bits & (kSign - 1));
    return (bits & kSign) ? S(-mag - 1) : mag;
  } else if constexpr (std::is_same_v<T, bool>) {
    return static_cast<uint64_t>(v ? 1 : 0);
  } else if constexpr (kKind == KeyKind::kUnsigned || std::is_unsigned_v<T>) {
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
  } else {
    return static_cast<int64_t>(v);
  }
}

// Sorts a row's items: strictly ordered keys with std::sort (ties by index), float keys of a
// row with a NaN with std::stable_sort on the keys alone.
template <class K>
void SortItems(Item<K>* it, int64_t n, bool greater) {
  bool strict = true;
  if constexpr (std::is_floating_point_v<K>)
    for (int64_t i = 0; i < n && strict; ++i) strict = !std::isnan(it[i].key);
  if (!strict) {
    if (greater)
      std::stable_sort(it, it + n, [](const Item<K>& a, const Item<K>& b) { return a.key > b.key; });
    else
      std::stable_sort(it, it + n, [](const Item<K>& a, const Item<K>& b) { return a.key < b.key; });
    return;
  }
  if (greater)
    std::sort(it, it + n, [](const Item<K>& a, const Item<K>& b) {
      return a.key > b.key || (a.key == b.key && a.idx < b.idx);
    });
  else
    std::sort(it, it + n, [](const Item<K>& a, const Item<K>& b) {
      return a.key < b.key || (a.key == b.key && a.idx < b.idx);
    });
}

// A comparator recognized as one compare of operand `operand`'s two parameters.
struct FastCompare {
  int64_t operand = 0;
  bool greater = false;
  KeyKind kind = KeyKind::kFloat;
};

std::optional<FastCompare> DetectFastCompare(const HloComputation& comp,
                                             const std::vector<PrimitiveType>& types) {
  const HloInstruction* root = comp.root_instruction();
  if (!root || root->opcode() != HloOpcode::kCompare || root->operand_count() != 2) return {};
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter) return {};
  const int64_t pa = a->parameter_number(), pb = b->parameter_number();
  if (pa / 2 != pb / 2 || pa == pb) return {};
  FastCompare fc;
  fc.operand = pa / 2;
  if (fc.operand >= static_cast<int64_t>(types.size())) return {};
  const bool swapped = pa % 2 == 1;
  switch (root->attrs().comparison_direction) {
    case ComparisonDirection::kLt: fc.greater = swapped; break;
    case ComparisonDirection::kGt: fc.greater = !swapped; break;
    default: return {};
  }
  const PrimitiveType t = types[fc.operand];
  if (a->shape().element_type() != t || !IsFastType(t) || IsComplexType(t)) return {};
  ComparisonType ct = root->attrs().comparison_type;
  if (ct == ComparisonType::kDefault) ct = DefaultComparisonType(t);
  if (IsFloatingPointType(t)) {
    if (ct == ComparisonType::kFloat) fc.kind = KeyKind::kFloat;
    else if (ct == ComparisonType::kTotalOrder) fc.kind = KeyKind::kTotal;
    else return {};
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

// Calls f(tag, kind-constant) for the key type of (t, kind).
template <class F>
void KeySwitch(PrimitiveType t, KeyKind kind, F&& f) {
  FastTypeSwitch(
      t,
      [&](auto tag) {
        switch (kind) {
          case KeyKind::kFloat: f(tag, std::integral_constant<KeyKind, KeyKind::kFloat>{}); break;
          case KeyKind::kTotal: f(tag, std::integral_constant<KeyKind, KeyKind::kTotal>{}); break;
          case KeyKind::kSigned: f(tag, std::integral_constant<KeyKind, KeyKind::kSigned>{}); break;
          case KeyKind::kUnsigned:
            f(tag, std::integral_constant<KeyKind, KeyKind::kUnsigned>{});
            break;
        }
      },
      [] {});
}

// Fills perm[0..n) with the sorted order of a row (base, stride) of `data` under `fc`.
// `scratch` holds the items between calls.
template <class T, KeyKind kKind>
void FastRowOrder(const uint8_t* data, int64_t base, int64_t stride, int64_t n, bool greater,
                  std::vector<uint8_t>& scratch, int32_t* perm, int64_t limit = -1) {
  using K = decltype(KeyOf<T, kKind>(T{}));
  scratch.resize(n * sizeof(Item<K>));
  Item<K>* it = reinterpret_cast<Item<K>*>(scratch.data());
  const T* v = reinterpret_cast<const T*>(data) + base;
  for (int64_t i = 0; i < n; ++i) it[i] = {KeyOf<T, kKind>(v[i * stride]), static_cast<int32_t>(i)};
  if (limit >= 0 && limit < n) {
    // topk: the first `limit` of the stable order.
    bool strict = true;
    if constexpr (std::is_floating_point_v<K>)
      for (int64_t i = 0; i < n && strict; ++i) strict = !std::isnan(it[i].key);
    if (strict) {
      auto cmp = [greater](const Item<K>& a, const Item<K>& b) {
        return greater ? (a.key > b.key || (a.key == b.key && a.idx < b.idx))
                       : (a.key < b.key || (a.key == b.key && a.idx < b.idx));
      };
      std::partial_sort(it, it + limit, it + n, cmp);
      for (int64_t j = 0; j < limit; ++j) perm[j] = it[j].idx;
      return;
    }
  }
  SortItems(it, n, greater);
  const int64_t m = limit >= 0 ? std::min(limit, n) : n;
  for (int64_t j = 0; j < m; ++j) perm[j] = it[j].idx;
}

using RowOrderFn = void (*)(const uint8_t*, int64_t, int64_t, int64_t, bool, std::vector<uint8_t>&,
                            int32_t*, int64_t);

RowOrderFn FindRowOrder(PrimitiveType t, KeyKind kind) {
  RowOrderFn fn = nullptr;
  KeySwitch(t, kind, [&](auto tag, auto k) {
    using T = NativeTypeOf<decltype(tag)::value>;
    constexpr KeyKind kK = decltype(k)::value;
    if constexpr (kKeyOk<T, kK>) fn = FastRowOrder<T, kK>;
  });
  return fn;
}

class SortKernel final : public CpuKernel {
 public:
  std::string name_;
  CpuKernelOptions options_;
  std::vector<int64_t> dims_;
  std::vector<PrimitiveType> types_;
  std::vector<int> widths_;
  int64_t dim_ = 0;
  std::optional<FastCompare> fast_;
  RowOrderFn row_order_ = nullptr;
  std::unique_ptr<ScalarProgram> program_;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    const size_t nops = types_.size();
    if (inputs.size() != nops || outputs.size() != nops)
      return InvalidArgument(name_, ": wrong number of inputs or outputs");
    for (size_t i = 0; i < nops; ++i)
      if (inputs[i].shape.dimensions() != dims_ || outputs[i].shape.dimensions() != dims_)
        return InvalidArgument(name_, ": views do not match the instruction");
    int64_t total = 1, inner = 1;
    for (size_t d = 0; d < dims_.size(); ++d) {
      total *= dims_[d];
      if (static_cast<int64_t>(d) > dim_) inner *= dims_[d];
    }
    if (total == 0) return OkStatus();
    const int64_t n = dims_[dim_];
    const int64_t rows = total / n;
    auto row_base = [&](int64_t r) { return (r / inner) * (n * inner) + r % inner; };
    auto emit = [&](int64_t base, const int32_t* perm) {
      for (size_t i = 0; i < nops; ++i) {
        const uint8_t* src = static_cast<const uint8_t*>(inputs[i].data);
        uint8_t* dst = static_cast<uint8_t*>(outputs[i].data);
        const int w = widths_[i];
        for (int64_t j = 0; j < n; ++j)
          std::memcpy(dst + (base + j * inner) * w, src + (base + perm[j] * inner) * w, w);
      }
    };
    if (rows == 1 && n >= 2 * options_.min_parallel_elements && NumThreads(ctx) > 1 && fast_ &&
        fast_->kind != KeyKind::kFloat) {
      std::vector<int32_t> perm(n);
      KILN_RETURN_IF_ERROR(LongRow(inputs, perm.data(), n, inner, ctx));
      emit(0, perm.data());
      return OkStatus();
    }
    ParallelFor(ctx, rows, std::max<int64_t>(1, options_.min_parallel_elements / n),
                [&](int64_t r0, int64_t r1) {
                  std::vector<int32_t> perm(n);
                  std::vector<uint8_t> scratch;
                  for (int64_t r = r0; r < r1; ++r) {
                    const int64_t base = row_base(r);
                    if (fast_) {
                      row_order_(static_cast<const uint8_t*>(inputs[fast_->operand].data), base,
                                 inner, n, fast_->greater, scratch, perm.data(), -1);
                    } else {
                      GeneralRowOrder(inputs, base, inner, n, perm.data());
                    }
                    emit(base, perm.data());
                  }
                });
    return OkStatus();
  }

  // Stable sort of a row under the compiled comparator.
  void GeneralRowOrder(std::span<const ArrayView> inputs, int64_t base, int64_t stride, int64_t n,
                       int32_t* perm) const {
    const size_t nops = types_.size();
    std::iota(perm, perm + n, 0);
    std::vector<const void*> args(2 * nops);
    std::stable_sort(perm, perm + n, [&](int32_t x, int32_t y) {
      for (size_t i = 0; i < nops; ++i) {
        const uint8_t* d = static_cast<const uint8_t*>(inputs[i].data);
        args[2 * i] = d + (base + x * stride) * widths_[i];
        args[2 * i + 1] = d + (base + y * stride) * widths_[i];
      }
      bool lt = false;
      void* res[1] = {&lt};
      program_->Run(args, res);
      return lt;
    });
  }

  // One long row with strictly ordered keys: chunks sorted in parallel, then merged pairwise in
  // parallel rounds. Chunk orders are index-tie-broken, so merging (std::merge takes the first
  // range on ties) gives the stable order of the whole row.
  Status LongRow(std::span<const ArrayView> inputs, int32_t* perm, int64_t n, int64_t stride,
                 const KernelContext& ctx) const {
    const int64_t chunks = std::min<int64_t>(NumThreads(ctx), n / options_.min_parallel_elements);
    std::vector<int64_t> bounds(chunks + 1);
    for (int64_t c = 0; c <= chunks; ++c) bounds[c] = n * c / chunks;
    // Sort each chunk's positions as an independent row, then map to global positions.
    ParallelFor(ctx, chunks, 1, [&](int64_t c0, int64_t c1) {
      std::vector<uint8_t> scratch;
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t lo = bounds[c], len = bounds[c + 1] - lo;
        row_order_(static_cast<const uint8_t*>(inputs[fast_->operand].data), lo * stride, stride,
                   len, fast_->greater, scratch, perm + lo, -1);
        for (int64_t j = 0; j < len; ++j) perm[lo + j] += static_cast<int32_t>(lo);
      }
    });
    // Merge with a comparator on the keys (ties: lower index, i.e. the earlier chunk).
    std::vector<int32_t> tmp(n);
    int32_t* a = perm;
    int32_t* b = tmp.data();
    const uint8_t* data = static_cast<const uint8_t*>(inputs[fast_->operand].data);
    for (int64_t width = 1; width < chunks; width *= 2) {
      const int64_t pairs = (chunks + 2 * width - 1) / (2 * width);
      ParallelFor(ctx, pairs, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t lo = bounds[2 * p * width];
          const int64_t mid = bounds[std::min(chunks, (2 * p + 1) * width)];
          const int64_t hi = bounds[std::min(chunks, (2 * p + 2) * width)];
          MergeRuns(data, stride, a + lo, a + mid, a + mid, a + hi, b + lo);
        }
      });
      std::swap(a, b);
    }
    if (a != perm) std::memcpy(perm, a, n * sizeof(int32_t));
    return OkStatus();
  }

  void MergeRuns(const uint8_t* data, int64_t stride, const int32_t* a0, const int32_t* a1,
                 const int32_t* b0, const int32_t* b1, int32_t* out) const {
    KeySwitch(types_[fast_->operand], fast_->kind, [&](auto tag, auto k) {
      using T = NativeTypeOf<decltype(tag)::value>;
      constexpr KeyKind kK = decltype(k)::value;
      if constexpr (kKeyOk<T, kK>) {
        const T* v = reinterpret_cast<const T*>(data);
        const bool greater = fast_->greater;
        std::merge(a0, a1, b0, b1, out, [&](int32_t x, int32_t y) {
          const auto kx = KeyOf<T, kK>(v[x * stride]), ky = KeyOf<T, kK>(v[y * stride]);
          return greater ? kx > ky : kx < ky;
        });
      }
    });
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateSortKernel(const HloInstruction& instr,
                                                      const CpuKernelOptions& options) {
  if (instr.opcode() != HloOpcode::kSort || instr.operand_count() < 1)
    return Unimplemented("sort kernel: not a sort");
  if (!instr.to_apply()) return InvalidArgument("sort %", instr.name(), " has no comparator");
  if (instr.attrs().dimensions.size() != 1)
    return InvalidArgument("sort %", instr.name(), " needs dimensions={d}");
  auto k = std::make_unique<SortKernel>();
  k->options_ = options;
  const Shape& s0 = instr.operand(0)->shape();
  if (!s0.IsArray()) return InvalidArgument("sort %", instr.name(), ": operands must be arrays");
  k->dims_ = s0.dimensions();
  k->dim_ = instr.attrs().dimensions[0];
  if (k->dim_ < 0 || k->dim_ >= s0.rank())
    return InvalidArgument("sort %", instr.name(), ": sort dimension out of range");
  if (k->dims_[k->dim_] > std::numeric_limits<int32_t>::max())
    return Unimplemented("sort kernel: rows longer than 2^31");
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray() || op->shape().dimensions() != k->dims_)
      return InvalidArgument("sort %", instr.name(), ": operands differ in dimensions");
    k->types_.push_back(op->shape().element_type());
    k->widths_.push_back(PrimitiveByteWidth(op->shape().element_type()));
  }
  const HloComputation& comp = *instr.to_apply();
  const int64_t nops = static_cast<int64_t>(k->types_.size());
  if (comp.num_parameters() != 2 * nops)
    return InvalidArgument("sort %", instr.name(), ": comparator takes ", comp.num_parameters(),
                           " parameters, expected ", 2 * nops);
  k->fast_ = DetectFastCompare(comp, k->types_);
  if (k->fast_) k->row_order_ = FindRowOrder(k->types_[k->fast_->operand], k->fast_->kind);
  if (!k->row_order_) {
    k->fast_.reset();
    k->program_ = ScalarProgram::Compile(comp);
    if (!k->program_) return Unimplemented("sort kernel: the comparator is not a scalar program");
    if (k->program_->num_parameters() != 2 * nops || k->program_->num_results() != 1 ||
        k->program_->result_type(0) != PrimitiveType::kPred)
      return InvalidArgument("sort %", instr.name(), ": comparator must return one pred");
    for (int64_t i = 0; i < 2 * nops; ++i)
      if (k->program_->parameter_type(i) != k->types_[i / 2])
        return InvalidArgument("sort %", instr.name(), ": comparator parameter types");
  }
  k->name_ = StrCat("sort[", ShapeText(s0), nops > 1 ? StrCat(" x", nops) : "", " dim ", k->dim_,
                    k->fast_ ? ", fast compare" : ", program compare", "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

namespace {

class TopKKernel final : public CpuKernel {
 public:
  std::string name_;
  CpuKernelOptions options_;
  std::vector<int64_t> dims_;
  PrimitiveType type_;
  int64_t k_ = 0;
  bool greater_ = true;
  RowOrderFn row_order_ = nullptr;

  std::string name() const override { return name_; }

  Status Run(std::span<const ArrayView> inputs, std::span<const ArrayView> outputs,
             const KernelContext& ctx) const override {
    if (inputs.size() != 1 || outputs.size() != 2)
      return InvalidArgument(name_, ": expected 1 input and 2 outputs");
    if (inputs[0].shape.dimensions() != dims_)
      return InvalidArgument(name_, ": views do not match the instruction");
    const int64_t n = dims_.back();
    int64_t total = 1;
    for (int64_t d : dims_) total *= d;
    if (total == 0 || k_ == 0) return OkStatus();
    const int64_t rows = total / n;
    const int w = PrimitiveByteWidth(type_);
    const uint8_t* src = static_cast<const uint8_t*>(inputs[0].data);
    uint8_t* vals = static_cast<uint8_t*>(outputs[0].data);
    int32_t* idx = static_cast<int32_t*>(outputs[1].data);
    ParallelFor(ctx, rows, std::max<int64_t>(1, options_.min_parallel_elements / n),
                [&](int64_t r0, int64_t r1) {
                  std::vector<uint8_t> scratch;
                  for (int64_t r = r0; r < r1; ++r) {
                    int32_t* perm = idx + r * k_;
                    row_order_(src, r * n, 1, n, greater_, scratch, perm, k_);
                    for (int64_t j = 0; j < k_; ++j)
                      std::memcpy(vals + (r * k_ + j) * w, src + (r * n + perm[j]) * w, w);
                  }
                });
    return OkStatus();
  }
};

}  // namespace

StatusOr<std::unique_ptr<CpuKernel>> CreateTopKKernel(const HloInstruction& instr,
                                                      const CpuKernelOptions& options) {
  const bool custom = instr.opcode() == HloOpcode::kCustomCall;
  if ((instr.opcode() != HloOpcode::kTopK && !custom) || instr.operand_count() != 1)
    return Unimplemented("topk kernel: not a topk");
  const Shape& xs = instr.operand(0)->shape();
  const Shape& rs = instr.shape();
  if (!xs.IsArray() || xs.rank() < 1 || !rs.IsTuple() || rs.tuple_shapes_size() != 2 ||
      !rs.tuple_shapes(0).IsArray() || rs.tuple_shapes(0).rank() != xs.rank() ||
      rs.tuple_shapes(1).element_type() != PrimitiveType::kS32)
    return Unimplemented("topk kernel: shapes");
  auto k = std::make_unique<TopKKernel>();
  k->options_ = options;
  k->dims_ = xs.dimensions();
  k->type_ = xs.element_type();
  k->k_ = rs.tuple_shapes(0).dimensions().back();
  if (k->k_ < 0 || k->k_ > xs.dimensions().back() ||
      xs.dimensions().back() > std::numeric_limits<int32_t>::max())
    return InvalidArgument("topk %", instr.name(), ": k out of range");
  KeyKind kind = IsFloatingPointType(k->type_)                                  ? KeyKind::kTotal
                 : IsUnsignedIntegralType(k->type_) || k->type_ == PrimitiveType::kPred
                     ? KeyKind::kUnsigned
                     : KeyKind::kSigned;
  k->greater_ = custom ? true : instr.attrs().largest;
  if (custom) {
    if (instr.attrs().custom_call_target != "TopK") return Unimplemented("not a TopK call");
    if (const HloComputation* comp = instr.to_apply()) {
      std::vector<PrimitiveType> types{k->type_};
      if (comp->num_parameters() == 4) types.push_back(PrimitiveType::kS32);
      else if (comp->num_parameters() != 2) return Unimplemented("TopK comparator arity");
      std::optional<FastCompare> fc = DetectFastCompare(*comp, types);
      if (!fc || fc->operand != 0) return Unimplemented("TopK comparator is not a value compare");
      kind = fc->kind;
      k->greater_ = fc->greater;
    }
  }
  k->row_order_ = FindRowOrder(k->type_, kind);
  if (!k->row_order_) return Unimplemented("topk kernel: element type");
  k->name_ = StrCat(custom ? "TopK-call[" : "topk[", ShapeText(xs), " k=", k->k_,
                    k->greater_ ? " largest" : " smallest", "]");
  return std::unique_ptr<CpuKernel>(std::move(k));
}

}  // namespace kiln::cpu::internal
