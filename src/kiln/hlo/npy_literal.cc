#include "kiln/hlo/npy_literal.h"

#include <cmath>
#include <cstring>

#include "kiln/base/strings.h"

namespace kiln {

namespace {

using int128 = __int128;

// "[1, 2]" for a linear index of `dims` (row-major); "[]" for scalars.
std::string IndexString(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    if (dims[k] > 0) {
      idx[k] = linear % dims[k];
      linear /= dims[k];
    }
  }
  return StrCat("[", StrJoin(idx, ", "), "]");
}

std::string DimsString(const std::vector<int64_t>& dims) {
  return StrCat("(", StrJoin(dims, ", "), dims.size() == 1 ? ",)" : ")");
}

enum class Category { kPred, kInt, kFloat, kComplex };

Category CategoryOf(PrimitiveType t) {
  if (t == PrimitiveType::kPred) return Category::kPred;
  if (IsComplexType(t)) return Category::kComplex;
  if (IsFloatingPointType(t)) return Category::kFloat;
  return Category::kInt;
}

// [lo, hi] of an integral type, as 128-bit integers.
void IntRange(PrimitiveType t, int128* lo, int128* hi) {
  int bits = PrimitiveBitWidth(t);
  if (IsSignedIntegralType(t)) {
    *lo = -(int128(1) << (bits - 1));
    *hi = (int128(1) << (bits - 1)) - 1;
  } else {
    *lo = 0;
    *hi = (int128(1) << bits) - 1;
  }
}

int128 GetInt(const Literal& l, int64_t i) {
  if (l.shape().element_type() == PrimitiveType::kU64) return l.data<uint64_t>()[i];
  return l.GetAsInt64(i);
}

// Stores v (already in range, or to be wrapped modulo 2^bits) into an integral literal.
void SetInt(Literal& l, int64_t i, int128 v) {
  if (l.shape().element_type() == PrimitiveType::kU64) {
    l.data<uint64_t>()[i] = static_cast<uint64_t>(v);
  } else {
    l.SetFromInt64(i, static_cast<int64_t>(static_cast<uint64_t>(v)));  // wraps like a C++ cast
  }
}

bool SameDouble(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

std::string ValueString(const Literal& l, int64_t i) {
  PrimitiveType t = l.shape().element_type();
  switch (CategoryOf(t)) {
    case Category::kPred: return l.GetAsBool(i) ? "true" : "false";
    case Category::kInt: {
      int128 v = GetInt(l, i);
      return StrCat(v < 0 ? "-" : "", static_cast<uint64_t>(v < 0 ? -v : v));
    }
    case Category::kFloat: return RoundTripDouble(l.GetAsDouble(i));
    case Category::kComplex: {
      auto c = l.GetAsComplex(i);
      return StrCat("(", RoundTripDouble(c.real()), "+", RoundTripDouble(c.imag()), "j)");
    }
  }
  return "?";
}

// Converts element i of `src` into `dst` (of another type). Returns whether the value was kept
// exactly. Inexact values are still stored with XLA's convert semantics (used under --cast).
// `*rounded_ok` is set when the conversion is the allowed float -> narrow float rounding.
bool ConvertElement(const Literal& src, Literal& dst, int64_t i, bool* rounded_ok) {
  PrimitiveType s = src.shape().element_type(), t = dst.shape().element_type();
  Category sc = CategoryOf(s), tc = CategoryOf(t);
  *rounded_ok = false;
  if (tc == Category::kComplex) {
    std::complex<double> c = src.GetAsComplex(i);
    if (sc == Category::kInt) {
      int128 v = GetInt(src, i);
      c = {static_cast<double>(v), 0.0};
      if (static_cast<int128>(c.real()) != v) {
        dst.SetFromComplex(i, c);
        return false;
      }
    }
    dst.SetFromComplex(i, c);
    std::complex<double> back = dst.GetAsComplex(i);
    return SameDouble(back.real(), c.real()) && SameDouble(back.imag(), c.imag());
  }
  bool exact = true;
  if (sc == Category::kComplex) {
    // complex -> real: the imaginary part must be zero (or is dropped under cast).
    std::complex<double> c = src.GetAsComplex(i);
    if (c.imag() != 0) exact = false;
  }
  if (tc == Category::kPred) {
    if (sc == Category::kInt) {
      int128 v = GetInt(src, i);
      dst.SetFromInt64(i, v != 0);
      return exact && (v == 0 || v == 1);
    }
    double d = src.GetAsDouble(i);  // real part for complex
    dst.SetFromInt64(i, d != 0);  // NaN -> true, as XLA's convert
    return exact && (d == 0 || d == 1);
  }
  if (tc == Category::kInt) {
    int128 lo, hi;
    IntRange(t, &lo, &hi);
    if (sc == Category::kInt || sc == Category::kPred) {
      int128 v = sc == Category::kPred ? int128(src.GetAsBool(i)) : GetInt(src, i);
      SetInt(dst, i, v);  // wraps when out of range (cast semantics)
      return exact && v >= lo && v <= hi;
    }
    // float -> int: exact when integral and in range; cast saturates, NaN -> 0.
    double d = src.GetAsDouble(i);
    int bits = PrimitiveBitWidth(t);
    double lo_d = IsSignedIntegralType(t) ? -std::ldexp(1.0, bits - 1) : 0.0;
    double hi_excl = IsSignedIntegralType(t) ? std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits);
    int128 v;
    if (std::isnan(d)) {
      v = 0;
      exact = false;
    } else if (d < lo_d) {
      v = lo;
      exact = false;
    } else if (d >= hi_excl) {
      v = hi;
      exact = false;
    } else {
      v = static_cast<int128>(d);  // truncates toward zero
      if (static_cast<double>(v) != d) exact = false;
    }
    SetInt(dst, i, v);
    return exact;
  }
  // Real float target.
  double d;
  if (sc == Category::kInt || sc == Category::kPred) {
    int128 v = sc == Category::kPred ? int128(src.GetAsBool(i)) : GetInt(src, i);
    d = static_cast<double>(v);
    if (static_cast<int128>(d) != v) exact = false;
  } else {
    d = src.GetAsDouble(i);
  }
  dst.SetFromDouble(i, d);
  double back = dst.GetAsDouble(i);
  if (!SameDouble(back, d)) {
    exact = false;
    // Real floats may round into the narrow float types, as long as finite values stay finite.
    if ((sc == Category::kFloat) && PrimitiveBitWidth(t) <= 16 &&
        (!std::isfinite(d) || std::isfinite(back)) && !(std::isnan(back) && !std::isnan(d)))
      *rounded_ok = true;
  }
  return exact;
}

}  // namespace

