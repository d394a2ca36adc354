#include "kiln/autotune/backend.h"

#include "kiln/base/strings.h"
#include "kiln/hlo/opcode.h"

namespace kiln::autotune {

Status BackendFactoryRegistry::Register(std::string platform, BackendFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, f] : factories_) {
    if (name == platform) return AlreadyExists("an autotuning factory for '", platform, "' exists");
  }
  factories_.emplace_back(std::move(platform), std::move(factory));
  return OkStatus();
}

StatusOr<BackendFactory> BackendFactoryRegistry::Get(std::string_view platform) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, f] : factories_) {
    if (name == platform) return f;
  }
  std::vector<std::string> names;
  for (const auto& [name, f] : factories_) names.push_back(name);
  return NotFound("no autotuning backends for platform '", platform, "' (have: ",
                  names.empty() ? std::string("none") : StrJoin(names, ", "), ")");
}

std::vector<std::string> BackendFactoryRegistry::platforms() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, f] : factories_) names.push_back(name);
  return names;
}

std::string InstructionKind(const HloInstruction& instr) {
  std::string kind(HloOpcodeString(instr.opcode()));
  if (instr.opcode() == HloOpcode::kCustomCall) kind += ":" + instr.attrs().custom_call_target;
  return kind;
}

Status WriteConfigToBackendConfig(HloInstruction& instr, const Config& config) {
  nlohmann::json j = nlohmann::json::object();
  BackendConfig& bc = instr.backend_config();
  if (!bc.empty()) {
    auto parsed = ParseJson(bc.text, "backend_config");
    // A non-JSON backend_config (XLA's proto text) is not ours to merge into: replace it.
    if (parsed.ok() && parsed->is_object()) j = std::move(parsed).value();
  }
  j["autotune"] = config.ToJson();
  bc.text = j.dump();
  bc.is_json = true;
  return OkStatus();
}

StatusOr<Config> ReadConfigFromBackendConfig(const HloInstruction& instr) {
  const BackendConfig& bc = instr.backend_config();
  if (bc.empty()) return NotFound(instr.name(), " has no backend_config");
  KILN_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(bc.text, "backend_config"));
  if (!j.is_object() || !j.contains("autotune")) {
    return NotFound(instr.name(), "'s backend_config holds no autotuning choice");
  }
  return Config::FromJson(j["autotune"]);
}

}  // namespace kiln::autotune
