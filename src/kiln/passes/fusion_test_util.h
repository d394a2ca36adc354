// Helpers for the fusion and buffer-assignment tests: parse, copy, evaluate before/after.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <unordered_set>
#include <string>
#include <string_view>

#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/fusion_utils.h"

namespace kiln::testing {

inline std::unique_ptr<HloModule> ParseOrFail(std::string_view text) {
  ParseOptions opts;
  opts.fill_elided_constants = true;
  auto m = ParseHloModule(text, opts);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// A deep copy through the printer and the parser.
inline std::unique_ptr<HloModule> CopyModule(const HloModule& m) { return ParseOrFail(m.ToString()); }

// Evaluates the module's entry on deterministic random arguments.
inline StatusOr<Literal> EvaluateRandom(const HloModule& m, uint64_t seed = 1) {
  std::vector<Shape> shapes;
  for (const HloInstruction* p : m.entry_computation()->parameter_instructions())
    shapes.push_back(p->shape());
  std::vector<Literal> args = MakeRandomArguments(shapes, seed);
  EvaluatorOptions opts;
  opts.max_loop_iterations = 100000;
  Evaluator e(opts);
  return e.Run(m, args);
}

// The module verifies, and evaluates to bitwise the same result as `before` on random inputs.
inline void ExpectSameResults(const HloModule& before, const HloModule& after, uint64_t seed = 1) {
  Status v = VerifyModule(after);
  EXPECT_TRUE(v.ok()) << v.ToString() << "\n" << after.ToString();
  StatusOr<Literal> want = EvaluateRandom(before, seed);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  StatusOr<Literal> got = EvaluateRandom(after, seed);
  ASSERT_TRUE(got.ok()) << got.status().ToString() << "\n" << after.ToString();
  EXPECT_TRUE(got->BitwiseEquals(*want)) << "got " << got->ToShortString() << "\nwant "
                                         << want->ToShortString() << "\n" << after.ToString();
  // The printed module reads back.
  auto reparsed = ParseHloModule(after.ToString());
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().ToString();
}

// Counts instructions of `op` in the entry computation.
inline int64_t CountOp(const HloComputation& c, HloOpcode op) {
  int64_t n = 0;
  for (const HloInstruction* i : c.instructions()) n += i->opcode() == op;
  return n;
}

// "kind:op,op,op" of a fusion's fused computation in post order from the root (parameters
// left out).
inline std::string FusedOps(const HloInstruction& fusion) {
  std::string s = std::string(FusionKindString(fusion.attrs().fusion_kind)) + ":";
  bool first = true;
  // Depth-first from the root, operands in order: independent of insertion order.
  std::unordered_set<const HloInstruction*> seen;
  std::function<void(const HloInstruction*)> visit = [&](const HloInstruction* i) {
    if (!seen.insert(i).second) return;
    for (const HloInstruction* op : i->operands()) visit(op);
    if (i->opcode() == HloOpcode::kParameter) return;
    if (!first) s += ",";
    first = false;
    s += HloOpcodeString(i->opcode());
  };
  visit(fusion.fused_computation()->root_instruction());
  return s;
}

}  // namespace kiln::testing
