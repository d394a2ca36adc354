// libFuzzer target for the reference evaluator: the fuzzer's bytes drive the random module
// generator (hlo/random_module.h), so every input is a small valid module; it must parse,
// verify and run on the evaluator with random inputs (seeded from the bytes) -- a failing
// Status is a bug too (the module is valid), and a crash, hang or out-of-bounds access (ASan,
// UBSan) certainly is. On a failure the module's text is printed: save it as a .hlo file to
// reproduce with `kiln run FILE --device interpreter --seed S`.
//
// Built by `./kiln.sh fuzz SECONDS` (build-fuzz, KILN_BUILD_FUZZERS=ON), which runs every
// *_fuzzer target.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/random_module.h"
#include "kiln/hlo/verifier.h"

namespace {

[[noreturn]] void Fail(const char* what, const kiln::Status& status, const kiln::RandomModule& m, uint64_t seed) {
  std::fprintf(stderr, "eval_fuzzer: %s: %s\ninput seed %llu\n--- module ---\n%s\n", what,
               std::string(status.message()).c_str(), static_cast<unsigned long long>(seed), m.text.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kiln::RandomModule m = kiln::GenerateRandomModuleFromBytes(data, size);
  const uint64_t seed = size > 0 ? data[size - 1] : 0;
  // KILN_FUZZER_PRINT=1 prints every module (`eval_fuzzer FILE` shows what an input makes).
  static const bool print = std::getenv("KILN_FUZZER_PRINT") != nullptr;
  if (print) std::printf("--- input seed %llu ---\n%s\n", static_cast<unsigned long long>(seed), m.text.c_str());
  auto module = kiln::ParseHloModule(m.text);
  if (!module.ok()) Fail("the generated module does not parse", module.status(), m, seed);
  const kiln::Status verified = kiln::VerifyModule(**module);
  if (!verified.ok()) Fail("the generated module does not verify", verified, m, seed);
  std::vector<kiln::Literal> args = kiln::MakeRandomArguments(m.parameters, seed);
  kiln::EvaluatorOptions options;
  options.max_loop_iterations = 1024;
  kiln::Evaluator evaluator(options);
  auto result = evaluator.Run(**module, args);
  if (!result.ok()) Fail("the evaluator fails", result.status(), m, seed);
  return 0;
}
