// Helpers for the pass tests: parse HLO text, run a pass, and check that the module computes
// the same values before and after (the reference evaluator on random inputs and on inputs
// full of special values: NaN, +-inf, +-0, extreme integers).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/pass.h"

namespace kiln::testing {

// Parses `text` (a test failure on error; null then).
std::unique_ptr<HloModule> ParseOrDie(std::string_view text);

// Opcodes of the entry computation in post order: "parameter,parameter,add".
std::string EntryOps(const HloModule& module);
// The root's opcode and its operands' opcodes: "multiply(parameter,broadcast)".
std::string RootSummary(const HloModule& module);

// Random arguments for the entry parameters (seed) and arguments where many elements are
// special values (NaN, +-inf, -0, +0, 1, -1, the type's extremes).
std::vector<Literal> RandomArguments(const HloModule& module, uint64_t seed);
std::vector<Literal> SpecialArguments(const HloModule& module, uint64_t seed);

// How values are compared: kExact compares by value with no tolerance (NaN matches NaN, and
// also the sign of zero must match); kExactIgnoreZeroSign lets -0 match +0; kClose uses the
// default per-type tolerance (for rewrites that may change rounding).
enum class Match { kExact, kExactIgnoreZeroSign, kClose };

// Evaluates `before` and `after` on the same arguments and compares. Returns "" when equal,
// "skip: <reason>" when the evaluator cannot run `before` (an op not implemented yet), or a
// description of the first difference.
std::string CompareModules(const HloModule& before, const HloModule& after,
                           const std::vector<Literal>& args, Match match);

// Parses `text` twice, runs `pass` on one copy, and checks: the pass reports `expect_changed`;
// the result passes the verifier; a second run of the pass reports no change; and the values
// agree with the original on random and special inputs (GTEST_SKIP-style message when the
// evaluator lacks an op: the returned module is still valid). Inputs on which the original
// module fails to evaluate (a loop that runs too long) are left out, but a check that compared
// no input at all fails. Returns the rewritten module.
std::unique_ptr<HloModule> RunPassAndCheck(HloPass& pass, std::string_view text,
                                           bool expect_changed = true,
                                           Match match = Match::kExact);

}  // namespace kiln::testing
