// ExprProgram compilation: HLO nodes -> index maps and typed block ops (see Note [Block
// expression programs] in expr_program.h).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/expr_internal.h"
#include "kiln/eval/kernels.h"
#include "kiln/eval/scalar_program.h"

namespace kiln::cpu::internal {

namespace {
Status NotCompilable(const HloInstruction& instr, std::string_view why) {
  return Unimplemented("loop kernel: cannot compute ", HloOpcodeString(instr.opcode()), " %",
                       instr.name(), ": ", why);
}
}  // namespace

struct ExprCompiler {
  ExprProgram& p;
  const LeafResolver& leaves;
  std::map<std::tuple<int, const HloInstruction*, int>, int> map_memo;
  std::map<std::pair<const HloInstruction*, int>, int> value_memo;
  std::map<int, int> splat_of;
  int scalar_map = -1;
  std::map<std::tuple<HloOpcode, PrimitiveType, bool, int, int, int, ComparisonDirection,
                      ComparisonType, int64_t, int64_t>,
           int>
      cse_memo;

  int NewValue(PrimitiveType t, bool invariant) {
    p.value_types_.push_back(t);
    p.value_invariant_.push_back(invariant);
    return static_cast<int>(p.num_values_++);
  }
  std::vector<ExprOp>& Ops(bool invariant) { return invariant ? p.invariant_ops_ : p.block_ops_; }

  int NewMap(std::unique_ptr<ExprMap> m) {
    m->id = static_cast<int>(p.maps_.size());
    ExprOp op;
    op.kind = ExprOp::Kind::kMap;
    op.map = m->id;
    Ops(m->invariant).push_back(op);
    p.maps_.push_back(std::move(m));
    return p.maps_.back()->id;
  }

  int ScalarMap() {
    if (scalar_map < 0) {
      auto m = std::make_unique<ExprMap>();
      m->kind = MapKind::kScalar;
      m->invariant = true;
      scalar_map = NewMap(std::move(m));
    }
    return scalar_map;
  }

  // Operand dim i = offset[i] + scale[i] * j[src[i]] (src[i] < 0: just offset[i]).
  int DeriveAffine(int parent, const HloInstruction* key, int key_operand,
                   const std::vector<int64_t>& cdims, const std::vector<int64_t>& odims,
                   const std::vector<int64_t>& src, const std::vector<int64_t>& scale,
                   const std::vector<int64_t>& offset, std::vector<ExprMap::DynStart> dyn = {}) {
    auto memo_key = std::make_tuple(parent, key, key_operand);
    if (auto it = map_memo.find(memo_key); it != map_memo.end()) return it->second;
    auto m = std::make_unique<ExprMap>();
    m->kind = MapKind::kAffine;
    m->parent = parent;
    m->invariant = p.maps_[parent]->invariant;
    const std::vector<int64_t> cstr = RowMajorStrides(cdims), ostr = RowMajorStrides(odims);
    std::vector<int64_t> coef(cdims.size(), 0);
    for (size_t i = 0; i < odims.size(); ++i) {
      if (src[i] >= 0) coef[src[i]] += scale[i] * ostr[i];
      m->k_static += offset[i] * ostr[i];
    }
    for (ExprMap::DynStart& d : dyn) m->dyn.push_back(d);
    // Drop size-1 dims; merge an outer dim into the inner group where the map is linear.
    struct G {
      int64_t d, s, coef;
    };
    std::vector<G> groups;  // innermost first
    for (size_t c = cdims.size(); c-- > 0;) {
      if (cdims[c] == 1) continue;
      if (!groups.empty() && coef[c] == groups.back().coef * groups.back().d) {
        groups.back().d *= cdims[c];
        continue;
      }
      groups.push_back({cdims[c], cstr[c], coef[c]});
    }
    std::reverse(groups.begin(), groups.end());
    for (const G& g : groups) {
      m->c_dims.push_back(g.d);
      m->c_strides.push_back(g.s);
      m->coef.push_back(g.coef);
    }
    int id = NewMap(std::move(m));
    map_memo[memo_key] = id;
    return id;
  }

