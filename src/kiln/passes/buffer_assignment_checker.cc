#include "kiln/passes/buffer_assignment_checker.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kiln/base/strings.h"
#include "kiln/passes/buffer_assigner.h"
#include "kiln/passes/call_graph.h"

namespace kiln {
namespace {

// Tags of the bytes of every allocation: [start, end) -> tag. Tag -1: unreadable (branches
// disagree); no entry: never written.
class Shadow {
 public:
  explicit Shadow(size_t allocations = 0) : mem_(allocations) {}

  void Write(const BufferSlice& s, int64_t tag) {
    if (s.size <= 0) return;
    auto& m = mem_[s.allocation];
    const int64_t a = s.offset, b = s.offset + s.size;
    auto it = m.lower_bound(a);
    if (it != m.begin()) {
      auto prev = std::prev(it);
      if (prev->second.first > a) it = prev;
    }
    std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> keep;
    while (it != m.end() && it->first < b) {
      if (it->first < a) keep.push_back({it->first, {a, it->second.second}});
      if (it->second.first > b) keep.push_back({b, {it->second.first, it->second.second}});
      it = m.erase(it);
    }
    for (auto& k : keep) m[k.first] = k.second;
    m[a] = {b, tag};
  }

  // The tag every byte of `s` holds, or nullopt when they differ / are unwritten.
  std::optional<int64_t> Tag(const BufferSlice& s) const {
    if (s.size <= 0) return std::nullopt;
    const auto& m = mem_[s.allocation];
    int64_t cursor = s.offset, end = s.offset + s.size;
    std::optional<int64_t> tag;
    auto it = m.upper_bound(cursor);
    if (it == m.begin()) return std::nullopt;
    --it;
    while (cursor < end) {
      if (it == m.end() || it->first > cursor || it->second.first <= cursor) return std::nullopt;
      if (tag && *tag != it->second.second) return std::nullopt;
      tag = it->second.second;
      cursor = it->second.first;
      ++it;
    }
    return tag;
  }
  bool Holds(const BufferSlice& s, int64_t tag) const {
    if (s.size <= 0) return true;
    auto t = Tag(s);
    return t && *t == tag;
  }

  // Bytes keep their tag only where every state agrees.
  static Shadow Merge(const std::vector<Shadow>& states) {
    Shadow out(states.empty() ? 0 : states[0].mem_.size());
    for (size_t a = 0; a < out.mem_.size(); ++a) {
      std::vector<int64_t> cuts;
      for (const Shadow& s : states)
        for (const auto& [lo, v] : s.mem_[a]) {
          cuts.push_back(lo);
          cuts.push_back(v.first);
        }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        BufferSlice piece{static_cast<int64_t>(a), cuts[i], cuts[i + 1] - cuts[i]};
        std::optional<int64_t> tag;
        bool same = true, any = false;
        for (const Shadow& s : states) {
          auto t = s.Tag(piece);
          if (t) any = true;
          if (!tag && t) tag = t;
          if (!t || (tag && t && *t != *tag)) same = false;
        }
        if (!any) continue;
        out.Write(piece, same ? *tag : -1);
      }
    }
    return out;
  }

 private:
  std::vector<std::map<int64_t, std::pair<int64_t, int64_t>>> mem_;
};

struct Value {
  BufferSlice slice;
  int64_t tag;
};

bool IsInPlaceKind(HloOpcode op) {
  return op == HloOpcode::kDynamicUpdateSlice || op == HloOpcode::kFusion ||
         op == HloOpcode::kCustomCall;
}

bool IsViewKind(HloOpcode op) {
  switch (op) {
    case HloOpcode::kTuple: case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast:
    case HloOpcode::kOptimizationBarrier: case HloOpcode::kDomain: case HloOpcode::kAddDependency:
    case HloOpcode::kReshape:
      return true;
    default:
      return false;
  }
}

ShapeIndex Prepend(int64_t i, const ShapeIndex& rest) {
  ShapeIndex r = {i};
  r.insert(r.end(), rest.begin(), rest.end());
  return r;
}

class Checker {
 public:
  Checker(const HloModule& m, const BufferAssignment& ba, const HloSchedule& s, const BufferCheckOptions& o)
      : module_(m), ba_(ba), schedule_(s), options_(o), mem_(ba.allocations().size()) {}

