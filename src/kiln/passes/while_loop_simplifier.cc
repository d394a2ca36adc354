#include "kiln/passes/while_loop_simplifier.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "kiln/base/strings.h"
#include "kiln/hlo/clone.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/hlo_editor.h"
#include "kiln/passes/simple_passes.h"

namespace kiln {
namespace {

using Int = __int128;  // wide enough for any s64/u64 value and the arithmetic on it

// The value of a scalar integer constant literal, read with its type's signedness.
std::optional<Int> IntValue(const Literal& l) {
  if (!l.shape().IsArray() || l.shape().rank() != 0) return std::nullopt;
  const PrimitiveType t = l.shape().element_type();
  if (!IsIntegralType(t)) return std::nullopt;
  const int64_t v = l.GetAsInt64(0);
  if (IsUnsignedIntegralType(t)) {
    const int bits = PrimitiveBitWidth(t);
    const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return static_cast<Int>(static_cast<uint64_t>(v) & mask);
  }
  return static_cast<Int>(v);
}

std::optional<Int> IntConstant(const HloInstruction* h) {
  if (h->opcode() != HloOpcode::kConstant || !h->has_literal() || h->literal_elided())
    return std::nullopt;
  return IntValue(h->literal());
}

// The constant value element `index` of a while's init has, if any.
std::optional<Int> InitElement(const HloInstruction& while_instr, int64_t index) {
  const HloInstruction* init = while_instr.operand(0);
  if (init->opcode() == HloOpcode::kTuple) {
    if (index >= init->operand_count()) return std::nullopt;
    return IntConstant(init->operand(index));
  }
  if (init->opcode() == HloOpcode::kConstant && init->has_literal() && !init->literal_elided() &&
      init->literal().shape().IsTuple() && index < init->literal().tuple_size())
    return IntValue(init->literal().tuple_element(index));
  return std::nullopt;
}

// The tuple index when `h` is get-tuple-element(param) of computation `c`'s parameter 0.
std::optional<int64_t> ParamElement(const HloInstruction* h, const HloComputation* c) {
  if (h->opcode() != HloOpcode::kGetTupleElement || c->num_parameters() != 1) return std::nullopt;
  if (h->operand(0) != c->parameter_instruction(0)) return std::nullopt;
  return h->attrs().tuple_index;
}

ComparisonDirection Flip(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kLt: return ComparisonDirection::kGt;
    case ComparisonDirection::kGt: return ComparisonDirection::kLt;
    case ComparisonDirection::kLe: return ComparisonDirection::kGe;
    case ComparisonDirection::kGe: return ComparisonDirection::kLe;
    default: return d;
  }
}

Int CeilDiv(Int a, Int b) { return (a + b - 1) / b; }  // a >= 0, b > 0

// The first k >= 0 for which !(x0 + k*s  d  b), or nullopt when there is none.
std::optional<Int> FirstFalse(Int x0, Int s, Int b, ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kLt:
      if (!(x0 < b)) return 0;
      if (s <= 0) return std::nullopt;
      return CeilDiv(b - x0, s);
    case ComparisonDirection::kLe:
      if (!(x0 <= b)) return 0;
      if (s <= 0) return std::nullopt;
      return (b - x0) / s + 1;
    case ComparisonDirection::kGt:
      if (!(x0 > b)) return 0;
      if (s >= 0) return std::nullopt;
      return CeilDiv(x0 - b, -s);
    case ComparisonDirection::kGe:
      if (!(x0 >= b)) return 0;
      if (s >= 0) return std::nullopt;
      return (x0 - b) / (-s) + 1;
    case ComparisonDirection::kNe:
      if (x0 == b) return 0;
      if (s == 0 || (b - x0) % s != 0 || (b - x0) / s < 0) return std::nullopt;
      return (b - x0) / s;
    case ComparisonDirection::kEq:
      if (x0 != b) return 0;
      if (s == 0) return std::nullopt;
      return 1;
  }
  return std::nullopt;
}

bool IsPureComputation(const HloComputation* c, int depth = 0) {
  if (depth > 32) return false;
  for (const HloInstruction* i : c->instructions()) {
    if (HasSideEffect(*i)) return false;
    for (const HloComputation* callee : i->called_computations())
      if (!IsPureComputation(callee, depth + 1)) return false;
  }
  return true;
}

bool HasControlDeps(const HloInstruction* h) {
  return !h->control_predecessors().empty() || !h->control_successors().empty();
}