std::optional<NpyDtype> NativeNpyDtype(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred: return NpyDtype{'b', 1};
    case PrimitiveType::kS8: return NpyDtype{'i', 1};
    case PrimitiveType::kS16: return NpyDtype{'i', 2};
    case PrimitiveType::kS32: return NpyDtype{'i', 4};
    case PrimitiveType::kS64: return NpyDtype{'i', 8};
    case PrimitiveType::kU8: return NpyDtype{'u', 1};
    case PrimitiveType::kU16: return NpyDtype{'u', 2};
    case PrimitiveType::kU32: return NpyDtype{'u', 4};
    case PrimitiveType::kU64: return NpyDtype{'u', 8};
    case PrimitiveType::kF16: return NpyDtype{'f', 2};
    case PrimitiveType::kF32: return NpyDtype{'f', 4};
    case PrimitiveType::kF64: return NpyDtype{'f', 8};
    case PrimitiveType::kC64: return NpyDtype{'c', 8};
    case PrimitiveType::kC128: return NpyDtype{'c', 16};
    default: return std::nullopt;
  }
}

std::string KilnDtypeMemberName(std::string_view member) { return StrCat(member, ".kiln_dtype"); }

StatusOr<NpyArray> LiteralToNpy(const Literal& literal, const LiteralToNpyOptions& options) {
  const Shape& shape = literal.shape();
  if (!shape.IsArray())
    return InvalidArgument("only arrays can be written to .npy, not ", shape.ToString(false));
  PrimitiveType t = shape.element_type();
  NpyArray a;
  a.shape = shape.dimensions();
  const int64_t n = literal.element_count();
  if (auto native = NativeNpyDtype(t)) {
    a.dtype = *native;
    a.data.assign(literal.untyped_data(), literal.untyped_data() + literal.size_bytes());
    return a;
  }
  ArrayTypeSwitch(t, [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    auto src = literal.data<T>();
    if constexpr (kIsMiniFloat<T>) {
      if (options.raw_bits) {
        using Storage = typename T::Storage;
        a.dtype = {'u', static_cast<int>(sizeof(Storage))};
        a.data.resize(n * sizeof(Storage));
        for (int64_t i = 0; i < n; ++i) {
          Storage b = src[i].bits();
          std::memcpy(&a.data[i * sizeof(Storage)], &b, sizeof(Storage));
        }
      } else {
        a.dtype = {'f', 4};
        a.data.resize(n * 4);
        for (int64_t i = 0; i < n; ++i) {
          float f = static_cast<float>(src[i]);
          std::memcpy(&a.data[i * 4], &f, 4);
        }
      }
    } else if constexpr (kIsIntN<T>) {
      a.dtype = {T::kSigned && !options.raw_bits ? 'i' : 'u', 1};
      a.data.resize(n);
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = static_cast<int64_t>(src[i]);
        a.data[i] = options.raw_bits ? static_cast<uint8_t>(v & ((1 << T::kBits) - 1))
                                     : static_cast<uint8_t>(v);
      }
    }
  });
  if (a.data.size() != static_cast<size_t>(n) * a.dtype.itemsize)
    return Internal("no numpy mapping for ", PrimitiveTypeName(t));
  return a;
}

