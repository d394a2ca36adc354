#include "kiln/passes/hlo_schedule.h"

#include <algorithm>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/passes/call_graph.h"

namespace kiln {

const std::vector<const HloInstruction*>& HloSchedule::sequence(const HloComputation* c) const {
  static const std::vector<const HloInstruction*> kEmpty;
  auto it = sequences_.find(c);
  return it == sequences_.end() ? kEmpty : it->second;
}

Status HloSchedule::Verify(const HloModule& module) const {
  CallGraph graph(module);
  for (const HloComputation* c : graph.sequential_computations()) {
    auto it = sequences_.find(c);
    if (it == sequences_.end()) return FailedPrecondition("schedule: no sequence for ", c->name());
    const auto& seq = it->second;
    if (static_cast<int64_t>(seq.size()) != c->instruction_count())
      return FailedPrecondition("schedule of ", c->name(), " has ", seq.size(), " instructions, the computation ",
                                c->instruction_count());
    std::unordered_set<const HloInstruction*> done;
    for (const HloInstruction* i : seq) {
      if (i->parent() != c) return FailedPrecondition("schedule of ", c->name(), " holds foreign %", i->name());
      for (const HloInstruction* op : i->operands())
        if (!done.count(op))
          return FailedPrecondition("schedule of ", c->name(), ": %", i->name(), " before its operand %", op->name());
      for (const HloInstruction* p : i->control_predecessors())
        if (!done.count(p))
          return FailedPrecondition("schedule of ", c->name(), ": %", i->name(),
                                    " before its control predecessor %", p->name());
      if (!done.insert(i).second) return FailedPrecondition("schedule of ", c->name(), ": %", i->name(), " twice");
    }
  }
  return OkStatus();
}

std::string HloSchedule::ToString(const HloModule& module) const {
  std::string s;
  CallGraph graph(module);
  for (const HloComputation* c : graph.sequential_computations()) {
    s += c->name() + ": ";
    s += StrJoin(sequence(c), ", ", [](std::ostream& os, const HloInstruction* i) { os << i->name(); });
    s += "\n";
  }
  return s;
}

void SinkLoopStateUpdates(const HloModule& module, HloSchedule& schedule) {
  CallGraph graph(module);
  for (const HloComputation* c : graph.sequential_computations()) {
    for (const HloInstruction* w : c->instructions()) {
      if (w->opcode() != HloOpcode::kWhile) continue;
      const HloComputation* body = w->while_body();
      if (!body || !schedule.has_sequence(body) || body->num_parameters() != 1) continue;
      const HloInstruction* root = body->root_instruction();
      if (root->opcode() != HloOpcode::kTuple) continue;
      const HloInstruction* param = body->parameter_instruction(0);
      std::vector<const HloInstruction*> seq = schedule.sequence(body);
      for (int64_t j = 0; j < root->operand_count(); ++j) {
        const HloInstruction* r = root->operand(j);
        if (r->opcode() == HloOpcode::kParameter || r->opcode() == HloOpcode::kGetTupleElement ||
            r->opcode() == HloOpcode::kConstant || r->user_count() != 1 ||
            std::count(root->operands().begin(), root->operands().end(), r) != 1 ||
            !r->control_successors().empty() || !r->control_predecessors().empty())
          continue;
        auto pos = [&](const HloInstruction* x) {
          return static_cast<int64_t>(std::find(seq.begin(), seq.end(), x) - seq.begin());
        };
        const int64_t at = pos(r);
        int64_t last = -1;
        for (const HloInstruction* g : param->users()) {
          if (g->opcode() != HloOpcode::kGetTupleElement || g->attrs().tuple_index != j) continue;
          for (const HloInstruction* u : g->users())
            if (u != r && u != root) last = std::max(last, pos(u));
        }
        if (last <= at || last >= static_cast<int64_t>(seq.size())) continue;
        seq.erase(seq.begin() + at);
        seq.insert(seq.begin() + last, r);  // just after the last reader (now at last - 1)
      }
      schedule.set_sequence(body, std::move(seq));
    }
  }
}

HloSchedule PostOrderSchedule(const HloModule& module) {
  HloSchedule schedule;
  CallGraph graph(module);
  for (const HloComputation* c : graph.sequential_computations()) {
    std::vector<HloInstruction*> order = c->MakeInstructionPostOrder();
    schedule.set_sequence(c, {order.begin(), order.end()});
  }
  return schedule;
}

namespace {

int64_t DenseBytes(const Shape& s) {
  if (s.IsTuple()) {
    int64_t n = 0;
    for (const Shape& e : s.tuple_shapes()) n += DenseBytes(e);
    return n;
  }
  return s.IsArray() ? s.num_elements() * PrimitiveByteWidth(s.element_type()) : 0;
}

// Instructions whose value is a view of an operand (allocate nothing).
bool IsView(const HloInstruction& i) {
  switch (i.opcode()) {
    case HloOpcode::kTuple: case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast:
    case HloOpcode::kParameter: case HloOpcode::kConstant:
      return true;
    default:
      return false;
  }
}

std::vector<const HloInstruction*> ListSchedule(const HloComputation& c,
                                                const std::function<int64_t(const Shape&)>& size_fn) {
  std::vector<HloInstruction*> post = c.MakeInstructionPostOrder();
  std::unordered_map<const HloInstruction*, int64_t> rank, pending, remaining_users;
  for (int64_t i = 0; i < static_cast<int64_t>(post.size()); ++i) rank[post[i]] = i;
  auto deps = [](const HloInstruction* i) {
    std::vector<const HloInstruction*> d(i->operands().begin(), i->operands().end());
    d.insert(d.end(), i->control_predecessors().begin(), i->control_predecessors().end());
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    return d;
  };
  std::vector<const HloInstruction*> ready;
  for (const HloInstruction* i : post) {
    pending[i] = static_cast<int64_t>(deps(i).size());
    remaining_users[i] = i->user_count();
    if (pending[i] == 0) ready.push_back(i);
  }
  // Bytes an instruction frees: operands (seen through views) whose last user it is.
  auto freed = [&](const HloInstruction* i) {
    int64_t b = 0;
    std::unordered_set<const HloInstruction*> seen;
    for (const HloInstruction* op : i->operands()) {
      if (!seen.insert(op).second || IsView(*op)) continue;
      if (remaining_users[op] == 1 && !op->IsRoot()) b += size_fn(op->shape());
    }
    return b;
  };
  std::vector<const HloInstruction*> out;
  while (!ready.empty()) {
    size_t best = 0;
    int64_t best_score = INT64_MIN;
    for (size_t k = 0; k < ready.size(); ++k) {
      const HloInstruction* i = ready[k];
      int64_t score = freed(i) - (IsView(*i) ? 0 : size_fn(i->shape()));
      if (score > best_score || (score == best_score && rank[i] < rank[ready[best]])) {
        best = k;
        best_score = score;
      }
    }
    const HloInstruction* i = ready[best];
    ready.erase(ready.begin() + static_cast<int64_t>(best));
    out.push_back(i);
    std::unordered_set<const HloInstruction*> seen;
    for (const HloInstruction* op : i->operands())
      if (seen.insert(op).second) --remaining_users[op];
    std::vector<const HloInstruction*> succ(i->users().begin(), i->users().end());
    succ.insert(succ.end(), i->control_successors().begin(), i->control_successors().end());
    std::sort(succ.begin(), succ.end());
    succ.erase(std::unique(succ.begin(), succ.end()), succ.end());
    for (const HloInstruction* u : succ)
      if (--pending[u] == 0) ready.push_back(u);
  }
  return out;
}

}  // namespace

HloSchedule MemoryAwareSchedule(const HloModule& module, std::function<int64_t(const Shape&)> size_fn) {
  if (!size_fn) size_fn = DenseBytes;
  HloSchedule schedule;
  CallGraph graph(module);
  for (const HloComputation* c : graph.sequential_computations())
    schedule.set_sequence(c, ListSchedule(*c, size_fn));
  return schedule;
}

}  // namespace kiln
