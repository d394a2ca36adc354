// Test helpers for the evaluator's kernel tests (test-only library kiln_eval_reference_cases).
//
//   RunHlo(text, args)          parse an HLO module and evaluate it
//   LiteralFromJson(j)          {"type": "f32", "dims": [2,3], "values": [...]} -> Literal
//   RunJsonCases("x.json")      run every case of testdata/x.json (written by
//                               testdata/gen_eval_b_cases.py) and check its expected results
//
// JSON values: numbers; "nan", "-nan", "inf", "-inf" for special floats; [re, im] pairs for
// complex; decimal strings for u64.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"

namespace kiln::reference_cases {

// Parses `hlo` and runs its entry computation on `args` with a fresh Evaluator.
StatusOr<Literal> RunHlo(std::string_view hlo, const std::vector<Literal>& args);

// Literal from the JSON form above.
StatusOr<Literal> LiteralFromJson(const nlohmann::json& j);

// Path of a file in src/kiln/eval/testdata (from KILN_SOURCE_DIR), or "" when unset.
std::string TestdataPath(std::string_view file);

// Loads testdata/<file>; a discarded value (with a GTest failure) when it cannot be read.
nlohmann::json LoadTestdata(std::string_view file);

// Runs every case in testdata/<file>, adding a GTest failure (naming the case) for each case
// that fails to parse, run, or match. Cases marked "exact" must match bit for bit; others
// within their rtol/atol (default: the result type's DefaultTolerance). Returns the number of
// cases run.
int RunJsonCases(std::string_view file);

// Runs the case named `name` only (for focused tests); fails if there is none.
void RunJsonCase(std::string_view file, std::string_view name);

}  // namespace kiln::reference_cases