Status AppendLiteralToNpz(const Literal& literal, const std::string& name,
                          const LiteralToNpyOptions& options, std::vector<NpzMember>& members) {
  KILN_ASSIGN_OR_RETURN(NpyArray a, LiteralToNpy(literal, options));
  members.push_back({name, std::move(a)});
  PrimitiveType t = literal.shape().element_type();
  if (options.raw_bits && !NativeNpyDtype(t)) {
    std::string_view type_name = PrimitiveTypeName(t);
    KILN_ASSIGN_OR_RETURN(NpyArray tag,
                          MakeNpyArray({'S', static_cast<int>(type_name.size())}, {}, type_name));
    members.push_back({KilnDtypeMemberName(name), std::move(tag)});
  }
  return OkStatus();
}

StatusOr<Literal> NpyToLiteral(const NpyArray& array, std::optional<PrimitiveType> raw_type,
                               std::string_view what) {
  if (raw_type) {
    PrimitiveType t = *raw_type;
    if (!IsArrayType(t)) return InvalidArgument(what, ": raw bits of ", PrimitiveTypeName(t), "?");
    int width = PrimitiveByteWidth(t);
    if (array.dtype.itemsize != width || array.dtype.kind == 'S')
      return InvalidArgument(what, ": holds ", array.dtype.Descr(), " elements, not the ", width,
                             "-byte bit patterns of ", PrimitiveTypeName(t));
    KILN_ASSIGN_OR_RETURN(Literal l, Literal::Create(Shape::ArrayWithDefaultLayout(t, array.shape), what));
    std::memcpy(l.untyped_data(), array.data.data(), array.data.size());
    // Sub-byte types and pred keep one value per byte: bring stray high bits into canonical form.
    int bits = PrimitiveBitWidth(t);
    if (t == PrimitiveType::kPred) {
      for (uint8_t& b : std::span<uint8_t>(l.untyped_data(), l.size_bytes())) b = b != 0;
    } else if (bits < 8) {
      ArrayTypeSwitch(t, [&](auto tag) {
        using T = NativeTypeOf<decltype(tag)::value>;
        if constexpr (kIsIntN<T> || kIsMiniFloat<T>) {
          auto d = l.data<T>();
          for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i) {
            uint8_t raw = array.data[i] & ((1 << bits) - 1);
            if constexpr (kIsIntN<T>) {
              d[i] = T(static_cast<int>(raw));
            } else {
              d[i] = T::FromBits(raw);
            }
          }
        }
      });
    }
    return l;
  }
  PrimitiveType t = PrimitiveType::kInvalid;
  const NpyDtype& d = array.dtype;
  switch (d.kind) {
    case 'b': t = PrimitiveType::kPred; break;
    case 'i':
      t = d.itemsize == 1   ? PrimitiveType::kS8
          : d.itemsize == 2 ? PrimitiveType::kS16
          : d.itemsize == 4 ? PrimitiveType::kS32
                            : PrimitiveType::kS64;
      break;
    case 'u':
      t = d.itemsize == 1   ? PrimitiveType::kU8
          : d.itemsize == 2 ? PrimitiveType::kU16
          : d.itemsize == 4 ? PrimitiveType::kU32
                            : PrimitiveType::kU64;
      break;
    case 'f':
      t = d.itemsize == 2 ? PrimitiveType::kF16 : d.itemsize == 4 ? PrimitiveType::kF32 : PrimitiveType::kF64;
      break;
    case 'c': t = d.itemsize == 8 ? PrimitiveType::kC64 : PrimitiveType::kC128; break;
    default:
      return InvalidArgument(what, ": ", d.Descr(), " holds raw bytes whose type kiln cannot know"
                             " here (a ", d.Descr(), " member is read as the bits of the"
                             " parameter it is passed to, or of its .kiln_dtype companion)");
  }
  KILN_ASSIGN_OR_RETURN(Literal l, Literal::Create(Shape::ArrayWithDefaultLayout(t, array.shape), what));
  std::memcpy(l.untyped_data(), array.data.data(), array.data.size());
  if (t == PrimitiveType::kPred)
    for (uint8_t& b : std::span<uint8_t>(l.untyped_data(), l.size_bytes())) b = b != 0;
  return l;
}

