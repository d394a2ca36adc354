// Buffer assignment, part 2: live ranges, donated parameters, best-fit interval packing of the
// arena, and the BufferAssignment result (slices, while copy plans, statistics, dump).
#include <algorithm>
#include <cstdio>
#include <map>

#include "kiln/base/strings.h"
#include "kiln/passes/buffer_assigner.h"

namespace kiln {

std::string BufferSlice::ToString() const {
  if (!valid()) return "none";
  return StrCat("a", allocation, "[", offset, ":", offset + size, ")");
}

std::string MemoryStats::ToString() const {
  return StrCat("memory: arguments ", HumanBytes(argument_bytes), ", outputs ", HumanBytes(output_bytes),
                ", constants ", HumanBytes(constant_bytes), ", temp ", HumanBytes(temp_bytes), " (peak ",
                HumanBytes(peak_bytes), "), in place / donated ", HumanBytes(aliased_bytes));
}

namespace {

int64_t RoundUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace

void BufferAssigner::ComputeLiveRanges() {
  for (LogicalBuffer& b : buffers_) {
    b.start = INT64_MAX;
    b.end = -1;
  }
  auto touch = [&](int64_t id, int64_t a, int64_t z) {
    LogicalBuffer& b = buffers_[Find(id)];
    b.start = std::min(b.start, a);
    b.end = std::max(b.end, z);
  };
  for (const auto& [key, id] : pos_) {
    auto d = def_time_.find(key.instr);
    if (d == def_time_.end()) continue;
    int64_t last = d->second;
    for (const HloInstruction* u : key.instr->users()) last = std::max(last, UseTime(u));
    touch(id, d->second, last);
  }
  for (const auto& [id, t] : extra_uses_) touch(id, t, t);
  for (const auto& [id, range] : extra_ranges_) touch(id, range.first, range.second);
  for (int64_t id : param_buffers_) touch(id, 0, 0);  // parameters exist from the start
  for (LogicalBuffer& b : buffers_)
    if (b.end < b.start) b.end = b.start;
}

Status BufferAssigner::ResolveDonations() {
  if (!options_.use_donated_parameters) return OkStatus();
  const HloInstruction* root = module_.entry_computation()->root_instruction();
  std::vector<ShapeIndex> out_leaves = ArrayLeafIndices(root->shape());
  auto param_leaf = [&](int64_t n, const ShapeIndex& index) -> int64_t {
    for (size_t i = 0; i < param_leaf_ids_.size(); ++i)
      if (param_leaf_ids_[i].first == n && param_leaf_ids_[i].second == index) return static_cast<int64_t>(i);
    return -1;
  };
  auto holds_output = [&](int64_t pb) {
    for (const ShapeIndex& l : out_leaves)
      if (Get(root, l) == pb) return true;
    return false;
  };
  std::unordered_set<int64_t> placed;  // output buffers moved into parameters
  std::unordered_set<int64_t> used_params;
  for (const InputOutputAlias& a : module_.header().input_output_alias) {
    int64_t id = param_leaf(a.parameter_number, a.parameter_index);
    int64_t r = Get(root, a.output_index);
    if (id < 0 || r < 0) continue;
    used_params.insert(id);
    int64_t pb = Find(param_buffers_[id]);
    if (r == pb) continue;  // updated in place all the way
    LogicalBuffer& R = buffers_[r];
    const LogicalBuffer& P = buffers_[pb];
    bool p_written = false;
    for (const PositionKey& k : positions_[pb]) p_written |= k.instr->opcode() != HloOpcode::kParameter;
    if (undonatable_.count(id) == 0 && R.origin == LogicalBuffer::Origin::kArena && !placed.count(r) &&
        !holds_output(pb) && !p_written && P.end < R.start && R.size <= P.size) {
      aliased_bytes_ += R.size;
      placed.insert(r);
      Merge(r, pb);
      continue;
    }
    // Not honoured. A must-alias is then met by a copy at the end, which needs the parameter's
    // buffer to hold nothing else: retry with the parameter not writable.
    if (a.must_alias && (p_written || holds_output(pb)) && !undonatable_.count(id)) {
      undonatable_.insert(id);
      return FailedPrecondition("buffer assignment: retry without donating parameter ", a.parameter_number);
    }
  }
  for (const BufferDonor& d : module_.header().buffer_donors) {
    int64_t id = param_leaf(d.parameter_number, d.parameter_index);
    if (id < 0 || used_params.count(id) || undonatable_.count(id)) continue;
    int64_t pb = Find(param_buffers_[id]);
    if (holds_output(pb)) continue;
    bool p_written = false;
    for (const PositionKey& k : positions_[pb]) p_written |= k.instr->opcode() != HloOpcode::kParameter;
    if (p_written) continue;
    for (const ShapeIndex& l : out_leaves) {
      int64_t r = Get(root, l);
      if (r < 0 || placed.count(r)) continue;
      const LogicalBuffer& R = buffers_[r];
      if (R.origin != LogicalBuffer::Origin::kArena || R.size > buffers_[pb].size ||
          buffers_[pb].end >= R.start)
        continue;
      aliased_bytes_ += R.size;
      placed.insert(r);
      Merge(r, pb);
      break;
    }
  }
  return OkStatus();
}

Status BufferAssigner::Pack(BufferAssignment& out) {
  // Parameter allocations (parameter order), then constants, then the arena.
  for (size_t i = 0; i < param_buffers_.size(); ++i) {
    int64_t b = Find(param_buffers_[i]);
    BufferAllocation a;
    a.index = static_cast<int64_t>(out.allocations_.size());
    a.kind = BufferAllocation::Kind::kParameter;
    a.size = options_.size_fn(buffers_[param_buffers_[i]].def->shape().Subshape(param_leaf_ids_[i].second));
    a.parameter_number = param_leaf_ids_[i].first;
    a.parameter_index = param_leaf_ids_[i].second;
    a.maybe_live_out = buffers_[b].live_out;
    for (const PositionKey& k : positions_[b]) a.written |= k.instr->opcode() != HloOpcode::kParameter;
    buffers_[b].allocation = a.index;
    buffers_[b].offset = 0;
    out.allocations_.push_back(std::move(a));
  }
  std::vector<int64_t> arena;
  for (int64_t id = 0; id < static_cast<int64_t>(buffers_.size()); ++id) {
    LogicalBuffer& b = buffers_[id];
    if (b.parent >= 0) continue;
    if (b.origin == LogicalBuffer::Origin::kConstant) {
      BufferAllocation a;
      a.index = static_cast<int64_t>(out.allocations_.size());
      a.kind = BufferAllocation::Kind::kConstant;
      a.size = b.size;
      a.constant = b.def;
      a.parameter_index = b.index;  // the leaf of a tuple-shaped constant
      a.maybe_live_out = b.live_out;
      b.allocation = a.index;
      out.allocations_.push_back(std::move(a));
    } else if (b.origin == LogicalBuffer::Origin::kArena) {
      arena.push_back(id);
    }
  }
  if (arena.empty()) return OkStatus();
  const int64_t align = options_.alignment;
  // Best-fit: biggest buffers first; each goes into the smallest gap (among buffers live at the
  // same time) that holds it, else on top.
  std::sort(arena.begin(), arena.end(), [&](int64_t x, int64_t y) {
    const LogicalBuffer& a = buffers_[x];
    const LogicalBuffer& b = buffers_[y];
    if (a.size != b.size) return a.size > b.size;
    if (a.start != b.start) return a.start < b.start;
    return x < y;
  });
  struct Placed {
    int64_t offset, size, start, end;
  };
  std::vector<Placed> placed;
  int64_t top = 0;
  for (int64_t id : arena) {
    LogicalBuffer& b = buffers_[id];
    int64_t size = RoundUp(b.size, align);
    if (size == 0) {
      b.offset = 0;
      continue;
    }
    int64_t offset = top;
    if (options_.reuse_buffers) {
      std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of time-overlapping buffers
      for (const Placed& p : placed)
        if (p.start <= b.end && b.start <= p.end) busy.push_back({p.offset, p.offset + p.size});
      std::sort(busy.begin(), busy.end());
      int64_t best = -1, best_gap = INT64_MAX, cursor = 0;
      for (const auto& [lo, hi] : busy) {
        if (lo > cursor && lo - cursor >= size && lo - cursor < best_gap) {
          best = cursor;
          best_gap = lo - cursor;
        }
        cursor = std::max(cursor, hi);
      }
      offset = best >= 0 ? best : cursor;
    }
    b.offset = offset;
    placed.push_back({offset, size, b.start, b.end});
    top = std::max(top, offset + size);
  }
  BufferAllocation a;
  a.index = static_cast<int64_t>(out.allocations_.size());
  a.kind = BufferAllocation::Kind::kTemp;
  a.size = top;
  for (int64_t id : arena) {
    buffers_[id].allocation = a.index;
    a.maybe_live_out |= buffers_[id].live_out;
  }
  out.temp_allocation_ = a.index;
  out.allocations_.push_back(std::move(a));
  // Peak: the most aligned bytes live at one time.
  std::map<int64_t, int64_t> delta;
  for (int64_t id : arena) {
    const LogicalBuffer& b = buffers_[id];
    int64_t size = RoundUp(b.size, align);
    delta[b.start] += size;
    delta[b.end + 1] -= size;
  }
  int64_t live = 0;
  for (const auto& [t, d] : delta) {
    live += d;
    out.stats_.peak_bytes = std::max(out.stats_.peak_bytes, live);
  }
  return OkStatus();
}

void BufferAssigner::FillResult(BufferAssignment& out) {
  auto slice_of = [&](int64_t id, int64_t size) {
    const LogicalBuffer& b = buffers_[Find(id)];
    BufferSlice s;
    s.allocation = b.allocation;
    s.offset = b.offset;
    s.size = size;
    return s;
  };
  for (const auto& [key, id] : pos_) {
    BufferAssignment::SliceInfo info;
    info.slice = slice_of(id, options_.size_fn(key.instr->shape().Subshape(key.index)));
    const LogicalBuffer& b = buffers_[Find(id)];
    info.live_start = b.start;
    info.live_end = b.end;
    out.slices_[BufferAssignment::Key{key.instr, key.index}] = info;
  }
  const HloInstruction* root = module_.entry_computation()->root_instruction();
  for (const ShapeIndex& l : ArrayLeafIndices(root->shape())) {
    int64_t b = Get(root, l);
    out.output_slices_.push_back(b < 0 ? BufferSlice{} : slice_of(b, options_.size_fn(root->shape().Subshape(l))));
    out.stats_.output_bytes += options_.size_fn(root->shape().Subshape(l));
  }
  for (const auto& [w, info] : whiles_) {
    WhileCopyPlan plan;
    plan.leaves = info.leaves;
    plan.copy_init = info.copy_init;
    plan.copy_body_result = info.copy_body_result;
    for (size_t j = 0; j < info.leaves.size(); ++j) {
      int64_t size = options_.size_fn(w->shape().Subshape(info.leaves[j]));
      plan.init.push_back(info.init[j] < 0 ? BufferSlice{} : slice_of(info.init[j], size));
      plan.state.push_back(slice_of(info.state[j], size));
      plan.body_result.push_back(info.body_result[j] < 0 ? BufferSlice{} : slice_of(info.body_result[j], size));
      plan.staging.push_back(info.staging[j] < 0 ? BufferSlice{} : slice_of(info.staging[j], size));
    }
    out.while_plans_[w] = std::move(plan);
  }
  for (const BufferAllocation& a : out.allocations_) {
    if (a.kind == BufferAllocation::Kind::kParameter) out.stats_.argument_bytes += a.size;
    if (a.kind == BufferAllocation::Kind::kConstant) out.stats_.constant_bytes += a.size;
    if (a.kind == BufferAllocation::Kind::kTemp) out.stats_.temp_bytes = a.size;
  }
  out.stats_.aliased_bytes = aliased_bytes_;
  out.debug_string_ = DebugString(out);
}

std::string BufferAssigner::DebugString(const BufferAssignment& out) const {
  std::string s = StrCat("BufferAssignment for ", module_.name(), "\n", out.stats_.ToString(), "\n");
  s += "allocations:\n";
  for (const BufferAllocation& a : out.allocations_) {
    s += StrCat("  a", a.index, " ");
    switch (a.kind) {
      case BufferAllocation::Kind::kParameter:
        s += StrCat("parameter ", a.parameter_number, " {", StrJoin(a.parameter_index, ","), "}");
        if (a.written) s += " (written)";
        break;
      case BufferAllocation::Kind::kConstant:
        s += StrCat("constant %", a.constant->name());
        break;
      case BufferAllocation::Kind::kTemp:
        s += "temp";
        break;
    }
    s += StrCat(" ", a.size, " bytes", a.maybe_live_out ? ", live out" : "", "\n");
  }
  s += "values:\n";
  for (const HloComputation* c : graph_.sequential_computations()) {
    s += StrCat("  ", c->name(), ":\n");
    for (const HloInstruction* i : schedule_.sequence(c)) {
      for (const ShapeIndex& l : ArrayLeafIndices(i->shape())) {
        auto it = out.slices_.find(BufferAssignment::Key{i, l});
        if (it == out.slices_.end()) continue;
        s += StrCat("    %", i->name());
        if (!l.empty()) s += StrCat("{", StrJoin(l, ","), "}");
        s += StrCat(" ", it->second.slice.ToString(), " live [", it->second.live_start, ",",
                    it->second.live_end, "]\n");
      }
    }
  }
  for (const HloComputation* c : graph_.sequential_computations()) {
    for (const HloInstruction* i : schedule_.sequence(c)) {
      auto it = out.while_plans_.find(i);
      if (it == out.while_plans_.end()) continue;
      const WhileCopyPlan& p = it->second;
      s += StrCat("while %", i->name(), ":\n");
      for (size_t j = 0; j < p.leaves.size(); ++j) {
        s += StrCat("    {", StrJoin(p.leaves[j], ","), "} state ", p.state[j].ToString(), " init ",
                    p.init[j].ToString(), p.copy_init[j] ? " (copied)" : " (taken over)", " body ",
                    p.body_result[j].ToString(), p.copy_body_result[j] ? " (copied" : " (in place");
        if (p.staging[j].valid()) s += StrCat(" via ", p.staging[j].ToString());
        s += ")\n";
      }
    }
  }
  return s;
}

StatusOr<BufferSlice> BufferAssignment::GetSlice(const HloInstruction& instr, const ShapeIndex& index) const {
  auto it = slices_.find(Key{&instr, index});
  if (it == slices_.end())
    return NotFound("buffer assignment: no slice for %", instr.name(), " {", StrJoin(index, ","), "}");
  return it->second.slice;
}

bool BufferAssignment::HasSlice(const HloInstruction& instr, const ShapeIndex& index) const {
  return slices_.count(Key{&instr, index}) > 0;
}

StatusOr<std::pair<int64_t, int64_t>> BufferAssignment::GetLiveRange(const HloInstruction& instr,
                                                                    const ShapeIndex& index) const {
  auto it = slices_.find(Key{&instr, index});
  if (it == slices_.end())
    return NotFound("buffer assignment: no slice for %", instr.name(), " {", StrJoin(index, ","), "}");
  return std::make_pair(it->second.live_start, it->second.live_end);
}

StatusOr<WhileCopyPlan> BufferAssignment::GetWhileCopyPlan(const HloInstruction& while_instr) const {
  auto it = while_plans_.find(&while_instr);
  if (it == while_plans_.end()) return NotFound("buffer assignment: no while plan for %", while_instr.name());
  return it->second;
}

}  // namespace kiln
