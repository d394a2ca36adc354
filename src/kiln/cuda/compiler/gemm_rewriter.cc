#include "kiln/cuda/compiler/gemm_rewriter.h"

#include <array>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/epilogue_matching.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/attention_rewriter.h"
#include "kiln/passes/dot_canonicalizer.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/hlo_editor.h"

namespace kiln::cuda {

bool GemmTypesSupported(PrimitiveType lhs, PrimitiveType rhs, PrimitiveType out) {
  using P = PrimitiveType;
  if (lhs != rhs) return false;
  switch (lhs) {
    case P::kF32: return out == P::kF32;
    case P::kBF16: return out == P::kBF16 || out == P::kF32;
    case P::kF16: return out == P::kF16 || out == P::kF32;
    case P::kF64: return out == P::kF64;
    case P::kC64: return out == P::kC64;
    case P::kC128: return out == P::kC128;
    case P::kS8: return out == P::kS32;  // cuBLASLt's s32 accumulation (no epilogue)
    default: return false;
  }
}

namespace {

using match::DependsOn;
using match::EpilogueType;
using match::IsByteView;
using match::RowMajor;
using match::ScalarConstantValue;
using match::StripViews;

// A window of another array chosen at run time (a dynamic-slice, through views): the step's
// slice of a scan's stacked input. As a GEMM's C operand it would need a kernel of its own to
// exist as a buffer; left to the add, the consumer's kernel reads it where it lies.
bool IsDynamicWindow(HloInstruction* v) { return StripViews(v)->opcode() == HloOpcode::kDynamicSlice; }

// Whether a value of type `t` converts exactly into `out`, a floating-point GEMM type.
bool WidensTo(PrimitiveType t, PrimitiveType out) {
  using P = PrimitiveType;
  if (out != P::kF32 && out != P::kF64) return false;
  switch (t) {
    case P::kF16: case P::kBF16: case P::kF32: return true;
    case P::kF64: return out == P::kF64;
    default: return false;
  }
}

// Splits `dims` (all > 1) into three consecutive groups with products a, b, c; returns the
// group sizes or nullopt.
std::optional<std::array<size_t, 3>> GroupDims(const std::vector<int64_t>& dims, int64_t a, int64_t b,
                                               int64_t c) {
  std::array<int64_t, 3> target = {a, b, c};
  std::array<size_t, 3> count = {0, 0, 0};
  size_t i = 0;
  for (int g = 0; g < 3; ++g) {
    int64_t p = 1;
    while (p < target[g] && i < dims.size()) {
      p *= dims[i++];
      ++count[g];
    }
    if (p != target[g]) return std::nullopt;
  }
  if (i != dims.size()) return std::nullopt;
  return count;
}

struct Storage {
  HloInstruction* buffer = nullptr;
  bool transposed = false;
};

// The buffer a canonical operand [B, rows, cols] is read from (see the header).
Storage FoldOperand(HloInstruction* op, int64_t batch, int64_t rows, int64_t cols, bool fold) {
  Storage s{op, false};
  if (!fold) return s;
  HloInstruction* y = StripViews(op);
  if (y->opcode() != HloOpcode::kTranspose) {
    if (y->shape().IsArray() && RowMajor(y->shape())) s.buffer = y;
    return s;
  }
  HloInstruction* z = y->operand(0);
  if (!RowMajor(y->shape()) || !RowMajor(z->shape())) return s;
  // Non-unit dimensions of y, and for each the non-unit position in z it comes from.
  const std::vector<int64_t>& perm = y->attrs().dimensions;
  std::vector<int64_t> z_rank(z->shape().rank(), -1);
  int64_t r = 0;
  for (int64_t d = 0; d < z->shape().rank(); ++d)
    if (z->shape().dimensions(d) != 1) z_rank[d] = r++;
  std::vector<int64_t> dims, from;
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t d = perm[i];
    if (z->shape().dimensions(d) == 1) continue;
    dims.push_back(z->shape().dimensions(d));
    from.push_back(z_rank[d]);
  }
  std::optional<std::array<size_t, 3>> groups = GroupDims(dims, batch, rows, cols);
  if (!groups) return s;
  const size_t nb = (*groups)[0], nr = (*groups)[1], nc = (*groups)[2];
  auto is_identity = [&](const std::vector<size_t>& order) {
    for (size_t i = 0; i < order.size(); ++i)
      if (from[order[i]] != static_cast<int64_t>(i)) return false;
    return true;
  };
  std::vector<size_t> straight, swapped;
  for (size_t i = 0; i < nb; ++i) straight.push_back(i), swapped.push_back(i);
  for (size_t i = 0; i < nr; ++i) straight.push_back(nb + i);
  for (size_t i = 0; i < nc; ++i) straight.push_back(nb + nr + i), swapped.push_back(nb + nr + i);
  for (size_t i = 0; i < nr; ++i) swapped.push_back(nb + i);
  if (is_identity(straight)) return {z, false};
  if (is_identity(swapped)) return {z, true};
  return s;
}

double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// The sink of the GELU region rooted at `v` (see the header), or nullptr.
HloInstruction* MatchGelu(HloInstruction* v) {
  constexpr size_t kMaxRegion = 16;
  std::vector<HloInstruction*> region;  // topological (BFS from v, added once all operands known)
  std::unordered_set<const HloInstruction*> in_region;
  auto allowed = [&](const HloInstruction* u) {
    switch (u->opcode()) {
      case HloOpcode::kMultiply: case HloOpcode::kAdd: case HloOpcode::kSubtract:
      case HloOpcode::kDivide: case HloOpcode::kNegate: case HloOpcode::kTanh:
        break;
      default:
        return false;
    }
    if (!Shape::Equal(u->shape(), v->shape(), false) || !u->control_predecessors().empty()) return false;
    for (const HloInstruction* o : u->operands())
      if (o != v && !in_region.count(o) && !ScalarConstantValue(o)) return false;
    return true;
  };
  // Grow to a fixed point: an instruction joins once all its non-constant operands are inside.
  bool grew = true;
  while (grew && region.size() <= kMaxRegion) {
    grew = false;
    std::vector<HloInstruction*> frontier = {v};
    frontier.insert(frontier.end(), region.begin(), region.end());
    for (HloInstruction* x : frontier)
      for (HloInstruction* u : x->users())
        if (!in_region.count(u) && allowed(u)) {
          region.push_back(u);
          in_region.insert(u);
          grew = true;
        }
  }
  if (region.empty() || region.size() > kMaxRegion) return nullptr;
  // Every use of v and of region members stays inside, except the one sink's.
  for (const HloInstruction* u : v->users())
    if (!in_region.count(u)) return nullptr;
  if (v->IsRoot()) return nullptr;
  HloInstruction* sink = nullptr;
  bool has_tanh = false;
  for (HloInstruction* x : region) {
    has_tanh |= x->opcode() == HloOpcode::kTanh;
    bool outside = x->IsRoot();
    for (const HloInstruction* u : x->users()) outside |= !in_region.count(u);
    if (!outside) continue;
    if (sink) return nullptr;
    sink = x;
  }
  if (!sink || !has_tanh) return nullptr;
  // Evaluate the region on sample points.
  const double tol = v->shape().element_type() == PrimitiveType::kF32 ? 1e-5 : 3e-3;
  for (double x : {-6.0, -3.0, -2.0, -1.3, -0.7, -0.25, 0.0, 0.1, 0.5, 1.0, 1.7, 2.5, 4.0, 7.0}) {
    std::unordered_map<const HloInstruction*, double> val = {{v, x}};
    auto get = [&](const HloInstruction* o) { return val.count(o) ? val[o] : *ScalarConstantValue(o); };
    // Region members in an order where operands come first.
    std::vector<HloInstruction*> pending = region;
    while (!pending.empty()) {
      bool progress = false;
      for (size_t i = 0; i < pending.size(); ++i) {
        HloInstruction* u = pending[i];
        bool ready = true;
        for (const HloInstruction* o : u->operands()) ready &= (o == v || val.count(o) || !in_region.count(o));
        if (!ready) continue;
        double a = get(u->operand(0)), b = u->operand_count() > 1 ? get(u->operand(1)) : 0;
        double r = 0;
        switch (u->opcode()) {
          case HloOpcode::kMultiply: r = a * b; break;
          case HloOpcode::kAdd: r = a + b; break;
          case HloOpcode::kSubtract: r = a - b; break;
          case HloOpcode::kDivide: r = a / b; break;
          case HloOpcode::kNegate: r = -a; break;
          case HloOpcode::kTanh: r = std::tanh(a); break;
          default: return nullptr;
        }
        val[u] = r;
        pending.erase(pending.begin() + static_cast<ptrdiff_t>(i));
        progress = true;
        break;
      }
      if (!progress) return nullptr;
    }
    double want = GeluTanh(x);
    if (!(std::abs(val[sink] - want) <= tol * (1 + std::abs(want)))) return nullptr;
  }
  return sink;
}

std::optional<Precision> DotPrecision(const HloInstruction& dot) {
  Precision p = Precision::kDefault;
  for (Precision q : dot.attrs().precision_config.operand_precision)
    if (q == Precision::kHighest || (q == Precision::kHigh && p == Precision::kDefault)) p = q;
  const std::string& algo = dot.attrs().precision_config.algorithm;
  if (StartsWith(algo, "dot_f32_f32_f32") || StartsWith(algo, "dot_f64_f64_f64")) p = Precision::kHighest;
  return p;
}

// Rewrites one canonical dot; returns whether it did.
StatusOr<bool> RewriteDot(HloInstruction* dot, const GemmRewriterOptions& options) {
  if (!IsCanonicalDot(*dot) || !dot->control_predecessors().empty() || !dot->control_successors().empty())
    return false;
  HloInstruction* lhs = dot->operand(0);
  HloInstruction* rhs = dot->operand(1);
  const PrimitiveType out_type = dot->shape().element_type();
  if (!RowMajor(dot->shape()) || !RowMajor(lhs->shape()) || !RowMajor(rhs->shape())) return false;
  // Mixed floating-point operands no library multiplies as they are (bf16 x f32 -> f32,
  // f16 x bf16 -> f32, f32 x f32 -> f64, ...): both are widened -- exactly -- to the result type
  // (f32 or f64), and an f32 product then runs at full f32 precision (no TF32: the HLO's
  // precision rule is about its own operand types).
  bool widened = false;
  if (!GemmTypesSupported(lhs->shape().element_type(), rhs->shape().element_type(), out_type) &&
      WidensTo(lhs->shape().element_type(), out_type) && WidensTo(rhs->shape().element_type(), out_type)) {
    HloEditor ed(dot->parent());
    if (lhs->shape().element_type() != out_type) {
      KILN_ASSIGN_OR_RETURN(lhs, ed.Convert(lhs, out_type, nullptr, dot));
    }
    if (rhs->shape().element_type() != out_type) {
      KILN_ASSIGN_OR_RETURN(rhs, ed.Convert(rhs, out_type, nullptr, dot));
    }
    widened = true;
  }
  if (!GemmTypesSupported(lhs->shape().element_type(), rhs->shape().element_type(), out_type)) return false;
  const bool batched = dot->shape().rank() == 3;
  GemmConfig c;
  c.batch = batched ? dot->shape().dimensions(0) : 1;
  c.m = lhs->shape().dimensions(batched ? 1 : 0);
  c.k = lhs->shape().dimensions(batched ? 2 : 1);
  c.n = rhs->shape().dimensions(batched ? 2 : 1);
  c.precision = widened ? Precision::kHighest : *DotPrecision(*dot);
  if (c.m * c.n * c.k == 0) return false;  // an empty product: a fill, not a GEMM

  Storage ls = FoldOperand(lhs, c.batch, c.m, c.k, options.fold_transposes);
  Storage rs = FoldOperand(rhs, c.batch, c.k, c.n, options.fold_transposes);
  c.lhs_transposed = ls.transposed;
  c.rhs_transposed = rs.transposed;

  // Epilogue (see the header).
  HloInstruction* value = dot;
  HloInstruction* residual = nullptr;
  HloInstruction* bias = nullptr;
  auto single_user = [](HloInstruction* v) -> HloInstruction* {
    return v->user_count() == 1 && !v->IsRoot() ? v->users()[0] : nullptr;
  };
  if (HloInstruction* u = single_user(value); u && IsByteView(u)) value = u;
  // An output transpose (of the two matrix dimensions) is the product of the swapped,
  // transposed operands: (lhs . rhs)^T = rhs^T . lhs^T.
  if (options.fold_transposes) {
    HloInstruction* u = single_user(value);
    const int64_t r = value->shape().rank();
    if (u && u->opcode() == HloOpcode::kTranspose && RowMajor(u->shape()) && r >= 2 &&
        (r == 2 || (r == 3 && value->shape().dimensions(0) == c.batch)) && u->control_predecessors().empty()) {
      std::vector<int64_t> swap(r);
      for (int64_t i = 0; i < r; ++i) swap[i] = i;
      std::swap(swap[r - 2], swap[r - 1]);
      if (u->attrs().dimensions == swap && value->shape().dimensions(r - 2) == c.m &&
          value->shape().dimensions(r - 1) == c.n) {
        std::swap(ls, rs);
        ls.transposed = !ls.transposed;
        rs.transposed = !rs.transposed;
        std::swap(c.m, c.n);
        std::swap(c.lhs_broadcast, c.rhs_broadcast);
        c.lhs_transposed = ls.transposed;
        c.rhs_transposed = rs.transposed;
        value = u;
      }
    }
  }
  if (options.fuse_epilogues) {
    const int64_t rank = value->shape().rank();
    const bool last_dim_is_n = rank >= 1 && value->shape().dimensions(rank - 1) == c.n;
    bool alpha_allowed = true;
    while (true) {
      if (EpilogueType(out_type) && c.activation == GemmActivation::kNone) {
        if (HloInstruction* g = MatchGelu(value)) {
          c.activation = GemmActivation::kGelu;
          value = g;
          break;
        }
      }
      HloInstruction* u = single_user(value);
      if (!u || u->shape().element_type() != out_type || !Shape::Equal(u->shape(), value->shape(), false) ||
          !u->control_predecessors().empty() || !u->control_successors().empty())
        break;
      HloInstruction* other = u->operand_count() == 2 ? u->operand(u->operand(0) == value ? 1 : 0) : nullptr;
      if (!other || other == value) break;
      if (u->opcode() == HloOpcode::kMultiply && alpha_allowed) {
        std::optional<double> s = ScalarConstantValue(other);
        if (!s || !std::isfinite(*s)) break;
        c.alpha *= *s;
        value = u;
        continue;
      }
      if (u->opcode() == HloOpcode::kAdd) {
        const bool bias_type_ok = out_type == PrimitiveType::kF32 ||
                                  (options.fuse_low_precision_bias && EpilogueType(out_type));
        if (!bias && bias_type_ok && last_dim_is_n && other->opcode() == HloOpcode::kBroadcast &&
            other->attrs().dimensions == std::vector<int64_t>{rank - 1} &&
            other->operand(0)->shape().element_type() == out_type && RowMajor(other->operand(0)->shape())) {
          bias = other->operand(0);
          c.has_bias = true;
          alpha_allowed = false;
          value = u;
          continue;
        }
        if (!residual && other->opcode() != HloOpcode::kBroadcast && RowMajor(other->shape()) &&
            !IsDynamicWindow(other) && !DependsOn(other, dot)) {
          residual = other;
          c.beta = 1.0;
          alpha_allowed = false;
          value = u;
          continue;
        }
        break;
      }
      // w - v (an SGD update of a weight gradient): out = -alpha AB + w, before anything that
      // the sign change would not apply to (bias, activation) was taken; v - w: beta = -1.
      if (u->opcode() == HloOpcode::kSubtract && !residual && other->opcode() != HloOpcode::kBroadcast &&
          RowMajor(other->shape()) && !IsDynamicWindow(other) && !DependsOn(other, dot)) {
        const bool value_is_lhs = u->operand(0) == value;
        if (!value_is_lhs && (bias || c.activation != GemmActivation::kNone)) break;
        if (!value_is_lhs) c.alpha = -c.alpha;
        residual = other;
        c.beta = value_is_lhs ? -1.0 : 1.0;
        alpha_allowed = false;
        value = u;
        continue;
      }
      if (u->opcode() == HloOpcode::kMaximum && EpilogueType(out_type)) {
        std::optional<double> z = ScalarConstantValue(other);
        if (!z || *z != 0) break;
        c.activation = GemmActivation::kRelu;
        value = u;
        break;
      }
      break;
    }
  }

  // cuBLASLt's integer GEMMs run only with k contiguous in both operands (lhs stored [m,k], rhs
  // stored [n,k]); other storage gets an explicit transpose of the (1-byte) operand.
  if (lhs->shape().element_type() == PrimitiveType::kS8) {
    HloEditor ed(dot->parent());
    // st.buffer's bytes are [B', a, b] (B' absent when broadcast); make them [B', b, a].
    auto flip = [&](Storage& st, bool broadcast, int64_t a, int64_t b) -> Status {
      std::vector<int64_t> dims = broadcast ? std::vector<int64_t>{a, b} : std::vector<int64_t>{c.batch, a, b};
      KILN_ASSIGN_OR_RETURN(HloInstruction * r,
                            ed.Reshape(st.buffer, Shape::ArrayWithDefaultLayout(PrimitiveType::kS8, dims), dot));
      KILN_ASSIGN_OR_RETURN(st.buffer, ed.Transpose(r, broadcast ? std::vector<int64_t>{1, 0}
                                                                 : std::vector<int64_t>{0, 2, 1},
                                                    nullptr, dot));
      st.transposed = !st.transposed;
      return OkStatus();
    };
    if (ls.transposed) KILN_RETURN_IF_ERROR(flip(ls, c.lhs_broadcast, c.k, c.m));
    if (!rs.transposed) KILN_RETURN_IF_ERROR(flip(rs, c.rhs_broadcast, c.k, c.n));
    c.lhs_transposed = ls.transposed;
    c.rhs_transposed = rs.transposed;
  }

  HloComputation* comp = dot->parent();
  HloEditor editor(comp);
  Shape shape = value->shape();
  auto gemm = std::make_unique<HloInstruction>(HloOpcode::kCustomCall, shape, "");
  gemm->AppendOperand(ls.buffer);
  gemm->AppendOperand(rs.buffer);
  if (residual) gemm->AppendOperand(residual);
  if (bias) gemm->AppendOperand(bias);
  gemm->attrs().custom_call_target = std::string(kGemmCallTarget);
  gemm->backend_config() = BackendConfig{c.ToJson(), true};
  gemm->frontend_attributes() = dot->frontend_attributes();
  gemm->set_name(UniqueInstructionName(*comp, "gemm"));
  HloInstruction* added = editor.Add(std::move(gemm), dot);
  MoveControlDependencies(value, added);  // XLA's scheduled modules order loop bodies
  KILN_RETURN_IF_ERROR(ReplaceInstruction(value, added));
  return true;
}

}  // namespace

StatusOr<bool> GemmRewriter::Run(HloModule& module) {
  bool changed = false;
  // Attention bodies keep their dots: the fused kernel runs them (and the evaluator the body).
  const std::unordered_set<const HloComputation*> attention = AttentionBodies(module);
  for (HloComputation* comp : module.computations()) {
    if (attention.count(comp)) continue;
    std::vector<HloInstruction*> dots;
    for (HloInstruction* i : comp->MakeInstructionPostOrder())
      if (i->opcode() == HloOpcode::kDot) dots.push_back(i);
    for (HloInstruction* dot : dots) {
      KILN_ASSIGN_OR_RETURN(bool did, RewriteDot(dot, options_));
      changed |= did;
    }
  }
  return changed;
}

}  // namespace kiln::cuda
