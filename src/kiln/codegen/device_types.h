// How HLO element types look in generated CUDA C++: the type a value has in registers, the
// type it has in memory, and the conversions between them.
//
// Note [Narrow floats in registers]
//   f16, bf16, the f8 family, f8e8m0fnu and f4e2m1fn values are held in registers as `float`
//   values that are exactly representable in their type. Every operation producing such a type
//   computes in f32 and rounds the result back to the type (round to nearest even) with
//   RoundFloat(): the per-operation rounding of XLA's elemental emitter and of kiln's reference
//   evaluator, and exact for +, -, *, /, sqrt (f32 has more than twice the bits of bf16/f16 plus
//   two). Loads convert from storage (__half, __nv_bfloat16, bits of an f8 byte) to float; stores
//   convert back, exactly. f16/bf16 round with cuda_fp16.h/cuda_bf16.h conversions (__float2half_rn,
//   __float2bfloat16_rn: round to nearest even, overflow to infinity, as XLA), except NaNs,
//   whose bits the prelude's kiln_load_*/kiln_store_*/kiln_round_* handle as the evaluator's
//   codec does (payloads survive loads, stores and bitcast-convert; docs/codegen.md). The f8 and f4
//   formats use kiln's own codec (kiln_codegen.cuh), which follows ml_dtypes exactly (overflow
//   to NaN for the "fn"/"fnuz" formats, saturation for f4e2m1fn, no negative zero for "fnuz"),
//   including the formats CUDA has no type for.
//
// Sub-byte integers (s1, s2, s4, u1, u2, u4) take one byte each in memory (as in kiln's buffers
// and literals), held as s8/u8 in registers with the value wrapped to the type's width
// (sign-extended for signed types) after every operation. pred is one byte (0 or 1) in memory
// and `bool` in registers. c64/c128 are kiln_c64/kiln_c128 structs {re, im}.
#pragma once

#include <string>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/types.h"

namespace kiln::codegen {

// Whether generated code can hold values of type t (every array type: all kiln's types).
bool IsDeviceSupportedType(PrimitiveType t);

// The C type of a value in registers ("float", "s32", "bool", "kiln_c64").
std::string RegisterType(PrimitiveType t);
// The C type of an element in memory ("__nv_bfloat16", "u8", "float").
std::string StorageType(PrimitiveType t);
// Bytes of one element in memory.
int StorageBytes(PrimitiveType t);
// sizeof(RegisterType(t)).
int RegisterBytes(PrimitiveType t);

// True for the types held as rounded floats (see the Note).
bool IsNarrowFloat(PrimitiveType t);
// Bits of a sub-byte integer type (s4: 4), or 0 for other types.
int SubByteBits(PrimitiveType t);

// `storage` (an expression of StorageType(t)) as a register value.
std::string LoadConvert(PrimitiveType t, const std::string& storage);
// `value` (a register expression) as the storage type.
std::string StoreConvert(PrimitiveType t, const std::string& value);
// For narrow floats: `f32_value` rounded to t (a float expression); for f32/f64: unchanged.
std::string RoundFloat(PrimitiveType t, const std::string& f32_value);
// RoundFloat for the result of an f32 +, -, * or /: the same bits (the GPU's arithmetic gives
// only the canonical NaN), fewer instructions for bf16 (kiln_round_bf16_arith).
std::string RoundArithmetic(PrimitiveType t, const std::string& f32_value);
// For sub-byte integers: `value` wrapped to the type's width; other types unchanged.
std::string WrapInt(PrimitiveType t, const std::string& value);

// The C literal for element `i` of array literal `literal` (register type).
StatusOr<std::string> ElementLiteral(const Literal& literal, int64_t i);
// The bits of element `i` of a literal whose register type is float (f32, the narrow floats) as
// a register holds it: NaN payloads as loads and rounding keep them (see the prelude).
uint32_t RegisterFloatBits(const Literal& literal, int64_t i);
// Literals for simple values of type t.
std::string ZeroLiteral(PrimitiveType t);
std::string OneLiteral(PrimitiveType t);
std::string FloatLiteral(double v, PrimitiveType t);  // t: a real float type
std::string IntLiteral(int64_t v, PrimitiveType t);   // t: integral (not pred)

// Name of the kiln codec functions for a narrow float ("bf16", "f8e4m3fn", ...); empty for
// other types.
std::string NarrowFloatName(PrimitiveType t);

// The shared header every generated kernel includes, and its include name.
// CodegenPrelude is CUDA C++; CodegenHipPrelude the same helpers in the HIP dialect (Note [HIP
// dialect] in prelude.cc), under the same include name.
const char* CodegenPreludeName();  // "kiln_codegen.cuh"
const std::string& CodegenPrelude();
const std::string& CodegenHipPrelude();

}  // namespace kiln::codegen
