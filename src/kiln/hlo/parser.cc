// The HLO text parser: module structure (header, stack frames, computations, instructions,
// operands) and the public entry points. The grammar families live in parser_*.cc; the class
// is declared in parser_internal.h.
#include "kiln/hlo/parser.h"

#include "kiln/hlo/shape_inference.h"

#include "kiln/base/npy.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/hlo/parser_internal.h"
#include "kiln/hlo/shape_inference.h"

namespace kiln {
namespace parser_internal {

HloParser::HloParser(std::string_view text, const ParseOptions& options)
    : lex_(text), options_(options) {}

// ---------------------------------------------------------------------------------------------
// Errors

Status HloParser::ErrorAt(size_t offset, std::string_view message) const {
  int line = 0, column = 0;
  lex_.LineColumn(offset, &line, &column);
  std::string_view text = lex_.LineText(offset);
  // Long lines (real dumps have lines of many kilobytes) are shown as a window around the
  // column.
  constexpr size_t kWindow = 160;
  size_t col0 = static_cast<size_t>(column - 1);
  std::string shown;
  size_t caret_at = col0;
  if (text.size() > kWindow) {
    size_t start = col0 > kWindow / 2 ? col0 - kWindow / 2 : 0;
    size_t end = std::min(text.size(), start + kWindow);
    shown = (start > 0 ? "..." : "") + std::string(text.substr(start, end - start)) +
            (end < text.size() ? "..." : "");
    caret_at = col0 - start + (start > 0 ? 3 : 0);
  } else {
    shown = std::string(text);
  }
  std::string caret;
  for (size_t i = 0; i < caret_at && i < shown.size(); ++i) caret += shown[i] == '\t' ? '\t' : ' ';
  caret += '^';
  return InvalidArgument(options_.filename, ":", line, ":", column, ": ", message, "\n", shown,
                         "\n", caret);
}

std::string HloParser::DescribeToken(const Token& t) const {
  auto clip = [](std::string_view s) {
    return s.size() > 40 ? std::string(s.substr(0, 37)) + "..." : std::string(s);
  };
  switch (t.kind) {
    case TokKind::kEof: return "end of input";
    case TokKind::kError: return t.value;
    case TokKind::kIdent: return StrCat("identifier '", clip(t.text), "'");
    case TokKind::kName: return StrCat("name '%", clip(t.text), "'");
    case TokKind::kInt: return StrCat("integer ", clip(t.text));
    case TokKind::kDecimal: return StrCat("decimal ", clip(t.text));
    case TokKind::kString: return StrCat("string ", clip(t.text));
    case TokKind::kDxD:
    case TokKind::kPad:
    case TokKind::kDimLabels: return StrCat("'", clip(t.text), "'");
    default: return std::string(TokKindDescription(t.kind));
  }
}

Status HloParser::Expected(std::string_view what) {
  const Token& t = lex_.Peek();
  return ErrorAt(t.offset, StrCat("expected ", what, ", found ", DescribeToken(t)));
}

Status HloParser::Expect(TokKind kind, std::string_view what) {
  if (lex_.PeekKind() != kind) return Expected(what);
  lex_.Next();
  return OkStatus();
}

bool HloParser::TryConsume(TokKind kind) {
  if (lex_.PeekKind() != kind) return false;
  lex_.Next();
  return true;
}

bool HloParser::PeekIdent(std::string_view word) {
  const Token& t = lex_.Peek();
  return t.kind == TokKind::kIdent && t.text == word;
}

bool HloParser::TryConsumeIdent(std::string_view word) {
  if (!PeekIdent(word)) return false;
  lex_.Next();
  return true;
}

Status HloParser::TooDeep() {
  return ErrorAt(lex_.NextTokenOffset(),
                 StrCat("nesting deeper than ", kMaxNestingDepth, " levels"));
}

// ---------------------------------------------------------------------------------------------
// Module

namespace {
bool IsStackFrameTableName(std::string_view s) {
  return s == "FileNames" || s == "FunctionNames" || s == "FileLocations" || s == "StackFrames";
}
}  // namespace

// module ::= header? stack_frames? computation+
// header ::= 'HloModule' name (',' header_attribute)*
StatusOr<std::unique_ptr<HloModule>> HloParser::ParseModule() {
  auto module = std::make_unique<HloModule>("");
  bool has_header = false;
  if (PeekIdent("HloModule")) {
    has_header = true;
    KILN_RETURN_IF_ERROR(ParseHeader(module.get()));
  }
  // Stack-frame tables: a table name not followed by a computation body or signature.
  while (lex_.PeekKind() == TokKind::kIdent && IsStackFrameTableName(lex_.Peek().text)) {
    Lexer::State s = lex_.GetState();
    lex_.Next();
    TokKind after = lex_.PeekKind();
    lex_.SetState(s);
    if (after == TokKind::kLbrace || after == TokKind::kLparen || after == TokKind::kComma) break;
    KILN_RETURN_IF_ERROR(ParseStackFrames(&module->stack_frames()));
  }
  while (lex_.PeekKind() != TokKind::kEof) {
    KILN_RETURN_IF_ERROR(ParseComputation(module.get()));
  }
  if (module->computations().empty()) return Expected("a computation");
  if (!module->entry_computation()) {
    // No ENTRY: the last computation is the entry (a lone computation is its own entry).
    module->set_entry_computation(module->computations().back());
  }
  // Async wrappers of the sugar form, named once every parsed name is known.
  for (PendingWrapper& w : pending_wrappers_) KILN_RETURN_IF_ERROR(BuildAsyncWrapper(module.get(), w));
  KILN_RETURN_IF_ERROR(ResolveComputations(module.get()));
  KILN_RETURN_IF_ERROR(InferShapes(module.get()));
  if (!has_header) module->set_name(module->entry_computation()->name());
  return module;
}

Status HloParser::ParseHeader(HloModule* module) {
  lex_.Next();  // HloModule
  KILN_ASSIGN_OR_RETURN(std::string name, ParseName("module name"));
  module->set_name(name);
  // Older XLA tests write a colon after the name ("HloModule axpy_module:"); XLA accepts it.
  TryConsume(TokKind::kColon);
  HloModuleHeader& h = module->header();
  std::unordered_set<std::string> seen;
  while (TryConsume(TokKind::kComma)) {
    const Token attr = lex_.Peek();
    if (attr.kind != TokKind::kIdent) return Expected("module attribute name");
    lex_.Next();
    std::string key(attr.text);
    if (!seen.insert(key).second)
      return ErrorAt(attr.offset, StrCat("duplicate module attribute '", key, "'"));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    if (key == "is_scheduled") {
      KILN_ASSIGN_OR_RETURN(h.is_scheduled, ParseBool());
    } else if (key == "entry_computation_layout") {
      KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
      KILN_ASSIGN_OR_RETURN(ProgramShape ps, ParseProgramShape());
      KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}'"));
      h.entry_computation_layout = std::move(ps);
    } else if (key == "input_output_alias") {
      KILN_ASSIGN_OR_RETURN(h.input_output_alias, ParseInputOutputAlias());
    } else if (key == "buffer_donor") {
      KILN_ASSIGN_OR_RETURN(h.buffer_donors, ParseBufferDonors());
    } else if (key == "alias_passthrough_params") {
      KILN_ASSIGN_OR_RETURN(h.alias_passthrough_params, ParseBool());
    } else if (key == "replica_count") {
      KILN_ASSIGN_OR_RETURN(h.replica_count, ParseInt64());
    } else if (key == "num_partitions") {
      KILN_ASSIGN_OR_RETURN(h.num_partitions, ParseInt64());
    } else if (key == "frontend_attributes") {
      KILN_ASSIGN_OR_RETURN(h.frontend_attributes, ParseFrontendAttributes());
    } else if (key == "allow_spmd_sharding_propagation_to_parameters") {
      KILN_ASSIGN_OR_RETURN(h.allow_spmd_sharding_propagation_to_parameters, ParseBoolList());
    } else if (key == "allow_spmd_sharding_propagation_to_output") {
      KILN_ASSIGN_OR_RETURN(h.allow_spmd_sharding_propagation_to_output, ParseBoolList());
    } else if (key == "spmd_output_sharding") {
      KILN_ASSIGN_OR_RETURN(HloSharding s, ParseSharding());
      h.spmd_output_sharding = std::move(s);
    } else if (key == "spmd_parameters_shardings") {
      // '{' sharding (',' sharding)* '}'
      KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
      if (!TryConsume(TokKind::kRbrace)) {
        do {
          KILN_ASSIGN_OR_RETURN(HloSharding s, ParseSharding());
          h.spmd_parameters_shardings.push_back(std::move(s));
        } while (TryConsume(TokKind::kComma));
        KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}'"));
      }
    } else {
      KILN_ASSIGN_OR_RETURN(std::string raw, ParseRawValue());
      h.extra.emplace_back(key, std::move(raw));
    }
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Computations

// computation ::= 'ENTRY'? name signature? (',' 'execution_thread' '=' string)?
//                 '{' instruction+ '}' (',' 'execution_thread' '=' string)?
// signature ::= '(' (name ':' shape (',' name ':' shape)*)? ')' '->' shape
Status HloParser::ParseComputation(HloModule* module) {
  bool is_entry = false;
  if (PeekIdent("ENTRY")) {
    Lexer::State s = lex_.GetState();
    lex_.Next();
    TokKind k = lex_.PeekKind();
    if (k == TokKind::kName || k == TokKind::kIdent) {
      is_entry = true;
    } else {
      lex_.SetState(s);  // a computation named ENTRY
    }
  }
  const Token name_tok = lex_.Peek();
  KILN_ASSIGN_OR_RETURN(std::string name, ParseName("computation name"));
  if (computations_by_name_.count(name))
    return ErrorAt(name_tok.offset, StrCat("computation '", name, "' is defined twice"));
  if (is_entry && module->entry_computation())
    return ErrorAt(name_tok.offset, StrCat("second ENTRY computation '", name, "'"));

  std::optional<Shape> signature_result;  // the "-> shape" of a signature
  size_t signature_offset = 0;
  if (lex_.PeekKind() == TokKind::kLparen) {
    lex_.Next();
    if (!TryConsume(TokKind::kRparen)) {
      do {
        KILN_RETURN_IF_ERROR(ParseName("parameter name").status());
        KILN_RETURN_IF_ERROR(Expect(TokKind::kColon, "':'"));
        KILN_RETURN_IF_ERROR(ParseShape().status());
      } while (TryConsume(TokKind::kComma));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
    }
    KILN_RETURN_IF_ERROR(Expect(TokKind::kArrow, "'->'"));
    signature_offset = lex_.NextTokenOffset();
    KILN_ASSIGN_OR_RETURN(signature_result, ParseShape());
  }
  std::string execution_thread;
  while (TryConsume(TokKind::kComma)) {
    if (!TryConsumeIdent("execution_thread")) return Expected("'execution_thread'");
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    KILN_ASSIGN_OR_RETURN(execution_thread, ParseString());
  }
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));

