#include "kiln/autotune/cache_key.h"

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "kiln/autotune/testing/fake_backend.h"
#include "kiln/autotune/testing/test_util.h"

namespace kiln::autotune {
namespace {

using testing::FakeBackend;
using testing::ParseOrDie;

runtime::DeviceDescription H200() {
  runtime::DeviceDescription d;
  d.platform = "cuda";
  d.name = "NVIDIA H200";
  d.compute_capability_major = 9;
  d.compute_capability_minor = 0;
  d.multiprocessor_count = 132;
  d.core_clock_khz = 1980000;
  d.memory_clock_khz = 3201000;
  d.memory_bytes = 150ull << 30;
  d.memory_bus_width_bits = 6144;
  d.memory_bandwidth_bytes_per_s = 4.8e12;
  d.l2_cache_bytes = 60ull << 20;
  d.shared_memory_per_block_optin = 227 * 1024;
  d.driver_version = "13.0";
  d.runtime_version = "13.0";
  d.library_versions = {{"cublas", "13.0.2"}, {"cudnn", "9.10.0"}};
  d.uuid = "GPU-1234";
  d.pci_bus_id = "0000:3b:00.0";
  return d;
}

constexpr char kModule[] = R"(
HloModule m
ENTRY e {
  a = f32[64,32]{1,0} parameter(0)
  b = f32[32,16]{1,0} parameter(1)
  ROOT d = f32[64,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

struct KeyParts {
  runtime::DeviceDescription device = H200();
  std::string backend_version = "1";
  bool two_backends = true;
  bool deterministic = false;
  std::string module = kModule;
};

std::string HashOf(const KeyParts& p) {
  auto module = ParseOrDie(p.module);
  if (!module) return "";
  FakeBackend a("alpha", false, nullptr, {{.id = 0}}, 0, p.backend_version);
  FakeBackend b("beta", true, nullptr, {{.id = 0}});
  std::vector<const Backend*> backends = {&a};
  if (p.two_backends) backends.push_back(&b);
  return MakeCacheKey(p.device, backends, p.deterministic,
                      *module->entry_computation()->root_instruction())
      .Hash();
}

TEST(CacheKeyTest, HashOfFixedPartsIsAFixedValue) {
  // Pins the hashing scheme itself (not the HLO printer): if this changes, every cache entry
  // everywhere is invalidated, so bump kAutotuneCacheVersion and update the value knowingly.
  CacheKey key;
  key.device = DeviceKeyJson(H200());
  key.backends = {{"cublaslt", "13.0.2"}, {"codegen", "1"}};
  key.instruction = std::string(64, 'a');
  EXPECT_EQ(key.Hash(), CacheKey(key).Hash());
  EXPECT_EQ(key.Hash().size(), 64u);
  EXPECT_EQ(key.Hash(), "471dacf26284e14ceb4ff76f98d3717643f649aa41d64b7924bff3b751f767c4")
      << "the cache key scheme changed";
}

TEST(CacheKeyTest, StableAcrossProcesses) {
  std::string here = HashOf({});
  ASSERT_EQ(here.size(), 64u);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    std::string there = HashOf({});
    ssize_t n = write(fds[1], there.data(), there.size());
    _exit(n == static_cast<ssize_t>(there.size()) ? 0 : 1);
  }
  close(fds[1]);
  char buf[65] = {};
  ssize_t n = read(fds[0], buf, 64);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(n, 64);
  EXPECT_EQ(std::string(buf, 64), here);
}

TEST(CacheKeyTest, ChangesWhenAnyPartChanges) {
  const std::string base = HashOf({});
  std::vector<std::pair<std::string, std::function<void(KeyParts&)>>> changes = {
      {"compute capability", [](KeyParts& p) { p.device.compute_capability_minor = 1; }},
      {"SM count", [](KeyParts& p) { p.device.multiprocessor_count = 114; }},
      {"core clock", [](KeyParts& p) { p.device.core_clock_khz = 1755000; }},
      {"memory clock", [](KeyParts& p) { p.device.memory_clock_khz = 2619000; }},
      {"bandwidth", [](KeyParts& p) { p.device.memory_bandwidth_bytes_per_s = 3.35e12; }},
      {"L2", [](KeyParts& p) { p.device.l2_cache_bytes = 50ull << 20; }},
      {"memory", [](KeyParts& p) { p.device.memory_bytes = 80ull << 30; }},
      {"name", [](KeyParts& p) { p.device.name = "NVIDIA H100"; }},
      {"driver", [](KeyParts& p) { p.device.driver_version = "12.8"; }},
      {"runtime", [](KeyParts& p) { p.device.runtime_version = "12.8"; }},
      {"library version", [](KeyParts& p) { p.device.library_versions[1].second = "9.11.0"; }},
      {"library absent", [](KeyParts& p) { p.device.library_versions[1].second = "not found"; }},
      {"backend version", [](KeyParts& p) { p.backend_version = "2"; }},
      {"backend set", [](KeyParts& p) { p.two_backends = false; }},
      {"selection", [](KeyParts& p) { p.deterministic = true; }},
      {"operand shape",
       [](KeyParts& p) { p.module.replace(p.module.find("f32[64,32]"), 10, "f32[64,48]"); }},
      {"element type",
       [](KeyParts& p) {
         for (size_t at; (at = p.module.find("f32")) != std::string::npos;) {
           p.module.replace(at, 3, "f16");
         }
       }},
      {"operand layout",
       [](KeyParts& p) {
         p.module.replace(p.module.find("f32[32,16]{1,0}"), 15, "f32[32,16]{0,1}");
       }},
      {"attribute",
       [](KeyParts& p) {
         p.module.replace(p.module.find("rhs_contracting_dims={0}"), 24,
                          "rhs_contracting_dims={0}, operand_precision={highest,highest}");
       }},
  };
  std::set<std::string> seen = {base};
  for (auto& [what, change] : changes) {
    KeyParts parts;
    change(parts);
    std::string h = HashOf(parts);
    EXPECT_NE(h, base) << what << " did not change the key";
    EXPECT_TRUE(seen.insert(h).second) << what << " collided with another change";
  }
}

TEST(CacheKeyTest, IgnoresNamesMetadataAndDeviceIdentity) {
  const std::string base = HashOf({});
  KeyParts renamed;
  renamed.module = R"(
HloModule other_name
ENTRY main {
  x = f32[64,32]{1,0} parameter(0)
  y = f32[32,16]{1,0} parameter(1)
  ROOT result = f32[64,16]{1,0} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot" source_file="f.py" source_line=3}
})";
  EXPECT_EQ(HashOf(renamed), base);
  KeyParts other_gpu;  // an identical GPU in another slot
  other_gpu.device.uuid = "GPU-5678";
  other_gpu.device.pci_bus_id = "0000:9b:00.0";
  other_gpu.device.ordinal = 3;
  EXPECT_EQ(HashOf(other_gpu), base);
  KeyParts why_absent;  // only a library's absence counts, not the reason
  why_absent.device.library_versions[1].second = "not found (libcudnn.so.9: no such file)";
  KeyParts why_absent2 = why_absent;
  why_absent2.device.library_versions[1].second = "not found (elsewhere)";
  EXPECT_EQ(HashOf(why_absent), HashOf(why_absent2));
}

TEST(CacheKeyTest, HostClockIsNotPartOfTheKey) {
  runtime::DeviceDescription host;
  host.platform = "host";
  host.name = "cpu";
  nlohmann::json a = DeviceKeyJson(host);
  host.core_clock_khz = 2100000;
  EXPECT_EQ(DeviceKeyJson(host), a);
  runtime::DeviceDescription gpu = H200();
  nlohmann::json b = DeviceKeyJson(gpu);
  gpu.core_clock_khz += 1000;
  EXPECT_NE(DeviceKeyJson(gpu), b);
}

TEST(CacheKeyTest, JsonRoundTripAndVersionNotHashed) {
  auto module = ParseOrDie(kModule);
  ASSERT_NE(module, nullptr);
  FakeBackend a("alpha", false, nullptr, {{.id = 0}});
  std::vector<const Backend*> backends = {&a};
  CacheKey key = MakeCacheKey(H200(), backends, true, *module->entry_computation()->root_instruction());
  KILN_ASSERT_OK_AND_ASSIGN(CacheKey back, CacheKey::FromJson(key.ToJson()));
  EXPECT_EQ(back, key);
  EXPECT_EQ(back.Hash(), key.Hash());
  CacheKey other_version = key;
  other_version.version = kAutotuneCacheVersion + 1;
  EXPECT_EQ(other_version.Hash(), key.Hash());  // same file, recognized as foreign inside
  EXPECT_FALSE(other_version == key);
  EXPECT_EQ(key.DeviceSummary(), "NVIDIA H200 (9.0)");
  EXPECT_FALSE(CacheKey::FromJson(nlohmann::json{{"device", 1}}).ok());
}

}  // namespace
}  // namespace kiln::autotune