  Status Run() {
    KILN_RETURN_IF_ERROR(CheckStructure());
    const HloComputation* entry = module_.entry_computation();
    // Parameters hold the caller's values from the start.
    for (const HloInstruction* p : entry->parameter_instructions())
      for (const ShapeIndex& l : ArrayLeafIndices(p->shape())) {
        KILN_ASSIGN_OR_RETURN(BufferSlice s, ba_.GetSlice(*p, l));
        int64_t tag = NewTag(p, l);
        mem_.Write(s, tag);
        param_tags_[PositionKey{p, l}] = tag;
      }
    KILN_RETURN_IF_ERROR(RunComputation(entry, nullptr));
    const HloInstruction* root = entry->root_instruction();
    std::vector<ShapeIndex> leaves = ArrayLeafIndices(root->shape());
    if (leaves.size() != ba_.output_slices().size())
      return Internal("buffer check: ", ba_.output_slices().size(), " output slices for ", leaves.size(),
                      " output leaves");
    for (size_t i = 0; i < leaves.size(); ++i) {
      Value v = ValueOf(root, leaves[i]);
      if (!(ba_.output_slices()[i] == v.slice))
        return Internal("buffer check: output ", i, " slice ", ba_.output_slices()[i].ToString(),
                        " is not the root's ", v.slice.ToString());
      if (!mem_.Holds(v.slice, v.tag))
        return Internal("buffer check: output ", i, " (", names_[v.tag], ") was overwritten before the end");
    }
    return OkStatus();
  }

 private:
  int64_t NewTag(const HloInstruction* i, const ShapeIndex& l) {
    names_.push_back(StrCat("%", i->name(), l.empty() ? "" : StrCat("{", StrJoin(l, ","), "}")));
    return static_cast<int64_t>(names_.size()) - 1;
  }

  Value ValueOf(const HloInstruction* i, const ShapeIndex& l) {
    auto it = tags_.find(PositionKey{i, l});
    BufferSlice s = ba_.GetSlice(*i, l).value();
    return Value{s, it == tags_.end() ? -2 : it->second};
  }

  Status Read(const HloInstruction* reader, const HloInstruction* i, const ShapeIndex& l) {
    Value v = ValueOf(i, l);
    if (v.tag == -2) return Internal("buffer check: %", reader->name(), " reads %", i->name(), " before it exists");
    if (mem_.Holds(v.slice, v.tag)) return OkStatus();
    auto t = mem_.Tag(v.slice);
    return Internal("buffer check: %", reader->name(), " reads ", names_[v.tag], " in ", v.slice.ToString(),
                    ", but it was overwritten by ", t ? (*t >= 0 ? names_[*t] : "another branch") : "several values");
  }

  Status CheckStructure() {
    int64_t alignment = options_.alignment > 0 ? options_.alignment : 1;
    CallGraph graph(module_);
    for (const HloComputation* c : graph.sequential_computations())
      for (const HloInstruction* i : c->instructions())
        for (const ShapeIndex& l : ArrayLeafIndices(i->shape())) {
          auto s = ba_.GetSlice(*i, l);
          if (!s.ok()) return s.status();
          if (s->allocation < 0 || s->allocation >= static_cast<int64_t>(ba_.allocations().size()))
            return Internal("buffer check: %", i->name(), " has no allocation");
          const BufferAllocation& a = ba_.allocations()[s->allocation];
          if (s->offset < 0 || s->offset + s->size > a.size)
            return Internal("buffer check: %", i->name(), " slice ", s->ToString(), " outside its allocation (", a.size, " bytes)");
          if (s->size < options_.size_fn(i->shape().Subshape(l)))
            return Internal("buffer check: %", i->name(), " slice ", s->ToString(), " too small");
          if (a.kind == BufferAllocation::Kind::kTemp && s->offset % alignment != 0)
            return Internal("buffer check: %", i->name(), " slice ", s->ToString(), " not aligned");
          if (a.kind == BufferAllocation::Kind::kTemp) {
            auto r = ba_.GetLiveRange(*i, l);
            if (!r.ok()) return r.status();
            arena_.push_back({*s, r->first, r->second, i});
          }
        }
    // Partially overlapping arena slices must never be live together (identical slices are one
    // buffer; the replay checks those).
    std::sort(arena_.begin(), arena_.end(), [](const ArenaValue& a, const ArenaValue& b) {
      return a.slice.offset < b.slice.offset;
    });
    for (size_t i = 0; i < arena_.size(); ++i) {
      const ArenaValue& a = arena_[i];
      for (size_t j = i + 1; j < arena_.size(); ++j) {
        const ArenaValue& b = arena_[j];
        if (b.slice.offset >= a.slice.offset + a.slice.size) break;
        if (a.slice == b.slice || a.slice.size == 0 || b.slice.size == 0) continue;
        if (a.start <= b.end && b.start <= a.end)
          return Internal("buffer check: %", a.instr->name(), " ", a.slice.ToString(), " live [", a.start, ",",
                          a.end, "] overlaps %", b.instr->name(), " ", b.slice.ToString(), " live [", b.start,
                          ",", b.end, "]");
      }
    }
    return OkStatus();
  }

