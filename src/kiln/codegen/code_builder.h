// CodeBuilder: writes the body of one generated CUDA function as nested blocks, with symbolic
// integer index expressions whose statements are placed as far out as their inputs allow.
//
// Note [Index expressions]
//   Index arithmetic of generated kernels is kept symbolic while it is built: an IExpr is an
//   affine combination of integer variables plus a constant (2*i + j + 3). Variables are kernel
//   inputs (threadIdx-derived values, loop counters, values loaded at run time) or results of
//   the non-affine operations Div, Mod and Clamp on other expressions. Each variable knows its
//   value range and a divisor of every value it takes ("multiple_of"), which lets Div and Mod
//   simplify:
//     (a + r) / d == a / d  and  (a + r) % d == a % d + r
//   whenever a is a multiple of g, g divides d and 0 <= r < g. With the vector lane variable as
//   r, this proves that an access is contiguous across the lanes of a vector (its offset is
//   base + lane with base a multiple of the vector width), which is what 16-byte loads need.
//
//   Variables made by Div/Mod/Clamp are written lazily: only when some emitted code renders an
//   expression that uses them, and then into the outermost open block in which all of their
//   inputs are defined (so index math that does not depend on a loop stays out of the loop).
//   Nothing unused is ever written (no unused-variable warnings, readable output).
//
// Blocks form a stack (function body, loops, conditionals). A statement may be appended to any
// open block; appending to an outer block puts it before the inner blocks still open, which is
// correct because the inner blocks' text joins the outer block only when they close. Loads from
// memory must not move out of a conditional block (the condition may be what keeps them in
// bounds): DepthForLoad() says how far out a load may go.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/base/status.h"

namespace kiln::codegen {

// An affine integer expression: sum of coefficient * variable, plus a constant. Variables are
// ids of a CodeBuilder. Terms are kept sorted by variable id with non-zero coefficients, so
// equal expressions compare equal.
class IExpr {
 public:
  IExpr() = default;
  IExpr(int64_t constant) : constant_(constant) {}  // NOLINT: constants convert implicitly
  static IExpr Var(int var, int64_t coefficient = 1);

  bool is_constant() const { return terms_.empty(); }
  int64_t constant() const { return constant_; }
  const std::vector<std::pair<int, int64_t>>& terms() const { return terms_; }
  int64_t Coefficient(int var) const;
  // The expression without the terms of `var`.
  IExpr Without(int var) const;

  friend IExpr operator+(const IExpr& a, const IExpr& b);
  friend IExpr operator-(const IExpr& a, const IExpr& b);
  friend IExpr operator*(const IExpr& a, int64_t k);
  friend IExpr operator*(int64_t k, const IExpr& a) { return a * k; }
  IExpr operator-() const { return *this * -1; }
  bool operator==(const IExpr& o) const = default;

 private:
  std::vector<std::pair<int, int64_t>> terms_;
  int64_t constant_ = 0;
};

enum class BlockKind {
  kFunction,     // the function body (depth 0)
  kLoop,         // a loop whose body runs for every iteration; loads may be hoisted out of it
  kConditional,  // an if/else body: loads stay inside
  kPlain,        // a bare { } scope
};

class CodeBuilder {
 public:
  // `index_type`: the C type of index variables ("int" or "long long").
  explicit CodeBuilder(std::string index_type = "int", int indent = 1);

  const std::string& index_type() const { return index_type_; }
  bool wide_index() const { return index_type_ != "int"; }

  // ---- Blocks ----
  // Opens a block written as `header {` (header may be empty for a bare scope, or start with
  // "else" to continue the if that the current block's last child closed).
  // `pragma` (e.g. "#pragma unroll") is written on the line before the header.
  void Open(std::string header, BlockKind kind, std::string pragma = "");
  void Close();
  int depth() const { return static_cast<int>(blocks_.size()) - 1; }
  // The id of the block open at `depth` (ids are never reused).
  int BlockIdAt(int depth) const { return blocks_[depth].id; }
  // Depth of the open block `id`, or -1 when it has been closed.
  int DepthOfBlock(int id) const;
  // The outermost depth a load may be placed at: the innermost open conditional block (or 0).
  int DepthForLoad() const;

