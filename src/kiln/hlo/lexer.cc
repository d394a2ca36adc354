#include "kiln/hlo/lexer.h"

#include <algorithm>

namespace kiln {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsIdentStart(char c) { return IsAlpha(c) || c == '_'; }
bool IsIdentChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.' || c == '-' || c == '$'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

std::string_view TokKindDescription(TokKind kind) {
  switch (kind) {
    case TokKind::kEof: return "end of input";
    case TokKind::kError: return "invalid token";
    case TokKind::kLbrace: return "'{'";
    case TokKind::kRbrace: return "'}'";
    case TokKind::kLsquare: return "'['";
    case TokKind::kRsquare: return "']'";
    case TokKind::kLparen: return "'('";
    case TokKind::kRparen: return "')'";
    case TokKind::kComma: return "','";
    case TokKind::kColon: return "':'";
    case TokKind::kEqual: return "'='";
    case TokKind::kArrow: return "'->'";
    case TokKind::kLeq: return "'<='";
    case TokKind::kQuestion: return "'?'";
    case TokKind::kAsterisk: return "'*'";
    case TokKind::kOctothorp: return "'#'";
    case TokKind::kPlus: return "'+'";
    case TokKind::kTilde: return "'~'";
    case TokKind::kIdent: return "identifier";
    case TokKind::kName: return "name";
    case TokKind::kInt: return "integer";
    case TokKind::kDecimal: return "decimal";
    case TokKind::kString: return "string";
    case TokKind::kDxD: return "dimension list (AxB)";
    case TokKind::kPad: return "padding (lo_hi x ...)";
    case TokKind::kDimLabels: return "dimension labels";
  }
  return "token";
}

Lexer::Lexer(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

const Token& Lexer::Peek() {
  if (!has_peek_) {
    size_t save = pos_;
    peek_ = Lex();
    pos_ = save;
    has_peek_ = true;
  }
  return peek_;
}

Token Lexer::Next() {
  Token t;
  if (has_peek_) {
    t = std::move(peek_);
    has_peek_ = false;
  } else {
    t = Lex();
  }
  pos_ = t.end;
  if (t.kind != TokKind::kEof) last_end_ = t.end;
  return t;
}

size_t Lexer::NextTokenOffset() { return Peek().offset; }

void Lexer::LineColumn(size_t offset, int* line, int* column) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t idx = static_cast<size_t>(it - line_starts_.begin()) - 1;
  *line = static_cast<int>(idx + 1);
  *column = static_cast<int>(offset - line_starts_[idx] + 1);
}

std::string_view Lexer::LineText(size_t offset) const {
  offset = std::min(offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t start = *(it - 1);
  size_t end = text_.find('\n', start);
  if (end == std::string_view::npos) end = text_.size();
  if (end > start && text_[end - 1] == '\r') --end;
  return text_.substr(start, end - start);
}

bool Lexer::SkipTrivia(std::string* error, size_t* error_offset) {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (IsSpace(c)) {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
      size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos) {
        *error = "unterminated comment";
        *error_offset = pos_;
        pos_ = text_.size();
        return false;
      }
      pos_ = close + 2;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      size_t nl = text_.find('\n', pos_);
      pos_ = nl == std::string_view::npos ? text_.size() : nl + 1;
    } else {
      break;
    }
  }
  return true;
}

Token Lexer::Make(TokKind kind, size_t start, size_t end) {
  Token t;
  t.kind = kind;
  t.offset = start;
  t.end = end;
  t.text = text_.substr(start, end - start);
  return t;
}

