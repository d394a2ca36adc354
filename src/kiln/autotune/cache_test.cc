#include "kiln/autotune/cache.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "kiln/autotune/testing/test_util.h"
#include "kiln/base/fingerprint.h"
#include "kiln/runtime/disk_cache.h"

namespace kiln::autotune {
namespace {

namespace fs = std::filesystem;
using testing::ScopedTempDir;

CacheKey Key(int i) {
  CacheKey key;
  key.device = {{"platform", "cuda"}, {"name", "NVIDIA H200"}, {"compute_capability", "9.0"}};
  key.backends = {{"cublaslt", "13.0"}};
  key.instruction = Sha256Hex("instruction " + std::to_string(i));
  return key;
}

CacheEntry Entry(int i, int algo = 0) {
  CacheEntry e;
  e.key = Key(i);
  e.kind = "dot";
  e.instruction_text = "f32[64,64]{1,0} dot(...)";
  e.result.config = Config("cublaslt", {{"algo", algo}});
  e.result.time_us = 10 + i;
  e.result.runner_up = Config("cublaslt", {{"algo", algo + 1}});
  e.result.runner_up_us = 12 + i;
  e.result.default_us = 20;
  e.result.candidates = 8;
  e.result.valid = 7;
  return e;
}

std::unique_ptr<Cache> Open(const std::string& dir, CacheMode mode = CacheMode::kReadWrite) {
  auto cache = Cache::Create({.directory = dir, .mode = mode});
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  return cache.ok() ? std::move(cache).value() : nullptr;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> FileNames(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& de : fs::directory_iterator(dir)) names.push_back(de.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CacheTest, StoreThenLookup) {
  ScopedTempDir dir;
  auto cache = Open(dir.path() + "/autotune");  // created on demand
  ASSERT_NE(cache, nullptr);
  EXPECT_FALSE(cache->Lookup(Key(1)).has_value());
  KILN_ASSERT_OK(cache->Store(Entry(1, 5)));
  std::optional<CacheEntry> hit = cache->Lookup(Key(1));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->result.config, Config("cublaslt", {{"algo", 5}}));
  EXPECT_EQ(hit->result.time_us, 11);
  ASSERT_TRUE(hit->result.runner_up.has_value());
  EXPECT_EQ(hit->result.runner_up->params()["algo"], 6);
  EXPECT_EQ(hit->kind, "dot");
  EXPECT_FALSE(hit->created.empty());
  EXPECT_FALSE(cache->Lookup(Key(2)).has_value());
  EXPECT_EQ(cache->stats().hits, 1u);
  EXPECT_EQ(cache->stats().misses, 2u);
  EXPECT_EQ(cache->stats().stores, 1u);
  // One file, named by the key's hash.
  EXPECT_EQ(FileNames(cache->directory()), std::vector<std::string>{Key(1).Hash() + ".json"});
}

TEST(CacheTest, Modes) {
  ScopedTempDir dir;
  auto rw = Open(dir.path());
  KILN_ASSERT_OK(rw->Store(Entry(1)));
  auto ro = Open(dir.path(), CacheMode::kReadOnly);
  EXPECT_TRUE(ro->Lookup(Key(1)).has_value());
  EXPECT_EQ(ro->Store(Entry(2)).code(), StatusCode::kFailedPrecondition);
  auto rc = Open(dir.path(), CacheMode::kRequireComplete);
  EXPECT_TRUE(rc->Lookup(Key(1)).has_value());
  EXPECT_FALSE(rc->writable());
  auto off = Open(dir.path(), CacheMode::kOff);
  EXPECT_FALSE(off->Lookup(Key(1)).has_value());
  EXPECT_FALSE(off->Store(Entry(2)).ok());
  // A read-only cache over a directory that does not exist is empty, and creates nothing.
  auto missing = Open(dir.path() + "/nope", CacheMode::kReadOnly);
  EXPECT_FALSE(missing->Lookup(Key(1)).has_value());
  EXPECT_FALSE(fs::exists(dir.path() + "/nope"));

  for (CacheMode m : {CacheMode::kOff, CacheMode::kReadOnly, CacheMode::kReadWrite,
                      CacheMode::kRequireComplete}) {
    KILN_ASSERT_OK_AND_ASSIGN(CacheMode parsed, ParseCacheMode(CacheModeName(m)));
    EXPECT_EQ(parsed, m);
  }
  EXPECT_FALSE(ParseCacheMode("sometimes").ok());
}

TEST(CacheTest, CorruptAndForeignEntriesAreIgnoredWithOneWarningAndReplaced) {
  ScopedTempDir dir;
  auto cache = Open(dir.path());
  const std::string p1 = cache->PathForKey(Key(1));
  const std::string p2 = cache->PathForKey(Key(2));
  const std::string p3 = cache->PathForKey(Key(3));
  const std::string p4 = cache->PathForKey(Key(4));
  WriteText(p1, "{ this is not json");
  nlohmann::json foreign = Entry(2).ToJson();
  foreign["key"]["version"] = kAutotuneCacheVersion + 7;
  WriteText(p2, foreign.dump());
  WriteText(p3, Entry(99).ToJson().dump());  // a valid entry under the wrong name
  WriteText(p4, "");                         // truncated to nothing

  ::testing::internal::CaptureStderr();
  for (int i : {1, 2, 3, 4, 1}) EXPECT_FALSE(cache->Lookup(Key(i)).has_value()) << i;
  std::string err = ::testing::internal::GetCapturedStderr();
  size_t warnings = 0;
  for (size_t at = 0; (at = err.find("ignoring", at)) != std::string::npos; ++at) ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  EXPECT_EQ(cache->stats().invalid, 5u);

  KILN_ASSERT_OK_AND_ASSIGN(CacheListing listing, cache->List());
  EXPECT_EQ(listing.entries.size(), 0u);
  EXPECT_EQ(listing.invalid.size(), 4u);
  bool saw_version = false;
  for (const auto& [path, why] : listing.invalid) {
    if (path == p2) saw_version = why.find("version") != std::string::npos;
  }
  EXPECT_TRUE(saw_version);

  // Tuning again stores over the bad files.
  for (int i : {1, 2, 3, 4}) KILN_ASSERT_OK(cache->Store(Entry(i)));
  for (int i : {1, 2, 3, 4}) EXPECT_TRUE(cache->Lookup(Key(i)).has_value()) << i;
  KILN_ASSERT_OK_AND_ASSIGN(listing, cache->List());
  EXPECT_EQ(listing.entries.size(), 4u);
  EXPECT_EQ(listing.invalid.size(), 0u);
}

TEST(CacheTest, AHandEditedKeyIsNotAHit) {
  ScopedTempDir dir;
  auto cache = Open(dir.path());
  KILN_ASSERT_OK(cache->Store(Entry(1)));
  // Same file name, but the stored key now says another selection mode: its hash no longer
  // matches the name.
  nlohmann::json j = Entry(1).ToJson();
  j["key"]["selection"] = "deterministic";
  WriteText(cache->PathForKey(Key(1)), j.dump());
  EXPECT_FALSE(cache->Lookup(Key(1)).has_value());
}

TEST(CacheTest, FindExportImportClear) {
  ScopedTempDir a, b;
  auto cache = Open(a.path());
  for (int i = 0; i < 5; ++i) KILN_ASSERT_OK(cache->Store(Entry(i, i)));
  WriteText(a.path() + "/README", "not ours");
  WriteText(cache->PathForKey(Key(9)) + ".tmp.123.4.5", "half-written");

  std::string hash = Key(3).Hash();
  KILN_ASSERT_OK_AND_ASSIGN(auto found, cache->Find(hash.substr(0, 10)));
  EXPECT_EQ(found.second.result.config.params()["algo"], 3);
  EXPECT_EQ(cache->Find("zzzz").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache->Find("ab").status().code(), StatusCode::kInvalidArgument);

  KILN_ASSERT_OK_AND_ASSIGN(nlohmann::json exported, cache->Export());
  EXPECT_EQ(exported["entries"].size(), 5u);
  exported["entries"].push_back({{"format", "kiln-autotune-entry"}, {"key", 3}});  // malformed
  nlohmann::json foreign = Entry(7).ToJson();
  foreign["key"]["version"] = 0;
  exported["entries"].push_back(foreign);

  auto other = Open(b.path(), CacheMode::kReadOnly);  // import writes whatever the mode
  KILN_ASSERT_OK_AND_ASSIGN(CacheImportStats stats, other->Import(exported));
  EXPECT_EQ(stats.imported, 5);
  EXPECT_EQ(stats.invalid, 2);
  EXPECT_EQ(stats.unchanged, 0);
  EXPECT_TRUE(other->Lookup(Key(4)).has_value());
  KILN_ASSERT_OK_AND_ASSIGN(stats, other->Import(exported));
  EXPECT_EQ(stats.unchanged, 5);
  EXPECT_EQ(stats.imported, 0);
  EXPECT_FALSE(other->Import(nlohmann::json{{"format", "something else"}}).ok());
  // A single entry imports too.
  KILN_ASSERT_OK_AND_ASSIGN(stats, other->Import(Entry(11).ToJson()));
  EXPECT_EQ(stats.imported, 1);

  KILN_ASSERT_OK_AND_ASSIGN(int removed, cache->Clear());
  EXPECT_EQ(removed, 6);  // five entries and the temporary file
  EXPECT_EQ(FileNames(a.path()), std::vector<std::string>{"README"});
}

// Several processes storing at once (the same keys and their own) leave only whole, valid
// entries, and every key each of them stored.
TEST(CacheTest, ConcurrentWritersLoseNothing) {
  ScopedTempDir dir;
  constexpr int kProcesses = 6, kShared = 20, kOwn = 15;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto cache = Cache::Create({.directory = dir.path()});
      if (!cache.ok()) _exit(2);
      for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < kShared; ++i) {
          if (!(*cache)->Store(Entry(i, p)).ok()) _exit(3);
        }
        for (int i = 0; i < kOwn; ++i) {
          if (!(*cache)->Store(Entry(1000 + p * 100 + i, p)).ok()) _exit(4);
        }
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  auto cache = Open(dir.path(), CacheMode::kReadOnly);
  KILN_ASSERT_OK_AND_ASSIGN(CacheListing listing, cache->List());
  EXPECT_EQ(listing.invalid.size(), 0u);
  EXPECT_EQ(listing.entries.size(), static_cast<size_t>(kShared + kProcesses * kOwn));
  for (int i = 0; i < kShared; ++i) {
    std::optional<CacheEntry> e = cache->Lookup(Key(i));
    ASSERT_TRUE(e.has_value()) << i;
    int writer = e->result.config.params()["algo"];
    EXPECT_GE(writer, 0);
    EXPECT_LT(writer, kProcesses);
  }
  for (int p = 0; p < kProcesses; ++p) {
    for (int i = 0; i < kOwn; ++i) EXPECT_TRUE(cache->Lookup(Key(1000 + p * 100 + i)).has_value());
  }
  for (const std::string& name : FileNames(dir.path())) {
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "leftover temporary file " << name;
  }
}

TEST(CacheTest, DefaultDirectoryFollowsTheDefaultCacheRoot) {
  runtime::DiskCache::SetDefaultRoot("/some/where");
  EXPECT_EQ(DefaultAutotuneCacheDir(), "/some/where/autotune");
  runtime::DiskCache::SetDefaultRoot("");
  EXPECT_EQ(DefaultAutotuneCacheDir(), runtime::DiskCache::DefaultRoot() + "/autotune");
}

}  // namespace
}  // namespace kiln::autotune
