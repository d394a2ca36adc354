#include "kiln/passes/fusion_passes.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "kiln/passes/call_graph.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln {
namespace {

std::vector<HloInstruction*> DistinctOperands(const HloInstruction& instr) {
  std::vector<HloInstruction*> out;
  for (HloInstruction* op : instr.operands())
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  return out;
}

bool Reads(const HloInstruction& user, const HloInstruction& x) {
  return std::find(user.operands().begin(), user.operands().end(), &x) != user.operands().end();
}

// Pointers of instructions removed during a pass (never dereferenced again).
class RemovedSet {
 public:
  std::vector<const HloInstruction*>* sink() { return &pending_; }
  bool contains(const HloInstruction* i) {
    Flush();
    return set_.count(i) > 0;
  }
  // A new instruction may reuse a removed one's address: forget it.
  void Revive(const HloInstruction* i) {
    Flush();
    set_.erase(i);
  }

 private:
  void Flush() {
    for (const HloInstruction* i : pending_) set_.insert(i);
    pending_.clear();
  }
  std::vector<const HloInstruction*> pending_;
  std::unordered_set<const HloInstruction*> set_;
};


// Merges fusions that read the multi-output fusion `producer`'s outputs into it, as the
// policy allows (FusionPolicy::ShouldMergeIntoMultiOutputProducer).
StatusOr<bool> MergeIntoMultiOutputProducer(const FusionPolicy& policy, FusionPassStats& stats,
                                            HloInstruction* producer, RemovedSet& removed) {
  // Consumers reading the producer's outputs, first come first (the producer may grow each time).
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    std::vector<HloInstruction*> consumers;
    for (HloInstruction* g : producer->users()) {
      if (g->opcode() != HloOpcode::kGetTupleElement) continue;
      for (HloInstruction* u : g->users())
        if (IsFusion(*u) && std::find(consumers.begin(), consumers.end(), u) == consumers.end())
          consumers.push_back(u);
    }
    for (HloInstruction* consumer : consumers) {
      if (!policy.ShouldMergeIntoMultiOutputProducer(*producer, *consumer)) continue;
      FuseSpec spec;
      spec.removed = removed.sink();
      spec.members = {producer, consumer};
      for (HloInstruction* op : consumer->operands())
        if (op->opcode() == HloOpcode::kGetTupleElement && op->operand(0) == producer &&
            std::find(spec.members.begin(), spec.members.end(), op) == spec.members.end())
          spec.members.push_back(op);
      if (FusionWouldCreateCycle(spec.members)) continue;
      spec.kind = producer->attrs().fusion_kind;
      spec.reuse = producer;
      KILN_ASSIGN_OR_RETURN(HloInstruction * merged, FuseInstructions(spec));
      producer = merged;
      ++stats.multi_output_merges;
      changed = again = true;
      break;
    }
  }
  return changed;
}

}  // namespace

StatusOr<bool> InstructionFusion::Run(HloModule& module) {
  bool changed = false;
  CallGraph graph(module);
  for (HloComputation* c : graph.sequential_computations()) {
    KILN_ASSIGN_OR_RETURN(bool ch, RunOnComputation(*c));
    changed |= ch;
  }
  if (changed) module.RemoveUnreachableComputations();
  return changed;
}

StatusOr<bool> InstructionFusion::RunOnComputation(HloComputation& computation) {
  std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();
  RemovedSet removed;
  bool changed = false;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (removed.contains(*it)) continue;
    HloInstruction* consumer = *it;
    if (consumer->opcode() == HloOpcode::kParameter) continue;
    // Multi-output fusions are grown only by MultiOutputFusion.
    if (IsMultiOutputFusion(*consumer)) continue;
    for (bool progress = true; progress;) {
      progress = false;
      for (HloInstruction* producer : DistinctOperands(*consumer)) {
        if (!policy_.CanFuse(*producer, *consumer)) continue;
        // The producer's kernel disappears if every user can take it in.
        bool dies = !producer->IsRoot();
        for (HloInstruction* u : producer->users()) {
          if (!dies) break;
          if (u != consumer && !policy_.CanFuse(*producer, *u)) dies = false;
        }
        if (!policy_.ShouldFuse(*producer, *consumer, dies)) continue;
        FusionKind kind = policy_.KindAfterFusion(*producer, *consumer);
        if (!IsFusion(*consumer)) {
          KILN_ASSIGN_OR_RETURN(consumer, CreateFusion(consumer, kind, removed.sink()));
          removed.Revive(consumer);
          ++stats_.fusions_created;
        }
        bool stays = producer->user_count() > 1 || producer->IsRoot();
        KILN_ASSIGN_OR_RETURN(consumer,
                              FuseInstructionIntoFusion(producer, consumer, kind, removed.sink()));
        ++stats_.instructions_fused;
        if (stays) ++stats_.duplicated;
        progress = changed = true;
        break;
      }
    }
  }
  return changed;
}

