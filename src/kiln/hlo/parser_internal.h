// Internal to the HLO parser (parser*.cc): the parser class shared by the files that implement
// its grammar families. Not part of the public interface; use parser.h.
//
// Files:
//   parser.cc             module, header, stack frames, computations, instructions, operands
//   parser_shape.cc       shapes, layouts, program shapes
//   parser_literal.cc     constants (literals), elided-constant filling
//   parser_attributes.cc  instruction attributes (dispatch and the typed families)
//   parser_sharding.cc    sharding, replica groups, metadata, frontend attributes, aliasing
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/lexer.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/parser.h"

namespace kiln {
namespace parser_internal {

// Deepest nesting of shapes, literals, shardings and brackets the parser follows; deeper input
// is an error instead of unbounded recursion.
inline constexpr int kMaxNestingDepth = 200;

// A name used before the parser can resolve it: an operand, a control predecessor, or a
// called computation.
struct NameRef {
  std::string name;
  size_t offset = 0;  // where the name is written, for errors
  std::optional<Shape> declared;  // an operand's shape written before its name ("f32[2] %x")
};

// Called computations of one instruction, by the attribute that named them.
struct CalledRefs {
  std::optional<NameRef> to_apply, condition, body, select, scatter, true_computation,
      false_computation;
  std::vector<NameRef> branch_computations, calls, called_computations;
  bool any() const {
    return to_apply || condition || body || select || scatter || true_computation ||
           false_computation || !branch_computations.empty() || !calls.empty() ||
           !called_computations.empty();
  }
};

// Per-instruction state kept until its computation (or the module) is complete.
struct PendingInstruction {
  HloInstruction* instr = nullptr;
  // Owned until the computation is complete and checked, then moved into it.
  std::unique_ptr<HloInstruction> owned;
  std::vector<NameRef> operands;
  std::vector<NameRef> control_predecessors;
  size_t operands_offset = 0;  // the '(' of the operand list
  size_t opcode_offset = 0;
  size_t name_offset = 0;
  // Async syntax sugar: "X-start"/"X-update"/"X-done" with X not itself async.
  std::optional<HloOpcode> async_wrapped_opcode;
  std::unique_ptr<HloInstruction> async_wrapped;  // the wrapped instruction (for -start)
};

class HloParser {
 public:
  HloParser(std::string_view text, const ParseOptions& options);

  StatusOr<std::unique_ptr<HloModule>> ParseModule();
  StatusOr<Shape> ParseShapeOnly();
  StatusOr<Literal> ParseLiteralOnly(const Shape& shape);

  // ---- errors (parser.cc) ----
  // "FILE:LINE:COL: message" + the source line + a caret under the column.
  Status ErrorAt(size_t offset, std::string_view message) const;
  // "expected <what>, found <description of the next token>" at the next token.
  Status Expected(std::string_view what);
  std::string DescribeToken(const Token& t) const;
  // Consumes a token of `kind` or fails with Expected(what).
  Status Expect(TokKind kind, std::string_view what);
  bool TryConsume(TokKind kind);
  // Consumes the identifier `word` if it is next.
  bool TryConsumeIdent(std::string_view word);
  // Next token is the identifier `word`.
  bool PeekIdent(std::string_view word);

  // ---- scalars (parser_attributes.cc) ----
  StatusOr<int64_t> ParseInt64();
  StatusOr<bool> ParseBool();
  StatusOr<double> ParseDouble();
  StatusOr<std::string> ParseString();
  // An identifier or %name; returns the name without '%'.
  StatusOr<std::string> ParseName(std::string_view what);
  // '{' (int (',' int)*)? '}'
  StatusOr<std::vector<int64_t>> ParseIntList();
  // '{' (int_list (',' int_list)*)? '}'
  StatusOr<std::vector<std::vector<int64_t>>> ParseIntListList();
  // An identifier's text (an enum value such as LT, kLoop, rng_uniform).
  StatusOr<std::string> ParseIdentText(std::string_view what);

  // ---- shapes (parser_shape.cc) ----
  // allow_layout=false leaves a '{' after the dimensions unread.
  StatusOr<Shape> ParseShape(bool allow_layout = true);
  StatusOr<Layout> ParseLayout(const Shape& shape);
  // '(' (name ':')? shape, ... ')' '->' shape
  StatusOr<ProgramShape> ParseProgramShape();
  // Whether the next tokens start a shape (a type name followed by '[' or a '(').
  bool PeekShape();

