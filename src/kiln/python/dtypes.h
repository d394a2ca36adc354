// Element types across the binding: kiln's PrimitiveType <-> DLPack's DLDataType.
//
// Every array type kiln has maps to a DLPack code: the integers, floats and complex types to
// kDLInt / kDLUInt / kDLFloat / kDLComplex, pred to kDLBool, bf16 to kDLBfloat, the f8 and f4
// types to the codes DLPack 1.1 added. The sub-byte integers (s1..s4, u1..u4) and f4e2m1fn take
// one byte an element in a kiln buffer (backend/buffer.h) as in ml_dtypes' numpy arrays; DLPack
// gives them `bits` < 8, which consumers read as packed, so they are exported with the bits of
// their own width only where a consumer asks for raw bytes (the numpy path in array.cc views a
// uint8 array as the ml_dtypes type instead).
#pragma once

#include <optional>

#include "kiln/base/status.h"
#include "kiln/hlo/types.h"
#include "kiln/python/dlpack.h"

namespace kiln::python {

// The DLPack type of `t`; Unimplemented for the sub-byte types (see above) and non-array types.
StatusOr<DLDataType> DlpackTypeOf(PrimitiveType t);
// The kiln type of a DLPack type; InvalidArgument (naming it) for lanes != 1 and unknown codes.
StatusOr<PrimitiveType> PrimitiveTypeOfDlpack(DLDataType t);
// An unsigned integer of t's byte width (PrimitiveByteWidth): how its bytes travel raw.
DLDataType RawDlpackTypeOf(PrimitiveType t);

}  // namespace kiln::python
