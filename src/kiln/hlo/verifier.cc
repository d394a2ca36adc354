#include "kiln/hlo/verifier.h"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/hlo/shape_inference.h"
#include "kiln/hlo/shape_inference_util.h"

namespace kiln {

using namespace shape_inference_internal;

namespace {

// Opcodes whose result XLA lets differ from the inferred one in fp precision under
// allow_mixed_precision, and that may mix fp precisions among their operands (XLA's list:
// data movement, grouping and ops with an explicit result type).
bool MayMixPrecision(HloOpcode op) {
  switch (op) {
    case HloOpcode::kCall: case HloOpcode::kConditional: case HloOpcode::kConstant:
    case HloOpcode::kConvolution: case HloOpcode::kDot: case HloOpcode::kRaggedDot:
    case HloOpcode::kScaledDot: case HloOpcode::kAllReduce: case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllReduceDone: case HloOpcode::kAllGather: case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllGatherDone: case HloOpcode::kAsyncDone: case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAsyncStart: case HloOpcode::kCopyDone: case HloOpcode::kCopyStart:
    case HloOpcode::kCustomCall: case HloOpcode::kDomain: case HloOpcode::kFusion:
    case HloOpcode::kGetTupleElement: case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kInfeed: case HloOpcode::kOutfeed: case HloOpcode::kParameter:
    case HloOpcode::kRecv: case HloOpcode::kRecvDone: case HloOpcode::kReducePrecision:
    case HloOpcode::kReduceWindow: case HloOpcode::kSend: case HloOpcode::kSendDone:
    case HloOpcode::kSort: case HloOpcode::kTuple: case HloOpcode::kWhile:
    case HloOpcode::kScan: case HloOpcode::kCollectiveReduce: case HloOpcode::kCollectiveBroadcast:
      return true;
    default:
      return false;
  }
}

// How many computations an opcode calls: exactly `min` == `max`, or a range.
struct CalledCount {
  int64_t min = 0;
  int64_t max = 0;  // -1: any number
};

CalledCount ExpectedCalled(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kWhile: case HloOpcode::kSelectAndScatter:
      return {2, 2};
    case HloOpcode::kConditional: {
      const int64_t n = std::max<int64_t>(instr.operand_count() - 1, 1);
      return {n, n};
    }
    case HloOpcode::kFusion: case HloOpcode::kCall: case HloOpcode::kMap:
    case HloOpcode::kReduce: case HloOpcode::kReduceWindow: case HloOpcode::kSort:
    case HloOpcode::kScatter: case HloOpcode::kAllReduce: case HloOpcode::kAllReduceStart:
    case HloOpcode::kReduceScatter: case HloOpcode::kScan: case HloOpcode::kAsyncStart:
      return {1, 1};
    case HloOpcode::kAsyncUpdate: case HloOpcode::kAsyncDone: case HloOpcode::kCollectiveReduce:
      return {0, 1};
    case HloOpcode::kCustomCall:
      return {0, -1};
    default:
      return {0, 0};
  }
}

// Exact shape comparison per the options: element type (or fp-precision-insensitive),
// dimensions, and optionally dynamic flags and layouts.
bool ShapesMatch(const Shape& declared, const Shape& inferred, bool ignore_fp_precision,
                 bool compare_dynamic, bool compare_layouts) {
  if (declared.IsTuple() || inferred.IsTuple()) {
    if (!declared.IsTuple() || !inferred.IsTuple() ||
        declared.tuple_shapes_size() != inferred.tuple_shapes_size())
      return false;
    for (int64_t i = 0; i < declared.tuple_shapes_size(); ++i)
      if (!ShapesMatch(declared.tuple_shapes(i), inferred.tuple_shapes(i), ignore_fp_precision,
                       compare_dynamic, compare_layouts))
        return false;
    return true;
  }
  if (declared.element_type() != inferred.element_type() &&
      !(ignore_fp_precision &&
        SameTypeIgnoringFpPrecision(declared.element_type(), inferred.element_type())))
    return false;
  if (!declared.IsArray()) return true;
  if (declared.dimensions() != inferred.dimensions()) return false;
  if (compare_dynamic && declared.dynamic_dimensions() != inferred.dynamic_dimensions()) return false;
  if (compare_layouts &&
      declared.layout_or_default().minor_to_major() != inferred.layout_or_default().minor_to_major())
    return false;
  return true;
}

// Whether `index` names a subshape of `shape`.
bool IndexIsValid(const Shape& shape, const std::vector<int64_t>& index) {
  const Shape* s = &shape;
  for (int64_t i : index) {
    if (!s->IsTuple() || i < 0 || i >= s->tuple_shapes_size()) return false;
    s = &s->tuple_shapes(i);
  }
  return true;
}

std::string IndexStr(const std::vector<int64_t>& index) { return "{" + StrJoin(index, ",") + "}"; }

class Verifier {
 public:
  Verifier(const HloModule& module, const VerifierOptions& options)
      : module_(module), opts_(options) {}

