#include "kiln/passes/attention_rewriter.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln {
namespace {

// ---- dimension bookkeeping (Note [Attention matching]) ----

// Per dimension of a value: the dimension of the softmax input x it stands for, or -1 for a
// size-1 dimension (its index is always 0, so what it stands for does not matter).
using DimMap = std::vector<int64_t>;

DimMap IdentityMap(const Shape& s) {
  DimMap m(s.rank());
  for (int64_t i = 0; i < s.rank(); ++i) m[i] = s.dimensions(i) == 1 ? -1 : i;
  return m;
}

// For a reshape that only adds or removes size-1 dimensions: for each dimension of `to`, the
// dimension of `from` it is (-1 for size 1). nullopt for any other reshape.
std::optional<std::vector<int64_t>> UnitReshape(const Shape& from, const Shape& to) {
  std::vector<int64_t> out(to.rank(), -1);
  int64_t f = 0;
  for (int64_t t = 0; t < to.rank(); ++t) {
    if (to.dimensions(t) == 1) continue;
    while (f < from.rank() && from.dimensions(f) == 1) ++f;
    if (f >= from.rank() || from.dimensions(f) != to.dimensions(t)) return std::nullopt;
    out[t] = f++;
  }
  while (f < from.rank() && from.dimensions(f) == 1) ++f;
  if (f != from.rank()) return std::nullopt;
  return out;
}

bool IsViewOp(HloOpcode op) {
  return op == HloOpcode::kReshape || op == HloOpcode::kBitcast || op == HloOpcode::kTranspose ||
         op == HloOpcode::kCopy;
}

// The map of operand 0 of `n` (a unit reshape, bitcast, transpose, copy, broadcast or an
// elementwise op) given the map of `n`. nullopt when `n` reorders non-unit data otherwise.
std::optional<DimMap> MapToOperand(const HloInstruction& n, const DimMap& m, int64_t operand = 0) {
  const Shape& os = n.operand(operand)->shape();
  DimMap out(os.rank(), -1);
  switch (n.opcode()) {
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast: {
      std::optional<std::vector<int64_t>> c = UnitReshape(os, n.shape());
      if (!c) return std::nullopt;
      for (size_t t = 0; t < c->size(); ++t)
        if ((*c)[t] >= 0) out[(*c)[t]] = m[t];
      return out;
    }
    case HloOpcode::kTranspose: {
      const std::vector<int64_t>& perm = n.attrs().dimensions;
      for (size_t i = 0; i < perm.size(); ++i) out[perm[i]] = os.dimensions(perm[i]) == 1 ? -1 : m[i];
      return out;
    }
    case HloOpcode::kBroadcast: {
      const std::vector<int64_t>& dims = n.attrs().dimensions;
      for (size_t j = 0; j < dims.size(); ++j) out[j] = os.dimensions(j) == 1 ? -1 : m[dims[j]];
      return out;
    }
    default:
      if (n.IsElementwise() || n.opcode() == HloOpcode::kCopy) {
        if (os.dimensions() != n.shape().dimensions()) return std::nullopt;
        return m;
      }
      return std::nullopt;
  }
}

bool IsScalarConstant(const HloInstruction* n, double* value) {
  while (n->opcode() == HloOpcode::kBroadcast && n->attrs().dimensions.empty()) n = n->operand(0);
  while (n->opcode() == HloOpcode::kReshape && n->shape().num_elements() == 1) n = n->operand(0);
  if (n->opcode() != HloOpcode::kConstant || !n->has_literal() || n->literal().element_count() != 1) return false;
  *value = n->literal().GetAsDouble(0);
  return true;
}

// A reducer computation `param0 <op> param1` (either order).
bool IsBinaryReducer(const HloComputation* c, HloOpcode op) {
  if (c == nullptr || c->num_parameters() != 2) return false;
  const HloInstruction* r = c->root_instruction();
  if (r->opcode() != op || r->operand_count() != 2) return false;
  const HloInstruction *a = r->operand(0), *b = r->operand(1);
  return a->opcode() == HloOpcode::kParameter && b->opcode() == HloOpcode::kParameter && a != b;
}

// reduce(input, init) over exactly dimension `dim` with `op` and init value `init`.
bool IsRowReduce(const HloInstruction* r, int64_t dim, HloOpcode op, double init) {
  if (r->opcode() != HloOpcode::kReduce || r->operand_count() != 2) return false;
  if (r->attrs().dimensions != std::vector<int64_t>{dim}) return false;
  double v = 0;
  if (!IsScalarConstant(r->operand(1), &v)) return false;
  if (std::isinf(init) ? !(std::isinf(v) && (v < 0) == (init < 0)) : v != init) return false;
  return IsBinaryReducer(r->to_apply(), op);
}

// When `b` (of the softmax input's shape) is a vector over every dimension but `kdim`,
// broadcast along kdim through broadcasts, unit reshapes and transposes: that vector, with
// `*map` set to which dimension of x each of its dimensions is (-1 for size 1). nullptr
// otherwise. The caller checks the map against how the vector was computed.
const HloInstruction* RowVector(const HloInstruction* b, const Shape& x, int64_t kdim, DimMap* map) {
  if (b->shape().dimensions() != x.dimensions()) return nullptr;
  DimMap m = IdentityMap(x);
  const HloInstruction* n = b;
  while (n->opcode() == HloOpcode::kBroadcast || IsViewOp(n->opcode())) {
    if (n->opcode() == HloOpcode::kBroadcast) {
      const std::vector<int64_t>& dims = n->attrs().dimensions;
      std::vector<bool> covered(n->shape().rank(), false);
      for (size_t j = 0; j < dims.size(); ++j)
        if (n->operand(0)->shape().dimensions(j) != 1) covered[dims[j]] = true;
      for (int64_t i = 0; i < n->shape().rank(); ++i)
        if (!covered[i] && m[i] != -1 && m[i] != kdim) return nullptr;  // broadcast along another dim
    }
    std::optional<DimMap> om = MapToOperand(*n, m);
    if (!om) return nullptr;
    m = *om;
    n = n->operand(0);
  }
  // Every non-unit dim of x but kdim exactly once, kdim never.
  std::vector<int> seen(x.rank(), 0);
  for (int64_t i = 0; i < n->shape().rank(); ++i) {
    if (n->shape().dimensions(i) == 1) {
      m[i] = -1;
      continue;
    }
    if (m[i] < 0 || m[i] == kdim) return nullptr;
    ++seen[m[i]];
  }
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != kdim && x.dimensions(i) != 1 && seen[i] != 1) return nullptr;
  *map = m;
  return n;
}

// Whether the row vector's map equals `want` (for each dim of the vector, the x dim) on its
// non-unit dims.
bool SameRowDims(const HloInstruction* v, const DimMap& got, const DimMap& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (v->shape().dimensions(static_cast<int64_t>(i)) != 1 && got[i] != want[i]) return false;
  return true;
}

// The x dims of a reduction over `kd` of a value whose dims are `frame` (x dims per dim).
DimMap ReducedFrame(const DimMap& frame, int64_t kd) {
  DimMap out;
  for (int64_t i = 0; i < static_cast<int64_t>(frame.size()); ++i)
    if (i != kd) out.push_back(frame[i]);
  return out;
}

// ---- labels of the softmax input's dimensions ----

enum class Role : uint8_t { kUnit, kBatch, kRow, kKey };
struct Label {
  Role role = Role::kUnit;
  int64_t batch = 0;  // kBatch: which batch dimension
};

// An integer affine form cq*row + ck*key + c of the query row and key indices.
struct Affine {
  int64_t cq = 0, ck = 0, c = 0;
};

std::optional<Affine> AffineOf(const HloInstruction* n, const DimMap& m, const std::vector<Label>& labels, int depth = 0) {
  if (depth > 32 || !IsIntegralType(n->shape().element_type())) return std::nullopt;
  switch (n->opcode()) {
    case HloOpcode::kIota: {
      const int64_t xd = m[n->attrs().iota_dimension];
      if (xd < 0) return Affine{};
      if (labels[xd].role == Role::kRow) return Affine{1, 0, 0};
      if (labels[xd].role == Role::kKey) return Affine{0, 1, 0};
      if (labels[xd].role == Role::kUnit) return Affine{};
      return std::nullopt;
    }
    case HloOpcode::kConstant: {
      double v = 0;
      if (!IsScalarConstant(n, &v)) return std::nullopt;
      return Affine{0, 0, static_cast<int64_t>(v)};
    }
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract: {
      std::optional<Affine> a = AffineOf(n->operand(0), m, labels, depth + 1);
      std::optional<Affine> b = AffineOf(n->operand(1), m, labels, depth + 1);
      if (!a || !b) return std::nullopt;
      const int64_t s = n->opcode() == HloOpcode::kAdd ? 1 : -1;
      return Affine{a->cq + s * b->cq, a->ck + s * b->ck, a->c + s * b->c};
    }
    case HloOpcode::kConvert:
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kCopy: {
      if (n->opcode() == HloOpcode::kBroadcast && n->attrs().dimensions.empty()) {
        double v = 0;
        if (IsScalarConstant(n, &v)) return Affine{0, 0, static_cast<int64_t>(v)};
      }
      if (!IsIntegralType(n->operand(0)->shape().element_type())) return std::nullopt;
      std::optional<DimMap> om = MapToOperand(*n, m);
      if (!om) return std::nullopt;
      return AffineOf(n->operand(0), *om, labels, depth + 1);
    }
    default:
      return std::nullopt;
  }
}

// A mask predicate: always true, or "keep key j for row i iff j <= i + c".
struct MaskForm {
  bool causal = false;
  int64_t c = 0;
};

std::optional<MaskForm> Conjunction(std::optional<MaskForm> a, std::optional<MaskForm> b) {
  if (!a || !b) return std::nullopt;
  if (!a->causal) return b;
  if (!b->causal) return a;
  return MaskForm{true, std::min(a->c, b->c)};
}

// A constant pred array over (row, key) and size-1 dims: causal with some c, or all true.
std::optional<MaskForm> ConstantMask(const HloInstruction* n, const DimMap& m, const std::vector<Label>& labels,
                                     int64_t q_len, int64_t kv_len) {
  const Literal& lit = n->literal();
  const Shape& s = n->shape();
  std::vector<int64_t> strides(s.rank(), 1);
  for (int64_t i = s.rank() - 2; i >= 0; --i) strides[i] = strides[i + 1] * s.dimensions(i + 1);
  int64_t row_stride = 0, key_stride = 0;
  for (int64_t i = 0; i < s.rank(); ++i) {
    if (s.dimensions(i) == 1) continue;
    if (m[i] < 0) return std::nullopt;
    const Role r = labels[m[i]].role;
    if (r == Role::kRow) row_stride = strides[i];
    else if (r == Role::kKey) key_stride = strides[i];
    else return std::nullopt;  // depends on a batch index
  }
  auto at = [&](int64_t i, int64_t j) {
    return lit.GetAsInt64((row_stride ? i * row_stride : 0) + (key_stride ? j * key_stride : 0)) != 0;
  };
  int64_t kept0 = 0;
  while (kept0 < kv_len && at(0, kept0)) ++kept0;
  if (kept0 == 0) return std::nullopt;
  const int64_t c = kept0 - 1;
  for (int64_t i = 0; i < q_len; ++i)
    for (int64_t j = 0; j < kv_len; ++j)
      if (at(i, j) != (j <= i + c)) return std::nullopt;
  if (c >= kv_len - 1) return MaskForm{};  // every key kept for every row
  return MaskForm{true, c};
}

std::optional<MaskForm> MaskOf(const HloInstruction* n, const DimMap& m, const std::vector<Label>& labels,
                               int64_t q_len, int64_t kv_len, int depth = 0) {
  if (depth > 32 || n->shape().element_type() != PrimitiveType::kPred) return std::nullopt;
  switch (n->opcode()) {
    case HloOpcode::kConstant: {
      double v = 0;
      if (IsScalarConstant(n, &v)) return v != 0 ? std::optional<MaskForm>(MaskForm{}) : std::nullopt;
      if (!n->has_literal()) return std::nullopt;
      return ConstantMask(n, m, labels, q_len, kv_len);
    }
    case HloOpcode::kCompare: {
      std::optional<Affine> a = AffineOf(n->operand(0), m, labels);
      std::optional<Affine> b = AffineOf(n->operand(1), m, labels);
      if (!a || !b) return std::nullopt;
      Affine e{a->cq - b->cq, a->ck - b->ck, a->c - b->c};  // a - b
      switch (n->attrs().comparison_direction) {
        case ComparisonDirection::kGe: break;                          // e >= 0
        case ComparisonDirection::kGt: e.c -= 1; break;                // e - 1 >= 0
        case ComparisonDirection::kLe: e = {-e.cq, -e.ck, -e.c}; break;
        case ComparisonDirection::kLt: e = {-e.cq, -e.ck, -e.c - 1}; break;
        default: return std::nullopt;
      }
      if (e.cq == 0 && e.ck == 0) return e.c >= 0 ? std::optional<MaskForm>(MaskForm{}) : std::nullopt;
      if (e.cq == 1 && e.ck == -1) {  // row - key + c >= 0  <=>  key <= row + c
        if (e.c >= kv_len - 1) return MaskForm{};
        return MaskForm{true, e.c};
      }
      return std::nullopt;
    }
    case HloOpcode::kAnd:
      return Conjunction(MaskOf(n->operand(0), m, labels, q_len, kv_len, depth + 1),
                         MaskOf(n->operand(1), m, labels, q_len, kv_len, depth + 1));
    case HloOpcode::kSelect: {
      // select(p, a, false) = p and a.
      double v = 1;
      if (!IsScalarConstant(n->operand(2), &v) || v != 0) return std::nullopt;
      std::optional<DimMap> m0 = MapToOperand(*n, m, 0), m1 = MapToOperand(*n, m, 1);
      if (!m0 || !m1) return std::nullopt;
      return Conjunction(MaskOf(n->operand(0), *m0, labels, q_len, kv_len, depth + 1),
                         MaskOf(n->operand(1), *m1, labels, q_len, kv_len, depth + 1));
    }
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kCopy: {
      std::optional<DimMap> om = MapToOperand(*n, m);
      if (!om) return std::nullopt;
      return MaskOf(n->operand(0), *om, labels, q_len, kv_len, depth + 1);
    }
    default:
      return std::nullopt;
  }
}

// ---- strided views ----

std::vector<int64_t> RowMajorStrides(const Shape& s) {
  std::vector<int64_t> st(s.rank(), 1);
  for (int64_t i = s.rank() - 2; i >= 0; --i) st[i] = st[i + 1] * s.dimensions(i + 1);
  return st;
}

// ---- bias and data masks (Note [Attention bias and masks]) ----

// A value of x's frame read through views (and, for a bias, widening converts) of one array:
// that array and where element [batch..., row, key] of it is.
struct OperandView {
  const HloInstruction* root = nullptr;
  AttentionView view;
};

bool IsWideningFloatConvert(const HloInstruction* n) {
  if (n->opcode() != HloOpcode::kConvert) return false;
  const PrimitiveType to = n->shape().element_type(), from = n->operand(0)->shape().element_type();
  if (!IsFloatingPointType(to) || !IsFloatingPointType(from)) return false;
  if (to == from) return true;
  if (to == PrimitiveType::kF64) return from == PrimitiveType::kF32 || from == PrimitiveType::kBF16 || from == PrimitiveType::kF16;
  return to == PrimitiveType::kF32 && (from == PrimitiveType::kBF16 || from == PrimitiveType::kF16);
}

