// Buffer assignment, part 1: the walk over the flattened schedule that decides which positions
// (instruction, array leaf) share a logical buffer, and when each position is defined and read.
// Part 2 (buffer_packing.cc): live ranges, donated parameters, arena packing, the result.
#include <algorithm>
#include <cstddef>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/passes/buffer_assigner.h"
#include "kiln/passes/fusion_policy.h"

namespace kiln {

size_t PositionKeyHash::operator()(const PositionKey& k) const {
  size_t h = std::hash<const void*>()(k.instr);
  for (int64_t i : k.index) h = h * 31 + std::hash<int64_t>()(i);
  return h;
}

size_t BufferAssignment::KeyHash::operator()(const Key& k) const {
  return PositionKeyHash()(PositionKey{k.instr, k.index});
}

namespace {

void CollectLeaves(const Shape& s, ShapeIndex& prefix, std::vector<ShapeIndex>& out) {
  if (s.IsTuple()) {
    for (int64_t i = 0; i < s.tuple_shapes_size(); ++i) {
      prefix.push_back(i);
      CollectLeaves(s.tuple_shapes(i), prefix, out);
      prefix.pop_back();
    }
  } else if (s.IsArray()) {
    out.push_back(prefix);
  }
}

ShapeIndex Concat(const ShapeIndex& a, const ShapeIndex& b) {
  ShapeIndex r = a;
  r.insert(r.end(), b.begin(), b.end());
  return r;
}

bool HasDefaultLayout(const Shape& s) { return !s.has_layout() || s.layout().IsDefaultFor(s.rank()); }

// A reshape that only relabels a dense row-major array (same bytes in the same order).
bool IsReshapeView(const HloInstruction& i) {
  const Shape& in = i.operand(0)->shape();
  return i.shape().IsArray() && in.IsArray() && i.shape().element_type() == in.element_type() &&
         HasDefaultLayout(i.shape()) && HasDefaultLayout(in);
}

}  // namespace

std::vector<ShapeIndex> ArrayLeafIndices(const Shape& shape) {
  std::vector<ShapeIndex> out;
  ShapeIndex prefix;
  CollectLeaves(shape, prefix, out);
  return out;
}

BufferAssigner::BufferAssigner(const HloModule& module, const BufferAssignmentOptions& options,
                               const HloSchedule& schedule, std::unordered_set<int64_t> undonatable)
    : module_(module), options_(options), schedule_(schedule), graph_(module),
      undonatable_(std::move(undonatable)) {}

int64_t BufferAssigner::NewBuffer(LogicalBuffer::Origin origin, const HloInstruction* def,
                                  const ShapeIndex& index) {
  LogicalBuffer b;
  b.origin = origin;
  b.def = def;
  b.index = index;
  b.size = options_.size_fn(def->shape().Subshape(index));
  b.writable = origin == LogicalBuffer::Origin::kArena;
  buffers_.push_back(std::move(b));
  positions_.emplace_back();
  return static_cast<int64_t>(buffers_.size()) - 1;
}

int64_t BufferAssigner::Find(int64_t b) const {
  if (b < 0) return b;
  while (buffers_[b].parent >= 0) b = buffers_[b].parent;
  return b;
}

void BufferAssigner::Merge(int64_t from, int64_t into) {
  from = Find(from);
  into = Find(into);
  if (from == into) return;
  buffers_[from].parent = into;
  LogicalBuffer& b = buffers_[into];
  b.size = std::max(b.size, buffers_[from].size);
  b.live_out |= buffers_[from].live_out;
  auto& dst = positions_[into];
  auto& src = positions_[from];
  dst.insert(dst.end(), src.begin(), src.end());
  src.clear();
  src.shrink_to_fit();
}

void BufferAssigner::SetPosition(const HloInstruction* instr, const ShapeIndex& index, int64_t buffer) {
  buffer = Find(buffer);
  pos_[PositionKey{instr, index}] = buffer;
  positions_[buffer].push_back(PositionKey{instr, index});
}

int64_t BufferAssigner::Get(const HloInstruction* instr, const ShapeIndex& index) const {
  auto it = pos_.find(PositionKey{instr, index});
  return it == pos_.end() ? -1 : Find(it->second);
}

void BufferAssigner::Define(const HloInstruction* instr) {
  for (const ShapeIndex& leaf : ArrayLeafIndices(instr->shape()))
    SetPosition(instr, leaf, NewBuffer(LogicalBuffer::Origin::kArena, instr, leaf));
}

void BufferAssigner::AliasLeaves(const HloInstruction* instr, const HloInstruction* source,
                                 const ShapeIndex& prefix) {
  for (const ShapeIndex& leaf : ArrayLeafIndices(instr->shape())) {
    int64_t b = Get(source, Concat(prefix, leaf));
    // A shape mismatch the verifier would reject: give the leaf storage of its own.
    if (b < 0) b = NewBuffer(LogicalBuffer::Origin::kArena, instr, leaf);
    SetPosition(instr, leaf, b);
  }
}

namespace {

// An in-place update (IsInPlaceUpdate) that is an output of its fusion: the root or a root
// tuple's operand, whose kernel iterates over the update window.
bool IsInPlaceUpdateOutput(const HloInstruction& dus) {
  if (!IsInPlaceUpdate(dus)) return false;
  if (dus.IsRoot()) return true;
  return !dus.users().empty() && std::all_of(dus.users().begin(), dus.users().end(), [](const HloInstruction* u) {
    return u->opcode() == HloOpcode::kTuple && u->IsRoot();
  });
}

}  // namespace

bool ReadsOperandElementwise(const HloInstruction& instr, int64_t k) {
  const Shape& in = instr.operand(k)->shape();
  if (!in.IsArray()) return false;
  if (instr.IsElementwise()) {
    for (const ShapeIndex& leaf : ArrayLeafIndices(instr.shape()))
      if (instr.shape().Subshape(leaf).dimensions() != in.dimensions()) return false;
    return instr.opcode() != HloOpcode::kMap || in.rank() == 0;
  }
  if (instr.opcode() != HloOpcode::kFusion || instr.attrs().fusion_kind != FusionKind::kLoop ||
      instr.called_computations().empty() || !instr.fused_computation())
    return false;
  const HloComputation* f = instr.fused_computation();
  if (k >= f->num_parameters()) return false;
  // The kernel's iteration space: the output dims, or -- a fusion with an in-place update
  // output -- the update window (size-1 dimensions aside), where the other outputs have the
  // window's dims.
  const HloInstruction* root = f->root_instruction();
  std::vector<const HloInstruction*> outs;
  if (root->opcode() == HloOpcode::kTuple) outs.assign(root->operands().begin(), root->operands().end());
  else outs.push_back(root);
  const HloInstruction* update = nullptr;
  for (const HloInstruction* o : outs)
    if (IsInPlaceUpdateOutput(*o)) {
      if (update) return false;
      update = o;
    }
  const std::vector<int64_t> in_dims = SqueezedDims(in.dimensions());
  for (const HloInstruction* o : outs) {
    if (o == update) continue;
    if (!o->shape().IsArray()) return false;
    if (update ? SqueezedDims(o->shape().dimensions()) != in_dims : o->shape().dimensions() != in.dimensions())
      return false;
  }
  if (update && SqueezedDims(update->operand(1)->shape().dimensions()) != in_dims) return false;
  std::vector<const HloInstruction*> work = {f->parameter_instruction(k)};
  std::unordered_set<const HloInstruction*> seen;
  while (!work.empty()) {
    const HloInstruction* x = work.back();
    work.pop_back();
    if (!seen.insert(x).second) continue;
    for (const HloInstruction* u : x->users()) {
      if (u->opcode() == HloOpcode::kTuple && u->IsRoot()) continue;
      if (update) {
        // Within the window's space: elementwise ops and reshapes of its dims (size-1 aside),
        // and the update operand of the in-place output.
        if (u == update && u->operand(1) == x && u->operand(0) != x &&
            std::count(u->operands().begin(), u->operands().end(), x) == 1)
          continue;
        const bool window = u->shape().IsArray() && SqueezedDims(u->shape().dimensions()) == in_dims;
        const bool reshape = u->opcode() == HloOpcode::kReshape || u->opcode() == HloOpcode::kBitcast;
        if (!(window && (reshape || (u->IsElementwise() && u->opcode() != HloOpcode::kMap)))) return false;
      } else {
        const bool same_dims = u->shape().IsArray() && u->shape().dimensions() == in.dimensions();
        if (!(u->IsElementwise() && u->opcode() != HloOpcode::kMap && same_dims)) return false;
      }
      work.push_back(u);
    }
  }
  return true;
}

int64_t BufferAssigner::UseTime(const HloInstruction* user) const {
  auto it = use_time_.find(user);
  return it == use_time_.end() ? -1 : it->second;
}

bool BufferAssigner::IsRootPosition(const PositionKey& p) const { return p.instr->IsRoot(); }

bool BufferAssigner::CanUpdateInPlace(int64_t b, const HloInstruction* x, int64_t operand_number) const {
  if (!options_.in_place || b < 0) return false;
  b = Find(b);
  const LogicalBuffer& buf = buffers_[b];
  if (!buf.writable || readonly_.count(b)) return false;
  const int64_t now = clock_;
  // x must not read the old value through another operand.
  for (int64_t i = 0; i < x->operand_count(); ++i) {
    if (i == operand_number) continue;
    for (const ShapeIndex& leaf : ArrayLeafIndices(x->operand(i)->shape()))
      if (Get(x->operand(i), leaf) == b) return false;
  }
  for (const PositionKey& p : positions_[b]) {
    if (IsRootPosition(p)) return false;  // an output, or read at a loop/branch end
    for (const HloInstruction* u : p.instr->users()) {
      if (u == x) continue;
      int64_t t = UseTime(u);
      if (t < 0 || t > now) return false;  // read later (or not visited yet: later)
    }
  }
  return true;
}

Status BufferAssigner::Visit(const HloComputation* c, const std::vector<std::vector<int64_t>>* params) {
  const auto& seq = schedule_.sequence(c);
  if (static_cast<int64_t>(seq.size()) != c->instruction_count())
    return FailedPrecondition("buffer assignment: the schedule of ", c->name(), " lists ", seq.size(),
                              " of its ", c->instruction_count(), " instructions");
  for (const HloInstruction* instr : seq) {
    const int64_t t = ++clock_;
    def_time_[instr] = t;
    use_time_[instr] = t;
    switch (instr->opcode()) {
      case HloOpcode::kParameter: {
        const int64_t n = instr->parameter_number();
        std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr->shape());
        if (!params) {
          // Entry parameters: buffers made up front (allocation order).
          for (const ShapeIndex& leaf : leaves) {
            auto it = std::find(param_leaf_ids_.begin(), param_leaf_ids_.end(), std::make_pair(n, leaf));
            if (it == param_leaf_ids_.end()) return Internal("buffer assignment: unknown parameter leaf");
            SetPosition(instr, leaf, param_buffers_[it - param_leaf_ids_.begin()]);
          }
          break;
        }
        if (n < 0 || n >= static_cast<int64_t>(params->size()) ||
            (*params)[n].size() != leaves.size())
          return Internal("buffer assignment: parameter ", n, " of ", c->name(), " does not match its caller");
        for (size_t k = 0; k < leaves.size(); ++k) SetPosition(instr, leaves[k], (*params)[n][k]);
        break;
      }
      case HloOpcode::kConstant:
        for (const ShapeIndex& leaf : ArrayLeafIndices(instr->shape()))
          SetPosition(instr, leaf, NewBuffer(LogicalBuffer::Origin::kConstant, instr, leaf));
        break;
      case HloOpcode::kTuple:
        for (int64_t i = 0; i < instr->operand_count(); ++i)
          for (const ShapeIndex& leaf : ArrayLeafIndices(instr->operand(i)->shape())) {
            int64_t b = Get(instr->operand(i), leaf);
            if (b < 0) b = NewBuffer(LogicalBuffer::Origin::kArena, instr, Concat({i}, leaf));
            SetPosition(instr, Concat({i}, leaf), b);
          }
        break;
      case HloOpcode::kGetTupleElement:
        AliasLeaves(instr, instr->operand(0), {instr->attrs().tuple_index});
        break;
      case HloOpcode::kBitcast:
      case HloOpcode::kOptimizationBarrier:
      case HloOpcode::kDomain:
      case HloOpcode::kAddDependency:
        AliasLeaves(instr, instr->operand(0), {});
        break;
      case HloOpcode::kReshape:
        if (IsReshapeView(*instr)) AliasLeaves(instr, instr->operand(0), {});
        else Define(instr);
        break;
      case HloOpcode::kWhile:
        KILN_RETURN_IF_ERROR(VisitWhile(instr));
        break;
      case HloOpcode::kConditional:
        KILN_RETURN_IF_ERROR(VisitConditional(instr));
        break;
      case HloOpcode::kCall:
        KILN_RETURN_IF_ERROR(VisitCall(instr));
        break;
      case HloOpcode::kDynamicUpdateSlice: {
        int64_t b = Get(instr->operand(0), {});
        if (instr->shape().IsArray() && CanUpdateInPlace(b, instr, 0)) {
          SetPosition(instr, {}, b);
          aliased_bytes_ += buffers_[b].size;
        } else {
          Define(instr);
        }
        break;
      }
      case HloOpcode::kFusion:
      case HloOpcode::kCustomCall:
        VisitFusionOrCustomCall(instr);
        break;
      default:
        Define(instr);
        break;
    }
  }
  return OkStatus();
}

