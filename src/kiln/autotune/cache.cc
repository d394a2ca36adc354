#include "kiln/autotune/cache.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/runtime/disk_cache.h"

namespace kiln::autotune {

namespace fs = std::filesystem;

namespace {

constexpr char kEntryFormat[] = "kiln-autotune-entry";
constexpr char kExportFormat[] = "kiln-autotune-export";

bool IsHexStem(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// An entry file: "<64 hex>.json".
bool IsEntryFileName(const std::string& name) {
  return EndsWith(name, ".json") && IsHexStem(std::string_view(name).substr(0, name.size() - 5));
}

// A temporary file WriteFileAtomically leaves behind when its process dies mid-write:
// "<64 hex>.json.tmp.<pid>.<thread>.<n>".
bool IsTempFileName(const std::string& name) {
  size_t pos = name.find(".json.tmp.");
  return pos == 64 && IsHexStem(std::string_view(name).substr(0, 64));
}

std::string NowUtc() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open ", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return DataLoss("error reading ", path);
  return ss.str();
}

// Reads a number field, or InvalidArgument.
StatusOr<double> Number(const nlohmann::json& j, const char* field) {
  if (!j.contains(field)) return 0.0;
  if (!j[field].is_number()) return InvalidArgument("result field '", field, "' is not a number");
  return j[field].get<double>();
}

}  // namespace

std::string_view CacheModeName(CacheMode mode) {
  switch (mode) {
    case CacheMode::kOff: return "off";
    case CacheMode::kReadOnly: return "read-only";
    case CacheMode::kReadWrite: return "read-write";
    case CacheMode::kRequireComplete: return "require-complete";
  }
  return "?";
}

StatusOr<CacheMode> ParseCacheMode(std::string_view name) {
  for (CacheMode m : {CacheMode::kOff, CacheMode::kReadOnly, CacheMode::kReadWrite,
                      CacheMode::kRequireComplete}) {
    if (CacheModeName(m) == name) return m;
  }
  return InvalidArgument("unknown autotune cache mode '", name,
                         "' (expected off, read-only, read-write or require-complete)");
}

nlohmann::json CacheResult::ToJson() const {
  nlohmann::json j = {{"config", config.ToJson()},
                      {"time_us", time_us},
                      {"scratch_bytes", scratch_bytes},
                      {"default_us", default_us},
                      {"candidates", candidates},
                      {"valid", valid},
                      {"exhaustive", exhaustive}};
  if (runner_up) {
    j["runner_up"] = runner_up->ToJson();
    j["runner_up_us"] = runner_up_us;
  }
  return j;
}

StatusOr<CacheResult> CacheResult::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("config")) return InvalidArgument("result has no config");
  CacheResult r;
  KILN_ASSIGN_OR_RETURN(r.config, Config::FromJson(j["config"]));
  KILN_ASSIGN_OR_RETURN(r.time_us, Number(j, "time_us"));
  KILN_ASSIGN_OR_RETURN(double scratch, Number(j, "scratch_bytes"));
  r.scratch_bytes = static_cast<uint64_t>(scratch);
  KILN_ASSIGN_OR_RETURN(r.default_us, Number(j, "default_us"));
  KILN_ASSIGN_OR_RETURN(double candidates, Number(j, "candidates"));
  r.candidates = static_cast<int>(candidates);
  KILN_ASSIGN_OR_RETURN(double valid, Number(j, "valid"));
  r.valid = static_cast<int>(valid);
  r.exhaustive = j.value("exhaustive", false);
  if (j.contains("runner_up")) {
    KILN_ASSIGN_OR_RETURN(Config runner_up, Config::FromJson(j["runner_up"]));
    r.runner_up = std::move(runner_up);
    KILN_ASSIGN_OR_RETURN(r.runner_up_us, Number(j, "runner_up_us"));
  }
  return r;
}

nlohmann::json CacheEntry::ToJson() const {
  return {{"format", kEntryFormat},
          {"key", key.ToJson()},
          {"instruction", {{"kind", kind}, {"text", instruction_text}}},
          {"result", result.ToJson()},
          {"created", created}};
}

