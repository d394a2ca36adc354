// HLO parser: scalar values and instruction attributes (the dispatch over attribute names and
// the typed families: windows, dimension labels, slices, padding, dot and gather/scatter
// dimension numbers, enums, custom-call attributes).
#include <charconv>
#include <cmath>

#include "kiln/base/strings.h"
#include "kiln/hlo/parser_internal.h"

namespace kiln {
namespace parser_internal {

// ---------------------------------------------------------------------------------------------
// Scalars

// int ::= '-'? digits
StatusOr<int64_t> HloParser::ParseInt64() {
  const Token& t = lex_.Peek();
  if (t.kind != TokKind::kInt) return Expected("integer");
  int64_t v = 0;
  auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
    return ErrorAt(t.offset, StrCat("integer ", t.text, " does not fit in 64 bits"));
  lex_.Next();
  return v;
}

// bool ::= 'true' | 'false'
StatusOr<bool> HloParser::ParseBool() {
  if (TryConsumeIdent("true")) return true;
  if (TryConsumeIdent("false")) return false;
  return Expected("true or false");
}

// double ::= int | decimal | 'inf' | '-inf' | 'nan' | '-nan'
StatusOr<double> HloParser::ParseDouble() {
  const Token& t = lex_.Peek();
  if (t.kind == TokKind::kIdent) {
    if (t.text == "inf" || t.text == "-inf" || t.text == "nan" || t.text == "-nan") {
      bool neg = t.text[0] == '-';
      bool nan = t.text.back() == 'n';
      lex_.Next();
      double v = nan ? std::nan("") : INFINITY;
      return neg ? -v : v;
    }
  }
  if (t.kind != TokKind::kInt && t.kind != TokKind::kDecimal) return Expected("number");
  double v = 0;
  auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
    return ErrorAt(t.offset, StrCat("number ", t.text, " out of range"));
  lex_.Next();
  return v;
}

StatusOr<std::string> HloParser::ParseString() {
  if (lex_.PeekKind() != TokKind::kString) return Expected("string");
  return lex_.Next().value;
}

// name ::= identifier | '%' identifier
StatusOr<std::string> HloParser::ParseName(std::string_view what) {
  TokKind k = lex_.PeekKind();
  if (k != TokKind::kIdent && k != TokKind::kName) return Expected(what);
  return std::string(lex_.Next().text);
}

StatusOr<std::string> HloParser::ParseIdentText(std::string_view what) {
  if (lex_.PeekKind() != TokKind::kIdent) return Expected(what);
  return std::string(lex_.Next().text);
}

// int_list ::= '{' (int (',' int)*)? '}'
StatusOr<std::vector<int64_t>> HloParser::ParseIntList() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<int64_t> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
    out.push_back(v);
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// int_list_list ::= '{' (int_list (',' int_list)*)? '}'
StatusOr<std::vector<std::vector<int64_t>>> HloParser::ParseIntListList() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<std::vector<int64_t>> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, ParseIntList());
    out.push_back(std::move(v));
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

StatusOr<std::string> HloParser::ParseRawValue() {
  std::string_view raw;
  if (!lex_.ScanRawValue(&raw)) return Expected("attribute value");
  return std::string(raw);
}

// ---------------------------------------------------------------------------------------------
// Enums

namespace {
template <typename E, size_t N>
std::optional<E> MatchEnum(std::string_view text, const E (&values)[N],
                           std::string_view (*name)(E)) {
  for (E v : values)
    if (name(v) == text) return v;
  return std::nullopt;
}

std::string_view Lower(std::string_view s, std::string* buf) {
  buf->assign(s);
  for (char& c : *buf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return *buf;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Attribute families

namespace {
// Splits "a<sep>b<sep>c" into integers.
bool SplitInts(std::string_view text, char sep, std::vector<int64_t>* out) {
  out->clear();
  for (std::string_view part : StrSplit(text, sep)) {
    int64_t v = 0;
    auto r = std::from_chars(part.data(), part.data() + part.size(), v);
    if (r.ec != std::errc() || r.ptr != part.data() + part.size() || part.empty()) return false;
    out->push_back(v);
  }
  return true;
}
}  // namespace

// window ::= '{' (window_key '=' (int | dxd | pad))* '}'
// window_key ::= 'size' | 'stride' | 'pad' | 'lhs_dilate' | 'rhs_dilate' | 'rhs_reversal'
StatusOr<Window> HloParser::ParseWindow() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<int64_t> size, stride, lhs_dilate, rhs_dilate, reversal;
  std::vector<std::pair<int64_t, int64_t>> pad;
  bool has_size = false, has_stride = false, has_pad = false, has_lhs = false, has_rhs = false,
       has_rev = false;
  size_t open = lex_.LastTokenEnd() - 1;
  while (lex_.PeekKind() != TokKind::kRbrace) {
    const Token key = lex_.Peek();
    if (key.kind != TokKind::kIdent) return Expected("window attribute (size, stride, pad, ...) or '}'");
    lex_.Next();
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    const Token v = lex_.Peek();
    auto ints = [&](std::vector<int64_t>* out, bool* seen) -> Status {
      if (*seen) return ErrorAt(key.offset, StrCat("duplicate window attribute '", key.text, "'"));
      *seen = true;
      if ((v.kind != TokKind::kInt && v.kind != TokKind::kDxD) ||
          !SplitInts(v.text, 'x', out))
        return Expected(StrCat("window ", key.text, " (N or NxM...)"));
      lex_.Next();
      return OkStatus();
    };
    if (key.text == "size") {
      KILN_RETURN_IF_ERROR(ints(&size, &has_size));
    } else if (key.text == "stride") {
      KILN_RETURN_IF_ERROR(ints(&stride, &has_stride));
    } else if (key.text == "lhs_dilate") {
      KILN_RETURN_IF_ERROR(ints(&lhs_dilate, &has_lhs));
    } else if (key.text == "rhs_dilate") {
      KILN_RETURN_IF_ERROR(ints(&rhs_dilate, &has_rhs));
    } else if (key.text == "rhs_reversal") {
      KILN_RETURN_IF_ERROR(ints(&reversal, &has_rev));
    } else if (key.text == "pad") {
      if (has_pad) return ErrorAt(key.offset, "duplicate window attribute 'pad'");
      has_pad = true;
      if (v.kind != TokKind::kPad) return Expected("window padding (lo_hi x lo_hi ...)");
      for (std::string_view dim : StrSplit(v.text, 'x')) {
        std::vector<int64_t> lh;
        if (!SplitInts(dim, '_', &lh) || lh.size() != 2)
          return ErrorAt(v.offset, "window padding takes low_high per dimension");
        pad.emplace_back(lh[0], lh[1]);
      }
      lex_.Next();
    } else {
      return ErrorAt(key.offset, StrCat("expected window attribute (size, stride, pad, lhs_dilate, "
                                        "rhs_dilate, rhs_reversal), found '", key.text, "'"));
    }
  }
  lex_.Next();  // '}'
  size_t rank = size.size();
  if (!has_size && (has_stride || has_pad || has_lhs || has_rhs || has_rev))
    return ErrorAt(open, "window needs size=");
  auto check = [&](size_t n, bool seen, std::string_view what) -> Status {
    if (seen && n != rank)
      return ErrorAt(open, StrCat("window ", what, " has ", n, " dimensions, size has ", rank));
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(check(stride.size(), has_stride, "stride"));
  KILN_RETURN_IF_ERROR(check(pad.size(), has_pad, "pad"));
  KILN_RETURN_IF_ERROR(check(lhs_dilate.size(), has_lhs, "lhs_dilate"));
  KILN_RETURN_IF_ERROR(check(rhs_dilate.size(), has_rhs, "rhs_dilate"));
  KILN_RETURN_IF_ERROR(check(reversal.size(), has_rev, "rhs_reversal"));
  Window w;
  w.dimensions.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    WindowDimension& d = w.dimensions[i];
    d.size = size[i];
    if (has_stride) d.stride = stride[i];
    if (has_pad) d.padding_low = pad[i].first, d.padding_high = pad[i].second;
    if (has_lhs) d.base_dilation = lhs_dilate[i];
    if (has_rhs) d.window_dilation = rhs_dilate[i];
    if (has_rev) d.window_reversal = reversal[i] != 0;
  }
  return w;
}

// dim_labels ::= lhs '_' kernel '->' output, e.g. b01f_01io->b01f
// A '?' marks a dimension of no role (XLA allows it for custom calls: "?b01f_0?1io->b01?f"); a
// side with one may leave out its batch/feature letters and spatial dimensions (-1).
StatusOr<ConvolutionDimensionNumbers> HloParser::ParseDimLabels() {
  const Token t = lex_.Peek();
  if (t.kind != TokKind::kDimLabels) return Expected("dimension labels (e.g. b01f_01io->b01f)");
  lex_.Next();
  std::string_view text = t.text;
  size_t us = text.find('_');
  size_t arrow = text.find("->");
  std::string_view lhs = text.substr(0, us);
  std::string_view rhs = text.substr(us + 1, arrow - us - 1);
  std::string_view out = text.substr(arrow + 2);
  ConvolutionDimensionNumbers dn;
  // Parses one side; `a`/`b` are the two non-spatial letters.
  auto side = [&](std::string_view s, char a, char b, int64_t* da, int64_t* db,
                  std::vector<int64_t>* spatial) -> Status {
    int64_t num_spatial = static_cast<int64_t>(s.size()) - 2;
    spatial->assign(std::max<int64_t>(num_spatial, 0), -1);
    bool seen_a = false, seen_b = false, unknown = false;
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      int64_t pos = static_cast<int64_t>(i);
      if (c == '?') {
        unknown = true;
      } else if (c == a && !seen_a) {
        *da = pos;
        seen_a = true;
      } else if (c == b && !seen_b) {
        *db = pos;
        seen_b = true;
      } else if (c >= '0' && c <= '9' && c - '0' < num_spatial && (*spatial)[c - '0'] < 0) {
        (*spatial)[c - '0'] = pos;
      } else {
        return ErrorAt(t.offset, StrCat("malformed dimension labels '", text, "' (at '", s, "')"));
      }
    }
    if ((!seen_a || !seen_b) && !unknown)
      return ErrorAt(t.offset, StrCat("malformed dimension labels '", text, "' (at '", s, "')"));
    if (!seen_a) *da = -1;
    if (!seen_b) *db = -1;
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(side(lhs, 'b', 'f', &dn.input_batch_dimension, &dn.input_feature_dimension,
                            &dn.input_spatial_dimensions));
  KILN_RETURN_IF_ERROR(side(rhs, 'i', 'o', &dn.kernel_input_feature_dimension,
                            &dn.kernel_output_feature_dimension, &dn.kernel_spatial_dimensions));
  KILN_RETURN_IF_ERROR(side(out, 'b', 'f', &dn.output_batch_dimension,
                            &dn.output_feature_dimension, &dn.output_spatial_dimensions));
  if (dn.input_spatial_dimensions.size() != dn.kernel_spatial_dimensions.size() ||
      dn.input_spatial_dimensions.size() != dn.output_spatial_dimensions.size())
    return ErrorAt(t.offset, StrCat("dimension labels '", text,
                                    "' have different numbers of spatial dimensions"));
  return dn;
}

// slice ::= '{' ('[' int ':' int (':' int)? ']' (',' ...)*)? '}'
StatusOr<std::vector<SliceDimension>> HloParser::ParseSliceRanges() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<SliceDimension> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLsquare, "'['"));
    SliceDimension d;
    KILN_ASSIGN_OR_RETURN(d.start, ParseInt64());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kColon, "':'"));
    KILN_ASSIGN_OR_RETURN(d.limit, ParseInt64());
    if (TryConsume(TokKind::kColon)) {
      KILN_ASSIGN_OR_RETURN(d.stride, ParseInt64());
    }
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRsquare, "']'"));
    out.push_back(d);
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// padding ::= pad_dim ('x' pad_dim)*    pad_dim ::= int '_' int ('_' int)?
StatusOr<std::vector<PaddingDimension>> HloParser::ParsePadding() {
  const Token t = lex_.Peek();
  if (t.kind != TokKind::kPad) return Expected("padding (low_high[_interior] x ...)");
  lex_.Next();
  std::vector<PaddingDimension> out;
  for (std::string_view dim : StrSplit(t.text, 'x')) {
    std::vector<int64_t> v;
    if (!SplitInts(dim, '_', &v) || v.size() < 2 || v.size() > 3)
      return ErrorAt(t.offset, "padding takes low_high or low_high_interior per dimension");
    out.push_back({v[0], v[1], v.size() > 2 ? v[2] : 0});
  }
  return out;
}