void BufferAssigner::VisitFusionOrCustomCall(const HloInstruction* instr) {
  // Candidate in-place outputs: output leaf -> (operand, operand leaf).
  std::vector<std::pair<ShapeIndex, std::pair<int64_t, ShapeIndex>>> candidates;
  for (const OutputOperandAlias& a : instr->attrs().output_to_operand_aliasing)
    candidates.push_back({a.output_index, {a.operand_number, a.operand_index}});
  if (instr->opcode() == HloOpcode::kFusion && !instr->called_computations().empty() &&
      instr->fused_computation() && instr->fused_computation()->root_instruction()) {
    const HloInstruction* root = instr->fused_computation()->root_instruction();
    auto consider = [&](const HloInstruction* v, const ShapeIndex& out) {
      if (v->opcode() != HloOpcode::kDynamicUpdateSlice) return;
      const HloInstruction* p = v->operand(0);
      // The buffer operand must be a fused parameter read by nothing else (the kernel writes
      // only the update window, so other readers could see new values).
      if (p->opcode() != HloOpcode::kParameter || p->user_count() != 1) return;
      for (int64_t i = 1; i < v->operand_count(); ++i)
        if (v->operand(i) == p) return;
      candidates.push_back({out, {p->parameter_number(), {}}});
    };
    if (root->opcode() == HloOpcode::kTuple) {
      for (int64_t i = 0; i < root->operand_count(); ++i) consider(root->operand(i), {i});
    } else {
      consider(root, {});
    }
  }
  std::unordered_set<int64_t> taken;
  for (const ShapeIndex& leaf : ArrayLeafIndices(instr->shape())) {
    int64_t chosen = -1;
    for (const auto& [out, src] : candidates) {
      if (out != leaf || src.first < 0 || src.first >= instr->operand_count()) continue;
      const HloInstruction* op = instr->operand(src.first);
      int64_t b = Get(op, src.second);
      if (b < 0 || taken.count(b)) continue;
      if (buffers_[b].size != options_.size_fn(instr->shape().Subshape(leaf))) continue;
      if (!CanUpdateInPlace(b, instr, src.first)) continue;
      chosen = b;
      break;
    }
    if (chosen >= 0) {
      taken.insert(chosen);
      SetPosition(instr, leaf, chosen);
      aliased_bytes_ += buffers_[chosen].size;
    } else {
      SetPosition(instr, leaf, NewBuffer(LogicalBuffer::Origin::kArena, instr, leaf));
    }
  }
}

