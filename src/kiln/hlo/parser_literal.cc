// HLO parser: literals (the values of constants) and deterministic filling of elided ones.
#include <algorithm>
#include <charconv>
#include <functional>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kiln/base/strings.h"
#include "kiln/hlo/parser_internal.h"

namespace kiln {
namespace parser_internal {

namespace {

// Element count of an array shape, or -1 if it overflows.
int64_t SafeElementCount(const Shape& shape) {
  int64_t n = 1;
  for (int64_t i = 0; i < shape.rank(); ++i) {
    int64_t d = shape.dimensions(i);
    if (d == Shape::kUnboundedSize || d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

// Parses a decimal floating value; handles subnormals and rejects overflow of finite text.
bool ParseFloatText(std::string_view text, double* out) {
  double v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size()) {
    *out = v;
    return true;
  }
  if (r.ec == std::errc::result_out_of_range) {
    std::string copy(text);
    char* end = nullptr;
    v = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || std::isinf(v)) return false;
    *out = v;
    return true;
  }
  return false;
}

bool ParseFloatText(std::string_view text, float* out) {
  float v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec == std::errc() && r.ptr == text.data() + text.size()) {
    *out = v;
    return true;
  }
  if (r.ec == std::errc::result_out_of_range) {
    std::string copy(text);
    char* end = nullptr;
    v = std::strtof(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || std::isinf(v)) return false;
    *out = v;
    return true;
  }
  return false;
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

namespace {

template <typename T>
constexpr bool IntIsSigned() {
  if constexpr (kIsIntN<T>) return T::kSigned;
  else return std::is_signed_v<T>;
}
template <typename T>
constexpr int IntBits() {
  if constexpr (kIsIntN<T>) return T::kBits;
  else return static_cast<int>(sizeof(T) * 8);
}

// Bit layout of a real floating type with IEEE-style NaNs (exponent all ones, any nonzero
// mantissa); false for formats with a single NaN encoding.
template <typename T>
bool IeeeNanLayout(int* total_bits, int* mantissa_bits) {
  if constexpr (std::is_same_v<T, float>) {
    *total_bits = 32, *mantissa_bits = 23;
    return true;
  } else if constexpr (std::is_same_v<T, double>) {
    *total_bits = 64, *mantissa_bits = 52;
    return true;
  } else if constexpr (kIsMiniFloat<T>) {
    if (T::kFormat.nan != NanEncoding::kIeee) return false;
    *total_bits = T::kFormat.total_bits, *mantissa_bits = T::kFormat.mantissa_bits;
    return true;
  } else {
    return false;
  }
}

// A NaN of type T with the given sign and mantissa payload.
template <typename T>
bool MakeNan(bool negative, uint64_t payload, T* out) {
  int total = 0, mant = 0;
  if (!IeeeNanLayout<T>(&total, &mant)) return false;
  if (payload == 0 || (mant < 64 && payload >> mant) != 0) return false;
  uint64_t bits = (uint64_t{negative} << (total - 1)) |
                  (((uint64_t{1} << (total - 1 - mant)) - 1) << mant) | payload;
  if constexpr (std::is_same_v<T, float>) {
    uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(out, &b, 4);
  } else if constexpr (std::is_same_v<T, double>) {
    std::memcpy(out, &bits, 8);
  } else if constexpr (kIsMiniFloat<T>) {
    *out = T::FromBits(static_cast<typename T::Storage>(bits));
  }
  return true;
}

// nan_payload ::= '(' hex ')' after 'nan': returns the payload, or 0 if there is none.
inline Status ParseNanPayload(HloParser* p, uint64_t* payload) {
  *payload = 0;
  Lexer& lex = p->lexer();
  if (lex.PeekKind() != TokKind::kLparen) return OkStatus();
  size_t at = lex.NextTokenOffset();
  std::string_view raw;
  if (!lex.ScanBalanced(&raw)) return p->Expected("')' after NaN payload");
  std::string_view hex = raw.substr(1, raw.size() - 2);
  if (hex.substr(0, 2) != "0x" || hex.size() < 3 ||
      std::from_chars(hex.data() + 2, hex.data() + hex.size(), *payload, 16).ptr != hex.data() + hex.size())
    return p->ErrorAt(at, StrCat("expected NaN payload (0x...), found '", raw, "'"));
  return OkStatus();
}

// float ::= int | decimal | 'inf' | '-inf' | 'nan' | '-nan' | 'nan' '(' hex ')'
template <typename W>
Status ParseFloating(HloParser* p, PrimitiveType type, W* out) {
  Lexer& lex = p->lexer();
  const Token t = lex.Peek();
  if (t.kind == TokKind::kIdent) {
    bool neg = !t.text.empty() && t.text[0] == '-';
    std::string_view word = neg ? t.text.substr(1) : t.text;
    if (word == "inf") {
      lex.Next();
      *out = neg ? -std::numeric_limits<W>::infinity() : std::numeric_limits<W>::infinity();
      return OkStatus();
    }
    if (word == "nan") {
      lex.Next();
      W nan = std::numeric_limits<W>::quiet_NaN();
      *out = neg ? -nan : nan;
      size_t at = lex.NextTokenOffset();
      uint64_t payload = 0;
      KILN_RETURN_IF_ERROR(ParseNanPayload(p, &payload));
      if (payload != 0 && !MakeNan(neg, payload, out))
        return p->ErrorAt(at, StrCat("NaN payload out of range for ", PrimitiveTypeName(type)));
      return OkStatus();
    }
  }
  if (t.kind != TokKind::kInt && t.kind != TokKind::kDecimal) return p->Expected("floating-point value");
  lex.Next();
  if (!ParseFloatText(t.text, out))
    return p->ErrorAt(t.offset, StrCat("value ", t.text, " out of range for ", PrimitiveTypeName(type)));
  return OkStatus();
}

// Parses one scalar element of the literal's type at the lexer and stores it at linear index i.
template <typename T>
Status ParseElementTyped(HloParser* p, Literal* lit, int64_t i) {
  Lexer& lex = p->lexer();
  const Token t = lex.Peek();
  const PrimitiveType type = lit->shape().element_type();
  if constexpr (std::is_same_v<T, bool>) {
    if (t.kind == TokKind::kIdent && (t.text == "true" || t.text == "false")) {
      lex.Next();
      lit->data<bool>()[i] = t.text == "true";
      return OkStatus();
    }
    if (t.kind == TokKind::kInt && (t.text == "0" || t.text == "1")) {
      lex.Next();
      lit->data<bool>()[i] = t.text == "1";
      return OkStatus();
    }
    return p->Expected("pred value (true or false)");
  } else if constexpr (kIsIntegralNative<T>) {
    if (t.kind != TokKind::kInt) return p->Expected("integer");
    lex.Next();
    constexpr int kBits = IntBits<T>();
    const char* b = t.text.data();
    const char* e = t.text.data() + t.text.size();
    if constexpr (IntIsSigned<T>()) {
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      int64_t lo = kBits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (kBits - 1));
      int64_t hi = kBits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (kBits - 1)) - 1;
      if (r.ec != std::errc() || r.ptr != e || v < lo || v > hi)
        return p->ErrorAt(t.offset, StrCat("integer ", t.text, " out of range for ", PrimitiveTypeName(type)));
      lit->data<T>()[i] = static_cast<T>(v);
    } else {
      uint64_t v = 0;
      // u64 also takes a negative int64, as its two's complement (XLA reads u64[] constant(-1)
      // as 2^64-1); narrower unsigned types refuse negatives.
      if (kBits == 64 && b != e && *b == '-') {
        int64_t sv = 0;
        auto r = std::from_chars(b, e, sv);
        if (r.ec != std::errc() || r.ptr != e)
          return p->ErrorAt(t.offset, StrCat("integer ", t.text, " out of range for ", PrimitiveTypeName(type)));
        lit->data<T>()[i] = static_cast<T>(static_cast<uint64_t>(sv));
        return OkStatus();
      }
      auto r = std::from_chars(b, e, v);
      uint64_t hi = kBits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << kBits) - 1;
      if (r.ec != std::errc() || r.ptr != e || v > hi)
        return p->ErrorAt(t.offset, StrCat("integer ", t.text, " out of range for ", PrimitiveTypeName(type)));
      lit->data<T>()[i] = static_cast<T>(v);
    }
    return OkStatus();
  } else if constexpr (kIsComplexNative<T>) {
    using C = typename T::value_type;
    KILN_RETURN_IF_ERROR(p->Expect(TokKind::kLparen, "'(' (complex value)"));
    C re, im;
    KILN_RETURN_IF_ERROR(ParseFloating<C>(p, type, &re));
    KILN_RETURN_IF_ERROR(p->Expect(TokKind::kComma, "','"));
    KILN_RETURN_IF_ERROR(ParseFloating<C>(p, type, &im));
    KILN_RETURN_IF_ERROR(p->Expect(TokKind::kRparen, "')'"));
    lit->data<T>()[i] = T(re, im);
    return OkStatus();
  } else {
    // Real floating types: parse into float (or double for f64), then narrow exactly.
    using Wide = std::conditional_t<std::is_same_v<T, double>, double, float>;
    // A NaN with a payload is built in T's own bits (narrowing would drop the payload).
    if constexpr (kIsMiniFloat<T>) {
      if (t.kind == TokKind::kIdent && (t.text == "nan" || t.text == "-nan")) {
        lex.Next();
        size_t at = lex.NextTokenOffset();
        uint64_t payload = 0;
        KILN_RETURN_IF_ERROR(ParseNanPayload(p, &payload));
        T v(std::numeric_limits<float>::quiet_NaN());
        if (t.text[0] == '-') v = T::FromBits(static_cast<typename T::Storage>(
                                  v.bits() | (typename T::Storage{1} << (T::kFormat.total_bits - 1))));
        if (payload != 0 && !MakeNan(t.text[0] == '-', payload, &v))
          return p->ErrorAt(at, StrCat("NaN payload out of range for ", PrimitiveTypeName(type)));
        lit->data<T>()[i] = v;
        return OkStatus();
      }
    }
    Wide v;
    KILN_RETURN_IF_ERROR(ParseFloating<Wide>(p, type, &v));
    const T narrowed(v);
    // A finite value beyond the type's range (f16[] constant(-65520) would become -inf) is an
    // error, as in XLA; inf and nan are written as such.
    if (std::isfinite(v) && !std::isfinite(static_cast<double>(static_cast<Wide>(narrowed))))
      return p->ErrorAt(t.offset, StrCat("value ", t.text, " out of range for ", PrimitiveTypeName(type)));
    lit->data<T>()[i] = narrowed;
    return OkStatus();
  }
}

struct ParseElementFn {
  HloParser* p;
  Literal* lit;
  int64_t i;
  template <typename Tag>
  Status operator()(Tag) const {
    return ParseElementTyped<NativeTypeOf<Tag::value>>(p, lit, i);
  }
};

class ElementParser {
 public:
  ElementParser(HloParser* p, Literal* lit) : p_(p), lit_(lit) {}
  Status Parse(int64_t i) {
    return ArrayTypeSwitch(lit_->shape().element_type(), ParseElementFn{p_, lit_, i});
  }