Token Lexer::Lex() {
  std::string error;
  size_t error_offset = 0;
  if (!SkipTrivia(&error, &error_offset)) {
    Token t = Make(TokKind::kError, error_offset, text_.size());
    t.value = error;
    return t;
  }
  size_t start = pos_;
  if (start >= text_.size()) return Make(TokKind::kEof, start, start);
  char c = text_[start];
  auto next_is = [&](char n) { return start + 1 < text_.size() && text_[start + 1] == n; };
  switch (c) {
    case '{': return Make(TokKind::kLbrace, start, start + 1);
    case '}': return Make(TokKind::kRbrace, start, start + 1);
    case '[': return Make(TokKind::kLsquare, start, start + 1);
    case ']': return Make(TokKind::kRsquare, start, start + 1);
    case '(': return Make(TokKind::kLparen, start, start + 1);
    case ')': return Make(TokKind::kRparen, start, start + 1);
    case ',': return Make(TokKind::kComma, start, start + 1);
    case ':': return Make(TokKind::kColon, start, start + 1);
    case '=': return Make(TokKind::kEqual, start, start + 1);
    case '?': {
      // dim_labels may start with an unknown dimension ("?b01f_0?1io->b01?f").
      size_t end = 0;
      if (MatchDimLabels(start, &end)) return Make(TokKind::kDimLabels, start, end);
      return Make(TokKind::kQuestion, start, start + 1);
    }
    case '*': return Make(TokKind::kAsterisk, start, start + 1);
    case '#': return Make(TokKind::kOctothorp, start, start + 1);
    case '+': return Make(TokKind::kPlus, start, start + 1);
    case '~': return Make(TokKind::kTilde, start, start + 1);
    case '<':
      if (next_is('=')) return Make(TokKind::kLeq, start, start + 2);
      break;
    case '"': return LexString(start);
    case '%': return LexIdent(start, /*percent=*/true);
    case '-':
      if (next_is('>')) return Make(TokKind::kArrow, start, start + 2);
      // -inf, -nan
      for (std::string_view word : {"inf", "nan"}) {
        if (text_.substr(start + 1, 3) == word &&
            (start + 4 >= text_.size() || !IsIdentChar(text_[start + 4])))
          return Make(TokKind::kIdent, start, start + 4);
      }
      return LexNumberLike(start);
    default:
      break;
  }
  if (IsDigit(c) || (c == '.' && start + 1 < text_.size() && IsDigit(text_[start + 1])))
    return LexNumberLike(start);
  if (IsIdentStart(c)) return LexIdent(start, /*percent=*/false);
  Token t = Make(TokKind::kError, start, start + 1);
  t.value = std::string("unexpected character '") + c + "'";
  return t;
}

Token Lexer::LexIdent(size_t start, bool percent) {
  size_t end;
  if (!percent && MatchDimLabels(start, &end)) return Make(TokKind::kDimLabels, start, end);
  size_t i = start + (percent ? 1 : 0);
  while (i < text_.size() && IsIdentChar(text_[i])) {
    // '-' followed by '>' is the arrow, not part of the name.
    if (text_[i] == '-' && i + 1 < text_.size() && text_[i + 1] == '>') break;
    ++i;
  }
  if (percent) {
    if (i == start + 1) {
      Token t = Make(TokKind::kError, start, start + 1);
      t.value = "'%' not followed by a name";
      return t;
    }
    Token t = Make(TokKind::kName, start, i);
    t.text = text_.substr(start + 1, i - start - 1);
    return t;
  }
  return Make(TokKind::kIdent, start, i);
}

// dim_labels ::= [0-9bf?]{2,} '_' [0-9io?]{2,} '->' [0-9bf?]{2,}
bool Lexer::MatchDimLabels(size_t start, size_t* end) const {
  auto run = [&](size_t i, std::string_view letters) {
    size_t j = i;
    while (j < text_.size() && (IsDigit(text_[j]) || letters.find(text_[j]) != std::string_view::npos)) ++j;
    return j;
  };
  size_t a = run(start, "bf?");
  if (a - start < 2 || a >= text_.size() || text_[a] != '_') return false;
  size_t b = run(a + 1, "io?");
  if (b - (a + 1) < 2 || b + 1 >= text_.size() || text_[b] != '-' || text_[b + 1] != '>') return false;
  size_t c = run(b + 2, "bf?");
  if (c - (b + 2) < 2) return false;
  if (c < text_.size() && IsIdentChar(text_[c]) && text_[c] != '-') return false;
  *end = c;
  return true;
}