Status BufferAssigner::VisitWhile(const HloInstruction* w) {
  const int64_t t_begin = clock_;
  WhileInfo info;
  info.leaves = ArrayLeafIndices(w->shape());
  const HloInstruction* init = w->operand(0);
  // Whether the body returns state leaf `leaf` unchanged: the root's leaf is the body
  // parameter's same leaf (through tuples and get-tuple-elements).
  auto passes_through = [&](const ShapeIndex& leaf) {
    const HloComputation* body = w->while_body();
    const HloInstruction* node = body->root_instruction();
    size_t p = 0;
    while (node && p < leaf.size() && node->opcode() == HloOpcode::kTuple &&
           leaf[p] < node->operand_count())
      node = node->operand(leaf[p++]);
    ShapeIndex from_param;
    while (node && node->opcode() == HloOpcode::kGetTupleElement) {
      from_param.insert(from_param.begin(), node->attrs().tuple_index);
      node = node->operand(0);
    }
    if (!node || node != body->parameter_instruction(0)) return false;
    from_param.insert(from_param.end(), leaf.begin() + static_cast<std::ptrdiff_t>(p), leaf.end());
    return from_param == leaf;
  };
  std::unordered_set<int64_t> taken;
  std::vector<int64_t> shared;  // init buffers shared read-only by pass-through state leaves
  for (const ShapeIndex& leaf : info.leaves) {
    int64_t b = Get(init, leaf);
    info.init.push_back(b);
    int64_t state;
    if (b >= 0 && !taken.count(b) && CanUpdateInPlace(b, w, 0)) {
      state = b;  // the state takes over the init buffer
      taken.insert(b);
      info.copy_init.push_back(false);
      aliased_bytes_ += buffers_[b].size;
    } else if (b >= 0 && options_.in_place && !taken.count(b) && passes_through(leaf)) {
      // Beyond Note [While loop buffers] (kept out of the header, which every pass includes):
      // a state leaf the loop never changes reads the init buffer itself, whatever it is (an
      // undonated parameter, a constant, a value read after the loop): nothing in the loop
      // may write it (read-only while the condition and body are visited), so it still holds
      // the init value when the loop ends, which is also the while's result leaf.
      state = b;
      taken.insert(b);
      shared.push_back(b);
      info.copy_init.push_back(false);
      aliased_bytes_ += buffers_[b].size;
    } else {
      state = NewBuffer(LogicalBuffer::Origin::kArena, w, leaf);
      info.copy_init.push_back(true);
    }
    info.state.push_back(state);
  }
  std::vector<std::vector<int64_t>> params = {info.state};
  for (int64_t b : shared) ++readonly_[b];
  KILN_RETURN_IF_ERROR(Visit(w->while_condition(), &params));
  KILN_RETURN_IF_ERROR(Visit(w->while_body(), &params));
  for (int64_t b : shared)
    if (--readonly_[b] == 0) readonly_.erase(b);
  const int64_t t_back = ++clock_;
  const HloInstruction* body_root = w->while_body()->root_instruction();

  // May buffer r (a body root leaf) be computed directly into state s?
  auto can_compute_into_state = [&](int64_t r, int64_t s) {
    r = Find(r);
    s = Find(s);
    if (!options_.in_place || r < 0 || buffers_[r].origin != LogicalBuffer::Origin::kArena ||
        readonly_.count(r))
      return false;
    for (int64_t st : info.state)
      if (Find(st) == r) return false;  // another state leaf (a permutation)
    int64_t def = INT64_MAX;
    const HloInstruction* definer = nullptr;
    for (const PositionKey& p : positions_[r]) {
      int64_t d = def_time_.at(p.instr);
      if (d <= t_begin) return false;  // not defined inside the loop
      if (d < def) definer = p.instr;
      def = std::min(def, d);
    }
    for (const PositionKey& p : positions_[s]) {
      if (p.instr == body_root) return false;
      for (const HloInstruction* u : p.instr->users()) {
        if (u == w) continue;
        if (u == body_root) return false;  // the old state is needed at the loop's end
        int64_t t = UseTime(u);
        if (t < 0) return false;
        if (t <= t_begin || t < def) continue;
        // The definer itself may read the old state where it reads each element only to
        // compute the same element (an elementwise update x -> f(x): Note [While loop buffers]).
        if (!options_.elementwise_state_updates || t != def || u != definer) return false;
        for (int64_t k = 0; k < u->operand_count(); ++k)
          if (u->operand(k) == p.instr && !ReadsOperandElementwise(*u, k)) return false;
      }
    }
    return true;
  };
  for (size_t j = 0; j < info.leaves.size(); ++j) {
    int64_t r = Get(body_root, info.leaves[j]);
    info.body_result.push_back(r);
    if (r >= 0 && Find(r) == Find(info.state[j])) {
      info.copy_body_result.push_back(false);  // pass-through / updated in place
    } else if (can_compute_into_state(r, info.state[j])) {
      aliased_bytes_ += buffers_[Find(r)].size;
      Merge(r, info.state[j]);
      info.copy_body_result.push_back(false);
    } else {
      info.copy_body_result.push_back(true);
    }
  }
  info.staging.assign(info.leaves.size(), -1);
  for (size_t j = 0; j < info.leaves.size(); ++j) {
    if (!info.copy_body_result[j]) continue;
    int64_t r = Find(info.body_result[j]);
    extra_uses_.push_back({r, t_back});
    for (size_t k = 0; k < info.leaves.size(); ++k) {
      if (k != j && info.copy_body_result[k] && Find(info.state[k]) == r) {
        int64_t s = NewBuffer(LogicalBuffer::Origin::kArena, w, info.leaves[j]);
        extra_ranges_.push_back({s, {t_back, t_back}});
        info.staging[j] = s;
        break;
      }
    }
  }
  for (size_t j = 0; j < info.leaves.size(); ++j) {
    extra_ranges_.push_back({info.state[j], {t_begin, t_back}});
    SetPosition(w, info.leaves[j], info.state[j]);
  }
  def_time_[w] = t_begin;
  use_time_[w] = t_begin;  // the init is read (copied or taken over) when the loop starts
  whiles_[w] = std::move(info);
  return OkStatus();
}

