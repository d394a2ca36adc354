#include "kiln/runtime/disk_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/runtime/test_macros.h"

namespace kiln::runtime {
namespace {

std::string TempRoot(const std::string& name) {
  std::string root = (std::filesystem::temp_directory_path() /
                      ("kiln_disk_cache_test_" + std::to_string(getpid()) + "_" + name))
                         .string();
  std::filesystem::remove_all(root);
  return root;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

TEST(DiskCacheTest, StoresAndFindsEntries) {
  std::string root = TempRoot("basic");
  KILN_ASSERT_OK_AND_ASSIGN(auto cache, DiskCache::Create({root, "things"}));
  EXPECT_EQ(cache->directory(), root + "/things");
  KILN_ASSERT_OK_AND_ASSIGN(auto miss, cache->Lookup("key-1"));
  EXPECT_FALSE(miss.has_value());
  std::string binary("\0\1\2payload\xff", 11);
  KILN_ASSERT_OK(cache->Store("key-1", binary));
  KILN_ASSERT_OK_AND_ASSIGN(auto hit, cache->Lookup("key-1"));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, binary);
  KILN_ASSERT_OK(cache->Store("key-1", "replaced"));
  KILN_ASSERT_OK_AND_ASSIGN(auto replaced, cache->Lookup("key-1"));
  EXPECT_EQ(replaced.value_or(""), "replaced");
  KILN_ASSERT_OK(cache->Store("key-2", ""));
  KILN_ASSERT_OK_AND_ASSIGN(auto empty, cache->Lookup("key-2"));
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(*empty, "");
  DiskCacheStats stats = cache->stats();
  EXPECT_EQ(stats.hits, 3u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.stores, 3u);
  // A second cache over the same directory (another process, say) sees the entries.
  KILN_ASSERT_OK_AND_ASSIGN(auto other, DiskCache::Create({root, "things"}));
  KILN_ASSERT_OK_AND_ASSIGN(auto seen, other->Lookup("key-1"));
  EXPECT_EQ(seen.value_or(""), "replaced");
  KILN_ASSERT_OK(other->Remove("key-1"));
  KILN_ASSERT_OK_AND_ASSIGN(auto gone, cache->Lookup("key-1"));
  EXPECT_FALSE(gone.has_value());
  std::filesystem::remove_all(root);
}

TEST(DiskCacheTest, LaysOutFilesByKeyHash) {
  std::string root = TempRoot("layout");
  KILN_ASSERT_OK_AND_ASSIGN(auto cache, DiskCache::Create({root, "ns"}));
  std::string path = cache->PathForKey("k");
  // <root>/<ns>/<2 hex>/<64 hex>.bin
  std::string rel = path.substr(root.size() + 1);
  ASSERT_EQ(rel.size(), 2 + 1 + 2 + 1 + 64 + 4) << rel;
  EXPECT_EQ(rel.substr(0, 3), "ns/");
  EXPECT_EQ(rel.substr(3, 2), rel.substr(6, 2));
  KILN_ASSERT_OK(cache->Store("k", "v"));
  EXPECT_TRUE(std::filesystem::exists(path));
  std::string file = ReadFile(path);
  EXPECT_EQ(file.substr(0, 8), "KILNDC01");
  // No temporary files are left behind.
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) ++files;
  }
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(root);
}

TEST(DiskCacheTest, DetectsAndReplacesCorruptedEntries) {
  std::string root = TempRoot("corrupt");
  KILN_ASSERT_OK_AND_ASSIGN(auto cache, DiskCache::Create({root, "ns"}));
  const std::string value(1000, 'x');
  std::string path = cache->PathForKey("key");
  auto corruptions = std::vector<std::function<std::string(std::string)>>{
      [](std::string f) { f[f.size() / 2] ^= 0x40; return f; },            // flipped payload bit
      [](std::string f) { return f.substr(0, f.size() - 10); },            // truncated
      [](std::string f) { f[0] = 'X'; return f; },                          // bad magic
      [](std::string) { return std::string(); },                            // empty file
      [](std::string f) { return f + "trailing"; },                         // extra bytes
      [](std::string f) { f[f.size() - 1] ^= 1; return f; },                // bad checksum
  };
  uint64_t expected_corrupted = 0;
  for (size_t i = 0; i < corruptions.size(); ++i) {
    KILN_ASSERT_OK(cache->Store("key", value));
    WriteFile(path, corruptions[i](ReadFile(path)));
    KILN_ASSERT_OK_AND_ASSIGN(auto result, cache->Lookup("key"));
    EXPECT_FALSE(result.has_value()) << "corruption " << i << " was not detected";
    EXPECT_EQ(cache->stats().corrupted, ++expected_corrupted);
    EXPECT_FALSE(std::filesystem::exists(path)) << "corrupted entry " << i << " not removed";
    KILN_ASSERT_OK(cache->Store("key", value));
    KILN_ASSERT_OK_AND_ASSIGN(auto again, cache->Lookup("key"));
    EXPECT_EQ(again.value_or(""), value) << "entry not replaced after corruption " << i;
  }
  std::filesystem::remove_all(root);
}

