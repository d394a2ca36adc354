// DiskCache: a persistent key → bytes store, one file per entry, safe across processes.
//
// Layout (see "Cache layout" in docs/runtime.md):
//   <root>/<namespace>/<first two hex digits>/<64 hex digits of SHA-256(key)>.bin
// where <root> is DiskCacheOptions::root, else the process's default root (SetDefaultRoot; the
// `kiln` tool sets it from KILN_CACHE_DIR), else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln.
// Each file holds
//   magic "KILNDC01" | u32 format version | u64 key size | key | u64 value size | value |
//   SHA-256(key ‖ value)
// (integers little-endian). Entries are written to a temporary file in the same directory and
// renamed into place, so readers see either the whole old entry, the whole new one, or none.
// A read that finds a short file, a bad magic, a key that differs from the one asked for, or a
// checksum mismatch counts it as corrupted, deletes it and reports a miss; the next Store
// replaces it.
//
// The cache is an optimization: Lookup/Store errors (unwritable directory, full disk) are
// returned as statuses, and callers are expected to carry on without the cache.
//
// Thread safety: all methods may be called concurrently, also from several processes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/base/status.h"

namespace kiln::runtime {

struct DiskCacheOptions {
  // Root directory; empty (default): DiskCache::DefaultRoot().
  std::string root;
  // Subdirectory for one kind of entry ("nvrtc", "autotune"). Required.
  std::string name_space;
};

struct DiskCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t corrupted = 0;  // entries found damaged and removed
  uint64_t stores = 0;
};

class DiskCache {
 public:
  // Creates the directory if needed; FailedPrecondition when it cannot be created.
  static StatusOr<std::unique_ptr<DiskCache>> Create(const DiskCacheOptions& options);

  // The stored value, or nullopt on a miss (including a corrupted entry, which is removed).
  StatusOr<std::optional<std::string>> Lookup(std::string_view key);
  // Stores (or replaces) the entry atomically.
  Status Store(std::string_view key, std::string_view value);
  // Removes the entry if present.
  Status Remove(std::string_view key);

  // The file an entry lives in (whether or not it exists).
  std::string PathForKey(std::string_view key) const;
  const std::string& directory() const { return directory_; }
  DiskCacheStats stats() const;

  // The root the default options resolve to: SetDefaultRoot's, else $XDG_CACHE_HOME/kiln,
  // else $HOME/.cache/kiln, else /tmp/kiln-cache.
  static std::string DefaultRoot();
  // Sets the process-wide default root of every kiln cache (autotuning, NVRTC kernels) that is
  // not given a directory of its own; empty (the initial value) restores the platform default
  // above. Caches already created keep their directory. Thread-safe.
  static void SetDefaultRoot(std::string root);

 private:
  explicit DiskCache(std::string directory) : directory_(std::move(directory)) {}

  std::string directory_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, corrupted_{0}, stores_{0};
};

// Writes `contents` to `path` atomically (temporary file in the same directory + rename).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace kiln::runtime