 private:
  HloParser* p_;
  Literal* lit_;
};

}  // namespace

// literal ::= scalar                               (rank 0)
//           | '{' '...' '}'                         (elided)
//           | array                                 (rank >= 1)
//           | '(' (literal (',' literal)*)? ')'     (tuple)
// array ::= '{' (element (',' element)*)? '}'    element ::= scalar | array (by nesting level)
StatusOr<Literal> HloParser::ParseLiteral(const Shape& shape, bool* elided) {
  DepthGuard guard(this);
  if (guard.too_deep()) return TooDeep();
  *elided = false;
  // Elided: "{...}".
  if (lex_.PeekKind() == TokKind::kLbrace) {
    size_t off = lex_.NextTokenOffset();
    Lexer::State s = lex_.GetState();
    lex_.Next();
    size_t after = lex_.NextTokenOffset();
    if (lex_.text().substr(after, 3) == "...") {
      lex_.SetState({after + 3});
      KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' after '...'"));
      *elided = true;
      return Literal();
    }
    lex_.SetState(s);
    (void)off;
  }
  if (shape.IsTuple()) {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'(' (tuple literal)"));
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
      if (i > 0) KILN_RETURN_IF_ERROR(Expect(TokKind::kComma, "','"));
      bool sub_elided = false;
      KILN_ASSIGN_OR_RETURN(Literal e, ParseLiteral(shape.tuple_shapes(i), &sub_elided));
      if (sub_elided) *elided = true;
      elements.push_back(std::move(e));
    }
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')' (end of tuple literal)"));
    if (*elided) return Literal();
    return Literal::MakeTuple(std::move(elements));
  }
  if (!shape.IsArray())
    return ErrorAt(lex_.NextTokenOffset(),
                   StrCat("a literal cannot have shape ", shape.ToString(), " (arrays and tuples only)"));
  if (shape.is_dynamic()) return Expected("a constant of static shape");
  int64_t count = SafeElementCount(shape);
  // A scalar for an array shape fills every element, as XLA reads it (bf16[512,128]
  // constant(0.)); the allocation is bounded so that a typo cannot ask for terabytes.
  if (shape.rank() > 0 && lex_.PeekKind() != TokKind::kLbrace) {
    const size_t at = lex_.NextTokenOffset();
    constexpr int64_t kMaxBroadcastBytes = int64_t{1} << 34;
    const int64_t width = PrimitiveByteWidth(shape.element_type());
    if (count < 0 || count > kMaxBroadcastBytes / std::max<int64_t>(width, 1))
      return ErrorAt(at, StrCat("a scalar constant of shape ", shape.ToString(), " would take more than ",
                                kMaxBroadcastBytes, " bytes"));
    Literal scalar(Shape(shape.element_type(), {}));
    ElementParser one(this, &scalar);
    KILN_RETURN_IF_ERROR(one.Parse(0));
    Literal lit(Shape(shape.element_type(), shape.dimensions()));
    if (shape.has_layout()) lit.set_layout(shape.layout());
    const size_t bytes = scalar.size_bytes();
    uint8_t* dst = lit.untyped_data();
    for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * bytes, scalar.untyped_data(), bytes);
    return lit;
  }
  // Every element takes at least one character, so the text bounds the count (this keeps
  // absurd shapes from allocating).
  size_t remaining = lex_.text().size() - std::min(lex_.text().size(), lex_.NextTokenOffset());
  if (count < 0 || (count > 0 && static_cast<uint64_t>(count) > remaining))
    return ErrorAt(lex_.NextTokenOffset(),
                   StrCat("constant of shape ", shape.ToString(), " has more elements than the text"));
  Literal lit(Shape(shape.element_type(), shape.dimensions()));
  if (shape.has_layout()) lit.set_layout(shape.layout());
  ElementParser elem(this, &lit);
  if (shape.rank() == 0) {
    KILN_RETURN_IF_ERROR(elem.Parse(0));
    return lit;
  }
  // "{}" stands for any array without elements.
  if (count == 0 && lex_.PeekKind() == TokKind::kLbrace) {
    Lexer::State s = lex_.GetState();
    lex_.Next();
    if (TryConsume(TokKind::kRbrace)) return lit;
    lex_.SetState(s);
  }
  int64_t next = 0;
  const int64_t rank = shape.rank();
  // Recursion over dimensions, bounded by the depth guard.
  std::function<Status(int64_t)> level = [&](int64_t d) -> Status {
    DepthGuard g(this);
    if (g.too_deep()) return TooDeep();
    size_t open = lex_.NextTokenOffset();
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
    int64_t items = 0;
    if (lex_.PeekKind() != TokKind::kRbrace) {
      do {
        if (items >= shape.dimensions(d))
          return ErrorAt(lex_.NextTokenOffset(),
                         StrCat("too many elements in dimension ", d, " of constant (size ",
                                shape.dimensions(d), ")"));
        if (d == rank - 1) {
          KILN_RETURN_IF_ERROR(elem.Parse(next++));
        } else {
          KILN_RETURN_IF_ERROR(level(d + 1));
        }
        ++items;
      } while (TryConsume(TokKind::kComma));
    }
    if (items != shape.dimensions(d))
      return ErrorAt(open, StrCat("expected ", shape.dimensions(d), " elements in dimension ", d,
                                  " of constant, found ", items));
    return Expect(TokKind::kRbrace, "'}' or ','");
  };
  KILN_RETURN_IF_ERROR(level(0));
  return lit;
}