// pad ::= pad_dim ('x' pad_dim)*   pad_dim ::= int '_' int ('_' int)?
bool Lexer::MatchPad(size_t start, size_t* end) const {
  size_t i = start;
  auto integer = [&](size_t* p) {
    size_t j = *p;
    if (j < text_.size() && text_[j] == '-') ++j;
    size_t d = j;
    while (j < text_.size() && IsDigit(text_[j])) ++j;
    if (j == d) return false;
    *p = j;
    return true;
  };
  while (true) {
    if (!integer(&i)) return false;
    int parts = 1;
    while (i < text_.size() && text_[i] == '_' && parts < 3) {
      size_t j = i + 1;
      if (!integer(&j)) return false;
      i = j;
      ++parts;
    }
    if (parts < 2) return false;
    if (i + 1 < text_.size() && text_[i] == 'x' && (IsDigit(text_[i + 1]) || text_[i + 1] == '-')) {
      ++i;
      continue;
    }
    break;
  }
  if (i < text_.size() && (IsIdentChar(text_[i]) && text_[i] != '-' && text_[i] != '.')) return false;
  *end = i;
  return true;
}

// dxd ::= digits ('x' digits)+
bool Lexer::MatchDxD(size_t start, size_t* end) const {
  size_t i = start;
  int parts = 0;
  while (true) {
    size_t d = i;
    while (i < text_.size() && IsDigit(text_[i])) ++i;
    if (i == d) return false;
    ++parts;
    if (i + 1 < text_.size() && text_[i] == 'x' && IsDigit(text_[i + 1])) {
      ++i;
      continue;
    }
    break;
  }
  if (parts < 2) return false;
  if (i < text_.size() && IsIdentChar(text_[i]) && text_[i] != '-' && text_[i] != '.') return false;
  *end = i;
  return true;
}

Token Lexer::LexNumberLike(size_t start) {
  size_t end;
  if (IsDigit(text_[start]) && MatchDimLabels(start, &end)) return Make(TokKind::kDimLabels, start, end);
  if (MatchPad(start, &end)) return Make(TokKind::kPad, start, end);
  if (IsDigit(text_[start]) && MatchDxD(start, &end)) return Make(TokKind::kDxD, start, end);
  size_t i = start;
  if (text_[i] == '-') ++i;
  size_t digits = i;
  while (i < text_.size() && IsDigit(text_[i])) ++i;
  bool is_decimal = false;
  bool had_digits = i > digits;
  if (i < text_.size() && text_[i] == '.') {
    size_t j = i + 1;
    while (j < text_.size() && IsDigit(text_[j])) ++j;
    if (had_digits || j > i + 1) {
      had_digits = had_digits || j > i + 1;
      is_decimal = true;
      i = j;
    }
  }
  if (!had_digits) {
    Token t = Make(TokKind::kError, start, std::max(i, start + 1));
    t.value = "malformed number";
    return t;
  }
  if (i < text_.size() && (text_[i] == 'e' || text_[i] == 'E')) {
    size_t j = i + 1;
    if (j < text_.size() && (text_[j] == '+' || text_[j] == '-')) ++j;
    size_t d = j;
    while (j < text_.size() && IsDigit(text_[j])) ++j;
    if (j > d) {
      is_decimal = true;
      i = j;
    }
  }
  return Make(is_decimal ? TokKind::kDecimal : TokKind::kInt, start, i);
}

