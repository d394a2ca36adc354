// Printer tests: print -> parse -> print is a fixed point on every module of the shared corpus
// and bench suite; fingerprints are stable and sensitive to what matters.
#include "kiln/hlo/printer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> SharedHloFiles() {
  std::vector<fs::path> files;
  const char* dir = std::getenv("KILN_SHARED_DIR");
  if (!dir) return files;
  fs::path root(dir);
  for (const char* sub : {"corpus/xla-fuzz", "corpus/xla-models"}) {
    fs::path d = root / sub;
    if (!fs::is_directory(d)) continue;
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().extension() == ".hlo") files.push_back(e.path());
  }
  fs::path suite = root / "bench/suite";
  if (fs::is_directory(suite)) {
    for (const auto& e : fs::directory_iterator(suite)) {
      for (const char* name : {"module.hlo", "module.opt.hlo"}) {
        fs::path f = e.path() / name;
        if (fs::exists(f)) files.push_back(f);
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PrinterTest, CorpusRoundTripIsFixedPoint) {
  std::vector<fs::path> files = SharedHloFiles();
  if (files.empty()) GTEST_SKIP() << "KILN_SHARED_DIR not set or empty";
  int fixed = 0;
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    auto m1 = ParseHloModuleFile(f.string());
    ASSERT_TRUE(m1.ok()) << m1.status().ToString();
    std::string p1 = (*m1)->ToString();
    ParseOptions o;
    o.filename = f.string() + " (printed)";
    auto m2 = ParseHloModule(p1, o);
    ASSERT_TRUE(m2.ok()) << m2.status().ToString();
    std::string p2 = (*m2)->ToString();
    EXPECT_EQ(p1, p2);
    if (p1 == p2) ++fixed;
    EXPECT_EQ((*m1)->Fingerprint(), (*m2)->Fingerprint());
  }
  std::cout << fixed << " of " << files.size() << " files are print/parse fixed points\n";
  EXPECT_GE(files.size(), 90u);
}

}  // namespace
}  // namespace kiln