StatusOr<CacheEntry> CacheEntry::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || j.value("format", std::string()) != kEntryFormat) {
    return InvalidArgument("not a kiln autotuning entry (format is not \"", kEntryFormat, "\")");
  }
  CacheEntry e;
  KILN_ASSIGN_OR_RETURN(e.key, CacheKey::FromJson(j.value("key", nlohmann::json())));
  if (e.key.version != kAutotuneCacheVersion) {
    return FailedPrecondition("written by kiln autotune cache version ", e.key.version,
                              ", this kiln uses version ", kAutotuneCacheVersion);
  }
  if (j.contains("instruction") && j["instruction"].is_object()) {
    e.kind = j["instruction"].value("kind", std::string());
    e.instruction_text = j["instruction"].value("text", std::string());
  }
  KILN_ASSIGN_OR_RETURN(e.result, CacheResult::FromJson(j.value("result", nlohmann::json())));
  e.created = j.value("created", std::string());
  return e;
}

StatusOr<std::unique_ptr<Cache>> Cache::Create(const CacheOptions& options) {
  std::string directory = options.directory.empty() ? DefaultAutotuneCacheDir() : options.directory;
  if (options.mode == CacheMode::kReadWrite) {
    std::error_code ec;
    fs::create_directories(directory, ec);
    if (ec || !fs::is_directory(directory)) {
      return FailedPrecondition("cannot create autotune cache directory ", directory, ": ",
                                ec ? ec.message() : std::string("not a directory"),
                                " (pass --autotune-cache DIR or set KILN_CACHE_DIR)");
    }
  }
  return std::unique_ptr<Cache>(new Cache(std::move(directory), options.mode));
}

std::string Cache::PathForKey(const CacheKey& key) const {
  return StrCat(directory_, "/", key.Hash(), ".json");
}

StatusOr<CacheEntry> Cache::ReadEntry(const std::string& path, std::string_view expected_hash) {
  KILN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  KILN_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(text, "entry"));
  KILN_ASSIGN_OR_RETURN(CacheEntry entry, CacheEntry::FromJson(j));
  if (entry.key.Hash() != expected_hash) {
    return InvalidArgument("its key hashes to ", entry.key.Hash().substr(0, 16),
                           "..., not to its file name");
  }
  return entry;
}

void Cache::NoteInvalid(const std::string& path, const Status& why) {
  ++invalid_;
  if (!warned_.exchange(true)) {
    KILN_LOG(Warning) << "autotune cache: ignoring " << path << ": " << why.message()
                      << " (tuning again replaces it; further bad entries are only counted)";
  }
}

std::optional<CacheEntry> Cache::Lookup(const CacheKey& key) {
  if (!readable()) return std::nullopt;
  std::string hash = key.Hash();
  std::string path = StrCat(directory_, "/", hash, ".json");
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    ++misses_;
    return std::nullopt;
  }
  StatusOr<CacheEntry> entry = ReadEntry(path, hash);
  if (!entry.ok()) {
    if (entry.status().code() != StatusCode::kNotFound) NoteInvalid(path, entry.status());
    ++misses_;
    return std::nullopt;
  }
  if (!(entry->key == key)) {
    // Same hash, different key: a hand-edited file (SHA-256 does not collide by accident).
    NoteInvalid(path, InvalidArgument("it holds a different key than its name says"));
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  return std::move(entry).value();
}

Status Cache::Store(const CacheEntry& entry, bool force) {
  if (!force && !writable()) {
    return FailedPrecondition("the autotune cache is ", CacheModeName(mode_));
  }
  if (force) {
    std::error_code ec;
    fs::create_directories(directory_, ec);
    if (ec) return FailedPrecondition("cannot create ", directory_, ": ", ec.message());
  }
  CacheEntry copy = entry;
  if (copy.created.empty()) copy.created = NowUtc();
  KILN_RETURN_IF_ERROR(
      runtime::WriteFileAtomically(PathForKey(copy.key), copy.ToJson().dump(1) + "\n"));
  ++stores_;
  return OkStatus();
}

