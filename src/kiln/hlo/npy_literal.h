// Literals <-> numpy arrays (the .npz inputs and outputs of `kiln run` / `kiln compare`).
//
// The conventions (docs/npz.md has the user-facing version):
//
// Writing a literal:
//   - pred, s8..s64, u8..u64, f16, f32, f64, c64, c128 map to numpy's own dtypes
//     (|b1, <i1.., <u1.., <f2, <f4, <f8, <c8, <c16).
//   - bf16, the f8 types and f4e2m1fn have no numpy dtype: they are written widened to float32
//     (<f4), which is exact for every one of them; s1/s2/s4 widen to |i1 and u1/u2/u4 to |u1.
//   - With raw_bits, those types are written as their bit patterns instead (<u2 for bf16, |u1
//     for the 8- and 4-bit types, value in the low bits) and a companion member
//     "<name>.kiln_dtype" holds the kiln type name as a numpy byte string (|S<n>, 0-d).
//
// Reading an array for a parameter of type T (ConvertNpyForParameter):
//   - the array's shape must equal the parameter's dimensions;
//   - "raw" arrays become bits of T: void dtypes (|V2 / <V2 / |V1, as ml_dtypes writes bf16 and
//     float8 arrays) when their width matches T, and any array with a "<name>.kiln_dtype"
//     companion (its bits are of that type, then converted to T as below);
//   - values convert to T when no value changes: exact conversions always (s8 -> s32,
//     f32 -> f64, f64 -> f32 when every value is an f32, 3.0 -> s32, 0/1 -> pred);
//   - real floats round to nearest even into the narrow float types (f16, bf16, f8, f4) --
//     this is how bf16 programs' values are stored widened to f32 -- as long as a finite value
//     stays finite;
//   - anything else (2.5 -> s32, f64 -> f32 with rounding, 300 -> s8, complex -> real with an
//     imaginary part) is an error naming the first such element, unless allow_cast is set:
//     then values convert as XLA's convert does (float -> int saturates, NaN -> 0; int -> int
//     wraps; complex -> real drops the imaginary part).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/npy.h"
#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"

namespace kiln {

// numpy's own dtype for `t`, or nullopt for types numpy lacks (bf16, f8, f4, sub-byte ints).
std::optional<NpyDtype> NativeNpyDtype(PrimitiveType t);

struct LiteralToNpyOptions {
  bool raw_bits = false;  // see above
};

// The member name of the companion holding a raw-bits member's kiln type.
std::string KilnDtypeMemberName(std::string_view member);

// Appends the members for one array literal `literal` named `name` (the array, and with
// raw_bits for a type numpy lacks, its "<name>.kiln_dtype" companion).
Status AppendLiteralToNpz(const Literal& literal, const std::string& name,
                          const LiteralToNpyOptions& options, std::vector<NpzMember>& members);

// Converts an array literal to a numpy array following the writing rules (without the
// companion member).
StatusOr<NpyArray> LiteralToNpy(const Literal& literal, const LiteralToNpyOptions& options = {});

struct NpyToLiteralOptions {
  bool allow_cast = false;  // kiln's --cast
};

// Converts `array` into a literal of the array shape `shape` following the reading rules.
// `raw_type` is the kiln type recorded by a "<name>.kiln_dtype" companion, if any. `what`
// names the array in errors ("inputs.npz:in0").
StatusOr<Literal> ConvertNpyForParameter(const NpyArray& array, std::optional<PrimitiveType> raw_type,
                                         const Shape& shape, const NpyToLiteralOptions& options,
                                         std::string_view what);

// The literal an array stands for by itself: numpy dtypes map to their kiln type (f4 -> f32,
// b1 -> pred, ...); with `raw_type`, the array holds bits of that type. Void and string arrays
// without a raw type are an error.
StatusOr<Literal> NpyToLiteral(const NpyArray& array, std::optional<PrimitiveType> raw_type,
                               std::string_view what);

// Converts an array literal to `type` following the reading rules (used by
// ConvertNpyForParameter after NpyToLiteral).
StatusOr<Literal> ConvertLiteralForParameter(const Literal& value, PrimitiveType type,
                                             const NpyToLiteralOptions& options,
                                             std::string_view what);

// An .npz held in memory, with the conversions above by member name. Companion members
// ("<name>.kiln_dtype") are not data members: they qualify the member they name.
class LoadedNpz {
 public:
  static StatusOr<LoadedNpz> Read(const std::string& path);
  static StatusOr<LoadedNpz> FromMembers(std::vector<NpzMember> members, std::string path);

  const std::string& path() const { return path_; }
  // Data members (companions excluded), in archive order.
  std::vector<std::string> names() const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  const NpyArray* Find(std::string_view name) const;
  // The kiln type recorded for `name` by its companion, if any.
  std::optional<PrimitiveType> RawType(std::string_view name) const;
  // The member converted for a parameter of `shape`.
  StatusOr<Literal> ForParameter(std::string_view name, const Shape& shape,
                                 const NpyToLiteralOptions& options) const;
  // The member as the literal it stands for by itself (see NpyToLiteral).
  StatusOr<Literal> AsLiteral(std::string_view name) const;

 private:
  std::string path_;
  std::vector<NpzMember> members_;
};

}  // namespace kiln
