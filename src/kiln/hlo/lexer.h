// The HLO text lexer: turns HLO text into tokens on demand, one token of lookahead, with
// save/restore of its state for the few places where the grammar needs more.
//
// Tokens are context free except where XLA's text format packs a structured value into one
// word; those get their own kinds so the parser never re-splits text:
//   1x2x3          kDxD       (window sizes, strides, dilations, rhs_reversal)
//   0_0x1_2_1      kPad       (window padding, pad's padding=)
//   b01f_01io->b01f kDimLabels (convolution dimension labels)
// Everything else is punctuation, identifiers, %names, integers, decimals and strings.
//
// Comments (/* ... */ and // to end of line) and whitespace separate tokens and are skipped.
// A malformed token (bad character, unterminated string or comment) becomes kError; the
// parser reports it as "found <error text>".
//
// The lexer never reads past the end of its input and keeps no pointer into anything but the
// text it was given, which must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class TokKind : uint8_t {
  kEof,
  kError,
  kLbrace,     // {
  kRbrace,     // }
  kLsquare,    // [
  kRsquare,    // ]
  kLparen,     // (
  kRparen,     // )
  kComma,      // ,
  kColon,      // :
  kEqual,      // =
  kArrow,      // ->
  kLeq,        // <=
  kQuestion,   // ?
  kAsterisk,   // *
  kOctothorp,  // #
  kPlus,       // +
  kTilde,      // ~
  kIdent,      // foo, add.1, custom-call, f32, ENTRY, true, nan, -inf, -nan
  kName,       // %foo (text() excludes the '%')
  kInt,        // -12, 0, 18446744073709551615 (text kept; value parsed by the parser)
  kDecimal,    // 1.5, -2e-3, .5
  kString,     // "..." (value() is unescaped)
  kDxD,        // 2x3
  kPad,        // 0_1x2_3_1
  kDimLabels,  // b01f_01io->b01f
};

// A short human description of a kind: "'{'", "identifier", "end of input", ...
std::string_view TokKindDescription(TokKind kind);

struct Token {
  TokKind kind = TokKind::kEof;
  // The token's source text (for kName without the '%', for kString with quotes).
  std::string_view text;
  // Unescaped value of a kString; error description of a kError.
  std::string value;
  size_t offset = 0;  // byte offset of the first character
  size_t end = 0;     // byte offset one past the last character
};

class Lexer {
 public:
  explicit Lexer(std::string_view text);

  // The next token, without consuming it.
  const Token& Peek();
  // Consumes and returns the next token.
  Token Next();
  TokKind PeekKind() { return Peek().kind; }

  // Lexer state, for bounded backtracking.
  struct State {
    size_t pos;
  };
  State GetState() const { return State{pos_}; }
  void SetState(State s) {
    pos_ = s.pos;
    has_peek_ = false;
  }

  // Offset where the next token starts (after skipping whitespace and comments).
  size_t NextTokenOffset();
  // Offset one past the last consumed token.
  size_t LastTokenEnd() const { return last_end_; }

  // Raw scanning for values kept verbatim (unknown attributes, JSON backend configs,
  // sparsity descriptors). Both start at the next token.
  //
  // ScanBalanced: the next token must be an opening bracket ({, [ or (); consumes through the
  // matching closing bracket (strings respected) and returns the text including brackets.
  // Returns false (consuming nothing) if unbalanced before end of input.
  bool ScanBalanced(std::string_view* out);
  // ScanRawValue: consumes a value word: characters up to top-level whitespace, ',' or an
  // unmatched closing bracket, with brackets and strings nested inside. Returns false if the
  // value is empty or unbalanced.
  bool ScanRawValue(std::string_view* out);

  // 1-based line and column of a byte offset.
  void LineColumn(size_t offset, int* line, int* column) const;
  // The source line containing `offset`, without its newline.
  std::string_view LineText(size_t offset) const;
  std::string_view text() const { return text_; }

 private:
  Token Lex();
  // Skips whitespace and comments from pos_. Returns false (with *error set) on an
  // unterminated block comment.
  bool SkipTrivia(std::string* error, size_t* error_offset);
  Token LexNumberLike(size_t start);
  Token LexIdent(size_t start, bool percent);
  Token LexString(size_t start);
  bool MatchDimLabels(size_t start, size_t* end) const;
  bool MatchPad(size_t start, size_t* end) const;
  bool MatchDxD(size_t start, size_t* end) const;
  Token Make(TokKind kind, size_t start, size_t end);

  std::string_view text_;
  size_t pos_ = 0;
  size_t last_end_ = 0;
  bool has_peek_ = false;
  Token peek_;
  std::vector<size_t> line_starts_;
};

// Unescapes the body of a C-style quoted string (\n, \t, \", \\, \', \xHH, \ooo). Returns false
// on a malformed escape.
bool CUnescape(std::string_view body, std::string* out);

}  // namespace kiln
