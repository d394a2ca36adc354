// Helpers for the codegen tests: modules from text, the instructions worth a kernel, and a
// catalogue of handwritten fusions covering every op family the emitters handle. Test code only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/fusion_policy.h"

namespace kiln::codegen::testing {

// A handwritten test module: its entry's root (usually a fusion) is the instruction to emit.
struct CatalogueCase {
  std::string name;
  std::string hlo;
  // The emitter ChooseEmitter should pick ("" to skip that check).
  std::string emitter;
  // Results must match the evaluator bit for bit (NaN payloads, signed zeros), not just within
  // the tolerances: the GPU test compares raw bytes.
  bool exact = false;
};

// Every handwritten case (elementwise ops over all dtypes, shape ops, reductions, transposes,
// dynamic-update-slice in place).
const std::vector<CatalogueCase>& Catalogue();

// Parts of the catalogue (codegen_test_cases.cc): edge values through the narrow-float codecs,
// bitcasts and complex division (constant operands, so they are the kernel's inputs);
// reduce-window and select-and-scatter (windows with padding, strides, dilations, variadic).
std::vector<CatalogueCase> EdgeValueCases();
std::vector<CatalogueCase> WindowCases();
// codegen_test_contraction.cc: dots and convolutions as loop kernels (integer, pred, mixed,
// complex; groups, dilations, padding, reversal, any dim_labels; fused consumers).
std::vector<CatalogueCase> ContractionCases();
// Sorts with lexicographic / multi-operand / complex comparators (the sort emitter).
std::vector<CatalogueCase> SortCases();

// Parses `text` (elided constants filled) and verifies the module.
StatusOr<std::unique_ptr<HloModule>> ParseModule(const std::string& text);

// The instructions of `module`'s non-fused computations that would become generated kernels:
// fusions, and unfused instructions ChooseEmitter accepts that are not free (parameters,
// constants, tuples, get-tuple-element, bitcasts are left out).
std::vector<const HloInstruction*> KernelInstructions(const HloModule& module);

// Runs FlattenCallGraph + InstructionFusion + MultiOutputFusion with `policy` (nullptr: the
// CPU policy; the GPU policy lives in the CUDA room, whose tests pass it).
Status FuseModule(HloModule& module, const FusionPolicy* policy = nullptr);

// A module whose entry computes only `instr` (an instruction of `module`, usually a fusion):
// one parameter per operand, `instr` cloned as the root. The module is a copy of `module` (its
// other computations stay, unreachable from the new entry). The evaluator runs it as the
// reference for the kernel generated from its root.
StatusOr<std::unique_ptr<HloModule>> ExtractKernelModule(const HloModule& module,
                                                         const HloInstruction& instr);

}  // namespace kiln::codegen::testing