  std::vector<std::string> Run() {
    if (module_.entry_computation() == nullptr) ModuleError("there is no ENTRY computation");
    std::set<std::string> comp_names;
    for (const HloComputation* c : module_.computations()) {
      if (!comp_names.insert(c->name()).second)
        ModuleError(StrCat("computation name ", c->name(), " is used twice"));
    }
    for (const HloComputation* c : module_.computations()) VerifyComputation(*c);
    VerifyCallGraphAcyclic();
    if (module_.entry_computation()) {
      VerifyEntryLayout();
      VerifyAliasing();
    }
    return std::move(errors_);
  }

 private:
  void ModuleError(const std::string& msg) {
    errors_.push_back(StrCat("verifier: module ", module_.name(), ": ", msg));
  }
  void CompError(const HloComputation& c, const std::string& msg) {
    errors_.push_back(StrCat("verifier: computation ", c.name(), ": ", msg));
  }
  void Error(const HloInstruction& instr, const std::string& msg) {
    std::string where = StrCat("%", instr.name(), " (computation ",
                               instr.parent() ? instr.parent()->name() : std::string("?"));
    if (instr.location().line > 0) where += StrCat(", line ", instr.location().line);
    errors_.push_back(StrCat("verifier: ", where, "): ", msg));
  }

  // "add(f32[3,2], f32[3,2])"
  static std::string OpSignature(const HloInstruction& instr) {
    std::string s = StrCat(HloOpcodeString(instr.opcode()), "(");
    const int64_t shown = std::min<int64_t>(instr.operand_count(), 8);
    for (int64_t i = 0; i < shown; ++i) {
      if (i) s += ", ";
      s += instr.operand(i) ? Str(instr.operand(i)->shape()) : "null";
    }
    if (instr.operand_count() > shown) s += StrCat(", ... (", instr.operand_count(), " operands)");
    return s + ")";
  }

  // Dimensions non-negative (or unbounded), a known element type, and a layout that is a
  // permutation of the dimensions.
  static std::string ShapeProblem(const Shape& s) {
    if (s.IsTuple()) {
      for (const Shape& e : s.tuple_shapes()) {
        std::string p = ShapeProblem(e);
        if (!p.empty()) return p;
      }
      return "";
    }
    if (!s.IsValid()) return "the shape has no element type";
    if (!s.IsArray()) return "";
    for (int64_t i = 0; i < s.rank(); ++i)
      if (s.dimensions(i) < 0 && !s.is_unbounded_dynamic_dimension(i))
        return StrCat("shape ", Str(s), " has a negative dimension");
    if (s.has_layout() && !IsPermutation(s.layout().minor_to_major(), s.rank()))
      return StrCat("layout ", s.layout().ToString(), " of ", Str(s),
                    " is not a permutation of its ", s.rank(), " dimensions");
    // Modules built in code (or by a pass) skip the parser's check: too large an array here
    // would wrap every size computed from it.
    if (Status size = CheckShapeSize(s); !size.ok()) return size.message();
    return "";
  }

