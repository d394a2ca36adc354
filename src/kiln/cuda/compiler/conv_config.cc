#include "kiln/cuda/compiler/conv_config.h"

#include <nlohmann/json.hpp>

#include "kiln/base/strings.h"

namespace kiln::cuda {

namespace {

std::vector<int64_t> Layout(bool last, int64_t outer, int64_t channels, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> d = {outer};
  if (!last) d.push_back(channels);
  d.insert(d.end(), spatial.begin(), spatial.end());
  if (last) d.push_back(channels);
  return d;
}

}  // namespace

std::string_view ConvCallKindName(ConvCallKind k) {
  switch (k) {
    case ConvCallKind::kForward: return "forward";
    case ConvCallKind::kBackwardData: return "backward_data";
    case ConvCallKind::kBackwardFilter: return "backward_filter";
  }
  return "?";
}

std::vector<int64_t> ConvConfig::Operand0Dims() const {
  return kind == ConvCallKind::kBackwardData ? OutputDims() : InputDims();
}
std::vector<int64_t> ConvConfig::Operand1Dims() const {
  return kind == ConvCallKind::kBackwardFilter ? OutputDims() : FilterDims();
}
std::vector<int64_t> ConvConfig::ResultDims() const {
  switch (kind) {
    case ConvCallKind::kForward: break;
    case ConvCallKind::kBackwardData: return InputDims();
    case ConvCallKind::kBackwardFilter: return FilterDims();
  }
  return OutputDims();
}

std::vector<int64_t> ConvConfig::InputDims() const {
  return Layout(channels_last, batch, input_features, input_spatial);
}
std::vector<int64_t> ConvConfig::FilterDims() const {
  return Layout(channels_last, output_features, input_features / std::max<int64_t>(1, feature_group_count),
                filter_spatial);
}
std::vector<int64_t> ConvConfig::OutputDims() const {
  return Layout(channels_last, batch, output_features, output_spatial);
}

int64_t ConvConfig::flops() const {
  int64_t f = 2 * batch * output_features * (input_features / std::max<int64_t>(1, feature_group_count));
  for (int64_t s : output_spatial) f *= s;
  for (int64_t s : filter_spatial) f *= s;
  return f;
}

std::string ConvConfig::ToJson() const {
  nlohmann::ordered_json j;
  if (kind != ConvCallKind::kForward) j["kind"] = std::string(ConvCallKindName(kind));
  j["layout"] = channels_last ? "channels_last" : "channels_first";
  j["batch"] = batch;
  j["input_features"] = input_features;
  j["output_features"] = output_features;
  j["input_spatial"] = input_spatial;
  j["filter_spatial"] = filter_spatial;
  j["output_spatial"] = output_spatial;
  j["strides"] = strides;
  j["padding_low"] = padding_low;
  j["padding_high"] = padding_high;
  j["dilations"] = dilations;
  j["feature_group_count"] = feature_group_count;
  j["alpha"] = alpha;
  j["bias"] = has_bias;
  j["side_input_scale"] = side_input_scale;
  j["activation"] = relu ? "relu" : "none";
  j["precision"] = std::string(PrecisionString(precision));
  return j.dump();
}

StatusOr<ConvConfig> ConvConfig::FromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("conv config is not a JSON object: ", text);
  ConvConfig c;
  auto get_int = [&](const char* key, int64_t& out) -> Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return InvalidArgument("conv config: missing integer '", key, "'");
    out = it->get<int64_t>();
    return OkStatus();
  };
  auto get_ints = [&](const char* key, std::vector<int64_t>& out) -> Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return InvalidArgument("conv config: missing list '", key, "'");
    out.clear();
    for (const auto& v : *it) {
      if (!v.is_number_integer()) return InvalidArgument("conv config: '", key, "' holds a non-integer");
      out.push_back(v.get<int64_t>());
    }
    return OkStatus();
  };
  auto layout = j.find("layout");
  if (layout == j.end() || !layout->is_string()) return InvalidArgument("conv config: missing 'layout'");
  if (*layout == "channels_last") c.channels_last = true;
  else if (*layout == "channels_first") c.channels_last = false;
  else return InvalidArgument("conv config: unknown layout ", layout->dump());
  if (auto it = j.find("kind"); it != j.end()) {
    if (*it == "forward") c.kind = ConvCallKind::kForward;
    else if (*it == "backward_data") c.kind = ConvCallKind::kBackwardData;
    else if (*it == "backward_filter") c.kind = ConvCallKind::kBackwardFilter;
    else return InvalidArgument("conv config: unknown kind ", it->dump());
  }
  KILN_RETURN_IF_ERROR(get_int("batch", c.batch));
  KILN_RETURN_IF_ERROR(get_int("input_features", c.input_features));
  KILN_RETURN_IF_ERROR(get_int("output_features", c.output_features));
  KILN_RETURN_IF_ERROR(get_ints("input_spatial", c.input_spatial));
  KILN_RETURN_IF_ERROR(get_ints("filter_spatial", c.filter_spatial));
  KILN_RETURN_IF_ERROR(get_ints("output_spatial", c.output_spatial));
  KILN_RETURN_IF_ERROR(get_ints("strides", c.strides));
  KILN_RETURN_IF_ERROR(get_ints("padding_low", c.padding_low));
  KILN_RETURN_IF_ERROR(get_ints("padding_high", c.padding_high));
  KILN_RETURN_IF_ERROR(get_ints("dilations", c.dilations));
  KILN_RETURN_IF_ERROR(get_int("feature_group_count", c.feature_group_count));
  if (auto it = j.find("alpha"); it != j.end() && it->is_number()) c.alpha = it->get<double>();
  if (auto it = j.find("bias"); it != j.end() && it->is_boolean()) c.has_bias = it->get<bool>();
  if (auto it = j.find("side_input_scale"); it != j.end() && it->is_number()) c.side_input_scale = it->get<double>();
  if (auto it = j.find("activation"); it != j.end() && it->is_string()) {
    if (*it == "relu") c.relu = true;
    else if (*it != "none") return InvalidArgument("conv config: unknown activation ", it->dump());
  }
  if (auto it = j.find("precision"); it != j.end() && it->is_string()) {
    std::string p = it->get<std::string>();
    c.precision = p == "highest" ? Precision::kHighest : p == "high" ? Precision::kHigh : Precision::kDefault;
  }
  const size_t n = c.input_spatial.size();
  if (n < 1 || n > 3 || c.filter_spatial.size() != n || c.output_spatial.size() != n || c.strides.size() != n ||
      c.padding_low.size() != n || c.padding_high.size() != n || c.dilations.size() != n)
    return InvalidArgument("conv config: spatial lists of different lengths (or not 1 to 3)");
  if (c.feature_group_count < 1 || c.input_features % c.feature_group_count != 0 ||
      c.output_features % c.feature_group_count != 0)
    return InvalidArgument("conv config: bad feature_group_count ", c.feature_group_count);
  if (c.kind != ConvCallKind::kForward && (c.has_bias || c.side_input_scale != 0 || c.relu || c.alpha != 1))
    return InvalidArgument("conv config: only forward convolutions fuse an epilogue");
  return c;
}

