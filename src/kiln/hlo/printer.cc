// HLO printer: modules, computations, instructions, literals and fingerprints. Attribute
// families are in printer_attributes.cc.
#include "kiln/hlo/printer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "kiln/base/fingerprint.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/printer_internal.h"

namespace kiln {

using printer_internal::AppendShape;
using printer_internal::IntListText;
using printer_internal::ShapeText;

PrintOptions PrintOptions::Canonical() {
  PrintOptions o;
  o.canonical = true;
  o.print_metadata = false;
  o.print_stack_frames = false;
  return o;
}

PrintOptions PrintOptions::ShortParsable() {
  PrintOptions o;
  o.print_metadata = false;
  o.print_operand_shapes = false;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Literals

namespace {

// "nan", "-nan", or with a payload other than the default quiet NaN "nan(0x...)".
template <typename T>
bool AppendNan(std::string& out, const T& v) {
  uint64_t bits = 0;
  int total = 0, mant = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (!std::isnan(v)) return false;
    uint32_t b;
    std::memcpy(&b, &v, 4);
    bits = b, total = 32, mant = 23;
  } else if constexpr (std::is_same_v<T, double>) {
    if (!std::isnan(v)) return false;
    std::memcpy(&bits, &v, 8);
    total = 64, mant = 52;
  } else {
    if (!std::isnan(static_cast<float>(v))) return false;
    if (T::kFormat.nan == NanEncoding::kAllOnes) {  // two NaNs: S.1111.111
      out += (v.bits() >> (T::kFormat.total_bits - 1)) & 1 ? "-nan" : "nan";
      return true;
    }
    if (T::kFormat.nan != NanEncoding::kIeee) {  // a single NaN encoding
      out += "nan";
      return true;
    }
    bits = v.bits(), total = T::kFormat.total_bits, mant = T::kFormat.mantissa_bits;
  }
  bool negative = (bits >> (total - 1)) & 1;
  uint64_t payload = bits & ((uint64_t{1} << mant) - 1);
  out += negative ? "-nan" : "nan";
  if (payload != (uint64_t{1} << (mant - 1))) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "(0x%llx)", static_cast<unsigned long long>(payload));
    out += buf;
  }
  return true;
}

void AppendElement(std::string& out, const Literal& lit, int64_t i) {
  PrimitiveType t = lit.shape().element_type();
  if (t == PrimitiveType::kPred) {
    out += lit.data<bool>()[i] ? "true" : "false";
    return;
  }
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    const T& v = lit.data<T>()[i];
    if constexpr (std::is_same_v<T, bool>) {
      out += v ? "true" : "false";
    } else if constexpr (kIsComplexNative<T>) {
      if constexpr (std::is_same_v<T, std::complex<float>>) {
        out += "(" + RoundTripFloat(v.real()) + ", " + RoundTripFloat(v.imag()) + ")";
      } else {
        out += "(" + RoundTripDouble(v.real()) + ", " + RoundTripDouble(v.imag()) + ")";
      }
    } else if constexpr (std::is_same_v<T, double>) {
      if (!AppendNan(out, v)) out += RoundTripDouble(v);
    } else if constexpr (std::is_same_v<T, float>) {
      if (!AppendNan(out, v)) out += RoundTripFloat(v);
    } else if constexpr (kIsMiniFloat<T>) {
      if (!AppendNan(out, v)) out += RoundTripFloat(static_cast<float>(v));
    } else if constexpr (kIsIntN<T>) {
      out += std::to_string(static_cast<int64_t>(v));
    } else {
      out += std::to_string(v);
    }
  });
}

