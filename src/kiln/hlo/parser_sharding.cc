// HLO parser: sharding, replica groups, op metadata, frontend attributes, module aliasing
// attributes, domains and the stack-frame tables.
#include "kiln/base/strings.h"
#include "kiln/hlo/parser_internal.h"

namespace kiln {
namespace parser_internal {

// sharding ::= '{' (sharding (',' sharding)*)? '}'          (tuple; '{}' is the empty tuple)
//            | '{' sharding_item+ '}'
// sharding_item ::= 'replicated' | 'manual' | 'unknown' | 'unreduced' | 'maximal' 'device=' int
//                 | 'devices=' '[' ints ']' (ints | '<=' '[' ints ']' ('T' '(' ints ')')?)
//                 | 'last_tile_dim_replicate' | 'last_tile_dims=' '{' ident (',' ident)* '}'
//                 | 'metadata=' '{' ... '}' | 'shard_as' int | 'shard_like' int
StatusOr<HloSharding> HloParser::ParseSharding() {
  DepthGuard guard(this);
  if (guard.too_deep()) return TooDeep();
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{' (sharding)"));
  HloSharding s;
  if (lex_.PeekKind() == TokKind::kLbrace || lex_.PeekKind() == TokKind::kRbrace) {
    s.kind = HloSharding::Kind::kTuple;
    if (TryConsume(TokKind::kRbrace)) return s;
    do {
      KILN_ASSIGN_OR_RETURN(HloSharding e, ParseSharding());
      s.tuple_elements.push_back(std::move(e));
    } while (TryConsume(TokKind::kComma));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
    return s;
  }
  bool has_kind = false;
  auto set_kind = [&](HloSharding::Kind k, size_t offset) -> Status {
    if (has_kind) return ErrorAt(offset, "sharding has two kinds");
    has_kind = true;
    s.kind = k;
    return OkStatus();
  };
  auto int_list_sq = [&](std::vector<int64_t>* out) -> Status {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLsquare, "'['"));
    out->clear();
    if (TryConsume(TokKind::kRsquare)) return OkStatus();
    do {
      KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
      out->push_back(v);
    } while (TryConsume(TokKind::kComma));
    return Expect(TokKind::kRsquare, "']' or ','");
  };
  while (lex_.PeekKind() != TokKind::kRbrace) {
    const Token t = lex_.Peek();
    if (t.kind != TokKind::kIdent) return Expected("sharding attribute or '}'");
    lex_.Next();
    if (t.text == "replicated") {
      KILN_RETURN_IF_ERROR(set_kind(HloSharding::Kind::kReplicated, t.offset));
    } else if (t.text == "manual") {
      KILN_RETURN_IF_ERROR(set_kind(HloSharding::Kind::kManual, t.offset));
    } else if (t.text == "unknown") {
      KILN_RETURN_IF_ERROR(set_kind(HloSharding::Kind::kUnknown, t.offset));
    } else if (t.text == "unreduced") {
      KILN_RETURN_IF_ERROR(set_kind(HloSharding::Kind::kUnreduced, t.offset));
    } else if (t.text == "maximal") {
      KILN_RETURN_IF_ERROR(set_kind(HloSharding::Kind::kMaximal, t.offset));
      if (!TryConsumeIdent("device")) return Expected("'device='");
      KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
      KILN_ASSIGN_OR_RETURN(s.maximal_device, ParseInt64());
    } else if (t.text == "devices") {
      KILN_RETURN_IF_ERROR(set_kind(HloSharding::Kind::kTiled, t.offset));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
      KILN_RETURN_IF_ERROR(int_list_sq(&s.tile_assignment_dims));
      if (TryConsume(TokKind::kLeq)) {
        s.iota = true;
        KILN_RETURN_IF_ERROR(int_list_sq(&s.iota_reshape_dims));
        if (TryConsumeIdent("T")) {
          KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
          do {
            KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
            s.iota_transpose_perm.push_back(v);
          } while (TryConsume(TokKind::kComma));
          KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
        }
      } else {
        do {
          KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
          s.tile_assignment_devices.push_back(v);
        } while (TryConsume(TokKind::kComma));
      }
    } else if (t.text == "last_tile_dim_replicate") {
      s.replicate_on_last_tile_dim = true;
    } else if (t.text == "last_tile_dims") {
      KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
      do {
        KILN_ASSIGN_OR_RETURN(std::string v, ParseIdentText("subgroup type (manual, replicated, ...)"));
        s.last_tile_dims.push_back(std::move(v));
      } while (TryConsume(TokKind::kComma));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
    } else if (t.text == "metadata") {
      KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
      // metadata={op_name=...} or metadata={{op_name=...}, {op_name=...}}
      Lexer::State st = lex_.GetState();
      KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
      bool list = lex_.PeekKind() == TokKind::kLbrace;
      if (!list) {
        lex_.SetState(st);
        std::string_view raw;
        if (!lex_.ScanBalanced(&raw)) return Expected("balanced metadata {...}");
        s.metadata.emplace_back(raw);
      } else {
        do {
          std::string_view raw;
          if (lex_.PeekKind() != TokKind::kLbrace || !lex_.ScanBalanced(&raw))
            return Expected("metadata {...}");
          s.metadata.emplace_back(raw);
        } while (TryConsume(TokKind::kComma));
        KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
      }
    } else if (t.text == "shard_as" || t.text == "shard_like") {
      const Token v = lex_.Peek();
      KILN_RETURN_IF_ERROR(ParseInt64().status());
      s.shard_group = StrCat(t.text, " ", v.text);
    } else {
      return ErrorAt(t.offset, StrCat("expected sharding attribute (replicated, maximal, devices=, "
                                      "manual, ...), found '", t.text, "'"));
    }
  }
  lex_.Next();  // '}'
  if (!has_kind && s.metadata.empty() && s.shard_group.empty() && !s.replicate_on_last_tile_dim &&
      s.last_tile_dims.empty())
    return ErrorAt(lex_.LastTokenEnd() - 1, "empty sharding");
  return s;
}

// replica_groups ::= '{' (int_list (',' int_list)*)? '}'
//                  | '[' int ',' int ']' '<=' '[' ints ']' ('T' '(' ints ')')?
StatusOr<ReplicaGroups> HloParser::ParseReplicaGroups() {
  ReplicaGroups g;
  if (lex_.PeekKind() == TokKind::kLbrace) {
    KILN_ASSIGN_OR_RETURN(g.groups, ParseIntListList());
    return g;
  }
  auto sq = [&](std::vector<int64_t>* out) -> Status {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLsquare, "'[' or '{' (replica groups)"));
    do {
      KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
      out->push_back(v);
    } while (TryConsume(TokKind::kComma));
    return Expect(TokKind::kRsquare, "']' or ','");
  };
  g.is_iota = true;
  size_t at = lex_.NextTokenOffset();
  KILN_RETURN_IF_ERROR(sq(&g.iota_group_shape));
  if (g.iota_group_shape.size() != 2)
    return ErrorAt(at, "iota replica groups take [num_groups,group_size]");
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLeq, "'<='"));
  KILN_RETURN_IF_ERROR(sq(&g.iota_reshape_dims));
  if (TryConsumeIdent("T")) {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
    do {
      KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt64());
      g.iota_transpose_perm.push_back(v);
    } while (TryConsume(TokKind::kComma));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
  }
  return g;
}

