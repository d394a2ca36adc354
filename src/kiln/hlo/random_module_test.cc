// The random module generator: every module it makes parses and verifies, deterministically.
#include "kiln/hlo/random_module.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/verifier.h"

namespace kiln {
namespace {

void ExpectValid(const RandomModule& m, const std::string& what) {
  auto module = ParseHloModule(m.text);
  ASSERT_TRUE(module.ok()) << what << ": " << module.status().message() << "\n" << m.text;
  const Status st = VerifyModule(**module, VerifierOptions{});
  ASSERT_TRUE(st.ok()) << what << ": " << st.message() << "\n" << m.text;
  const HloComputation* entry = (*module)->entry_computation();
  ASSERT_EQ(entry->num_parameters(), static_cast<int64_t>(m.parameters.size())) << m.text;
  for (int64_t i = 0; i < entry->num_parameters(); ++i)
    EXPECT_TRUE(Shape::Compatible(entry->parameter_instruction(i)->shape(), m.parameters[i])) << m.text;
}

TEST(RandomModule, SeedsGiveValidModules) {
  int64_t seeds = 2000;
  if (const char* n = std::getenv("KILN_RANDOM_MODULE_SEEDS")) seeds = std::atoll(n);
  for (int64_t seed = 0; seed < seeds; ++seed) {
    ExpectValid(GenerateRandomModule(seed), "seed " + std::to_string(seed));
    if (HasFatalFailure()) return;
  }
}

TEST(RandomModule, BytesGiveValidModules) {
  ExpectValid(GenerateRandomModuleFromBytes(nullptr, 0), "no bytes");
  for (int n = 0; n < 500; ++n) {
    std::vector<uint8_t> bytes(n % 97 * 7);
    uint32_t x = 12345u + n;
    for (uint8_t& b : bytes) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
    ExpectValid(GenerateRandomModuleFromBytes(bytes.data(), bytes.size()), "bytes " + std::to_string(n));
    if (HasFatalFailure()) return;
  }
}

// eval_fuzzer's first finding: when the generator read zeros after the bytes, Capped halved
// the first dimension (1) forever. (The bytes now continue with a seeded generator, so this
// input no longer reaches that path; Capped picks the largest dimension whatever it draws.)
TEST(RandomModule, CappingTerminatesWhenBytesRunOut) {
  const uint8_t bytes[] = {0x5d, 0x01, 0x9d, 0x78, 0xcf, 0xc2, 0x32, 0x5d, 0x5d, 0x01, 0x9d};
  ExpectValid(GenerateRandomModuleFromBytes(bytes, sizeof bytes), "timeout-018ceb2d");
}

TEST(RandomModule, Deterministic) {
  EXPECT_EQ(GenerateRandomModule(7).text, GenerateRandomModule(7).text);
  EXPECT_NE(GenerateRandomModule(7).text, GenerateRandomModule(8).text);
}

// Over many seeds the generator reaches every opcode it is meant to draw.
TEST(RandomModule, ReachesEveryOpcode) {
  std::string all;
  for (int seed = 0; seed < 400; ++seed) all += GenerateRandomModule(seed).text;
  for (const char* op : {" add(", " compare(", " select(", " clamp(", " convert(", " bitcast-convert(", " broadcast(",
                         " reshape(", " transpose(", " slice(", " dynamic-slice(", " dynamic-update-slice(",
                         " concatenate(", " pad(", " reverse(", " iota(", " reduce(", " reduce-window(", " dot(",
                         " gather(", " scatter(", " sort(", " tuple(", " get-tuple-element(", " while(",
                         " conditional(", " call(", " map(", " reduce-precision(", "argmax", " convolution("})
    EXPECT_NE(all.find(op), std::string::npos) << op;
}

}  // namespace
}  // namespace kiln