// `n` has x dims `m`; `nb` batch labels. The root is the first value below n that is not a
// broadcast, unit reshape, transpose, bitcast or copy (or widening convert with `converts`).
std::optional<OperandView> ResolveOperandView(const HloInstruction* n, DimMap m, const std::vector<Label>& labels,
                                              size_t nb, bool converts) {
  for (int depth = 0; depth < 64; ++depth) {
    const HloOpcode op = n->opcode();
    const bool view = op == HloOpcode::kBroadcast || op == HloOpcode::kReshape || op == HloOpcode::kBitcast ||
                      op == HloOpcode::kTranspose || op == HloOpcode::kCopy || (converts && IsWideningFloatConvert(n));
    if (!view) break;
    std::optional<DimMap> om = MapToOperand(*n, m);
    if (!om) break;
    m = *om;
    n = n->operand(0);
  }
  const Shape& s = n->shape();
  if (!s.IsArray() || (s.has_layout() && !s.layout().IsDefaultFor(s.rank()))) return std::nullopt;
  const std::vector<int64_t> st = RowMajorStrides(s);
  OperandView out;
  out.root = n;
  out.view.batch.assign(nb, 0);
  out.view.element = 0;
  std::vector<bool> seen_batch(nb, false);
  bool seen_row = false, seen_key = false;
  for (int64_t i = 0; i < s.rank(); ++i) {
    if (s.dimensions(i) == 1) continue;
    if (m[i] < 0) return std::nullopt;
    const Label& l = labels[m[i]];
    switch (l.role) {
      case Role::kBatch:
        if (l.batch < 0 || static_cast<size_t>(l.batch) >= nb || seen_batch[l.batch]) return std::nullopt;
        seen_batch[l.batch] = true;
        out.view.batch[l.batch] = st[i];
        break;
      case Role::kRow:
        if (seen_row) return std::nullopt;
        seen_row = true;
        out.view.row = st[i];
        break;
      case Role::kKey:
        if (seen_key) return std::nullopt;
        seen_key = true;
        out.view.element = st[i];
        break;
      default:
        return std::nullopt;
    }
  }
  return out;
}

// A mask's symbolic part and its data part (a pred value below which MaskOf cannot see, with its
// x dims), at most one.
struct MaskParts {
  MaskForm form;
  const HloInstruction* data = nullptr;
  DimMap data_map;
};

std::optional<MaskParts> SplitMask(const HloInstruction* n, const DimMap& m, const std::vector<Label>& labels,
                                   int64_t q_len, int64_t kv_len, int depth = 0) {
  if (depth > 32 || n->shape().element_type() != PrimitiveType::kPred) return std::nullopt;
  if (std::optional<MaskForm> f = MaskOf(n, m, labels, q_len, kv_len)) return MaskParts{*f, nullptr, {}};
  switch (n->opcode()) {
    case HloOpcode::kSelect:
    case HloOpcode::kAnd: {
      // select(p, a, false) = p and a (jnp.tril of a mask).
      double v = 1;
      std::optional<DimMap> m0 = MapToOperand(*n, m, 0), m1 = MapToOperand(*n, m, 1);
      if (n->opcode() == HloOpcode::kSelect &&
          (!IsScalarConstant(n->operand(2), &v) || v != 0 || !m0 || !m1))
        return MaskParts{MaskForm{}, n, m};
      if (!m0 || !m1) return std::nullopt;
      std::optional<MaskParts> a = SplitMask(n->operand(0), *m0, labels, q_len, kv_len, depth + 1);
      std::optional<MaskParts> b = SplitMask(n->operand(1), *m1, labels, q_len, kv_len, depth + 1);
      if (!a || !b || (a->data && b->data)) return std::nullopt;
      std::optional<MaskForm> f = Conjunction(a->form, b->form);
      if (!f) return std::nullopt;
      return a->data ? MaskParts{*f, a->data, a->data_map} : MaskParts{*f, b->data, b->data_map};
    }
    case HloOpcode::kBroadcast:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kCopy: {
      // Views of a conjunction (jax.nn.dot_product_attention broadcasts `mask & causal`).
      std::optional<DimMap> om = MapToOperand(*n, m);
      if (!om) return MaskParts{MaskForm{}, n, m};
      return SplitMask(n->operand(0), *om, labels, q_len, kv_len, depth + 1);
    }
    default:
      return MaskParts{MaskForm{}, n, m};
  }
}

// Whether `n` reaches a dot through the score chain's ops (converts, scalar scalings, selects'
// value operands, view ops): the add operand that carries the scores, not the bias.
bool LeadsToDot(const HloInstruction* n) {
  for (int depth = 0; depth < 64; ++depth) {
    switch (n->opcode()) {
      case HloOpcode::kDot:
        return true;
      case HloOpcode::kConvert:
        n = n->operand(0);
        continue;
      case HloOpcode::kMultiply:
      case HloOpcode::kDivide: {
        double c = 0;
        if (IsScalarConstant(n->operand(1), &c)) n = n->operand(0);
        else if (n->opcode() == HloOpcode::kMultiply && IsScalarConstant(n->operand(0), &c)) n = n->operand(1);
        else return false;
        continue;
      }
      case HloOpcode::kSelect:
        n = n->operand(1);
        continue;
      default:
        if (!IsViewOp(n->opcode())) return false;
        n = n->operand(0);
        continue;
    }
  }
  return false;
}

// Strides for the dims `to` of the same elements that have strides `st` over dims `from`
// (a row-major relinearization: what a reshape does). nullopt when a merged group of `from`
// is not evenly strided.
std::optional<std::vector<int64_t>> ReshapeStrides(const std::vector<int64_t>& from, const std::vector<int64_t>& st,
                                                   const std::vector<int64_t>& to) {
  std::vector<int64_t> out(to.size(), 0);
  size_t f = 0, t = 0;
  while (f < from.size() || t < to.size()) {
    while (f < from.size() && from[f] == 1) ++f;
    while (t < to.size() && to[t] == 1) ++t;
    if (f >= from.size() || t >= to.size()) break;
    // One group: the shortest runs of from and to (non-unit dims) with equal products.
    size_t f_end = f + 1, t_end = t + 1;
    int64_t pf = from[f], pt = to[t];
    while (pf != pt) {
      if (pf < pt) {
        while (f_end < from.size() && from[f_end] == 1) ++f_end;
        if (f_end >= from.size()) return std::nullopt;
        pf *= from[f_end++];
      } else {
        while (t_end < to.size() && to[t_end] == 1) ++t_end;
        if (t_end >= to.size()) return std::nullopt;
        pt *= to[t_end++];
      }
    }
    // The from group must be one evenly strided run.
    int64_t inner = -1, expect = -1;
    for (size_t i = f_end; i-- > f;) {
      if (from[i] == 1) continue;
      if (inner < 0) {
        inner = st[i];
        expect = st[i] * from[i];
      } else {
        if (st[i] != expect) return std::nullopt;
        expect = st[i] * from[i];
      }
    }
    int64_t stride = inner;
    for (size_t i = t_end; i-- > t;) {
      if (to[i] == 1) continue;
      out[i] = stride;
      stride *= to[i];
    }
    f = f_end;
    t = t_end;
  }
  return out;
}

struct StridedValue {
  const HloInstruction* root = nullptr;
  int64_t offset = 0;
  std::vector<int64_t> strides;  // per dimension of the viewed value
  double scale = 1.0;            // folded scalar multiplies (only where allowed)
};

// The operand a foldable op reads its data from (the other one of a scalar multiply is the
// constant).
int64_t DataOperand(const HloInstruction& n) {
  double c = 0;
  if (n.opcode() == HloOpcode::kMultiply && !IsScalarConstant(n.operand(1), &c)) return 1;
  return 0;
}

// Strides of `y` = op(x) given x's strides; false when op is not a view (or not foldable).
bool StepDown(const HloInstruction* y, StridedValue& v, bool allow_scale) {
  const Shape& xs = y->operand(0)->shape();
  switch (y->opcode()) {
    case HloOpcode::kCopy:
      return true;
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast: {
      std::optional<std::vector<int64_t>> st = ReshapeStrides(xs.dimensions(), v.strides, y->shape().dimensions());
      if (!st) return false;
      v.strides = *st;
      return true;
    }
    case HloOpcode::kTranspose: {
      std::vector<int64_t> st(y->shape().rank());
      for (size_t i = 0; i < st.size(); ++i) st[i] = v.strides[y->attrs().dimensions[i]];
      v.strides = st;
      return true;
    }
    case HloOpcode::kSlice: {
      for (size_t j = 0; j < y->attrs().slice.size(); ++j) {
        const SliceDimension& s = y->attrs().slice[j];
        v.offset += s.start * v.strides[j];
        v.strides[j] *= s.stride;
      }
      return true;
    }
    case HloOpcode::kBroadcast: {
      std::vector<int64_t> st(y->shape().rank(), 0);
      for (size_t j = 0; j < y->attrs().dimensions.size(); ++j) st[y->attrs().dimensions[j]] = v.strides[j];
      v.strides = st;
      return true;
    }
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide: {
      double c = 0;
      if (!allow_scale || !IsScalarConstant(y->operand(1 - DataOperand(*y)), &c)) return false;
      v.scale *= y->opcode() == HloOpcode::kMultiply ? c : 1.0 / c;
      return true;
    }
    default:
      return false;
  }
}

// Strides of y's operand given y's strides `st`, for a copy, reshape, bitcast or transpose y:
// StepDown's inverse (where the elements of y's operand sit when y's sit at `st`). nullopt
// where a reshape's merged group is not evenly strided.
std::optional<std::vector<int64_t>> StepUp(const HloInstruction* y, const std::vector<int64_t>& st) {
  const Shape& xs = y->operand(0)->shape();
  switch (y->opcode()) {
    case HloOpcode::kCopy:
      return st;
    case HloOpcode::kTranspose: {
      std::vector<int64_t> xst(xs.rank());
      for (size_t j = 0; j < y->attrs().dimensions.size(); ++j) xst[y->attrs().dimensions[j]] = st[j];
      return xst;
    }
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
      return ReshapeStrides(y->shape().dimensions(), st, xs.dimensions());
    default:
      return std::nullopt;
  }
}

bool IsPureView(HloOpcode op) { return IsViewOp(op) || op == HloOpcode::kSlice; }

bool IsFoldableAbove(const HloInstruction* n, bool allow_scale) {
  switch (n->opcode()) {
    case HloOpcode::kCopy:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kSlice:
      return true;
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide: {
      if (!allow_scale) return false;
      const int64_t d = DataOperand(*n);
      double c = 0;
      return IsScalarConstant(n->operand(1 - d), &c) && c != 0 && std::isfinite(c) &&
             n->shape().dimensions() == n->operand(d)->shape().dimensions();
    }
    default:
      return false;
  }
}

// The view of `x` (a dot operand) through the view ops above it that have no other user (they
// become part of the call); the root is where that stops.
StridedValue ViewOf(const HloInstruction* x, bool allow_scale) {
  std::vector<const HloInstruction*> up = {x};
  // A pure view with other users is duplicated into the call (the copy outside stays for them);
  // a scale multiply is taken only when the call is its one user.
  auto absorbable = [&](const HloInstruction* n) {
    if (!IsFoldableAbove(n, allow_scale)) return false;
    return n->user_count() == 1 || IsPureView(n->opcode());
  };
  while (absorbable(up.back()))
    up.push_back(up.back()->operand(DataOperand(*up.back())));
  // The highest root whose steps all fold; lower ones otherwise (x itself always works).
  for (size_t r = up.size(); r-- > 0;) {
    StridedValue v;
    v.root = up[r];
    v.strides = RowMajorStrides(v.root->shape());
    bool ok = true;
    for (size_t i = r; i-- > 0;) {
      if (!StepDown(up[i], v, allow_scale)) {
        ok = false;
        break;
      }
    }
    if (ok) return v;
  }
  StridedValue v;
  v.root = x;
  v.strides = RowMajorStrides(x->shape());
  return v;
}

// ---- the match ----