  Status RunComputation(const HloComputation* c, const std::vector<std::vector<Value>>* params) {
    for (const HloInstruction* instr : schedule_.sequence(c)) {
      std::vector<ShapeIndex> leaves = ArrayLeafIndices(instr->shape());
      switch (instr->opcode()) {
        case HloOpcode::kParameter: {
          for (size_t k = 0; k < leaves.size(); ++k) {
            BufferSlice s = ba_.GetSlice(*instr, leaves[k]).value();
            int64_t tag;
            if (!params) {
              tag = param_tags_.at(PositionKey{instr, leaves[k]});
            } else {
              const auto& bind = (*params)[instr->parameter_number()];
              if (k >= bind.size() || !(bind[k].slice == s))
                return Internal("buffer check: parameter %", instr->name(), " of ", c->name(),
                                " is not where its caller put the value");
              tag = bind[k].tag;
            }
            tags_[PositionKey{instr, leaves[k]}] = tag;
          }
          break;
        }
        case HloOpcode::kWhile:
          KILN_RETURN_IF_ERROR(RunWhile(instr));
          break;
        case HloOpcode::kConditional:
          KILN_RETURN_IF_ERROR(RunConditional(instr));
          break;
        case HloOpcode::kCall:
          KILN_RETURN_IF_ERROR(RunCall(instr));
          break;
        default:
          if (IsViewKind(instr->opcode())) KILN_RETURN_IF_ERROR(RunView(instr, leaves));
          else KILN_RETURN_IF_ERROR(RunCompute(instr, leaves));
          break;
      }
    }
    return OkStatus();
  }

  // The source of a view's leaf.
  std::pair<const HloInstruction*, ShapeIndex> ViewSource(const HloInstruction* v, const ShapeIndex& l) {
    if (v->opcode() == HloOpcode::kTuple)
      return {v->operand(l[0]), ShapeIndex(l.begin() + 1, l.end())};
    if (v->opcode() == HloOpcode::kGetTupleElement) return {v->operand(0), Prepend(v->attrs().tuple_index, l)};
    return {v->operand(0), l};
  }

  Status RunView(const HloInstruction* instr, const std::vector<ShapeIndex>& leaves) {
    for (const ShapeIndex& l : leaves) {
      auto [src, sl] = ViewSource(instr, l);
      Value sv = ValueOf(src, sl);
      BufferSlice s = ba_.GetSlice(*instr, l).value();
      if (s == sv.slice) {
        tags_[PositionKey{instr, l}] = sv.tag;
      } else {  // a copy
        KILN_RETURN_IF_ERROR(Read(instr, src, sl));
        int64_t tag = NewTag(instr, l);
        mem_.Write(s, tag);
        tags_[PositionKey{instr, l}] = tag;
      }
    }
    return OkStatus();
  }

  Status RunCompute(const HloInstruction* instr, const std::vector<ShapeIndex>& leaves) {
    std::vector<BufferSlice> inputs;
    std::vector<bool> elementwise;  // per input: the operand is read elementwise (may be overwritten)
    for (int64_t k = 0; k < instr->operand_count(); ++k) {
      const HloInstruction* op = instr->operand(k);
      const bool ew = ReadsOperandElementwise(*instr, k);
      for (const ShapeIndex& l : ArrayLeafIndices(op->shape())) {
        KILN_RETURN_IF_ERROR(Read(instr, op, l));
        inputs.push_back(ValueOf(op, l).slice);
        elementwise.push_back(ew);
      }
    }
    std::vector<BufferSlice> outputs;
    for (const ShapeIndex& l : leaves) outputs.push_back(ba_.GetSlice(*instr, l).value());
    for (size_t i = 0; i < outputs.size(); ++i) {
      for (size_t j = i + 1; j < outputs.size(); ++j)
        if (outputs[i].Overlaps(outputs[j]))
          return Internal("buffer check: outputs of %", instr->name(), " overlap");
      for (size_t k = 0; k < inputs.size(); ++k)
        if (const BufferSlice& in = inputs[k];
            outputs[i].Overlaps(in) && !(outputs[i] == in && (IsInPlaceKind(instr->opcode()) || elementwise[k])))
          return Internal("buffer check: output ", outputs[i].ToString(), " of %", instr->name(),
                          " overlaps its input ", in.ToString());
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      int64_t tag = NewTag(instr, leaves[i]);
      mem_.Write(outputs[i], tag);
      tags_[PositionKey{instr, leaves[i]}] = tag;
    }
    return OkStatus();
  }

