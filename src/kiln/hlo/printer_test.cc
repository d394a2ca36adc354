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
#include "kiln/hlo/parser_test_util.h"

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

std::unique_ptr<HloModule> Parse(std::string_view text) {
  auto m = ParseHloModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
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
    EXPECT_EQ(testing_internal::CompareModules(**m1, **m2), "");
  }
  std::cout << fixed << " of " << files.size() << " files are print/parse fixed points\n";
  EXPECT_GE(files.size(), 90u);
}

TEST(PrinterTest, MobileNetParsesQuickly) {
  const char* dir = std::getenv("KILN_SHARED_DIR");
  if (!dir) GTEST_SKIP() << "KILN_SHARED_DIR not set";
  fs::path f = fs::path(dir) / "corpus/xla-models/mobilenet_v2.hlo";
  if (!fs::exists(f)) GTEST_SKIP() << f << " missing";
  auto t0 = std::chrono::steady_clock::now();
  auto m = ParseHloModuleFile(f.string());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_LT(s, 1.0);
}

const char* kModule = R"(HloModule m

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[4,8]{1,0} parameter(0), metadata={op_name="p"}
  z = f32[] constant(0)
  r = f32[4]{0} reduce(p, z), dimensions={1}, to_apply=add
  c = f32[4]{0} constant({1, 2, 3, 4})
  ROOT o = f32[4]{0} multiply(r, c)
})";

TEST(PrinterTest, FingerprintIsStableAcrossParses) {
  auto a = Parse(kModule);
  auto b = Parse(kModule);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->Fingerprint(), b->Fingerprint());
  EXPECT_EQ(a->Fingerprint().size(), 64u);
}

TEST(PrinterTest, FingerprintIgnoresNamesAndMetadata) {
  std::string renamed = kModule;
  auto replace_all = [&](std::string from, std::string to) {
    for (size_t pos = 0; (pos = renamed.find(from, pos)) != std::string::npos; pos += to.size())
      renamed.replace(pos, from.size(), to);
  };
  replace_all("add {", "sum_region {");
  replace_all("to_apply=add", "to_apply=sum_region");
  replace_all(" r ", " reduced ");
  replace_all("(r, c)", "(reduced, c)");
  replace_all("HloModule m", "HloModule other_name");
  replace_all("metadata={op_name=\"p\"}", "metadata={op_name=\"q\" source_line=9}");
  auto a = Parse(kModule);
  auto b = Parse(renamed);
  ASSERT_TRUE(a && b);
  ASSERT_NE(a->ToString(), b->ToString());
  EXPECT_EQ(a->Fingerprint(), b->Fingerprint());
  const HloInstruction* ra = a->entry_computation()->GetInstructionWithName("r");
  const HloInstruction* rb = b->entry_computation()->GetInstructionWithName("reduced");
  ASSERT_TRUE(ra && rb);
  EXPECT_EQ(InstructionFingerprint(*ra), InstructionFingerprint(*rb));
}

TEST(PrinterTest, FingerprintChangesWithConstantsShapesAndCallees) {
  auto base = Parse(kModule);
  std::string constant = kModule;
  constant.replace(constant.find("{1, 2, 3, 4}"), 12, "{1, 2, 3, 5}");
  std::string shape = kModule;
  shape.replace(shape.find("f32[4,8]{1,0}"), 13, "f32[4,8]{0,1}");
  std::string callee = kModule;
  callee.replace(callee.find("add(x, y)"), 9, "maximum(x, y)");
  auto c = Parse(constant), s = Parse(shape), k = Parse(callee);
  ASSERT_TRUE(base && c && s && k);
  EXPECT_NE(base->Fingerprint(), c->Fingerprint());
  EXPECT_NE(base->Fingerprint(), s->Fingerprint());
  EXPECT_NE(base->Fingerprint(), k->Fingerprint());
  const HloInstruction* r0 = base->entry_computation()->GetInstructionWithName("r");
  const HloInstruction* r1 = k->entry_computation()->GetInstructionWithName("r");
  EXPECT_NE(InstructionFingerprint(*r0), InstructionFingerprint(*r1));
  const HloInstruction* r2 = s->entry_computation()->GetInstructionWithName("r");
  EXPECT_NE(InstructionFingerprint(*r0), InstructionFingerprint(*r2));  // operand layout
}

TEST(PrinterTest, CanonicalTextHasNoNamesOrMetadata) {
  auto m = Parse(kModule);
  ASSERT_TRUE(m);
  std::string text = PrintModule(*m, PrintOptions::Canonical());
  EXPECT_EQ(text.find("metadata"), std::string::npos);
  EXPECT_EQ(text.find("%main"), std::string::npos);
  EXPECT_EQ(text.find("%add"), std::string::npos);
  EXPECT_NE(text.find("to_apply=%c0"), std::string::npos) << text;
}