struct Match {
  AttentionConfig config;
  // q, k, v, and the bias and data mask where there are (Note [Attention bias and masks]).
  const HloInstruction* roots[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  HloInstruction* output = nullptr;                               // the instruction the call replaces
  // The softmax's pieces, for the backward match (MatchBackward): the probabilities as the
  // division computes them and as the second dot reads them, the exponentials, the scores
  // (x: the softmax input) and the first dot; which dim of x is which.
  const HloInstruction *div = nullptr, *pv_p = nullptr, *e = nullptr, *x = nullptr, *dot1 = nullptr;
  const HloInstruction *qop = nullptr, *kop = nullptr, *vop = nullptr;
  std::vector<Label> labels;
  int64_t kdim = -1, q_xdim = -1;
  bool grouped = false;
};

bool IsFloat(const HloInstruction* n) { return IsFloatingPointType(n->shape().element_type()); }

// `row_choice`: with two query dims (grouped-query attention: q [b, t, kv_heads, group, d]
// against k [b, s, kv_heads, d]), which of them is the row; the other becomes a batch dim that
// k and v do not have (stride 0). 0 or 1; 1 only matters with two query dims.
// `shared`: the softmax's intermediates may have other users (a backward graph reads the
// probabilities, the exponentials and the sum); MatchBackward asks so, the rewrite never does.
std::optional<Match> MatchAt(HloInstruction* dot2, int p_side, int row_choice, bool shared = false) {
  const DotDimensionNumbers& dn2 = *dot2->attrs().dot_dimension_numbers;
  const HloInstruction* pv_p = dot2->operand(p_side);
  const HloInstruction* pv_v = dot2->operand(1 - p_side);
  const auto& p_batch = p_side == 0 ? dn2.lhs_batch_dimensions : dn2.rhs_batch_dimensions;
  const auto& v_batch = p_side == 0 ? dn2.rhs_batch_dimensions : dn2.lhs_batch_dimensions;
  const auto& p_contract = p_side == 0 ? dn2.lhs_contracting_dimensions : dn2.rhs_contracting_dimensions;
  const auto& v_contract = p_side == 0 ? dn2.rhs_contracting_dimensions : dn2.lhs_contracting_dimensions;
  if (p_contract.size() != 1 || v_contract.size() != 1 || !IsFloat(pv_p) || (!shared && pv_p->user_count() != 1))
    return std::nullopt;
  // p = e / broadcast(l), or e * broadcast(1 / l) (as XLA's and kiln's CPU pipelines rewrite
  // divisions by a broadcast), possibly converted.
  const HloInstruction* div = pv_p;
  while (div->opcode() == HloOpcode::kConvert) {
    if (!shared && div->user_count() != 1) return std::nullopt;
    div = div->operand(0);
  }
  if ((div->opcode() != HloOpcode::kDivide && div->opcode() != HloOpcode::kMultiply) || (!shared && div->user_count() != 1))
    return std::nullopt;
  const bool reciprocal = div->opcode() == HloOpcode::kMultiply;
  const int e_side = reciprocal && div->operand(1)->opcode() == HloOpcode::kExp ? 1 : 0;
  const HloInstruction* e = div->operand(e_side);
  const HloInstruction* denominator = div->operand(1 - e_side);
  if (e->opcode() != HloOpcode::kExp) return std::nullopt;
  const HloInstruction* sub = e->operand(0);
  if (sub->opcode() != HloOpcode::kSubtract || sub->user_count() != 1) return std::nullopt;
  const HloInstruction* x = sub->operand(0);
  const Shape& xs = x->shape();
  if (pv_p->shape().dimensions() != xs.dimensions() || !IsFloat(x)) return std::nullopt;
  const int64_t kdim = p_contract[0];
  if (xs.dimensions(kdim) < 2) return std::nullopt;
  // max: reduce-max(x) over kdim [, maximum with -inf].
  DimMap mx_map;  // checked below, once the max's input is known
  const HloInstruction* mx = RowVector(sub->operand(1), xs, kdim, &mx_map);
  if (mx == nullptr) return std::nullopt;
  const HloInstruction* max_vector = mx;  // maximum(m, -inf) has m's dims
  if (mx->opcode() == HloOpcode::kMaximum) {
    double v = 0;
    int reduce_side = -1;
    for (int s = 0; s < 2; ++s)
      if (IsScalarConstant(mx->operand(1 - s), &v) && std::isinf(v) && v < 0) reduce_side = s;
    if (reduce_side < 0 || mx->user_count() != 1) return std::nullopt;
    mx = mx->operand(reduce_side);
  }
  // The max reads x itself or x before unit reshapes and transposes (jax.nn.dot_product_attention).
  if (mx->opcode() != HloOpcode::kReduce || mx->user_count() != 1 || mx->attrs().dimensions.size() != 1)
    return std::nullopt;
  const HloInstruction* x_max = mx->operand(0);
  const HloInstruction* above_max = nullptr;
  {
    const HloInstruction* t = x;
    DimMap frame = IdentityMap(xs);  // per dim of t, the x dim
    int64_t kd = kdim;
    while (t != x_max) {
      if ((t->opcode() != HloOpcode::kReshape && t->opcode() != HloOpcode::kBitcast &&
           t->opcode() != HloOpcode::kTranspose) ||
          t->user_count() != 1)
        return std::nullopt;
      std::optional<DimMap> next = MapToOperand(*t, frame);
      if (!next) return std::nullopt;
      if (t->opcode() == HloOpcode::kTranspose) {
        kd = t->attrs().dimensions[kd];
      } else {
        std::optional<std::vector<int64_t>> corr = UnitReshape(t->operand(0)->shape(), t->shape());
        if (!corr || (*corr)[kd] < 0) return std::nullopt;
        kd = (*corr)[kd];
      }
      frame = *next;
      above_max = t;
      t = t->operand(0);
    }
    if (!IsRowReduce(mx, kd, HloOpcode::kMaximum, -INFINITY)) return std::nullopt;
    // The broadcast max must line up with x as the reduce computed it.
    if (!SameRowDims(max_vector, mx_map, ReducedFrame(frame, kd))) return std::nullopt;
  }
  // x (x_max) is used by the max and the subtract (the reshapes to it) only.
  for (const HloInstruction* u : x_max->users())
    if (u != mx && u != (above_max ? above_max : sub)) return std::nullopt;
  if (above_max != nullptr)
    for (const HloInstruction* u : x->users())
      if (u != sub) return std::nullopt;
  // sum: reduce-add(e [converted]) over kdim, broadcast back (possibly converted).
  DimMap lsum_map;
  const HloInstruction* lsum = RowVector(denominator, xs, kdim, &lsum_map);
  if (lsum == nullptr) return std::nullopt;
  if (!SameRowDims(lsum, lsum_map, ReducedFrame(IdentityMap(xs), kdim))) return std::nullopt;
  if (reciprocal) {
    double one = 0;
    if (lsum->opcode() != HloOpcode::kDivide || (!shared && lsum->user_count() != 1) ||
        !IsScalarConstant(lsum->operand(0), &one) ||
        one != 1.0 || lsum->operand(1)->shape().dimensions() != lsum->shape().dimensions())
      return std::nullopt;
    lsum = lsum->operand(1);
  }
  while (lsum->opcode() == HloOpcode::kConvert && (shared || lsum->user_count() == 1)) lsum = lsum->operand(0);
  if (!IsRowReduce(lsum, kdim, HloOpcode::kAdd, 0.0) || (!shared && lsum->user_count() != 1)) return std::nullopt;
  const HloInstruction* summed = lsum->operand(0);
  if (summed->opcode() == HloOpcode::kConvert) {
    if (!shared && summed->user_count() != 1) return std::nullopt;
    summed = summed->operand(0);
  }
  if (summed != e) return std::nullopt;
  if (!shared)
    for (const HloInstruction* u : e->users())
      if (u != div && u != lsum && u != lsum->operand(0)) return std::nullopt;

  // The score chain from x down to the first dot.
  struct Select {
    const HloInstruction* pred;
    DimMap map;
    double fill;
    double scale_after;  // scaling applied after the select (between it and x)
  };
  std::optional<Select> select;
  struct Bias {
    const HloInstruction* value;
    DimMap map;
    double scale_after;  // scaling applied after the add
  };
  std::optional<Bias> bias;
  double scale = 1.0;
  DimMap m = IdentityMap(xs);
  const HloInstruction* n = x;
  bool first = true;
  while (n->opcode() != HloOpcode::kDot) {
    if (!first && n != x_max && n->user_count() != 1) return std::nullopt;
    first = false;
    switch (n->opcode()) {
      case HloOpcode::kConvert:
        if (!IsFloat(n->operand(0))) return std::nullopt;
        n = n->operand(0);
        continue;
      case HloOpcode::kMultiply:
      case HloOpcode::kDivide: {
        double c = 0;
        int data = -1;
        if (IsScalarConstant(n->operand(1), &c)) data = 0;
        else if (n->opcode() == HloOpcode::kMultiply && IsScalarConstant(n->operand(0), &c)) data = 1;
        if (data < 0 || c == 0 || !std::isfinite(c)) return std::nullopt;
        scale *= n->opcode() == HloOpcode::kMultiply ? c : 1.0 / c;
        n = n->operand(data);
        continue;
      }
      case HloOpcode::kSelect: {
        if (select || bias) return std::nullopt;  // one select, never under a bias
        double fill = 0;
        if (!IsScalarConstant(n->operand(2), &fill)) return std::nullopt;  // select(mask, s, fill)
        select = Select{n->operand(0), m, fill, scale};
        n = n->operand(1);
        continue;
      }
      case HloOpcode::kAdd: {
        // scores + bias (Note [Attention bias and masks]).
        if (bias || !IsFloat(n)) return std::nullopt;
        const bool l0 = LeadsToDot(n->operand(0)), l1 = LeadsToDot(n->operand(1));
        if (l0 == l1) return std::nullopt;
        const int data = l0 ? 0 : 1;
        bias = Bias{n->operand(1 - data), m, scale};
        n = n->operand(data);
        continue;
      }
      default: {
        if (!IsViewOp(n->opcode())) return std::nullopt;
        std::optional<DimMap> om = MapToOperand(*n, m);
        if (!om) return std::nullopt;
        m = *om;
        n = n->operand(0);
        continue;
      }
    }
  }
  const HloInstruction* dot1 = n;
  if (dot1->user_count() != 1 && dot1 != x && dot1 != x_max) return std::nullopt;
  const DotDimensionNumbers& dn1 = *dot1->attrs().dot_dimension_numbers;
  if (dn1.lhs_contracting_dimensions.size() != 1 || dn1.rhs_contracting_dimensions.size() != 1) return std::nullopt;
  if (!dot1->attrs().sparsity.empty() || !dot2->attrs().sparsity.empty()) return std::nullopt;
  // dot1's output dims: batch..., lhs free..., rhs free...; m maps them to x's dims.
  const int64_t nb1 = static_cast<int64_t>(dn1.lhs_batch_dimensions.size());
  auto free_dims = [](const Shape& s, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
    std::vector<int64_t> f;
    for (int64_t i = 0; i < s.rank(); ++i)
      if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
          std::find(contract.begin(), contract.end(), i) == contract.end())
        f.push_back(i);
    return f;
  };
  const std::vector<int64_t> lfree = free_dims(dot1->operand(0)->shape(), dn1.lhs_batch_dimensions, dn1.lhs_contracting_dimensions);
  const std::vector<int64_t> rfree = free_dims(dot1->operand(1)->shape(), dn1.rhs_batch_dimensions, dn1.rhs_contracting_dimensions);
  // Which side holds the key dim.
  int k_side = -1;
  int64_t key_out = -1;
  for (int64_t o = 0; o < dot1->shape().rank(); ++o)
    if (m[o] == kdim) key_out = o;
  if (key_out < nb1) return std::nullopt;
  if (key_out < nb1 + static_cast<int64_t>(lfree.size())) k_side = 0;
  else k_side = 1;
  const std::vector<int64_t>& qfree = k_side == 0 ? rfree : lfree;
  const std::vector<int64_t>& kfree = k_side == 0 ? lfree : rfree;
  const HloInstruction* qop = dot1->operand(1 - k_side);
  const HloInstruction* kop = dot1->operand(k_side);
  const int64_t q_out_base = k_side == 0 ? nb1 + static_cast<int64_t>(lfree.size()) : nb1;
  const int64_t k_out_base = k_side == 0 ? nb1 : nb1 + static_cast<int64_t>(lfree.size());
  // K: exactly one non-unit free dim (the key); Q: at most one (the row).
  int64_t k_row_dim = -1, q_row_dim = -1, q_row_out = -1;
  for (size_t i = 0; i < kfree.size(); ++i) {
    if (k_out_base + static_cast<int64_t>(i) == key_out) k_row_dim = kfree[i];
    else if (kop->shape().dimensions(kfree[i]) != 1) return std::nullopt;
  }
  std::vector<size_t> q_dims;  // non-unit free dims of q (indices into qfree)
  for (size_t i = 0; i < qfree.size(); ++i)
    if (qop->shape().dimensions(qfree[i]) != 1) q_dims.push_back(i);
  if (q_dims.size() > 2 || (row_choice == 1 && q_dims.size() < 2)) return std::nullopt;
  int64_t group_dim = -1, group_out = -1;
  if (!q_dims.empty()) {
    const size_t r = q_dims.size() == 2 ? q_dims[row_choice] : q_dims[0];
    q_row_dim = qfree[r];
    q_row_out = q_out_base + static_cast<int64_t>(r);
    if (q_dims.size() == 2) {
      const size_t g = q_dims[1 - row_choice];
      group_dim = qfree[g];
      group_out = q_out_base + static_cast<int64_t>(g);
    }
  }
  if (k_row_dim < 0) return std::nullopt;
  const auto& qb = k_side == 0 ? dn1.rhs_batch_dimensions : dn1.lhs_batch_dimensions;
  const auto& kb = k_side == 0 ? dn1.lhs_batch_dimensions : dn1.rhs_batch_dimensions;
  const int64_t q_head = (k_side == 0 ? dn1.rhs_contracting_dimensions : dn1.lhs_contracting_dimensions)[0];
  const int64_t k_head = (k_side == 0 ? dn1.lhs_contracting_dimensions : dn1.rhs_contracting_dimensions)[0];
  if (qop->shape().element_type() != kop->shape().element_type()) return std::nullopt;

  // Labels of x's dims.
  std::vector<Label> labels(xs.rank());
  std::vector<int64_t> batch_sizes, batch_out;  // non-unit batch dims of dot1, by output position
  for (int64_t o = 0; o < nb1; ++o) {
    if (dot1->shape().dimensions(o) == 1) continue;
    if (m[o] < 0) return std::nullopt;
    labels[m[o]] = Label{Role::kBatch, static_cast<int64_t>(batch_sizes.size())};
    batch_sizes.push_back(dot1->shape().dimensions(o));
    batch_out.push_back(o);
  }
  // The group dim (grouped-query attention) is the last batch dim; k and v broadcast along it.
  int64_t group_label = -1, group_xdim = -1;
  if (group_out >= 0) {
    if (m[group_out] < 0) return std::nullopt;
    group_xdim = m[group_out];
    group_label = static_cast<int64_t>(batch_sizes.size());
    labels[group_xdim] = Label{Role::kBatch, group_label};
    batch_sizes.push_back(dot1->shape().dimensions(group_out));
  }
  labels[kdim] = Label{Role::kKey, 0};
  int64_t q_xdim = -1;
  if (q_row_out >= 0) {
    if (m[q_row_out] < 0) return std::nullopt;
    q_xdim = m[q_row_out];
    labels[q_xdim] = Label{Role::kRow, 0};
  }
  const int64_t q_len = q_row_dim >= 0 ? qop->shape().dimensions(q_row_dim) : 1;
  const int64_t kv_len = kop->shape().dimensions(k_row_dim);

  // The mask: a symbolic part and at most one data part.
  MaskForm mask;
  std::optional<OperandView> mask_data, bias_data;
  double mask_fill = -INFINITY;
  if (select) {
    const double fill = select->fill * select->scale_after;
    if (!(fill <= -1e4)) return std::nullopt;
    std::optional<MaskParts> f = SplitMask(select->pred, select->map, labels, q_len, kv_len);
    if (!f) return std::nullopt;
    if (f->form.causal && f->form.c < 0) return std::nullopt;
    mask = f->form;
    mask_fill = fill;
    if (f->data) {
      mask_data = ResolveOperandView(f->data, f->data_map, labels, batch_sizes.size(), /*converts=*/false);
      if (!mask_data || mask_data->root->shape().element_type() != PrimitiveType::kPred) return std::nullopt;
    }
  }
  if (bias) {
    bias_data = ResolveOperandView(bias->value, bias->map, labels, batch_sizes.size(), /*converts=*/true);
    if (!bias_data || !IsFloatingPointType(bias_data->root->shape().element_type()) || !std::isfinite(bias->scale_after))
      return std::nullopt;
  }

  // dot2: p's batch dims are the batch labels (and size-1 dims), its free dims the row (and
  // size-1 dims); v's free dim is the value head dim.
  const std::vector<int64_t> vfree = free_dims(pv_v->shape(), v_batch, v_contract);
  int64_t v_head = -1;
  for (int64_t f : vfree) {
    if (pv_v->shape().dimensions(f) == 1 && vfree.size() > 1) continue;
    if (v_head >= 0) return std::nullopt;
    v_head = f;
  }
  if (v_head < 0) return std::nullopt;
  std::vector<int64_t> v_batch_dim(batch_sizes.size(), -1);
  std::vector<int64_t> out_batch_pos(batch_sizes.size(), -1);
  for (size_t i = 0; i < p_batch.size(); ++i) {
    const Label& l = labels[p_batch[i]];
    if (xs.dimensions(p_batch[i]) == 1) continue;
    if (l.role != Role::kBatch) return std::nullopt;
    v_batch_dim[l.batch] = v_batch[i];
    out_batch_pos[l.batch] = static_cast<int64_t>(i);
  }
  for (size_t i = 0; i < v_batch_dim.size(); ++i)
    if (v_batch_dim[i] < 0 && static_cast<int64_t>(i) != group_label) return std::nullopt;
  const std::vector<int64_t> pfree = free_dims(pv_p->shape(), p_batch, p_contract);
  for (int64_t f : pfree)
    if (xs.dimensions(f) != 1 && f != q_xdim && f != group_xdim) return std::nullopt;
  if (group_label >= 0 && v_batch_dim[group_label] >= 0) return std::nullopt;  // the group is a free dim of p
  // dot2's output positions of the row and the value head.
  const int64_t nb2 = static_cast<int64_t>(p_batch.size());
  int64_t out_row = -1, out_head = -1;
  {
    const std::vector<int64_t>& lhs_free = p_side == 0 ? pfree : vfree;
    const std::vector<int64_t>& rhs_free = p_side == 0 ? vfree : pfree;
    for (int side = 0; side < 2; ++side) {
      const std::vector<int64_t>& f = side == 0 ? lhs_free : rhs_free;
      const int64_t base = nb2 + (side == 0 ? 0 : static_cast<int64_t>(lhs_free.size()));
      const bool is_p = side == p_side;
      for (size_t i = 0; i < f.size(); ++i) {
        if (is_p && f[i] == q_xdim) out_row = base + static_cast<int64_t>(i);
        if (is_p && group_xdim >= 0 && f[i] == group_xdim) out_batch_pos[group_label] = base + static_cast<int64_t>(i);
        if (!is_p && f[i] == v_head) out_head = base + static_cast<int64_t>(i);
      }
    }
  }
  if (out_head < 0) return std::nullopt;
  if (group_label >= 0 && out_batch_pos[group_label] < 0) return std::nullopt;
  const int64_t head_dim = qop->shape().dimensions(q_head);
  if (kop->shape().dimensions(k_head) != head_dim) return std::nullopt;
  const int64_t v_rows = pv_v->shape().dimensions(v_contract[0]);
  if (v_rows != kv_len) return std::nullopt;