  void VerifyComputation(const HloComputation& c) {
    const std::vector<HloInstruction*> instrs = c.instructions();
    if (c.root_instruction() == nullptr) {
      CompError(c, "has no ROOT instruction");
    } else if (c.root_instruction()->parent() != &c) {
      CompError(c, StrCat("ROOT %", c.root_instruction()->name(),
                          " belongs to another computation"));
    }
    // Parameter numbers: dense 0..n-1, each used once.
    std::map<int64_t, const HloInstruction*> params;
    for (const HloInstruction* i : instrs) {
      if (i->opcode() != HloOpcode::kParameter) continue;
      const int64_t n = i->parameter_number();
      if (n < 0) {
        Error(*i, StrCat("parameter number ", n, " is negative"));
      } else if (auto [it, inserted] = params.emplace(n, i); !inserted) {
        Error(*i, StrCat("parameter number ", n, " is also used by %", it->second->name()));
      }
    }
    int64_t expected = 0;
    for (const auto& [n, p] : params) {
      if (n != expected) {
        CompError(c, StrCat("parameter numbers must be dense 0..", params.size() - 1,
                            "; parameter ", expected, " is missing"));
        break;
      }
      ++expected;
    }
    std::unordered_map<std::string, const HloInstruction*> local_names;
    for (const HloInstruction* i : instrs) {
      if (auto [it, inserted] = local_names.emplace(i->name(), i); !inserted) {
        Error(*i, "instruction name is used twice in this computation");
      } else if (opts_.unique_names_across_module) {
        if (auto [it2, inserted2] = names_.emplace(i->name(), i); !inserted2)
          Error(*i, StrCat("instruction name is also used in computation ",
                           it2->second->parent() ? it2->second->parent()->name() : "?"));
      }
      if (i->parent() != &c) Error(*i, "its parent is not the computation that holds it");
      for (const HloInstruction* p : i->control_predecessors())
        if (p && p->parent() != &c)
          Error(*i, StrCat("control predecessor %", p->name(), " is in another computation"));
    }
    VerifyAcyclic(c, instrs);
    for (HloInstruction* i : instrs) VerifyInstruction(*i);
  }

  // Operand / control-dependency cycles inside one computation.
  void VerifyAcyclic(const HloComputation& c, const std::vector<HloInstruction*>& instrs) {
    std::unordered_map<const HloInstruction*, int> state;  // 1 visiting, 2 done
    for (const HloInstruction* root : instrs) {
      if (state[root] != 0) continue;
      std::vector<std::pair<const HloInstruction*, size_t>> stack = {{root, 0}};
      state[root] = 1;
      while (!stack.empty()) {
        auto& [h, next] = stack.back();
        const size_t n_ops = h->operands().size();
        const size_t total = n_ops + h->control_predecessors().size();
        if (next < total) {
          const HloInstruction* d =
              next < n_ops ? h->operand(static_cast<int64_t>(next)) : h->control_predecessors()[next - n_ops];
          ++next;
          if (d == nullptr || d->parent() != &c) continue;
          int& st = state[d];
          if (st == 1) {
            Error(*d, "is part of a cycle through operands or control dependencies");
            return;
          }
          if (st == 0) {
            st = 1;
            stack.push_back({d, 0});
          }
        } else {
          state[h] = 2;
          stack.pop_back();
        }
      }
    }
  }

  // Called computations: present, in this module, as many as the opcode needs.
  bool VerifyCalled(const HloInstruction& instr) {
    bool ok = true;
    for (const HloComputation* callee : instr.called_computations()) {
      if (callee == nullptr) {
        Error(instr, "calls a computation that does not exist");
        ok = false;
      } else if (callee->parent() != &module_) {
        Error(instr, StrCat("calls computation ", callee->name(), ", which is not in the module"));
        ok = false;
      } else if (callee == module_.entry_computation()) {
        Error(instr, StrCat("calls the ENTRY computation ", callee->name()));
        ok = false;
      }
    }
    const CalledCount want = ExpectedCalled(instr);
    const int64_t have = static_cast<int64_t>(instr.called_computations().size());
    if (have < want.min || (want.max >= 0 && have > want.max)) {
      std::string expected = want.min == want.max ? StrCat(want.min)
                                                  : StrCat(want.min, " or ", want.max);
      Error(instr, StrCat(HloOpcodeString(instr.opcode()), " calls ", expected,
                          " computation(s), found ", have));
      ok = false;
    }
    return ok;
  }