StatusOr<Literal> ConvertLiteralForParameter(const Literal& value, PrimitiveType type,
                                             const NpyToLiteralOptions& options,
                                             std::string_view what) {
  PrimitiveType s = value.shape().element_type();
  if (s == type) return value;
  KILN_ASSIGN_OR_RETURN(Literal out, Literal::Create(Shape::ArrayWithDefaultLayout(type, value.shape().dimensions()), what));
  const int64_t n = value.element_count();
  for (int64_t i = 0; i < n; ++i) {
    bool rounded_ok = false;
    bool exact = ConvertElement(value, out, i, &rounded_ok);
    if (!exact && !rounded_ok && !options.allow_cast)
      return InvalidArgument(what, ": element ", IndexString(value.shape().dimensions(), i), " = ",
                             ValueString(value, i), " (", PrimitiveTypeName(s),
                             ") does not convert exactly to ", PrimitiveTypeName(type),
                             "; pass --cast to convert anyway");
  }
  return out;
}

StatusOr<Literal> ConvertNpyForParameter(const NpyArray& array, std::optional<PrimitiveType> raw_type,
                                         const Shape& shape, const NpyToLiteralOptions& options,
                                         std::string_view what) {
  if (!shape.IsArray())
    return InvalidArgument(what, ": a parameter of shape ", shape.ToString(false),
                           " cannot be read from one array");
  if (array.shape != shape.dimensions())
    return InvalidArgument(what, ": has shape ", DimsString(array.shape), " (", array.dtype.Descr(),
                           "), the parameter is ", shape.ToString(false));
  PrimitiveType t = shape.element_type();
  // Void arrays (ml_dtypes bfloat16/float8 as '<V2'/'|V1') are bits of the parameter's type.
  if (!raw_type && array.dtype.kind == 'V') {
    if (array.dtype.itemsize != PrimitiveByteWidth(t))
      return InvalidArgument(what, ": ", array.dtype.Descr(), " raw bytes cannot be bits of ",
                             PrimitiveTypeName(t), " (", PrimitiveByteWidth(t), " bytes)");
    raw_type = t;
  }
  KILN_ASSIGN_OR_RETURN(Literal natural, NpyToLiteral(array, raw_type, what));
  KILN_ASSIGN_OR_RETURN(Literal converted, ConvertLiteralForParameter(natural, t, options, what));
  // Carry the parameter's exact shape (layout, dynamic dimensions); data order is logical.
  KILN_ASSIGN_OR_RETURN(Literal result, Literal::Create(shape, what));
  std::memcpy(result.untyped_data(), converted.untyped_data(), converted.size_bytes());
  return result;
}

// ---- LoadedNpz ----

StatusOr<LoadedNpz> LoadedNpz::Read(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::vector<NpzMember> members, ReadNpzFile(path));
  return FromMembers(std::move(members), path);
}

StatusOr<LoadedNpz> LoadedNpz::FromMembers(std::vector<NpzMember> members, std::string path) {
  LoadedNpz z;
  z.path_ = std::move(path);
  z.members_ = std::move(members);
  return z;
}

std::vector<std::string> LoadedNpz::names() const {
  std::vector<std::string> out;
  for (const NpzMember& m : members_)
    if (!EndsWith(m.name, ".kiln_dtype")) out.push_back(m.name);
  return out;
}

const NpyArray* LoadedNpz::Find(std::string_view name) const {
  for (const NpzMember& m : members_)
    if (m.name == name) return &m.array;
  return nullptr;
}

std::optional<PrimitiveType> LoadedNpz::RawType(std::string_view name) const {
  const NpyArray* tag = Find(KilnDtypeMemberName(name));
  if (!tag || tag->dtype.kind != 'S') return std::nullopt;
  std::string s(tag->data.begin(), tag->data.end());
  while (!s.empty() && s.back() == '\0') s.pop_back();
  auto t = ParsePrimitiveType(s);
  if (!t || !IsArrayType(*t)) return PrimitiveType::kInvalid;  // reported by NpyToLiteral
  return t;
}

StatusOr<Literal> LoadedNpz::ForParameter(std::string_view name, const Shape& shape,
                                          const NpyToLiteralOptions& options) const {
  const NpyArray* a = Find(name);
  if (!a) return NotFound(path_, ": no member '", name, "'");
  return ConvertNpyForParameter(*a, RawType(name), shape, options, StrCat(path_, ":", name));
}

StatusOr<Literal> LoadedNpz::AsLiteral(std::string_view name) const {
  const NpyArray* a = Find(name);
  if (!a) return NotFound(path_, ": no member '", name, "'");
  return NpyToLiteral(*a, RawType(name), StrCat(path_, ":", name));
}

}  // namespace kiln