Status BufferAssigner::VisitConditional(const HloInstruction* c) {
  const int64_t t_begin = clock_;
  std::vector<ShapeIndex> leaves = ArrayLeafIndices(c->shape());
  std::vector<int64_t> results;
  for (const ShapeIndex& leaf : leaves) results.push_back(NewBuffer(LogicalBuffer::Origin::kArena, c, leaf));
  const auto& branches = c->branch_computations();
  for (size_t b = 0; b < branches.size(); ++b) {
    if (static_cast<int64_t>(b) + 1 >= c->operand_count())
      return Internal("buffer assignment: conditional %", c->name(), " has no operand for branch ", b);
    const HloInstruction* op = c->operand(static_cast<int64_t>(b) + 1);
    std::vector<std::vector<int64_t>> params(1);
    for (const ShapeIndex& leaf : ArrayLeafIndices(op->shape())) {
      int64_t buf = Get(op, leaf);
      if (buf < 0) buf = NewBuffer(LogicalBuffer::Origin::kArena, op, leaf);
      params[0].push_back(buf);
      ++readonly_[buf];
    }
    const int64_t branch_begin = clock_;
    KILN_RETURN_IF_ERROR(Visit(branches[b], &params));
    const int64_t branch_end = ++clock_;
    for (int64_t buf : params[0])
      if (--readonly_[buf] == 0) readonly_.erase(buf);
    const HloInstruction* root = branches[b]->root_instruction();
    for (size_t j = 0; j < leaves.size(); ++j) {
      int64_t r = Get(root, leaves[j]);
      if (r < 0) continue;
      bool fresh = options_.in_place && buffers_[r].origin == LogicalBuffer::Origin::kArena &&
                   !readonly_.count(r);
      for (int64_t res : results) fresh = fresh && Find(res) != r;
      for (const PositionKey& p : positions_[r]) fresh = fresh && def_time_.at(p.instr) > branch_begin;
      if (fresh) {
        aliased_bytes_ += buffers_[r].size;
        Merge(r, results[j]);  // computed straight into the result
      } else {
        extra_uses_.push_back({r, branch_end});  // copied into the result at the branch's end
      }
    }
  }
  const int64_t t_end = ++clock_;
  for (size_t j = 0; j < leaves.size(); ++j) {
    extra_ranges_.push_back({results[j], {t_begin, t_end}});
    SetPosition(c, leaves[j], results[j]);
  }
  def_time_[c] = t_begin;
  use_time_[c] = t_end;  // branches may read the operands anywhere
  return OkStatus();
}