  // Output folding: single-user view ops after dot2, strides computed back from the last one.
  std::vector<HloInstruction*> down = {dot2};
  while (down.back()->user_count() == 1) {
    HloInstruction* u = down.back()->users()[0];
    if (!(u->opcode() == HloOpcode::kTranspose || u->opcode() == HloOpcode::kReshape ||
          u->opcode() == HloOpcode::kBitcast))
      break;
    down.push_back(u);
  }
  std::vector<int64_t> out_strides;
  HloInstruction* output = dot2;
  for (size_t last = down.size(); last-- > 0;) {
    std::vector<int64_t> st = RowMajorStrides(down[last]->shape());
    bool ok = true;
    for (size_t i = last; i-- > 0;) {
      // down[i+1] = op(down[i]): strides of down[i] from those of down[i+1].
      std::optional<std::vector<int64_t>> xst = StepUp(down[i + 1], st);
      if (!xst) {
        ok = false;
        break;
      }
      st = *xst;
    }
    if (ok) {
      out_strides = st;
      output = down[last];
      break;
    }
  }
  // The entry root keeps its layout: do not replace a root whose layout is not row-major.
  if (output->shape().has_layout() && !output->shape().layout().IsDefaultFor(output->shape().rank()))
    return std::nullopt;

  // Input views.
  const StridedValue qv = ViewOf(qop, /*allow_scale=*/true);
  const StridedValue kv = ViewOf(kop, /*allow_scale=*/true);
  const StridedValue vv = ViewOf(pv_v, /*allow_scale=*/false);
  scale *= qv.scale * kv.scale;

  AttentionConfig c;
  c.batch = batch_sizes;
  c.q_len = q_len;
  c.kv_len = kv_len;
  c.head_dim = head_dim;
  c.v_head_dim = pv_v->shape().dimensions(v_head);
  c.scale = scale;
  c.mask = mask.causal ? AttentionMask::kCausal : AttentionMask::kNone;
  c.causal_offset = mask.causal ? mask.c : 0;
  c.input_type = qop->shape().element_type();
  c.score_type = dot1->shape().element_type();
  c.softmax_type = xs.element_type();
  c.probs_type = pv_p->shape().element_type();
  c.output_type = dot2->shape().element_type();
  if (pv_v->shape().element_type() != c.input_type) return std::nullopt;
  // A batch dim of -1 is one the operand does not have (the group of k and v): stride 0.
  auto view = [&](const StridedValue& sv, const std::vector<int64_t>& bdims, int64_t row_dim, int64_t elem_dim) {
    AttentionView v;
    v.offset = sv.offset;
    for (int64_t d : bdims) v.batch.push_back(d >= 0 ? sv.strides[d] : 0);
    v.row = row_dim >= 0 ? sv.strides[row_dim] : 0;
    v.element = sv.strides[elem_dim];
    return v;
  };
  std::vector<int64_t> qbd, kbd;
  for (int64_t o : batch_out) {
    qbd.push_back(qb[o]);
    kbd.push_back(kb[o]);
  }
  if (group_label >= 0) {
    qbd.push_back(group_dim);
    kbd.push_back(-1);
  }
  if (bias_data) {
    c.has_bias = true;
    c.bias = bias_data->view;
    c.bias_type = bias_data->root->shape().element_type();
    c.bias_scale = bias->scale_after;
  }
  if (mask_data) {
    c.has_mask = true;
    c.mask_view = mask_data->view;
    c.mask_fill = mask_fill;
  }
  c.q = view(qv, qbd, q_row_dim, q_head);
  c.k = view(kv, kbd, k_row_dim, k_head);
  c.v = view(vv, v_batch_dim, v_contract[0], v_head);
  c.out.batch.clear();
  for (int64_t pos : out_batch_pos) c.out.batch.push_back(out_strides[pos]);
  c.out.row = out_row >= 0 ? out_strides[out_row] : 0;
  c.out.element = out_strides[out_head];
  Match match;
  match.config = c;
  match.roots[0] = qv.root;
  match.roots[1] = kv.root;
  match.roots[2] = vv.root;
  if (bias_data) match.roots[3] = bias_data->root;
  if (mask_data) match.roots[4] = mask_data->root;
  match.output = output;
  match.div = div;
  match.pv_p = pv_p;
  match.e = e;
  match.x = x;
  match.dot1 = dot1;
  match.qop = qop;
  match.kop = kop;
  match.vop = pv_v;
  match.labels = labels;
  match.kdim = kdim;
  match.q_xdim = q_xdim;
  match.grouped = group_label >= 0;
  return match;
}

// The instructions of the match (between the roots and the output) and those of them that
// stay for other users (parameter-free ones: masks, constants). nullopt when an intermediate
// that depends on the operands has a user outside the match.
struct Members {
  std::vector<HloInstruction*> members, duplicated;
};
// `outputs`: the instructions the call replaces; `roots`: its operands. An intermediate that
// depends on one of `private_roots` must have no user outside the match (a pure view is
// duplicated); one that depends on the other roots only is duplicated (recomputed inside).
std::optional<Members> CollectMembersOf(std::span<HloInstruction* const> outputs,
                                        const std::unordered_set<const HloInstruction*>& roots,
                                        const std::unordered_set<const HloInstruction*>& private_roots) {
  std::unordered_set<HloInstruction*> set;
  std::vector<HloInstruction*> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    HloInstruction* n = stack.back();
    stack.pop_back();
    if (roots.count(n) || !set.insert(n).second) continue;
    if (n->opcode() == HloOpcode::kParameter || !n->control_predecessors().empty() ||
        !n->control_successors().empty() || (!n->called_computations().empty() && n->opcode() != HloOpcode::kReduce))
      return std::nullopt;
    for (HloInstruction* o : n->operands()) stack.push_back(o);
  }
  Members out;
  // Post order restricted to the set: whether each depends on a root, a private one.
  std::unordered_map<const HloInstruction*, std::pair<bool, bool>> dep;
  const std::unordered_set<const HloInstruction*> outs(outputs.begin(), outputs.end());
  std::vector<HloInstruction*> order = outputs[0]->parent()->MakeInstructionPostOrder();
  for (HloInstruction* n : order) {
    if (!set.count(n)) continue;
    bool d = false, p = false;
    for (const HloInstruction* o : n->operands()) {
      d = d || roots.count(o) > 0 || (dep.count(o) && dep[o].first);
      p = p || private_roots.count(o) > 0 || (dep.count(o) && dep[o].second);
    }
    dep[n] = {d, p};
    out.members.push_back(n);
    if (outs.count(n)) continue;
    bool outside = false;
    for (const HloInstruction* u : n->users()) outside = outside || !set.count(const_cast<HloInstruction*>(u));
    if (n->IsRoot()) outside = true;
    if (outside) {
      if (p && !IsPureView(n->opcode())) return std::nullopt;
      out.duplicated.push_back(n);
    }
  }
  // What a duplicated member reads stays outside too (users first: reverse post order).
  std::unordered_set<const HloInstruction*> dup(out.duplicated.begin(), out.duplicated.end());
  for (size_t i = out.members.size(); i-- > 0;) {
    HloInstruction* n = out.members[i];
    if (!dup.count(n)) continue;
    for (HloInstruction* o : n->operands()) {
      if (!set.count(o) || dup.count(o)) continue;
      if (dep[o].second && !IsPureView(o->opcode())) return std::nullopt;
      dup.insert(o);
      out.duplicated.push_back(o);
    }
  }
  return out;
}

std::optional<Members> CollectMembers(const Match& match) {
  std::unordered_set<const HloInstruction*> roots;
  for (const HloInstruction* r : match.roots)
    if (r != nullptr) roots.insert(r);
  HloInstruction* outputs[1] = {match.output};
  return CollectMembersOf(outputs, roots, roots);
}

// Replaces the outlined `fusion` by the custom call `target` with the same operands and called
// computation; `roots` are the q, k, v (and dO) view roots, whose operand indices go into
// `config`'s views before it becomes the call's backend_config.
StatusOr<HloInstruction*> ReplaceWithCall(HloComputation& comp, HloInstruction* fusion,
                                          std::span<const HloInstruction* const> roots, std::string_view target,
                                          std::string_view name, AttentionConfig& config) {
  // Roots: q, k, v, then dO (backward) or the bias and the data mask (forward; null if absent).
  AttentionView* views[5] = {&config.q, &config.k, &config.v, config.backward ? &config.d_out : &config.bias,
                             &config.mask_view};
  for (size_t r = 0; r < roots.size() && r < 5; ++r) {
    if (roots[r] == nullptr) continue;
    views[r]->operand = -1;
    for (int64_t i = 0; i < fusion->operand_count() && views[r]->operand < 0; ++i)
      if (fusion->operand(i) == roots[r]) views[r]->operand = i;
    if (views[r]->operand < 0) return Internal("attention rewriter: a view root is not an operand of the outlined ", name);
  }
  auto call = std::make_unique<HloInstruction>(HloOpcode::kCustomCall, fusion->shape(), "");
  call->attrs().custom_call_target = std::string(target);
  for (HloInstruction* o : fusion->operands()) call->AppendOperand(o);
  call->AppendCalledComputation(fusion->fused_computation());
  call->backend_config() = BackendConfig{config.ToJson(), true};
  HloEditor editor(&comp);
  HloInstruction* added = editor.Add(std::move(call), fusion);
  added->set_name(UniqueInstructionName(comp, name));
  fusion->ReplaceAllUsesWith(added);
  KILN_RETURN_IF_ERROR(comp.RemoveInstruction(fusion));
  return added;
}

// The forward call replacing `match`, or nullptr where the match cannot be outlined.
StatusOr<HloInstruction*> Rewrite(const Match& match, HloComputation& comp) {
  std::optional<Members> members = CollectMembers(match);
  if (!members) return nullptr;
  FuseSpec spec;
  spec.members = members->members;
  spec.duplicated = members->duplicated;
  spec.kind = FusionKind::kCustom;
  spec.name = "attention";
  if (FusionWouldCreateCycle(spec.members, spec.duplicated)) return nullptr;
  KILN_ASSIGN_OR_RETURN(HloInstruction * fusion, FuseInstructions(spec));
  HloComputation* body = fusion->fused_computation();
  HloModule* module = comp.parent();
  body->set_name(UniqueComputationName(*module, "attention"));
  AttentionConfig config = match.config;
  return ReplaceWithCall(comp, fusion, match.roots, kAttentionCallTarget, "attention", config);
}

// ---- the backward match (Note [Attention backward]) ----

constexpr int64_t kHead = -2;  // in a frame: the head (element) dim of q, k, v, dO or a gradient

bool IsUnitView(const HloInstruction* n) {
  return n->opcode() == HloOpcode::kConvert || n->opcode() == HloOpcode::kCopy || IsViewOp(n->opcode());
}

// The first instruction below `n` that is not a convert, copy, transpose, reshape or bitcast.
const HloInstruction* StripViews(const HloInstruction* n) {
  while (IsUnitView(n)) n = n->operand(0);
  return n;
}

// The frame of `n` (x dims per dim, kHead, or -1) from the frame of its base `base` (reached
// through StripViews-kind steps): nullopt when a step reorders data otherwise.
std::optional<DimMap> FrameFromBase(const HloInstruction* n, const HloInstruction* base, const DimMap& base_frame) {
  std::vector<const HloInstruction*> chain;
  for (const HloInstruction* t = n; t != base; t = t->operand(0)) {
    if (!IsUnitView(t)) return std::nullopt;
    chain.push_back(t);
  }
  DimMap f = base_frame;
  for (size_t i = chain.size(); i-- > 0;) {
    const HloInstruction* t = chain[i];
    DimMap g(t->shape().rank(), -1);
    if (t->opcode() == HloOpcode::kTranspose) {
      for (size_t j = 0; j < g.size(); ++j) g[j] = f[t->attrs().dimensions[j]];
    } else if (t->opcode() == HloOpcode::kReshape || t->opcode() == HloOpcode::kBitcast) {
      std::optional<std::vector<int64_t>> c = UnitReshape(t->operand(0)->shape(), t->shape());
      if (!c) return std::nullopt;
      for (size_t j = 0; j < g.size(); ++j) g[j] = (*c)[j] >= 0 ? f[(*c)[j]] : -1;
    } else {
      if (t->shape().dimensions() != t->operand(0)->shape().dimensions()) return std::nullopt;
      g = f;
    }
    for (int64_t j = 0; j < t->shape().rank(); ++j)
      if (t->shape().dimensions(j) == 1) g[j] = -1;
    f = g;
  }
  return f;
}

// Frames equal on the non-unit dims of `s`.
bool SameFrame(const Shape& s, const DimMap& a, const DimMap& b) {
  if (static_cast<int64_t>(a.size()) != s.rank() || static_cast<int64_t>(b.size()) != s.rank()) return false;
  for (int64_t i = 0; i < s.rank(); ++i)
    if (s.dimensions(i) != 1 && a[i] != b[i]) return false;
  return true;
}

struct DotFrames {
  DimMap other, out;
};