StatusOr<Literal> HloParser::ParseLiteralOnly(const Shape& shape) {
  bool elided = false;
  KILN_ASSIGN_OR_RETURN(Literal lit, ParseLiteral(shape, &elided));
  if (elided) return ErrorAt(0, "the literal is elided ({...})");
  if (lex_.PeekKind() != TokKind::kEof) return Expected("end of input");
  return lit;
}

// Fills a literal deterministically: floats uniform in [-1, 1), integers in a small range,
// preds as random bits. Shapes over options().max_filled_constant_bytes are an error.
StatusOr<Literal> HloParser::FillLiteral(const Shape& shape, uint64_t seed) {
  DepthGuard guard(this);
  if (guard.too_deep()) return TooDeep();
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Literal e, FillLiteral(shape.tuple_shapes(i), seed * 31 + i + 1));
      elements.push_back(std::move(e));
    }
    return Literal::MakeTuple(std::move(elements));
  }
  if (!shape.IsArray()) return Literal(shape);
  int64_t count = SafeElementCount(shape);
  const int64_t max_bytes = options_.max_filled_constant_bytes;
  if (shape.is_dynamic() || count < 0 ||
      count > max_bytes / std::max(1, PrimitiveByteWidth(shape.element_type())))
    return InvalidArgument("cannot fill an elided constant of shape ", shape.ToString(),
                           " (dynamic or over ", max_bytes, " bytes)");
  Literal lit(Shape(shape.element_type(), shape.dimensions()));
  if (shape.has_layout()) lit.set_layout(shape.layout());
  uint64_t state = seed ^ 0x6b696c6e5f66696cULL;
  PrimitiveType t = shape.element_type();
  for (int64_t i = 0; i < count; ++i) {
    uint64_t r = SplitMix64(state);
    double unit = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    if (t == PrimitiveType::kPred) {
      lit.SetFromInt64(i, static_cast<int64_t>(r & 1));
    } else if (IsComplexType(t)) {
      uint64_t r2 = SplitMix64(state);
      double unit2 = static_cast<double>(r2 >> 11) * (1.0 / 9007199254740992.0);
      lit.SetFromComplex(i, {unit * 2 - 1, unit2 * 2 - 1});
    } else if (IsFloatingPointType(t)) {
      lit.SetFromDouble(i, unit * 2 - 1);
    } else if (IsSignedIntegralType(t)) {
      int bits = PrimitiveBitWidth(t);
      int64_t span = bits >= 5 ? 16 : (int64_t{1} << bits);
      lit.SetFromInt64(i, static_cast<int64_t>(r % span) - span / 2);
    } else {
      int bits = PrimitiveBitWidth(t);
      int64_t span = bits >= 5 ? 16 : (int64_t{1} << bits);
      lit.SetFromInt64(i, static_cast<int64_t>(r % span));
    }
  }
  return lit;
}

}  // namespace parser_internal
}  // namespace kiln