StatusOr<CacheListing> Cache::List() const {
  CacheListing listing;
  std::error_code ec;
  if (!fs::is_directory(directory_, ec)) return listing;  // nothing stored yet
  std::vector<std::string> names;
  for (const auto& de : fs::directory_iterator(directory_, ec)) {
    std::string name = de.path().filename().string();
    if (IsEntryFileName(name)) names.push_back(name);
  }
  if (ec) return FailedPrecondition("cannot list ", directory_, ": ", ec.message());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::string path = StrCat(directory_, "/", name);
    StatusOr<CacheEntry> entry = ReadEntry(path, name.substr(0, 64));
    if (entry.ok()) {
      listing.entries.emplace_back(path, std::move(entry).value());
    } else if (entry.status().code() != StatusCode::kNotFound) {  // not removed meanwhile
      listing.invalid.emplace_back(path, entry.status().message());
    }
  }
  return listing;
}

StatusOr<std::pair<std::string, CacheEntry>> Cache::Find(std::string_view hash_prefix) const {
  if (hash_prefix.size() < 4) {
    return InvalidArgument("give at least 4 hex digits of the key (see `kiln cache list`)");
  }
  KILN_ASSIGN_OR_RETURN(CacheListing listing, List());
  std::vector<size_t> matches;
  for (size_t i = 0; i < listing.entries.size(); ++i) {
    if (StartsWith(listing.entries[i].second.key.Hash(), hash_prefix)) matches.push_back(i);
  }
  if (matches.empty()) {
    return NotFound("no valid autotune cache entry ", hash_prefix, " in ", directory_);
  }
  if (matches.size() > 1) {
    return InvalidArgument("key prefix ", hash_prefix, " matches ", matches.size(),
                           " entries; give more digits");
  }
  return std::move(listing.entries[matches[0]]);
}

StatusOr<nlohmann::json> Cache::Export() const {
  KILN_ASSIGN_OR_RETURN(CacheListing listing, List());
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [path, entry] : listing.entries) entries.push_back(entry.ToJson());
  return nlohmann::json{
      {"format", kExportFormat}, {"version", kAutotuneCacheVersion}, {"entries", entries}};
}

StatusOr<CacheImportStats> Cache::Import(const nlohmann::json& exported) {
  std::vector<nlohmann::json> items;
  if (exported.is_object() && exported.value("format", std::string()) == kExportFormat) {
    if (!exported.contains("entries") || !exported["entries"].is_array()) {
      return InvalidArgument("export file has no \"entries\" array");
    }
    for (const auto& e : exported["entries"]) items.push_back(e);
  } else if (exported.is_object() && exported.value("format", std::string()) == kEntryFormat) {
    items.push_back(exported);
  } else {
    return InvalidArgument("not a kiln autotune export (format is neither \"", kExportFormat,
                           "\" nor \"", kEntryFormat, "\")");
  }
  CacheImportStats stats;
  for (const nlohmann::json& item : items) {
    StatusOr<CacheEntry> entry = CacheEntry::FromJson(item);
    if (!entry.ok()) {
      ++stats.invalid;
      continue;
    }
    std::string hash = entry->key.Hash();
    StatusOr<CacheEntry> existing = ReadEntry(StrCat(directory_, "/", hash, ".json"), hash);
    if (existing.ok() && existing->result.ToJson() == entry->result.ToJson()) {
      ++stats.unchanged;
      continue;
    }
    KILN_RETURN_IF_ERROR(Store(*entry, /*force=*/true));
    ++stats.imported;
  }
  return stats;
}

StatusOr<int> Cache::Clear() {
  std::error_code ec;
  if (!fs::is_directory(directory_, ec)) return 0;
  int removed = 0;
  std::vector<fs::path> doomed;
  for (const auto& de : fs::directory_iterator(directory_, ec)) {
    std::string name = de.path().filename().string();
    if (IsEntryFileName(name) || IsTempFileName(name)) doomed.push_back(de.path());
  }
  if (ec) return FailedPrecondition("cannot list ", directory_, ": ", ec.message());
  for (const fs::path& p : doomed) {
    if (fs::remove(p, ec)) ++removed;
    if (ec) return FailedPrecondition("cannot remove ", p.string(), ": ", ec.message());
  }
  return removed;
}

CacheStats Cache::stats() const {
  return CacheStats{hits_.load(), misses_.load(), invalid_.load(), stores_.load()};
}

std::string DefaultAutotuneCacheDir() { return runtime::DiskCache::DefaultRoot() + "/autotune"; }

}  // namespace kiln::autotune
