// HLO parser: shapes, layouts and program shapes.
#include "kiln/base/strings.h"
#include "kiln/hlo/parser_internal.h"

namespace kiln {
namespace parser_internal {

namespace {
// Dimension sizes and layout values above this are rejected (they could not be allocated
// anyway, and products of them must not overflow int64).
constexpr int64_t kMaxDimension = int64_t{1} << 40;
}  // namespace

bool HloParser::PeekShape() {
  const Token& t = lex_.Peek();
  if (t.kind == TokKind::kLparen) return true;
  if (t.kind != TokKind::kIdent) return false;
  if (!ParsePrimitiveType(t.text)) return false;
  Lexer::State s = lex_.GetState();
  lex_.Next();
  bool result = lex_.PeekKind() == TokKind::kLsquare;
  lex_.SetState(s);
  return result;
}

// shape ::= '(' (shape (',' shape)*)? ')'
//         | type '[' (dim (',' dim)*)? ']' layout?
// dim ::= int | '<=' int | '?'
StatusOr<Shape> HloParser::ParseShape(bool allow_layout) {
  DepthGuard guard(this);
  if (guard.too_deep()) return TooDeep();
  if (TryConsume(TokKind::kLparen)) {
    std::vector<Shape> elements;
    if (!TryConsume(TokKind::kRparen)) {
      do {
        KILN_ASSIGN_OR_RETURN(Shape e, ParseShape(allow_layout));
        elements.push_back(std::move(e));
      } while (TryConsume(TokKind::kComma));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')' or ','"));
    }
    return Shape::Tuple(std::move(elements));
  }
  const Token t = lex_.Peek();
  if (t.kind != TokKind::kIdent) return Expected("shape");
  std::optional<PrimitiveType> type = ParsePrimitiveType(t.text);
  if (!type) return ErrorAt(t.offset, StrCat("expected shape, found unknown element type '", t.text, "'"));
  lex_.Next();
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLsquare, "'['"));
  Shape shape;
  if (*type == PrimitiveType::kToken) {
    shape = Shape::Token();
  } else if (*type == PrimitiveType::kOpaque) {
    shape = Shape::Opaque();
  } else {
    shape = Shape(*type, {});
  }
  if (!TryConsume(TokKind::kRsquare)) {
    if (!shape.IsArray()) return Expected("']' (token and opaque shapes have no dimensions)");
    do {
      if (TryConsume(TokKind::kQuestion)) {
        shape.add_dimension(Shape::kUnboundedSize, true);
        continue;
      }
      bool bounded = TryConsume(TokKind::kLeq);
      const Token d = lex_.Peek();
      KILN_ASSIGN_OR_RETURN(int64_t size, ParseInt64());
      if (size < 0 || size > kMaxDimension)
        return ErrorAt(d.offset, StrCat("dimension size ", size, " out of range"));
      shape.add_dimension(size, bounded);
    } while (TryConsume(TokKind::kComma));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRsquare, "']' or ','"));
    // Each dimension is in range; their product (and its bytes) must be too, or every size
    // computation downstream wraps (f32[16777232,1099510579201] would be 16 elements).
    if (Status size = CheckShapeSize(shape); !size.ok()) return ErrorAt(t.offset, size.message());
  }
  // A layout follows only if the brace opens a layout ("{" then int, ":" or "}"); otherwise
  // the brace belongs to the surrounding construct (a computation body).
  if (allow_layout && shape.IsArray() && lex_.PeekKind() == TokKind::kLbrace) {
    Lexer::State s = lex_.GetState();
    lex_.Next();
    TokKind k = lex_.PeekKind();
    lex_.SetState(s);
    if (k == TokKind::kInt || k == TokKind::kColon || k == TokKind::kRbrace) {
      KILN_ASSIGN_OR_RETURN(Layout layout, ParseLayout(shape));
      shape.set_layout(std::move(layout));
    }
  }
  return shape;
}