// For dot `d` whose operand `side` has frame `known`: the other operand's frame and the
// output's. The one contracting pair must contract `contract` (a frame value) on the known
// side; the other side's one non-unit free dim gets `other_free`.
std::optional<DotFrames> PairDot(const HloInstruction* d, int side, const DimMap& known, int64_t contract,
                                 int64_t other_free) {
  const DotDimensionNumbers& dn = *d->attrs().dot_dimension_numbers;
  if (!d->attrs().sparsity.empty()) return std::nullopt;
  const auto& kb = side == 0 ? dn.lhs_batch_dimensions : dn.rhs_batch_dimensions;
  const auto& ob = side == 0 ? dn.rhs_batch_dimensions : dn.lhs_batch_dimensions;
  const auto& kc = side == 0 ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
  const auto& oc = side == 0 ? dn.rhs_contracting_dimensions : dn.lhs_contracting_dimensions;
  const HloInstruction* other = d->operand(1 - side);
  const HloInstruction* k = d->operand(side);
  // One contracting pair of non-unit dims (pairs of size-1 dims contract nothing).
  int64_t kc0 = -1, oc0 = -1;
  if (kc.size() != oc.size()) return std::nullopt;
  for (size_t i = 0; i < kc.size(); ++i) {
    if (k->shape().dimensions(kc[i]) == 1) continue;
    if (kc0 >= 0) return std::nullopt;
    kc0 = kc[i];
    oc0 = oc[i];
  }
  if (kc0 < 0 || known[kc0] != contract) return std::nullopt;
  auto contracted = [](const std::vector<int64_t>& c, int64_t i) { return std::find(c.begin(), c.end(), i) != c.end(); };
  DotFrames f;
  f.other.assign(other->shape().rank(), -1);
  for (size_t i = 0; i < kb.size(); ++i) {
    if (known[kb[i]] == kHead) return std::nullopt;
    f.other[ob[i]] = other->shape().dimensions(ob[i]) == 1 ? -1 : known[kb[i]];
  }
  f.other[oc0] = known[kc0];
  int free_seen = 0;
  for (int64_t i = 0; i < other->shape().rank(); ++i) {
    if (std::find(ob.begin(), ob.end(), i) != ob.end() || contracted(oc, i) || other->shape().dimensions(i) == 1) continue;
    f.other[i] = other_free;
    ++free_seen;
  }
  if (free_seen != 1) return std::nullopt;
  // The known side's free dims: one non-unit (what it is comes from `known`).
  int known_free = 0;
  std::vector<int64_t> kfree, ofree;
  for (int64_t i = 0; i < k->shape().rank(); ++i)
    if (std::find(kb.begin(), kb.end(), i) == kb.end() && !contracted(kc, i)) {
      kfree.push_back(i);
      if (k->shape().dimensions(i) != 1) ++known_free;
    }
  for (int64_t i = 0; i < other->shape().rank(); ++i)
    if (std::find(ob.begin(), ob.end(), i) == ob.end() && !contracted(oc, i)) ofree.push_back(i);
  if (known_free != 1) return std::nullopt;
  for (int64_t b : kb) f.out.push_back(known[b]);
  const std::vector<int64_t>& lfree = side == 0 ? kfree : ofree;
  const std::vector<int64_t>& rfree = side == 0 ? ofree : kfree;
  const DimMap& lframe = side == 0 ? known : f.other;
  const DimMap& rframe = side == 0 ? f.other : known;
  for (int64_t i : lfree) f.out.push_back(lframe[i]);
  for (int64_t i : rfree) f.out.push_back(rframe[i]);
  for (int64_t i = 0; i < d->shape().rank(); ++i)
    if (d->shape().dimensions(i) == 1) f.out[i] = -1;
  return f;
}

// The x dim of each batch label.
std::vector<int64_t> BatchXDims(const Match& f) {
  std::vector<int64_t> out(f.config.batch.size(), -1);
  for (size_t xd = 0; xd < f.labels.size(); ++xd)
    if (f.labels[xd].role == Role::kBatch) out[f.labels[xd].batch] = static_cast<int64_t>(xd);
  return out;
}

// The frame of dot operand `op` when it is a view of `root` with the strides of `want` (its
// rows being x dim `row_xdim`): each non-unit dim named by the one stride of `want` it has.
// `*scale` receives the scalar multiplies folded on the way.
std::optional<DimMap> FrameByView(const HloInstruction* op, const HloInstruction* root, const AttentionView& want,
                                  int64_t row_xdim, const std::vector<int64_t>& batch_xdim, bool allow_scale,
                                  double* scale) {
  const StridedValue sv = ViewOf(op, allow_scale);
  if (sv.root != root || sv.offset != want.offset) return std::nullopt;
  DimMap f(op->shape().rank(), -1);
  std::vector<int> used(batch_xdim.size() + 2, 0);
  for (int64_t i = 0; i < op->shape().rank(); ++i) {
    if (op->shape().dimensions(i) == 1) continue;
    const int64_t st = sv.strides[i];
    int hits = 0;
    if (st == want.element) {
      f[i] = kHead;
      ++used[0];
      ++hits;
    }
    if (st == want.row) {
      f[i] = row_xdim;
      ++used[1];
      ++hits;
    }
    for (size_t l = 0; l < batch_xdim.size(); ++l)
      if (st == want.batch[l]) {
        f[i] = batch_xdim[l];
        ++used[2 + l];
        ++hits;
      }
    if (hits != 1) return std::nullopt;
  }
  for (int u : used)
    if (u > 1) return std::nullopt;
  if (scale) *scale = sv.scale;
  return f;
}

// The view of a value whose dims have frame `f` at strides `strides` (the config's order).
std::optional<AttentionView> ViewFromFrame(const DimMap& f, const std::vector<int64_t>& strides, int64_t offset,
                                           const Shape& s, int64_t row_xdim, const std::vector<int64_t>& batch_xdim,
                                           const std::vector<int64_t>& batch_sizes) {
  AttentionView v;
  v.offset = offset;
  v.batch.assign(batch_xdim.size(), 0);
  std::vector<bool> have(batch_xdim.size(), false);
  bool row = false, head = false;
  for (int64_t i = 0; i < s.rank(); ++i) {
    if (s.dimensions(i) == 1) continue;
    if (f[i] == kHead) {
      v.element = strides[i];
      head = true;
    } else if (f[i] == row_xdim) {
      v.row = strides[i];
      row = true;
    } else {
      bool found = false;
      for (size_t l = 0; l < batch_xdim.size(); ++l)
        if (f[i] == batch_xdim[l]) {
          v.batch[l] = strides[i];
          have[l] = found = true;
        }
      if (!found) return std::nullopt;
    }
  }
  for (size_t l = 0; l < have.size(); ++l)
    if (!have[l] && batch_sizes[l] != 1) return std::nullopt;
  if (!head || !row) return std::nullopt;
  return v;
}

// Row-local evaluation of the softmax gradient's subgraph (Note [Attention backward]): every
// value at one fixed batch index and query row, a vector over K synthetic keys where its dims
// include the key dim, else a number.
struct RowValue {
  bool full = false;
  std::vector<double> v;
  double s = 0;
  double at(size_t j) const { return full ? v[j] : s; }
};

class RowEvaluator {
 public:
  RowEvaluator(const Match& f, const std::unordered_set<const HloInstruction*>& pset,
               std::function<std::optional<DimMap>(const HloInstruction*)> dp_frame)
      : f_(f), pset_(pset), dp_frame_(std::move(dp_frame)) {}

  void SetData(std::vector<double> e, std::vector<double> dp) {
    e_ = std::move(e);
    dp_ = std::move(dp);
    double l = 0;
    for (double x : e_) l += x;
    p_.resize(e_.size());
    for (size_t j = 0; j < e_.size(); ++j) p_[j] = e_[j] / l;
    memo_.clear();
  }
  const std::vector<double>& p() const { return p_; }
  const std::vector<double>& dp() const { return dp_; }
  const HloInstruction* dp_dot() const { return dp_dot_; }
  const std::unordered_set<const HloInstruction*>& interior() const { return interior_; }

  std::optional<RowValue> Eval(const HloInstruction* n, const DimMap& frame, int depth = 0) {
    if (depth > 64) return std::nullopt;
    auto key = std::make_pair(n, frame);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    std::optional<RowValue> r = Compute(n, frame, depth);
    if (r) memo_[key] = *r;
    return r;
  }

 private:
  RowValue Full(const std::vector<double>& v) { return RowValue{true, v, 0}; }
  bool IsX(const HloInstruction* n, const DimMap& frame) const {
    return n->shape().dimensions() == f_.x->shape().dimensions() &&
           SameFrame(n->shape(), frame, IdentityMap(f_.x->shape()));
  }

  std::optional<RowValue> Compute(const HloInstruction* n, const DimMap& frame, int depth) {
    if (pset_.count(n)) return IsX(n, frame) ? std::optional<RowValue>(Full(p_)) : std::nullopt;
    if (n == f_.e) return IsX(n, frame) ? std::optional<RowValue>(Full(e_)) : std::nullopt;
    double c = 0;
    if (IsScalarConstant(n, &c)) return RowValue{false, {}, c};
    if (n->opcode() == HloOpcode::kDot) {
      if (dp_dot_ != nullptr && dp_dot_ != n) return std::nullopt;
      std::optional<DimMap> df = dp_frame_(n);
      if (!df || !SameFrame(n->shape(), *df, frame)) return std::nullopt;
      dp_dot_ = n;
      return Full(dp_);
    }
    if (!IsFloat(n)) return std::nullopt;
    interior_.insert(n);
    const size_t K = e_.size();
    switch (n->opcode()) {
      case HloOpcode::kConvert:
      case HloOpcode::kCopy:
      case HloOpcode::kNegate:
      case HloOpcode::kBroadcast:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
      case HloOpcode::kTranspose: {
        if (n->opcode() == HloOpcode::kConvert && !IsFloat(n->operand(0))) return std::nullopt;
        std::optional<DimMap> om = MapToOperand(*n, frame);
        if (!om) return std::nullopt;
        std::optional<RowValue> a = Eval(n->operand(0), *om, depth + 1);
        if (!a) return std::nullopt;
        if (n->opcode() == HloOpcode::kNegate) {
          a->s = -a->s;
          for (double& x : a->v) x = -x;
        }
        return a;
      }
      case HloOpcode::kAdd:
      case HloOpcode::kSubtract:
      case HloOpcode::kMultiply:
      case HloOpcode::kDivide: {
        std::optional<DimMap> m0 = MapToOperand(*n, frame, 0), m1 = MapToOperand(*n, frame, 1);
        if (!m0 || !m1) return std::nullopt;
        std::optional<RowValue> a = Eval(n->operand(0), *m0, depth + 1);
        if (!a) return std::nullopt;
        std::optional<RowValue> b = Eval(n->operand(1), *m1, depth + 1);
        if (!b) return std::nullopt;
        auto op = [&](double x, double y) {
          switch (n->opcode()) {
            case HloOpcode::kAdd: return x + y;
            case HloOpcode::kSubtract: return x - y;
            case HloOpcode::kMultiply: return x * y;
            default: return x / y;
          }
        };
        RowValue r;
        r.full = a->full || b->full;
        if (r.full) {
          r.v.resize(K);
          for (size_t j = 0; j < K; ++j) r.v[j] = op(a->at(j), b->at(j));
        } else {
          r.s = op(a->s, b->s);
        }
        return r;
      }
      case HloOpcode::kReduce: {
        if (n->operand_count() != 2 || !IsBinaryReducer(n->to_apply(), HloOpcode::kAdd)) return std::nullopt;
        double init = 1;
        if (!IsScalarConstant(n->operand(1), &init) || init != 0) return std::nullopt;
        const HloInstruction* a = n->operand(0);
        const std::vector<int64_t>& rd = n->attrs().dimensions;
        DimMap fo(a->shape().rank(), -1);
        int64_t ni = 0;
        int keys = 0;
        for (int64_t i = 0; i < a->shape().rank(); ++i) {
          if (std::find(rd.begin(), rd.end(), i) != rd.end()) {
            if (a->shape().dimensions(i) != 1) {
              fo[i] = f_.kdim;
              ++keys;
            }
          } else {
            fo[i] = a->shape().dimensions(i) == 1 ? -1 : frame[ni];
            ++ni;
          }
        }
        if (keys > 1) return std::nullopt;
        if (keys == 1)
          for (int64_t i = 0; i < n->shape().rank(); ++i)
            if (n->shape().dimensions(i) != 1 && frame[i] == f_.kdim) return std::nullopt;
        std::optional<RowValue> v = Eval(a, fo, depth + 1);
        if (!v) return std::nullopt;
        if (keys == 0) return v;
        if (!v->full) return std::nullopt;  // a sum of a broadcast row: depends on the real length
        double sum = 0;
        for (double x : v->v) sum += x;
        return RowValue{false, {}, sum};
      }
      default:
        return std::nullopt;
    }
  }

  const Match& f_;
  const std::unordered_set<const HloInstruction*>& pset_;
  std::function<std::optional<DimMap>(const HloInstruction*)> dp_frame_;
  std::vector<double> e_, dp_, p_;
  std::map<std::pair<const HloInstruction*, DimMap>, RowValue> memo_;
  const HloInstruction* dp_dot_ = nullptr;
  std::unordered_set<const HloInstruction*> interior_;
};

struct BackwardMatch {
  AttentionConfig config;
  const HloInstruction* roots[4] = {nullptr, nullptr, nullptr, nullptr};  // q, k, v, dO
  HloInstruction* dots[3] = {nullptr, nullptr, nullptr};                   // dQ, dK, dV
  HloInstruction* packed = nullptr;  // the concatenate the call computes (Note [Packed gradients])
};

std::vector<int64_t> RowMajorOf(const Shape& s) { return RowMajorStrides(s); }

// Where the gradient dots' elements go: each dot's own row-major value, or (Note [Packed
// gradients]) positions in the row-major buffer of the one concatenate they all feed.
struct GradientPlacement {
  HloInstruction* concat = nullptr;
  std::vector<int64_t> strides[3];  // per dimension of each dot's value
  int64_t offset[3] = {0, 0, 0};
};

GradientPlacement PlaceGradients(HloInstruction* const dots[3]) {
  GradientPlacement own;
  for (int i = 0; i < 3; ++i) own.strides[i] = RowMajorOf(dots[i]->shape());
  // Each dot reaches the concatenate through pure views that nothing else reads.
  std::vector<HloInstruction*> chains[3];
  HloInstruction* ends[3] = {nullptr, nullptr, nullptr};
  HloInstruction* concat = nullptr;
  for (int i = 0; i < 3; ++i) {
    HloInstruction* n = dots[i];
    for (int guard = 0;; ++guard) {
      if (guard > 16 || n->user_count() != 1 || n->IsRoot() || !n->control_successors().empty()) return own;
      HloInstruction* u = n->users()[0];
      if (u->opcode() == HloOpcode::kConcatenate) {
        if (concat != nullptr && u != concat) return own;
        concat = u;
        break;
      }
      switch (u->opcode()) {
        case HloOpcode::kCopy:
        case HloOpcode::kReshape:
        case HloOpcode::kBitcast:
        case HloOpcode::kTranspose:
          break;
        default:
          return own;
      }
      if (!u->control_predecessors().empty()) return own;
      chains[i].push_back(u);
      n = u;
    }
    ends[i] = n;
  }
  if (concat == nullptr || concat->operand_count() != 3 || concat->attrs().dimensions.size() != 1 ||
      !concat->control_predecessors().empty() ||
      (concat->shape().has_layout() && !concat->shape().layout().IsDefaultFor(concat->shape().rank())))
    return own;
  const int64_t dim = concat->attrs().dimensions[0];
  const std::vector<int64_t> cs = RowMajorOf(concat->shape());
  GradientPlacement out;
  int seen = 0;
  int64_t at = 0;
  for (int64_t o = 0; o < 3; ++o) {
    const HloInstruction* op = concat->operand(o);
    int i = 0;
    while (i < 3 && ends[i] != op) ++i;
    if (i == 3 || (seen & (1 << i))) return own;
    seen |= 1 << i;
    // The operand is C's box at `at` along `dim`; walk the views back up to the dot (each
    // view's inverse is a view of the same kind).
    std::vector<int64_t> st = cs;
    const int64_t offset = at * cs[dim];
    at += op->shape().dimensions(dim);
    for (size_t j = chains[i].size(); j-- > 0;) {
      std::optional<std::vector<int64_t>> up = StepUp(chains[i][j], st);
      if (!up) return own;
      st = *up;
    }
    out.strides[i] = st;
    out.offset[i] = offset;
  }
  out.concat = concat;
  return out;
}

