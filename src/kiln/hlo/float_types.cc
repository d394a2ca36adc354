#include "kiln/hlo/float_types.h"

#include <cmath>

namespace kiln {

static int MaxBiasedExponent(const FloatFormat& f) {
  int all_ones = (1 << f.exponent_bits) - 1;
  switch (f.nan) {
    case NanEncoding::kIeee:
      return all_ones - 1;  // all-ones exponent is inf/NaN
    default:
      return all_ones;
  }
}

double MiniFloatMax(const FloatFormat& f) {
  int e = MaxBiasedExponent(f);
  uint32_t max_mant = (1u << f.mantissa_bits) - 1;
  if (f.nan == NanEncoding::kAllOnes || f.nan == NanEncoding::kExponentAllOnes) {
    // The all-ones pattern is NaN, so the largest mantissa at the top exponent is one less.
    if (f.mantissa_bits == 0) {
      e -= 1;
    } else {
      max_mant -= 1;
    }
  }
  return std::ldexp(1.0 + double(max_mant) / double(1u << f.mantissa_bits), e - f.bias);
}

double DecodeMiniFloat(const FloatFormat& f, uint32_t bits) {
  const int m = f.mantissa_bits;
  const int eb = f.exponent_bits;
  const uint32_t mant = bits & ((1u << m) - 1);
  const uint32_t exp = (bits >> m) & ((1u << eb) - 1);
  const bool neg = f.has_sign && ((bits >> (m + eb)) & 1);
  const uint32_t all_ones = (1u << eb) - 1;
  switch (f.nan) {
    case NanEncoding::kIeee:
      if (exp == all_ones) {
        if (mant == 0) return neg ? -INFINITY : INFINITY;
        return neg ? -NAN : NAN;
      }
      break;
    case NanEncoding::kAllOnes:
      if (exp == all_ones && mant == (1u << m) - 1) return neg ? -NAN : NAN;
      break;
    case NanEncoding::kNegativeZero:
      if (neg && exp == 0 && mant == 0) return NAN;
      break;
    case NanEncoding::kExponentAllOnes:
      if (exp == all_ones) return NAN;
      break;
    case NanEncoding::kNone:
      break;
  }
  double v;
  if (f.nan == NanEncoding::kExponentAllOnes) {
    v = std::ldexp(1.0, int(exp) - f.bias);  // no subnormals, no zero
  } else if (exp == 0) {
    v = std::ldexp(double(mant), 1 - f.bias - m);
  } else {
    v = std::ldexp(double(mant | (1u << m)), int(exp) - f.bias - m);
  }
  return neg ? -v : v;
}

uint32_t EncodeMiniFloat(const FloatFormat& f, double value) {
  const int m = f.mantissa_bits;
  const int eb = f.exponent_bits;
  const uint32_t sign_bit = f.has_sign ? (1u << (m + eb)) : 0;
  const uint32_t all_ones_exp = (1u << eb) - 1;
  auto nan_bits = [&](bool neg) -> uint32_t {
    switch (f.nan) {
      case NanEncoding::kIeee:
        return (neg ? sign_bit : 0) | (all_ones_exp << m) | (m > 0 ? (1u << (m - 1)) : 1);
      case NanEncoding::kAllOnes:
        return (neg ? sign_bit : 0) | (all_ones_exp << m) | ((1u << m) - 1);
      case NanEncoding::kNegativeZero:
        return sign_bit;
      case NanEncoding::kExponentAllOnes:
        return 0xff;
      case NanEncoding::kNone:
        return (neg ? sign_bit : 0) | (all_ones_exp << m) | ((1u << m) - 1);  // saturates
    }
    return 0;
  };
  const bool neg = std::signbit(value);
  if (std::isnan(value)) return nan_bits(neg);
  if (!f.has_sign && neg) return nan_bits(false);  // unsigned formats: negatives (and -0) are NaN
  double a = std::fabs(value);
  const double max_finite = MiniFloatMax(f);
  auto overflow = [&]() -> uint32_t {
    switch (f.nan) {
      case NanEncoding::kIeee:
        return (neg ? sign_bit : 0) | (all_ones_exp << m);  // infinity
      case NanEncoding::kNone:
        return nan_bits(neg);  // largest finite
      default:
        return nan_bits(neg);
    }
  };
  if (std::isinf(a)) return overflow();
  if (f.nan == NanEncoding::kExponentAllOnes) {
    // Powers of two only; round at the midpoint 1.5 * 2^e, ties up (away from zero), as
    // ml_dtypes 0.6 and XLA's CPU convert do: 3 -> 4, 1.5 * 2^-9 -> 2^-8 (ew_convert_e8m0fnu).
    if (a == 0) return 0xff;  // no zero in this format: NaN, as ml_dtypes converts it
    int e;
    double fr = std::frexp(a, &e);  // a = fr * 2^e, fr in [0.5, 1)
    int ex = e - 1;                 // a = (2*fr) * 2^ex, 2*fr in [1, 2)
    double mant = 2 * fr;
    if (mant >= 1.5) ex += 1;
    int biased = ex + f.bias;
    if (biased < 0) return 0;
    if (biased >= int(all_ones_exp)) return 0xff;
    return uint32_t(biased);
  }
  if (a == 0) {
    if (f.nan == NanEncoding::kNegativeZero) return 0;
    return neg ? sign_bit : 0;
  }
  // Scale so that the unit in the last place is 1, then round to nearest even.
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  int unbiased = e - 1;
  int min_normal = 1 - f.bias;
  int ulp_exp = (unbiased < min_normal ? min_normal : unbiased) - m;
  double scaled = std::ldexp(a, -ulp_exp);  // exact: a power-of-two scaling
  double r = std::nearbyint(scaled);        // default rounding mode: ties to even
  // r is an integer significand in units of 2^ulp_exp; it may have carried to 2^(m+1).
  double rounded = std::ldexp(r, ulp_exp);
  if (rounded > max_finite) return overflow();
  if (r == 0) {
    if (f.nan == NanEncoding::kNegativeZero) return 0;
    return neg ? sign_bit : 0;
  }
  uint64_t sig = uint64_t(r);
  int exp_field;
  uint32_t mant_field;
  if (unbiased < min_normal) {
    // Subnormal (or rounded up into the smallest normal, which the arithmetic below handles).
    if (sig >= (uint64_t(1) << m)) {
      exp_field = 1;
      mant_field = uint32_t(sig - (uint64_t(1) << m));
    } else {
      exp_field = 0;
      mant_field = uint32_t(sig);
    }
  } else {
    int ex = unbiased;
    if (sig >= (uint64_t(2) << m)) {  // carried: 1.111.. rounded up to 10.000..
      sig >>= 1;
      ex += 1;
    }
    exp_field = ex + f.bias;
    mant_field = uint32_t(sig - (uint64_t(1) << m));
  }
  return (neg ? sign_bit : 0) | (uint32_t(exp_field) << m) | mant_field;
}

}  // namespace kiln