  auto comp_owned = std::make_unique<HloComputation>(name);
  comp_owned->set_execution_thread(execution_thread);
  HloComputation* comp = module->AddComputation(std::move(comp_owned), is_entry);
  computations_by_name_[name] = comp;

  std::vector<PendingInstruction> pending;
  std::unordered_map<std::string, HloInstruction*> names;
  bool saw_root = false;
  HloInstruction* root = nullptr;
  while (lex_.PeekKind() != TokKind::kRbrace) {
    if (lex_.PeekKind() == TokKind::kEof) {
      // A bare computation may end without its closing brace only if it was never opened;
      // here the brace was opened, so the end of input is an error.
      return Expected("an instruction or '}'");
    }
    current_pending_ = &pending;
    current_names_ = &names;
    Status st = ParseInstruction(comp, pending, names, &saw_root, &root);
    current_pending_ = nullptr;
    current_names_ = nullptr;
    KILN_RETURN_IF_ERROR(st);
  }
  size_t close_offset = lex_.NextTokenOffset();
  lex_.Next();  // '}'
  // XLA writes the thread after the body: "} , execution_thread="host"".
  if (lex_.PeekKind() == TokKind::kComma) {
    lex_.Next();
    if (!TryConsumeIdent("execution_thread")) return Expected("'execution_thread'");
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    KILN_ASSIGN_OR_RETURN(std::string thread, ParseString());
    comp->set_execution_thread(std::move(thread));
  }
  if (pending.empty()) return ErrorAt(close_offset, StrCat("computation '", name, "' is empty"));
  KILN_RETURN_IF_ERROR(FinishComputation(comp, pending, names));
  comp->set_root_instruction(root ? root : pending.back().instr);
  // The signature's result must be the root's shape (layouts aside), as XLA checks; a root
  // whose shape is still to be inferred is left to the verifier.
  const HloInstruction* r = comp->root_instruction();
  if (signature_result && r->shape().element_type() != PrimitiveType::kInvalid &&
      !Shape::Compatible(*signature_result, r->shape()))
    return ErrorAt(signature_offset, StrCat("computation '", name, "' returns ",
                                            signature_result->ToString(false), " but its root '",
                                            r->name(), "' is ", r->shape().ToString(false)));
  return OkStatus();
}