std::optional<BackwardMatch> MatchBackward(HloComputation& comp, HloInstruction* dot2) {
  std::optional<Match> fm;
  for (int side = 0; side < 2 && !fm; ++side)
    for (int row = 0; row < 2 && !fm; ++row) fm = MatchAt(dot2, side, row, /*shared=*/true);
  if (!fm || fm->grouped || fm->q_xdim < 0) return std::nullopt;
  // Not yet with a bias or a data mask (Note [Attention bias and masks]).
  if (fm->config.has_bias || fm->config.has_mask) return std::nullopt;
  const Match& f = *fm;
  const AttentionConfig& c = f.config;
  const Shape& xs = f.x->shape();
  const DimMap xid = IdentityMap(xs);
  const std::vector<int64_t> bx = BatchXDims(f);
  for (int64_t b : bx)
    if (b < 0) return std::nullopt;
  std::unordered_set<const HloInstruction*> pset;
  for (const HloInstruction* n = f.pv_p;; n = n->operand(0)) {
    pset.insert(n);
    if (n == f.div) break;
  }
  // dV = dot(p, dO) contracting the rows.
  HloInstruction* dv = nullptr;
  int dv_side = -1;
  std::vector<HloInstruction*> dots;
  for (HloInstruction* d : comp.MakeInstructionPostOrder())
    if (d->opcode() == HloOpcode::kDot && d->attrs().dot_dimension_numbers && d != dot2 && d != f.dot1)
      dots.push_back(d);
  for (HloInstruction* d : dots)
    for (int s = 0; s < 2; ++s)
      if (pset.count(StripViews(d->operand(s)))) {
        if (dv != nullptr) return std::nullopt;
        dv = d;
        dv_side = s;
      }
  if (dv == nullptr) return std::nullopt;
  std::optional<DimMap> pframe = FrameFromBase(dv->operand(dv_side), StripViews(dv->operand(dv_side)), xid);
  if (!pframe) return std::nullopt;
  std::optional<DotFrames> dvf = PairDot(dv, dv_side, *pframe, f.q_xdim, kHead);
  if (!dvf) return std::nullopt;
  const HloInstruction* gop = dv->operand(1 - dv_side);
  const StridedValue gv = ViewOf(gop, /*allow_scale=*/false);
  std::optional<AttentionView> d_out =
      ViewFromFrame(dvf->other, gv.strides, gv.offset, gop->shape(), f.q_xdim, bx, c.batch);
  if (!d_out) return std::nullopt;
  // dQ = dot(dS, k) contracting the keys; dK = dot(dS, q) contracting the rows.
  HloInstruction *dq = nullptr, *dk = nullptr;
  const HloInstruction *dsq = nullptr, *dsk = nullptr;
  DotFrames dqf, dkf;
  double kfold = 1, qfold = 1;
  for (HloInstruction* d : dots) {
    if (d == dv) continue;
    for (int s = 0; s < 2; ++s) {
      double fold = 1;
      std::optional<DimMap> kf = FrameByView(d->operand(s), f.roots[1], c.k, f.kdim, bx, true, &fold);
      if (kf) {
        std::optional<DotFrames> pf = PairDot(d, s, *kf, f.kdim, f.q_xdim);
        if (pf) {
          if (dq != nullptr) return std::nullopt;
          dq = d;
          dsq = d->operand(1 - s);
          dqf = *pf;
          kfold = fold;
          continue;
        }
      }
      std::optional<DimMap> qf = FrameByView(d->operand(s), f.roots[0], c.q, f.q_xdim, bx, true, &fold);
      if (qf) {
        std::optional<DotFrames> pf = PairDot(d, s, *qf, f.q_xdim, f.kdim);
        if (pf) {
          if (dk != nullptr) return std::nullopt;
          dk = d;
          dsk = d->operand(1 - s);
          dkf = *pf;
          qfold = fold;
        }
      }
    }
  }
  if (dq == nullptr || dk == nullptr || dq == dk) return std::nullopt;
  HloInstruction* const grads[3] = {dq, dk, dv};
  const GradientPlacement place = PlaceGradients(grads);
  std::optional<AttentionView> dq_view =
      ViewFromFrame(dqf.out, place.strides[0], place.offset[0], dq->shape(), f.q_xdim, bx, c.batch);
  std::optional<AttentionView> dk_view =
      ViewFromFrame(dkf.out, place.strides[1], place.offset[1], dk->shape(), f.kdim, bx, c.batch);
  std::optional<AttentionView> dv_view =
      ViewFromFrame(dvf->out, place.strides[2], place.offset[2], dv->shape(), f.kdim, bx, c.batch);
  if (!dq_view || !dk_view || !dv_view) return std::nullopt;
  // Both read one dS value z (through converts and unit views).
  const HloInstruction* z = StripViews(dsq);
  if (StripViews(dsk) != z) return std::nullopt;
  auto frame_down = [](const HloInstruction* from, const HloInstruction* to, DimMap m) -> std::optional<DimMap> {
    for (const HloInstruction* t = from; t != to; t = t->operand(0)) {
      std::optional<DimMap> om = MapToOperand(*t, m);
      if (!om) return std::nullopt;
      m = *om;
    }
    return m;
  };
  std::optional<DimMap> zf = frame_down(dsq, z, dqf.other), zf2 = frame_down(dsk, z, dkf.other);
  if (!zf || !zf2 || !SameFrame(z->shape(), *zf, *zf2)) return std::nullopt;
  // The chain from z to Y: converts, scalar scales, select(mask, ., 0), unit views.
  double chain = 1;
  const HloInstruction* y = z;
  DimMap yf = *zf;
  for (int guard = 0; guard < 32; ++guard) {
    if (y != z && y->user_count() != 1) return std::nullopt;
    if (IsUnitView(y)) {
      if (y->opcode() == HloOpcode::kConvert && !IsFloat(y->operand(0))) return std::nullopt;
      std::optional<DimMap> om = MapToOperand(*y, yf);
      if (!om) return std::nullopt;
      yf = *om;
      y = y->operand(0);
      continue;
    }
    if (y->opcode() == HloOpcode::kMultiply || y->opcode() == HloOpcode::kDivide) {
      double k = 0;
      int data = -1;
      if (IsScalarConstant(y->operand(1), &k)) data = 0;
      else if (y->opcode() == HloOpcode::kMultiply && IsScalarConstant(y->operand(0), &k)) data = 1;
      if (data < 0) break;
      if (k == 0 || !std::isfinite(k)) return std::nullopt;
      chain *= y->opcode() == HloOpcode::kMultiply ? k : 1.0 / k;
      std::optional<DimMap> om = MapToOperand(*y, yf, data);
      if (!om) return std::nullopt;
      yf = *om;
      y = y->operand(data);
      continue;
    }
    if (y->opcode() == HloOpcode::kSelect) {
      double fill = 1;
      if (!IsScalarConstant(y->operand(2), &fill) || fill != 0) return std::nullopt;
      std::optional<DimMap> mp = MapToOperand(*y, yf, 0), md = MapToOperand(*y, yf, 1);
      if (!mp || !md) return std::nullopt;
      std::optional<MaskForm> mf = MaskOf(y->operand(0), *mp, f.labels, c.q_len, c.kv_len);
      if (!mf) return std::nullopt;
      const bool same = !mf->causal || (c.mask == AttentionMask::kCausal && mf->c == c.causal_offset);
      if (!same) return std::nullopt;  // it would zero gradients the forward kept
      yf = *md;
      y = y->operand(1);
      continue;
    }
    break;
  }
  // dP = dot(dO, v) contracting the head: what the row evaluator accepts as its dP leaf.
  const HloInstruction* g_root = gv.root;
  auto dp_frame = [&](const HloInstruction* d) -> std::optional<DimMap> {
    if (!d->attrs().dot_dimension_numbers) return std::nullopt;
    for (int s = 0; s < 2; ++s) {
      std::optional<DimMap> vf = FrameByView(d->operand(s), f.roots[2], c.v, f.kdim, bx, false, nullptr);
      if (!vf) continue;
      std::optional<DotFrames> pf = PairDot(d, s, *vf, kHead, f.q_xdim);
      if (!pf) continue;
      std::optional<DimMap> gf = FrameByView(d->operand(1 - s), g_root, *d_out, f.q_xdim, bx, false, nullptr);
      if (!gf || !SameFrame(d->operand(1 - s)->shape(), *gf, pf->other)) continue;
      return pf->out;
    }
    return std::nullopt;
  };
  RowEvaluator ev(f, pset, dp_frame);
  std::mt19937_64 rng(0x5eed);
  std::uniform_real_distribution<double> u(-1, 1), pos(0.1, 2.0);
  constexpr int kKeys = 7;
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<double> e(kKeys), dp(kKeys);
    for (int j = 0; j < kKeys; ++j) {
      e[j] = (j + trial) % 3 == 0 ? 0.0 : pos(rng);
      dp[j] = u(rng);
    }
    ev.SetData(e, dp);
    std::optional<RowValue> r = ev.Eval(y, yf);
    if (!r || !r->full || ev.dp_dot() == nullptr) return std::nullopt;
    double rowsum = 0;
    for (int j = 0; j < kKeys; ++j) rowsum += ev.p()[j] * ev.dp()[j];
    for (int j = 0; j < kKeys; ++j) {
      const double want = ev.p()[j] * (ev.dp()[j] - rowsum);
      if (!(std::abs(r->v[j] - want) <= 1e-9 * (1 + std::abs(want)))) return std::nullopt;
    }
  }
  BackwardMatch b;
  b.config = c;
  b.config.backward = true;
  b.config.d_out = *d_out;
  b.config.dq = *dq_view;
  b.config.dk = *dk_view;
  b.config.dv = *dv_view;
  b.config.dq_scale = chain * kfold;
  b.config.dk_scale = chain * qfold;
  b.config.grad_type = gop->shape().element_type();
  b.config.dq_type = dq->shape().element_type();
  b.config.dk_type = dk->shape().element_type();
  b.config.dv_type = dv->shape().element_type();
  b.config.out = AttentionView{};
  b.config.out.batch.assign(c.batch.size(), 0);
  b.roots[0] = f.roots[0];
  b.roots[1] = f.roots[1];
  b.roots[2] = f.roots[2];
  b.roots[3] = g_root;
  b.dots[0] = dq;
  b.dots[1] = dk;
  b.dots[2] = dv;
  b.packed = place.concat;
  return b;
}

StatusOr<bool> RewriteBackward(const BackwardMatch& match, HloComputation& comp) {
  const std::unordered_set<const HloInstruction*> roots(std::begin(match.roots), std::end(match.roots));
  const std::unordered_set<const HloInstruction*> private_roots = {match.roots[3]};
  HloInstruction* const packed[1] = {match.packed};
  std::optional<Members> members = match.packed != nullptr ? CollectMembersOf(packed, roots, private_roots)
                                                           : CollectMembersOf(match.dots, roots, private_roots);
  if (!members) return false;
  // dO must not be computed from q, k or v inside the match (it is an operand).
  FuseSpec spec;
  spec.members = members->members;
  spec.duplicated = members->duplicated;
  spec.kind = FusionKind::kCustom;
  spec.name = "attention_backward";
  if (FusionWouldCreateCycle(spec.members, spec.duplicated)) return false;
  const std::string names[3] = {match.dots[0]->name(), match.dots[1]->name(), match.dots[2]->name()};
  KILN_ASSIGN_OR_RETURN(HloInstruction * fusion, FuseInstructions(spec));
  HloComputation* body = fusion->fused_computation();
  const HloInstruction* root = body->root_instruction();
  HloModule* module = comp.parent();
  body->set_name(UniqueComputationName(*module, "attention_backward"));
  AttentionConfig config = match.config;
  AttentionView* outs[3] = {&config.dq, &config.dk, &config.dv};
  if (match.packed != nullptr) {
    // One result, the concatenate: every view is of it (result leaf 0).
    if (root->shape().IsTuple() || root->opcode() != HloOpcode::kConcatenate)
      return Internal("attention rewriter: the outlined packed backward has root ", root->name(), ", not the concatenate");
    for (AttentionView* o : outs) o->operand = 0;
  } else {
    if (root->opcode() != HloOpcode::kTuple || root->operand_count() != 3)
      return Internal("attention rewriter: the outlined backward has ", root->shape().ToString(false),
                      " outputs, not (dQ, dK, dV)");
    for (int i = 0; i < 3; ++i) {
      outs[i]->operand = -1;
      for (int64_t t = 0; t < 3; ++t)
        if (root->operand(t)->name() == names[i]) outs[i]->operand = t;
      if (outs[i]->operand < 0)
        return Internal("attention rewriter: output ", names[i], " not found in the outlined backward");
    }
  }
  KILN_RETURN_IF_ERROR(
      ReplaceWithCall(comp, fusion, match.roots, kAttentionBackwardCallTarget, "attention_backward", config).status());
  return true;
}

const char* MaskName(AttentionMask m) { return m == AttentionMask::kCausal ? "causal" : "none"; }

nlohmann::ordered_json ViewJson(const AttentionView& v, bool with_operand) {
  nlohmann::ordered_json j;
  if (with_operand) j["operand"] = v.operand;
  j["offset"] = v.offset;
  j["batch"] = v.batch;
  j["row"] = v.row;
  j["element"] = v.element;
  return j;
}

bool ViewFromJson(const nlohmann::json& j, AttentionView& v) {
  if (!j.is_object()) return false;
  auto geti = [&](const char* k, int64_t& out) {
    auto it = j.find(k);
    if (it == j.end()) return true;
    if (!it->is_number_integer()) return false;
    out = it->get<int64_t>();
    return true;
  };
  if (!geti("operand", v.operand) || !geti("offset", v.offset) || !geti("row", v.row) || !geti("element", v.element))
    return false;
  auto b = j.find("batch");
  if (b == j.end() || !b->is_array()) return false;
  v.batch.clear();
  for (const auto& e : *b) {
    if (!e.is_number_integer()) return false;
    v.batch.push_back(e.get<int64_t>());
  }
  return true;
}

// ---- statistics for the backward (Note [Attention statistics]) ----

// What AddStatistics needs of a forward match, taken before the match's nodes are outlined.
struct StatsSite {
  bool ok = false;
  std::string x_name;  // the scores (the softmax's input) by name, in the outlined computation
  int64_t kdim = -1;
  AttentionView lse;   // over x's dims without the key dim, row-major
};

StatsSite StatsSiteOf(const Match& f) {
  StatsSite site;
  if (f.grouped || f.x == nullptr) return site;
  const Shape& xs = f.x->shape();
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < xs.rank(); ++d)
    if (d != f.kdim) dims.push_back(xs.dimensions(d));
  const std::vector<int64_t> st = RowMajorStrides(Shape::Array(PrimitiveType::kF32, dims));
  site.lse.batch.assign(f.config.batch.size(), 0);
  site.lse.element = 1;
  bool row = false;
  std::vector<bool> have(f.config.batch.size(), false);
  for (int64_t d = 0, i = 0; d < xs.rank(); ++d) {
    if (d == f.kdim) continue;
    const int64_t stride = st[i++];
    if (xs.dimensions(d) == 1) continue;
    const Label& l = f.labels[d];
    if (l.role == Role::kRow) {
      site.lse.row = stride;
      row = true;
    } else if (l.role == Role::kBatch && l.batch < static_cast<int64_t>(have.size())) {
      site.lse.batch[l.batch] = stride;
      have[l.batch] = true;
    } else {
      return site;
    }
  }
  for (size_t l = 0; l < have.size(); ++l)
    if (!have[l] && f.config.batch[l] != 1) return site;
  if (!row && f.config.q_len != 1) return site;
  site.x_name = f.x->name();
  site.kdim = f.kdim;
  site.ok = true;
  return site;
}