std::string UniqueComputationName(const HloModule& module, const std::string& base) {
  for (int i = 0;; ++i) {
    std::string name = i == 0 ? base : StrCat(base, ".", i);
    if (!module.GetComputationWithName(name)) return name;
  }
}

// ---- trip count 1: inline the body ----

StatusOr<HloInstruction*> InlineBody(HloEditor& editor, HloInstruction* while_instr) {
  const HloComputation* body = while_instr->while_body();
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  std::vector<HloInstruction*> ops;
  for (HloInstruction* instr : body->MakeInstructionPostOrder()) {
    if (instr->opcode() == HloOpcode::kParameter) {
      map[instr] = while_instr->operand(0);
      continue;
    }
    ops.clear();
    for (HloInstruction* op : instr->operands()) ops.push_back(map.at(op));
    map[instr] = editor.Add(CloneInstruction(*instr, instr->shape(), ops, instr->name()));
  }
  for (const HloInstruction* instr : body->instructions())
    for (const HloInstruction* succ : instr->control_successors())
      if (instr->opcode() != HloOpcode::kParameter && succ->opcode() != HloOpcode::kParameter)
        map.at(instr)->AddControlDependencyTo(map.at(succ));
  return map.at(body->root_instruction());
}


// ---- dead loop state ----

// The get-tuple-element indices of parameter 0 of `c`, or nullopt when the parameter is used
// any other way.
std::optional<std::unordered_set<int64_t>> ParamReads(const HloComputation* c) {
  std::unordered_set<int64_t> reads;
  const HloInstruction* p = c->parameter_instruction(0);
  if (c->root_instruction() == p) return std::nullopt;
  for (const HloInstruction* u : p->users()) {
    if (u->opcode() != HloOpcode::kGetTupleElement) return std::nullopt;
    reads.insert(u->attrs().tuple_index);
  }
  return reads;
}

// The state elements `roots` depend on through get-tuple-element(param) in `body` (nullopt:
// the parameter is reached some other way).
std::optional<std::unordered_set<int64_t>> ElementsReachedFrom(
    const HloComputation* body, const std::vector<const HloInstruction*>& roots) {
  std::unordered_set<int64_t> out;
  std::unordered_set<const HloInstruction*> seen;
  std::vector<const HloInstruction*> stack = roots;
  const HloInstruction* param = body->parameter_instruction(0);
  while (!stack.empty()) {
    const HloInstruction* h = stack.back();
    stack.pop_back();
    if (!seen.insert(h).second) continue;
    if (h == param) return std::nullopt;
    if (h->opcode() == HloOpcode::kGetTupleElement && h->operand(0) == param) {
      out.insert(h->attrs().tuple_index);
      continue;
    }
    for (const HloInstruction* op : h->operands()) stack.push_back(op);
    for (const HloInstruction* op : h->control_predecessors()) stack.push_back(op);
  }
  return out;
}

// A copy of `c` whose parameter has only the `live` elements (old index -> new index in
// `remap`): get-tuple-elements of live elements are renumbered, instructions depending on dead
// ones are left out, and the root is `make_root` applied to the mapping.
StatusOr<std::unique_ptr<HloComputation>> RebuildWithState(
    const HloComputation* c, const std::string& name, const Shape& state_shape,
    const std::unordered_map<int64_t, int64_t>& remap,
    const std::function<StatusOr<HloInstruction*>(
        HloEditor&, const std::unordered_map<const HloInstruction*, HloInstruction*>&)>& make_root) {
  auto out = std::make_unique<HloComputation>(name);
  out->set_execution_thread(c->execution_thread());
  const HloInstruction* old_param = c->parameter_instruction(0);
  auto param = std::make_unique<HloInstruction>(HloOpcode::kParameter, state_shape, old_param->name());
  param->set_parameter_number(0);
  param->metadata() = old_param->metadata();
  HloInstruction* new_param = out->AddInstruction(std::move(param));
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  std::vector<HloInstruction*> ops;
  for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
    if (instr == old_param) continue;
    if (instr->opcode() == HloOpcode::kGetTupleElement && instr->operand(0) == old_param) {
      auto it = remap.find(instr->attrs().tuple_index);
      if (it == remap.end()) continue;  // a dead element
      auto g = CloneInstruction(*instr, instr->shape(), std::span<HloInstruction* const>(&new_param, 1),
                                instr->name());
      g->attrs().tuple_index = it->second;
      map[instr] = out->AddInstruction(std::move(g));
      continue;
    }
    ops.clear();
    bool available = true;
    for (HloInstruction* op : instr->operands()) {
      auto it = map.find(op);
      if (it == map.end()) {
        available = false;
        break;
      }
      ops.push_back(it->second);
    }
    if (!available) continue;  // depends on a dead element, so only feeds dead ones
    map[instr] = out->AddInstruction(CloneInstruction(*instr, instr->shape(), ops, instr->name()));
  }
  for (const HloInstruction* instr : c->instructions())
    for (const HloInstruction* succ : instr->control_successors())
      if (map.count(instr) && map.count(succ)) map.at(instr)->AddControlDependencyTo(map.at(succ));
  HloEditor editor(out.get());  // after the copies, so that its names avoid theirs
  KILN_ASSIGN_OR_RETURN(HloInstruction * root, make_root(editor, map));
  out->set_root_instruction(root);
  return out;
}