// metadata ::= '{' (key '=' value ','?)* '}'     (keys separated by spaces or commas, as older
//                                                 XLA text writes them)
StatusOr<OpMetadata> HloParser::ParseMetadata() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  OpMetadata m;
  while (lex_.PeekKind() != TokKind::kRbrace) {
    const Token k = lex_.Peek();
    if (k.kind != TokKind::kIdent) return Expected("metadata key or '}'");
    lex_.Next();
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    std::string_view key = k.text;
    if (key == "op_type") {
      KILN_ASSIGN_OR_RETURN(m.op_type, ParseString());
    } else if (key == "op_name") {
      KILN_ASSIGN_OR_RETURN(m.op_name, ParseString());
    } else if (key == "source_file") {
      KILN_ASSIGN_OR_RETURN(m.source_file, ParseString());
    } else if (key == "source_line") {
      KILN_ASSIGN_OR_RETURN(m.source_line, ParseInt64());
    } else if (key == "source_end_line") {
      KILN_ASSIGN_OR_RETURN(m.source_end_line, ParseInt64());
    } else if (key == "source_column") {
      KILN_ASSIGN_OR_RETURN(m.source_column, ParseInt64());
    } else if (key == "source_end_column") {
      KILN_ASSIGN_OR_RETURN(m.source_end_column, ParseInt64());
    } else if (key == "stack_frame_id") {
      KILN_ASSIGN_OR_RETURN(m.stack_frame_id, ParseInt64());
    } else if (key == "deduplicated_name") {
      KILN_ASSIGN_OR_RETURN(m.deduplicated_name, ParseString());
    } else if (key == "scheduling_name") {
      KILN_ASSIGN_OR_RETURN(m.scheduling_name, ParseString());
    } else if (key == "preserve_layout") {
      KILN_ASSIGN_OR_RETURN(m.preserve_layout, ParseBool());
    } else {
      KILN_ASSIGN_OR_RETURN(std::string raw, ParseRawValue());
      m.extra.emplace_back(std::string(key), std::move(raw));
    }
    TryConsume(TokKind::kComma);
  }
  lex_.Next();
  return m;
}