bool SameProblem(const AttentionConfig& f, const AttentionConfig& b) {
  return f.batch == b.batch && f.q_len == b.q_len && f.kv_len == b.kv_len && f.head_dim == b.head_dim &&
         f.v_head_dim == b.v_head_dim && f.scale == b.scale && f.mask == b.mask && f.causal_offset == b.causal_offset &&
         f.input_type == b.input_type && f.score_type == b.score_type && f.softmax_type == b.softmax_type &&
         f.probs_type == b.probs_type && f.output_type == b.input_type;
}

// Operand view `a` of call `ca` and `b` of `cb` read the same elements of the same value.
bool SameView(const HloInstruction& ca, const AttentionView& a, const HloInstruction& cb, const AttentionView& b) {
  return ca.operand(a.operand) == cb.operand(b.operand) && a.offset == b.offset && a.batch == b.batch &&
         a.row == b.row && a.element == b.element;
}

// Whether `a` reads `b` (through operands or control dependencies, transitively).
bool Reads(const HloInstruction* a, const HloInstruction* b) {
  std::vector<const HloInstruction*> stack(a->operands().begin(), a->operands().end());
  stack.insert(stack.end(), a->control_predecessors().begin(), a->control_predecessors().end());
  std::unordered_set<const HloInstruction*> seen;
  while (!stack.empty()) {
    const HloInstruction* n = stack.back();
    stack.pop_back();
    if (n == b) return true;
    if (!seen.insert(n).second) continue;
    stack.insert(stack.end(), n->operands().begin(), n->operands().end());
    stack.insert(stack.end(), n->control_predecessors().begin(), n->control_predecessors().end());
  }
  return false;
}

HloComputation* ScalarF32Computation(HloModule& module, HloOpcode op, std::string_view base) {
  auto c = std::make_unique<HloComputation>(UniqueComputationName(module, base));
  const Shape f32 = Shape::Scalar(PrimitiveType::kF32);
  auto a = std::make_unique<HloInstruction>(HloOpcode::kParameter, f32, "a");
  a->set_parameter_number(0);
  auto b = std::make_unique<HloInstruction>(HloOpcode::kParameter, f32, "b");
  b->set_parameter_number(1);
  HloInstruction* pa = c->AddInstruction(std::move(a));
  HloInstruction* pb = c->AddInstruction(std::move(b));
  auto r = std::make_unique<HloInstruction>(op, f32, "r");
  r->AppendOperand(pa);
  r->AppendOperand(pb);
  c->set_root_instruction(c->AddInstruction(std::move(r)));
  return module.AddComputation(std::move(c));
}

// reduce(x, init) over `dim` with `reducer`.
HloInstruction* RowReduce(HloEditor& e, HloInstruction* x, int64_t dim, HloComputation* reducer, double init,
                          const Shape& shape) {
  auto r = std::make_unique<HloInstruction>(HloOpcode::kReduce, shape);
  r->attrs().dimensions = {dim};
  r->AppendOperand(x);
  r->AppendOperand(e.ScalarConstant(PrimitiveType::kF32, init, x));
  r->AppendCalledComputation(reducer);
  return e.Add(std::move(r), x);
}

// Gives the forward call `fwd` (just rewritten from a match whose StatsSite is `site`) its
// statistics and hands them, with its output, to the backward call of the same problem
// (Note [Attention statistics]). Nothing changes where there is no such backward or the backend
// does not take the pair with statistics.
Status AddStatistics(HloComputation& comp, HloInstruction* fwd, const StatsSite& site,
                     const AttentionRewriterOptions& options) {
  if (!site.ok) return OkStatus();
  KILN_ASSIGN_OR_RETURN(AttentionConfig fc, AttentionConfigOf(*fwd));
  if (fc.stats || fwd->shape().IsTuple()) return OkStatus();
  HloInstruction* bwd = nullptr;
  AttentionConfig bc;
  for (HloInstruction* i : comp.instructions()) {
    if (!IsAttentionBackwardCall(*i)) continue;
    StatusOr<AttentionConfig> c = AttentionConfigOf(*i);
    if (!c.ok() || c->stats || !SameProblem(fc, *c)) continue;
    if (!SameView(*fwd, fc.q, *i, c->q) || !SameView(*fwd, fc.k, *i, c->k) || !SameView(*fwd, fc.v, *i, c->v)) continue;
    if (Reads(fwd, i)) continue;
    bwd = i;
    bc = *c;
    break;
  }
  if (bwd == nullptr) return OkStatus();
  HloComputation* body = fwd->called_computations()[0];
  HloComputation* bbody = bwd->called_computations()[0];
  HloInstruction* x = body->GetInstructionWithName(site.x_name);
  if (x == nullptr || bbody->num_parameters() != bwd->operand_count()) return OkStatus();
  // The configs with statistics, checked with the backend before anything changes.
  fc.stats = true;
  fc.lse = site.lse;
  fc.lse.operand = 1;
  bc.stats = true;
  bc.o = fc.out;
  bc.o.operand = bwd->operand_count();
  bc.lse = site.lse;
  bc.lse.operand = bwd->operand_count() + 1;
  if ((options.supported && !options.supported(fc)) || (options.supported_backward && !options.supported_backward(bc)))
    return OkStatus();
  // lse = m + log(sum exp(x - m)), m = max(x), over the key dim in f32.
  HloModule* module = comp.parent();
  HloEditor e(body);
  HloInstruction* xf = x;
  if (x->shape().element_type() != PrimitiveType::kF32) {
    KILN_ASSIGN_OR_RETURN(xf, e.Convert(x, PrimitiveType::kF32, nullptr, x));
  }
  std::vector<int64_t> dims, kept;
  for (int64_t d = 0; d < xf->shape().rank(); ++d)
    if (d != site.kdim) {
      dims.push_back(xf->shape().dimensions(d));
      kept.push_back(d);
    }
  const Shape rs = ArrayShapeLike(PrimitiveType::kF32, dims, xf->shape());
  HloInstruction* m = RowReduce(e, xf, site.kdim, ScalarF32Computation(*module, HloOpcode::kMaximum, "lse_max"),
                                -INFINITY, rs);
  KILN_ASSIGN_OR_RETURN(HloInstruction * bm, e.Broadcast(m, xf->shape(), kept, x));
  KILN_ASSIGN_OR_RETURN(HloInstruction * t, e.Binary(HloOpcode::kSubtract, xf, bm, nullptr, x));
  KILN_ASSIGN_OR_RETURN(HloInstruction * ex, e.Unary(HloOpcode::kExp, t, nullptr, x));
  HloInstruction* sum = RowReduce(e, ex, site.kdim, ScalarF32Computation(*module, HloOpcode::kAdd, "lse_add"), 0.0, rs);
  KILN_ASSIGN_OR_RETURN(HloInstruction * lg, e.Unary(HloOpcode::kLog, sum, nullptr, x));
  KILN_ASSIGN_OR_RETURN(HloInstruction * lse, e.Binary(HloOpcode::kAdd, m, lg, nullptr, x));
  HloInstruction* const elems[2] = {body->root_instruction(), lse};
  body->set_root_instruction(e.Tuple(elems, body->root_instruction()));
  // The forward call again, now returning (out, lse).
  auto call = std::make_unique<HloInstruction>(HloOpcode::kCustomCall,
                                               Shape::Tuple({fwd->shape(), lse->shape()}), "");
  call->attrs().custom_call_target = std::string(kAttentionCallTarget);
  for (HloInstruction* o : fwd->operands()) call->AppendOperand(o);
  call->AppendCalledComputation(body);
  call->backend_config() = BackendConfig{fc.ToJson(), true};
  HloEditor ce(&comp);
  HloInstruction* added = ce.Add(std::move(call), fwd);
  const std::string name = fwd->name();
  KILN_ASSIGN_OR_RETURN(HloInstruction * out, ce.GetTupleElement(added, 0, fwd));
  KILN_ASSIGN_OR_RETURN(HloInstruction * stats, ce.GetTupleElement(added, 1, fwd));
  fwd->ReplaceAllUsesWith(out);
  KILN_RETURN_IF_ERROR(comp.RemoveInstruction(fwd));
  added->set_name(name);
  // The backward reads them, its computation ignoring both.
  const Shape shapes[2] = {out->shape(), stats->shape()};
  const char* names[2] = {"forward_out", "forward_lse"};
  for (int i = 0; i < 2; ++i) {
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, shapes[i], names[i]);
    p->set_parameter_number(bbody->num_parameters());
    bbody->AddInstruction(std::move(p));
  }
  bwd->AppendOperand(out);
  bwd->AppendOperand(stats);
  bwd->backend_config() = BackendConfig{bc.ToJson(), true};
  return OkStatus();
}

}  // namespace

std::string AttentionConfig::ToJson() const {
  nlohmann::ordered_json j;
  j["batch"] = batch;
  j["q_len"] = q_len;
  j["kv_len"] = kv_len;
  j["head_dim"] = head_dim;
  j["v_head_dim"] = v_head_dim;
  j["scale"] = scale;
  j["mask"] = MaskName(mask);
  j["causal_offset"] = causal_offset;
  j["input_type"] = std::string(PrimitiveTypeName(input_type));
  j["score_type"] = std::string(PrimitiveTypeName(score_type));
  j["softmax_type"] = std::string(PrimitiveTypeName(softmax_type));
  j["probs_type"] = std::string(PrimitiveTypeName(probs_type));
  j["output_type"] = std::string(PrimitiveTypeName(output_type));
  j["q"] = ViewJson(q, true);
  j["k"] = ViewJson(k, true);
  j["v"] = ViewJson(v, true);
  j["out"] = ViewJson(out, false);
  if (backward) {
    nlohmann::ordered_json b;
    b["d_out"] = ViewJson(d_out, true);
    b["dq"] = ViewJson(dq, true);
    b["dk"] = ViewJson(dk, true);
    b["dv"] = ViewJson(dv, true);
    b["dq_scale"] = dq_scale;
    b["dk_scale"] = dk_scale;
    b["grad_type"] = std::string(PrimitiveTypeName(grad_type));
    b["dq_type"] = std::string(PrimitiveTypeName(dq_type));
    b["dk_type"] = std::string(PrimitiveTypeName(dk_type));
    b["dv_type"] = std::string(PrimitiveTypeName(dv_type));
    j["backward"] = b;
  }
  if (has_bias) {
    nlohmann::ordered_json b;
    b["view"] = ViewJson(bias, true);
    b["type"] = std::string(PrimitiveTypeName(bias_type));
    b["scale"] = bias_scale;
    j["bias"] = b;
  }
  if (has_mask) {
    nlohmann::ordered_json mk;
    mk["view"] = ViewJson(mask_view, true);
    // JSON has no infinities: a -inf fill is written as null.
    if (std::isfinite(mask_fill)) mk["fill"] = mask_fill;
    else mk["fill"] = nullptr;
    j["data_mask"] = mk;
  }
  if (stats) {
    nlohmann::ordered_json st;
    st["lse"] = ViewJson(lse, true);
    if (backward) st["o"] = ViewJson(o, true);
    j["stats"] = st;
  }
  nlohmann::ordered_json top;
  top["attention"] = j;
  return top.dump();
}