void AppendLiteral(std::string& out, const Literal& lit, bool elide_large) {
  const Shape& s = lit.shape();
  if (s.IsTuple()) {
    out += "(";
    for (int64_t i = 0; i < lit.tuple_size(); ++i) {
      if (i > 0) out += ", ";
      AppendLiteral(out, lit.tuple_element(i), elide_large);
    }
    out += ")";
    return;
  }
  if (!s.IsArray()) {
    out += ShapeText(s, false);
    return;
  }
  if (s.rank() == 0) {
    AppendElement(out, lit, 0);
    return;
  }
  int64_t n = lit.element_count();
  if (n == 0) {
    out += "{}";
    return;
  }
  if (elide_large && n > 16) {
    out += "{...}";
    return;
  }
  // Rank 1: {1, 2, 3}. Higher ranks: { { 1, 2 }, { 3, 4 } } (XLA's one-line form).
  const int64_t rank = s.rank();
  std::vector<int64_t> idx(rank, 0);
  int64_t linear = 0;
  std::string_view open = rank == 1 ? "{" : "{ ";
  std::string_view close = rank == 1 ? "}" : " }";
  for (int64_t d = 0; d < rank; ++d) out += open;
  while (true) {
    AppendElement(out, lit, linear++);
    // Advance the multi-index, closing and opening braces at dimension boundaries.
    int64_t d = rank - 1;
    while (d >= 0 && ++idx[d] == s.dimensions(d)) {
      idx[d] = 0;
      --d;
    }
    int64_t closed = rank - 1 - d;
    for (int64_t k = 0; k < closed; ++k) out += close;
    if (d < 0) break;
    out += ", ";
    for (int64_t k = 0; k < closed; ++k) out += open;
  }
}

}  // namespace

