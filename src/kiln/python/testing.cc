// kiln._kiln._compare_outputs: the project's comparison of results with references
// (eval/compare.h, the tolerances of docs/tolerances.md, exact outputs per
// eval/output_traits.h) for the Python tests, so that they judge kiln.compile's results exactly
// as the conformance harness judges the evaluator's.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kiln/api/client.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/output_traits.h"
#include "kiln/passes/shard_map_lowering.h"
#include "kiln/python/array.h"
#include "kiln/python/errors.h"

namespace nb = nanobind;

namespace kiln::python {

void RegisterTesting(nb::module_& m) {
  m.def(
      "_compare_outputs",
      [](const std::string& hlo_text, const std::vector<PyArray>& actual, const std::vector<PyArray>& expected,
         bool tf32, bool backend, bool analyze) {
        std::unique_ptr<HloModule> module = ValueOrThrow(ParseModule(hlo_text, "<compare>"));
        // A shard_map program's outputs are its per-device program's (as compiled).
        if (IsShardMapProgram(*module)) ThrowIfError(LowerShardMap(*module).status());
        std::vector<Literal> a, e;
        for (const PyArray& x : actual) a.push_back(ValueOrThrow(x.buffer().ToLiteral()));
        for (const PyArray& x : expected) e.push_back(ValueOrThrow(x.buffer().ToLiteral()));
        std::vector<const Literal*> ap, ep;
        for (const Literal& l : a) ap.push_back(&l);
        for (const Literal& l : e) ep.push_back(&l);
        CompareOptions options;
        // `analyze`: exact outputs (converts, moved inputs) bit for bit (eval/output_traits.h);
        // off: the per-type tolerances alone, as the differential suite judges the joined
        // outputs of the collective cases against XLA's (CompareOptions{}).
        if (analyze) options.outputs = AnalyzeOutputs(*module);
        // `actual` ran f32 products in TF32 (Executable::RunsF32ProductsInTf32): the outputs that
        // depend on them get the TF32 row (docs/tolerances.md), as in the differential suite.
        options.reference_tf32 = tf32;
        // `backend`: the differential suite's rule for a compiled backend's results
        // (BackendTolerance, eval/tolerance.h: part of the bound scales with the output's largest
        // value -- reassociated sums, and fused attention's backward keeping dP and dS in f32).
        options.backend_vs_evaluator = backend;
        Comparison c = CompareLeaves(ap, ep, options);
        return nb::make_tuple(c.ok(), c.ToString());
      },
      nb::arg("hlo_text"), nb::arg("actual"), nb::arg("expected"), nb::arg("tf32") = false,
      nb::arg("backend") = false, nb::arg("analyze") = true,
      "(ok, report): `actual` against `expected` leaf by leaf with kiln's tolerances (tests only); tf32: "
      "`actual` ran f32 products in TF32; backend: the compiled-backend tolerances of the differential suite; "
      "analyze: exact outputs judged bit for bit (off: per-type tolerances only).");
}

}  // namespace kiln::python
