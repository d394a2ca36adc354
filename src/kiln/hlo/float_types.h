// Narrow floating-point types: f16, bf16, the f8 family and f4e2m1fn.
//
// Every narrow type is a MiniFloat<Format>: storage bits plus exact conversion to and from
// float/double. Conversion into a narrow type rounds to nearest, ties to even, from the exact
// double value (one rounding, never two). Out-of-range values become inf where the format has
// one, else NaN where it has one, else saturate to the largest finite value (f4e2m1fn) --
// the behaviour of ml_dtypes, which JAX and XLA use.
//
// Arithmetic is done by converting to float, as XLA's evaluator does:
//   kiln::bfloat16 c(float(a) + float(b));
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kiln {

enum class NanEncoding : uint8_t {
  kIeee,          // exponent all ones, mantissa != 0; infinities exist
  kAllOnes,       // "fn": only S.1111.111 is NaN; no infinities
  kNegativeZero,  // "fnuz": the negative-zero bit pattern is the only NaN; no -0, no inf
  kNone,          // no NaN, no inf (f4e2m1fn)
  kExponentAllOnes,  // f8e8m0fnu: 0xff is NaN; no sign, no zero
};

struct FloatFormat {
  int total_bits;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  NanEncoding nan;
  bool has_sign;
};

// Decodes `bits` (low total_bits used) of `format` into a double. Exact.
double DecodeMiniFloat(const FloatFormat& format, uint32_t bits);
// Encodes `value` into `format` with round-to-nearest-even from the exact double.
uint32_t EncodeMiniFloat(const FloatFormat& format, double value);
// Largest finite value of `format`.
double MiniFloatMax(const FloatFormat& format);

inline constexpr FloatFormat kF16Format{16, 5, 10, 15, NanEncoding::kIeee, true};
inline constexpr FloatFormat kBF16Format{16, 8, 7, 127, NanEncoding::kIeee, true};
inline constexpr FloatFormat kF8E5M2Format{8, 5, 2, 15, NanEncoding::kIeee, true};
inline constexpr FloatFormat kF8E4M3FNFormat{8, 4, 3, 7, NanEncoding::kAllOnes, true};
inline constexpr FloatFormat kF8E4M3B11FNUZFormat{8, 4, 3, 11, NanEncoding::kNegativeZero, true};
inline constexpr FloatFormat kF8E5M2FNUZFormat{8, 5, 2, 16, NanEncoding::kNegativeZero, true};
inline constexpr FloatFormat kF8E4M3FNUZFormat{8, 4, 3, 8, NanEncoding::kNegativeZero, true};
inline constexpr FloatFormat kF8E4M3Format{8, 4, 3, 7, NanEncoding::kIeee, true};
inline constexpr FloatFormat kF8E3M4Format{8, 3, 4, 3, NanEncoding::kIeee, true};
inline constexpr FloatFormat kF8E8M0FNUFormat{8, 8, 0, 127, NanEncoding::kExponentAllOnes, false};
inline constexpr FloatFormat kF4E2M1FNFormat{4, 2, 1, 1, NanEncoding::kNone, true};

// Storage type for the bits of a format.
template <int Bits>
using MiniFloatStorage = std::conditional_t<(Bits > 8), uint16_t, uint8_t>;

template <const FloatFormat& F>
class MiniFloat {
 public:
  using Storage = MiniFloatStorage<F.total_bits>;
  static constexpr const FloatFormat& kFormat = F;

  MiniFloat() = default;
  explicit MiniFloat(float v) : bits_(Encode(v)) {}
  explicit MiniFloat(double v) : bits_(Encode(v)) {}
  explicit MiniFloat(int v) : bits_(Encode(static_cast<double>(v))) {}
  explicit MiniFloat(int64_t v) : bits_(Encode(static_cast<double>(v))) {}
  explicit MiniFloat(uint64_t v) : bits_(Encode(static_cast<double>(v))) {}

  static MiniFloat FromBits(Storage bits) {
    MiniFloat f;
    f.bits_ = bits;
    return f;
  }
  Storage bits() const { return bits_; }

  operator float() const { return static_cast<float>(ToDouble()); }  // NOLINT: implicit widening
  double ToDouble() const;

  friend bool operator==(MiniFloat a, MiniFloat b) { return float(a) == float(b); }
  friend bool operator!=(MiniFloat a, MiniFloat b) { return float(a) != float(b); }
  friend bool operator<(MiniFloat a, MiniFloat b) { return float(a) < float(b); }
  friend bool operator>(MiniFloat a, MiniFloat b) { return float(a) > float(b); }
  friend bool operator<=(MiniFloat a, MiniFloat b) { return float(a) <= float(b); }
  friend bool operator>=(MiniFloat a, MiniFloat b) { return float(a) >= float(b); }
  MiniFloat operator-() const { return MiniFloat(-float(*this)); }

 private:
  static Storage Encode(double v);
  Storage bits_ = 0;
};

// f16 and bf16 have fast paths; the rest go through the generic codec.
template <const FloatFormat& F>
inline double MiniFloat<F>::ToDouble() const {
  if constexpr (F.total_bits == 16 && F.exponent_bits == 8) {
    uint32_t u = uint32_t(bits_) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  } else if constexpr (F.total_bits == 16 && F.exponent_bits == 5) {
    // IEEE half -> float by moving fields; subnormals scale exactly in float.
    const uint32_t h = bits_;
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
      float f = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24
      return sign ? -f : f;
    } else if (exp == 0x1f) {
      u = sign | 0x7f800000u | (mant << 13);
    } else {
      u = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  } else {
    return DecodeMiniFloat(F, bits_);
  }
}

template <const FloatFormat& F>
inline typename MiniFloat<F>::Storage MiniFloat<F>::Encode(double v) {
  if constexpr (F.total_bits == 16 && F.exponent_bits == 8) {
    // Exact from float when v is a float; from double we use the generic path to avoid
    // double rounding.
    float f = static_cast<float>(v);
    if (static_cast<double>(f) == v || std::isnan(v)) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (std::isnan(f)) return static_cast<Storage>((u >> 16) | 0x40);
      uint32_t lsb = (u >> 16) & 1;
      u += 0x7fff + lsb;
      return static_cast<Storage>(u >> 16);
    }
  }
  if constexpr (F.total_bits == 16 && F.exponent_bits == 5) {
    float f = static_cast<float>(v);
    if (static_cast<double>(f) == v) {  // exact in float: convert from float bits directly
      uint32_t x;
      std::memcpy(&x, &f, 4);
      const uint32_t sign = (x >> 16) & 0x8000u;
      x &= 0x7fffffffu;
      if (x >= 0x7f800000u)  // inf or NaN (quiet, top payload bits kept)
        return static_cast<Storage>(sign | 0x7c00u | (x > 0x7f800000u ? (0x200u | ((x >> 13) & 0x3ffu)) : 0u));
      if (x >= 0x477ff000u) return static_cast<Storage>(sign | 0x7c00u);  // >= 65520 rounds to inf
      if (x < 0x38800000u) {
        // Below the smallest normal (2^-14): adding 0.5 puts the value's bits at a ulp of
        // 2^-24, so the float adder performs the round-to-nearest-even for us.
        float a;
        std::memcpy(&a, &x, 4);
        a += 0.5f;
        uint32_t r;
        std::memcpy(&r, &a, 4);
        return static_cast<Storage>(sign | (r - 0x3f000000u));
      }
      const uint32_t odd = (x >> 13) & 1u;
      x += 0xc8000fffu + odd;  // rebias exponent (-112 << 23) and round to nearest even
      return static_cast<Storage>(sign | (x >> 13));
    }
  }
  return static_cast<Storage>(EncodeMiniFloat(F, v));
}