TEST(DiskCacheTest, RejectsAnEntryStoredUnderAnotherKey) {
  std::string root = TempRoot("collide");
  KILN_ASSERT_OK_AND_ASSIGN(auto cache, DiskCache::Create({root, "ns"}));
  KILN_ASSERT_OK(cache->Store("a", "value of a"));
  // Simulate a hash collision: b's file holds a's entry.
  std::filesystem::create_directories(std::filesystem::path(cache->PathForKey("b")).parent_path());
  std::filesystem::copy_file(cache->PathForKey("a"), cache->PathForKey("b"));
  KILN_ASSERT_OK_AND_ASSIGN(auto b, cache->Lookup("b"));
  EXPECT_FALSE(b.has_value());
  std::filesystem::remove_all(root);
}

TEST(DiskCacheTest, SurvivesConcurrentWriters) {
  std::string root = TempRoot("concurrent");
  KILN_ASSERT_OK_AND_ASSIGN(auto cache, DiskCache::Create({root, "ns"}));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string value(2000 + t, static_cast<char>('a' + t));
        if (!cache->Store("shared", value).ok()) ++bad;
        StatusOr<std::optional<std::string>> got = cache->Lookup("shared");
        // Whatever is read is some writer's complete value, never a torn mix.
        if (!got.ok()) ++bad;
        else if (got->has_value() && (**got).size() < 2000) ++bad;
        else if (got->has_value() && (**got) != std::string((**got).size(), (**got)[0])) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(cache->stats().corrupted, 0u);
  std::filesystem::remove_all(root);
}

TEST(DiskCacheTest, ReportsAnUnusableDirectory) {
  std::string root = TempRoot("blocked");
  std::filesystem::create_directories(root);
  WriteFile(root + "/ns", "a file where the directory should be");
  StatusOr<std::unique_ptr<DiskCache>> cache = DiskCache::Create({root, "ns"});
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cache.status().message().find("KILN_CACHE_DIR"), std::string::npos);
  EXPECT_FALSE(DiskCache::Create({root, ""}).ok());
  EXPECT_FALSE(DiskCache::Create({root, "a/b"}).ok());
  std::filesystem::remove_all(root);
}

TEST(DiskCacheTest, ResolvesTheDefaultRoot) {
  DiskCache::SetDefaultRoot("/some/where");
  EXPECT_EQ(DiskCache::DefaultRoot(), "/some/where");
  DiskCache::SetDefaultRoot("");
  std::string fallback = DiskCache::DefaultRoot();
  EXPECT_TRUE(fallback.ends_with("/kiln") || fallback == "/tmp/kiln-cache") << fallback;
  // The library reads no KILN_* variable (the kiln tool does: api/environment.h).
  setenv("KILN_CACHE_DIR", "/not/read", 1);
  EXPECT_EQ(DiskCache::DefaultRoot(), fallback);
  unsetenv("KILN_CACHE_DIR");
}

TEST(DiskCacheTest, DefaultOptionsUseTheDefaultRoot) {
  std::string root = TempRoot("default-root");
  DiskCache::SetDefaultRoot(root);
  StatusOr<std::unique_ptr<DiskCache>> cache = DiskCache::Create({"", "ns"});
  DiskCache::SetDefaultRoot("");
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_EQ((*cache)->directory(), root + "/ns");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace kiln::runtime