StatusOr<bool> RemoveDeadState(HloModule& module, HloEditor& editor, HloInstruction* w) {
  const Shape& state = w->shape();
  const HloComputation* cond = w->while_condition();
  const HloComputation* body = w->while_body();
  if (!state.IsTuple() || state.tuple_shapes_size() == 0) return false;
  if (cond->num_parameters() != 1 || body->num_parameters() != 1) return false;
  if (w->sharding() && w->sharding()->kind == HloSharding::Kind::kTuple) return false;
  const int64_t n = state.tuple_shapes_size();
  const HloInstruction* body_root = body->root_instruction();
  if (body_root->opcode() != HloOpcode::kTuple || body_root->operand_count() != n) return false;
  if (w->IsRoot()) return false;
  for (const HloInstruction* u : w->users())
    if (u->opcode() != HloOpcode::kGetTupleElement) return false;

  std::optional<std::unordered_set<int64_t>> cond_reads = ParamReads(cond);
  std::optional<std::unordered_set<int64_t>> body_reads = ParamReads(body);
  if (!cond_reads || !body_reads) return false;

  // Live: read after the loop, read by the condition, read by side effects in the body, and
  // whatever the body needs to compute live elements.
  std::vector<bool> live(n, false);
  std::vector<int64_t> work;
  auto mark = [&](int64_t j) {
    if (j >= 0 && j < n && !live[j]) {
      live[j] = true;
      work.push_back(j);
    }
  };
  for (const HloInstruction* u : w->users()) mark(u->attrs().tuple_index);
  for (int64_t j : *cond_reads) mark(j);
  std::vector<const HloInstruction*> effects;
  for (const HloInstruction* i : body->instructions())
    if (HasSideEffect(*i) || !i->control_predecessors().empty()) effects.push_back(i);
  std::optional<std::unordered_set<int64_t>> effect_reads = ElementsReachedFrom(body, effects);
  if (!effect_reads) return false;
  for (int64_t j : *effect_reads) mark(j);
  while (!work.empty()) {
    const int64_t j = work.back();
    work.pop_back();
    std::optional<std::unordered_set<int64_t>> deps = ElementsReachedFrom(body, {body_root->operand(j)});
    if (!deps) return false;
    for (int64_t d : *deps) mark(d);
  }
  std::unordered_map<int64_t, int64_t> remap;
  std::vector<Shape> live_shapes;
  for (int64_t j = 0; j < n; ++j) {
    if (!live[j]) continue;
    remap[j] = static_cast<int64_t>(live_shapes.size());
    live_shapes.push_back(state.tuple_shapes(j));
  }
  if (live_shapes.empty() || static_cast<int64_t>(live_shapes.size()) == n) return false;
  const Shape new_state = Shape::Tuple(live_shapes);

  KILN_ASSIGN_OR_RETURN(
      std::unique_ptr<HloComputation> new_cond,
      RebuildWithState(cond, UniqueComputationName(module, cond->name() + ".dse"), new_state, remap,
                       [&](HloEditor&, const auto& map) -> StatusOr<HloInstruction*> {
                         auto it = map.find(cond->root_instruction());
                         if (it == map.end()) return Internal("while condition root was dropped");
                         return it->second;
                       }));
  KILN_ASSIGN_OR_RETURN(
      std::unique_ptr<HloComputation> new_body,
      RebuildWithState(body, UniqueComputationName(module, body->name() + ".dse"), new_state, remap,
                       [&](HloEditor& e, const auto& map) -> StatusOr<HloInstruction*> {
                         std::vector<HloInstruction*> elems;
                         for (int64_t j = 0; j < n; ++j) {
                           if (!live[j]) continue;
                           auto it = map.find(body_root->operand(j));
                           if (it == map.end()) return Internal("live loop state was dropped");
                           elems.push_back(it->second);
                         }
                         return e.Tuple(elems, body_root);
                       }));
  HloComputation* c1 = module.AddComputation(std::move(new_cond));
  HloComputation* c2 = module.AddComputation(std::move(new_body));

  // The smaller init and while; users renumbered.
  HloInstruction* init = w->operand(0);
  std::vector<HloInstruction*> init_elems;
  for (int64_t j = 0; j < n; ++j) {
    if (!live[j]) continue;
    if (init->opcode() == HloOpcode::kTuple) {
      init_elems.push_back(init->operand(j));
    } else {
      KILN_ASSIGN_OR_RETURN(HloInstruction * g, editor.GetTupleElement(init, j, w));
      init_elems.push_back(g);
    }
  }
  HloInstruction* new_init = editor.Tuple(init_elems, init);
  auto nw = CloneInstruction(*w, new_state, std::span<HloInstruction* const>(&new_init, 1), w->name());
  nw->clear_called_computations();
  nw->AppendCalledComputation(c1);
  nw->AppendCalledComputation(c2);
  HloInstruction* new_while = editor.Add(std::move(nw), w);
  std::vector<HloInstruction*> users = w->users();
  for (HloInstruction* u : users) {
    u->attrs().tuple_index = remap.at(u->attrs().tuple_index);
    u->ReplaceOperand(0, new_while);
  }
  return true;
}

}  // namespace