  Status RunWhile(const HloInstruction* w) {
    KILN_ASSIGN_OR_RETURN(WhileCopyPlan plan, ba_.GetWhileCopyPlan(*w));
    const HloInstruction* init = w->operand(0);
    const size_t n = plan.leaves.size();
    if (plan.copy_init.size() != n || plan.copy_body_result.size() != n || plan.init.size() != n ||
        plan.state.size() != n || plan.body_result.size() != n || plan.staging.size() != n)
      return Internal("buffer check: malformed copy plan of %", w->name());
    std::vector<int64_t> state_tags(n), result_tags(n);
    std::vector<bool> shares_init(n);
    for (size_t j = 0; j < n; ++j) {
      KILN_RETURN_IF_ERROR(Read(w, init, plan.leaves[j]));
      Value v = ValueOf(init, plan.leaves[j]);
      if (!(v.slice == plan.init[j])) return Internal("buffer check: init slice of %", w->name(), " differs");
      if (!(ba_.GetSlice(*w, plan.leaves[j]).value() == plan.state[j]))
        return Internal("buffer check: %", w->name(), " result is not its state");
      if (!plan.copy_init[j] && !(plan.state[j] == plan.init[j]))
        return Internal("buffer check: %", w->name(), " leaf ", j, " neither copies nor takes over its init");
      state_tags[j] = v.tag;
      // A leaf sharing its init's buffer without copies in or out holds the init value itself
      // when the body passes it through (checked after every body run below): the result is
      // that value, and readers of the init after the loop still find it.
      shares_init[j] = !plan.copy_init[j] && !plan.copy_body_result[j];
      result_tags[j] = shares_init[j] ? v.tag : NewTag(w, plan.leaves[j]);
    }
    for (size_t j = 0; j < n; ++j) {
      if (!plan.copy_init[j]) continue;
      if (!mem_.Holds(plan.init[j], state_tags[j]))
        return Internal("buffer check: init of %", w->name(), " leaf ", j, " overwritten by the initial copies");
      mem_.Write(plan.state[j], state_tags[j]);
    }
    const HloInstruction* body_root = w->while_body()->root_instruction();
    std::vector<Shadow> exits;
    for (int iter = 0; iter <= 2; ++iter) {
      std::vector<std::vector<Value>> bind(1);
      for (size_t j = 0; j < n; ++j) bind[0].push_back(Value{plan.state[j], state_tags[j]});
      KILN_RETURN_IF_ERROR(RunComputation(w->while_condition(), &bind));
      for (size_t j = 0; j < n; ++j) {
        if (!mem_.Holds(plan.state[j], state_tags[j]))
          return Internal("buffer check: state leaf ", j, " of %", w->name(), " overwritten (iteration ", iter, ")");
      }
      exits.push_back(mem_);  // the result tags are written below, once shares_init is final
      if (iter == 2) break;
      KILN_RETURN_IF_ERROR(RunComputation(w->while_body(), &bind));
      std::vector<int64_t> body_tags(n);
      for (size_t j = 0; j < n; ++j) {
        Value v = ValueOf(body_root, plan.leaves[j]);
        if (!(v.slice == plan.body_result[j]))
          return Internal("buffer check: body result slice of %", w->name(), " differs from its plan");
        body_tags[j] = v.tag;
      }
      // Where the body changed a leaf that was to share its init value, the while's result is a
      // value of its own after all.
      for (size_t j = 0; j < n; ++j)
        if (shares_init[j] && body_tags[j] != result_tags[j]) {
          shares_init[j] = false;
          result_tags[j] = NewTag(w, plan.leaves[j]);
        }
      for (size_t j = 0; j < n; ++j) {
        if (!plan.copy_body_result[j] || !plan.staging[j].valid()) continue;
        if (!mem_.Holds(plan.body_result[j], body_tags[j]))
          return Internal("buffer check: body result ", j, " of %", w->name(), " overwritten before staging");
        mem_.Write(plan.staging[j], body_tags[j]);
      }
      for (size_t j = 0; j < n; ++j) {
        if (plan.copy_body_result[j]) {
          const BufferSlice& src = plan.staging[j].valid() ? plan.staging[j] : plan.body_result[j];
          if (!mem_.Holds(src, body_tags[j]))
            return Internal("buffer check: body result ", j, " of %", w->name(), " (", names_[body_tags[j]],
                            ") overwritten before it was copied into the state");
          mem_.Write(plan.state[j], body_tags[j]);
        } else {
          if (!(plan.body_result[j] == plan.state[j]))
            return Internal("buffer check: uncopied body result ", j, " of %", w->name(), " is not in the state");
          if (!mem_.Holds(plan.state[j], body_tags[j]))
            return Internal("buffer check: body result ", j, " of %", w->name(), " overwritten in the state");
        }
      }
      state_tags = body_tags;
    }
    for (Shadow& exit : exits)
      for (size_t j = 0; j < n; ++j)
        if (!shares_init[j]) exit.Write(plan.state[j], result_tags[j]);
    mem_ = Shadow::Merge(exits);
    for (size_t j = 0; j < n; ++j) tags_[PositionKey{w, plan.leaves[j]}] = result_tags[j];
    return OkStatus();
  }