  bool VerifyOperandCount(const HloInstruction& instr) {
    std::optional<int> arity = HloOpcodeArity(instr.opcode());
    int64_t expected = arity ? *arity : -1;
    if (instr.opcode() == HloOpcode::kDot)
      expected = 2 + static_cast<int64_t>(instr.attrs().sparsity.size());
    if (instr.opcode() == HloOpcode::kRng) expected = 2;
    if (expected >= 0 && instr.operand_count() != expected) {
      Error(instr, StrCat(HloOpcodeString(instr.opcode()), " takes ", expected, " operand",
                          expected == 1 ? "" : "s", ", found ", instr.operand_count()));
      return false;
    }
    return true;
  }

  void VerifyInstruction(const HloInstruction& instr) {
    bool operands_ok = true;
    for (const HloInstruction* o : instr.operands()) {
      if (o == nullptr) {
        Error(instr, "has a missing operand");
        operands_ok = false;
      } else if (o->parent() != instr.parent()) {
        Error(instr, StrCat("operand %", o->name(), " is in another computation (",
                            o->parent() ? o->parent()->name() : "?", ")"));
        operands_ok = false;
      }
    }
    if (std::string p = ShapeProblem(instr.shape()); !p.empty()) {
      Error(instr, p);
      return;
    }
    for (const HloInstruction* o : instr.operands())
      if (o && !ShapeProblem(o->shape()).empty()) operands_ok = false;  // reported at the operand
    const bool called_ok = VerifyCalled(instr);
    const bool count_ok = VerifyOperandCount(instr);
    if (!operands_ok || !called_ok || !count_ok) return;

    StatusOr<Shape> inferred = InferShape(instr);
    if (!inferred.ok()) {
      if (inferred.status().code() != StatusCode::kUnimplemented)
        Error(instr, inferred.status().message());
    } else {
      const bool ignore_fp = opts_.allow_mixed_precision && !MayMixPrecision(instr.opcode());
      if (!ShapesMatch(instr.shape(), *inferred, ignore_fp, opts_.compare_dynamic_dimensions,
                       /*compare_layouts=*/false))
        Error(instr, StrCat("shape ", Str(instr.shape()), " does not match the inferred shape ",
                            Str(*inferred), " of ", OpSignature(instr)));
      else if (opts_.layout_sensitive)
        VerifyForwardedLayout(instr);
    }
    if (!opts_.allow_mixed_precision) VerifyNoMixedPrecision(instr);
    VerifyAttributes(instr);
  }

  // Layout-sensitive mode: ops that forward a value keep its layout.
  void VerifyForwardedLayout(const HloInstruction& instr) {
    std::optional<Shape> forwarded;
    auto root_of = [&](size_t i) -> std::optional<Shape> {
      if (instr.called_computations().size() <= i || !instr.called_computations()[i] ||
          !instr.called_computations()[i]->root_instruction())
        return std::nullopt;
      return instr.called_computations()[i]->root_instruction()->shape();
    };
    switch (instr.opcode()) {
      case HloOpcode::kTuple: {
        std::vector<Shape> e;
        for (const HloInstruction* o : instr.operands()) e.push_back(o->shape());
        forwarded = Shape::Tuple(std::move(e));
        break;
      }
      case HloOpcode::kGetTupleElement:
        forwarded = instr.operand(0)->shape().tuple_shapes(instr.attrs().tuple_index);
        break;
      case HloOpcode::kWhile: forwarded = root_of(1); break;
      case HloOpcode::kCall: case HloOpcode::kFusion: case HloOpcode::kConditional:
        forwarded = root_of(0);
        break;
      case HloOpcode::kOptimizationBarrier: case HloOpcode::kDomain:
      case HloOpcode::kAddDependency:
        forwarded = instr.operand(0)->shape();
        break;
      case HloOpcode::kAsyncDone: case HloOpcode::kCopyDone:
        if (instr.operand(0)->shape().IsTuple() && instr.operand(0)->shape().tuple_shapes_size() > 1)
          forwarded = instr.operand(0)->shape().tuple_shapes(instr.opcode() == HloOpcode::kCopyDone ? 0 : 1);
        break;
      default:
        break;
    }
    if (forwarded && !ShapesMatch(instr.shape(), *forwarded, false, false, true))
      Error(instr, StrCat("layout of ", instr.shape().ToString(), " differs from the forwarded ",
                          forwarded->ToString()));
  }

