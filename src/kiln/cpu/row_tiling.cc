#include "kiln/cpu/row_tiling.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kiln/base/strings.h"
#include "kiln/hlo/clone.h"
#include "kiln/hlo/computation.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln::cpu {

namespace {

enum class Need : uint8_t { kNone, kRow, kInvariant };

// Whether every array leaf of `shape` has leading dimension `rows`.
bool HasRows(const Shape& shape, int64_t rows) {
  if (shape.IsTuple()) {
    if (shape.tuple_shapes_size() == 0) return false;
    for (const Shape& s : shape.tuple_shapes())
      if (!HasRows(s, rows)) return false;
    return true;
  }
  return shape.IsArray() && shape.rank() >= 1 && shape.dimensions(0) == rows;
}

Shape WithRows(const Shape& shape, int64_t rows) {
  Shape s = shape;
  if (s.IsTuple()) {
    for (Shape& e : s.mutable_tuple_shapes()) e = WithRows(e, rows);
  } else if (s.IsArray() && s.rank() >= 1) {
    s.set_dimensions(0, rows);
  }
  return s;
}

struct Analysis {
  bool ok = false;
  int64_t rows = 0;
  std::unordered_map<const HloInstruction*, Need> need;
};

// See Note [Row tiling]: the requirement on every instruction of the fused computation,
// from the root down.
Analysis Analyze(const HloInstruction& fusion) {
  Analysis a;
  if (fusion.opcode() != HloOpcode::kFusion || !fusion.fused_computation()) return a;
  const FusionKind kind = fusion.attrs().fusion_kind;
  if (kind != FusionKind::kLoop && kind != FusionKind::kInput) return a;
  for (const HloInstruction* op : fusion.operands())
    if (!op->shape().IsArray()) return a;
  const Shape& out = fusion.shape();
  const Shape& first = out.IsTuple() ? (out.tuple_shapes_size() ? out.tuple_shapes(0) : out) : out;
  if (!first.IsArray() || first.rank() < 1) return a;
  const int64_t rows = first.dimensions(0);
  if (rows < 2 || !HasRows(out, rows)) return a;

  auto require = [&](const HloInstruction* i, Need n) {
    Need& cur = a.need[i];
    if (cur == Need::kNone) cur = n;
    return cur == n;
  };
  const HloComputation* c = fusion.fused_computation();
  const HloInstruction* root = c->root_instruction();
  const bool tuple_root = root->opcode() == HloOpcode::kTuple;
  if (tuple_root) {
    for (const HloInstruction* op : root->operands())
      if (!require(op, Need::kRow)) return a;
  } else if (!require(root, Need::kRow)) {
    return a;
  }
  std::vector<HloInstruction*> post = c->MakeInstructionPostOrder();
  for (auto it = post.rbegin(); it != post.rend(); ++it) {
    const HloInstruction* instr = *it;
    if (tuple_root && instr == root) continue;
    const Need n = a.need[instr];
    if (n == Need::kNone) continue;  // unused
    if (n == Need::kInvariant) {
      for (const HloInstruction* op : instr->operands())
        if (!require(op, Need::kInvariant)) return a;
      continue;
    }
    if (!HasRows(instr->shape(), rows)) return a;
    auto all_operands = [&](Need need) {
      for (const HloInstruction* op : instr->operands())
        if (!require(op, need)) return false;
      return true;
    };
    bool ok = false;
    switch (instr->opcode()) {
      case HloOpcode::kParameter:
        ok = true;
        break;
      case HloOpcode::kBroadcast: {
        const std::vector<int64_t>& dims = instr->attrs().dimensions;
        auto pos = std::find(dims.begin(), dims.end(), 0);
        if (pos == dims.end()) ok = require(instr->operand(0), Need::kInvariant);
        else if (pos == dims.begin()) ok = require(instr->operand(0), Need::kRow);
        break;
      }
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
        ok = HasRows(instr->operand(0)->shape(), rows) && require(instr->operand(0), Need::kRow);
        break;
      case HloOpcode::kReduce: {
        const std::vector<int64_t>& dims = instr->attrs().dimensions;
        if (std::find(dims.begin(), dims.end(), 0) != dims.end()) break;
        const int64_t n_in = instr->operand_count() / 2;
        ok = true;
        for (int64_t k = 0; k < instr->operand_count() && ok; ++k)
          ok = require(instr->operand(k), k < n_in ? Need::kRow : Need::kInvariant);
        break;
      }
      case HloOpcode::kTranspose:
        ok = !instr->attrs().dimensions.empty() && instr->attrs().dimensions[0] == 0 &&
             require(instr->operand(0), Need::kRow);
        break;
      case HloOpcode::kIota:
        ok = instr->attrs().iota_dimension != 0;
        break;
      case HloOpcode::kConcatenate:
        ok = !instr->attrs().dimensions.empty() && instr->attrs().dimensions[0] != 0 &&
             all_operands(Need::kRow);
        break;
      default:
        if (instr->IsElementwise()) {
          ok = all_operands(Need::kRow);
          for (const HloInstruction* op : instr->operands()) ok = ok && HasRows(op->shape(), rows);
        }
        break;
    }
    if (!ok) return a;
  }
  a.ok = true;
  a.rows = rows;
  return a;
}

}  // namespace

