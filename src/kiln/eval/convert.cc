// Conversion kernels: convert, bitcast-convert, reduce-precision, stochastic-convert.
//
// convert (XLA's Literal::Convert): float -> integer truncates toward zero, saturating to the
// destination's [min, max], NaN -> 0; integer -> float rounds to nearest even (one rounding,
// also for the narrow floats); float -> narrower float rounds to nearest even; anything -> pred
// is "!= 0"; pred -> number is 0 or 1; complex -> real takes the real part first; integer ->
// integer wraps (two's complement truncation).
//
// bitcast-convert reinterprets bits, element by element when widths match; between widths the
// wider side has an extra minor dimension (f32[N] <-> u8[N,4]) and bytes/nibbles are taken in
// little-endian order (element 0 of the narrow side is the least significant part).
#include <bit>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/elementwise_ops.h"
#include "kiln/eval/kernels.h"

namespace kiln {
namespace eval_internal {
namespace {

// ---- convert ----

// A value on its way between two element types.
struct Val {
  enum Kind : uint8_t { kInt, kUInt, kFloat, kComplex } kind;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::complex<double> c;
};

template <class S>
inline Val Load(S s) {
  Val v;
  if constexpr (kIsPred<S>) {
    v.kind = Val::kInt;
    v.i = s ? 1 : 0;
  } else if constexpr (kIsInt<S>) {
    if constexpr (IsSignedInt<S>()) {
      v.kind = Val::kInt;
      v.i = Widen(s);
    } else {
      v.kind = Val::kUInt;
      v.u = Widen(s);
    }
  } else if constexpr (kIsComplex<S>) {
    v.kind = Val::kComplex;
    v.c = std::complex<double>(s.real(), s.imag());
  } else if constexpr (kIsMiniFloat<S>) {
    v.kind = Val::kFloat;
    v.f = s.ToDouble();
  } else {
    v.kind = Val::kFloat;
    v.f = static_cast<double>(s);
  }
  return v;
}

// A double holding `mag` rounded to 53 bits with round-to-odd, so that a second rounding to a
// format of at most 51 bits is exact-once (correct) rounding.
inline double OddRoundedDouble(uint64_t mag) {
  int bits = std::bit_width(mag);
  if (bits <= 53) return static_cast<double>(mag);
  int shift = bits - 53;
  uint64_t kept = mag >> shift;
  if (mag & LowMask(shift)) kept |= 1;
  return std::ldexp(static_cast<double>(kept), shift);
}

template <class D>
inline D FloatToInt(double f) {
  if (std::isnan(f)) return Narrow<D>(0);
  double max, min;
  if constexpr (kIsIntN<D>) {
    max = static_cast<double>(D::Max());
    min = static_cast<double>(D::Min());
  } else {
    max = static_cast<double>(std::numeric_limits<D>::max());
    min = static_cast<double>(std::numeric_limits<D>::lowest());
  }
  if (f >= max) {
    if constexpr (kIsIntN<D>) return D(D::Max());
    else return std::numeric_limits<D>::max();
  }
  if (f <= min) {
    if constexpr (kIsIntN<D>) return D(D::Min());
    else return std::numeric_limits<D>::lowest();
  }
  if constexpr (IsSignedInt<D>()) return Narrow<D>(static_cast<int64_t>(f));
  else return Narrow<D>(static_cast<uint64_t>(f));
}

template <class D>
inline D Store(const Val& v) {
  if constexpr (kIsPred<D>) {
    switch (v.kind) {
      case Val::kInt: return v.i != 0;
      case Val::kUInt: return v.u != 0;
      case Val::kFloat: return v.f != 0;
      default: return v.c.real() != 0;
    }
  } else if constexpr (kIsInt<D>) {
    switch (v.kind) {
      case Val::kInt: return FromU64<D>(static_cast<uint64_t>(v.i));
      case Val::kUInt: return FromU64<D>(v.u);
      case Val::kFloat: return FloatToInt<D>(v.f);
      default: return FloatToInt<D>(v.c.real());
    }
  } else if constexpr (kIsComplex<D>) {
    using C = typename D::value_type;
    switch (v.kind) {
      case Val::kInt: return D(static_cast<C>(v.i), 0);
      case Val::kUInt: return D(static_cast<C>(v.u), 0);
      case Val::kFloat: return D(static_cast<C>(v.f), 0);
      default: return D(static_cast<C>(v.c.real()), static_cast<C>(v.c.imag()));
    }
  } else if constexpr (kIsMiniFloat<D>) {
    switch (v.kind) {
      case Val::kInt: {
        double m = OddRoundedDouble(v.i < 0 ? uint64_t{0} - static_cast<uint64_t>(v.i)
                                            : static_cast<uint64_t>(v.i));
        return D(v.i < 0 ? -m : m);
      }
      case Val::kUInt: return D(OddRoundedDouble(v.u));
      case Val::kFloat: return D(v.f);
      default: return D(v.c.real());
    }
  } else {  // float, double
    switch (v.kind) {
      case Val::kInt: return static_cast<D>(v.i);
      case Val::kUInt: return static_cast<D>(v.u);
      case Val::kFloat: return static_cast<D>(v.f);
      default: return static_cast<D>(v.c.real());
    }
  }
}

// Converts n elements from `in` (type s) to `out` (type d) through Val, in chunks.
void ConvertElements(PrimitiveType s, const uint8_t* in, PrimitiveType d, uint8_t* out,
                     int64_t n) {
  constexpr int64_t kChunk = 1024;
  Val tmp[kChunk];
  for (int64_t base = 0; base < n; base += kChunk) {
    int64_t m = std::min(kChunk, n - base);
    ArrayTypeSwitch(s, [&](auto tag) {
      using S = NativeTypeOf<decltype(tag)::value>;
      const S* src = reinterpret_cast<const S*>(in) + base;
      for (int64_t i = 0; i < m; ++i) tmp[i] = Load(src[i]);
    });
    ArrayTypeSwitch(d, [&](auto tag) {
      using D = NativeTypeOf<decltype(tag)::value>;
      D* dst = reinterpret_cast<D*>(out) + base;
      for (int64_t i = 0; i < m; ++i) dst[i] = Store<D>(tmp[i]);
    });
  }
}

StatusOr<Literal> EvalConvert(const HloInstruction& instr, std::span<const Literal* const> ops,
                              Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  if (!instr.shape().IsArray() || a.shape().dimensions() != instr.shape().dimensions())
    return InvalidArgument("convert %", instr.name(), ": operand ", a.shape().ToString(false),
                           " does not match the result ", instr.shape().ToString(false));
  Literal out(instr.shape());
  if (a.shape().element_type() == out.shape().element_type()) {
    // An empty array has no data pointer: memcpy of null is undefined even for 0 bytes (UBSan).
    if (a.size_bytes() > 0) std::memcpy(out.untyped_data(), a.untyped_data(), a.size_bytes());
    return out;
  }
  ConvertElements(a.shape().element_type(), a.untyped_data(), out.shape().element_type(),
                  out.untyped_data(), out.element_count());
  return out;
}

// ---- bitcast-convert ----

}  // namespace

// Bits per element as bitcast-convert sees them (pred is a byte, as in XLA).
int BitcastWidth(PrimitiveType t) { return t == PrimitiveType::kPred ? 8 : PrimitiveBitWidth(t); }

// Raw bits of a sub-byte element as stored in a Literal (one byte, IntN sign-extended).
static uint64_t ReadSubByte(PrimitiveType t, uint8_t byte) {
  return byte & LowMask(PrimitiveBitWidth(t));
}
static uint8_t WriteSubByte(PrimitiveType t, uint64_t bits) {
  int w = PrimitiveBitWidth(t);
  if (IsSignedIntegralType(t)) return static_cast<uint8_t>(SignExtend(bits, w));
  return static_cast<uint8_t>(bits & LowMask(w));
}

// Packs the elements of `l` into a little-endian bit stream.
std::vector<uint8_t> PackBits(const Literal& l) {
  PrimitiveType t = l.shape().element_type();
  int w = BitcastWidth(t);
  if (w % 8 == 0) return std::vector<uint8_t>(l.untyped_data(), l.untyped_data() + l.size_bytes());
  int64_t n = l.element_count();
  std::vector<uint8_t> bytes((n * w + 7) / 8, 0);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = ReadSubByte(t, l.untyped_data()[i]);
    int64_t pos = i * w;
    for (int b = 0; b < w; ++b, ++pos)
      if ((bits >> b) & 1) bytes[pos / 8] |= static_cast<uint8_t>(1u << (pos % 8));
  }
  return bytes;
}

void UnpackBits(const std::vector<uint8_t>& bytes, Literal& out) {
  PrimitiveType t = out.shape().element_type();
  int w = BitcastWidth(t);
  if (w % 8 == 0) {
    std::memcpy(out.untyped_data(), bytes.data(), std::min(bytes.size(), out.size_bytes()));
    if (t == PrimitiveType::kPred) {  // keep pred bytes canonical
      for (size_t i = 0; i < out.size_bytes(); ++i) out.untyped_data()[i] = out.untyped_data()[i] != 0;
    }
    return;
  }
  int64_t n = out.element_count();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    int64_t pos = i * w;
    for (int b = 0; b < w; ++b, ++pos)
      if ((bytes[pos / 8] >> (pos % 8)) & 1) bits |= uint64_t{1} << b;
    out.untyped_data()[i] = WriteSubByte(t, bits);
  }
}

