// Comparing results with a reference: per output array, how many elements differ beyond the
// tolerance (tolerance.h) and the worst one -- its index, both values, the absolute and
// relative error. Used by `kiln compare`, the conformance harness and backend tests.
//
// Arrays are compared by value, so an actual bf16 result can be compared with expected values
// stored widened to f32. NaN matches only NaN at the same place; an infinity only the same
// infinity. Integer and pred arrays compare exactly, and so do float outputs that the module
// computes without arithmetic (converts, bitcasts, data movement of inputs: Note [Exact outputs]
// in output_traits.h) when the caller passes CompareOptions::outputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/eval/output_traits.h"
#include "kiln/eval/tolerance.h"
#include "kiln/hlo/literal.h"

namespace kiln {

struct ArrayComparison {
  std::string name;          // "out0"
  std::string actual_shape;  // "f32[64,80]"
  Tolerance tolerance;       // as applied
  bool exact = false;        // compared exactly (integers, pred, exact float outputs)
  // A structural problem (shape or count mismatch): the comparison did not look at values.
  std::string error;

  int64_t elements = 0;
  int64_t mismatches = 0;      // elements beyond the tolerance, NaN mismatches included
  int64_t nan_mismatches = 0;  // NaN on one side only
  double max_abs_error = 0;    // over elements where neither side is NaN/inf
  double max_rel_error = 0;

  // The worst element: a NaN mismatch if there is one, else the largest error relative to its
  // bound. Set when elements > 0.
  std::vector<int64_t> worst_index;
  double worst_actual = 0, worst_expected = 0, worst_abs_error = 0, worst_rel_error = 0;

  bool ok() const { return error.empty() && mismatches == 0; }
  // One line: "out0 f32[64,80]: ok (max abs err 1.2e-06, max rel err 3.4e-07)" or
  // "out0 f32[64,80]: 3 of 5120 elements differ (rtol 1e-05, atol 1e-05); worst at [3, 17]: ..."
  std::string ToString() const;
};

struct Comparison {
  std::vector<ArrayComparison> arrays;
  std::string error;  // e.g. different numbers of outputs
  bool ok() const;
  std::string ToString() const;  // one line per array
};

struct CompareOptions {
  // Overrides of the per-type defaults, for floating and complex results (integers and pred
  // always compare exactly).
  std::optional<double> rtol;
  std::optional<double> atol;
  // The reference computed f32 dots/convolutions in TF32: f32 and c64 results use
  // kTf32Tolerance (before the overrides above) -- only those that use f32 products when
  // `outputs` says which.
  bool reference_tf32 = false;
  // `actual` comes from a compiled backend and `expected` from the reference evaluator on the
  // same inputs: use BackendTolerance (before the overrides above).
  bool backend_vs_evaluator = false;
  // What produced each output leaf (AnalyzeOutputs of the module that computed `actual`), or
  // empty when unknown: exact outputs then compare bit for bit (whatever rtol/atol say), and
  // reference_tf32 applies only to outputs with uses_f32_products. Leaves beyond its end are
  // compared as if it were empty.
  std::vector<OutputTraits> outputs;
};

// The tolerance applied to results of type `t` under `options`; `traits` describes the output
// (null: unknown, as if options.outputs were empty).
Tolerance ToleranceFor(PrimitiveType t, const CompareOptions& options, const OutputTraits* traits = nullptr);

// Compares two array literals element by element.
ArrayComparison CompareArrays(const Literal& actual, const Literal& expected,
                              const Tolerance& tolerance, std::string name);

// Compares the flattened leaves of `actual` and `expected` (tuples or arrays), naming them
// out0, out1, ... Tokens are skipped.
Comparison CompareLiterals(const Literal& actual, const Literal& expected, const CompareOptions& options);
// The same with the expected leaves already flattened (as read from out0, out1, ... of an npz).
Comparison CompareLeaves(const std::vector<const Literal*>& actual,
                         const std::vector<const Literal*>& expected, const CompareOptions& options);

// The array leaves of a literal in out0, out1, ... order (tokens skipped).
std::vector<const Literal*> ArrayLeaves(const Literal& literal);

}  // namespace kiln
