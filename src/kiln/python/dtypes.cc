#include "kiln/python/dtypes.h"

#include <string>

namespace kiln::python {
namespace {

struct Entry {
  PrimitiveType type;
  uint8_t code;
  uint8_t bits;
};

constexpr Entry kEntries[] = {
    {PrimitiveType::kPred, kDLBool, 8},
    {PrimitiveType::kS8, kDLInt, 8},
    {PrimitiveType::kS16, kDLInt, 16},
    {PrimitiveType::kS32, kDLInt, 32},
    {PrimitiveType::kS64, kDLInt, 64},
    {PrimitiveType::kU8, kDLUInt, 8},
    {PrimitiveType::kU16, kDLUInt, 16},
    {PrimitiveType::kU32, kDLUInt, 32},
    {PrimitiveType::kU64, kDLUInt, 64},
    {PrimitiveType::kF16, kDLFloat, 16},
    {PrimitiveType::kF32, kDLFloat, 32},
    {PrimitiveType::kF64, kDLFloat, 64},
    {PrimitiveType::kBF16, kDLBfloat, 16},
    {PrimitiveType::kC64, kDLComplex, 64},
    {PrimitiveType::kC128, kDLComplex, 128},
    {PrimitiveType::kF8E3M4, kDLFloat8_e3m4, 8},
    {PrimitiveType::kF8E4M3, kDLFloat8_e4m3, 8},
    {PrimitiveType::kF8E4M3B11FNUZ, kDLFloat8_e4m3b11fnuz, 8},
    {PrimitiveType::kF8E4M3FN, kDLFloat8_e4m3fn, 8},
    {PrimitiveType::kF8E4M3FNUZ, kDLFloat8_e4m3fnuz, 8},
    {PrimitiveType::kF8E5M2, kDLFloat8_e5m2, 8},
    {PrimitiveType::kF8E5M2FNUZ, kDLFloat8_e5m2fnuz, 8},
    {PrimitiveType::kF8E8M0FNU, kDLFloat8_e8m0fnu, 8},
};

}  // namespace

StatusOr<DLDataType> DlpackTypeOf(PrimitiveType t) {
  for (const Entry& e : kEntries)
    if (e.type == t) return DLDataType{e.code, e.bits, 1};
  return Unimplemented("DLPack has no byte-per-element form of ", PrimitiveTypeName(t),
                       " (kiln stores it one element a byte); use numpy() for an ml_dtypes array");
}

StatusOr<PrimitiveType> PrimitiveTypeOfDlpack(DLDataType t) {
  if (t.lanes != 1) return InvalidArgument("DLPack arrays of ", t.lanes, "-lane vectors are not supported");
  // Older producers mark bool as a 1-byte unsigned integer; those keep their integer meaning.
  for (const Entry& e : kEntries)
    if (e.code == t.code && e.bits == t.bits) return e.type;
  return InvalidArgument("unsupported DLPack element type (code ", static_cast<int>(t.code), ", ",
                         static_cast<int>(t.bits), " bits)");
}

DLDataType RawDlpackTypeOf(PrimitiveType t) {
  return DLDataType{kDLUInt, static_cast<uint8_t>(8 * PrimitiveByteWidth(t)), 1};
}

}  // namespace kiln::python