namespace {

StatusOr<Literal> EvalBitcastConvert(const HloInstruction& instr,
                                     std::span<const Literal* const> ops, Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  if (!instr.shape().IsArray())
    return InvalidArgument("bitcast-convert %", instr.name(), " must produce an array");
  const Shape& in = a.shape();
  const Shape& res = instr.shape();
  int wi = BitcastWidth(in.element_type()), wo = BitcastWidth(res.element_type());
  if (wi == 0 || wo == 0) return UnsupportedInstruction(instr, "element type");
  // Dimension rule: equal widths keep the dimensions; otherwise the wider side has an extra
  // minor dimension of size ratio.
  std::vector<int64_t> expect = in.dimensions();
  if (wi > wo) {
    if (wi % wo) return InvalidArgument("bitcast-convert %", instr.name(), ": widths not divisible");
    expect.push_back(wi / wo);
  } else if (wi < wo) {
    if (wo % wi || in.rank() == 0 || in.dimensions().back() != wo / wi)
      return InvalidArgument("bitcast-convert %", instr.name(), ": operand ", in.ToString(false),
                             " cannot be bitcast to ", res.ToString(false));
    expect.pop_back();
  }
  if (expect != res.dimensions())
    return InvalidArgument("bitcast-convert %", instr.name(), ": operand ", in.ToString(false),
                           " cannot be bitcast to ", res.ToString(false));
  Literal out(res);
  if (wi % 8 == 0 && wo % 8 == 0) {
    if (std::min(a.size_bytes(), out.size_bytes()) > 0)  // empty: no data pointers (UBSan)
      std::memcpy(out.untyped_data(), a.untyped_data(), std::min(a.size_bytes(), out.size_bytes()));
    if (res.element_type() == PrimitiveType::kPred)
      for (size_t i = 0; i < out.size_bytes(); ++i) out.untyped_data()[i] = out.untyped_data()[i] != 0;
    return out;
  }
  UnpackBits(PackBits(a), out);
  return out;
}

// ---- reduce-precision ----

template <class F, class U>
F ReducePrecisionBits(F x, int exponent_bits, int mantissa_bits) {
  constexpr int kBits = sizeof(F) * 8;
  constexpr int kSrcMant = std::numeric_limits<F>::digits - 1;
  constexpr int kSrcExp = kBits - kSrcMant - 1;
  U v = std::bit_cast<U>(x);
  if (mantissa_bits < kSrcMant) {
    // Round to nearest even at the last kept mantissa bit; a carry into the exponent is right.
    const U last = U{1} << (kSrcMant - mantissa_bits);
    const U base_bias = (last >> 1) - 1;
    const U x_last = (v & last) >> (kSrcMant - mantissa_bits);
    v = (v + x_last + base_bias) & ~(last - 1);
  }
  if (exponent_bits < kSrcExp) {
    const U sign_mask = U{1} << (kBits - 1);
    const U exp_mask = ((U{1} << kSrcExp) - 1) << kSrcMant;
    const U bias = (U{1} << (kSrcExp - 1)) - 1;
    const U reduced_bias = (U{1} << (exponent_bits - 1)) - 1;
    const U max_exp = bias + reduced_bias;
    const U min_exp = bias - reduced_bias;
    const U x_exp = v & exp_mask;
    const U zero = v & sign_mask;
    if (x_exp > (max_exp << kSrcMant)) v = zero | exp_mask;  // overflow: signed infinity
    if (x_exp <= (min_exp << kSrcMant)) v = zero;            // underflow (and subnormals): zero
  }
  F r = std::bit_cast<F>(v);
  if (std::isnan(x)) r = mantissa_bits > 0 ? x : std::numeric_limits<F>::infinity();
  return r;
}

template <class T>
T ReducePrecisionOf(T x, int exponent_bits, int mantissa_bits) {
  if constexpr (std::is_same_v<T, double>) {
    return ReducePrecisionBits<double, uint64_t>(x, exponent_bits, mantissa_bits);
  } else {
    return Narrow<T>(
        ReducePrecisionBits<float, uint32_t>(Widen(x), exponent_bits, mantissa_bits));
  }
}

Status CheckReducePrecisionBits(const HloInstruction& instr) {
  if (instr.attrs().exponent_bits < 1 || instr.attrs().mantissa_bits < 0)
    return InvalidArgument("reduce-precision %", instr.name(), ": exponent_bits must be >= 1 and ",
                           "mantissa_bits >= 0");
  return OkStatus();
}

StatusOr<Literal> EvalReducePrecision(const HloInstruction& instr,
                                      std::span<const Literal* const> ops, Evaluator&) {
  const Literal& a = *ops[0];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(CheckReducePrecisionBits(instr));
  if (!Shape::Compatible(a.shape(), instr.shape()))
    return InvalidArgument("reduce-precision %", instr.name(), ": the result ",
                           instr.shape().ToString(false), " differs from the operand ",
                           a.shape().ToString(false));
  Literal out(instr.shape());
  const int eb = static_cast<int>(std::min<int64_t>(instr.attrs().exponent_bits, 64));
  const int mb = static_cast<int>(std::min<int64_t>(instr.attrs().mantissa_bits, 64));
  Status status;
  ArrayTypeSwitch(a.shape().element_type(), [&](auto tag) {
    using T = NativeTypeOf<decltype(tag)::value>;
    if constexpr (kIsFloat<T>) {
      const T* in = a.data<T>().data();
      T* o = out.data<T>().data();
      for (int64_t i = 0; i < out.element_count(); ++i) o[i] = ReducePrecisionOf(in[i], eb, mb);
    } else {
      status = UnsupportedInstruction(instr, "reduce-precision of a non-float type");
    }
  });
  KILN_RETURN_IF_ERROR(status);
  return out;
}

// ---- stochastic-convert ----

// Float -> integer, XLA's evaluator algorithm: saturate, NaN -> 0, and round the magnitude up
// when random < fraction * 2^bits(random).
template <class D>
D StochasticToInt(double operand, uint64_t random, int random_bits) {
  bool neg = std::signbit(operand);
  double max, min;
  if constexpr (kIsIntN<D>) {
    max = static_cast<double>(D::Max());
    min = static_cast<double>(D::Min());
  } else {
    max = static_cast<double>(std::numeric_limits<D>::max());
    min = static_cast<double>(std::numeric_limits<D>::lowest());
  }
  if (std::isnan(operand)) return Narrow<D>(0);
  if (std::isinf(operand) || operand >= max || operand <= min)
    return FloatToInt<D>(neg ? -INFINITY : INFINITY);
  double a = std::fabs(operand);
  double truncated = std::trunc(a);
  double fraction = a - truncated;
  int64_t t = static_cast<int64_t>(truncated);
  if (fraction != 0) {
    uint64_t fixed = static_cast<uint64_t>(std::ldexp(fraction, random_bits));
    if (random < fixed) ++t;
  }
  return FromU64<D>(static_cast<uint64_t>(neg ? -t : t));
}

// Float -> narrower float: picks between the two neighbours of the exact value, rounding away
// from zero with probability equal to the fraction of the gap.
template <class D>
D StochasticToFloat(double v, uint64_t random, int random_bits) {
  D r = Store<D>(Load(v));
  double rv = static_cast<double>(Widen(r));
  if (std::isnan(v) || std::isinf(v) || rv == v || std::isnan(rv) || std::isinf(rv)) return r;
  // Step one unit in the last place of D, away from (+1) or toward (-1) zero.
  auto step = [](D x, int dir) -> D {
    if constexpr (std::is_same_v<D, float>) {
      uint32_t b = std::bit_cast<uint32_t>(x);
      uint32_t mag = (b & 0x7fffffffu) + dir;
      return std::bit_cast<float>((b & 0x80000000u) | mag);
    } else if constexpr (std::is_same_v<D, double>) {
      uint64_t b = std::bit_cast<uint64_t>(x);
      uint64_t mag = (b & ~(uint64_t{1} << 63)) + dir;
      return std::bit_cast<double>((b & (uint64_t{1} << 63)) | mag);
    } else {
      const int bits = D::kFormat.total_bits;
      uint32_t sign = D::kFormat.has_sign ? (1u << (bits - 1)) : 0;
      uint32_t b = x.bits();
      uint32_t mag = (b & ~sign) + dir;
      return D::FromBits(static_cast<typename D::Storage>((b & sign) | (mag & ~sign)));
    }
  };
  D lo = r, hi = r;
  if (std::fabs(rv) > std::fabs(v)) lo = step(r, -1);
  else hi = step(r, +1);
  double lv = static_cast<double>(Widen(lo)), hv = static_cast<double>(Widen(hi));
  double fraction = (std::fabs(v) - std::fabs(lv)) / (std::fabs(hv) - std::fabs(lv));
  uint64_t fixed = static_cast<uint64_t>(std::ldexp(fraction, random_bits));
  return random < fixed ? hi : lo;
}

StatusOr<Literal> EvalStochasticConvert(const HloInstruction& instr,
                                        std::span<const Literal* const> ops, Evaluator&) {
  const Literal& a = *ops[0];
  const Literal& rnd = *ops[1];
  KILN_RETURN_IF_ERROR(ExpectArray(a, instr, "operand"));
  KILN_RETURN_IF_ERROR(ExpectArray(rnd, instr, "random"));
  PrimitiveType rt = rnd.shape().element_type();
  if (!IsUnsignedIntegralType(rt) || !IsFloatingPointType(a.shape().element_type()) ||
      a.shape().dimensions() != rnd.shape().dimensions() || !instr.shape().IsArray() ||
      instr.shape().dimensions() != a.shape().dimensions())
    return InvalidArgument("stochastic-convert %", instr.name(),
                           ": expects a float operand and unsigned random bits of its shape");
  const int random_bits = PrimitiveBitWidth(rt);
  Literal out(instr.shape());
  const int64_t n = out.element_count();
  Status status;
  ArrayTypeSwitch(instr.shape().element_type(), [&](auto tag) {
    using D = NativeTypeOf<decltype(tag)::value>;
    if constexpr (kIsInt<D> || kIsFloat<D>) {
      D* o = out.data<D>().data();
      for (int64_t i = 0; i < n; ++i) {
        double v = a.GetAsDouble(i);
        uint64_t r = static_cast<uint64_t>(rnd.GetAsInt64(i)) & LowMask(random_bits);
        if constexpr (kIsInt<D>) o[i] = StochasticToInt<D>(v, r, random_bits);
        else o[i] = StochasticToFloat<D>(v, r, random_bits);
      }
    } else {
      status = UnsupportedInstruction(instr, "result type");
    }
  });
  KILN_RETURN_IF_ERROR(status);
  return out;
}

// ---- element functions ----

void ConvertThunk(const HloInstruction* c, const void* const* in, void* out) {
  ConvertElements(c->operand(0)->shape().element_type(), static_cast<const uint8_t*>(in[0]),
                  c->shape().element_type(), static_cast<uint8_t*>(out), 1);
}

void BitcastThunk(const HloInstruction* c, const void* const* in, void* out) {
  PrimitiveType s = c->operand(0)->shape().element_type(), d = c->shape().element_type();
  if (BitcastWidth(s) % 8 == 0) {
    std::memcpy(out, in[0], PrimitiveByteWidth(d));
    if (d == PrimitiveType::kPred) *static_cast<uint8_t*>(out) = *static_cast<uint8_t*>(out) != 0;
  } else {
    *static_cast<uint8_t*>(out) = WriteSubByte(d, ReadSubByte(s, *static_cast<const uint8_t*>(in[0])));
  }
}

template <class T>
void ReducePrecisionThunk(const HloInstruction* c, const void* const* in, void* out) {
  *static_cast<T*>(out) =
      ReducePrecisionOf(*static_cast<const T*>(in[0]),
                        static_cast<int>(std::min<int64_t>(c->attrs().exponent_bits, 64)),
                        static_cast<int>(std::min<int64_t>(c->attrs().mantissa_bits, 64)));
}

}  // namespace