StatusOr<bool> MultiOutputFusion::Run(HloModule& module) {
  bool changed = false;
  CallGraph graph(module);
  for (HloComputation* c : graph.sequential_computations()) {
    KILN_ASSIGN_OR_RETURN(bool a, FuseProducerConsumer(*c));
    KILN_ASSIGN_OR_RETURN(bool b, FuseSiblings(*c));
    changed |= a || b;
  }
  if (changed) module.RemoveUnreachableComputations();
  return changed;
}

StatusOr<bool> MultiOutputFusion::FuseProducerConsumer(HloComputation& computation) {
  bool changed = false;
  std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();
  RemovedSet removed;
  // Producers in post order; each goes into its first consuming fusion that accepts it.
  for (HloInstruction* producer : order) {
    if (removed.contains(producer)) continue;
    if (producer->opcode() == HloOpcode::kParameter) continue;
    if (IsMultiOutputFusion(*producer)) {
      KILN_ASSIGN_OR_RETURN(bool merged, MergeIntoMultiOutputProducer(policy_, stats_, producer, removed));
      changed |= merged;
      continue;
    }
    if (producer->user_count() < 2) continue;
    std::vector<HloInstruction*> users = producer->users();
    for (HloInstruction* consumer : users) {
      if (!IsFusion(*consumer)) continue;
      if (!policy_.ShouldFuseMultiOutput(*producer, *consumer)) continue;
      std::vector<HloInstruction*> members = {producer, consumer};
      if (FusionWouldCreateCycle(members)) continue;
      FusionKind kind = consumer->attrs().fusion_kind;
      KILN_RETURN_IF_ERROR(
          FuseInstructionIntoMultiOutputFusion(producer, consumer, kind, removed.sink()).status());
      ++stats_.multi_output_merges;
      changed = true;
      break;
    }
  }
  return changed;
}

StatusOr<bool> MultiOutputFusion::FuseSiblings(HloComputation& computation) {
  bool changed = false;
  std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();
  RemovedSet removed;
  std::unordered_map<const HloInstruction*, int64_t> position;
  for (int64_t i = 0; i < static_cast<int64_t>(order.size()); ++i) position[order[i]] = i;
  auto candidate = [&](const HloInstruction* u) {
    if (IsFusion(*u)) return policy_.CanGrow(*u);
    return u->opcode() != HloOpcode::kParameter && policy_.FusionKindForRoot(*u).has_value() &&
           u->opcode() != HloOpcode::kTuple && u->opcode() != HloOpcode::kGetTupleElement;
  };
  constexpr size_t kMaxCandidates = 16;
  for (HloInstruction* shared : order) {
    if (removed.contains(shared)) continue;
    if (ShapeBytes(shared->shape()) < policy_.options().min_sibling_shared_bytes) continue;
    std::vector<HloInstruction*> users;
    for (HloInstruction* u : shared->users())
      if (candidate(u)) users.push_back(u);
    if (users.size() < 2) continue;
    // Earlier instructions first; new fusions (not in the order) last.
    auto pos = [&](const HloInstruction* i) {
      auto p = position.find(i);
      return p == position.end() ? INT64_MAX : p->second;
    };
    std::stable_sort(users.begin(), users.end(),
                     [&](const HloInstruction* a, const HloInstruction* b) { return pos(a) < pos(b); });
    if (users.size() > kMaxCandidates) users.resize(kMaxCandidates);
    for (size_t i = 0; i < users.size(); ++i) {
      if (!users[i]) continue;
      for (size_t j = i + 1; j < users.size(); ++j) {
        if (!users[j]) continue;
        HloInstruction* a = users[i];
        HloInstruction* b = users[j];
        if (Reads(*a, *b) || Reads(*b, *a)) continue;  // producer and consumer, not siblings
        if (!policy_.ShouldFuseSiblings(*a, *b)) continue;
        std::vector<HloInstruction*> members = {a, b};
        if (FusionWouldCreateCycle(members)) continue;
        IterationSpace sa = policy_.GetIterationSpace(*a), sb = policy_.GetIterationSpace(*b);
        FusionKind kind = (sa.reduction || sb.reduction) ? FusionKind::kInput : FusionKind::kLoop;
        KILN_ASSIGN_OR_RETURN(HloInstruction * merged,
                              MergeSiblingFusions(a, b, kind, removed.sink()));
        removed.Revive(merged);
        if (!IsFusion(*a) && !IsFusion(*b)) ++stats_.fusions_created;
        ++stats_.multi_output_merges;
        changed = true;
        users[i] = merged;
        users[j] = nullptr;
        // Every later candidate compares against the merged fusion.
      }
    }
  }
  return changed;
}

}  // namespace kiln