// precision_list ::= '{' (precision (',' precision)*)? '}'
StatusOr<std::vector<Precision>> HloParser::ParsePrecisionList() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<Precision> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  static constexpr Precision kAll[] = {Precision::kDefault, Precision::kHigh, Precision::kHighest,
                                       Precision::kPackedNibble};
  do {
    const Token t = lex_.Peek();
    std::string buf;
    auto p = t.kind == TokKind::kIdent ? MatchEnum(Lower(t.text, &buf), kAll, PrecisionString)
                                       : std::nullopt;
    if (!p) return Expected("precision (default, high, highest, packed_nibble)");
    lex_.Next();
    out.push_back(*p);
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// aliasing ::= '{' (int_list ':' '(' int ',' int_list ')' (',' ...)*)? '}'
StatusOr<std::vector<OutputOperandAlias>> HloParser::ParseOutputOperandAliasing() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<OutputOperandAlias> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    OutputOperandAlias a;
    KILN_ASSIGN_OR_RETURN(a.output_index, ParseIntList());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kColon, "':'"));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
    KILN_ASSIGN_OR_RETURN(a.operand_number, ParseInt64());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kComma, "','"));
    KILN_ASSIGN_OR_RETURN(a.operand_index, ParseIntList());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
    out.push_back(std::move(a));
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

