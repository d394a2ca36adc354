#include "kiln/cuda/compiler/gemm_config.h"

#include <nlohmann/json.hpp>

#include "kiln/base/strings.h"

namespace kiln::cuda {

std::string_view GemmActivationName(GemmActivation a) {
  switch (a) {
    case GemmActivation::kNone: return "none";
    case GemmActivation::kRelu: return "relu";
    case GemmActivation::kGelu: return "gelu";
  }
  return "?";
}

std::string GemmConfig::ToJson() const {
  nlohmann::ordered_json j;
  j["batch"] = batch;
  j["m"] = m;
  j["n"] = n;
  j["k"] = k;
  j["lhs_transposed"] = lhs_transposed;
  j["rhs_transposed"] = rhs_transposed;
  if (lhs_broadcast) j["lhs_broadcast"] = true;
  if (rhs_broadcast) j["rhs_broadcast"] = true;
  j["alpha"] = alpha;
  j["beta"] = beta;
  j["bias"] = has_bias;
  j["activation"] = std::string(GemmActivationName(activation));
  j["precision"] = std::string(PrecisionString(precision));
  return j.dump();
}

StatusOr<GemmConfig> GemmConfig::FromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("gemm config is not a JSON object: ", text);
  GemmConfig c;
  auto get_int = [&](const char* key, int64_t& out) -> Status {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return InvalidArgument("gemm config: missing integer '", key, "'");
    out = it->get<int64_t>();
    return OkStatus();
  };
  auto get_bool = [&](const char* key, bool& out) {
    auto it = j.find(key);
    if (it != j.end() && it->is_boolean()) out = it->get<bool>();
  };
  auto get_double = [&](const char* key, double& out) {
    auto it = j.find(key);
    if (it != j.end() && it->is_number()) out = it->get<double>();
  };
  KILN_RETURN_IF_ERROR(get_int("batch", c.batch));
  KILN_RETURN_IF_ERROR(get_int("m", c.m));
  KILN_RETURN_IF_ERROR(get_int("n", c.n));
  KILN_RETURN_IF_ERROR(get_int("k", c.k));
  get_bool("lhs_transposed", c.lhs_transposed);
  get_bool("rhs_transposed", c.rhs_transposed);
  get_bool("lhs_broadcast", c.lhs_broadcast);
  get_bool("rhs_broadcast", c.rhs_broadcast);
  get_double("alpha", c.alpha);
  get_double("beta", c.beta);
  get_bool("bias", c.has_bias);
  auto act = j.find("activation");
  if (act != j.end() && act->is_string()) {
    std::string a = act->get<std::string>();
    if (a == "none") c.activation = GemmActivation::kNone;
    else if (a == "relu") c.activation = GemmActivation::kRelu;
    else if (a == "gelu") c.activation = GemmActivation::kGelu;
    else return InvalidArgument("gemm config: unknown activation '", a, "'");
  }
  auto prec = j.find("precision");
  if (prec != j.end() && prec->is_string()) {
    std::string p = prec->get<std::string>();
    if (p == "default") c.precision = Precision::kDefault;
    else if (p == "high") c.precision = Precision::kHigh;
    else if (p == "highest") c.precision = Precision::kHighest;
    else return InvalidArgument("gemm config: unknown precision '", p, "'");
  }
  if (c.batch < 1 || c.m < 0 || c.n < 0 || c.k < 0)
    return InvalidArgument("gemm config: bad sizes batch=", c.batch, " m=", c.m, " n=", c.n, " k=", c.k);
  return c;
}

bool IsGemmCall(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kCustomCall && instr.attrs().custom_call_target == kGemmCallTarget;
}

StatusOr<GemmConfig> GetGemmConfig(const HloInstruction& gemm) {
  if (!IsGemmCall(gemm)) return InvalidArgument("%", gemm.name(), " is not a gemm custom call");
  KILN_ASSIGN_OR_RETURN(GemmConfig c, GemmConfig::FromJson(gemm.backend_config().text));
  if (gemm.operand_count() != c.operand_count())
    return InvalidArgument("gemm %", gemm.name(), " has ", gemm.operand_count(), " operands, its config wants ",
                           c.operand_count());
  auto elements = [](const HloInstruction* i) { return i->shape().IsArray() ? i->shape().num_elements() : -1; };
  const int64_t lhs = (c.lhs_broadcast ? 1 : c.batch) * c.m * c.k;
  const int64_t rhs = (c.rhs_broadcast ? 1 : c.batch) * c.k * c.n;
  const int64_t out = c.batch * c.m * c.n;
  if (elements(gemm.operand(0)) != lhs || elements(gemm.operand(1)) != rhs || elements(&gemm) != out)
    return InvalidArgument("gemm %", gemm.name(), ": operand/result sizes do not match its config ", c.ToJson());
  if (c.c_operand() >= 0 && elements(gemm.operand(c.c_operand())) != out)
    return InvalidArgument("gemm %", gemm.name(), ": c has the wrong size");
  if (c.bias_operand() >= 0 && elements(gemm.operand(c.bias_operand())) != c.n)
    return InvalidArgument("gemm %", gemm.name(), ": bias has the wrong size");
  return c;
}

}  // namespace kiln::cuda
