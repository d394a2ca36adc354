// MemoryStats: what a compiled module's memory plan costs (buffer assignment's statistics).
// A plain struct on its own so that the public API (backend/executable.h) can report it without
// pulling in buffer assignment.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct MemoryStats {
  int64_t argument_bytes = 0;  // all entry parameter leaves
  int64_t output_bytes = 0;    // all entry output leaves
  int64_t constant_bytes = 0;  // constant allocations
  int64_t temp_bytes = 0;      // arena size
  int64_t peak_bytes = 0;      // max over time of live arena bytes (<= temp_bytes)
  // Bytes that needed no storage of their own: in-place updates, loop state taking over its
  // init buffer, body results computed straight into the state, branch roots computed straight
  // into the conditional's result, and outputs placed in donated parameters.
  int64_t aliased_bytes = 0;
  // "memory: arguments 1.00 KiB, outputs ..., constants ..., temp ... (peak ...), in place / donated ..."
  std::string ToString() const;
};

}  // namespace kiln
