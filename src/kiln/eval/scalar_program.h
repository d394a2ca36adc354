// ScalarProgram: a scalar computation (a reducer, comparator, combiner or map function) compiled
// into a straight-line list of native element functions, so that kernels can run it once per
// element without building Literals or walking the HLO graph.
//
// A computation compiles when every instruction is a scalar array op from this set: parameter,
// constant, the elementwise ops (abs ... xor, compare, convert, bitcast-convert of equal
// width, select, clamp, reduce-precision, ...), and a root that is either one of them or a tuple
// of them (the variadic reducers of reduce / reduce-window / sort with N operands). Anything else
// (calls, maps, non-scalar shapes, tuples in the middle) does not compile, and callers fall back
// to Evaluator::Evaluate.
//
// Values live in 16-byte slots holding the element's native representation (as stored in a
// Literal), so running a program has exactly the semantics of evaluating the computation: each
// op rounds to its result type as the elementwise kernels do.
//
// Usage (inside a kernel):
//   const ScalarProgram* p = evaluator.GetScalarProgram(*instr.to_apply());
//   if (p) { const void* in[2] = {&acc, &x}; void* out[1] = {&acc}; p->Run(in, out); }
//
// Thread safety: a compiled program is immutable; Run may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/computation.h"

namespace kiln {

namespace eval_internal {
// One element operation: reads its operands' native values from in[0..k), writes the result's
// native value to out. ctx is the instruction (for attributes such as reduce-precision bits).
using ElementFn = void (*)(const HloInstruction* ctx, const void* const* in, void* out);

// The element function of a scalar elementwise instruction, given its operand and result
// types; Unimplemented (as UnsupportedInstruction) when the opcode/type pair has no element
// form. Defined next to the elementwise kernels.
StatusOr<ElementFn> ResolveElementFn(const HloInstruction& instr);
}  // namespace eval_internal

class ScalarProgram {
 public:
  // Compiles `computation`; nullptr when it is not a simple scalar computation (see above).
  static std::unique_ptr<ScalarProgram> Compile(const HloComputation& computation);

  int num_parameters() const { return static_cast<int>(param_slots_.size()); }
  // Number of results: 1 for an array root, N for a tuple root of N scalars.
  int num_results() const { return static_cast<int>(result_slots_.size()); }
  PrimitiveType parameter_type(int i) const { return param_types_[i]; }
  PrimitiveType result_type(int i) const { return result_types_[i]; }

  // Runs the program: args[i] points to the native value of parameter i, results[j] receives
  // result j. Results may alias arguments (acc = f(acc, x)).
  void Run(std::span<const void* const> args, std::span<void* const> results) const;

  // When the whole program is one op of parameters (e.g. add(p0, p1)), that op: callers may
  // call it directly. Else nullptr.
  eval_internal::ElementFn single_op() const { return single_op_; }
  // For single_op(): which parameter feeds each operand.
  const std::vector<int>& single_op_params() const { return single_op_params_; }
  const HloInstruction* single_op_instr() const { return single_op_instr_; }

  // True when the program is `add(p0, p1)` (either order) on a real floating type, the
  // reducer XLA's evaluator sums in double precision.
  bool is_float_add() const { return is_float_add_; }

 private:
  struct Op {
    eval_internal::ElementFn fn;
    const HloInstruction* instr;
    int num_in;
    int in[3];
    int out;
  };
  struct Slot {
    alignas(16) uint8_t bytes[16];
  };

  std::vector<Op> ops_;
  std::vector<Slot> constants_;          // initial contents of every slot (constants filled)
  std::vector<int> constant_slots_;      // the slots holding constants
  std::vector<int> param_slots_;
  std::vector<int> param_widths_;
  std::vector<PrimitiveType> param_types_;
  std::vector<int> result_slots_;
  std::vector<int> result_widths_;
  std::vector<PrimitiveType> result_types_;
  eval_internal::ElementFn single_op_ = nullptr;
  std::vector<int> single_op_params_;
  const HloInstruction* single_op_instr_ = nullptr;
  bool is_float_add_ = false;
};

}  // namespace kiln
