// Config: one implementation choice of one backend for one instruction ("cuBLASLt algorithm 7
// with a 4 MiB workspace", "block 256, vector width 4"), typed where a backend uses it and plain
// JSON everywhere else (the cache, `kiln tune --dump`, the module's backend_config).
//
// A backend defines its parameters as a struct with nlohmann-json conversions and moves between
// the two forms with Config::From / Config::As:
//
//   struct TileConfig {
//     int tile_m = 64, tile_n = 64;
//     NLOHMANN_DEFINE_TYPE_INTRUSIVE(TileConfig, tile_m, tile_n)
//   };
//   Config c = Config::From("host_gemm", TileConfig{32, 64});
//   KILN_ASSIGN_OR_RETURN(TileConfig t, c.As<TileConfig>());   // InvalidArgument if malformed
//
// Two configs are equal when their backends are equal and their JSON values are equal;
// ToString() is canonical (object keys sorted), so it also serves as an identity in logs, the
// cache and tests.
#pragma once

#include <concepts>
#include <exception>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "kiln/base/status.h"

namespace kiln::autotune {

// A backend's typed parameters: convertible to and from JSON through nlohmann-json's ADL
// to_json/from_json (NLOHMANN_DEFINE_TYPE_* or hand-written).
template <typename T>
concept JsonConfig = std::default_initializable<T> && requires(const T& t, nlohmann::json& j) {
  { nlohmann::json(t) };
  { j.get<T>() } -> std::same_as<T>;
};

class Config {
 public:
  Config() = default;
  Config(std::string backend, nlohmann::json params)
      : backend_(std::move(backend)), params_(std::move(params)) {}

  template <JsonConfig T>
  static Config From(std::string backend, const T& typed) {
    return Config(std::move(backend), nlohmann::json(typed));
  }

  // The parameters as the backend's type; InvalidArgument naming the config when they do not
  // convert (a hand-edited cache entry, a config of another backend version).
  template <JsonConfig T>
  StatusOr<T> As() const {
    try {
      return params_.get<T>();
    } catch (const std::exception& e) {
      return InvalidArgument("malformed ", backend_, " config ", params_.dump(), ": ", e.what());
    }
  }

  const std::string& backend() const { return backend_; }
  const nlohmann::json& params() const { return params_; }

  // "backend {params}" with params as compact JSON, keys sorted; "backend" when params are
  // null or empty.
  std::string ToString() const;

  // {"backend": ..., "params": ...}
  nlohmann::json ToJson() const;
  // Inverse of ToJson; InvalidArgument when `j` is not of that form.
  static StatusOr<Config> FromJson(const nlohmann::json& j);

  friend bool operator==(const Config& a, const Config& b) {
    return a.backend_ == b.backend_ && a.params_ == b.params_;
  }

 private:
  std::string backend_;
  nlohmann::json params_;
};

// Parses JSON text without exceptions; InvalidArgument saying where it failed. `what` names
// the text in the message ("cache entry /x/y.json").
StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what);

}  // namespace kiln::autotune
