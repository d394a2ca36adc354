// The HLO verifier: checks that a module is well formed before anything runs or rewrites it.
//
// What it checks, for every instruction of every computation:
//  * structure: the entry computation and every root exist; parameter numbers are dense
//    0..n-1 and unique; operands live in the same computation; no cycles through operands or
//    control dependencies; computation names and instruction names (per computation, or per
//    module with unique_names_across_module) are unique; the call graph has
//    no cycles and no chain of more than kMaxCallDepth (1024) nested calls; called computations belong to the module and have the count each opcode needs
//    (while: condition+body, conditional: one per branch, fusion/call/reduce/...: one);
//  * operand counts of fixed-arity opcodes (dot: 2 plus one per sparsity descriptor);
//  * the declared shape: valid (layout minor_to_major is a permutation of the dimensions) and
//    equal to InferShape()'s result in element type and dimensions (layouts only with
//    layout_sensitive, dynamic flags only with compare_dynamic_dimensions). Inference itself
//    checks the attributes: dimension indices in range and unique, permutations, slice bounds,
//    window sizes, group counts, gather/scatter dimension numbers, reducer / comparator /
//    branch / body signatures;
//  * attribute sanity inference cannot see: compare type= against the operand type, replica
//    groups (no empty group, no repeated or missing ids, uniform sizes except all-reduce),
//    collective-permute source_target_pairs, all-reduce reducers, *-done operands coming from
//    the matching *-start;
//  * the module header: entry_computation_layout (when present) matches the entry's parameters
//    and result (up to layout unless layout_sensitive), input_output_alias and buffer_donor
//    name valid parameters and shape indices.
//
// All errors are collected (up to max_errors) into one InvalidArgument status, one per line:
//   verifier: %add.3 (computation main, line 12): shape f32[2,3] does not match the inferred
//   shape f32[3,2] of add(f32[3,2], f32[3,2])
// Post-optimization modules (fusions, cuBLAS/cuDNN custom-calls with backend_config, async ops,
// bitcasts, layouts with tiling) verify: custom-call results are taken as declared.
// Not checked: instructions whose shapes have unbounded ("?") dimensions get the structural
// checks only (shape inference does not handle them); scan and shuffle results are taken as
// declared (XLA publishes no shape rule for them yet); sharding, schedules and metadata.
#pragma once

#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

struct VerifierOptions {
  // Also compare layouts: entry_computation_layout against the entry's parameters and root,
  // and the results of ops that forward a value unchanged (tuple, get-tuple-element, while,
  // call, conditional, fusion, opt-barrier, domain, add-dependency, async-done, copy-done)
  // against the forwarded value. Default off: layouts are a compiler's choice, not part of the
  // program's meaning.
  bool layout_sensitive = false;
  // Allow operands of different floating-point precisions in one op (add(f32, bf16)) and
  // results that differ from the inferred type only in precision, as XLA's verifier does with
  // allow_mixed_precision. Default off (XLA's default for HLO it compiles).
  bool allow_mixed_precision = false;
  // Also compare dynamic-dimension flags ("<=4" vs "4"). Default off, like XLA.
  bool compare_dynamic_dimensions = false;
  // Require broadcast dimensions={...} in increasing order. Default off, like XLA.
  bool require_sorted_broadcast_dimensions = false;
  // Require instruction names unique across the whole module, as XLA's verifier does (XLA's
  // parser renames duplicates; kiln's keeps names as written). Default off: names are always
  // required unique within each computation, which is what name resolution needs.
  bool unique_names_across_module = false;
  // The most errors reported in one status (the count of the rest is appended).
  int max_errors = 20;
};

// Verifies `module`; OK or InvalidArgument listing the errors found.
Status VerifyModule(const HloModule& module, const VerifierOptions& options = {});

// The same checks, returning every error message (unbounded), for tools and tests.
std::vector<std::string> CollectVerifierErrors(const HloModule& module,
                                               const VerifierOptions& options = {});

}  // namespace kiln
