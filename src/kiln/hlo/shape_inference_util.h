// Helpers shared by the shape_inference_*.cc files (not a public interface).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/shape.h"

namespace kiln::shape_inference_internal {

// "f32[2,3]" (no layout), or "(f32[2], s32[])".
inline std::string Str(const Shape& s) { return s.ToString(/*print_layout=*/false); }

// "{1,0}"
inline std::string DimsStr(const std::vector<int64_t>& dims) {
  return "{" + StrJoin(dims, ",") + "}";
}

inline Status ExpectArray(const Shape& s, std::string_view what) {
  if (!s.IsArray())
    return InvalidArgument(what, " must be an array, found ", Str(s));
  return OkStatus();
}

// Rejects unbounded ("?") dimensions, which the inference arithmetic does not handle.
inline Status ExpectBounded(const Shape& s, std::string_view what) {
  if (s.IsTuple()) {
    for (const Shape& e : s.tuple_shapes()) KILN_RETURN_IF_ERROR(ExpectBounded(e, what));
    return OkStatus();
  }
  if (!s.IsArray()) return OkStatus();
  for (int64_t i = 0; i < s.rank(); ++i)
    if (s.is_unbounded_dynamic_dimension(i))
      return Unimplemented(what, " has an unbounded dynamic dimension (", Str(s),
                           "); shape inference supports bounded dimensions only");
  return OkStatus();
}

// Equal element types, or both real floating-point (f32 vs bf16 counts as "the same").
inline bool SameTypeIgnoringFpPrecision(PrimitiveType a, PrimitiveType b) {
  if (a == b) return true;
  return IsFloatingPointType(a) && IsFloatingPointType(b);
}

// The higher-precision of two types that are the same ignoring fp precision: wider first,
// then more mantissa bits; `a` on a tie.
inline PrimitiveType HigherPrecisionType(PrimitiveType a, PrimitiveType b) {
  if (a == b || !IsFloatingPointType(a) || !IsFloatingPointType(b)) return a;
  int wa = PrimitiveBitWidth(a), wb = PrimitiveBitWidth(b);
  if (wa != wb) return wa > wb ? a : b;
  return MantissaBits(b) > MantissaBits(a) ? b : a;
}

// A result array shape with the dynamic flags given (or all static).
inline Shape MakeArray(PrimitiveType t, std::vector<int64_t> dims,
                       const std::vector<bool>& dynamic = {}) {
  Shape s(t, std::move(dims));
  for (size_t i = 0; i < dynamic.size() && i < static_cast<size_t>(s.rank()); ++i)
    if (dynamic[i]) s.set_dynamic_dimension(static_cast<int64_t>(i), true);
  return s;
}

// The same array shape with its layout dropped and a new element type.
inline Shape WithType(const Shape& s, PrimitiveType t) {
  Shape r = s;
  r.clear_layout();
  r.set_element_type(t);
  return r;
}

inline Shape NoLayout(const Shape& s) {
  Shape r = s;
  r.clear_layout();
  return r;
}

// Equal element types and dimensions (bounds), recursively through tuples; layouts and
// dynamic flags ignored.
inline bool SameShape(const Shape& a, const Shape& b) {
  if (a.element_type() != b.element_type()) return false;
  if (a.IsTuple()) {
    if (a.tuple_shapes_size() != b.tuple_shapes_size()) return false;
    for (int64_t i = 0; i < a.tuple_shapes_size(); ++i)
      if (!SameShape(a.tuple_shapes(i), b.tuple_shapes(i))) return false;
    return true;
  }
  return a.dimensions() == b.dimensions();
}

inline bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Each entry of `dims` is in [0, rank) and appears once. `what` names the attribute
// ("reduce dimensions").
inline Status CheckDimsInRangeUnique(const std::vector<int64_t>& dims, int64_t rank,
                                     std::string_view what) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return InvalidArgument(what, " ", DimsStr(dims), ": dimension ", d,
                             " is out of range for rank ", rank);
    if (seen[d]) return InvalidArgument(what, " ", DimsStr(dims), ": dimension ", d, " repeats");
    seen[d] = true;
  }
  return OkStatus();
}

inline bool IsSortedStrict(const std::vector<int64_t>& v) {
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i - 1] >= v[i]) return false;
  return true;
}

inline bool IsPermutation(const std::vector<int64_t>& perm, int64_t rank) {
  if (static_cast<int64_t>(perm.size()) != rank) return false;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

// Program shape of a called computation, for the per-family functions.
inline std::string Signature(const ProgramShape& p) {
  std::string s = "(";
  for (size_t i = 0; i < p.parameters.size(); ++i) {
    if (i) s += ", ";
    s += Str(p.parameters[i]);
  }
  return s + ") -> " + Str(p.result);
}

}  // namespace kiln::shape_inference_internal
