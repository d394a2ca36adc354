// Cache: autotuning results on disk, one JSON file per entry, shared by processes and machines.
//
// Layout: <directory>/<CacheKey::Hash()>.json, each file one entry:
//   {"format": "kiln-autotune-entry",
//    "key": {"device": {...}, "backends": [[name, version], ...], "selection": "fastest",
//            "instruction": "<fingerprint>", "version": 1},
//    "instruction": {"kind": "dot", "text": "<canonical HLO of the instruction>"},
//    "result": {"config": {"backend": ..., "params": {...}}, "time_us": 12.5, ...},
//    "created": "2025-01-01T00:00:00Z"}
// (docs/autotune.md describes every field.) The default directory is <DiskCache::DefaultRoot()>
// /autotune: the process's default cache root (the `kiln` tool's KILN_CACHE_DIR), else
// $XDG_CACHE_HOME/kiln/autotune, else ~/.cache/kiln/autotune.
//
// Writes go to a temporary file in the same directory and are renamed into place, so readers
// see a whole entry or none, and several processes storing at once lose nothing (two writers of
// one key each leave a complete entry; the later rename wins). A file that does not parse, holds
// another key than its name says, or was written by another kiln cache version is ignored: the
// first such file per Cache logs one warning, later ones are only counted (stats().invalid);
// tuning the instruction again replaces the file.
//
// The cache is an optimization: a Lookup that cannot read a file is a miss; a Store that fails
// returns its status for the caller to report once and carry on.
//
// Thread safety: all methods may be called concurrently, also from several processes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/autotune/cache_key.h"
#include "kiln/autotune/config.h"
#include "kiln/base/status.h"

namespace kiln::autotune {

enum class CacheMode {
  kOff,              // neither read nor written
  kReadOnly,         // hits are used; results of tuning are not stored
  kReadWrite,        // the default
  kRequireComplete,  // read only, and an instruction missing from the cache is an error
                     // (compiling without a GPU from a shared cache)
};
// "off", "read-only", "read-write", "require-complete".
std::string_view CacheModeName(CacheMode mode);
StatusOr<CacheMode> ParseCacheMode(std::string_view name);

// What tuning decided for one instruction.
struct CacheResult {
  Config config;              // the chosen config
  double time_us = 0;         // its median time (0 = not measured)
  uint64_t scratch_bytes = 0;
  std::optional<Config> runner_up;  // the next best valid config, if any
  double runner_up_us = 0;
  double default_us = 0;      // the default config's time (0 = not measured or invalid)
  int candidates = 0;         // configs tried
  int valid = 0;              // of which valid
  bool exhaustive = false;    // tuned with `--autotune exhaustive`

  nlohmann::json ToJson() const;
  static StatusOr<CacheResult> FromJson(const nlohmann::json& j);
};

struct CacheEntry {
  CacheKey key;
  std::string kind;              // InstructionKind
  std::string instruction_text;  // canonical HLO text, for people reading the cache
  CacheResult result;
  std::string created;           // UTC, ISO 8601; filled by Store when empty

  nlohmann::json ToJson() const;
  // InvalidArgument for anything malformed; FailedPrecondition for an entry of another cache
  // version (a "foreign" entry).
  static StatusOr<CacheEntry> FromJson(const nlohmann::json& j);
};

struct CacheOptions {
  // Empty (default): DefaultAutotuneCacheDir().
  std::string directory;
  CacheMode mode = CacheMode::kReadWrite;
};

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t invalid = 0;  // files ignored as corrupt or foreign
  uint64_t stores = 0;
};

// `kiln cache list`'s view: valid entries by file name, and the files that are not.
struct CacheListing {
  std::vector<std::pair<std::string, CacheEntry>> entries;   // (path, entry)
  std::vector<std::pair<std::string, std::string>> invalid;  // (path, why)
};

struct CacheImportStats {
  int imported = 0;   // written (new or replacing)
  int unchanged = 0;  // already present with the same result
  int invalid = 0;    // malformed or foreign, skipped
};

class Cache {
 public:
  // Creates the directory in writable modes (FailedPrecondition when it cannot); in the read
  // modes a missing directory is an empty cache.
  static StatusOr<std::unique_ptr<Cache>> Create(const CacheOptions& options);

  CacheMode mode() const { return mode_; }
  bool readable() const { return mode_ != CacheMode::kOff; }
  bool writable() const { return mode_ == CacheMode::kReadWrite; }
  const std::string& directory() const { return directory_; }
  std::string PathForKey(const CacheKey& key) const;

  // The entry stored for `key`, or nullopt (miss, unreadable or invalid file, mode off).
  std::optional<CacheEntry> Lookup(const CacheKey& key);
  // Writes the entry atomically. FailedPrecondition unless writable(); the write's error
  // otherwise. Ignores the mode when `force` (import, which the user asked for explicitly).
  Status Store(const CacheEntry& entry, bool force = false);

  // Every file in the directory. Never logs; invalid files are listed with the reason.
  StatusOr<CacheListing> List() const;
  // The valid entry whose key hash starts with `hash_prefix` (at least 4 hex digits);
  // NotFound, or InvalidArgument when the prefix is ambiguous.
  StatusOr<std::pair<std::string, CacheEntry>> Find(std::string_view hash_prefix) const;
  // {"format": "kiln-autotune-export", "version": N, "entries": [...]} of every valid entry.
  StatusOr<nlohmann::json> Export() const;
  // Stores the entries of an export (or a single entry) whatever the mode; entries of another
  // cache version or malformed ones are counted and skipped.
  StatusOr<CacheImportStats> Import(const nlohmann::json& exported);
  // Removes every entry file (valid or not) and leftover temporary files; other files stay.
  // Returns how many files were removed.
  StatusOr<int> Clear();

  CacheStats stats() const;

 private:
  Cache(std::string directory, CacheMode mode) : directory_(std::move(directory)), mode_(mode) {}
  // Parses the file at `path`; `expected_hash` (the file's stem) must match the key's hash.
  static StatusOr<CacheEntry> ReadEntry(const std::string& path, std::string_view expected_hash);
  void NoteInvalid(const std::string& path, const Status& why);

  std::string directory_;
  CacheMode mode_;
  std::atomic<bool> warned_{false};
  std::atomic<uint64_t> hits_{0}, misses_{0}, invalid_{0}, stores_{0};
};

// runtime::DiskCache::DefaultRoot() + "/autotune": the process's default cache root
// (DiskCache::SetDefaultRoot; the `kiln` tool's KILN_CACHE_DIR), else
// $XDG_CACHE_HOME/kiln/autotune, else ~/.cache/kiln/autotune.
std::string DefaultAutotuneCacheDir();

}  // namespace kiln::autotune
