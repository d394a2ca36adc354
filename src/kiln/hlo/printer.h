// The HLO text printer. Output is XLA's text format; print -> parse -> print is a fixed point.
#pragma once

#include <string>

#include "kiln/hlo/module.h"

namespace kiln {

struct PrintOptions {
  bool print_metadata = true;          // metadata={...}
  bool print_backend_config = true;    // backend_config=...
  bool print_layouts = true;           // {1,0} after shapes
  bool print_operand_shapes = true;    // add(f32[2]{0} %a, ...) vs add(%a, ...)
  bool print_percent = true;           // %name
  bool print_stack_frames = true;      // FileNames/FunctionNames/... tables
  bool print_large_constants = true;   // false: constants over 16 elements print as {...}
  // Canonical form for fingerprints: instruction names replaced by position numbers, metadata
  // and stack frames left out.
  bool canonical = false;

  static PrintOptions Canonical();
  static PrintOptions ShortParsable();  // no metadata, no operand shapes
};

std::string PrintModule(const HloModule& module, const PrintOptions& options = {});
std::string PrintComputation(const HloComputation& computation, const PrintOptions& options = {});
std::string PrintInstruction(const HloInstruction& instruction, const PrintOptions& options = {});
// Text form of a literal's value ("{1, 2}", "(1, {2})", "nan").
std::string PrintLiteralValue(const Literal& literal);

// Stable fingerprint of one instruction: its canonical text with operand shapes and layouts
// and the canonical text of the computations it calls; names, metadata and sharding are left
// out. The autotuning cache keys on it.
std::string InstructionFingerprint(const HloInstruction& instruction);

}  // namespace kiln
