// Conformance: every module of the shared corpus (JAX fuzz modules, big real models, the bench
// suite before and after XLA's GPU optimizations) parses and verifies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "kiln/hlo/parser.h"
#include "kiln/hlo/verifier.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string SharedDir() {
  const char* d = std::getenv("KILN_SHARED_DIR");
  return d ? d : "";
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  const fs::path root = SharedDir();
  for (const char* sub : {"corpus/xla-fuzz", "corpus/xla-models"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root / sub, ec))
      if (e.path().extension() == ".hlo") files.push_back(e.path().string());
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root / "bench/suite", ec))
    for (const char* name : {"module.hlo", "module.opt.hlo"})
      if (fs::exists(e.path() / name)) files.push_back((e.path() / name).string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(VerifierCorpus, EveryModuleParsesAndVerifies) {
  if (SharedDir().empty() || !fs::exists(fs::path(SharedDir()) / "corpus"))
    GTEST_SKIP() << "KILN_SHARED_DIR is not set or has no corpus";
  const std::vector<std::string> files = CorpusFiles();
  ASSERT_GT(files.size(), 60u) << "the corpus looks incomplete under " << SharedDir();
  int verified = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    ParseOptions po;
    po.fill_elided_constants = true;
    StatusOr<std::unique_ptr<HloModule>> m = ParseHloModuleFile(path, po);
    ASSERT_TRUE(m.ok()) << m.status().message();
    Status s = VerifyModule(**m);
    EXPECT_TRUE(s.ok()) << s.message();
    if (s.ok()) ++verified;
  }
  EXPECT_EQ(verified, static_cast<int>(files.size()));
}

}  // namespace
}  // namespace kiln