  void VerifyNoMixedPrecision(const HloInstruction& instr) {
    if (MayMixPrecision(instr.opcode())) return;
    PrimitiveType seen = PrimitiveType::kInvalid;
    std::function<bool(const Shape&)> visit = [&](const Shape& s) {
      if (s.IsTuple()) {
        for (const Shape& e : s.tuple_shapes())
          if (!visit(e)) return false;
        return true;
      }
      if (!IsFloatingPointType(s.element_type())) return true;
      if (seen == PrimitiveType::kInvalid) seen = s.element_type();
      if (seen != s.element_type()) {
        Error(instr, StrCat("operands mix floating-point types ", PrimitiveTypeName(seen), " and ",
                            PrimitiveTypeName(s.element_type()),
                            " (allow_mixed_precision is off)"));
        return false;
      }
      return true;
    };
    for (const HloInstruction* o : instr.operands())
      if (o && !visit(o->shape())) return;
  }

  void VerifyAttributes(const HloInstruction& instr) {
    const HloAttributes& a = instr.attrs();
    switch (instr.opcode()) {
      case HloOpcode::kCompare: {
        if (a.comparison_type == ComparisonType::kDefault || instr.operand_count() != 2) break;
        const PrimitiveType t = instr.operand(0)->shape().element_type();
        const bool ok = IsFloatingPointType(t)
                            ? (a.comparison_type == ComparisonType::kFloat ||
                               a.comparison_type == ComparisonType::kTotalOrder)
                            : a.comparison_type == DefaultComparisonType(t);
        if (!ok)
          Error(instr, StrCat("comparison type=", ComparisonTypeString(a.comparison_type),
                              " does not fit ", PrimitiveTypeName(t), " operands (expected ",
                              IsFloatingPointType(t)
                                  ? std::string("FLOAT or TOTALORDER")
                                  : std::string(ComparisonTypeString(DefaultComparisonType(t))),
                              ")"));
        break;
      }
      case HloOpcode::kBroadcast:
        if (opts_.require_sorted_broadcast_dimensions && !IsSortedStrict(a.dimensions))
          Error(instr, StrCat("broadcast dimensions=", DimsStr(a.dimensions),
                              " must be increasing"));
        break;
      case HloOpcode::kAllReduce: case HloOpcode::kAllReduceStart: case HloOpcode::kReduceScatter: {
        VerifyReplicaGroups(instr, /*uniform=*/instr.opcode() == HloOpcode::kReduceScatter);
        if (instr.to_apply() && instr.operand_count() > 0 && instr.to_apply()->root_instruction()) {
          const Shape* first = &instr.operand(0)->shape();
          if (first->IsArray()) {
            Status s = VerifyReducerShape(instr.to_apply()->ComputeProgramShape(),
                                          {first->element_type()}, {first->element_type()});
            if (!s.ok()) Error(instr, StrCat(HloOpcodeString(instr.opcode()), " ", s.message()));
          }
        }
        break;
      }
      case HloOpcode::kAllGather: case HloOpcode::kAllGatherStart: case HloOpcode::kAllToAll:
      case HloOpcode::kRaggedAllToAll: case HloOpcode::kCollectiveBroadcast:
        VerifyReplicaGroups(instr, /*uniform=*/true);
        break;
      case HloOpcode::kCollectivePermute: case HloOpcode::kCollectivePermuteStart:
        VerifySourceTargetPairs(instr);
        break;
      case HloOpcode::kCustomCall: case HloOpcode::kFusion:
        VerifyOutputOperandAliasing(instr);
        break;
      case HloOpcode::kAsyncUpdate: case HloOpcode::kAsyncDone:
        ExpectOperandFrom(instr, {HloOpcode::kAsyncStart, HloOpcode::kAsyncUpdate});
        break;
      case HloOpcode::kCopyDone: ExpectOperandFrom(instr, {HloOpcode::kCopyStart}); break;
      case HloOpcode::kAllReduceDone: ExpectOperandFrom(instr, {HloOpcode::kAllReduceStart}); break;
      case HloOpcode::kAllGatherDone: ExpectOperandFrom(instr, {HloOpcode::kAllGatherStart}); break;
      case HloOpcode::kCollectivePermuteDone:
        ExpectOperandFrom(instr, {HloOpcode::kCollectivePermuteStart});
        break;
      case HloOpcode::kSendDone:
        ExpectOperandFrom(instr, {HloOpcode::kSend, HloOpcode::kGetTupleElement});
        break;
      case HloOpcode::kRecvDone:
        ExpectOperandFrom(instr, {HloOpcode::kRecv, HloOpcode::kGetTupleElement});
        break;
      default:
        break;
    }
    switch (instr.opcode()) {
      case HloOpcode::kAsyncStart: case HloOpcode::kCopyStart: case HloOpcode::kAllReduceStart:
      case HloOpcode::kCollectivePermuteStart:
        if (instr.user_count() > 1)
          Error(instr, StrCat(HloOpcodeString(instr.opcode()), " must have one user (its -done",
                              instr.opcode() == HloOpcode::kAsyncStart ? " or -update" : "",
                              "), has ", instr.user_count()));
        break;
      default:
        break;
    }
  }

