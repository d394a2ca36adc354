#include "kiln/autotune/config.h"

namespace kiln::autotune {

std::string Config::ToString() const {
  if (params_.is_null() || (params_.is_object() && params_.empty())) return backend_;
  // nlohmann::json keeps object keys in a std::map: dump() is already canonical.
  return backend_ + " " + params_.dump();
}

nlohmann::json Config::ToJson() const {
  return nlohmann::json{{"backend", backend_}, {"params", params_}};
}

StatusOr<Config> Config::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("backend") || !j["backend"].is_string()) {
    return InvalidArgument("a config is {\"backend\": NAME, \"params\": {...}}, found ", j.dump());
  }
  nlohmann::json params = j.contains("params") ? j["params"] : nlohmann::json::object();
  return Config(j["backend"].get<std::string>(), std::move(params));
}

StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument(what, ": not valid JSON (byte ", e.byte, "): ", e.what());
  }
}

}  // namespace kiln::autotune