// Resolves operand and control-predecessor names, checks parameter numbering, and moves the
// instructions into the computation.
Status HloParser::FinishComputation(HloComputation* comp,
                                    std::vector<PendingInstruction>& pending,
                                    std::unordered_map<std::string, HloInstruction*>& names) {
  // Parameters: numbers 0..n-1, each exactly once.
  std::vector<const PendingInstruction*> params;
  for (const PendingInstruction& p : pending) {
    if (p.instr->opcode() != HloOpcode::kParameter) continue;
    params.push_back(&p);
  }
  std::vector<const PendingInstruction*> by_number(params.size(), nullptr);
  for (const PendingInstruction* p : params) {
    int64_t n = p->instr->parameter_number();
    if (n < 0 || n >= static_cast<int64_t>(params.size()))
      return ErrorAt(p->operands_offset,
                     StrCat("parameter number ", n, " out of range: computation '", comp->name(),
                            "' has ", params.size(), " parameter", params.size() == 1 ? "" : "s"));
    if (by_number[n])
      return ErrorAt(p->operands_offset, StrCat("duplicate parameter number ", n, " (also '",
                                                by_number[n]->instr->name(), "')"));
    by_number[n] = p;
  }
  for (PendingInstruction& p : pending) {
    for (const NameRef& ref : p.operands) {
      auto it = names.find(ref.name);
      if (it == names.end())
        return ErrorAt(ref.offset, StrCat("operand '", ref.name, "' is not defined in computation '",
                                          comp->name(), "'"));
      // A shape written with the operand must be the operand's (layouts aside), as XLA checks;
      // an operand whose own shape is still to be inferred is checked by the verifier instead.
      const Shape& actual = it->second->shape();
      if (ref.declared && actual.element_type() != PrimitiveType::kInvalid &&
          !Shape::Compatible(*ref.declared, actual))
        return ErrorAt(ref.offset, StrCat("the declared operand shape ", ref.declared->ToString(false),
                                          " of '", ref.name, "' is not its shape ",
                                          actual.ToString(false)));
      p.instr->AppendOperand(it->second);
    }
    for (const NameRef& ref : p.control_predecessors) {
      auto it = names.find(ref.name);
      if (it == names.end())
        return ErrorAt(ref.offset, StrCat("control predecessor '", ref.name,
                                          "' is not defined in computation '", comp->name(), "'"));
      it->second->AddControlDependencyTo(p.instr);
    }
  }
  KILN_RETURN_IF_ERROR(CheckAcyclic(comp, pending));
  for (PendingInstruction& p : pending) comp->AddInstruction(std::move(p.owned));
  for (PendingInstruction& p : pending) {
    if (p.async_wrapped)
      pending_wrappers_.push_back({p.instr, std::move(p.async_wrapped), p.opcode_offset});
  }
  return OkStatus();
}