  // output_to_operand_aliasing={{out}: (operand, {in})}: valid indices, same-shaped buffers.
  void VerifyOutputOperandAliasing(const HloInstruction& instr) {
    for (const OutputOperandAlias& al : instr.attrs().output_to_operand_aliasing) {
      const std::string what = StrCat("output_to_operand_aliasing ", IndexStr(al.output_index),
                                      ": (", al.operand_number, ", ", IndexStr(al.operand_index), ")");
      if (al.operand_number < 0 || al.operand_number >= instr.operand_count()) {
        Error(instr, StrCat(what, " names operand ", al.operand_number, " of ",
                            instr.operand_count()));
        continue;
      }
      const Shape& operand = instr.operand(al.operand_number)->shape();
      if (!IndexIsValid(instr.shape(), al.output_index)) {
        Error(instr, StrCat(what, ": output index is not in ", Str(instr.shape())));
      } else if (!IndexIsValid(operand, al.operand_index)) {
        Error(instr, StrCat(what, ": operand index is not in ", Str(operand)));
      } else if (!SameShape(instr.shape().Subshape(al.output_index),
                            operand.Subshape(al.operand_index))) {
        Error(instr, StrCat(what, ": aliased buffers differ: output ",
                            Str(instr.shape().Subshape(al.output_index)), ", operand ",
                            Str(operand.Subshape(al.operand_index))));
      }
    }
  }

  void ExpectOperandFrom(const HloInstruction& instr, std::initializer_list<HloOpcode> allowed) {
    if (instr.operand_count() < 1) return;
    const HloOpcode got = instr.operand(0)->opcode();
    for (HloOpcode o : allowed)
      if (o == got) return;
    std::string names;
    for (HloOpcode o : allowed) names += (names.empty() ? "" : " or ") + std::string(HloOpcodeString(o));
    Error(instr, StrCat("operand must come from ", names, ", found ", HloOpcodeString(got), " %",
                        instr.operand(0)->name()));
  }

  void VerifyReplicaGroups(const HloInstruction& instr, bool uniform) {
    const HloAttributes& a = instr.attrs();
    if (!a.replica_groups) return;
    if (a.replica_groups->is_iota) {
      const auto& g = a.replica_groups->iota_group_shape;
      int64_t total = 1;
      for (int64_t d : a.replica_groups->iota_reshape_dims) total *= d;
      if (g.size() != 2 || g[0] * g[1] != total ||
          (!a.replica_groups->iota_transpose_perm.empty() &&
           !IsPermutation(a.replica_groups->iota_transpose_perm,
                          static_cast<int64_t>(a.replica_groups->iota_reshape_dims.size())))) {
        Error(instr, StrCat("iota replica_groups [", StrJoin(g, ","), "]<=[",
                            StrJoin(a.replica_groups->iota_reshape_dims, ","),
                            "] do not describe a valid grouping"));
        return;
      }
      VerifyGroupCoverage(instr, total);
      return;
    }
    const auto& groups = a.replica_groups->groups;
    if (groups.empty()) return;
    std::set<int64_t> seen;
    for (const auto& g : groups) {
      if (g.empty()) {
        Error(instr, "replica_groups has an empty group");
        return;
      }
      if (uniform && g.size() != groups[0].size()) {
        Error(instr, StrCat("replica_groups must have groups of one size, found sizes ",
                            groups[0].size(), " and ", g.size()));
        return;
      }
      for (int64_t id : g) {
        if (id < 0 || !seen.insert(id).second) {
          Error(instr, StrCat("replica_groups names id ", id, id < 0 ? " (negative)" : " twice"));
          return;
        }
      }
    }
    const int64_t n = static_cast<int64_t>(seen.size());
    if (*seen.rbegin() != n - 1) {
      Error(instr, StrCat("replica_groups must name every id 0..", n - 1, " exactly once"));
      return;
    }
    VerifyGroupCoverage(instr, n);
  }