StatusOr<AttentionConfig> AttentionConfig::FromJson(std::string_view text) {
  nlohmann::json top = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (top.is_discarded() || !top.is_object() || !top.contains("attention") || !top["attention"].is_object())
    return InvalidArgument("attention config is not a JSON object with an \"attention\" field: ", text);
  const nlohmann::json& j = top["attention"];
  AttentionConfig c;
  auto geti = [&](const char* k, int64_t& out) -> Status {
    auto it = j.find(k);
    if (it == j.end() || !it->is_number_integer()) return InvalidArgument("attention config: missing integer '", k, "'");
    out = it->get<int64_t>();
    return OkStatus();
  };
  auto gett = [&](const char* k, PrimitiveType& out) -> Status {
    auto it = j.find(k);
    if (it == j.end() || !it->is_string()) return InvalidArgument("attention config: missing type '", k, "'");
    std::optional<PrimitiveType> t = ParsePrimitiveType(it->get<std::string>());
    if (!t) return InvalidArgument("attention config: unknown type '", it->get<std::string>(), "'");
    out = *t;
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(geti("q_len", c.q_len));
  KILN_RETURN_IF_ERROR(geti("kv_len", c.kv_len));
  KILN_RETURN_IF_ERROR(geti("head_dim", c.head_dim));
  KILN_RETURN_IF_ERROR(geti("v_head_dim", c.v_head_dim));
  KILN_RETURN_IF_ERROR(geti("causal_offset", c.causal_offset));
  auto b = j.find("batch");
  if (b == j.end() || !b->is_array()) return InvalidArgument("attention config: missing 'batch'");
  for (const auto& e : *b) {
    if (!e.is_number_integer()) return InvalidArgument("attention config: 'batch' must hold integers");
    c.batch.push_back(e.get<int64_t>());
  }
  auto s = j.find("scale");
  if (s == j.end() || !s->is_number()) return InvalidArgument("attention config: missing 'scale'");
  c.scale = s->get<double>();
  auto mk = j.find("mask");
  if (mk == j.end() || !mk->is_string()) return InvalidArgument("attention config: missing 'mask'");
  if (*mk == "causal") c.mask = AttentionMask::kCausal;
  else if (*mk == "none") c.mask = AttentionMask::kNone;
  else return InvalidArgument("attention config: unknown mask '", mk->get<std::string>(), "'");
  KILN_RETURN_IF_ERROR(gett("input_type", c.input_type));
  KILN_RETURN_IF_ERROR(gett("score_type", c.score_type));
  KILN_RETURN_IF_ERROR(gett("softmax_type", c.softmax_type));
  KILN_RETURN_IF_ERROR(gett("probs_type", c.probs_type));
  KILN_RETURN_IF_ERROR(gett("output_type", c.output_type));
  struct V {
    const char* name;
    AttentionView* view;
  };
  auto views = [&](const nlohmann::json& o, std::initializer_list<V> list) -> Status {
    for (V v : list) {
      auto it = o.find(v.name);
      if (it == o.end() || !ViewFromJson(*it, *v.view))
        return InvalidArgument("attention config: malformed view '", v.name, "'");
      if (v.view->batch.size() != c.batch.size())
        return InvalidArgument("attention config: view '", v.name, "' has ", v.view->batch.size(),
                               " batch strides for ", c.batch.size(), " batch dimensions");
    }
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(views(j, {V{"q", &c.q}, V{"k", &c.k}, V{"v", &c.v}, V{"out", &c.out}}));
  auto bw = j.find("backward");
  if (bw != j.end()) {
    if (!bw->is_object()) return InvalidArgument("attention config: 'backward' is not an object");
    c.backward = true;
    KILN_RETURN_IF_ERROR(views(*bw, {V{"d_out", &c.d_out}, V{"dq", &c.dq}, V{"dk", &c.dk}, V{"dv", &c.dv}}));
    for (auto [name, out] : {std::pair<const char*, double*>{"dq_scale", &c.dq_scale}, {"dk_scale", &c.dk_scale}}) {
      auto it = bw->find(name);
      if (it == bw->end() || !it->is_number()) return InvalidArgument("attention config: missing '", name, "'");
      *out = it->get<double>();
    }
    for (auto [name, out] : {std::pair<const char*, PrimitiveType*>{"grad_type", &c.grad_type},
                             {"dq_type", &c.dq_type}, {"dk_type", &c.dk_type}, {"dv_type", &c.dv_type}}) {
      auto it = bw->find(name);
      if (it == bw->end() || !it->is_string()) return InvalidArgument("attention config: missing type '", name, "'");
      std::optional<PrimitiveType> t = ParsePrimitiveType(it->get<std::string>());
      if (!t) return InvalidArgument("attention config: unknown type '", it->get<std::string>(), "'");
      *out = *t;
    }
  }
  auto bi = j.find("bias");
  if (bi != j.end()) {
    if (!bi->is_object()) return InvalidArgument("attention config: 'bias' must be an object");
    c.has_bias = true;
    KILN_RETURN_IF_ERROR(views(*bi, {V{"view", &c.bias}}));
    auto t = bi->find("type");
    std::optional<PrimitiveType> bt;
    if (t != bi->end() && t->is_string()) bt = ParsePrimitiveType(t->get<std::string>());
    if (!bt || !IsFloatingPointType(*bt)) return InvalidArgument("attention config: bias needs a floating-point 'type'");
    c.bias_type = *bt;
    auto sc = bi->find("scale");
    if (sc == bi->end() || !sc->is_number()) return InvalidArgument("attention config: bias needs a 'scale'");
    c.bias_scale = sc->get<double>();
  }
  auto dm = j.find("data_mask");
  if (dm != j.end()) {
    if (!dm->is_object()) return InvalidArgument("attention config: 'data_mask' must be an object");
    c.has_mask = true;
    KILN_RETURN_IF_ERROR(views(*dm, {V{"view", &c.mask_view}}));
    auto f = dm->find("fill");
    if (f == dm->end() || !(f->is_number() || f->is_null()))
      return InvalidArgument("attention config: data_mask needs a 'fill' (a number, or null for -inf)");
    c.mask_fill = f->is_null() ? -INFINITY : f->get<double>();
  }
  auto st = j.find("stats");
  if (st != j.end()) {
    if (!st->is_object()) return InvalidArgument("attention config: 'stats' must be an object");
    c.stats = true;
    KILN_RETURN_IF_ERROR(views(*st, {V{"lse", &c.lse}}));
    if (c.backward) KILN_RETURN_IF_ERROR(views(*st, {V{"o", &c.o}}));
  }
  return c;
}

std::string AttentionConfig::ToString() const {
  std::string b;
  for (size_t i = 0; i < batch.size(); ++i) b += StrCat(i ? "x" : "", batch[i]);
  return StrCat(PrimitiveTypeName(input_type), " [", b, "] q ", q_len, " kv ", kv_len, " d ", head_dim,
                v_head_dim != head_dim ? StrCat("/", v_head_dim) : "", " ",
                mask == AttentionMask::kCausal ? StrCat("causal(", causal_offset, ")") : std::string("no mask"),
                has_mask ? " data mask" : "", has_bias ? StrCat(" ", PrimitiveTypeName(bias_type), " bias") : "",
                " scale ", scale, " softmax ", PrimitiveTypeName(softmax_type), backward ? " backward" : "",
                stats ? " stats" : "",
                backward && dq.operand == dk.operand && dk.operand == dv.operand ? " packed" : "");
}

StatusOr<Literal> EvaluateAttention(const AttentionConfig& c, std::span<const Literal* const> operands,
                                    const Shape& result) {
  std::vector<const AttentionView*> operand_views = {&c.q, &c.k, &c.v};
  if (c.has_bias) operand_views.push_back(&c.bias);
  if (c.has_mask) operand_views.push_back(&c.mask_view);
  for (const AttentionView* v : operand_views)
    if (v->operand < 0 || v->operand >= static_cast<int64_t>(operands.size()))
      return InvalidArgument("attention: view of operand ", v->operand, " of ", operands.size());
  // With statistics (Note [Attention statistics]): (out, lse).
  if (c.stats != result.IsTuple() || (c.stats && result.tuple_shapes_size() != 2))
    return InvalidArgument("attention: result ", result.ToString(false), c.stats ? " is not (out, lse)" : " is a tuple");
  Literal out(c.stats ? result.tuple_shapes(0) : result);
  for (int64_t i = 0; i < out.element_count(); ++i) out.SetFromDouble(i, NAN);
  Literal lse(c.stats ? result.tuple_shapes(1) : Shape::Scalar(PrimitiveType::kF32));
  for (int64_t i = 0; i < lse.element_count(); ++i) lse.SetFromDouble(i, NAN);
  const int64_t nb = static_cast<int64_t>(c.batch.size());
  int64_t batches = 1;
  for (int64_t b : c.batch) batches *= b;
  auto element = [&](const AttentionView& v, const std::vector<int64_t>& bi, int64_t row, int64_t e) {
    int64_t at = v.offset + row * v.row + e * v.element;
    for (int64_t i = 0; i < nb; ++i) at += bi[i] * v.batch[i];
    return at;
  };
  auto check = [&](const Literal& l, int64_t at) -> Status {
    if (at < 0 || at >= l.element_count()) return InvalidArgument("attention: a view reaches element ", at, " of ", l.element_count());
    return OkStatus();
  };
  std::vector<int64_t> bi(nb, 0);
  std::vector<double> s(c.kv_len);
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rest = b;
    for (int64_t i = nb - 1; i >= 0; --i) {
      bi[i] = rest % c.batch[i];
      rest /= c.batch[i];
    }
    for (int64_t i = 0; i < c.q_len; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < c.kv_len; ++j) {
        double acc = 0;
        for (int64_t e = 0; e < c.head_dim; ++e) {
          const int64_t qa = element(c.q, bi, i, e), ka = element(c.k, bi, j, e);
          KILN_RETURN_IF_ERROR(check(*operands[c.q.operand], qa));
          KILN_RETURN_IF_ERROR(check(*operands[c.k.operand], ka));
          acc += operands[c.q.operand]->GetAsDouble(qa) * operands[c.k.operand]->GetAsDouble(ka);
        }
        bool kept = c.mask != AttentionMask::kCausal || j <= i + c.causal_offset;
        double x = acc * c.scale;
        if (c.has_bias) {
          const int64_t ba = element(c.bias, bi, i, j);
          KILN_RETURN_IF_ERROR(check(*operands[c.bias.operand], ba));
          x += c.bias_scale * operands[c.bias.operand]->GetAsDouble(ba);
        }
        if (c.has_mask) {
          // Note [Attention bias and masks]: a dropped score is the fill, causal drops too.
          const int64_t ma = element(c.mask_view, bi, i, j);
          KILN_RETURN_IF_ERROR(check(*operands[c.mask_view.operand], ma));
          kept = kept && operands[c.mask_view.operand]->GetAsDouble(ma) != 0;
          s[j] = kept ? x : c.mask_fill;
        } else {
          s[j] = kept ? x : -INFINITY;
        }
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < c.kv_len; ++j) sum += (s[j] = std::exp(s[j] - mx));
      if (c.stats) {
        const int64_t la = element(c.lse, bi, i, 0);
        KILN_RETURN_IF_ERROR(check(lse, la));
        lse.SetFromDouble(la, mx + std::log(sum));
      }
      for (int64_t e = 0; e < c.v_head_dim; ++e) {
        double o = 0;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          const int64_t va = element(c.v, bi, j, e);
          KILN_RETURN_IF_ERROR(check(*operands[c.v.operand], va));
          o += s[j] / sum * operands[c.v.operand]->GetAsDouble(va);
        }
        const int64_t oa = element(c.out, bi, i, e);
        KILN_RETURN_IF_ERROR(check(out, oa));
        out.SetFromDouble(oa, o);
      }
    }
  }
  if (!c.stats) return out;
  std::vector<Literal> both;
  both.push_back(std::move(out));
  both.push_back(std::move(lse));
  return Literal::MakeTuple(std::move(both));
}

StatusOr<Literal> EvaluateAttentionBackward(const AttentionConfig& c, std::span<const Literal* const> operands,
                                            const Shape& result) {
  if (!c.backward) return InvalidArgument("attention: not a backward config");
  if (c.has_bias || c.has_mask) return Unimplemented("attention backward with a bias or a data mask");
  for (const AttentionView* v : {&c.q, &c.k, &c.v, &c.d_out})
    if (v->operand < 0 || v->operand >= static_cast<int64_t>(operands.size()))
      return InvalidArgument("attention backward: view of operand ", v->operand, " of ", operands.size());
  // A tuple of (dQ, dK, dV) in some order, or one array holding all three (packed).
  const int64_t leaves = result.IsTuple() ? result.tuple_shapes_size() : 1;
  if (result.IsTuple() && leaves != 3)
    return InvalidArgument("attention backward: result ", result.ToString(false), " is not a 3-tuple or an array");
  std::vector<Literal> outs;
  for (const AttentionView* v : {&c.dq, &c.dk, &c.dv})
    if (v->operand < 0 || v->operand >= leaves) return InvalidArgument("attention backward: result index ", v->operand);
  for (int64_t i = 0; i < leaves; ++i) {
    outs.emplace_back(result.IsTuple() ? result.tuple_shapes(i) : result);
    for (int64_t j = 0; j < outs.back().element_count(); ++j) outs.back().SetFromDouble(j, NAN);
  }
  const int64_t nb = static_cast<int64_t>(c.batch.size());
  int64_t batches = 1;
  for (int64_t b : c.batch) batches *= b;
  std::vector<int64_t> bi(nb, 0);
  auto at = [&](const AttentionView& v, int64_t row, int64_t e) {
    int64_t a = v.offset + row * v.row + e * v.element;
    for (int64_t i = 0; i < nb; ++i) a += bi[i] * v.batch[i];
    return a;
  };
  Status bad = OkStatus();
  auto get = [&](const AttentionView& v, int64_t row, int64_t e) {
    const Literal& l = *operands[v.operand];
    const int64_t a = at(v, row, e);
    if (a < 0 || a >= l.element_count()) {
      bad = InvalidArgument("attention backward: a view reaches element ", a, " of ", l.element_count());
      return 0.0;
    }
    return l.GetAsDouble(a);
  };
  const int64_t Q = c.q_len, K = c.kv_len, D = c.head_dim, DV = c.v_head_dim;
  std::vector<double> p(Q * K), dp(Q * K), dq(Q * D), dk(K * D), dv(K * DV);
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rest = b;
    for (int64_t i = nb - 1; i >= 0; --i) {
      bi[i] = rest % c.batch[i];
      rest /= c.batch[i];
    }
    for (int64_t i = 0; i < Q; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < K; ++j) {
        double acc = 0;
        for (int64_t e = 0; e < D; ++e) acc += get(c.q, i, e) * get(c.k, j, e);
        const bool kept = c.mask != AttentionMask::kCausal || j <= i + c.causal_offset;
        p[i * K + j] = kept ? acc * c.scale : -INFINITY;
        mx = std::max(mx, p[i * K + j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < K; ++j) sum += (p[i * K + j] = std::exp(p[i * K + j] - mx));
      double rowsum = 0;
      for (int64_t j = 0; j < K; ++j) {
        p[i * K + j] /= sum;
        double acc = 0;
        for (int64_t e = 0; e < DV; ++e) acc += get(c.d_out, i, e) * get(c.v, j, e);
        dp[i * K + j] = acc;
        rowsum += p[i * K + j] * acc;
      }
      for (int64_t j = 0; j < K; ++j) dp[i * K + j] = p[i * K + j] * (dp[i * K + j] - rowsum);  // dS
    }
    KILN_RETURN_IF_ERROR(bad);
    std::fill(dq.begin(), dq.end(), 0.0);
    std::fill(dk.begin(), dk.end(), 0.0);
    std::fill(dv.begin(), dv.end(), 0.0);
    for (int64_t i = 0; i < Q; ++i)
      for (int64_t j = 0; j < K; ++j) {
        const double ds = dp[i * K + j], pij = p[i * K + j];
        for (int64_t e = 0; e < D; ++e) {
          dq[i * D + e] += ds * get(c.k, j, e);
          dk[j * D + e] += ds * get(c.q, i, e);
        }
        for (int64_t e = 0; e < DV; ++e) dv[j * DV + e] += pij * get(c.d_out, i, e);
      }
    KILN_RETURN_IF_ERROR(bad);
    auto put = [&](const AttentionView& v, int64_t rows, int64_t cols, const std::vector<double>& x, double s) -> Status {
      Literal& l = outs[v.operand];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t e = 0; e < cols; ++e) {
          const int64_t a = at(v, r, e);
          if (a < 0 || a >= l.element_count())
            return InvalidArgument("attention backward: a result view reaches element ", a, " of ", l.element_count());
          l.SetFromDouble(a, s * x[r * cols + e]);
        }
      return OkStatus();
    };
    KILN_RETURN_IF_ERROR(put(c.dq, Q, D, dq, c.dq_scale));
    KILN_RETURN_IF_ERROR(put(c.dk, K, D, dk, c.dk_scale));
    KILN_RETURN_IF_ERROR(put(c.dv, K, DV, dv, 1.0));
  }
  if (!result.IsTuple()) return std::move(outs[0]);
  return Literal::MakeTuple(std::move(outs));
}

bool IsAttentionCall(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kCustomCall && instr.attrs().custom_call_target == kAttentionCallTarget;
}

bool IsAttentionBackwardCall(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kCustomCall && instr.attrs().custom_call_target == kAttentionBackwardCallTarget;
}

StatusOr<AttentionConfig> AttentionConfigOf(const HloInstruction& call) {
  if (!IsAttentionCall(call) && !IsAttentionBackwardCall(call))
    return InvalidArgument("%", call.name(), " is not an attention call");
  KILN_ASSIGN_OR_RETURN(AttentionConfig c, AttentionConfig::FromJson(call.backend_config().text));
  if (c.backward != IsAttentionBackwardCall(call))
    return InvalidArgument("%", call.name(), ": a ", c.backward ? "backward" : "forward", " config on a ",
                           call.attrs().custom_call_target, " call");
  return c;
}

std::unordered_set<const HloComputation*> AttentionBodies(const HloModule& module) {
  std::unordered_set<const HloComputation*> out;
  for (const HloComputation* c : module.computations())
    for (const HloInstruction* i : c->instructions())
      if (IsAttentionCall(*i) || IsAttentionBackwardCall(*i))
        for (const HloComputation* b : i->called_computations()) out.insert(b);
  return out;
}

StatusOr<bool> AttentionRewriter::Run(HloModule& module) {
  bool changed = false;
  const std::unordered_set<const HloComputation*> bodies = AttentionBodies(module);
  for (HloComputation* comp : module.computations()) {
    if (bodies.count(comp)) continue;
    bool again = true;
    while (again) {
      again = false;
      for (HloInstruction* dot : comp->MakeInstructionPostOrder()) {
        if (dot->opcode() != HloOpcode::kDot || !dot->attrs().dot_dimension_numbers) continue;
        std::optional<Match> match;
        for (int side = 0; side < 2 && !match; ++side)
          for (int row = 0; row < 2 && !match; ++row) match = MatchAt(dot, side, row);
        if (!match) {
          if (!options_.backward) continue;
          std::optional<BackwardMatch> bm = MatchBackward(*comp, dot);
          if (!bm || (options_.supported_backward && !options_.supported_backward(bm->config))) continue;
          KILN_ASSIGN_OR_RETURN(bool did, RewriteBackward(*bm, *comp));
          if (did) {
            changed = again = true;
            break;
          }
          continue;
        }
        if (options_.supported && !options_.supported(match->config)) continue;
        const StatsSite site = options_.backward ? StatsSiteOf(*match) : StatsSite{};
        KILN_ASSIGN_OR_RETURN(HloInstruction * call, Rewrite(*match, *comp));
        if (call != nullptr) {
          if (options_.backward) KILN_RETURN_IF_ERROR(AddStatistics(*comp, call, site, options_));
          changed = again = true;
          break;  // the post order is stale
        }
      }
    }
  }
  return changed;
}

}  // namespace kiln
