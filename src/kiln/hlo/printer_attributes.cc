// HLO printer: attribute families (shapes, shardings, metadata, windows, ...) and the
// opcode-specific attributes of instructions, in XLA's order.
#include "kiln/base/strings.h"
#include "kiln/hlo/printer.h"
#include "kiln/hlo/printer_internal.h"

namespace kiln {
namespace printer_internal {

void AppendShape(std::string& out, const Shape& shape, bool layout) {
  if (shape.IsTuple()) {
    out += '(';
    for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
      if (i > 0) out += ", ";
      if (i > 0 && i % 5 == 0) out += StrCat("/*index=", i, "*/");
      AppendShape(out, shape.tuple_shapes(i), layout);
    }
    out += ')';
    return;
  }
  out += shape.ToString(/*print_layout=*/false);
  if (layout && shape.IsArray() && shape.has_layout() &&
      (shape.rank() > 0 || shape.layout().HasExtraAttributes()))
    out += shape.layout().ToString();
}

std::string ShapeText(const Shape& shape, bool layout) {
  std::string s;
  AppendShape(s, shape, layout);
  return s;
}

std::string IntListText(const std::vector<int64_t>& v) { return "{" + StrJoin(v, ",") + "}"; }

std::string KeyText(const std::string& key) {
  bool ident = !key.empty() && (std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_');
  for (char c : key)
    ident &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '$';
  if (key.find("->") != std::string::npos) ident = false;
  return ident ? key : CEscapeQuoted(key);
}

std::string ShardingText(const HloSharding& s) {
  using K = HloSharding::Kind;
  if (s.kind == K::kTuple) {
    return "{" + StrJoin(s.tuple_elements, ", ",
                         [](std::ostream& os, const HloSharding& e) { os << ShardingText(e); }) +
           "}";
  }
  std::string out = "{";
  switch (s.kind) {
    case K::kReplicated: out += "replicated"; break;
    case K::kManual: out += "manual"; break;
    case K::kUnknown: out += "unknown"; break;
    case K::kUnreduced: out += "unreduced"; break;
    case K::kMaximal: out += StrCat("maximal device=", s.maximal_device); break;
    case K::kTiled:
      out += "devices=[" + StrJoin(s.tile_assignment_dims, ",") + "]";
      if (s.iota) {
        out += "<=[" + StrJoin(s.iota_reshape_dims, ",") + "]";
        if (!s.iota_transpose_perm.empty()) out += "T(" + StrJoin(s.iota_transpose_perm, ",") + ")";
      } else {
        out += StrJoin(s.tile_assignment_devices, ",");
      }
      break;
    case K::kTuple: break;
  }
  if (s.replicate_on_last_tile_dim) out += " last_tile_dim_replicate";
  if (!s.last_tile_dims.empty()) out += " last_tile_dims={" + StrJoin(s.last_tile_dims, ", ") + "}";
  if (!s.shard_group.empty()) out += " " + s.shard_group;
  if (s.metadata.size() == 1) {
    out += " metadata=" + s.metadata[0];
  } else if (s.metadata.size() > 1) {
    out += " metadata={" + StrJoin(s.metadata, ", ") + "}";
  }
  return out + "}";
}

std::string MetadataText(const OpMetadata& m) {
  std::vector<std::string> parts;
  if (!m.op_type.empty()) parts.push_back("op_type=" + CEscapeQuoted(m.op_type));
  if (!m.op_name.empty()) parts.push_back("op_name=" + CEscapeQuoted(m.op_name));
  if (!m.source_file.empty()) parts.push_back("source_file=" + CEscapeQuoted(m.source_file));
  if (m.source_line != 0) parts.push_back(StrCat("source_line=", m.source_line));
  if (m.source_end_line != 0) parts.push_back(StrCat("source_end_line=", m.source_end_line));
  if (m.source_column != 0) parts.push_back(StrCat("source_column=", m.source_column));
  if (m.source_end_column != 0) parts.push_back(StrCat("source_end_column=", m.source_end_column));
  if (!m.deduplicated_name.empty())
    parts.push_back("deduplicated_name=" + CEscapeQuoted(m.deduplicated_name));
  if (m.preserve_layout) parts.push_back("preserve_layout=true");
  if (!m.scheduling_name.empty())
    parts.push_back("scheduling_name=" + CEscapeQuoted(m.scheduling_name));
  if (m.stack_frame_id != 0) parts.push_back(StrCat("stack_frame_id=", m.stack_frame_id));
  for (const auto& [k, v] : m.extra) parts.push_back(k + "=" + v);
  return "{" + StrJoin(parts, " ") + "}";
}

std::string FrontendAttributesText(const std::vector<std::pair<std::string, std::string>>& attrs) {
  return "{" +
         StrJoin(attrs, ",",
                 [](std::ostream& os, const std::pair<std::string, std::string>& kv) {
                   os << KeyText(kv.first) << "=" << CEscapeQuoted(kv.second);
                 }) +
         "}";
}

std::string ReplicaGroupsText(const ReplicaGroups& g) {
  if (g.is_iota) {
    std::string s = "[" + StrJoin(g.iota_group_shape, ",") + "]<=[" + StrJoin(g.iota_reshape_dims, ",") + "]";
    if (!g.iota_transpose_perm.empty()) s += "T(" + StrJoin(g.iota_transpose_perm, ",") + ")";
    return s;
  }
  return "{" +
         StrJoin(g.groups, ",", [](std::ostream& os, const std::vector<int64_t>& v) { os << IntListText(v); }) +
         "}";
}

std::string WindowText(const Window& w) {
  if (w.dimensions.empty()) return "{}";
  auto dims = [&](auto get) {
    return StrJoin(w.dimensions, "x", [&](std::ostream& os, const WindowDimension& d) { os << get(d); });
  };
  bool stride = false, pad = false, lhs = false, rhs = false, rev = false;
  for (const WindowDimension& d : w.dimensions) {
    stride |= d.stride != 1;
    pad |= d.padding_low != 0 || d.padding_high != 0;
    lhs |= d.base_dilation != 1;
    rhs |= d.window_dilation != 1;
    rev |= d.window_reversal;
  }
  std::string s = "{size=" + dims([](const WindowDimension& d) { return d.size; });
  if (stride) s += " stride=" + dims([](const WindowDimension& d) { return d.stride; });
  if (pad)
    s += " pad=" + dims([](const WindowDimension& d) {
           return StrCat(d.padding_low, "_", d.padding_high);
         });
  if (lhs) s += " lhs_dilate=" + dims([](const WindowDimension& d) { return d.base_dilation; });
  if (rhs) s += " rhs_dilate=" + dims([](const WindowDimension& d) { return d.window_dilation; });
  if (rev) s += " rhs_reversal=" + dims([](const WindowDimension& d) { return d.window_reversal ? 1 : 0; });
  return s + "}";
}

std::string DimLabelsText(const ConvolutionDimensionNumbers& d) {
  auto side = [](int64_t a, char ca, int64_t b, char cb, const std::vector<int64_t>& spatial) {
    int64_t rank = 2 + static_cast<int64_t>(spatial.size());
    std::string s(static_cast<size_t>(std::max<int64_t>(rank, 0)), '?');
    auto put = [&](int64_t pos, char c) {
      if (pos >= 0 && pos < rank) s[pos] = c;
    };
    put(a, ca);
    put(b, cb);
    for (size_t i = 0; i < spatial.size(); ++i) put(spatial[i], static_cast<char>('0' + i));
    return s;
  };
  return side(d.input_batch_dimension, 'b', d.input_feature_dimension, 'f', d.input_spatial_dimensions) +
         "_" +
         side(d.kernel_input_feature_dimension, 'i', d.kernel_output_feature_dimension, 'o',
              d.kernel_spatial_dimensions) +
         "->" +
         side(d.output_batch_dimension, 'b', d.output_feature_dimension, 'f', d.output_spatial_dimensions);
}

std::string PaddingText(const std::vector<PaddingDimension>& p) {
  bool interior = false;
  for (const PaddingDimension& d : p) interior |= d.interior != 0;
  return StrJoin(p, "x", [&](std::ostream& os, const PaddingDimension& d) {
    os << d.low << "_" << d.high;
    if (interior) os << "_" << d.interior;
  });
}

std::string ProgramShapeText(const ProgramShape& ps) {
  std::string s = "(";
  for (size_t i = 0; i < ps.parameters.size(); ++i) {
    if (i > 0) s += ", ";
    if (i > 0 && i % 5 == 0) s += StrCat("/*index=", i, "*/");
    if (i < ps.parameter_names.size() && !ps.parameter_names[i].empty())
      s += ps.parameter_names[i] + ": ";
    AppendShape(s, ps.parameters[i], true);
  }
  s += ")->";
  AppendShape(s, ps.result, true);
  return s;
}

namespace {
bool AnyNonDefault(const std::vector<Precision>& v) {
  for (Precision p : v)
    if (p != Precision::kDefault) return true;
  return false;
}

void AppendConvolutionFamily(std::string& out, const HloAttributes& a) {
  if (a.window) out += ", window=" + WindowText(*a.window);
  if (a.convolution_dimension_numbers)
    out += ", dim_labels=" + DimLabelsText(*a.convolution_dimension_numbers);
  if (a.feature_group_count != 1) out += StrCat(", feature_group_count=", a.feature_group_count);
  if (a.batch_group_count != 1) out += StrCat(", batch_group_count=", a.batch_group_count);
}

void AppendPrecision(std::string& out, const HloAttributes& a) {
  if (AnyNonDefault(a.precision_config.operand_precision))
    out += ", operand_precision={" +
           StrJoin(a.precision_config.operand_precision, ",",
                   [](std::ostream& os, Precision p) { os << PrecisionString(p); }) +
           "}";
  if (!a.precision_config.algorithm.empty()) out += ", algorithm=" + a.precision_config.algorithm;
}

void AppendAliasing(std::string& out, const HloAttributes& a) {
  if (a.output_to_operand_aliasing.empty()) return;
  out += ", output_to_operand_aliasing={" +
         StrJoin(a.output_to_operand_aliasing, ", ",
                 [](std::ostream& os, const OutputOperandAlias& al) {
                   os << IntListText(al.output_index) << ": (" << al.operand_number << ", "
                      << IntListText(al.operand_index) << ")";
                 }) +
         "}";
}

void AppendChannel(std::string& out, const HloAttributes& a) {
  if (a.channel_id) out += StrCat(", channel_id=", *a.channel_id);
}

void AppendCollective(std::string& out, const HloAttributes& a) {
  AppendChannel(out, a);
  if (a.replica_groups) out += ", replica_groups=" + ReplicaGroupsText(*a.replica_groups);
  if (a.constrain_layout) out += ", constrain_layout=true";
}
}  // namespace

void AppendOpcodeAttributes(std::string& out, const HloInstruction& instr, const PrintOptions& o) {
  const HloAttributes& a = instr.attrs();
  auto dims = [&] { out += ", dimensions=" + IntListText(a.dimensions); };
  switch (instr.opcode()) {
    case HloOpcode::kBroadcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kReduce:
    case HloOpcode::kReverse:
    case HloOpcode::kConcatenate:
    case HloOpcode::kMap:
    case HloOpcode::kGetDimensionSize:
    case HloOpcode::kSetDimensionSize:
      dims();
      break;
    case HloOpcode::kSort:
      dims();
      if (a.is_stable) out += ", is_stable=true";
      break;
    case HloOpcode::kGetTupleElement:
      out += StrCat(", index=", a.tuple_index);
      break;
    case HloOpcode::kIota:
      out += StrCat(", iota_dimension=", a.iota_dimension);
      break;
    case HloOpcode::kReshape:
      if (a.inferred_dimension) out += StrCat(", inferred_dimension=", *a.inferred_dimension);
      break;
    case HloOpcode::kSlice:
      out += ", slice={" +
             StrJoin(a.slice, ", ",
                     [](std::ostream& os, const SliceDimension& d) {
                       os << "[" << d.start << ":" << d.limit;
                       if (d.stride != 1) os << ":" << d.stride;
                       os << "]";
                     }) +
             "}";
      break;
    case HloOpcode::kDynamicSlice:
      out += ", dynamic_slice_sizes=" + IntListText(a.dynamic_slice_sizes);
      break;
    case HloOpcode::kPad:
      if (!a.padding.empty()) out += ", padding=" + PaddingText(a.padding);
      break;
    case HloOpcode::kConvolution:
      AppendConvolutionFamily(out, a);
      AppendPrecision(out, a);
      break;
    case HloOpcode::kReduceWindow:
    case HloOpcode::kSelectAndScatter:
      if (a.window) out += ", window=" + WindowText(*a.window);
      break;
    case HloOpcode::kDot:
    case HloOpcode::kRaggedDot:
    case HloOpcode::kScaledDot: {
      if (a.dot_dimension_numbers) {
        const DotDimensionNumbers& d = *a.dot_dimension_numbers;
        if (!d.lhs_batch_dimensions.empty()) out += ", lhs_batch_dims=" + IntListText(d.lhs_batch_dimensions);
        if (!d.lhs_contracting_dimensions.empty())
          out += ", lhs_contracting_dims=" + IntListText(d.lhs_contracting_dimensions);
        if (!d.rhs_batch_dimensions.empty()) out += ", rhs_batch_dims=" + IntListText(d.rhs_batch_dimensions);
        if (!d.rhs_contracting_dimensions.empty())
          out += ", rhs_contracting_dims=" + IntListText(d.rhs_contracting_dimensions);
      }
      if (a.ragged_dot_dimension_numbers) {
        const RaggedDotDimensionNumbers& r = *a.ragged_dot_dimension_numbers;
        if (!r.lhs_ragged_dimensions.empty()) out += ", lhs_ragged_dims=" + IntListText(r.lhs_ragged_dimensions);
        if (!r.rhs_group_dimensions.empty()) out += ", rhs_group_dims=" + IntListText(r.rhs_group_dimensions);
      }
      AppendPrecision(out, a);
      if (!a.sparsity.empty())
        out += ", sparsity=" + StrJoin(a.sparsity, "_", [](std::ostream& os, const SparsityDescriptor& s) {
                 os << s.text;
               });
      break;
    }
    case HloOpcode::kGather:
      if (a.gather_dimension_numbers) {
        const GatherDimensionNumbers& g = *a.gather_dimension_numbers;
        out += ", offset_dims=" + IntListText(g.offset_dims);
        out += ", collapsed_slice_dims=" + IntListText(g.collapsed_slice_dims);
        out += ", start_index_map=" + IntListText(g.start_index_map);
        if (!g.operand_batching_dims.empty())
          out += ", operand_batching_dims=" + IntListText(g.operand_batching_dims);
        if (!g.start_indices_batching_dims.empty())
          out += ", start_indices_batching_dims=" + IntListText(g.start_indices_batching_dims);
        out += StrCat(", index_vector_dim=", g.index_vector_dim);
      }
      out += ", slice_sizes=" + IntListText(a.gather_slice_sizes);
      if (a.indices_are_sorted) out += ", indices_are_sorted=true";
      break;
    case HloOpcode::kScatter:
      if (a.scatter_dimension_numbers) {
        const ScatterDimensionNumbers& s = *a.scatter_dimension_numbers;
        out += ", update_window_dims=" + IntListText(s.update_window_dims);
        out += ", inserted_window_dims=" + IntListText(s.inserted_window_dims);
        out += ", scatter_dims_to_operand_dims=" + IntListText(s.scatter_dims_to_operand_dims);
        if (!s.input_batching_dims.empty())
          out += ", input_batching_dims=" + IntListText(s.input_batching_dims);
        if (!s.scatter_indices_batching_dims.empty())
          out += ", scatter_indices_batching_dims=" + IntListText(s.scatter_indices_batching_dims);
        out += StrCat(", index_vector_dim=", s.index_vector_dim);
      }
      if (a.indices_are_sorted) out += ", indices_are_sorted=true";
      if (a.unique_indices) out += ", unique_indices=true";
      break;
    case HloOpcode::kCompare:
      out += StrCat(", direction=", ComparisonDirectionString(a.comparison_direction));
      if (a.comparison_type != ComparisonType::kDefault)
        out += StrCat(", type=", ComparisonTypeString(a.comparison_type));
      break;
    case HloOpcode::kFft:
      out += StrCat(", fft_type=", FftTypeString(a.fft_type), ", fft_length=", IntListText(a.fft_length));
      break;
    case HloOpcode::kRng:
      out += StrCat(", distribution=", RandomDistributionString(a.distribution));
      break;
    case HloOpcode::kRngBitGenerator:
      out += StrCat(", algorithm=", RandomAlgorithmString(a.rng_algorithm));
      break;
    case HloOpcode::kReducePrecision:
      out += StrCat(", exponent_bits=", a.exponent_bits, ", mantissa_bits=", a.mantissa_bits);
      break;
    case HloOpcode::kTriangularSolve: {
      const TriangularSolveOptions& t = a.triangular_solve_options;
      if (t.left_side) out += ", left_side=true";
      if (t.lower) out += ", lower=true";
      if (t.unit_diagonal) out += ", unit_diagonal=true";
      out += StrCat(", transpose_a=", TriangularTransposeString(t.transpose_a));
      break;
    }
    case HloOpcode::kCholesky:
      if (a.cholesky_lower) out += ", lower=true";
      break;
    case HloOpcode::kBatchNormGrad:
    case HloOpcode::kBatchNormInference:
    case HloOpcode::kBatchNormTraining:
      out += StrCat(", epsilon=", RoundTripFloat(a.epsilon), ", feature_index=", a.feature_index);
      break;
    case HloOpcode::kTopK:
      out += StrCat(", k=", a.k, ", largest=", a.largest ? "true" : "false");
      break;
    case HloOpcode::kFusion:
      out += StrCat(", kind=", FusionKindString(a.fusion_kind));
      AppendAliasing(out, a);
      break;
    case HloOpcode::kCustomCall:
      AppendConvolutionFamily(out, a);
      out += ", custom_call_target=" + CEscapeQuoted(a.custom_call_target);
      if (a.operand_layout_constraints)
        out += ", operand_layout_constraints={" +
               StrJoin(*a.operand_layout_constraints, ", ",
                       [](std::ostream& os, const Shape& s) { os << ShapeText(s, true); }) +
               "}";
      if (a.custom_call_has_side_effect) out += ", custom_call_has_side_effect=true";
      if (instr.has_literal()) {
        // The layout is always written so that the value's brace cannot read as a layout.
        Shape s = instr.literal().shape();
        s.set_default_layouts();
        out += ", literal=" + ShapeText(s, true) + " " + PrintLiteralValue(instr.literal());
      }
      AppendAliasing(out, a);
      if (a.custom_call_schedule != CustomCallSchedule::kNone)
        out += StrCat(", custom_call_schedule=", CustomCallScheduleString(a.custom_call_schedule));
      if (a.api_version != CustomCallApiVersion::kOriginal)
        out += StrCat(", api_version=", CustomCallApiVersionString(a.api_version));
      AppendPrecision(out, a);
      break;
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kReduceScatter:
      AppendCollective(out, a);
      dims();
      if (a.use_global_device_ids) out += ", use_global_device_ids=true";
      break;
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
      AppendCollective(out, a);
      if (a.use_global_device_ids) out += ", use_global_device_ids=true";
      break;
    case HloOpcode::kAllToAll:
      AppendCollective(out, a);
      if (!a.dimensions.empty()) dims();
      break;
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kCollectiveReduce:
    case HloOpcode::kRaggedAllToAll:
      AppendCollective(out, a);
      break;
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
      AppendChannel(out, a);
      if (a.constrain_layout) out += ", constrain_layout=true";
      out += ", source_target_pairs={" +
             StrJoin(a.source_target_pairs, ",",
                     [](std::ostream& os, const std::pair<int64_t, int64_t>& p) {
                       os << "{" << p.first << "," << p.second << "}";
                     }) +
             "}";
      break;
    case HloOpcode::kAllReduceDone:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kCollectivePermuteDone:
      AppendChannel(out, a);
      break;
    case HloOpcode::kSend:
    case HloOpcode::kRecv:
    case HloOpcode::kSendDone:
    case HloOpcode::kRecvDone:
      AppendChannel(out, a);
      if (a.is_host_transfer) out += ", is_host_transfer=true";
      break;
    case HloOpcode::kInfeed:
      if (!a.infeed_config.empty()) out += ", infeed_config=" + CEscapeQuoted(a.infeed_config);
      break;
    case HloOpcode::kOutfeed:
      if (a.outfeed_shape) out += ", outfeed_shape=" + ShapeText(*a.outfeed_shape, true);
      if (!a.outfeed_config.empty()) out += ", outfeed_config=" + CEscapeQuoted(a.outfeed_config);
      break;
    case HloOpcode::kCopyStart:
      if (a.cross_program_prefetch_index)
        out += StrCat(", cross_program_prefetch_index=", *a.cross_program_prefetch_index);
      break;
    case HloOpcode::kDomain:
      if (a.domain) {
        out += ", domain={kind=" + CEscapeQuoted(a.domain->kind);
        if (!a.domain->entry.empty()) out += ", entry=" + a.domain->entry;
        if (!a.domain->exit.empty()) out += ", exit=" + a.domain->exit;
        out += "}";
      }
      break;
    case HloOpcode::kAsyncStart:
    case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAsyncDone:
      if (!a.async_execution_thread.empty())
        out += ", async_execution_thread=" + CEscapeQuoted(a.async_execution_thread);
      break;
    case HloOpcode::kScan:
      out += ", dimensions=" +
             (a.dimensions.empty() ? "{" + std::to_string(a.scan_dimension) + "}" : IntListText(a.dimensions));
      if (a.is_reverse) out += ", is_reverse=true";
      if (a.is_associative) out += StrCat(", is_associative=", *a.is_associative ? "true" : "false");
      break;
    case HloOpcode::kCall:
      if (a.is_composite) out += ", is_composite=true";
      break;
    default:
      break;
  }
  (void)o;
}

}  // namespace printer_internal
}  // namespace kiln