std::optional<int64_t> ComputeWhileTripCount(const HloInstruction& while_instr) {
  if (while_instr.opcode() != HloOpcode::kWhile || while_instr.operand_count() != 1 ||
      while_instr.called_computations().size() != 2)
    return std::nullopt;
  const HloComputation* cond = while_instr.while_condition();
  const HloComputation* body = while_instr.while_body();
  if (!cond || !body || !while_instr.shape().IsTuple()) return std::nullopt;
  const HloInstruction* cmp = cond->root_instruction();
  if (!cmp || cmp->opcode() != HloOpcode::kCompare) return std::nullopt;
  const HloInstruction* body_root = body->root_instruction();
  if (!body_root || body_root->opcode() != HloOpcode::kTuple) return std::nullopt;

  // Which side of the compare is the induction variable.
  ComparisonDirection dir = cmp->attrs().comparison_direction;
  const HloInstruction* iv_side = cmp->operand(0);
  const HloInstruction* bound_side = cmp->operand(1);
  std::optional<int64_t> iv = ParamElement(iv_side, cond);
  auto is_counter = [&](std::optional<int64_t> i) {
    if (!i || *i < 0 || *i >= body_root->operand_count()) return false;
    const HloInstruction* next = body_root->operand(*i);
    return next->opcode() == HloOpcode::kAdd || next->opcode() == HloOpcode::kSubtract;
  };
  if (!is_counter(iv)) {
    iv = ParamElement(bound_side, cond);
    if (!is_counter(iv)) return std::nullopt;
    std::swap(iv_side, bound_side);
    dir = Flip(dir);
  }
  const PrimitiveType t = iv_side->shape().element_type();
  if (!iv_side->shape().IsScalar() || !IsIntegralType(t)) return std::nullopt;

  // The step: body element iv is gte(param, iv) +/- constant.
  const HloInstruction* next = body_root->operand(*iv);
  std::optional<Int> step;
  if (next->opcode() == HloOpcode::kAdd) {
    if (ParamElement(next->operand(0), body) == iv) step = IntConstant(next->operand(1));
    else if (ParamElement(next->operand(1), body) == iv) step = IntConstant(next->operand(0));
  } else if (ParamElement(next->operand(0), body) == iv) {
    std::optional<Int> c = IntConstant(next->operand(1));
    if (c) step = -*c;
  }
  if (!step) return std::nullopt;

  // The bound: a constant, or a loop-invariant element initialized to a constant.
  std::optional<Int> bound = IntConstant(bound_side);
  if (!bound) {
    std::optional<int64_t> j = ParamElement(bound_side, cond);
    if (!j || *j < 0 || *j >= body_root->operand_count() || *j == *iv) return std::nullopt;
    if (ParamElement(body_root->operand(*j), body) != j) return std::nullopt;
    bound = InitElement(while_instr, *j);
    if (!bound) return std::nullopt;
  }
  std::optional<Int> x0 = InitElement(while_instr, *iv);
  if (!x0) return std::nullopt;

  std::optional<Int> trips = FirstFalse(*x0, *step, *bound, dir);
  if (!trips) return std::nullopt;
  // Every value the counter takes, the last included, must be in range (no wraparound).
  const int bits = PrimitiveBitWidth(t);
  const Int lo = IsSignedIntegralType(t) ? -(Int{1} << (bits - 1)) : Int{0};
  const Int hi = IsSignedIntegralType(t) ? (Int{1} << (bits - 1)) - 1 : (Int{1} << bits) - 1;
  const Int last = *x0 + *trips * *step;
  if (last < lo || last > hi || *trips > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(*trips);
}


StatusOr<bool> WhileLoopSimplifier::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.MakeComputationPostOrder()) {
    HloEditor editor(c);
    bool computation_changed = false;
    std::vector<HloInstruction*> replaced;
    for (HloInstruction* w : c->MakeInstructionPostOrder()) {
      if (w->opcode() != HloOpcode::kWhile || w->operand_count() != 1 ||
          w->called_computations().size() != 2 || HasControlDeps(w))
        continue;
      if (w->user_count() == 0 && !w->IsRoot()) continue;  // dead (or removed by DCE)
      std::optional<int64_t> trips = ComputeWhileTripCount(*w);
      const bool pure_condition = IsPureComputation(w->while_condition());
      if (trips && *trips == 0 && pure_condition && options_.remove_zero_trip_loops &&
          CanReplace(*w, *w->operand(0))) {
        w->ReplaceAllUsesWith(w->operand(0));
        replaced.push_back(w);
        computation_changed = true;
        continue;
      }
      if (trips && *trips == 1 && pure_condition && options_.inline_single_trip_loops) {
        KILN_ASSIGN_OR_RETURN(HloInstruction * result, InlineBody(editor, w));
        if (CanReplace(*w, *result)) {
          w->ReplaceAllUsesWith(result);
          replaced.push_back(w);
          computation_changed = true;
          continue;
        }
      }
      if (options_.remove_dead_state) {
        KILN_ASSIGN_OR_RETURN(bool removed, RemoveDeadState(module, editor, w));
        if (removed) replaced.push_back(w);
        computation_changed |= removed;
      }
    }
    if (computation_changed) {
      // The replaced loops go now: an inlined body's side effects must not run twice.
      for (HloInstruction* h : replaced) KILN_RETURN_IF_ERROR(c->RemoveInstruction(h));
      KILN_RETURN_IF_ERROR(RemoveDeadInstructions(*c).status());
      changed = true;
    }
  }
  if (changed) module.RemoveUnreachableComputations();
  return changed;
}