// layout ::= '{' (int (',' int)*)? (':' layout_attribute*)? '}'
// layout_attribute ::= 'D' '(' dim_level (',' dim_level)* ')'
//                    | 'T' ('(' (int | '*') (',' (int | '*'))* ')')+
//                    | 'L' '(' int ')' | 'E' '(' int ')' | 'S' '(' int ')' | 'M' '(' int ')'
//                    | '#' '(' type ')' | '*' '(' type ')'
//                    | 'SC' '(' int ':' int (',' int)* ')'
//                    | 'P' '(' shape ')'
StatusOr<Layout> HloParser::ParseLayout(const Shape& shape) {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  Layout layout;
  std::vector<int64_t>& m2m = layout.mutable_minor_to_major();
  if (lex_.PeekKind() == TokKind::kInt) {
    do {
      const Token d = lex_.Peek();
      KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
      if (v < 0 || v >= shape.rank())
        return ErrorAt(d.offset, StrCat("layout dimension ", v, " out of range for rank ",
                                        shape.rank()));
      m2m.push_back(v);
    } while (TryConsume(TokKind::kComma));
  }
  if (!m2m.empty() && static_cast<int64_t>(m2m.size()) != shape.rank())
    return Expected(StrCat("a layout with ", shape.rank(), " dimensions"));
  auto paren_int = [&](int64_t* out) -> Status {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
    KILN_ASSIGN_OR_RETURN(*out, ParseInt64());
    return Expect(TokKind::kRparen, "')'");
  };
  auto paren_type = [&](PrimitiveType* out) -> Status {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
    const Token t = lex_.Peek();
    std::optional<PrimitiveType> type =
        t.kind == TokKind::kIdent ? ParsePrimitiveType(t.text) : std::nullopt;
    if (!type) return Expected("element type");
    lex_.Next();
    *out = *type;
    return Expect(TokKind::kRparen, "')'");
  };
  if (TryConsume(TokKind::kColon)) {
    while (lex_.PeekKind() != TokKind::kRbrace) {
      const Token t = lex_.Peek();
      if (t.kind == TokKind::kOctothorp) {
        lex_.Next();
        KILN_RETURN_IF_ERROR(paren_type(&layout.index_primitive_type));
        continue;
      }
      if (t.kind == TokKind::kAsterisk) {
        lex_.Next();
        KILN_RETURN_IF_ERROR(paren_type(&layout.pointer_primitive_type));
        continue;
      }
      if (t.kind != TokKind::kIdent) return Expected("layout attribute or '}'");
      lex_.Next();
      if (t.text == "D") {
        KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
        do {
          const Token lv = lex_.Peek();
          if (lv.kind != TokKind::kIdent) return Expected("dimension level type (D, C, S, H)");
          lex_.Next();
          DimLevel level{std::string(lv.text)};
          while (lex_.PeekKind() == TokKind::kPlus || lex_.PeekKind() == TokKind::kTilde)
            level.text += lex_.Next().text;
          layout.dim_levels.push_back(std::move(level));
        } while (TryConsume(TokKind::kComma));
        KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
      } else if (t.text == "T") {
        if (lex_.PeekKind() != TokKind::kLparen) return Expected("'('");
        while (TryConsume(TokKind::kLparen)) {
          Tile tile;
          if (lex_.PeekKind() != TokKind::kRparen) {
            do {
              if (TryConsume(TokKind::kAsterisk)) {
                tile.dimensions.push_back(Tile::kCombineDimension);
              } else {
                const Token d = lex_.Peek();
                KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
                if (v < 0 || v > kMaxDimension)
                  return ErrorAt(d.offset, StrCat("tile dimension ", v, " out of range"));
                tile.dimensions.push_back(v);
              }
            } while (TryConsume(TokKind::kComma));
          }
          KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
          layout.tiles.push_back(std::move(tile));
        }
      } else if (t.text == "L") {
        KILN_RETURN_IF_ERROR(paren_int(&layout.tail_padding_alignment_in_elements));
      } else if (t.text == "E") {
        KILN_RETURN_IF_ERROR(paren_int(&layout.element_size_in_bits));
      } else if (t.text == "S") {
        KILN_RETURN_IF_ERROR(paren_int(&layout.memory_space));
      } else if (t.text == "M") {
        KILN_RETURN_IF_ERROR(paren_int(&layout.dynamic_shape_metadata_prefix_bytes));
      } else if (t.text == "SC") {
        KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
        SplitConfig sc;
        KILN_ASSIGN_OR_RETURN(sc.dimension, ParseInt64());
        KILN_RETURN_IF_ERROR(Expect(TokKind::kColon, "':'"));
        do {
          KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
          sc.split_indices.push_back(v);
        } while (TryConsume(TokKind::kComma));
        KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
        layout.split_configs.push_back(std::move(sc));
      } else if (t.text == "P") {
        KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
        KILN_ASSIGN_OR_RETURN(Shape physical, ParseShape());
        KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
        layout.physical_shape = std::make_shared<Shape>(std::move(physical));
      } else {
        return ErrorAt(t.offset, StrCat("expected layout attribute (D, T, L, E, S, SC, P, M, #, *), "
                                        "found '", t.text, "'"));
      }
    }
  }
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}'"));
  return layout;
}

// program_shape ::= '(' (param (',' param)*)? ')' '->' shape     param ::= (name ':')? shape
StatusOr<ProgramShape> HloParser::ParseProgramShape() {
  ProgramShape ps;
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
  if (!TryConsume(TokKind::kRparen)) {
    do {
      std::string name;
      TokKind k = lex_.PeekKind();
      if ((k == TokKind::kIdent || k == TokKind::kName) && !PeekShape()) {
        KILN_ASSIGN_OR_RETURN(name, ParseName("parameter name"));
        KILN_RETURN_IF_ERROR(Expect(TokKind::kColon, "':'"));
      }
      KILN_ASSIGN_OR_RETURN(Shape s, ParseShape());
      ps.parameters.push_back(std::move(s));
      ps.parameter_names.push_back(std::move(name));
    } while (TryConsume(TokKind::kComma));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')' or ','"));
  }
  bool any_name = false;
  for (const std::string& n : ps.parameter_names) any_name |= !n.empty();
  if (!any_name) ps.parameter_names.clear();
  KILN_RETURN_IF_ERROR(Expect(TokKind::kArrow, "'->'"));
  KILN_ASSIGN_OR_RETURN(ps.result, ParseShape());
  return ps;
}

StatusOr<Shape> HloParser::ParseShapeOnly() {
  KILN_ASSIGN_OR_RETURN(Shape s, ParseShape());
  if (lex_.PeekKind() != TokKind::kEof) return Expected("end of input");
  return s;
}

}  // namespace parser_internal
}  // namespace kiln