  // The ids of explicit or iota replica groups count replicas, partitions or both, per XLA's
  // group modes; when the module states replica_count / num_partitions, the groups must cover
  // exactly that many ids (a count of 1 means "not stated").
  void VerifyGroupCoverage(const HloInstruction& instr, int64_t n) {
    const int64_t replicas = module_.header().replica_count;
    const int64_t partitions = module_.header().num_partitions;
    const HloAttributes& a = instr.attrs();
    const HloOpcode op = instr.opcode();
    if (op == HloOpcode::kCollectiveBroadcast) return;  // XLA does not constrain its groups
    const bool partition_mode_ops = op == HloOpcode::kAllToAll || op == HloOpcode::kRaggedAllToAll;
    int64_t expected = replicas;
    std::string what = "replicas (replica_count)";
    if (a.channel_id && a.use_global_device_ids) {
      expected = replicas * partitions;
      what = "flattened ids (replica_count * num_partitions)";
    } else if (a.channel_id && partition_mode_ops) {
      expected = partitions;
      what = "partitions (num_partitions)";
    }
    if (expected != 1 && n != expected)
      Error(instr, StrCat("replica_groups cover ", n, " ids but the module has ", expected, " ",
                          what));
  }

  void VerifySourceTargetPairs(const HloInstruction& instr) {
    if (instr.operand_count() == 4) return;  // in-place form allows repeated ids
    std::set<int64_t> sources, targets;
    for (const auto& [s, t] : instr.attrs().source_target_pairs) {
      if (s < 0 || t < 0) {
        Error(instr, StrCat("source_target_pairs has a negative id in {", s, ",", t, "}"));
        return;
      }
      if (!sources.insert(s).second) {
        Error(instr, StrCat("source ", s, " appears twice in source_target_pairs"));
        return;
      }
      if (!targets.insert(t).second) {
        Error(instr, StrCat("target ", t, " appears twice in source_target_pairs"));
        return;
      }
    }
  }

  void VerifyCallGraphAcyclic() {
    if (CallGraphProblem p = FindCallGraphProblem(module_); p.computation) CompError(*p.computation, p.Message());
  }

  void VerifyEntryLayout() {
    const HloComputation& entry = *module_.entry_computation();
    const auto& layout = module_.header().entry_computation_layout;
    if (!layout) return;
    const bool with_layouts = opts_.layout_sensitive;
    bool valid = true;
    for (size_t i = 0; i <= layout->parameters.size(); ++i) {
      const Shape& s = i < layout->parameters.size() ? layout->parameters[i] : layout->result;
      if (std::string p = ShapeProblem(s); !p.empty()) {
        ModuleError(StrCat("entry_computation_layout ",
                           i < layout->parameters.size() ? StrCat("parameter ", i) : "result",
                           ": ", p));
        valid = false;
      }
    }
    if (!valid) return;
    if (static_cast<int64_t>(layout->parameters.size()) != entry.num_parameters()) {
      ModuleError(StrCat("entry_computation_layout has ", layout->parameters.size(),
                         " parameters but ENTRY ", entry.name(), " has ", entry.num_parameters()));
      return;
    }
    for (int64_t i = 0; i < entry.num_parameters(); ++i) {
      const HloInstruction* p = entry.parameter_instruction(i);
      if (!p) continue;
      if (!ShapesMatch(p->shape(), layout->parameters[i], false, false, with_layouts))
        ModuleError(StrCat("entry_computation_layout parameter ", i, " is ",
                           layout->parameters[i].ToString(with_layouts), " but parameter %",
                           p->name(), " is ", p->shape().ToString(with_layouts)));
    }
    if (entry.root_instruction() &&
        !ShapesMatch(entry.root_instruction()->shape(), layout->result, false, false, with_layouts))
      ModuleError(StrCat("entry_computation_layout result is ", layout->result.ToString(with_layouts),
                         " but ROOT %", entry.root_instruction()->name(), " is ",
                         entry.root_instruction()->shape().ToString(with_layouts)));
  }