RowLocality AnalyzeRowLocality(const HloInstruction& fusion) {
  RowLocality r;
  Analysis a = Analyze(fusion);
  if (!a.ok) return r;
  const HloComputation* c = fusion.fused_computation();
  r.row_operand.resize(fusion.operand_count());
  for (int64_t i = 0; i < fusion.operand_count(); ++i) {
    auto it = a.need.find(c->parameter_instruction(i));
    r.row_operand[i] = it != a.need.end() && it->second == Need::kRow;
  }
  r.ok = true;
  r.rows = a.rows;
  return r;
}

StatusOr<const HloInstruction*> CloneForRows(const HloInstruction& fusion, const RowLocality& locality,
                                             int64_t tile_rows, HloModule& module) {
  Analysis a = Analyze(fusion);
  if (!a.ok || !locality.ok || a.rows != locality.rows)
    return FailedPrecondition("cpu: %", fusion.name(), " is not row-local");
  const HloComputation* c = fusion.fused_computation();
  const std::string tag = StrCat(".rows", tile_rows);
  auto fused = std::make_unique<HloComputation>(StrCat(c->name(), tag));
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  for (const HloInstruction* instr : c->MakeInstructionPostOrder()) {
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* op : instr->operands()) operands.push_back(map.at(op));
    auto it = a.need.find(instr);
    const bool row = it != a.need.end() && it->second == Need::kRow;
    const Shape shape = row ? WithRows(instr->shape(), tile_rows) : instr->shape();
    map[instr] = fused->AddInstruction(CloneInstruction(*instr, shape, operands, instr->name()));
  }
  fused->set_root_instruction(map.at(c->root_instruction()));
  HloComputation* fused_ptr = module.AddComputation(std::move(fused));

  auto outer = std::make_unique<HloComputation>(StrCat(fusion.name(), tag));
  std::vector<HloInstruction*> params;
  for (int64_t i = 0; i < fusion.operand_count(); ++i) {
    const Shape& s = fusion.operand(i)->shape();
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter,
                                              locality.row_operand[i] ? WithRows(s, tile_rows) : s,
                                              StrCat("p", i));
    p->set_parameter_number(i);
    params.push_back(outer->AddInstruction(std::move(p)));
  }
  auto clone = CloneInstruction(fusion, WithRows(fusion.shape(), tile_rows), params, fusion.name());
  clone->set_called_computation(0, fused_ptr);
  HloInstruction* clone_ptr = outer->AddInstruction(std::move(clone));
  outer->set_root_instruction(clone_ptr);
  module.AddComputation(std::move(outer));
  return static_cast<const HloInstruction*>(clone_ptr);
}

