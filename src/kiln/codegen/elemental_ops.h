// The CUDA C++ expression of one elementwise HLO op on register values, with XLA's semantics
// (see kiln_codegen.cuh and device_types.h for the conventions). Internal to codegen/.
//
// Transcendentals use CUDA's accurate math library (no --use_fast_math): expf, logf, tanhf,
// erff, sinf, ... are within 1-2 ulp (CUDA C Programming Guide, "Mathematical Functions"),
// rsqrtf within 2 ulp, sqrtf and division are correctly rounded. That is far inside the f32
// tolerance of eval/tolerance.h (rtol 1e-5, about 84 ulp) and matches or beats XLA's GPU
// backend, which calls the same libdevice functions (and a fast tanh approximation for f16).
#pragma once

#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/hlo/instruction.h"

namespace kiln::codegen {

class ElementalOps {
 public:
  // Whether Expression handles `op` (elementwise math, compare, select, clamp, convert,
  // bitcast-convert, reduce-precision, complex/real/imag).
  static bool Supports(HloOpcode op);
  // The expression computing `instr` from its operands' values (RegisterType of the result).
  // Unimplemented for type/op pairs without generated code (e.g. complex trigonometry).
  static StatusOr<std::string> Expression(const HloInstruction& instr,
                                          const std::vector<Value>& operands);
  // `value` of type `from` converted to `to` with XLA's convert semantics.
  static StatusOr<std::string> Convert(PrimitiveType from, PrimitiveType to, const std::string& value);
  // The raw bits of register value `value` of type t as an unsigned integer expression (u32 for
  // types of 32 bits or less, u64 for 64-bit types), and the inverse.
  static StatusOr<std::string> ToBits(PrimitiveType t, const std::string& value);
  static StatusOr<std::string> FromBits(PrimitiveType t, const std::string& bits);
};

}  // namespace kiln::codegen