// frontend_attributes ::= '{' ((ident | string) '=' (string | raw) (',' ...)*)? '}'
// A raw value is kept as its text: a braced dictionary (composite.attributes={n = 1 : i32}) or
// list (_xla_send_recv_source_target_pairs={{0,1},{1,2}}); the printer quotes it.
StatusOr<std::vector<std::pair<std::string, std::string>>> HloParser::ParseFrontendAttributes() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<std::pair<std::string, std::string>> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    std::string key;
    if (lex_.PeekKind() == TokKind::kString) {
      key = lex_.Next().value;
    } else {
      KILN_ASSIGN_OR_RETURN(key, ParseIdentText("frontend attribute name"));
    }
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    std::string value;
    if (lex_.PeekKind() == TokKind::kString) {
      KILN_ASSIGN_OR_RETURN(value, ParseString());
    } else {
      KILN_ASSIGN_OR_RETURN(value, ParseRawValue());
    }
    out.emplace_back(std::move(key), std::move(value));
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// input_output_alias ::= '{' (int_list ':' '(' int ',' int_list (',' alias_kind)? ')' (',' ...)*)? '}'
// alias_kind ::= 'may-alias' | 'must-alias'
StatusOr<std::vector<InputOutputAlias>> HloParser::ParseInputOutputAlias() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<InputOutputAlias> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    InputOutputAlias a;
    KILN_ASSIGN_OR_RETURN(a.output_index, ParseIntList());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kColon, "':'"));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
    KILN_ASSIGN_OR_RETURN(a.parameter_number, ParseInt64());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kComma, "','"));
    KILN_ASSIGN_OR_RETURN(a.parameter_index, ParseIntList());
    if (TryConsume(TokKind::kComma)) {
      if (TryConsumeIdent("must-alias")) {
        a.must_alias = true;
      } else if (!TryConsumeIdent("may-alias")) {
        return Expected("may-alias or must-alias");
      }
    }
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
    out.push_back(std::move(a));
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// buffer_donor ::= '{' ('(' int ',' int_list ')' (',' ...)*)? '}'
StatusOr<std::vector<BufferDonor>> HloParser::ParseBufferDonors() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<BufferDonor> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    BufferDonor d;
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLparen, "'('"));
    KILN_ASSIGN_OR_RETURN(d.parameter_number, ParseInt64());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kComma, "','"));
    KILN_ASSIGN_OR_RETURN(d.parameter_index, ParseIntList());
    KILN_RETURN_IF_ERROR(Expect(TokKind::kRparen, "')'"));
    out.push_back(std::move(d));
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// domain ::= '{' 'kind' '=' string (',' ('entry' | 'exit') '=' sharding)* '}'
StatusOr<DomainMetadata> HloParser::ParseDomain() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  DomainMetadata d;
  bool first = true;
  while (lex_.PeekKind() != TokKind::kRbrace) {
    if (!first) KILN_RETURN_IF_ERROR(Expect(TokKind::kComma, "',' or '}'"));
    first = false;
    const Token k = lex_.Peek();
    KILN_ASSIGN_OR_RETURN(std::string key, ParseIdentText("domain key (kind, entry, exit)"));
    KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
    if (key == "kind") {
      KILN_ASSIGN_OR_RETURN(d.kind, ParseString());
    } else if (key == "entry" || key == "exit") {
      std::string_view raw;
      if (lex_.PeekKind() != TokKind::kLbrace || !lex_.ScanBalanced(&raw))
        return Expected("sharding {...}");
      (key == "entry" ? d.entry : d.exit) = std::string(raw);
    } else {
      return ErrorAt(k.offset, StrCat("expected domain key (kind, entry, exit), found '", key, "'"));
    }
  }
  lex_.Next();
  return d;
}

