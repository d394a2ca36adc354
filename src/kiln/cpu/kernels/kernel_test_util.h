// Test helpers for the CPU kernels: run a kernel on literals and compare it with the reference
// evaluator's kernel for the same instruction.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/thread_pool.h"
#include "kiln/cpu/kernel.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"

namespace kiln::cpu::testing {

// A pool shared by the tests (2 workers: kernels split work even on a 1-core machine).
ThreadPool* TestPool();

// Parses `hlo` (filling elided constants); fails the test on errors.
std::unique_ptr<HloModule> Parse(std::string_view hlo);

// The instruction named `name` in the entry computation, or its root when name is empty.
const HloInstruction* Find(const HloModule& m, std::string_view name = "");

// Runs `kernel` on operand literals (tuple operands flattened), returning the result literal of
// `instr`'s shape.
StatusOr<Literal> RunKernel(const CpuKernel& kernel, const HloInstruction& instr,
                            const std::vector<Literal>& operands, ThreadPool* pool);

// The reference: the evaluator's kernel for `instr` on the operands.
StatusOr<Literal> Reference(const HloInstruction& instr, const std::vector<Literal>& operands);

// Random operands for `instr` (seeded; stream i for operand i).
std::vector<Literal> RandomOperands(const HloInstruction& instr, uint64_t seed);

struct CheckOptions {
  CpuKernelOptions kernel;
  uint64_t seed = 1;
  bool with_pool = true;
  // The kernel must not be the evaluator fallback.
  bool native = true;
  // Extra relative/absolute tolerance (floats); unset: the default per-type tolerance.
  std::optional<double> rtol, atol;
};

// Compiles instr's kernel, runs it on `operands` (random when empty) and compares with the
// evaluator (tolerance.h). Returns the kernel's name.
std::string ExpectMatchesEvaluator(const HloInstruction& instr, const CheckOptions& options = {},
                                   std::vector<Literal> operands = {});

// Parses `hlo` and checks its entry root (or the instruction `name`) as above, with and without
// a pool and with a few block sizes.
void CheckHlo(std::string_view hlo, std::string_view name = "", CheckOptions options = {});

// Parses `hlo` and checks its entry root against the evaluator on random operands from `seed`,
// compiled with each parallel grain (CpuKernelOptions::min_parallel_elements) and run on each
// pool; a failure names `what`, the grain, the pool's thread count and the seed.
void CheckOnPools(std::string_view hlo, const std::vector<std::unique_ptr<ThreadPool>>& pools,
                  uint64_t seed, std::string_view what,
                  std::initializer_list<int64_t> grains = {32 * 1024, 16});

}  // namespace kiln::cpu::testing