  void VerifyAliasing() {
    const HloComputation& entry = *module_.entry_computation();
    if (!entry.root_instruction()) return;
    const Shape& result = entry.root_instruction()->shape();
    std::set<std::vector<int64_t>> outputs;
    std::set<std::pair<int64_t, std::vector<int64_t>>> params;
    for (const InputOutputAlias& al : module_.header().input_output_alias) {
      const std::string what = StrCat("input_output_alias ", IndexStr(al.output_index), ": (",
                                      al.parameter_number, ", ", IndexStr(al.parameter_index), ")");
      if (!IndexIsValid(result, al.output_index)) {
        ModuleError(StrCat(what, ": output index is not in the result shape ", Str(result)));
        continue;
      }
      if (al.parameter_number < 0 || al.parameter_number >= entry.num_parameters() ||
          !entry.parameter_instruction(al.parameter_number)) {
        ModuleError(StrCat(what, ": ENTRY has no parameter ", al.parameter_number));
        continue;
      }
      const Shape& param = entry.parameter_instruction(al.parameter_number)->shape();
      if (!IndexIsValid(param, al.parameter_index)) {
        ModuleError(StrCat(what, ": parameter index is not in the parameter shape ", Str(param)));
        continue;
      }
      if (!outputs.insert(al.output_index).second)
        ModuleError(StrCat(what, ": output ", IndexStr(al.output_index), " is aliased twice"));
      if (!params.insert({al.parameter_number, al.parameter_index}).second)
        ModuleError(StrCat(what, ": the parameter buffer is aliased twice"));
      const Shape& out_sub = result.Subshape(al.output_index);
      const Shape& in_sub = param.Subshape(al.parameter_index);
      if (out_sub.IsArray() && in_sub.IsArray() && out_sub.byte_size() != in_sub.byte_size())
        ModuleError(StrCat(what, ": output ", Str(out_sub), " and parameter ", Str(in_sub),
                           " have different sizes"));
    }
    for (const BufferDonor& d : module_.header().buffer_donors) {
      if (d.parameter_number < 0 || d.parameter_number >= entry.num_parameters() ||
          !entry.parameter_instruction(d.parameter_number) ||
          !IndexIsValid(entry.parameter_instruction(d.parameter_number)->shape(),
                        d.parameter_index))
        ModuleError(StrCat("buffer_donor (", d.parameter_number, ", ", IndexStr(d.parameter_index),
                           ") does not name an ENTRY parameter buffer"));
    }
  }

  const HloModule& module_;
  const VerifierOptions& opts_;
  std::vector<std::string> errors_;
  std::unordered_map<std::string, const HloInstruction*> names_;
};

}  // namespace

std::vector<std::string> CollectVerifierErrors(const HloModule& module,
                                               const VerifierOptions& options) {
  return Verifier(module, options).Run();
}

Status VerifyModule(const HloModule& module, const VerifierOptions& options) {
  std::vector<std::string> errors = CollectVerifierErrors(module, options);
  if (errors.empty()) return OkStatus();
  const size_t shown = std::min<size_t>(errors.size(), static_cast<size_t>(std::max(options.max_errors, 1)));
  std::string msg;
  for (size_t i = 0; i < shown; ++i) {
    if (i) msg += "\n";
    msg += errors[i];
  }
  if (errors.size() > shown) msg += StrCat("\n... and ", errors.size() - shown, " more errors");
  return InvalidArgument(msg);
}

}  // namespace kiln