  // pad/concatenate operand windows: per dim low, size (the operand's), interior.
  int DeriveWindow(int parent, const HloInstruction* key, int key_operand,
                   const std::vector<int64_t>& cdims, const std::vector<int64_t>& low,
                   const std::vector<int64_t>& size, const std::vector<int64_t>& interior) {
    auto memo_key = std::make_tuple(parent, key, key_operand);
    if (auto it = map_memo.find(memo_key); it != map_memo.end()) return it->second;
    auto m = std::make_unique<ExprMap>();
    m->kind = MapKind::kWindow;
    m->parent = parent;
    m->invariant = p.maps_[parent]->invariant;
    const std::vector<int64_t> cstr = RowMajorStrides(cdims), ostr = RowMajorStrides(size);
    struct G {
      int64_t d, s, low, size, interior, os;
      bool identity() const { return low == 0 && size == d && interior == 0; }
    };
    std::vector<G> groups;  // innermost first
    for (size_t c = cdims.size(); c-- > 0;) {
      G g{cdims[c], cstr[c], low[c], size[c], interior[c], ostr[c]};
      if (g.d == 1 && g.identity()) continue;
      if (!groups.empty() && groups.back().identity() && g.interior == 0) {
        G& in = groups.back();
        in.low = g.low * in.d;
        in.size = g.size * in.d;
        in.d *= g.d;
        continue;
      }
      groups.push_back(g);
    }
    std::reverse(groups.begin(), groups.end());
    for (const G& g : groups) {
      m->c_dims.push_back(g.d);
      m->c_strides.push_back(g.s);
      m->low.push_back(g.low);
      m->size.push_back(g.size);
      m->interior.push_back(g.interior);
      m->o_strides.push_back(g.os);
      m->any_interior |= g.interior != 0;
    }
    int id = NewMap(std::move(m));
    map_memo[memo_key] = id;
    return id;
  }

  // The value as a block array (invariant values are splatted once per scratch).
  int BlockValue(int v) {
    if (!p.value_invariant_[v]) return v;
    if (auto it = splat_of.find(v); it != splat_of.end()) return it->second;
    const int s = NewValue(p.value_types_[v], false);
    ExprOp op;
    op.kind = ExprOp::Kind::kSplat;
    op.type = p.value_types_[v];
    op.width = PrimitiveByteWidth(op.type);
    op.out = s;
    op.num_in = 1;
    op.in[0] = v;
    p.splat_ops_.push_back(op);
    splat_of[v] = s;
    return s;
  }

  int Emit(ExprOp op, bool invariant) {
    op.out = NewValue(op.type, invariant);
    op.width = PrimitiveByteWidth(op.type);
    Ops(invariant).push_back(std::move(op));
    return Ops(invariant).back().out;
  }

  StatusOr<int> Value(const HloInstruction* node, int map) {
    const Shape& shape = node->shape();
    if (!shape.IsArray()) return NotCompilable(*node, "not an array");
    if (shape.rank() == 0 && map != ScalarMap()) map = ScalarMap();
    auto key = std::make_pair(node, map);
    if (auto it = value_memo.find(key); it != value_memo.end()) return it->second;
    KILN_ASSIGN_OR_RETURN(int v, Compute(node, map));
    value_memo[key] = v;
    return v;
  }