  // Appends a statement line (no trailing newline needed) to the current block / block at depth.
  void Line(std::string_view line) { LineAt(depth(), line); }
  void LineAt(int depth, std::string_view line);
  // Appends a comment line ("// text").
  void Comment(std::string_view text) { Line(std::string("// ") + std::string(text)); }

  // The function body text; every block but the function's must be closed. Fails if a dead
  // variable was rendered (a bug in an emitter: an index used outside the block defining it).
  StatusOr<std::string> Finish();

  // ---- Names ----
  // A C identifier derived from `base` (non-identifier characters become '_'), unique within
  // this builder and not among `reserved` names.
  std::string UniqueName(std::string_view base);
  void Reserve(const std::string& name) { used_names_.insert(name); }

  // ---- Index variables ----
  struct VarInfo {
    std::string name;
    int block = 0;  // id of the defining block
    int64_t min = 0, max = 0;
    int64_t multiple_of = 1;
    bool materialized = true;
    std::string definition;  // C expression (for lazy variables)
    std::vector<int> deps;   // variables the definition reads
  };
  // A variable defined by the caller's own code (a loop counter, a thread index) in the block
  // at `depth`, taking values in [min, max], all multiples of `multiple_of`.
  int DeclareVar(std::string name, int depth, int64_t min, int64_t max, int64_t multiple_of = 1);
  // A variable whose value is `code` (a C expression reading the index variables `deps` and
  // possibly loaded values defined at `depth`), written lazily at the outermost block allowed.
  IExpr DefineVar(std::string_view base_name, std::string code, std::vector<int> deps,
                  int64_t min, int64_t max, int64_t multiple_of = 1, int min_depth = 0);
  const VarInfo& var(int id) const { return vars_[id]; }

  // Range, divisibility and placement of expressions.
  int64_t Min(const IExpr& e) const;
  int64_t Max(const IExpr& e) const;
  // A divisor of every value `e` takes (the gcd of its terms' coefficients times their
  // variables' multiple_of, and of its constant); 0 for the constant 0.
  int64_t MultipleOf(const IExpr& e) const;
  // Depth of the innermost open block defining a variable of `e` (0 for constants).
  int DepthOf(const IExpr& e) const;

  // Non-affine operations (d > 0) with floor semantics for every value of e, negative ones
  // included: Div(e, d) = floor(e / d), Mod(e, d) = e - d * floor(e / d), in [0, d).
  IExpr Div(const IExpr& e, int64_t d, std::string_view name_hint = "q");
  IExpr Mod(const IExpr& e, int64_t d, std::string_view name_hint = "r");
  // min(max(e, lo), hi).
  IExpr Clamp(const IExpr& e, int64_t lo, int64_t hi, std::string_view name_hint = "c");

  // The C expression for `e`, writing the definitions of the lazy variables it uses.
  std::string Render(const IExpr& e);
  // A literal of the index type.
  std::string IndexLiteral(int64_t v) const;
  // A canonical text of `e` for cache keys (writes nothing).
  std::string Key(const IExpr& e) const { return RenderNoMaterialize(e); }

 private:
  struct Block {
    int id;
    BlockKind kind;
    std::string header;
    std::string text;
    std::string pragma;
  };
  void Materialize(int var);
  std::string RenderNoMaterialize(const IExpr& e) const;

  std::string index_type_;
  int base_indent_;
  std::vector<Block> blocks_;
  int next_block_id_ = 0;
  std::vector<VarInfo> vars_;
  std::unordered_set<std::string> used_names_;
  std::string error_;
};

// A C identifier from an HLO name: "exp.1.3" -> "exp_1_3"; never empty, never starts with a
// digit.
std::string SanitizeIdentifier(std::string_view name);
// C++ keywords, CUDA built-ins, math functions generated code calls, the prelude's kiln_* names
// and type aliases: identifiers generated code must not declare.
bool IsReservedIdentifier(std::string_view name);

}  // namespace kiln::codegen