StatusOr<NameRef> HloParser::ParseComputationRef() {
  const Token t = lex_.Peek();
  KILN_ASSIGN_OR_RETURN(std::string name, ParseName("computation name"));
  return NameRef{std::move(name), t.offset};
}

// computation_list ::= '{' (name (',' name)*)? '}' | name
StatusOr<std::vector<NameRef>> HloParser::ParseComputationRefList() {
  std::vector<NameRef> out;
  if (!TryConsume(TokKind::kLbrace)) {
    KILN_ASSIGN_OR_RETURN(NameRef r, ParseComputationRef());
    out.push_back(std::move(r));
    return out;
  }
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    KILN_ASSIGN_OR_RETURN(NameRef r, ParseComputationRef());
    out.push_back(std::move(r));
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Which opcodes use a typed attribute. A known attribute name on an opcode that does not use
// it is kept verbatim in attrs().extra, like an unknown one.

namespace {
bool In(HloOpcode op, std::initializer_list<HloOpcode> ops) {
  for (HloOpcode o : ops)
    if (o == op) return true;
  return false;
}
using O = HloOpcode;

bool IsChannelOpcode(HloOpcode op) {
  return IsCollectiveOpcode(op) ||
         In(op, {O::kSend, O::kRecv, O::kSendDone, O::kRecvDone, O::kAllReduceDone,
                 O::kAllGatherDone, O::kCollectivePermuteDone});
}

bool AttributeApplies(std::string_view n, HloOpcode op) {
  if (n == "dimensions")
    return In(op, {O::kBroadcast, O::kTranspose, O::kReduce, O::kReverse, O::kConcatenate,
                   O::kSort, O::kMap, O::kAllGather, O::kAllGatherStart, O::kAllToAll,
                   O::kReduceScatter, O::kGetDimensionSize, O::kSetDimensionSize, O::kScan});
  if (n == "index") return op == O::kGetTupleElement;
  if (n == "iota_dimension") return op == O::kIota;
  if (n == "inferred_dimension") return op == O::kReshape;
  if (n == "slice") return op == O::kSlice;
  if (n == "dynamic_slice_sizes") return op == O::kDynamicSlice;
  if (n == "padding") return op == O::kPad;
  if (n == "window")
    return In(op, {O::kConvolution, O::kReduceWindow, O::kSelectAndScatter, O::kCustomCall});
  if (n == "dim_labels" || n == "feature_group_count" || n == "batch_group_count")
    return In(op, {O::kConvolution, O::kCustomCall});
  if (n == "lhs_batch_dims" || n == "rhs_batch_dims" || n == "lhs_contracting_dims" ||
      n == "rhs_contracting_dims")
    return In(op, {O::kDot, O::kRaggedDot, O::kScaledDot});
  if (n == "lhs_ragged_dims" || n == "rhs_group_dims") return op == O::kRaggedDot;
  if (n == "operand_precision")
    return In(op, {O::kDot, O::kRaggedDot, O::kScaledDot, O::kConvolution, O::kCustomCall});
  if (n == "algorithm")
    return In(op, {O::kDot, O::kRaggedDot, O::kScaledDot, O::kConvolution, O::kRngBitGenerator});
  if (n == "sparsity") return op == O::kDot;
  if (n == "offset_dims" || n == "collapsed_slice_dims" || n == "start_index_map" ||
      n == "operand_batching_dims" || n == "start_indices_batching_dims" || n == "slice_sizes")
    return op == O::kGather;
  if (n == "update_window_dims" || n == "inserted_window_dims" ||
      n == "scatter_dims_to_operand_dims" || n == "input_batching_dims" ||
      n == "scatter_indices_batching_dims" || n == "unique_indices")
    return op == O::kScatter;
  if (n == "index_vector_dim" || n == "indices_are_sorted") return In(op, {O::kGather, O::kScatter});
  if (n == "direction" || n == "type") return op == O::kCompare;
  if (n == "is_stable") return op == O::kSort;
  if (n == "fft_type" || n == "fft_length") return op == O::kFft;
  if (n == "distribution") return op == O::kRng;
  if (n == "exponent_bits" || n == "mantissa_bits") return op == O::kReducePrecision;
  if (n == "left_side" || n == "unit_diagonal" || n == "transpose_a")
    return op == O::kTriangularSolve;
  if (n == "lower") return In(op, {O::kTriangularSolve, O::kCholesky});
  if (n == "epsilon" || n == "feature_index")
    return In(op, {O::kBatchNormGrad, O::kBatchNormInference, O::kBatchNormTraining});
  if (n == "k" || n == "largest") return op == O::kTopK;
  if (n == "kind") return op == O::kFusion;
  if (n == "custom_call_target" || n == "api_version" || n == "custom_call_has_side_effect" ||
      n == "operand_layout_constraints" || n == "custom_call_schedule" || n == "literal")
    return op == O::kCustomCall;
  if (n == "output_to_operand_aliasing") return In(op, {O::kCustomCall, O::kFusion});
  if (n == "channel_id") return IsChannelOpcode(op);
  if (n == "replica_groups")
    return IsCollectiveOpcode(op) && !In(op, {O::kCollectivePermute, O::kCollectivePermuteStart});
  if (n == "use_global_device_ids")
    return In(op, {O::kAllGather, O::kAllGatherStart, O::kAllReduce, O::kAllReduceStart,
                   O::kReduceScatter});
  if (n == "constrain_layout") return IsCollectiveOpcode(op);
  if (n == "source_target_pairs") return In(op, {O::kCollectivePermute, O::kCollectivePermuteStart});
  if (n == "is_host_transfer") return In(op, {O::kSend, O::kRecv, O::kSendDone, O::kRecvDone});
  if (n == "infeed_config") return op == O::kInfeed;
  if (n == "outfeed_config" || n == "outfeed_shape") return op == O::kOutfeed;
  if (n == "cross_program_prefetch_index") return op == O::kCopyStart;
  if (n == "domain") return op == O::kDomain;
  if (n == "is_reverse" || n == "is_associative") return op == O::kScan;
  if (n == "is_composite") return op == O::kCall;
  return false;
}

template <typename E, size_t N>
Status ParseEnumInto(HloParser* p, const E (&values)[N], std::string_view (*name)(E), E* out,
                     std::string_view what) {
  const Token t = p->lexer().Peek();
  std::optional<E> v = t.kind == TokKind::kIdent ? MatchEnum(t.text, values, name) : std::nullopt;
  if (!v) return p->Expected(what);
  p->lexer().Next();
  *out = *v;
  return OkStatus();
}
}  // namespace

// shaped_literal ::= shape literal_value
//                  | '(' shaped_literal (',' shaped_literal)* ')'   (XLA's tuple form)
// "s32[1] {0}" is ambiguous (layout or value): the brace is read as a layout first, and as the
// value if that leaves no value to read. A tuple is written either as its shape and then its
// value ("(s32[2]{0}, pred[]) ({1, 2}, true)", kiln's printer) or element by element, each with
// its shape ("( s32[2]{0} {1, 2}, pred[] true )", XLA's printer).
StatusOr<Literal> HloParser::ParseShapedLiteral(bool* elided) {
  Lexer::State before = lex_.GetState();
  StatusOr<Shape> shape = ParseShape();
  StatusOr<Literal> parsed = shape.ok() ? ParseLiteral(*shape, elided) : StatusOr<Literal>(shape.status());
  if (parsed.ok()) return parsed;
  Lexer::State after = lex_.GetState();
  lex_.SetState(before);
  if (lex_.PeekKind() == TokKind::kLparen) {
    lex_.Next();
    std::vector<Literal> elements;
    Status bad = OkStatus();
    if (lex_.PeekKind() != TokKind::kRparen) {
      do {
        StatusOr<Literal> e = ParseShapedLiteral(elided);
        if (!e.ok()) {
          bad = e.status();
          break;
        }
        elements.push_back(std::move(e).value());
      } while (TryConsume(TokKind::kComma));
    }
    if (bad.ok() && TryConsume(TokKind::kRparen)) return Literal::MakeTuple(std::move(elements));
    lex_.SetState(after);
    return parsed.status();
  }
  StatusOr<Shape> bare = ParseShape(/*allow_layout=*/false);
  if (bare.ok()) {
    StatusOr<Literal> retry = ParseLiteral(*bare, elided);
    if (retry.ok()) return retry;
  }
  lex_.SetState(after);
  return parsed.status();
}

// attribute ::= name '=' value; dispatched on the name (and the opcode where a name is shared).
Status HloParser::ParseInstructionAttribute(PendingInstruction& p, CalledRefs& called,
                                            const Token& name_token) {
  std::string_view n = name_token.text;
  HloInstruction* self = p.instr;
  HloInstruction* target = p.async_wrapped ? p.async_wrapped.get() : p.instr;
  HloOpcode op = target->opcode();
  HloAttributes& a = target->attrs();

  // Attributes every instruction may carry.
  if (n == "metadata") {
    KILN_ASSIGN_OR_RETURN(self->metadata(), ParseMetadata());
    return OkStatus();
  }
  if (n == "sharding") {
    KILN_ASSIGN_OR_RETURN(HloSharding s, ParseSharding());
    self->set_sharding(std::move(s));
    return OkStatus();
  }
  if (n == "frontend_attributes") {
    KILN_ASSIGN_OR_RETURN(self->frontend_attributes(), ParseFrontendAttributes());
    return OkStatus();
  }
  if (n == "backend_config") {
    if (lex_.PeekKind() == TokKind::kString) {
      self->backend_config() = BackendConfig{lex_.Next().value, false};
      return OkStatus();
    }
    std::string_view raw;
    if (lex_.PeekKind() != TokKind::kLbrace || !lex_.ScanBalanced(&raw))
      return Expected("backend config (a string or {...})");
    self->backend_config() = BackendConfig{std::string(raw), true};
    return OkStatus();
  }
  if (n == "control-predecessors") {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
    if (!TryConsume(TokKind::kRbrace)) {
      do {
        const Token t = lex_.Peek();
        KILN_ASSIGN_OR_RETURN(std::string name, ParseName("instruction name"));
        p.control_predecessors.push_back({std::move(name), t.offset});
      } while (TryConsume(TokKind::kComma));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
    }
    return OkStatus();
  }
  if (n == "async_execution_thread" && IsAsyncOpcode(self->opcode())) {
    KILN_ASSIGN_OR_RETURN(self->attrs().async_execution_thread, ParseString());
    return OkStatus();
  }

  // Called computations.
  auto one = [&](std::optional<NameRef>* slot) -> Status {
    if (*slot) return ErrorAt(name_token.offset, StrCat("duplicate attribute '", n, "'"));
    KILN_ASSIGN_OR_RETURN(NameRef r, ParseComputationRef());
    *slot = std::move(r);
    return OkStatus();
  };
  if (n == "to_apply") return one(&called.to_apply);
  if (n == "condition" && op == O::kWhile) return one(&called.condition);
  if (n == "body" && op == O::kWhile) return one(&called.body);
  if (n == "select" && op == O::kSelectAndScatter) return one(&called.select);
  if (n == "scatter" && op == O::kSelectAndScatter) return one(&called.scatter);
  if (n == "true_computation" && op == O::kConditional) return one(&called.true_computation);
  if (n == "false_computation" && op == O::kConditional) return one(&called.false_computation);
  if (n == "branch_computations" && op == O::kConditional) {
    KILN_ASSIGN_OR_RETURN(called.branch_computations, ParseComputationRefList());
    return OkStatus();
  }
  if (n == "calls") {
    KILN_ASSIGN_OR_RETURN(called.calls, ParseComputationRefList());
    return OkStatus();
  }
  if (n == "called_computations") {
    KILN_ASSIGN_OR_RETURN(called.called_computations, ParseComputationRefList());
    return OkStatus();
  }

  if (!AttributeApplies(n, op)) {
    KILN_ASSIGN_OR_RETURN(std::string raw, ParseRawValue());
    a.extra.emplace_back(std::string(n), std::move(raw));
    return OkStatus();
  }

  // Opcode-specific typed attributes.
  if (n == "dimensions") {
    KILN_ASSIGN_OR_RETURN(a.dimensions, ParseIntList());
    if (op == O::kScan && a.dimensions.size() == 1) a.scan_dimension = a.dimensions[0];
  } else if (n == "index") {
    KILN_ASSIGN_OR_RETURN(a.tuple_index, ParseInt64());
  } else if (n == "iota_dimension") {
    KILN_ASSIGN_OR_RETURN(a.iota_dimension, ParseInt64());
  } else if (n == "inferred_dimension") {
    KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
    a.inferred_dimension = v;
  } else if (n == "slice") {
    KILN_ASSIGN_OR_RETURN(a.slice, ParseSliceRanges());
  } else if (n == "dynamic_slice_sizes") {
    KILN_ASSIGN_OR_RETURN(a.dynamic_slice_sizes, ParseIntList());
  } else if (n == "padding") {
    KILN_ASSIGN_OR_RETURN(a.padding, ParsePadding());
  } else if (n == "window") {
    KILN_ASSIGN_OR_RETURN(Window w, ParseWindow());
    a.window = std::move(w);
  } else if (n == "dim_labels") {
    KILN_ASSIGN_OR_RETURN(ConvolutionDimensionNumbers d, ParseDimLabels());
    a.convolution_dimension_numbers = std::move(d);
  } else if (n == "feature_group_count") {
    KILN_ASSIGN_OR_RETURN(a.feature_group_count, ParseInt64());
  } else if (n == "batch_group_count") {
    KILN_ASSIGN_OR_RETURN(a.batch_group_count, ParseInt64());
  } else if (n == "lhs_batch_dims" || n == "rhs_batch_dims" || n == "lhs_contracting_dims" ||
             n == "rhs_contracting_dims") {
    if (!a.dot_dimension_numbers) a.dot_dimension_numbers.emplace();
    DotDimensionNumbers& d = *a.dot_dimension_numbers;
    std::vector<int64_t>* dst = n == "lhs_batch_dims"         ? &d.lhs_batch_dimensions
                                : n == "rhs_batch_dims"       ? &d.rhs_batch_dimensions
                                : n == "lhs_contracting_dims" ? &d.lhs_contracting_dimensions
                                                              : &d.rhs_contracting_dimensions;
    KILN_ASSIGN_OR_RETURN(*dst, ParseIntList());
  } else if (n == "lhs_ragged_dims" || n == "rhs_group_dims") {
    if (!a.ragged_dot_dimension_numbers) a.ragged_dot_dimension_numbers.emplace();
    RaggedDotDimensionNumbers& d = *a.ragged_dot_dimension_numbers;
    std::vector<int64_t>& dst = n == "lhs_ragged_dims" ? d.lhs_ragged_dimensions : d.rhs_group_dimensions;
    KILN_ASSIGN_OR_RETURN(dst, ParseIntList());
  } else if (n == "operand_precision") {
    KILN_ASSIGN_OR_RETURN(a.precision_config.operand_precision, ParsePrecisionList());
  } else if (n == "algorithm") {
    if (op == O::kRngBitGenerator) {
      static constexpr RandomAlgorithm kAll[] = {RandomAlgorithm::kDefault, RandomAlgorithm::kThreeFry,
                                                 RandomAlgorithm::kPhilox};
      KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, RandomAlgorithmString, &a.rng_algorithm,
                                         "rng algorithm (rng_default, rng_three_fry, rng_philox)"));
    } else {
      KILN_ASSIGN_OR_RETURN(a.precision_config.algorithm, ParseIdentText("dot algorithm"));
    }
  } else if (n == "sparsity") {
    KILN_ASSIGN_OR_RETURN(std::string raw, ParseRawValue());
    a.sparsity.clear();
    for (std::string_view part : StrSplit(raw, '_'))
      a.sparsity.push_back(SparsityDescriptor{std::string(part)});
  } else if (n == "offset_dims" || n == "collapsed_slice_dims" || n == "start_index_map" ||
             n == "operand_batching_dims" || n == "start_indices_batching_dims") {
    if (!a.gather_dimension_numbers) a.gather_dimension_numbers.emplace();
    GatherDimensionNumbers& g = *a.gather_dimension_numbers;
    std::vector<int64_t>* dst = n == "offset_dims"             ? &g.offset_dims
                                : n == "collapsed_slice_dims"  ? &g.collapsed_slice_dims
                                : n == "start_index_map"       ? &g.start_index_map
                                : n == "operand_batching_dims" ? &g.operand_batching_dims
                                                               : &g.start_indices_batching_dims;
    KILN_ASSIGN_OR_RETURN(*dst, ParseIntList());
  } else if (n == "slice_sizes") {
    KILN_ASSIGN_OR_RETURN(a.gather_slice_sizes, ParseIntList());
  } else if (n == "update_window_dims" || n == "inserted_window_dims" ||
             n == "scatter_dims_to_operand_dims" || n == "input_batching_dims" ||
             n == "scatter_indices_batching_dims") {
    if (!a.scatter_dimension_numbers) a.scatter_dimension_numbers.emplace();
    ScatterDimensionNumbers& s = *a.scatter_dimension_numbers;
    std::vector<int64_t>* dst = n == "update_window_dims"             ? &s.update_window_dims
                                : n == "inserted_window_dims"         ? &s.inserted_window_dims
                                : n == "scatter_dims_to_operand_dims" ? &s.scatter_dims_to_operand_dims
                                : n == "input_batching_dims"          ? &s.input_batching_dims
                                                                      : &s.scatter_indices_batching_dims;
    KILN_ASSIGN_OR_RETURN(*dst, ParseIntList());
  } else if (n == "index_vector_dim") {
    KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
    if (op == O::kGather) {
      if (!a.gather_dimension_numbers) a.gather_dimension_numbers.emplace();
      a.gather_dimension_numbers->index_vector_dim = v;
    } else {
      if (!a.scatter_dimension_numbers) a.scatter_dimension_numbers.emplace();
      a.scatter_dimension_numbers->index_vector_dim = v;
    }
  } else if (n == "indices_are_sorted") {
    KILN_ASSIGN_OR_RETURN(a.indices_are_sorted, ParseBool());
  } else if (n == "unique_indices") {
    KILN_ASSIGN_OR_RETURN(a.unique_indices, ParseBool());
  } else if (n == "direction") {
    static constexpr ComparisonDirection kAll[] = {
        ComparisonDirection::kEq, ComparisonDirection::kNe, ComparisonDirection::kGe,
        ComparisonDirection::kGt, ComparisonDirection::kLe, ComparisonDirection::kLt};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, ComparisonDirectionString,
                                       &a.comparison_direction,
                                       "comparison direction (EQ, NE, GE, GT, LE, LT)"));
  } else if (n == "type") {
    static constexpr ComparisonType kAll[] = {ComparisonType::kFloat, ComparisonType::kTotalOrder,
                                              ComparisonType::kSigned, ComparisonType::kUnsigned};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, ComparisonTypeString, &a.comparison_type,
                                       "comparison type (FLOAT, TOTALORDER, SIGNED, UNSIGNED)"));
  } else if (n == "is_stable") {
    KILN_ASSIGN_OR_RETURN(a.is_stable, ParseBool());
  } else if (n == "fft_type") {
    static constexpr FftType kAll[] = {FftType::kFft, FftType::kIfft, FftType::kRfft, FftType::kIrfft};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, FftTypeString, &a.fft_type,
                                       "fft type (FFT, IFFT, RFFT, IRFFT)"));
  } else if (n == "fft_length") {
    KILN_ASSIGN_OR_RETURN(a.fft_length, ParseIntList());
  } else if (n == "distribution") {
    static constexpr RandomDistribution kAll[] = {RandomDistribution::kUniform,
                                                  RandomDistribution::kNormal};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, RandomDistributionString, &a.distribution,
                                       "distribution (rng_uniform, rng_normal)"));
  } else if (n == "exponent_bits") {
    KILN_ASSIGN_OR_RETURN(a.exponent_bits, ParseInt64());
  } else if (n == "mantissa_bits") {
    KILN_ASSIGN_OR_RETURN(a.mantissa_bits, ParseInt64());
  } else if (n == "left_side") {
    KILN_ASSIGN_OR_RETURN(a.triangular_solve_options.left_side, ParseBool());
  } else if (n == "lower") {
    KILN_ASSIGN_OR_RETURN(bool v, ParseBool());
    if (op == O::kCholesky) a.cholesky_lower = v;
    else a.triangular_solve_options.lower = v;
  } else if (n == "unit_diagonal") {
    KILN_ASSIGN_OR_RETURN(a.triangular_solve_options.unit_diagonal, ParseBool());
  } else if (n == "transpose_a") {
    static constexpr TriangularTranspose kAll[] = {TriangularTranspose::kNoTranspose,
                                                   TriangularTranspose::kTranspose,
                                                   TriangularTranspose::kAdjoint};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, TriangularTransposeString,
                                       &a.triangular_solve_options.transpose_a,
                                       "transpose (NO_TRANSPOSE, TRANSPOSE, ADJOINT)"));
  } else if (n == "epsilon") {
    KILN_ASSIGN_OR_RETURN(double v, ParseDouble());
    a.epsilon = static_cast<float>(v);
  } else if (n == "feature_index") {
    KILN_ASSIGN_OR_RETURN(a.feature_index, ParseInt64());
  } else if (n == "k") {
    KILN_ASSIGN_OR_RETURN(a.k, ParseInt64());
  } else if (n == "largest") {
    KILN_ASSIGN_OR_RETURN(a.largest, ParseBool());
  } else if (n == "kind") {
    static constexpr FusionKind kAll[] = {FusionKind::kLoop, FusionKind::kInput, FusionKind::kOutput,
                                          FusionKind::kCustom};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, FusionKindString, &a.fusion_kind,
                                       "fusion kind (kLoop, kInput, kOutput, kCustom)"));
  } else if (n == "custom_call_target") {
    KILN_ASSIGN_OR_RETURN(a.custom_call_target, ParseString());
  } else if (n == "api_version") {
    static constexpr CustomCallApiVersion kAll[] = {
        CustomCallApiVersion::kUnspecified, CustomCallApiVersion::kOriginal,
        CustomCallApiVersion::kStatusReturning, CustomCallApiVersion::kStatusReturningUnified,
        CustomCallApiVersion::kTypedFfi};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, CustomCallApiVersionString, &a.api_version,
                                       "custom-call API version (API_VERSION_...)"));
  } else if (n == "custom_call_has_side_effect") {
    KILN_ASSIGN_OR_RETURN(a.custom_call_has_side_effect, ParseBool());
  } else if (n == "operand_layout_constraints") {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
    std::vector<Shape> shapes;
    if (!TryConsume(TokKind::kRbrace)) {
      do {
        KILN_ASSIGN_OR_RETURN(Shape s, ParseShape());
        shapes.push_back(std::move(s));
      } while (TryConsume(TokKind::kComma));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
    }
    a.operand_layout_constraints = std::move(shapes);
  } else if (n == "output_to_operand_aliasing") {
    KILN_ASSIGN_OR_RETURN(a.output_to_operand_aliasing, ParseOutputOperandAliasing());
  } else if (n == "custom_call_schedule") {
    static constexpr CustomCallSchedule kAll[] = {CustomCallSchedule::kNone, CustomCallSchedule::kLatest,
                                                  CustomCallSchedule::kEarliest};
    KILN_RETURN_IF_ERROR(ParseEnumInto(this, kAll, CustomCallScheduleString, &a.custom_call_schedule,
                                       "custom-call schedule (SCHEDULE_...)"));
  } else if (n == "literal") {
    bool elided = false;
    KILN_ASSIGN_OR_RETURN(Literal lit, ParseShapedLiteral(&elided));
    if (elided) return ErrorAt(name_token.offset, "custom-call literal= may not be elided");
    target->set_literal(std::move(lit));
  } else if (n == "channel_id") {
    KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
    a.channel_id = v;
  } else if (n == "replica_groups") {
    KILN_ASSIGN_OR_RETURN(ReplicaGroups g, ParseReplicaGroups());
    a.replica_groups = std::move(g);
  } else if (n == "use_global_device_ids") {
    KILN_ASSIGN_OR_RETURN(a.use_global_device_ids, ParseBool());
  } else if (n == "constrain_layout") {
    KILN_ASSIGN_OR_RETURN(a.constrain_layout, ParseBool());
  } else if (n == "source_target_pairs") {
    KILN_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> pairs, ParseIntListList());
    a.source_target_pairs.clear();
    for (const auto& pr : pairs) {
      if (pr.size() != 2) return ErrorAt(name_token.offset, "source_target_pairs takes {source,target} pairs");
      a.source_target_pairs.emplace_back(pr[0], pr[1]);
    }
  } else if (n == "is_host_transfer") {
    KILN_ASSIGN_OR_RETURN(a.is_host_transfer, ParseBool());
  } else if (n == "infeed_config") {
    KILN_ASSIGN_OR_RETURN(a.infeed_config, ParseString());
  } else if (n == "outfeed_config") {
    KILN_ASSIGN_OR_RETURN(a.outfeed_config, ParseString());
  } else if (n == "outfeed_shape") {
    KILN_ASSIGN_OR_RETURN(Shape s, ParseShape());
    a.outfeed_shape = std::move(s);
  } else if (n == "cross_program_prefetch_index") {
    KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
    a.cross_program_prefetch_index = v;
  } else if (n == "domain") {
    KILN_ASSIGN_OR_RETURN(DomainMetadata d, ParseDomain());
    a.domain = std::move(d);
  } else if (n == "is_reverse") {
    KILN_ASSIGN_OR_RETURN(a.is_reverse, ParseBool());
  } else if (n == "is_associative") {
    KILN_ASSIGN_OR_RETURN(bool v, ParseBool());
    a.is_associative = v;
  } else if (n == "is_composite") {
    KILN_ASSIGN_OR_RETURN(a.is_composite, ParseBool());
  } else {
    return ErrorAt(name_token.offset, StrCat("internal: unhandled attribute '", n, "'"));
  }
  return OkStatus();
}

}  // namespace parser_internal
}  // namespace kiln