StatusOr<ElementFn> ResolveConvertElementFn(const HloInstruction& instr) {
  PrimitiveType s = instr.operand(0)->shape().element_type(), d = instr.shape().element_type();
  switch (instr.opcode()) {
    case HloOpcode::kConvert:
      return &ConvertThunk;
    case HloOpcode::kBitcastConvert:
      if (BitcastWidth(s) != BitcastWidth(d)) return UnsupportedInstruction(instr, "widths differ");
      return &BitcastThunk;
    case HloOpcode::kReducePrecision: {
      KILN_RETURN_IF_ERROR(CheckReducePrecisionBits(instr));
      ElementFn fn = ArrayTypeSwitch(s, [&](auto tag) -> ElementFn {
        using T = NativeTypeOf<decltype(tag)::value>;
        if constexpr (kIsFloat<T>) return &ReducePrecisionThunk<T>;
        else return nullptr;
      });
      if (!fn || s != d) return UnsupportedInstruction(instr, "element type");
      return fn;
    }
    default:
      return UnsupportedInstruction(instr, "not a conversion");
  }
}

void RegisterConvertKernels(KernelRegistry& r) {
  r.Register(HloOpcode::kConvert, EvalConvert);
  r.Register(HloOpcode::kBitcastConvert, EvalBitcastConvert);
  r.Register(HloOpcode::kReducePrecision, EvalReducePrecision);
  r.Register(HloOpcode::kStochasticConvert, EvalStochasticConvert);
}

}  // namespace eval_internal
}  // namespace kiln