Status BufferAssigner::VisitCall(const HloInstruction* call) {
  const int64_t t_begin = clock_;
  const HloComputation* callee = call->to_apply();
  if (!callee) return Internal("buffer assignment: call %", call->name(), " has no callee");
  std::vector<std::vector<int64_t>> params;
  for (const HloInstruction* op : call->operands()) {
    params.emplace_back();
    for (const ShapeIndex& leaf : ArrayLeafIndices(op->shape())) {
      int64_t buf = Get(op, leaf);
      if (buf < 0) buf = NewBuffer(LogicalBuffer::Origin::kArena, op, leaf);
      params.back().push_back(buf);
      ++readonly_[buf];
    }
  }
  KILN_RETURN_IF_ERROR(Visit(callee, &params));
  const int64_t t_end = ++clock_;
  for (const auto& p : params)
    for (int64_t buf : p)
      if (--readonly_[buf] == 0) readonly_.erase(buf);
  AliasLeaves(call, callee->root_instruction(), {});
  def_time_[call] = t_begin;
  use_time_[call] = t_end;
  return OkStatus();
}

StatusOr<std::unique_ptr<BufferAssignment>> BufferAssigner::Run() {
  const HloComputation* entry = module_.entry_computation();
  if (!entry) return InvalidArgument("buffer assignment: module ", module_.name(), " has no entry");
  // One set of slices per computation: each must run from one call site.
  for (const HloComputation* c : graph_.sequential_computations()) {
    if (c == entry) continue;
    int64_t sites = 0;
    for (const HloInstruction* caller : graph_.callers(c))
      for (const HloComputation* callee : caller->called_computations()) sites += callee == c;
    if (sites != 1)
      return FailedPrecondition("buffer assignment: computation ", c->name(), " is called from ", sites,
                                " places; run FlattenCallGraph first");
  }
  // Entry parameter buffers, in parameter order.
  auto donated = [&](int64_t n, const ShapeIndex& index) {
    for (const InputOutputAlias& a : module_.header().input_output_alias)
      if (a.parameter_number == n && a.parameter_index == index) return true;
    for (const BufferDonor& d : module_.header().buffer_donors)
      if (d.parameter_number == n && d.parameter_index == index) return true;
    return false;
  };
  for (int64_t n = 0; n < entry->num_parameters(); ++n) {
    const HloInstruction* p = entry->parameter_instruction(n);
    if (!p) return InvalidArgument("buffer assignment: entry parameter ", n, " is missing");
    for (const ShapeIndex& leaf : ArrayLeafIndices(p->shape())) {
      int64_t id = static_cast<int64_t>(param_buffers_.size());
      int64_t b = NewBuffer(LogicalBuffer::Origin::kParameter, p, leaf);
      buffers_[b].writable = options_.use_donated_parameters && donated(n, leaf) && !undonatable_.count(id);
      param_buffers_.push_back(b);
      param_leaf_ids_.push_back({n, leaf});
    }
  }
  KILN_RETURN_IF_ERROR(Visit(entry, nullptr));
  end_time_ = ++clock_;
  for (const ShapeIndex& leaf : ArrayLeafIndices(entry->root_instruction()->shape())) {
    int64_t b = Get(entry->root_instruction(), leaf);
    if (b < 0) continue;
    buffers_[b].live_out = true;
    extra_uses_.push_back({b, end_time_});
  }
  ComputeLiveRanges();
  KILN_RETURN_IF_ERROR(ResolveDonations());
  ComputeLiveRanges();
  std::unique_ptr<BufferAssignment> out(new BufferAssignment());
  KILN_RETURN_IF_ERROR(Pack(*out));
  FillResult(*out);
  return out;
}