bool IsSideEffectFreeComputation(const HloComputation& c) { return IsPureComputation(&c); }

std::optional<int64_t> KnownTripCount(const HloInstruction& while_instr) {
  const BackendConfig& bc = while_instr.backend_config();
  if (while_instr.opcode() != HloOpcode::kWhile || bc.empty()) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(bc.text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto k = j.find("known_trip_count");
  if (k == j.end() || !k->is_object()) return std::nullopt;
  auto n = k->find("n");
  if (n == k->end()) return std::nullopt;
  int64_t v = -1;
  if (n->is_number_integer()) {
    v = n->get<int64_t>();
  } else if (n->is_string()) {  // XLA writes int64 fields as strings
    const std::string& t = n->get_ref<const std::string&>();
    if (t.empty() || t.size() > 18 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    v = std::stoll(t);
  }
  if (v < 0) return std::nullopt;
  return v;
}

void SetKnownTripCount(HloInstruction& while_instr, int64_t trips) {
  BackendConfig& bc = while_instr.backend_config();
  nlohmann::json j = bc.empty() ? nlohmann::json::object()
                                : nlohmann::json::parse(bc.text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) j = nlohmann::json::object();
  j["known_trip_count"] = {{"n", std::to_string(trips)}};
  bc.text = j.dump();
  bc.is_json = true;
}

StatusOr<bool> WhileTripCountAnnotator::Run(HloModule& module) {
  bool changed = false;
  for (HloComputation* c : module.computations())
    for (HloInstruction* w : c->instructions()) {
      if (w->opcode() != HloOpcode::kWhile) continue;
      std::optional<int64_t> trips = ComputeWhileTripCount(*w);
      if (!trips || KnownTripCount(*w) == trips) continue;
      SetKnownTripCount(*w, *trips);
      changed = true;
    }
  return changed;
}

}  // namespace kiln