StatusOr<std::vector<RowTiledChain>> FindRowTiledChains(
    std::span<const HloInstruction* const> sequence, const std::vector<bool>& emits_thunk,
    const BufferAssignment& assignment, const RowTilingOptions& options) {
  std::vector<RowTiledChain> chains;
  const int64_t n = static_cast<int64_t>(sequence.size());
  std::unordered_map<const HloInstruction*, int64_t> position;
  for (int64_t i = 0; i < n; ++i) position[sequence[i]] = i;
  // Instructions that get no thunk and only rename their operand's bytes (views).
  auto is_view = [&](const HloInstruction* instr) {
    auto it = position.find(instr);
    if (it == position.end() || emits_thunk[it->second]) return false;
    return instr->opcode() == HloOpcode::kReshape || instr->opcode() == HloOpcode::kBitcast;
  };
  const HloInstruction* root = n > 0 && sequence[0]->parent() ? sequence[0]->parent()->root_instruction() : nullptr;

  // The value (producer, array leaf number) an operand reads: through views and
  // get-tuple-elements of flat multi-output fusions.
  using Value = std::pair<const HloInstruction*, int64_t>;
  auto resolve = [&](const HloInstruction* op) -> Value {
    for (;;) {
      if (is_view(op) && op->shape().IsArray()) {
        op = op->operand(0);
        continue;
      }
      if (op->opcode() == HloOpcode::kGetTupleElement && op->shape().IsArray()) {
        const HloInstruction* t = op->operand(0);
        bool flat = t->shape().IsTuple();
        for (int64_t k = 0; flat && k < t->shape().tuple_shapes_size(); ++k) flat = t->shape().tuple_shapes(k).IsArray();
        if (flat && t->opcode() == HloOpcode::kFusion) return {t, op->attrs().tuple_index};
      }
      return {op, 0};
    }
  };

  struct Member {
    const HloInstruction* instr;
    RowLocality loc;
    std::vector<Value> inputs;        // resolved operands
    std::vector<BufferSlice> in_slices, out_slices;
  };
  std::vector<Member> cur;
  int64_t cur_begin = -1, cur_last = -1, cur_rows = 0;

  // Whether value v of member `m` is internal to the members: every reader is a member reading
  // it as a row operand, and it is not the computation's result.
  auto internal = [&](const std::vector<Member>& ms, const Value& v) {
    std::unordered_map<const HloInstruction*, const Member*> by_instr;
    for (const Member& m : ms) by_instr[m.instr] = &m;
    std::vector<const HloInstruction*> work;
    if (v.first == root) return false;
    if (v.first->shape().IsTuple()) {
      for (const Shape& e : v.first->shape().tuple_shapes())
        if (!e.IsArray()) return false;
      for (const HloInstruction* u : v.first->users()) {
        if (u->opcode() != HloOpcode::kGetTupleElement) return false;
        if (u->attrs().tuple_index == v.second) work.push_back(u);
      }
    } else {
      work.push_back(v.first);
    }
    while (!work.empty()) {
      const HloInstruction* node = work.back();
      work.pop_back();
      if (node == root) return false;
      for (const HloInstruction* u : node->users()) {
        if (is_view(u)) {
          work.push_back(u);
          continue;
        }
        auto it = by_instr.find(u);
        if (it == by_instr.end()) return false;
        for (int64_t k = 0; k < u->operand_count(); ++k)
          if (u->operand(k) == node && !it->second->loc.row_operand[k]) return false;
      }
    }
    return true;
  };

  // Every byte range the members touch in the arena (values internal to the chain live in
  // per-tile scratch instead): overlapping ranges must be the same row array, and no member
  // may read and write the same bytes (in-place kernels are left alone).
  struct Use {
    BufferSlice slice;
    bool row = false;
    int64_t row_bytes = 0;
    int64_t member = 0;
    bool output = false;
  };
  struct Plan {
    bool ok = false;
    RowTiledChain chain;
  };
  auto plan = [&](const std::vector<Member>& ms) -> Plan {
    Plan p;
    std::vector<Use> uses;
    std::map<Value, int> internal_index;
    RowTiledChain& chain = p.chain;
    for (int64_t mi = 0; mi < static_cast<int64_t>(ms.size()); ++mi) {
      const Member& m = ms[mi];
      RowTiledMember rm;
      rm.instr = m.instr;
      std::vector<ShapeIndex> leaves = ArrayLeafIndices(m.instr->shape());
      for (int64_t l = 0; l < static_cast<int64_t>(m.out_slices.size()); ++l) {
        const Value v{m.instr, l};
        if (internal(ms, v)) {
          internal_index[v] = static_cast<int>(chain.internal_row_bytes.size());
          rm.output_value.push_back(static_cast<int>(chain.internal_row_bytes.size()));
          chain.internal_row_bytes.push_back(m.out_slices[l].size / m.loc.rows);
        } else {
          rm.output_value.push_back(-1);
          uses.push_back({m.out_slices[l], true, m.out_slices[l].size / m.loc.rows, mi, true});
        }
      }
      for (int64_t k = 0; k < static_cast<int64_t>(m.inputs.size()); ++k) {
        auto it = internal_index.find(m.inputs[k]);
        if (it != internal_index.end()) {
          if (!m.loc.row_operand[k]) return p;  // cannot happen: internal values are read by rows
          rm.input_value.push_back(it->second);
          continue;
        }
        rm.input_value.push_back(-1);
        const bool row = m.loc.row_operand[k];
        uses.push_back({m.in_slices[k], row, row ? m.in_slices[k].size / m.loc.rows : 0, mi, false});
      }
      chain.members.push_back(std::move(rm));
    }
    for (size_t i = 0; i < uses.size(); ++i)
      for (size_t j = i + 1; j < uses.size(); ++j) {
        const Use& x = uses[i];
        const Use& y = uses[j];
        if (!x.slice.Overlaps(y.slice)) continue;
        if (x.slice != y.slice || !x.row || !y.row || x.row_bytes != y.row_bytes) return p;
        if (x.member == y.member && x.output != y.output) return p;
      }
    std::map<std::pair<int64_t, int64_t>, int64_t> distinct;
    for (const Use& u : uses)
      if (u.row) distinct[{u.slice.allocation, u.slice.offset}] = u.row_bytes;
    for (const auto& [k, b] : distinct) chain.row_bytes += b;
    for (int64_t b : chain.internal_row_bytes) chain.row_bytes += b;
    p.ok = true;
    return p;
  };

  Plan cur_plan;
  auto finish = [&]() {
    if (cur.size() >= 2 && cur_plan.ok) {
      RowTiledChain chain = std::move(cur_plan.chain);
      chain.begin = cur_begin;
      chain.end = cur_last + 1;
      chain.rows = cur_rows;
      if (chain.row_bytes * chain.rows >= options.min_chain_bytes) chains.push_back(std::move(chain));
    }
    cur.clear();
    cur_plan = Plan{};
  };

  for (int64_t i = 0; i < n; ++i) {
    if (!emits_thunk[i]) continue;
    const HloInstruction* instr = sequence[i];
    Member m{instr, instr->opcode() == HloOpcode::kFusion ? AnalyzeRowLocality(*instr) : RowLocality{}, {}, {}, {}};
    bool ok = m.loc.ok;
    for (int64_t k = 0; ok && k < instr->operand_count(); ++k) {
      StatusOr<BufferSlice> s = assignment.GetSlice(*instr->operand(k), {});
      ok = s.ok();
      if (ok) {
        m.in_slices.push_back(*s);
        m.inputs.push_back(resolve(instr->operand(k)));
      }
    }
    for (const ShapeIndex& leaf : ok ? ArrayLeafIndices(instr->shape()) : std::vector<ShapeIndex>{}) {
      StatusOr<BufferSlice> s = assignment.GetSlice(*instr, leaf);
      ok = ok && s.ok();
      if (ok) m.out_slices.push_back(*s);
    }
    if (!ok) {
      finish();
      continue;
    }
    if (!cur.empty() && m.loc.rows == cur_rows) {
      cur.push_back(m);
      Plan p = plan(cur);
      if (p.ok) {
        cur_plan = std::move(p);
        cur_last = i;
        continue;
      }
      cur.pop_back();
    }
    finish();
    cur.push_back(m);
    cur_plan = plan(cur);
    if (!cur_plan.ok) {
      cur.clear();
      continue;
    }
    cur_begin = cur_last = i;
    cur_rows = m.loc.rows;
  }
  finish();
  return chains;
}

int64_t ChooseTileRows(const RowTiledChain& chain, int threads, const RowTilingOptions& options) {
  int64_t t = std::max<int64_t>(1, options.tile_bytes / std::max<int64_t>(1, chain.row_bytes));
  const int64_t want_tiles = std::max<int64_t>(1, threads) * options.min_tiles_per_thread;
  t = std::min(t, std::max<int64_t>(1, chain.rows / want_tiles));
  return std::min(t, chain.rows);
}

}  // namespace kiln::cpu