StatusOr<std::unique_ptr<BufferAssignment>> BufferAssignment::Run(const HloModule& module,
                                                                  const BufferAssignmentOptions& options) {
  BufferAssignmentOptions opts = options;
  if (!opts.size_fn)
    opts.size_fn = [](const Shape& s) -> int64_t {
      return s.IsArray() ? s.num_elements() * PrimitiveByteWidth(s.element_type()) : 0;
    };
  if (opts.alignment <= 0 || (opts.alignment & (opts.alignment - 1)) != 0)
    return InvalidArgument("buffer assignment: alignment ", opts.alignment, " is not a power of two");
  HloSchedule post;
  const HloSchedule* schedule = opts.schedule;
  if (schedule) {
    KILN_RETURN_IF_ERROR(schedule->Verify(module));
  } else {
    post = PostOrderSchedule(module);
    schedule = &post;
  }
  // A must-alias donation that conflicts with in-place updates through the same parameter is
  // retried with that parameter leaf no longer writable (Note [Donated parameters]).
  std::unordered_set<int64_t> undonatable;
  for (;;) {
    BufferAssigner assigner(module, opts, *schedule, undonatable);
    StatusOr<std::unique_ptr<BufferAssignment>> r = assigner.Run();
    if (r.ok() || assigner.undonatable().size() <= undonatable.size()) return r;
    undonatable = assigner.undonatable();
  }
}

}  // namespace kiln
