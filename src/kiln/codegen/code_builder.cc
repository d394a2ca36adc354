#include "kiln/codegen/code_builder.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <unordered_set>

#include "kiln/base/strings.h"

namespace kiln::codegen {

// ---- IExpr ----

IExpr IExpr::Var(int var, int64_t coefficient) {
  IExpr e;
  if (coefficient != 0) e.terms_.push_back({var, coefficient});
  return e;
}

int64_t IExpr::Coefficient(int var) const {
  for (const auto& [v, k] : terms_)
    if (v == var) return k;
  return 0;
}

IExpr IExpr::Without(int var) const {
  IExpr e = *this;
  std::erase_if(e.terms_, [&](const auto& t) { return t.first == var; });
  return e;
}

IExpr operator+(const IExpr& a, const IExpr& b) {
  IExpr r;
  r.constant_ = a.constant_ + b.constant_;
  size_t i = 0, j = 0;
  while (i < a.terms_.size() || j < b.terms_.size()) {
    if (j == b.terms_.size() || (i < a.terms_.size() && a.terms_[i].first < b.terms_[j].first)) {
      r.terms_.push_back(a.terms_[i++]);
    } else if (i == a.terms_.size() || b.terms_[j].first < a.terms_[i].first) {
      r.terms_.push_back(b.terms_[j++]);
    } else {
      int64_t k = a.terms_[i].second + b.terms_[j].second;
      if (k != 0) r.terms_.push_back({a.terms_[i].first, k});
      ++i;
      ++j;
    }
  }
  return r;
}

IExpr operator-(const IExpr& a, const IExpr& b) { return a + b * -1; }

IExpr operator*(const IExpr& a, int64_t k) {
  IExpr r;
  if (k == 0) return r;
  r.constant_ = a.constant_ * k;
  for (const auto& [v, c] : a.terms_) r.terms_.push_back({v, c * k});
  return r;
}

// ---- CodeBuilder ----

std::string SanitizeIdentifier(std::string_view name) {
  std::string s;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "v_" + s;
  // Identifiers with a double underscore or a leading underscore + capital are reserved in C++.
  std::string out;
  for (char c : s) {
    if (c == '_' && !out.empty() && out.back() == '_') continue;
    out += c;
  }
  if (out[0] == '_') out = "v" + out;
  // Names that would clash with the language or with functions generated code calls (a local
  // `sqrt` hides ::sqrt for the rest of its block) get a trailing underscore.
  if (IsReservedIdentifier(out)) out += "_";
  return out;
}

bool IsReservedIdentifier(std::string_view name) {
  static const std::unordered_set<std::string>* reserved = [] {
    auto* set = new std::unordered_set<std::string>{
        // C++ keywords and alternative tokens.
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
        "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
        "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
        "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
        "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
        "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
        "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
        "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
        "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
        "virtual", "void", "volatile", "wchar_t", "while", "main", "NULL", "INFINITY", "NAN",
        // CUDA built-ins.
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "half", "nv_bfloat16",
        // Math functions generated code calls (f32 and f64 names) and helpers.
        "abs", "fabs", "fabsf", "min", "max", "fmin", "fmax", "fminf", "fmaxf", "isnan", "isinf",
        "isfinite", "signbit", "copysign", "copysignf", "hypot", "hypotf", "pow", "powf", "ldexp",
        "ldexpf", "frexp", "frexpf", "fma", "fmaf", "trunc", "truncf", "nan", "nanf"};
    for (const char* f : {"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt",
                          "ceil", "cos", "cosh", "erf", "exp", "exp2", "expm1", "floor", "fmod",
                          "log", "log1p", "log2", "rint", "round", "rsqrt", "sin", "sinh",
                          "sqrt", "tan", "tanh"}) {
      set->insert(f);
      set->insert(std::string(f) + "f");
    }
    return set;
  }();
  // kiln_* is the prelude's namespace; s8..u64 and the like are its type names.
  if (name.rfind("kiln_", 0) == 0) return true;
  static const std::unordered_set<std::string> types = {"s8", "s16", "s32", "s64", "u8",
                                                        "u16", "u32", "u64"};
  return reserved->count(std::string(name)) > 0 || types.count(std::string(name)) > 0;
}

CodeBuilder::CodeBuilder(std::string index_type, int indent)
    : index_type_(std::move(index_type)), base_indent_(indent) {
  blocks_.push_back(Block{next_block_id_++, BlockKind::kFunction, "", "", ""});
}

void CodeBuilder::Open(std::string header, BlockKind kind, std::string pragma) {
  blocks_.push_back(Block{next_block_id_++, kind, std::move(header), "", std::move(pragma)});
}

void CodeBuilder::Close() {
  assert(blocks_.size() > 1);
  Block b = std::move(blocks_.back());
  blocks_.pop_back();
  Block& parent = blocks_.back();
  const std::string indent(2 * (base_indent_ + depth()), ' ');
  bool is_else = StartsWith(b.header, "else");
  if (!b.pragma.empty()) parent.text += indent + b.pragma + "\n";
  if (is_else && EndsWith(parent.text, "}\n")) {
    parent.text.pop_back();  // "}" + " else ... {"
    parent.text += " " + b.header + " {\n";
  } else if (b.header.empty()) {
    parent.text += indent + "{\n";
  } else {
    parent.text += indent + b.header + " {\n";
  }
  parent.text += b.text;
  parent.text += indent + "}\n";
}

int CodeBuilder::DepthOfBlock(int id) const {
  for (int d = depth(); d >= 0; --d)
    if (blocks_[d].id == id) return d;
  return -1;
}

int CodeBuilder::DepthForLoad() const {
  for (int d = depth(); d > 0; --d)
    if (blocks_[d].kind == BlockKind::kConditional) return d;
  return 0;
}

void CodeBuilder::LineAt(int d, std::string_view line) {
  assert(d >= 0 && d <= depth());
  blocks_[d].text += std::string(2 * (base_indent_ + d), ' ');
  blocks_[d].text += line;
  blocks_[d].text += '\n';
}

StatusOr<std::string> CodeBuilder::Finish() {
  if (!error_.empty()) return Internal("code generation: ", error_);
  if (blocks_.size() != 1) return Internal("code generation: ", depth(), " blocks left open");
  return blocks_[0].text;
}

std::string CodeBuilder::UniqueName(std::string_view base) {
  std::string b = SanitizeIdentifier(base);
  std::string name = b;
  for (int i = 2; used_names_.count(name); ++i) name = b + "_" + std::to_string(i);
  used_names_.insert(name);
  return name;
}

int CodeBuilder::DeclareVar(std::string name, int d, int64_t min, int64_t max,
                            int64_t multiple_of) {
  used_names_.insert(name);
  VarInfo v;
  v.name = std::move(name);
  v.block = blocks_[d].id;
  v.min = min;
  v.max = max;
  v.multiple_of = std::max<int64_t>(1, multiple_of);
  vars_.push_back(std::move(v));
  return static_cast<int>(vars_.size()) - 1;
}

IExpr CodeBuilder::DefineVar(std::string_view base_name, std::string code, std::vector<int> deps,
                             int64_t min, int64_t max, int64_t multiple_of, int min_depth) {
  int d = min_depth;
  for (int v : deps) d = std::max(d, DepthOfBlock(vars_[v].block));
  VarInfo info;
  info.name = UniqueName(base_name);
  info.block = blocks_[std::max(0, std::min(d, depth()))].id;
  info.min = min;
  info.max = max;
  info.multiple_of = std::max<int64_t>(1, multiple_of);
  info.materialized = false;
  info.definition = std::move(code);
  info.deps = std::move(deps);
  vars_.push_back(std::move(info));
  return IExpr::Var(static_cast<int>(vars_.size()) - 1);
}

int64_t CodeBuilder::Min(const IExpr& e) const {
  int64_t m = e.constant();
  for (const auto& [v, k] : e.terms()) m += k > 0 ? k * vars_[v].min : k * vars_[v].max;
  return m;
}

int64_t CodeBuilder::Max(const IExpr& e) const {
  int64_t m = e.constant();
  for (const auto& [v, k] : e.terms()) m += k > 0 ? k * vars_[v].max : k * vars_[v].min;
  return m;
}

int64_t CodeBuilder::MultipleOf(const IExpr& e) const {
  int64_t g = std::abs(e.constant());
  for (const auto& [v, k] : e.terms()) {
    // A variable with a single value contributes that value.
    int64_t contribution = vars_[v].min == vars_[v].max ? std::abs(k * vars_[v].min)
                                                        : std::abs(k) * vars_[v].multiple_of;
    g = std::gcd(g, contribution);
  }
  return g;
}

int CodeBuilder::DepthOf(const IExpr& e) const {
  int d = 0;
  for (const auto& [v, k] : e.terms()) {
    int vd = DepthOfBlock(vars_[v].block);
    if (vd < 0) return depth();  // dead variable: Render reports it
    d = std::max(d, vd);
  }
  return d;
}

namespace {

std::vector<int> VarsOf(const IExpr& e) {
  std::vector<int> vars;
  for (const auto& [v, k] : e.terms()) vars.push_back(v);
  return vars;
}

}  // namespace

std::string CodeBuilder::IndexLiteral(int64_t v) const {
  std::string s = std::to_string(v);
  if (v > INT32_MAX || v < INT32_MIN) s += "LL";
  return s;
}

std::string CodeBuilder::RenderNoMaterialize(const IExpr& e) const {
  std::string s;
  for (const auto& [v, k] : e.terms()) {
    const std::string& name = vars_[v].name;
    if (s.empty()) {
      if (k == 1) s = name;
      else if (k == -1) s = "-" + name;
      else s = name + " * " + IndexLiteral(k);
    } else {
      int64_t a = k < 0 ? -k : k;
      s += k < 0 ? " - " : " + ";
      s += a == 1 ? name : name + " * " + IndexLiteral(a);
    }
  }
  int64_t c = e.constant();
  if (s.empty()) return IndexLiteral(c);
  if (c > 0) s += " + " + IndexLiteral(c);
  if (c < 0) s += " - " + IndexLiteral(-c);
  return s;
}

void CodeBuilder::Materialize(int id) {
  if (vars_[id].materialized) return;
  for (int dep : vars_[id].deps) Materialize(dep);
  int d = DepthOfBlock(vars_[id].block);
  if (d < 0) {
    error_ = "index variable " + vars_[id].name + " used after its block closed";
    return;
  }
  vars_[id].materialized = true;
  LineAt(d, "const " + index_type_ + " " + vars_[id].name + " = " + vars_[id].definition + ";");
}

std::string CodeBuilder::Render(const IExpr& e) {
  for (const auto& [v, k] : e.terms()) {
    if (DepthOfBlock(vars_[v].block) < 0) {
      error_ = "index variable " + vars_[v].name + " used after its block closed";
    }
    Materialize(v);
  }
  return RenderNoMaterialize(e);
}

// Splits e into (a, r) with e == a + r, 0 <= r < g, g | d and a a multiple of g, choosing r
// among e's smallest-range terms. Returns false when no such split exists.
static bool SplitSmallPart(const CodeBuilder& b, const IExpr& e, int64_t d, IExpr* a, IExpr* r) {
  std::vector<std::pair<int64_t, std::pair<int, int64_t>>> by_range;
  for (const auto& t : e.terms()) {
    IExpr term = IExpr::Var(t.first, t.second);
    by_range.push_back({b.Max(term) - b.Min(term), t});
  }
  std::sort(by_range.begin(), by_range.end());
  IExpr small;
  for (size_t n = 1; n < by_range.size() + 1 && n <= by_range.size(); ++n) {
    small = small + IExpr::Var(by_range[n - 1].second.first, by_range[n - 1].second.second);
    IExpr rest = e - small;
    int64_t g = std::gcd(b.MultipleOf(rest), d);
    if (g > 1 && b.Min(small) >= 0 && b.Max(small) < g) {
      *a = rest;
      *r = small;
      return true;
    }
  }
  return false;
}

// Floor division and modulo. Both split off the terms whose coefficients are multiples of d
// and bring what is left (the rest) into [0, ...) by moving multiples of d between the rest
// and the quotient: the rest is then divided with unsigned arithmetic, and the result is the
// exact floor quotient / non-negative remainder for every value of e -- also where e is
// negative (an index computed outside the guard that makes it valid).
namespace {
int64_t FloorDiv(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }
}  // namespace

IExpr CodeBuilder::Div(const IExpr& e, int64_t d, std::string_view name_hint) {
  assert(d > 0);
  if (d == 1) return e;
  if (Min(e) >= 0 && Max(e) < d) return IExpr(0);
  IExpr quotient, rest;
  for (const auto& [v, k] : e.terms()) {
    if (k % d == 0) quotient = quotient + IExpr::Var(v, k / d);
    else rest = rest + IExpr::Var(v, k);
  }
  const int64_t c = e.constant(), cq = FloorDiv(c, d);
  quotient = quotient + IExpr(cq);
  rest = rest + IExpr(c - cq * d);
  if (Min(rest) < 0) {
    const int64_t m = (-Min(rest) + d - 1) / d;
    rest = rest + IExpr(m * d);
    quotient = quotient - IExpr(m);
  }
  if (rest.is_constant()) return quotient + IExpr(rest.constant() / d);
  if (Max(rest) < d) return quotient;
  IExpr a, r;
  if (SplitSmallPart(*this, rest, d, &a, &r)) return quotient + Div(a, d, name_hint);
  std::string rendered = RenderNoMaterialize(rest);
  std::string u = wide_index() ? "unsigned long long" : "unsigned";
  std::string suffix = wide_index() ? "ull" : "u";
  std::string code = "(" + index_type_ + ")((" + u + ")(" + rendered + ") / " + std::to_string(d) + suffix + ")";
  IExpr q = DefineVar(name_hint, code, VarsOf(rest), Min(rest) / d, Max(rest) / d, 1);
  return quotient + q;
}

IExpr CodeBuilder::Mod(const IExpr& e, int64_t d, std::string_view name_hint) {
  assert(d > 0);
  if (d == 1) return IExpr(0);
  if (Min(e) >= 0 && Max(e) < d) return e;
  IExpr rest;
  for (const auto& [v, k] : e.terms())
    if (k % d != 0) rest = rest + IExpr::Var(v, k);
  const int64_t c = e.constant();
  rest = rest + IExpr(c - FloorDiv(c, d) * d);
  if (Min(rest) < 0) rest = rest + IExpr((-Min(rest) + d - 1) / d * d);
  if (rest.is_constant()) return IExpr(rest.constant() % d);
  if (Max(rest) < d) return rest;
  IExpr a, r;
  if (SplitSmallPart(*this, rest, d, &a, &r)) return Mod(a, d, name_hint) + r;
  std::string rendered = RenderNoMaterialize(rest);
  std::string u = wide_index() ? "unsigned long long" : "unsigned";
  std::string suffix = wide_index() ? "ull" : "u";
  std::string code = "(" + index_type_ + ")((" + u + ")(" + rendered + ") % " + std::to_string(d) + suffix + ")";
  int64_t g = std::gcd(MultipleOf(rest), d);
  return DefineVar(name_hint, code, VarsOf(rest), 0, d - 1, g == 0 ? 1 : g);
}

IExpr CodeBuilder::Clamp(const IExpr& e, int64_t lo, int64_t hi, std::string_view name_hint) {
  if (Min(e) >= lo && Max(e) <= hi) return e;
  if (hi <= lo) return IExpr(lo);
  std::string rendered = RenderNoMaterialize(e);
  std::string code = "min(max(" + rendered + ", " + IndexLiteral(lo) + "), " + IndexLiteral(hi) + ")";
  return DefineVar(name_hint, code, VarsOf(e), std::max(lo, Min(e)), std::min(hi, Max(e)), 1);
}

}  // namespace kiln::codegen