TEST(PrinterTest, InstructionText) {
  auto m = Parse(kModule);
  ASSERT_TRUE(m);
  const HloInstruction* r = m->entry_computation()->GetInstructionWithName("r");
  EXPECT_EQ(r->ToString(),
            "%r = f32[4]{0} reduce(f32[4,8]{1,0} %p, f32[] %z), dimensions={1}, to_apply=%add");
  EXPECT_EQ(PrintInstruction(*r, PrintOptions::ShortParsable()),
            "%r = f32[4]{0} reduce(%p, %z), dimensions={1}, to_apply=%add");
  const HloInstruction* o = m->entry_computation()->root_instruction();
  EXPECT_EQ(o->ToString(), "ROOT %o = f32[4]{0} multiply(f32[4]{0} %r, f32[4]{0} %c)");
  PrintOptions bare;
  bare.print_percent = false;
  bare.print_layouts = false;
  bare.print_operand_shapes = false;
  EXPECT_EQ(PrintInstruction(*o, bare), "ROOT o = f32[4] multiply(r, c)");
}

TEST(PrinterTest, LiteralForms) {
  auto m = Parse(R"(ENTRY e {
  a = f32[2,2]{1,0} constant({ {1, 2}, {3, 4} })
  b = s32[0,3]{1,0} constant({})
  c = (f32[], pred[2]{0}) constant((0.5, {true, false}))
  d = f32[20]{0} constant({0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19})
  ROOT e = c64[2]{0} constant({(1, -1), (0.25, inf)})
})");
  ASSERT_TRUE(m);
  auto lit = [&](std::string_view n) {
    return PrintLiteralValue(m->entry_computation()->GetInstructionWithName(n)->literal());
  };
  EXPECT_EQ(lit("a"), "{ { 1, 2 }, { 3, 4 } }");
  EXPECT_EQ(lit("b"), "{}");
  EXPECT_EQ(lit("c"), "(0.5, {true, false})");
  EXPECT_EQ(lit("e"), "{(1, -1), (0.25, inf)}");
  PrintOptions small;
  small.print_large_constants = false;
  const HloInstruction* d = m->entry_computation()->GetInstructionWithName("d");
  EXPECT_EQ(PrintInstruction(*d, small), "%d = f32[20]{0} constant({...})");
}

TEST(PrinterTest, FloatsOfEveryWidthRoundTrip) {
  const char* text = R"(ENTRY e {
  a = f32[6]{0} constant({0.1, 1e-45, 3.40282347e+38, -0, 1.17549435e-38, 16777217})
  b = f64[3]{0} constant({0.1, 4.9406564584124654e-324, 1.7976931348623157e+308})
  c = bf16[3]{0} constant({0.1, 3.3895314e+38, -1.5})
  d = f16[3]{0} constant({0.1, 65504, 6e-08})
  e = f8e4m3fn[3]{0} constant({0.1, 448, -0.001953125})
  f = f8e5m2[2]{0} constant({57344, -inf})
  g = f4e2m1fn[2]{0} constant({1.5, -6})
  h = f8e8m0fnu[2]{0} constant({1, 0.5})
  n1 = f32[4]{0} constant({nan, -nan, nan(0x1), -nan(0x7fffff)})
  n2 = f64[2]{0} constant({-nan, nan(0x1234)})
  n3 = bf16[2]{0} constant({nan(0x1), -nan})
  n4 = f8e4m3fn[2]{0} constant({nan, -nan})
  n5 = f8e5m2fnuz[1]{0} constant({nan})
  n6 = f8e5m2[2]{0} constant({nan(0x1), -nan(0x3)})
  ROOT i = u64[2]{0} constant({0, 18446744073709551615})
})";
  auto m1 = Parse(text);
  ASSERT_TRUE(m1);
  std::string p1 = m1->ToString();
  auto m2 = Parse(p1);
  ASSERT_TRUE(m2);
  EXPECT_EQ(p1, m2->ToString());
  for (HloInstruction* i : m1->entry_computation()->instructions()) {
    const HloInstruction* j = m2->entry_computation()->GetInstructionWithName(i->name());
    ASSERT_TRUE(j);
    EXPECT_TRUE(i->literal().BitwiseEquals(j->literal())) << i->name() << ": " << p1;
  }
  auto lit = [&](std::string_view n) {
    return PrintLiteralValue(m1->entry_computation()->GetInstructionWithName(n)->literal());
  };
  EXPECT_EQ(lit("n1"), "{nan, -nan, nan(0x1), -nan(0x7fffff)}");
  EXPECT_EQ(lit("n2"), "{-nan, nan(0x1234)}");
  EXPECT_EQ(lit("n3"), "{nan(0x1), -nan}");
  EXPECT_EQ(lit("n4"), "{nan, -nan}");
  EXPECT_EQ(lit("n5"), "{nan}");
  EXPECT_EQ(lit("n6"), "{nan(0x1), -nan(0x3)}");
  EXPECT_NE(ParseHloModule("ENTRY e {\n ROOT c = f32[] constant(nan(0x800000))\n}").status().message().find(
                "NaN payload out of range for f32"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