  StatusOr<int> Compute(const HloInstruction* node, int map) {
    const Shape& shape = node->shape();
    const bool inv = p.maps_[map]->invariant;
    const PrimitiveType type = shape.element_type();
    const int input = leaves(node);
    if (input >= 0) {
      ExprOp op;
      op.kind = ExprOp::Kind::kRead;
      op.instr = node;
      op.type = type;
      op.map = map;
      op.input = input;
      p.num_inputs_ = std::max(p.num_inputs_, input + 1);
      return Emit(std::move(op), inv);
    }
    const std::vector<int64_t>& dims = shape.dimensions();
    auto operand_dims = [&](int64_t i) -> const std::vector<int64_t>& {
      return node->operand(i)->shape().dimensions();
    };
    const std::vector<int64_t> ident_scale(dims.size(), 1), zeros(dims.size(), 0);
    switch (node->opcode()) {
      case HloOpcode::kConstant: {
        if (!node->has_literal() || node->literal_elided() ||
            node->literal().shape().element_type() != type ||
            node->literal().element_count() != shape.num_elements())
          return NotCompilable(*node, "constant without a usable literal");
        ExprOp op;
        op.kind = ExprOp::Kind::kRead;
        op.instr = node;
        op.type = type;
        op.map = map;
        op.data = node->literal().untyped_data();
        return Emit(std::move(op), inv);
      }
      case HloOpcode::kParameter:
        return NotCompilable(*node, "parameter without an input");
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
      case HloOpcode::kCopy: {
        const Shape& os = node->operand(0)->shape();
        if (!os.IsArray() || os.element_type() != type || os.num_elements() != shape.num_elements())
          return NotCompilable(*node, "operand does not match");
        return Value(node->operand(0), map);
      }
      case HloOpcode::kBroadcast: {
        const Shape& os = node->operand(0)->shape();
        if (!os.IsArray() || os.element_type() != type) return NotCompilable(*node, "operand type");
        if (os.rank() == 0) return Value(node->operand(0), ScalarMap());
        const std::vector<int64_t>& bd = node->attrs().dimensions;
        if (static_cast<int64_t>(bd.size()) != os.rank()) return NotCompilable(*node, "dimensions");
        std::vector<int64_t> src(bd.begin(), bd.end());
        for (size_t i = 0; i < bd.size(); ++i)
          if (bd[i] < 0 || bd[i] >= shape.rank() || dims[bd[i]] != os.dimensions(i))
            return NotCompilable(*node, "dimensions");
        int m = DeriveAffine(map, node, 0, dims, os.dimensions(), src,
                             std::vector<int64_t>(bd.size(), 1), std::vector<int64_t>(bd.size(), 0));
        return Value(node->operand(0), m);
      }
      case HloOpcode::kTranspose: {
        const std::vector<int64_t>& perm = node->attrs().dimensions;
        const Shape& os = node->operand(0)->shape();
        if (static_cast<int64_t>(perm.size()) != shape.rank() || os.rank() != shape.rank())
          return NotCompilable(*node, "dimensions");
        std::vector<int64_t> src(perm.size(), -1);
        for (size_t i = 0; i < perm.size(); ++i) {
          if (perm[i] < 0 || perm[i] >= os.rank() || src[perm[i]] >= 0)
            return NotCompilable(*node, "dimensions");
          src[perm[i]] = static_cast<int64_t>(i);
        }
        int m = DeriveAffine(map, node, 0, dims, os.dimensions(), src, ident_scale, zeros);
        return Value(node->operand(0), m);
      }
      case HloOpcode::kSlice: {
        const std::vector<SliceDimension>& sl = node->attrs().slice;
        const Shape& os = node->operand(0)->shape();
        if (static_cast<int64_t>(sl.size()) != shape.rank() || os.rank() != shape.rank())
          return NotCompilable(*node, "slice");
        std::vector<int64_t> src(sl.size()), scale(sl.size()), offset(sl.size());
        for (size_t i = 0; i < sl.size(); ++i) {
          src[i] = static_cast<int64_t>(i);
          scale[i] = sl[i].stride;
          offset[i] = sl[i].start;
        }
        int m = DeriveAffine(map, node, 0, dims, os.dimensions(), src, scale, offset);
        return Value(node->operand(0), m);
      }
      case HloOpcode::kReverse: {
        std::vector<int64_t> src(dims.size()), scale(dims.size(), 1), offset(dims.size(), 0);
        for (size_t i = 0; i < dims.size(); ++i) src[i] = static_cast<int64_t>(i);
        for (int64_t d : node->attrs().dimensions) {
          if (d < 0 || d >= shape.rank()) return NotCompilable(*node, "dimensions");
          scale[d] = -1;
          offset[d] = dims[d] - 1;
        }
        int m = DeriveAffine(map, node, 0, dims, operand_dims(0), src, scale, offset);
        return Value(node->operand(0), m);
      }
      case HloOpcode::kDynamicSlice: {
        const Shape& os = node->operand(0)->shape();
        const int64_t rank = os.rank();
        if (node->operand_count() != rank + 1 || shape.rank() != rank)
          return NotCompilable(*node, "operands");
        const std::vector<int64_t> ostr = RowMajorStrides(os.dimensions());
        std::vector<ExprMap::DynStart> dyn;
        for (int64_t i = 0; i < rank; ++i) {
          const HloInstruction* idx = node->operand(1 + i);
          if (!idx->shape().IsArray() || idx->shape().rank() != 0 ||
              !IsIntegralType(idx->shape().element_type()))
            return NotCompilable(*node, "start indices");
          KILN_ASSIGN_OR_RETURN(int v, Value(idx, ScalarMap()));
          if (dims[i] > os.dimensions(i)) return NotCompilable(*node, "slice sizes");
          dyn.push_back({v, idx->shape().element_type(), os.dimensions(i) - dims[i], ostr[i]});
        }
        std::vector<int64_t> src(rank);
        for (int64_t i = 0; i < rank; ++i) src[i] = i;
        int m = DeriveAffine(map, node, 0, dims, os.dimensions(), src, ident_scale, zeros, dyn);
        return Value(node->operand(0), m);
      }
      case HloOpcode::kPad: {
        const std::vector<PaddingDimension>& pd = node->attrs().padding;
        const Shape& os = node->operand(0)->shape();
        if (static_cast<int64_t>(pd.size()) != shape.rank() || os.rank() != shape.rank() ||
            os.element_type() != type)
          return NotCompilable(*node, "padding");
        KILN_ASSIGN_OR_RETURN(int pad_value, Value(node->operand(1), ScalarMap()));
        int ov = -1, m = -1;
        if (os.num_elements() > 0) {
          std::vector<int64_t> low, interior;
          for (const PaddingDimension& d : pd) {
            low.push_back(d.low);
            interior.push_back(d.interior);
          }
          m = DeriveWindow(map, node, 0, dims, low, os.dimensions(), interior);
          KILN_ASSIGN_OR_RETURN(ov, Value(node->operand(0), m));
          if (!inv) ov = BlockValue(ov);
        }
        ExprOp op;
        op.kind = ExprOp::Kind::kPad;
        op.instr = node;
        op.type = type;
        op.values = {ov, pad_value};
        op.maps = {m};
        return Emit(std::move(op), inv);
      }
      case HloOpcode::kConcatenate: {
        if (node->attrs().dimensions.size() != 1) return NotCompilable(*node, "dimensions");
        const int64_t cd = node->attrs().dimensions[0];
        if (cd < 0 || cd >= shape.rank()) return NotCompilable(*node, "dimensions");
        ExprOp op;
        op.kind = ExprOp::Kind::kConcat;
        op.instr = node;
        op.type = type;
        int64_t offset = 0;
        for (int64_t k = 0; k < node->operand_count(); ++k) {
          const Shape& os = node->operand(k)->shape();
          if (!os.IsArray() || os.rank() != shape.rank() || os.element_type() != type)
            return NotCompilable(*node, "operands");
          if (os.num_elements() > 0) {
            std::vector<int64_t> low(dims.size(), 0), interior(dims.size(), 0);
            low[cd] = offset;
            int m = DeriveWindow(map, node, static_cast<int>(k), dims, low, os.dimensions(),
                                 interior);
            KILN_ASSIGN_OR_RETURN(int v, Value(node->operand(k), m));
            op.values.push_back(inv ? v : BlockValue(v));
            op.maps.push_back(m);
          }
          offset += os.dimensions(cd);
        }
        if (offset != dims[cd]) return NotCompilable(*node, "operand sizes");
        return Emit(std::move(op), inv);
      }
      case HloOpcode::kIota: {
        const int64_t d = node->attrs().iota_dimension;
        if (d < 0 || d >= shape.rank()) return NotCompilable(*node, "iota_dimension");
        int m = DeriveAffine(map, node, -2, dims, {dims[d]}, {d}, {1}, {0});
        ExprOp op;
        op.kind = ExprOp::Kind::kIota;
        op.instr = node;
        op.type = type;
        op.map = m;
        return Emit(std::move(op), inv);
      }
      default:
        break;
    }
    if (!node->IsElementwise() || node->opcode() == HloOpcode::kMap ||
        node->opcode() == HloOpcode::kRng || node->operand_count() < 1 ||
        node->operand_count() > 3)
      return NotCompilable(*node, "not a loop-fusible op");
    ExprOp op;
    op.kind = ExprOp::Kind::kCompute;
    op.instr = node;
    op.type = type;
    op.num_in = static_cast<int>(node->operand_count());
    for (int k = 0; k < op.num_in; ++k) {
      const Shape& os = node->operand(k)->shape();
      if (!os.IsArray() || (os.rank() != 0 && os.dimensions() != dims))
        return NotCompilable(*node, "operand dimensions");
      KILN_ASSIGN_OR_RETURN(int v, Value(node->operand(k), os.rank() == 0 ? ScalarMap() : map));
      op.in[k] = inv ? v : BlockValue(v);
      op.in_width[k] = PrimitiveByteWidth(os.element_type());
    }
    op.fn = ResolveElementwiseBlockFn(*node);
    if (op.fn && node->operand_count() == 2) {
      op.fn_sa = ResolveUniformOperandBlockFn(*node, 0);
      op.fn_sb = ResolveUniformOperandBlockFn(*node, 1);
    }
    if (!op.fn) {
      StatusOr<eval_internal::ElementFn> efn = eval_internal::ResolveElementFn(*node);
      if (!efn.ok()) return NotCompilable(*node, efn.status().message());
      op.efn = *efn;
    }
    // Note [Common elementwise values]: fusion duplicates producers for each consumer (the
    // GELU backward fusion of mlp_train computes x*y*0.5 three times); the same op over the
    // same values is computed once.
    const HloAttributes& at = node->attrs();
    const auto cse_key = std::make_tuple(node->opcode(), type, inv, op.in[0], op.in[1], op.in[2],
                                         at.comparison_direction, at.comparison_type,
                                         at.exponent_bits, at.mantissa_bits);
    if (auto it = cse_memo.find(cse_key); it != cse_memo.end()) return it->second;
    const int v = Emit(std::move(op), inv);
    cse_memo[cse_key] = v;
    return v;
  }
};

// Note [Fused op chains]
//   Each block op is a pass over L1-sized arrays: a layer norm's final loop
//   ((x - mean) * rstd * g + b) was four passes, each loading two arrays and storing one, plus
//   the per-op dispatch. Runs of f32 add/subtract/multiply/divide where each op's result is
//   read only by the next op of the run (not a root, not shared) become one kChain op that
//   keeps the running value in registers: one load per operand and one store per element for
//   the whole run (ChainBlockF32, expr_elementwise.cc). Operands may be block values, uniform
//   values (one element per block: a per-row mean) or the running value itself (x * x). Every
//   op is the same single IEEE operation in the same order as before (no FMA contraction: the
//   kernels build with ISO C++, -ffp-contract=off), so results are bit-identical to the
//   op-by-op loops and to the evaluator. A run longer than kMaxChainSteps ops is split.
namespace {

bool ChainableOp(const ExprOp& op, const std::vector<PrimitiveType>& types) {
  if (op.kind != ExprOp::Kind::kCompute || !op.fn || types[op.out] != PrimitiveType::kF32)
    return false;
  for (int k = 0; k < op.num_in; ++k)
    if (types[op.in[k]] != PrimitiveType::kF32) return false;
  switch (op.instr->opcode()) {
    case HloOpcode::kAdd: case HloOpcode::kSubtract: case HloOpcode::kMultiply:
    case HloOpcode::kDivide: return op.num_in == 2;
    case HloOpcode::kTanh: return op.num_in == 1;
    default: return false;
  }
}

uint8_t ChainOpCode(HloOpcode opc) {
  switch (opc) {
    case HloOpcode::kAdd: return kChainAdd;
    case HloOpcode::kSubtract: return kChainSub;
    case HloOpcode::kMultiply: return kChainMul;
    case HloOpcode::kTanh: return kChainTanh;
    default: return kChainDiv;
  }
}

void FuseChainsImpl(std::vector<ExprOp>& ops, const std::vector<PrimitiveType>& types,
                    const std::vector<bool>& invariant, const std::vector<int>& roots) {
  const int64_t nv = static_cast<int64_t>(types.size());
  // Readers of each value (an op reading it twice counts twice) and its producer op.
  std::vector<int> reads(nv, 0), producer(nv, -1), reader(nv, -1);
  for (int v : roots) reads[v] += 1 << 16;  // roots stay materialized
  for (size_t i = 0; i < ops.size(); ++i) {
    const ExprOp& op = ops[i];
    if (op.kind == ExprOp::Kind::kMap) continue;
    for (int k = 0; k < op.num_in; ++k) {
      ++reads[op.in[k]];
      reader[op.in[k]] = static_cast<int>(i);
    }
    for (int v : op.values)
      if (v >= 0) {
        ++reads[v];
        reader[v] = static_cast<int>(i);
      }
    if (op.kind != ExprOp::Kind::kMap && op.out >= 0) producer[op.out] = static_cast<int>(i);
  }
  const int n = static_cast<int>(ops.size());
  std::vector<bool> ok(n);
  for (int i = 0; i < n; ++i) ok[i] = ChainableOp(ops[i], types);
  // prev[i]: the chainable op whose only reader is op i (the chain's previous op), -1 none.
  std::vector<int> prev(n, -1);
  std::vector<bool> has_next(n, false);
  for (int i = 0; i < n; ++i) {
    if (!ok[i]) continue;
    for (int k = 0; k < ops[i].num_in; ++k) {
      const int t = ops[i].in[k];
      const int a = producer[t];
      if (a < 0 || !ok[a] || has_next[a] || invariant[t] || reader[t] != i) continue;
      const int uses_here = (ops[i].in[0] == t) + (ops[i].in[1] == t);
      if (reads[t] != uses_here) continue;
      prev[i] = a;
      has_next[a] = true;
      break;
    }
  }
  std::vector<bool> removed(n, false);
  for (int tail = 0; tail < n; ++tail) {
    if (!ok[tail] || has_next[tail] || prev[tail] < 0) continue;
    std::vector<int> chain;
    for (int i = tail; i >= 0; i = prev[i]) chain.push_back(i);
    std::reverse(chain.begin(), chain.end());
    // Split into pieces of at most kMaxChainSteps ops (one step each); each piece ends in a
    // materialized value the next piece starts from.
    for (size_t b = 0; b < chain.size(); b += kMaxChainSteps) {
      const size_t e = std::min(chain.size(), b + kMaxChainSteps);
      if (e - b < 2) break;  // a single op stays as it is
      ExprOp c;
      c.kind = ExprOp::Kind::kChain;
      const ExprOp& head = ops[chain[b]];
      c.instr = ops[chain[e - 1]].instr;
      c.type = PrimitiveType::kF32;
      c.width = 4;
      c.out = ops[chain[e - 1]].out;
      c.values.push_back(head.in[0]);
      if (head.num_in == 1) {
        c.codes.push_back(kChainTanh);
        c.values.push_back(-1);
      } else if (head.in[0] == head.in[1]) {
        c.codes.push_back(ChainOpCode(head.instr->opcode()) | kChainSelf);
        c.values.push_back(-1);
      } else {
        c.codes.push_back(ChainOpCode(head.instr->opcode()));
        c.values.push_back(head.in[1]);
      }
      for (size_t j = b + 1; j < e; ++j) {
        const ExprOp& op = ops[chain[j]];
        const int t = ops[chain[j - 1]].out;
        uint8_t code = ChainOpCode(op.instr->opcode());
        if (op.num_in == 1) {
          c.codes.push_back(code);
          c.values.push_back(-1);
        } else if (op.in[0] == t && op.in[1] == t) {
          c.codes.push_back(code | kChainSelf);
          c.values.push_back(-1);
        } else if (op.in[0] == t) {
          c.codes.push_back(code);
          c.values.push_back(op.in[1]);
        } else {
          c.codes.push_back(code | kChainRev);
          c.values.push_back(op.in[0]);
        }
      }
      for (size_t j = b; j + 1 < e; ++j) removed[chain[j]] = true;
      ops[chain[e - 1]] = std::move(c);
    }
  }
  std::vector<ExprOp> kept;
  kept.reserve(ops.size());
  for (int i = 0; i < n; ++i)
    if (!removed[i]) kept.push_back(std::move(ops[i]));
  ops = std::move(kept);
}

}  // namespace

StatusOr<std::unique_ptr<ExprProgram>> ExprProgram::Compile(
    std::span<const HloInstruction* const> roots, std::vector<int64_t> loop_dims,
    std::vector<int64_t> root_perm, const LeafResolver& leaves, const Options& options) {
  std::unique_ptr<ExprProgram> p(new ExprProgram());
  static std::atomic<uint64_t> next_id{1};
  p->id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  p->block_ = std::max<int64_t>(1, options.block_elements);
  p->loop_dims_ = loop_dims;
  p->loop_elements_ = 1;
  for (int64_t d : loop_dims) p->loop_elements_ *= d;
  // Blocks that tile the innermost dimension's rows: a value broadcast along the rows is then
  // one element per block (Note [Uniform block values], expr_exec.cc) and a row vector one
  // contiguous run. Rows of 256+ elements make blocks long enough for that to pay.
  {
    int64_t inner = 1;
    for (size_t i = loop_dims.size(); i-- > 0;)
      if (loop_dims[i] > 1) {
        inner = loop_dims[i];
        break;
      }
    if (inner >= 256 && inner <= p->block_) {
      p->block_ = inner;
    } else if (inner > p->block_) {
      const int64_t k0 = (inner + p->block_ - 1) / p->block_;
      for (int64_t k = k0; k < k0 + 8; ++k)
        if (inner % k == 0) {
          p->block_ = inner / k;
          break;
        }
    }
  }
  ExprCompiler c{*p, leaves, {}, {}, {}, -1, {}};

  // Map 0: the loop space.
  {
    auto m = std::make_unique<ExprMap>();
    m->kind = MapKind::kLoop;
    c.NewMap(std::move(m));
  }
  if (roots.empty()) return InvalidArgument("loop kernel: no roots");
  const Shape& rs = roots[0]->shape();
  if (!rs.IsArray()) return NotCompilable(*roots[0], "root is not an array");
  for (const HloInstruction* r : roots)
    if (!r->shape().IsArray() || r->shape().dimensions() != rs.dimensions())
      return NotCompilable(*r, "roots of different dimensions");
  int root_map = 0;
  if (!root_perm.empty()) {
    if (root_perm.size() != loop_dims.size() || static_cast<int64_t>(root_perm.size()) != rs.rank())
      return InvalidArgument("loop kernel: bad root permutation");
    std::vector<int64_t> src(rs.rank(), -1);
    for (size_t k = 0; k < root_perm.size(); ++k) {
      if (root_perm[k] < 0 || root_perm[k] >= rs.rank() || src[root_perm[k]] >= 0 ||
          rs.dimensions(root_perm[k]) != loop_dims[k])
        return InvalidArgument("loop kernel: bad root permutation");
      src[root_perm[k]] = static_cast<int64_t>(k);
    }
    root_map = c.DeriveAffine(0, nullptr, -3, loop_dims, rs.dimensions(), src,
                              std::vector<int64_t>(rs.rank(), 1), std::vector<int64_t>(rs.rank(), 0));
  } else if (loop_dims != rs.dimensions()) {
    return InvalidArgument("loop kernel: loop dims differ from the root's");
  }
  for (const HloInstruction* r : roots) {
    KILN_ASSIGN_OR_RETURN(int v, c.Value(r, root_map));
    p->root_values_.push_back(v);
  }
  for (int v : p->root_values_) p->root_block_values_.push_back(c.BlockValue(v));

  // options.fuse_chains false (CpuKernelOptions::expr_chains, flag cpu_expr_chains=off) keeps
  // every op separate (A/B runs, tests).
  if (options.fuse_chains)
    FuseChainsImpl(p->block_ops_, p->value_types_, p->value_invariant_, p->root_block_values_);

  // Buffers for block values: liveness over the block ops (roots live to the end; splats for
  // the whole scratch).
  const int64_t nv = p->num_values_;
  std::vector<int64_t> last_use(nv, -1);
  auto uses = [](const ExprOp& op, auto&& f) {
    for (int k = 0; k < op.num_in; ++k) f(op.in[k]);
    for (int v : op.values)
      if (v >= 0) f(v);
  };
  const int64_t nops = static_cast<int64_t>(p->block_ops_.size());
  for (int64_t i = 0; i < nops; ++i)
    uses(p->block_ops_[i], [&](int v) { last_use[v] = std::max(last_use[v], i); });
  std::vector<bool> is_root(nv, false);
  for (int v : p->root_block_values_) {
    last_use[v] = nops;
    is_root[v] = true;
  }
  p->value_buffer_.assign(nv, -1);
  std::vector<int64_t> buffer_bytes;
  std::multimap<int64_t, int> free_buffers;  // bytes -> buffer
  auto take = [&](int64_t bytes) {
    auto it = free_buffers.find(bytes);
    if (it != free_buffers.end()) {
      int b = it->second;
      free_buffers.erase(it);
      return b;
    }
    buffer_bytes.push_back(bytes);
    return static_cast<int>(buffer_bytes.size() - 1);
  };
  auto bytes_of = [&](int v) {
    return (p->block_ * PrimitiveByteWidth(p->value_types_[v]) + 63) / 64 * 64;
  };
  for (const ExprOp& op : p->splat_ops_) p->value_buffer_[op.out] = take(bytes_of(op.out));
  for (int64_t i = 0; i < nops; ++i) {
    const ExprOp& op = p->block_ops_[i];
    if (op.kind == ExprOp::Kind::kMap) continue;
    p->value_buffer_[op.out] = take(bytes_of(op.out));
    if (last_use[op.out] < 0) last_use[op.out] = i;  // unused value: free right away
    std::vector<int> freed;
    uses(op, [&](int v) {
      if (last_use[v] == i && !p->value_invariant_[v]) freed.push_back(v);
    });
    if (last_use[op.out] == i && !is_root[op.out]) freed.push_back(op.out);
    std::sort(freed.begin(), freed.end());
    freed.erase(std::unique(freed.begin(), freed.end()), freed.end());
    for (int v : freed) {
      bool splat = false;
      for (const ExprOp& s : p->splat_ops_) splat |= s.out == v;
      if (!splat && p->value_buffer_[v] >= 0)
        free_buffers.emplace(buffer_bytes[p->value_buffer_[v]], p->value_buffer_[v]);
    }
  }
  p->buffer_offsets_.clear();
  int64_t off = 0;
  for (int64_t b : buffer_bytes) {
    p->buffer_offsets_.push_back(off);
    off += b;
  }
  p->scratch_bytes_ = off;
  // A root may be written straight to its destination when a block op (not a read, not a
  // splat) computes it and no other root shares its value.
  for (size_t r = 0; r < p->root_block_values_.size(); ++r) {
    const int v = p->root_block_values_[r];
    bool direct = false;
    for (ExprOp& op : p->block_ops_) {
      if (op.kind == ExprOp::Kind::kMap || op.out != v) continue;
      direct = true;
      // A gathered root read fills its destination directly (a transpose or slice fusion
      // gathered into a buffer and then copied it).
      if (op.kind == ExprOp::Kind::kRead) op.gather_in_place = true;
    }
    // A value shared by several roots (a multi-output reduction's loop output that is also
    // what it folds) goes to the first of them given a destination (EvalBlock).
    // A value read later by another op must not live in the destination if that op could be
    // writing elsewhere... every op reads its inputs at the same positions, so a destination
    // is as good as a buffer.
    p->root_direct_.push_back(direct);
  }
  {
    int64_t w = 1;
    for (const ExprOp& op : p->block_ops_) {
      switch (op.kind) {
        case ExprOp::Kind::kMap:
        case ExprOp::Kind::kSplat: break;
        case ExprOp::Kind::kChain:
          for (uint8_t code : op.codes)
            w += code == kChainTanh || (code & 3) == kChainDiv ? 4 : 1;
          break;
        case ExprOp::Kind::kCompute: {
          if (!op.fn) {
            w += 8;
            break;
          }
          switch (op.instr->opcode()) {
            case HloOpcode::kExp: case HloOpcode::kExpm1: case HloOpcode::kLog:
            case HloOpcode::kLog1p: case HloOpcode::kTanh: case HloOpcode::kLogistic:
            case HloOpcode::kPower: case HloOpcode::kSin: case HloOpcode::kCos:
            case HloOpcode::kTan: case HloOpcode::kErf: case HloOpcode::kAtan2:
            case HloOpcode::kCbrt: case HloOpcode::kDivide: case HloOpcode::kSqrt:
            case HloOpcode::kRsqrt: case HloOpcode::kRemainder:
              w += 4;
              break;
            default:
              w += 1;
          }
          break;
        }
        default: w += 1;
      }
    }
    p->work_per_element_ = w;
  }
  p->PrecomputeBlockRuns();
  return p;
}

std::string ExprProgram::ToString() const {
  std::ostringstream os;
  auto list = [&](const char* name, const std::vector<ExprOp>& ops) {
    os << name << ":\n";
    for (const ExprOp& op : ops) {
      os << "  ";
      switch (op.kind) {
        case ExprOp::Kind::kMap: {
          const ExprMap& m = *maps_[op.map];
          os << "map " << op.map << " <- " << m.parent << " dims [" << StrJoin(m.c_dims, ",")
             << "]";
          if (m.kind == MapKind::kAffine) os << " coef [" << StrJoin(m.coef, ",") << "]";
          if (m.kind == MapKind::kWindow) os << " window";
          if (m.kind == MapKind::kScalar) os << " scalar";
          break;
        }
        case ExprOp::Kind::kRead: os << "v" << op.out << " = read in" << op.input << " @map " << op.map; break;
        case ExprOp::Kind::kIota: os << "v" << op.out << " = iota @map " << op.map; break;
        case ExprOp::Kind::kCompute:
          os << "v" << op.out << " = " << HloOpcodeString(op.instr->opcode()) << "(";
          for (int k = 0; k < op.num_in; ++k) os << (k ? ", v" : "v") << op.in[k];
          os << ")" << (op.fn ? "" : " [generic]");
          break;
        case ExprOp::Kind::kPad: os << "v" << op.out << " = pad(v" << op.values[0] << ", v" << op.values[1] << ")"; break;
        case ExprOp::Kind::kConcat: os << "v" << op.out << " = concat(" << StrJoin(op.values, ",") << ")"; break;
        case ExprOp::Kind::kSplat: os << "v" << op.out << " = splat(v" << op.in[0] << ")"; break;
        case ExprOp::Kind::kChain: {
          static const char* kNames[] = {"add", "subtract", "multiply", "divide"};
          os << "v" << op.out << " = chain(v" << op.values[0];
          for (size_t k = 0; k < op.codes.size(); ++k) {
            const uint8_t c = op.codes[k];
            if (c == kChainTanh) {
              os << "; tanh(.)";
              continue;
            }
            const std::string b = (c & kChainSelf) ? "." : "v" + std::to_string(op.values[k + 1]);
            os << "; " << kNames[c & 3] << ((c & kChainRev) ? "(" + b + ", .)" : "(., " + b + ")");
          }
          os << ")";
          break;
        }
      }
      os << "\n";
    }
  };
  list("invariant", invariant_ops_);
  list("splat", splat_ops_);
  list("block", block_ops_);
  os << "roots:";
  for (int v : root_block_values_) os << " v" << v;
  return os.str();
}

}  // namespace kiln::cpu::internal