Token Lexer::LexString(size_t start) {
  size_t i = start + 1;
  bool has_escape = false;
  while (i < text_.size() && text_[i] != '"') {
    if (text_[i] == '\\') {
      has_escape = true;
      ++i;
    }
    ++i;
  }
  if (i >= text_.size()) {
    Token t = Make(TokKind::kError, start, text_.size());
    t.value = "unterminated string";
    return t;
  }
  Token t = Make(TokKind::kString, start, i + 1);
  std::string_view body = text_.substr(start + 1, i - start - 1);
  if (!has_escape) {
    t.value.assign(body);
  } else if (!CUnescape(body, &t.value)) {
    t.kind = TokKind::kError;
    t.value = "malformed escape in string";
  }
  return t;
}

bool Lexer::ScanBalanced(std::string_view* out) {
  size_t start = NextTokenOffset();
  if (start >= text_.size()) return false;
  char open = text_[start];
  if (open != '{' && open != '[' && open != '(') return false;
  std::vector<char> stack;
  size_t i = start;
  while (i < text_.size()) {
    char c = text_[i];
    if (c == '"') {
      ++i;
      while (i < text_.size() && text_[i] != '"') i += (text_[i] == '\\') ? 2 : 1;
      if (i >= text_.size()) return false;
    } else if (c == '{' || c == '[' || c == '(') {
      stack.push_back(c == '{' ? '}' : c == '[' ? ']' : ')');
    } else if (c == '}' || c == ']' || c == ')') {
      if (stack.empty() || stack.back() != c) return false;
      stack.pop_back();
      if (stack.empty()) {
        *out = text_.substr(start, i + 1 - start);
        pos_ = i + 1;
        last_end_ = pos_;
        has_peek_ = false;
        return true;
      }
    }
    ++i;
  }
  return false;
}

bool Lexer::ScanRawValue(std::string_view* out) {
  size_t start = NextTokenOffset();
  std::vector<char> stack;
  size_t i = start;
  while (i < text_.size()) {
    char c = text_[i];
    if (c == '"') {
      ++i;
      while (i < text_.size() && text_[i] != '"') i += (text_[i] == '\\') ? 2 : 1;
      if (i >= text_.size()) return false;
      ++i;
      continue;
    }
    if (stack.empty() && (IsSpace(c) || c == ',')) break;
    if (c == '{' || c == '[' || c == '(') {
      stack.push_back(c == '{' ? '}' : c == '[' ? ']' : ')');
    } else if (c == '}' || c == ']' || c == ')') {
      if (stack.empty()) break;
      if (stack.back() != c) return false;
      stack.pop_back();
    }
    ++i;
  }
  if (!stack.empty() || i == start) return false;
  *out = text_.substr(start, i - start);
  pos_ = i;
  last_end_ = pos_;
  has_peek_ = false;
  return true;
}

bool CUnescape(std::string_view body, std::string* out) {
  out->clear();
  out->reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (++i >= body.size()) return false;
    char e = body[i];
    switch (e) {
      case 'n': out->push_back('\n'); break;
      case 't': out->push_back('\t'); break;
      case 'r': out->push_back('\r'); break;
      case 'a': out->push_back('\a'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'v': out->push_back('\v'); break;
      case '\\': out->push_back('\\'); break;
      case '\'': out->push_back('\''); break;
      case '"': out->push_back('"'); break;
      case '?': out->push_back('?'); break;
      case 'x': {
        int v = 0, n = 0;
        while (i + 1 < body.size() && n < 2) {
          char h = body[i + 1];
          int d = IsDigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
          if (d < 0) break;
          v = v * 16 + d;
          ++n;
          ++i;
        }
        if (n == 0) return false;
        out->push_back(static_cast<char>(v));
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0', n = 1;
          while (i + 1 < body.size() && n < 3 && body[i + 1] >= '0' && body[i + 1] <= '7') {
            v = v * 8 + (body[++i] - '0');
            ++n;
          }
          if (v > 255) return false;
          out->push_back(static_cast<char>(v));
          break;
        }
        return false;
    }
  }
  return true;
}

}  // namespace kiln