// bool_list ::= '{' (bool (',' bool)*)? '}'
StatusOr<std::vector<bool>> HloParser::ParseBoolList() {
  KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
  std::vector<bool> out;
  if (TryConsume(TokKind::kRbrace)) return out;
  do {
    KILN_ASSIGN_OR_RETURN(bool b, ParseBool());
    out.push_back(b);
  } while (TryConsume(TokKind::kComma));
  KILN_RETURN_IF_ERROR(Expect(TokKind::kRbrace, "'}' or ','"));
  return out;
}

// stack_frames ::= table+
// table ::= 'FileNames' (int string)* | 'FunctionNames' (int string)*
//         | 'FileLocations' (int '{' (key '=' int)* '}')*
//         | 'StackFrames' (int '{' (key '=' int)* '}')*
// Ids are 1-based and consecutive.
Status HloParser::ParseStackFrames(StackFrameIndex* index) {
  const Token table = lex_.Next();
  auto next_id = [&](size_t count) -> Status {
    const Token t = lex_.Peek();
    KILN_ASSIGN_OR_RETURN(int64_t id, ParseInt64());
    if (id != static_cast<int64_t>(count) + 1)
      return ErrorAt(t.offset, StrCat("expected id ", count + 1, " in ", table.text, ", found ", id));
    return OkStatus();
  };
  // '{' (key '=' int)* '}' with the keys in `keys` (each at most once).
  auto fields = [&](std::initializer_list<std::pair<std::string_view, int64_t*>> keys) -> Status {
    KILN_RETURN_IF_ERROR(Expect(TokKind::kLbrace, "'{'"));
    while (lex_.PeekKind() != TokKind::kRbrace) {
      const Token k = lex_.Peek();
      if (k.kind != TokKind::kIdent) return Expected("key or '}'");
      lex_.Next();
      int64_t* dst = nullptr;
      for (auto& [name, ptr] : keys)
        if (name == k.text) dst = ptr;
      if (!dst) return ErrorAt(k.offset, StrCat("unknown key '", k.text, "' in ", table.text));
      KILN_RETURN_IF_ERROR(Expect(TokKind::kEqual, "'='"));
      KILN_ASSIGN_OR_RETURN(*dst, ParseInt64());
    }
    lex_.Next();
    return OkStatus();
  };
  while (lex_.PeekKind() == TokKind::kInt) {
    if (table.text == "FileNames" || table.text == "FunctionNames") {
      auto& list = table.text == "FileNames" ? index->file_names : index->function_names;
      KILN_RETURN_IF_ERROR(next_id(list.size()));
      KILN_ASSIGN_OR_RETURN(std::string s, ParseString());
      list.push_back(std::move(s));
    } else if (table.text == "FileLocations") {
      KILN_RETURN_IF_ERROR(next_id(index->file_locations.size()));
      StackFrameIndex::FileLocation l;
      KILN_RETURN_IF_ERROR(fields({{"file_name_id", &l.file_name_id},
                                   {"function_name_id", &l.function_name_id},
                                   {"line", &l.line},
                                   {"end_line", &l.end_line},
                                   {"column", &l.column},
                                   {"end_column", &l.end_column}}));
      index->file_locations.push_back(l);
    } else {
      KILN_RETURN_IF_ERROR(next_id(index->stack_frames.size()));
      StackFrameIndex::StackFrame f;
      KILN_RETURN_IF_ERROR(fields({{"file_location_id", &f.file_location_id},
                                   {"parent_frame_id", &f.parent_frame_id}}));
      index->stack_frames.push_back(f);
    }
  }
  return OkStatus();
}

}  // namespace parser_internal
}  // namespace kiln