  Status RunConditional(const HloInstruction* c) {
    std::vector<ShapeIndex> leaves = ArrayLeafIndices(c->shape());
    std::vector<int64_t> result_tags;
    for (const ShapeIndex& l : leaves) result_tags.push_back(NewTag(c, l));
    Shadow start = mem_;
    std::vector<Shadow> exits;
    const auto& branches = c->branch_computations();
    KILN_RETURN_IF_ERROR(Read(c, c->operand(0), {}));
    for (size_t b = 0; b < branches.size(); ++b) {
      mem_ = start;
      const HloInstruction* op = c->operand(static_cast<int64_t>(b) + 1);
      std::vector<std::vector<Value>> bind(1);
      for (const ShapeIndex& l : ArrayLeafIndices(op->shape())) {
        KILN_RETURN_IF_ERROR(Read(c, op, l));
        bind[0].push_back(ValueOf(op, l));
      }
      KILN_RETURN_IF_ERROR(RunComputation(branches[b], &bind));
      const HloInstruction* root = branches[b]->root_instruction();
      for (size_t j = 0; j < leaves.size(); ++j) {
        KILN_RETURN_IF_ERROR(Read(c, root, leaves[j]));
        mem_.Write(ba_.GetSlice(*c, leaves[j]).value(), result_tags[j]);  // copy or relabel
      }
      exits.push_back(mem_);
    }
    mem_ = Shadow::Merge(exits);
    for (size_t j = 0; j < leaves.size(); ++j) tags_[PositionKey{c, leaves[j]}] = result_tags[j];
    return OkStatus();
  }

  Status RunCall(const HloInstruction* call) {
    std::vector<std::vector<Value>> bind;
    for (const HloInstruction* op : call->operands()) {
      bind.emplace_back();
      for (const ShapeIndex& l : ArrayLeafIndices(op->shape())) {
        KILN_RETURN_IF_ERROR(Read(call, op, l));
        bind.back().push_back(ValueOf(op, l));
      }
    }
    KILN_RETURN_IF_ERROR(RunComputation(call->to_apply(), &bind));
    const HloInstruction* root = call->to_apply()->root_instruction();
    for (const ShapeIndex& l : ArrayLeafIndices(call->shape())) {
      Value v = ValueOf(root, l);
      if (!(ba_.GetSlice(*call, l).value() == v.slice))
        return Internal("buffer check: %", call->name(), " result is not its callee's root");
      tags_[PositionKey{call, l}] = v.tag;
    }
    return OkStatus();
  }

  struct ArenaValue {
    BufferSlice slice;
    int64_t start, end;
    const HloInstruction* instr;
  };

  const HloModule& module_;
  const BufferAssignment& ba_;
  const HloSchedule& schedule_;
  const BufferCheckOptions& options_;
  Shadow mem_;
  std::unordered_map<PositionKey, int64_t, PositionKeyHash> tags_, param_tags_;
  std::vector<std::string> names_;
  std::vector<ArenaValue> arena_;
};

}  // namespace

Status VerifyBufferAssignment(const HloModule& module, const BufferAssignment& assignment,
                              const BufferCheckOptions& options) {
  BufferCheckOptions opts = options;
  if (!opts.size_fn)
    opts.size_fn = [](const Shape& s) -> int64_t {
      return s.IsArray() ? s.num_elements() * PrimitiveByteWidth(s.element_type()) : 0;
    };
  HloSchedule post;
  const HloSchedule* schedule = opts.schedule;
  if (!schedule) {
    post = PostOrderSchedule(module);
    schedule = &post;
  }
  Checker checker(module, assignment, *schedule, opts);
  return checker.Run();
}

}  // namespace kiln
