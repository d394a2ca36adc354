// Test helpers for the CPU runtime: compile an HLO snippet, run it, compare with the evaluator.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <vector>

#include "kiln/cpu/compiler.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cpu::testing {

// Options for tests: debug checks on (verifier between passes, buffer-assignment checker),
// two threads so that the concurrent executor runs even on one core.
inline CpuCompileOptions TestOptions() {
  CpuCompileOptions o;
  o.threads = 2;
  o.verify_between_passes = true;
  o.check_buffer_assignment = true;
  return o;
}

inline StatusOr<std::unique_ptr<CpuExecutable>> CompileHlo(std::string_view hlo,
                                                           const CpuCompileOptions& options = TestOptions()) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(hlo));
  return CpuCompiler::Compile(std::move(module), options);
}

inline std::unique_ptr<CpuExecutable> MustCompile(std::string_view hlo,
                                                  const CpuCompileOptions& options = TestOptions()) {
  auto e = CompileHlo(hlo, options);
  EXPECT_TRUE(e.ok()) << e.status().ToString() << "\n" << hlo;
  return e.ok() ? std::move(e).value() : nullptr;
}

inline std::vector<Literal> RandomArgs(const HloModule& module, uint64_t seed = 42) {
  std::vector<Shape> shapes;
  for (const HloInstruction* p : module.entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
  return MakeRandomArguments(shapes, seed);
}

// Compiles `hlo`, runs it on `args` (random when empty and the module has parameters) and
// expects the evaluator's result within the default tolerances.
inline void ExpectMatchesEvaluator(std::string_view hlo, std::vector<Literal> args = {},
                                   const CpuCompileOptions& options = TestOptions()) {
  auto module = ParseHloModule(hlo);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  if (args.empty()) args = RandomArgs(**module);
  Evaluator evaluator;
  auto expected = evaluator.Run(**module, args);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  auto exe = CpuCompiler::Compile(std::move(*module), options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto actual = (*exe)->Run(args);
  ASSERT_TRUE(actual.ok()) << actual.status().ToString();
  Comparison c = CompareLiterals(*actual, *expected, {});
  EXPECT_TRUE(c.ok()) << c.ToString() << "\n" << (*exe)->ThunkListing();
}

}  // namespace kiln::cpu::testing