// Operands and control predecessors must not form a cycle (text order may use names before
// their definition, but the graph must still be a DAG).
Status HloParser::CheckAcyclic(HloComputation* comp, std::vector<PendingInstruction>& pending) {
  std::unordered_map<const HloInstruction*, size_t> index;
  index.reserve(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) index[pending[i].instr] = i;
  // Kahn's algorithm over edges operand -> user and predecessor -> successor.
  std::vector<int64_t> indegree(pending.size(), 0);
  std::vector<std::vector<size_t>> users(pending.size());
  for (size_t i = 0; i < pending.size(); ++i) {
    const HloInstruction* h = pending[i].instr;
    auto add_edge = [&](const HloInstruction* from) {
      users[index[from]].push_back(i);
      ++indegree[i];
    };
    for (const HloInstruction* op : h->operands()) add_edge(op);
    for (const HloInstruction* pred : h->control_predecessors()) add_edge(pred);
  }
  std::vector<size_t> ready;
  for (size_t i = 0; i < pending.size(); ++i)
    if (indegree[i] == 0) ready.push_back(i);
  size_t done = 0;
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    ++done;
    for (size_t u : users[i])
      if (--indegree[u] == 0) ready.push_back(u);
  }
  if (done == pending.size()) return OkStatus();
  for (size_t i = 0; i < pending.size(); ++i) {
    if (indegree[i] > 0) {
      return ErrorAt(pending[i].name_offset,
                     StrCat("instruction '", pending[i].instr->name(), "' in computation '",
                            comp->name(), "' depends on itself (cycle through its operands)"));
    }
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Instructions

namespace {
// The async opcode an "X-start"/"X-update"/"X-done" spelling stands for, with X.
std::optional<std::pair<HloOpcode, HloOpcode>> AsyncSugar(std::string_view text) {
  for (auto [suffix, op] : {std::pair<std::string_view, HloOpcode>{"-start", HloOpcode::kAsyncStart},
                            {"-update", HloOpcode::kAsyncUpdate},
                            {"-done", HloOpcode::kAsyncDone}}) {
    if (EndsWith(text, suffix)) {
      auto wrapped = ParseHloOpcode(text.substr(0, text.size() - suffix.size()));
      // parameter and constant have their own operand syntax and cannot be wrapped.
      if (wrapped && !IsAsyncOpcode(*wrapped) && *wrapped != HloOpcode::kParameter &&
          *wrapped != HloOpcode::kConstant)
        return std::make_pair(op, *wrapped);
    }
  }
  return std::nullopt;
}
}  // namespace

// instruction ::= 'ROOT'? name '=' shape opcode '(' operands ')' (',' attribute)*
Status HloParser::ParseInstruction(HloComputation* comp, std::vector<PendingInstruction>& pending,
                                   std::unordered_map<std::string, HloInstruction*>& names,
                                   bool* saw_root, HloInstruction** root) {
  bool is_root = false;
  if (PeekIdent("ROOT")) {
    Lexer::State s = lex_.GetState();
    lex_.Next();
    if (lex_.PeekKind() == TokKind::kEqual) {
      lex_.SetState(s);  // an instruction named ROOT
    } else {
      is_root = true;
    }
  }
  const Token name_tok = lex_.Peek();
  KILN_ASSIGN_OR_RETURN(std::string name, ParseName("instruction name"));
  if (names.count(name))
    return ErrorAt(name_tok.offset, StrCat("instruction '", name, "' is defined twice in computation '",
                                           comp->name(), "'"));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
  // XLA infers the shape of an instruction written without one ("ROOT y = add(x, x)"): an
  // opcode right after '=' (not a type, and not a parameter or constant, which need theirs).
  bool infer_shape = false;
  if (!PeekShape() && lex_.PeekKind() == TokKind::kIdent) {
    const Token t = lex_.Peek();
    std::optional<HloOpcode> op = ParseHloOpcode(t.text);
    if (op && *op != HloOpcode::kParameter && *op != HloOpcode::kConstant && !ParsePrimitiveType(t.text)) {
      Lexer::State st = lex_.GetState();
      lex_.Next();
      infer_shape = lex_.PeekKind() == TokKind::kLparen;
      lex_.SetState(st);
    }
  }
  Shape shape;
  if (!infer_shape) {
    KILN_ASSIGN_OR_RETURN(shape, ParseShape());
  }

  const Token op_tok = lex_.Peek();
  if (op_tok.kind != TokKind::kIdent) return Expected("opcode");
  lex_.Next();
  PendingInstruction p;
  p.opcode_offset = op_tok.offset;
  p.name_offset = name_tok.offset;
  HloOpcode opcode;
  if (auto op = ParseHloOpcode(op_tok.text)) {
    opcode = *op;
  } else if (auto sugar = AsyncSugar(op_tok.text)) {
    opcode = sugar->first;
    p.async_wrapped_opcode = sugar->second;
  } else {
    return ErrorAt(op_tok.offset, StrCat("unknown opcode '", op_tok.text, "'"));
  }

  auto owned = std::make_unique<HloInstruction>(opcode, std::move(shape), name);
  HloInstruction* instr = owned.get();
  p.instr = instr;
  int line = 0, col = 0;
  lex_.LineColumn(name_tok.offset, &line, &col);
  instr->set_location({line, col});
  if (p.async_wrapped_opcode && opcode == HloOpcode::kAsyncStart) {
    // The attributes after the operands describe the wrapped instruction; its shape is the
    // start's {1} element, filled in by BuildAsyncWrapper.
    p.async_wrapped = std::make_unique<HloInstruction>(*p.async_wrapped_opcode, Shape(),
                                                       name + ".wrapped");
  }

  bool elided = false;
  p.operands_offset = lex_.NextTokenOffset();
  KILN_RETURN_IF_ERROR(ParseOperands(p, p.async_wrapped ? p.async_wrapped.get() : instr, &elided));

  CalledRefs called;
  std::vector<std::string_view> seen_attrs;
  while (TryConsume(TokKind::kComma)) {
    const Token attr = lex_.Peek();
    if (attr.kind != TokKind::kIdent) return Expected("attribute name");
    lex_.Next();
    for (std::string_view seen : seen_attrs)
      if (seen == attr.text) return ErrorAt(attr.offset, StrCat("duplicate attribute '", attr.text, "'"));
    seen_attrs.push_back(attr.text);
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    KILN_RETURN_IF_ERROR(ParseInstructionAttribute(p, called, attr));
  }

  KILN_RETURN_IF_ERROR(CheckArity(p));

  // Called computations in role order (see instruction.h).
  HloInstruction* target = p.async_wrapped ? p.async_wrapped.get() : instr;
  // A dot without dimension numbers is XLA's default: no batch and no contracting dimensions
  // (an outer product). Every later stage finds them present.
  if (target->opcode() == HloOpcode::kDot && !target->attrs().dot_dimension_numbers)
    target->attrs().dot_dimension_numbers.emplace();
  // So is a reduce-window or select-and-scatter without window=: a window of no dimensions,
  // which fits a scalar operand (the verifier refuses it for any other rank).
  if ((target->opcode() == HloOpcode::kReduceWindow ||
       target->opcode() == HloOpcode::kSelectAndScatter) &&
      !target->attrs().window)
    target->attrs().window.emplace();
  std::vector<NameRef> refs;
  if (called.condition || called.body) {
    if (!called.condition || !called.body)
      return ErrorAt(op_tok.offset, "while needs both condition= and body=");
    refs = {*called.condition, *called.body};
  } else if (called.select || called.scatter) {
    if (!called.select || !called.scatter)
      return ErrorAt(op_tok.offset, "select-and-scatter needs both select= and scatter=");
    refs = {*called.select, *called.scatter};
  } else if (called.true_computation || called.false_computation) {
    if (!called.true_computation || !called.false_computation)
      return ErrorAt(op_tok.offset,
                     "conditional needs both true_computation= and false_computation=");
    refs = {*called.true_computation, *called.false_computation};
  } else if (!called.branch_computations.empty()) {
    refs = called.branch_computations;
  } else {
    if (called.to_apply) refs.push_back(*called.to_apply);
    for (const NameRef& r : called.called_computations) refs.push_back(r);
  }
  // calls= names the computation of a fusion or an async op; in the async sugar form it is the
  // wrapped instruction's (a fusion-start's fused computation).
  for (const NameRef& r : called.calls) refs.push_back(r);
  for (const NameRef& r : refs) {
    pending_calls_.push_back({target, target->called_computations().size(), r});
    target->AppendCalledComputation(nullptr);
  }
  if (p.async_wrapped_opcode && opcode != HloOpcode::kAsyncStart &&
      instr->called_computations().empty())
    async_sugar_users_.push_back({instr, op_tok.offset});

  if (elided) KILN_RETURN_IF_ERROR(FillElidedConstant(instr, name_tok.offset));

  if (is_root) {
    if (*saw_root)
      return ErrorAt(name_tok.offset, StrCat("second ROOT instruction '", name,
                                             "' in computation '", comp->name(), "'"));
    *saw_root = true;
    *root = instr;
  }
  if (infer_shape) infer_shapes_.push_back({instr, name_tok.offset});
  names.emplace(name, instr);
  p.owned = std::move(owned);
  pending.push_back(std::move(p));
  return OkStatus();
}

Status HloParser::CheckArity(const PendingInstruction& p) {
  HloOpcode op = p.async_wrapped ? *p.async_wrapped_opcode : p.instr->opcode();
  if (op == HloOpcode::kParameter || op == HloOpcode::kConstant) return OkStatus();
  std::optional<int> arity = HloOpcodeArity(op);
  if (p.async_wrapped_opcode && !p.async_wrapped) arity = 1;  // X-update / X-done
  // A sparse dot takes a metadata operand per sparsity descriptor.
  const HloInstruction* target = p.async_wrapped ? p.async_wrapped.get() : p.instr;
  if (op == HloOpcode::kDot && arity)
    *arity += static_cast<int>(target->attrs().sparsity.size());
  if (arity && static_cast<int>(p.operands.size()) != *arity)
    return ErrorAt(p.operands_offset,
                   StrCat(p.async_wrapped_opcode ? "async " : "", HloOpcodeString(op), " takes ",
                          *arity, " operand", *arity == 1 ? "" : "s", ", found ",
                          p.operands.size()));
  return OkStatus();
}

// operands ::= '(' (operand (',' operand)*)? ')'     operand ::= shape? name
// parameter ::= '(' int ')'     constant ::= '(' literal ')'
Status HloParser::ParseOperands(PendingInstruction& p, HloInstruction* instr, bool* elided) {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
  if (instr->opcode() == HloOpcode::kParameter && !p.async_wrapped) {
    const Token t = lex_.Peek();
    KILN_ASSIGN_OR_RETURN(int64_t n, ParseInt64());
    if (n < 0) return ErrorAt(t.offset, "negative parameter number");
    if (n > (int64_t{1} << 24)) return ErrorAt(t.offset, StrCat("parameter number ", n, " too large"));
    instr->set_parameter_number(n);
    return Expect(TokKind::kRparen, "')'");
  }
  if (instr->opcode() == HloOpcode::kConstant && !p.async_wrapped) {
    KILN_ASSIGN_OR_RETURN(Literal lit, ParseLiteral(instr->shape(), elided));
    if (!*elided) instr->set_literal(std::move(lit));
    return Expect(TokKind::kRparen, "')'");
  }
  if (TryConsume(TokKind::kRparen)) return OkStatus();
  do {
    Shape operand_shape;
    const bool has_shape = PeekShape();
    if (has_shape) {
      KILN_ASSIGN_OR_RETURN(operand_shape, ParseShape());
    }
    const Token t = lex_.Peek();
    // A nested instruction: "shape opcode(...)", or "opcode(...)" whose shape is inferred (as
    // XLA reads "add(x, multiply(y, z))"; a name is never followed by '(', so an operand named
    // like an opcode stays a name). parameter and constant need their shape.
    std::optional<HloOpcode> nested_op =
        t.kind == TokKind::kIdent && current_pending_ ? ParseHloOpcode(t.text) : std::nullopt;
    if (nested_op && (has_shape || (*nested_op != HloOpcode::kParameter &&
                                    *nested_op != HloOpcode::kConstant))) {
      Lexer::State st = lex_.GetState();
      lex_.Next();
      const bool nested = lex_.PeekKind() == TokKind::kLparen;
      lex_.SetState(st);
      if (nested) {
        KILN_ASSIGN_OR_RETURN(std::string name,
                              ParseNestedOperand(std::move(operand_shape), /*infer_shape=*/!has_shape));
        p.operands.push_back({std::move(name), t.offset});
        continue;
      }
    }
    KILN_ASSIGN_OR_RETURN(std::string name, ParseName("operand name"));
    p.operands.push_back({std::move(name), t.offset});
    if (has_shape) p.operands.back().declared = std::move(operand_shape);
  } while (TryConsume(TokKind::kComma));
  return Expect(TokKind::kRparen, "')'");
}

// The wrapped computation of an async-start written as "X-start(...)": parameters for the
// operands and the wrapped instruction as root.
Status HloParser::BuildAsyncWrapper(HloModule* module, PendingWrapper& p) {
  HloInstruction* start = p.start;
  const Shape& s = start->shape();
  if (!s.IsTuple() || s.tuple_shapes_size() < 2)
    return ErrorAt(p.opcode_offset, StrCat("async start '", start->name(),
                                           "' must have a tuple shape ((operands), result, ...)"));
  std::unique_ptr<HloInstruction> wrapped = std::move(p.wrapped);
  wrapped->set_shape(s.tuple_shapes(1));
  std::string comp_name = start->name() + ".async_computation";
  while (computations_by_name_.count(comp_name)) comp_name += "_";
  auto comp = std::make_unique<HloComputation>(comp_name);
  comp->set_execution_thread(start->attrs().async_execution_thread);
  HloComputation* raw = module->AddComputation(std::move(comp));
  computations_by_name_[comp_name] = raw;
  for (int64_t i = 0; i < start->operand_count(); ++i) {
    auto param = std::make_unique<HloInstruction>(HloOpcode::kParameter,
                                                  start->operand(i)->shape(),
                                                  StrCat("param_", i));
    param->set_parameter_number(i);
    wrapped->AppendOperand(raw->AddInstruction(std::move(param)));
  }
  raw->set_root_instruction(raw->AddInstruction(std::move(wrapped)));
  start->AppendCalledComputation(raw);
  return OkStatus();
}

// A constant written as constant({...}) (a dump without its large constants, also nested as
// an operand): filled with deterministic random values if the options ask for it, else an
// error naming it.
Status HloParser::FillElidedConstant(HloInstruction* constant, size_t offset) {
  if (!options_.fill_elided_constants)
    return ErrorAt(offset, StrCat("constant '", constant->name(),
                                  "' has an elided value ({...}); set fill_elided_constants to fill "
                                  "it with random values"));
  auto filled = FillLiteral(constant->shape(), options_.fill_seed + elided_fill_counter_++);
  if (!filled.ok()) return ErrorAt(offset, filled.status().message());
  constant->set_literal(std::move(filled).value());
  return OkStatus();
}

// operand ::= shape? opcode '(' operands ')'   (no attributes; as XLA's parser reads them)
StatusOr<std::string> HloParser::ParseNestedOperand(Shape shape, bool infer_shape) {
  const Token op_tok = lex_.Next();
  std::optional<HloOpcode> opcode = ParseHloOpcode(op_tok.text);
  if (!opcode) return ErrorAt(op_tok.offset, StrCat("unknown opcode '", op_tok.text, "'"));
  std::string name;
  do {
    name = StrCat(op_tok.text, ".nested.", nested_counter_++);
  } while (current_names_->count(name));
  PendingInstruction q;
  q.opcode_offset = op_tok.offset;
  q.name_offset = op_tok.offset;
  auto owned = std::make_unique<HloInstruction>(*opcode, std::move(shape), name);
  q.instr = owned.get();
  int line = 0, col = 0;
  lex_.LineColumn(op_tok.offset, &line, &col);
  q.instr->set_location({line, col});
  bool elided = false;
  q.operands_offset = lex_.NextTokenOffset();
  KILN_RETURN_IF_ERROR(ParseOperands(q, q.instr, &elided));
  if (elided) KILN_RETURN_IF_ERROR(FillElidedConstant(q.instr, op_tok.offset));
  KILN_RETURN_IF_ERROR(CheckArity(q));
  if (q.instr->opcode() == HloOpcode::kDot && !q.instr->attrs().dot_dimension_numbers)
    q.instr->attrs().dot_dimension_numbers.emplace();
  current_names_->emplace(name, q.instr);
  if (infer_shape) infer_shapes_.push_back({q.instr, op_tok.offset});
  q.owned = std::move(owned);
  current_pending_->push_back(std::move(q));
  return name;
}

namespace {
// `s` with the default layout on every array of rank >= 1 that has none (as a written shape
// without a layout is read).
Shape WithDefaultLayouts(Shape s) {
  if (s.IsTuple()) {
    for (Shape& e : s.mutable_tuple_shapes()) e = WithDefaultLayouts(std::move(e));
    return s;
  }
  if (s.IsArray() && s.rank() > 0 && !s.has_layout()) {
    Shape d = Shape::ArrayWithDefaultLayout(s.element_type(), s.dimensions());
    for (int64_t i = 0; i < s.rank(); ++i)
      if (s.is_dynamic_dimension(i)) d = s;  // keep dynamic shapes as inferred
    return d;
  }
  return s;
}
}  // namespace

// Shapes of the instructions written without one, operands (and called computations) first.
Status HloParser::InferShapes(HloModule* module) {
  if (infer_shapes_.empty()) return OkStatus();
  std::unordered_map<const HloInstruction*, size_t> offsets;
  for (auto [instr, offset] : infer_shapes_) offsets[instr] = offset;
  for (HloComputation* c : module->MakeComputationPostOrder())
    for (HloInstruction* instr : c->MakeInstructionPostOrder()) {
      auto it = offsets.find(instr);
      if (it == offsets.end()) continue;
      for (const HloInstruction* op : instr->operands())
        if (!op->shape().IsValid())
          return ErrorAt(it->second, StrCat("cannot infer the shape of '", instr->name(), "': operand '", op->name(),
                                            "' has no shape"));
      StatusOr<Shape> s = InferShape(*instr);
      if (!s.ok())
        return ErrorAt(it->second, StrCat("cannot infer the shape of '", instr->name(), "' (write it): ",
                                          s.status().message()));
      instr->set_shape(WithDefaultLayouts(std::move(s).value()));
    }
  return OkStatus();
}

// Resolves called-computation names once every computation is known.
Status HloParser::ResolveComputations(HloModule* module) {
  (void)module;
  for (const PendingCall& pc : pending_calls_) {
    auto it = computations_by_name_.find(pc.ref.name);
    if (it == computations_by_name_.end())
      return ErrorAt(pc.ref.offset, StrCat("computation '", pc.ref.name, "' is not defined"));
    pc.instr->set_called_computation(static_cast<int64_t>(pc.slot), it->second);
  }
  // Sugared async-update/-done share their start's computation.
  for (auto [instr, offset] : async_sugar_users_) {
    HloInstruction* op = instr->operand_count() > 0 ? instr->operand(0) : nullptr;
    int guard = 0;
    while (op && op->called_computations().empty() && op->operand_count() > 0 && guard++ < 64)
      op = op->operand(0);
    if (!op || op->called_computations().empty() || !IsAsyncOpcode(op->opcode()))
      return ErrorAt(offset, StrCat("async instruction '", instr->name(),
                                    "' does not follow an async start"));
    instr->AppendCalledComputation(op->called_computations()[0]);
  }
  return OkStatus();
}

}  // namespace parser_internal

// ---------------------------------------------------------------------------------------------
// Public entry points

StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text,
                                                    const ParseOptions& options) {
  parser_internal::HloParser parser(text, options);
  return parser.ParseModule();
}

StatusOr<std::unique_ptr<HloModule>> ParseHloModuleFile(const std::string& path,
                                                        ParseOptions options) {
  // A regular file or a pipe; a directory or a device is an error, not an endless read.
  StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  if (options.filename == ParseOptions().filename) options.filename = path;
  return ParseHloModule(*text, options);
}

StatusOr<Shape> ParseShape(std::string_view text) {
  parser_internal::HloParser parser(text, ParseOptions());
  return parser.ParseShapeOnly();
}

StatusOr<Literal> ParseLiteral(std::string_view text, const Shape& shape) {
  parser_internal::HloParser parser(text, ParseOptions());
  return parser.ParseLiteralOnly(shape);
}

}  // namespace kiln