bool IsConvCall(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kCustomCall && instr.attrs().custom_call_target == kConvCallTarget;
}

StatusOr<ConvConfig> GetConvConfig(const HloInstruction& conv) {
  if (!IsConvCall(conv)) return InvalidArgument("%", conv.name(), " is not a convolution custom call");
  KILN_ASSIGN_OR_RETURN(ConvConfig c, ConvConfig::FromJson(conv.backend_config().text));
  if (conv.operand_count() != c.operand_count())
    return InvalidArgument("conv %", conv.name(), " has ", conv.operand_count(), " operands, its config wants ",
                           c.operand_count());
  if (conv.operand(0)->shape().dimensions() != c.Operand0Dims() ||
      conv.operand(1)->shape().dimensions() != c.Operand1Dims() || conv.shape().dimensions() != c.ResultDims())
    return InvalidArgument("conv %", conv.name(), ": shapes do not match its config ", c.ToJson());
  if (c.has_bias && conv.operand(c.bias_operand())->shape().dimensions() != std::vector<int64_t>{c.output_features})
    return InvalidArgument("conv %", conv.name(), ": bias must have ", c.output_features, " elements");
  if (c.side_operand() >= 0 && conv.operand(c.side_operand())->shape().dimensions() != c.OutputDims())
    return InvalidArgument("conv %", conv.name(), ": side input must have the output's shape");
  return c;
}

}  // namespace kiln::cuda
