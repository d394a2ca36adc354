// rng-bit-generator's bit streams (rng.cc documents the layouts, bit-exact with XLA), as
// functions on raw memory: the evaluator's kernel and the CPU backend's kernel both call them,
// the latter on ranges of counter blocks in parallel.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"

namespace kiln::eval_internal {

// How an rng-bit-generator's output is produced: `blocks` independent counter blocks, each
// writing a fixed set of elements (Threefry 64-bit: element i; Threefry narrower: two elements
// of the half shape's position along `split`; Philox: 4 (or 2 64-bit) consecutive elements).
struct RngBitsLayout {
  RandomAlgorithm algorithm = RandomAlgorithm::kPhilox;  // kDefault resolved to kPhilox
  int bits = 32;               // element bit width, 8..64
  int width = 4;               // bytes per element
  int64_t elements = 0;        // elements of the bits array
  int64_t state_size = 2;      // u64 words of the state
  int64_t blocks = 0;          // counter blocks (the state's counter advances by this)
  std::vector<int64_t> dims;   // Threefry < 64 bits: the data dims ({1} for a scalar)
  std::vector<int64_t> half;   // Threefry < 64 bits: dims with the split dim halved (rounded up)
  int64_t split = 0;           // Threefry < 64 bits: the split dimension
};

// Checks `instr` (state u64[n] -> (state, bits)) and plans its layout.
StatusOr<RngBitsLayout> PlanRngBits(const HloInstruction& instr);

// Writes the elements of counter blocks [b0, b1) into `data` (the bits array, row-major).
// `state` holds layout.state_size words. Thread-safe; disjoint block ranges write disjoint
// elements.
void FillRngBits(const RngBitsLayout& layout, std::span<const uint64_t> state, void* data,
                 int64_t b0, int64_t b1);

// new_state (layout.state_size words) = the state after generating the whole array.
void AdvanceRngState(const RngBitsLayout& layout, std::span<const uint64_t> state,
                     std::span<uint64_t> new_state);

}  // namespace kiln::eval_internal