using half = MiniFloat<kF16Format>;
using bfloat16 = MiniFloat<kBF16Format>;
using float8_e5m2 = MiniFloat<kF8E5M2Format>;
using float8_e4m3fn = MiniFloat<kF8E4M3FNFormat>;
using float8_e4m3b11fnuz = MiniFloat<kF8E4M3B11FNUZFormat>;
using float8_e5m2fnuz = MiniFloat<kF8E5M2FNUZFormat>;
using float8_e4m3fnuz = MiniFloat<kF8E4M3FNUZFormat>;
using float8_e4m3 = MiniFloat<kF8E4M3Format>;
using float8_e3m4 = MiniFloat<kF8E3M4Format>;
using float8_e8m0fnu = MiniFloat<kF8E8M0FNUFormat>;
using float4_e2m1fn = MiniFloat<kF4E2M1FNFormat>;

template <typename T>
struct IsMiniFloat : std::false_type {};
template <const FloatFormat& F>
struct IsMiniFloat<MiniFloat<F>> : std::true_type {};
template <typename T>
inline constexpr bool kIsMiniFloat = IsMiniFloat<T>::value;

// Sub-byte integers (s1, s2, s4, u1, u2, u4): one element per byte in memory, value kept
// sign-extended (signed) or masked (unsigned). Construction from a wider integer wraps modulo
// 2^Bits, as conversion between integer widths does in XLA.
template <int Bits, bool Signed>
class IntN {
 public:
  using Storage = std::conditional_t<Signed, int8_t, uint8_t>;
  static constexpr int kBits = Bits;
  static constexpr bool kSigned = Signed;

  IntN() = default;
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  IntN(I v) : v_(Wrap(static_cast<int64_t>(v))) {}  // NOLINT: wraps like an integer conversion

  operator int64_t() const { return v_; }  // NOLINT
  Storage value() const { return v_; }
  static constexpr int64_t Min() { return Signed ? -(int64_t(1) << (Bits - 1)) : 0; }
  static constexpr int64_t Max() {
    return Signed ? (int64_t(1) << (Bits - 1)) - 1 : (int64_t(1) << Bits) - 1;
  }

 private:
  static Storage Wrap(int64_t v) {
    uint64_t m = uint64_t(v) & ((uint64_t(1) << Bits) - 1);
    if (Signed && (m >> (Bits - 1)) & 1) return static_cast<Storage>(int64_t(m) - (int64_t(1) << Bits));
    return static_cast<Storage>(m);
  }
  Storage v_ = 0;
};

using int1 = IntN<1, true>;
using int2 = IntN<2, true>;
using int4 = IntN<4, true>;
using uint1 = IntN<1, false>;
using uint2 = IntN<2, false>;
using uint4 = IntN<4, false>;

template <typename T>
struct IsIntN : std::false_type {};
template <int B, bool S>
struct IsIntN<IntN<B, S>> : std::true_type {};
template <typename T>
inline constexpr bool kIsIntN = IsIntN<T>::value;

}  // namespace kiln
