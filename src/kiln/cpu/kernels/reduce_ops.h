// Native accumulation for the common reducers (internal to src/kiln/cpu/kernels): add,
// multiply, maximum, minimum, and, or, xor of one input, for the fast element types.
//
// Accumulators are wider than the data where that makes sums closer to the evaluator's (which
// sums floats in double): float sums accumulate blocks in f32 lanes and fold each block's lane
// sums into a double; f32/f64 products in double; integer sums and products in 64 bits (wrapping
// back gives the same result as wrapping every step). Maximum and minimum propagate NaN like the
// elementwise ops. The reduction's init value is combined last: out = init op acc.
#pragma once

#include <cstdint>

#include "kiln/hlo/instruction.h"

namespace kiln::cpu::internal {

struct FastReducer {
  int acc_size = 0;  // bytes of one accumulator
  // acc[i] = identity, i < n.
  void (*identity)(void* acc, int64_t n) = nullptr;
  // acc[0] = acc[0] op fold(x[0..n)).
  void (*row)(void* acc, const void* x, int64_t n) = nullptr;
  // acc[i] = acc[i] op x[i], i < n.
  void (*cols)(void* acc, const void* x, int64_t n) = nullptr;
  // acc[i] = acc[i] op other[i], i < n.
  void (*combine)(void* acc, const void* other, int64_t n) = nullptr;
  // out[i] = init op acc[i] (init: one element of the data type), i < n.
  void (*finish)(const void* acc, const void* init, void* out, int64_t n) = nullptr;
};

// The native reducer for a reduce of one input of type `type` whose to_apply is `op_instr`
// (a single binary op of its two parameters), or nullptr.
const FastReducer* FindFastReducer(HloOpcode op, PrimitiveType type);

}  // namespace kiln::cpu::internal
