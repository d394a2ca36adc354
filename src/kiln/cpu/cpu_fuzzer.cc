// libFuzzer target for the cpu backend, differential: the fuzzer's bytes drive the random
// module generator (hlo/random_module.h); each module is compiled and run on the cpu backend
// and on the reference evaluator with the same random inputs (seeded from the bytes), and the
// results must agree within BackendTolerance (exact where Note [Exact outputs] says so: the
// generator only makes modules where that holds, Note [Comparable by construction]). A
// mismatch, a Status from either side (the module is valid), a crash, hang or out-of-bounds
// access (ASan, UBSan over the compiler, passes and kernels) traps, so libFuzzer records the
// input; the module's text and the comparison are printed. Reproduce with the printed module
// saved as FILE: `kiln compare FILE --device cpu --reference interpreter --seed S`.
//
// Built by `./kiln.sh fuzz SECONDS` (build-fuzz, KILN_BUILD_FUZZERS=ON), which runs every
// *_fuzzer target.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kiln/cpu/cpu_backend.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/random_module.h"
#include "kiln/hlo/verifier.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail, const kiln::RandomModule& m, uint64_t seed) {
  std::fprintf(stderr, "cpu_fuzzer: %s:\n%s\ninput seed %llu\n--- module ---\n%s\n", what, detail.c_str(),
               static_cast<unsigned long long>(seed), m.text.c_str());
  __builtin_trap();
}

kiln::Backend& Cpu() {
  static kiln::Backend* backend = kiln::cpu::CreateCpuBackend().release();
  return *backend;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const kiln::RandomModule m = kiln::GenerateRandomModuleFromBytes(data, size);
  const uint64_t seed = size > 0 ? data[size - 1] : 0;
  // KILN_FUZZER_PRINT=1 prints every module (`cpu_fuzzer FILE` shows what an input makes).
  static const bool print = std::getenv("KILN_FUZZER_PRINT") != nullptr;
  if (print) std::printf("--- input seed %llu ---\n%s\n", static_cast<unsigned long long>(seed), m.text.c_str());
  auto module = kiln::ParseHloModule(m.text);
  if (!module.ok()) Fail("the generated module does not parse", std::string(module.status().message()), m, seed);
  const kiln::Status verified = kiln::VerifyModule(**module);
  if (!verified.ok()) Fail("the generated module does not verify", std::string(verified.message()), m, seed);
  std::vector<kiln::Literal> args = kiln::MakeRandomArguments(m.parameters, seed);
  kiln::EvaluatorOptions eo;
  eo.max_loop_iterations = 1024;
  kiln::Evaluator evaluator(eo);
  auto expected = evaluator.Run(**module, args);
  if (!expected.ok()) Fail("the evaluator fails", std::string(expected.status().message()), m, seed);
  kiln::CompileOptions options;
  options.threads = 1 + static_cast<int>(seed % 2);  // one thread, or a pool of two
  auto exe = Cpu().Compile(**module, options);
  if (!exe.ok()) Fail("cpu compile fails", std::string(exe.status().message()), m, seed);
  kiln::ExecuteOptions run;
  run.poison = true;  // an element no kernel writes comes back as NaN
  auto actual = (*exe)->Run(args, run);
  if (!actual.ok()) Fail("cpu run fails", std::string(actual.status().message()), m, seed);
  kiln::CompareOptions co;
  co.backend_vs_evaluator = true;
  co.outputs = kiln::AnalyzeOutputs(**module);
  const kiln::Comparison cmp = kiln::CompareLiterals(*actual, *expected, co);
  if (!cmp.ok()) Fail("cpu and the evaluator disagree", cmp.ToString(), m, seed);
  return 0;
}