  // ---- literals (parser_literal.cc) ----
  // The literal of a constant of `shape`; sets *elided if written as {...}.
  StatusOr<Literal> ParseLiteral(const Shape& shape, bool* elided);
  // A literal written with its shape (custom-call literal=), in kiln's or XLA's tuple form.
  StatusOr<Literal> ParseShapedLiteral(bool* elided);
  // Deterministic random fill for elided constants.
  StatusOr<Literal> FillLiteral(const Shape& shape, uint64_t seed);
  // Fills an elided constant (fill_elided_constants) or refuses it, naming it at `offset`.
  Status FillElidedConstant(HloInstruction* constant, size_t offset);

  // ---- attributes (parser_attributes.cc) ----
  Status ParseInstructionAttribute(PendingInstruction& pending, CalledRefs& called,
                                   const Token& name_token);
  StatusOr<Window> ParseWindow();
  StatusOr<ConvolutionDimensionNumbers> ParseDimLabels();
  StatusOr<std::vector<SliceDimension>> ParseSliceRanges();
  StatusOr<std::vector<PaddingDimension>> ParsePadding();
  StatusOr<std::vector<Precision>> ParsePrecisionList();
  StatusOr<std::vector<OutputOperandAlias>> ParseOutputOperandAliasing();
  StatusOr<NameRef> ParseComputationRef();
  StatusOr<std::vector<NameRef>> ParseComputationRefList();
  // A value kept verbatim (unknown attribute).
  StatusOr<std::string> ParseRawValue();

  // ---- sharding and friends (parser_sharding.cc) ----
  StatusOr<HloSharding> ParseSharding();
  StatusOr<ReplicaGroups> ParseReplicaGroups();
  StatusOr<OpMetadata> ParseMetadata();
  StatusOr<std::vector<std::pair<std::string, std::string>>> ParseFrontendAttributes();
  StatusOr<std::vector<InputOutputAlias>> ParseInputOutputAlias();
  StatusOr<std::vector<BufferDonor>> ParseBufferDonors();
  StatusOr<DomainMetadata> ParseDomain();
  StatusOr<std::vector<bool>> ParseBoolList();
  Status ParseStackFrames(StackFrameIndex* index);

  Lexer& lexer() { return lex_; }
  const ParseOptions& options() const { return options_; }

  // Depth guard for recursive rules.
  class DepthGuard {
   public:
    explicit DepthGuard(HloParser* p) : p_(p) { ++p_->depth_; }
    ~DepthGuard() { --p_->depth_; }
    bool too_deep() const { return p_->depth_ > kMaxNestingDepth; }

   private:
    HloParser* p_;
  };
  Status TooDeep();

 private:
  Status ParseHeader(HloModule* module);
  Status ParseComputation(HloModule* module);
  Status ParseInstruction(HloComputation* comp, std::vector<PendingInstruction>& pending,
                          std::unordered_map<std::string, HloInstruction*>& names,
                          bool* saw_root, HloInstruction** root);
  Status ParseOperands(PendingInstruction& pending, HloInstruction* instr, bool* elided);
  Status FinishComputation(HloComputation* comp,
                           std::vector<PendingInstruction>& pending,
                           std::unordered_map<std::string, HloInstruction*>& names);
  Status ResolveComputations(HloModule* module);
  Status CheckAcyclic(HloComputation* comp, std::vector<PendingInstruction>& pending);
  Status CheckArity(const PendingInstruction& p);
  struct PendingWrapper {
    HloInstruction* start;
    std::unique_ptr<HloInstruction> wrapped;
    size_t opcode_offset;
  };
  Status BuildAsyncWrapper(HloModule* module, PendingWrapper& p);

  Lexer lex_;
  ParseOptions options_;
  int depth_ = 0;
  uint64_t elided_fill_counter_ = 0;

  std::unordered_map<std::string, HloComputation*> computations_by_name_;
  struct PendingCall {
    HloInstruction* instr;
    size_t slot;
    NameRef ref;
  };
  std::vector<PendingCall> pending_calls_;
  std::vector<PendingWrapper> pending_wrappers_;
  // Async -update/-done written in sugar form: their computation comes from their operand.
  std::vector<std::pair<HloInstruction*, size_t>> async_sugar_users_;  // with opcode offset
  // Instructions written without a shape ("y = add(x, x)"), with their name's offset: their
  // shapes are inferred once the module is complete (InferShapes).
  std::vector<std::pair<HloInstruction*, size_t>> infer_shapes_;
  // The computation being parsed, for operands written as nested instructions
  // ("add(s32[] parameter(0), s32[] constant(1))"): each becomes an instruction of its own.
  std::vector<PendingInstruction>* current_pending_ = nullptr;
  std::unordered_map<std::string, HloInstruction*>* current_names_ = nullptr;
  int64_t nested_counter_ = 0;
  StatusOr<std::string> ParseNestedOperand(Shape shape, bool infer_shape = false);
  Status InferShapes(HloModule* module);
  std::optional<NameRef> entry_ref_;
};

}  // namespace parser_internal
}  // namespace kiln
