#include "kiln/hlo/module.h"

#include <functional>
#include <unordered_set>

namespace kiln {

HloComputation* HloModule::AddComputation(std::unique_ptr<HloComputation> c, bool is_entry) {
  HloComputation* raw = c.get();
  raw->set_parent(this);
  for (HloInstruction* i : raw->instructions())
    if (i->unique_id() < 0) i->set_unique_id(NextUniqueId());
  computations_.push_back(std::move(c));
  if (is_entry && entry_ == nullptr) entry_ = raw;
  return raw;
}

std::vector<HloComputation*> HloModule::computations() const {
  std::vector<HloComputation*> out;
  for (const auto& c : computations_) out.push_back(c.get());
  return out;
}

std::vector<HloComputation*> HloModule::MakeComputationPostOrder() const {
  std::vector<HloComputation*> order;
  std::unordered_set<const HloComputation*> visited;
  std::function<void(HloComputation*)> visit = [&](HloComputation* c) {
    if (!c || !visited.insert(c).second) return;
    for (HloInstruction* i : c->instructions())
      for (HloComputation* callee : i->called_computations()) visit(callee);
    order.push_back(c);
  };
  // Non-entry computations first (in text order), then the entry, so that unreachable
  // computations are still included and the entry is last.
  for (const auto& c : computations_)
    if (c.get() != entry_) visit(c.get());
  if (entry_) {
    visited.erase(entry_);
    std::vector<HloComputation*> without_entry;
    for (HloComputation* c : order)
      if (c != entry_) without_entry.push_back(c);
    order = std::move(without_entry);
    visit(entry_);
  }
  return order;
}

HloComputation* HloModule::GetComputationWithName(std::string_view name) const {
  for (const auto& c : computations_)
    if (c->name() == name) return c.get();
  return nullptr;
}

void HloModule::RemoveUnreachableComputations() {
  if (!entry_) return;
  std::unordered_set<const HloComputation*> reachable;
  std::function<void(HloComputation*)> visit = [&](HloComputation* c) {
    if (!c || !reachable.insert(c).second) return;
    for (HloInstruction* i : c->instructions())
      for (HloComputation* callee : i->called_computations()) visit(callee);
  };
  visit(entry_);
  std::vector<std::unique_ptr<HloComputation>> kept;
  for (auto& c : computations_)
    if (reachable.count(c.get())) kept.push_back(std::move(c));
  computations_ = std::move(kept);
}

}  // namespace kiln