std::string PrintLiteralValue(const Literal& literal) {
  std::string out;
  AppendLiteral(out, literal, false);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Instructions, computations, modules

namespace {

class Printer {
 public:
  explicit Printer(const PrintOptions& o) : o_(o) {}

  std::string InstrName(const HloInstruction* i) {
    std::string prefix = o_.print_percent ? "%" : "";
    if (!o_.canonical) return prefix + i->name();
    auto it = instr_index_.find(i);
    if (it == instr_index_.end()) {
      // Outside a computation being printed: number by position in its parent.
      int64_t k = -1;
      if (i->parent()) {
        std::vector<HloInstruction*> all = i->parent()->MakeInstructionPostOrder();
        for (size_t j = 0; j < all.size(); ++j)
          if (all[j] == i) k = static_cast<int64_t>(j);
      }
      return prefix + "i" + std::to_string(k);
    }
    return prefix + "i" + std::to_string(it->second);
  }

  std::string CompName(const HloComputation* c) {
    std::string prefix = o_.print_percent ? "%" : "";
    if (!c) return prefix + "<null>";
    if (!o_.canonical) return prefix + c->name();
    auto it = comp_index_.find(c);
    if (it != comp_index_.end()) return prefix + "c" + std::to_string(it->second);
    return prefix + "c?";
  }

  // The instruction an async computation wraps, when every instruction calling it is part of
  // one async chain that prints in XLA's sugar form ("X-start", "X-update", "X-done", no
  // calls=, the computation not printed on its own); nullptr otherwise.
  const HloInstruction* SugarRoot(const HloComputation* c) {
    if (!c) return nullptr;
    auto it = sugar_.find(c);
    if (it != sugar_.end()) return it->second;
    const HloInstruction* r = ComputeSugarRoot(c);
    sugar_[c] = r;
    return r;
  }

  const HloInstruction* ComputeSugarRoot(const HloComputation* c) {
    const HloInstruction* root = c->root_instruction();
    if (!root || c->parent() == nullptr) return nullptr;
    HloOpcode op = root->opcode();
    if (op == HloOpcode::kParameter || op == HloOpcode::kConstant || IsAsyncOpcode(op)) return nullptr;
    std::string name(HloOpcodeString(op));
    for (const char* suffix : {"-start", "-update", "-done"})
      if (ParseHloOpcode(name + suffix)) return nullptr;
    if (c->instruction_count() != c->num_parameters() + 1) return nullptr;
    if (root->operand_count() != c->num_parameters()) return nullptr;
    for (int64_t i = 0; i < c->num_parameters(); ++i)
      if (!c->parameter_instruction(i) || root->operand(i) != c->parameter_instruction(i)) return nullptr;
    if (!root->metadata().empty() || root->sharding() || !root->frontend_attributes().empty() ||
        !root->backend_config().empty() || !root->control_predecessors().empty() ||
        !root->control_successors().empty())
      return nullptr;
    // Every caller: an async op calling only `c`, without unknown attributes; exactly one start
    // whose operands and shape match the computation; updates and dones chained to it.
    if (callers_.empty() && !callers_built_) BuildCallers(*c->parent());
    auto cit = callers_.find(c);
    if (cit == callers_.end()) return nullptr;
    const HloInstruction* start = nullptr;
    for (const HloInstruction* caller : cit->second) {
      if (!IsAsyncOpcode(caller->opcode()) || caller->called_computations().size() != 1 ||
          !caller->attrs().extra.empty())
        return nullptr;
      if (caller->opcode() == HloOpcode::kAsyncStart) {
        if (start) return nullptr;
        start = caller;
      } else {
        if (caller->operand_count() != 1 || !IsAsyncOpcode(caller->operand(0)->opcode()) ||
            caller->operand(0)->called_computations().size() != 1 ||
            caller->operand(0)->called_computations()[0] != c)
          return nullptr;
      }
    }
    if (!start || start->operand_count() != c->num_parameters()) return nullptr;
    for (int64_t i = 0; i < start->operand_count(); ++i)
      if (!(start->operand(i)->shape() == c->parameter_instruction(i)->shape())) return nullptr;
    const Shape& s = start->shape();
    if (!s.IsTuple() || s.tuple_shapes_size() < 2 || !(s.tuple_shapes(1) == root->shape()))
      return nullptr;
    if (c->execution_thread() != start->attrs().async_execution_thread) return nullptr;
    return root;
  }

  void BuildCallers(const HloModule& m) {
    callers_built_ = true;
    for (HloComputation* comp : m.computations())
      for (HloInstruction* i : comp->instructions())
        for (HloComputation* callee : i->called_computations()) callers_[callee].push_back(i);
  }

  void NumberComputation(const HloComputation& c) {
    std::vector<HloInstruction*> all = c.MakeInstructionPostOrder();
    for (size_t j = 0; j < all.size(); ++j) instr_index_[all[j]] = static_cast<int64_t>(j);
  }
  void NumberModule(const std::vector<HloComputation*>& comps) {
    for (size_t j = 0; j < comps.size(); ++j) comp_index_[comps[j]] = static_cast<int64_t>(j);
  }

  void Instruction(std::string& out, const HloInstruction& instr) {
    if (instr.IsRoot()) out += "ROOT ";
    out += InstrName(&instr);
    out += " = ";
    AppendShape(out, instr.shape(), o_.print_layouts);
    out += ' ';
    const HloInstruction* sugar = nullptr;
    if (IsAsyncOpcode(instr.opcode()) && instr.called_computations().size() == 1)
      sugar = SugarRoot(instr.called_computations()[0]);
    if (sugar) {
      out += HloOpcodeString(sugar->opcode());
      out += instr.opcode() == HloOpcode::kAsyncStart ? "-start"
             : instr.opcode() == HloOpcode::kAsyncUpdate ? "-update" : "-done";
    } else {
      out += HloOpcodeString(instr.opcode());
    }
    out += '(';
    if (instr.opcode() == HloOpcode::kParameter) {
      out += std::to_string(instr.parameter_number());
    } else if (instr.opcode() == HloOpcode::kConstant) {
      if (instr.has_literal()) {
        AppendLiteral(out, instr.literal(), !o_.print_large_constants && !o_.canonical);
      } else {
        out += "{...}";
      }
    } else {
      for (int64_t i = 0; i < instr.operand_count(); ++i) {
        if (i > 0) out += ", ";
        if (i > 0 && i % 5 == 0) out += "/*index=" + std::to_string(i) + "*/";
        if (o_.print_operand_shapes) {
          AppendShape(out, instr.operand(i)->shape(), o_.print_layouts);
          out += ' ';
        }
        out += InstrName(instr.operand(i));
      }
    }
    out += ')';
    // The start's own attributes, then (sugar form) the wrapped instruction's.
    printer_internal::AppendOpcodeAttributes(out, instr, o_);
    for (const auto& [k, v] : instr.attrs().extra) out += ", " + k + "=" + v;
    if (sugar && instr.opcode() == HloOpcode::kAsyncStart) {
      printer_internal::AppendOpcodeAttributes(out, *sugar, o_);
      for (const auto& [k, v] : sugar->attrs().extra) out += ", " + k + "=" + v;
      AppendCalledComputations(out, *sugar);
    }
    if (!sugar) AppendCalledComputations(out, instr);
    if (instr.sharding()) out += ", sharding=" + printer_internal::ShardingText(*instr.sharding());
    if (!instr.frontend_attributes().empty())
      out += ", frontend_attributes=" + printer_internal::FrontendAttributesText(instr.frontend_attributes());
    if (!instr.control_predecessors().empty()) {
      out += ", control-predecessors={";
      for (size_t i = 0; i < instr.control_predecessors().size(); ++i) {
        if (i > 0) out += ", ";
        out += InstrName(instr.control_predecessors()[i]);
      }
      out += "}";
    }
    if (o_.print_metadata && !instr.metadata().empty())
      out += ", metadata=" + printer_internal::MetadataText(instr.metadata());
    if (o_.print_backend_config && !instr.backend_config().empty()) {
      const BackendConfig& bc = instr.backend_config();
      out += ", backend_config=" + (bc.is_json ? bc.text : CEscapeQuoted(bc.text));
    }
  }

  void AppendCalledComputations(std::string& out, const HloInstruction& instr) {
    const auto& called = instr.called_computations();
    if (called.empty()) return;
    auto list = [&]() {
      std::string s = "{";
      for (size_t i = 0; i < called.size(); ++i) {
        if (i > 0) s += ", ";
        s += CompName(called[i]);
      }
      return s + "}";
    };
    switch (instr.opcode()) {
      case HloOpcode::kWhile:
        if (called.size() == 2) {
          out += ", condition=" + CompName(called[0]) + ", body=" + CompName(called[1]);
          return;
        }
        break;
      case HloOpcode::kSelectAndScatter:
        if (called.size() == 2) {
          out += ", select=" + CompName(called[0]) + ", scatter=" + CompName(called[1]);
          return;
        }
        break;
      case HloOpcode::kConditional:
        if (called.size() == 2 && instr.operand_count() > 0 &&
            instr.operand(0)->shape().element_type() == PrimitiveType::kPred) {
          out += ", true_computation=" + CompName(called[0]) +
                 ", false_computation=" + CompName(called[1]);
        } else {
          out += ", branch_computations=" + list();
        }
        return;
      case HloOpcode::kCustomCall:
        out += ", called_computations=" + list();
        return;
      case HloOpcode::kReduce:
      case HloOpcode::kReduceWindow:
      case HloOpcode::kMap:
      case HloOpcode::kSort:
      case HloOpcode::kScatter:
      case HloOpcode::kAllReduce:
      case HloOpcode::kAllReduceStart:
      case HloOpcode::kReduceScatter:
      case HloOpcode::kCall:
      case HloOpcode::kScan:
      case HloOpcode::kTopK:
        if (called.size() == 1) {
          out += ", to_apply=" + CompName(called[0]);
          return;
        }
        break;
      default:
        break;
    }
    out += ", calls=" + (called.size() == 1 ? CompName(called[0]) : list());
  }

  void Computation(std::string& out, const HloComputation& c) {
    if (o_.canonical) NumberComputation(c);
    if (c.IsEntryComputation()) out += "ENTRY ";
    out += CompName(&c);
    out += " (";
    const auto& params = c.parameter_instructions();
    for (size_t i = 0; i < params.size(); ++i) {
      if (i > 0) out += ", ";
      if (!params[i]) {
        out += "<missing>: ()";
        continue;
      }
      std::string name = InstrName(params[i]);
      if (!name.empty() && name[0] == '%') name.erase(0, 1);
      out += name + ": ";
      AppendShape(out, params[i]->shape(), false);
    }
    out += ") -> ";
    if (c.root_instruction()) AppendShape(out, c.root_instruction()->shape(), false);
    else out += "()";
    out += " {\n";
    // Definitions before uses: passes append new instructions at the end, so insertion order
    // need not be a valid text order. For parsed text the post order is the text's order.
    for (HloInstruction* i : c.MakeInstructionPostOrder()) {
      out += "  ";
      Instruction(out, *i);
      out += "\n";
    }
    out += "}";
    if (!c.execution_thread().empty() && c.execution_thread() != "main")
      out += ", execution_thread=" + CEscapeQuoted(c.execution_thread());
    out += "\n";
  }

  void Header(std::string& out, const HloModule& m) {
    const HloModuleHeader& h = m.header();
    out += "HloModule ";
    out += o_.canonical ? "m" : m.name();
    if (h.is_scheduled) out += ", is_scheduled=true";
    if (!h.input_output_alias.empty()) {
      out += ", input_output_alias={ ";
      for (size_t i = 0; i < h.input_output_alias.size(); ++i) {
        const InputOutputAlias& a = h.input_output_alias[i];
        if (i > 0) out += ", ";
        out += IntListText(a.output_index) + StrCat(": (", a.parameter_number, ", ") +
               IntListText(a.parameter_index) + (a.must_alias ? ", must-alias)" : ", may-alias)");
      }
      out += " }";
    }
    if (!h.buffer_donors.empty()) {
      out += ", buffer_donor={ ";
      for (size_t i = 0; i < h.buffer_donors.size(); ++i) {
        if (i > 0) out += ", ";
        out += StrCat("(", h.buffer_donors[i].parameter_number, ", ") +
               IntListText(h.buffer_donors[i].parameter_index) + ")";
      }
      out += " }";
    }
    if (h.alias_passthrough_params) out += ", alias_passthrough_params=true";
    if (h.entry_computation_layout)
      out += ", entry_computation_layout={" + printer_internal::ProgramShapeText(*h.entry_computation_layout) + "}";
    auto bools = [](const std::vector<bool>& v) {
      std::string s = "{";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::string(v[i] ? "true" : "false");
      return s + "}";
    };
    if (!h.allow_spmd_sharding_propagation_to_parameters.empty())
      out += ", allow_spmd_sharding_propagation_to_parameters=" +
             bools(h.allow_spmd_sharding_propagation_to_parameters);
    if (!h.allow_spmd_sharding_propagation_to_output.empty())
      out += ", allow_spmd_sharding_propagation_to_output=" + bools(h.allow_spmd_sharding_propagation_to_output);
    if (h.replica_count != 1) out += StrCat(", replica_count=", h.replica_count);
    if (h.num_partitions != 1) out += StrCat(", num_partitions=", h.num_partitions);
    if (!h.frontend_attributes.empty())
      out += ", frontend_attributes=" + printer_internal::FrontendAttributesText(h.frontend_attributes);
    if (h.spmd_output_sharding)
      out += ", spmd_output_sharding=" + printer_internal::ShardingText(*h.spmd_output_sharding);
    if (!h.spmd_parameters_shardings.empty()) {
      out += ", spmd_parameters_shardings={";
      for (size_t i = 0; i < h.spmd_parameters_shardings.size(); ++i) {
        if (i > 0) out += ",";
        out += printer_internal::ShardingText(h.spmd_parameters_shardings[i]);
      }
      out += "}";
    }
    for (const auto& [k, v] : h.extra) out += ", " + k + "=" + v;
    out += "\n\n";
  }

  void StackFrames(std::string& out, const StackFrameIndex& s) {
    if (s.empty()) return;
    auto strings = [&](std::string_view title, const std::vector<std::string>& v) {
      if (v.empty()) return;
      out += title;
      out += "\n";
      for (size_t i = 0; i < v.size(); ++i) out += StrCat(i + 1, " ", CEscapeQuoted(v[i]), "\n");
      out += "\n";
    };
    strings("FileNames", s.file_names);
    strings("FunctionNames", s.function_names);
    if (!s.file_locations.empty()) {
      out += "FileLocations\n";
      for (size_t i = 0; i < s.file_locations.size(); ++i) {
        const auto& l = s.file_locations[i];
        out += StrCat(i + 1, " {file_name_id=", l.file_name_id, " function_name_id=", l.function_name_id,
                      " line=", l.line, " end_line=", l.end_line, " column=", l.column,
                      " end_column=", l.end_column, "}\n");
      }
      out += "\n";
    }
    if (!s.stack_frames.empty()) {
      out += "StackFrames\n";
      for (size_t i = 0; i < s.stack_frames.size(); ++i) {
        const auto& f = s.stack_frames[i];
        out += StrCat(i + 1, " {file_location_id=", f.file_location_id,
                      " parent_frame_id=", f.parent_frame_id, "}\n");
      }
      out += "\n";
    }
  }

  void Module(std::string& out, const HloModule& m) {
    std::vector<HloComputation*> order = m.MakeComputationPostOrder();
    if (o_.canonical) NumberModule(order);
    Header(out, m);
    if (o_.print_stack_frames && !o_.canonical && !m.stack_frames().empty()) {
      StackFrames(out, m.stack_frames());
      out += "\n";
    }
    bool first = true;
    for (HloComputation* c : order) {
      if (SugarRoot(c)) continue;  // printed inline by its async chain
      if (!first) out += "\n";
      first = false;
      Computation(out, *c);
    }
  }

 private:
  const PrintOptions& o_;
  std::unordered_map<const HloComputation*, const HloInstruction*> sugar_;
  std::unordered_map<const HloComputation*, std::vector<const HloInstruction*>> callers_;
  bool callers_built_ = false;
  std::unordered_map<const HloInstruction*, int64_t> instr_index_;
  std::unordered_map<const HloComputation*, int64_t> comp_index_;
};

}  // namespace

std::string PrintInstruction(const HloInstruction& instr, const PrintOptions& options) {
  Printer p(options);
  std::string out;
  p.Instruction(out, instr);
  return out;
}

std::string PrintComputation(const HloComputation& computation, const PrintOptions& options) {
  Printer p(options);
  std::string out;
  p.Computation(out, computation);
  return out;
}

std::string PrintModule(const HloModule& module, const PrintOptions& options) {
  Printer p(options);
  std::string out;
  p.Module(out, module);
  return out;
}

// The instruction's canonical text (operands as shapes only, no names, metadata or sharding),
// followed by the canonical text of every computation it calls, transitively.
std::string InstructionFingerprint(const HloInstruction& instr) {
  PrintOptions o = PrintOptions::Canonical();
  std::string text = ShapeText(instr.shape(), true) + " " + std::string(HloOpcodeString(instr.opcode())) + "(";
  if (instr.opcode() == HloOpcode::kParameter) {
    text += std::to_string(instr.parameter_number());
  } else if (instr.opcode() == HloOpcode::kConstant && instr.has_literal()) {
    text += PrintLiteralValue(instr.literal());
  } else {
    for (int64_t i = 0; i < instr.operand_count(); ++i) {
      if (i > 0) text += ", ";
      text += ShapeText(instr.operand(i)->shape(), true);
    }
  }
  text += ")";
  printer_internal::AppendOpcodeAttributes(text, instr, o);
  for (const auto& [k, v] : instr.attrs().extra) text += ", " + k + "=" + v;
  if (!instr.backend_config().empty()) text += ", backend_config=" + instr.backend_config().text;
  // Called computations, depth first, each once.
  std::vector<const HloComputation*> stack(instr.called_computations().rbegin(),
                                           instr.called_computations().rend());
  std::vector<const HloComputation*> seen;
  int64_t k = 0;
  while (!stack.empty()) {
    const HloComputation* c = stack.back();
    stack.pop_back();
    if (!c || std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    Printer p(o);
    text += "\n#" + std::to_string(k++) + "\n";
    p.Computation(text, *c);
    for (HloInstruction* i : c->instructions())
      for (auto it = i->called_computations().rbegin(); it != i->called_computations().rend(); ++it)
        stack.push_back(*it);
  }
  return Sha256Hex(text);
}

std::string HloInstruction::ToString() const { return PrintInstruction(*this); }
std::string HloComputation::ToString() const { return PrintComputation(*this); }
std::string HloModule::ToString() const { return PrintModule(*this); }
std::string HloModule::Fingerprint() const {
  return Sha256Hex(PrintModule(*this, PrintOptions::Canonical()));
}

}  // namespace kiln
