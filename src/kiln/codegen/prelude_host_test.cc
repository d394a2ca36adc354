// The prelude's scalar semantics without a GPU (label cpu): the narrow-float and complex
// sections of kiln_codegen.cuh are compiled by the host C++ compiler against a small shim of
// the CUDA intrinsics they use, loaded as a shared library, and checked bit for bit against
// kiln's codecs (src/kiln/hlo/float_types.h) and std::complex -- the evaluator's semantics --
// over every f16/bf16/f8 bit pattern, NaN payloads, rounding edges and special values.
// Skipped when no host compiler is found (set KILN_HOST_CXX to choose one).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kiln/codegen/device_types.h"
#include "kiln/hlo/float_types.h"

namespace kiln::codegen {
namespace {

namespace fs = std::filesystem;

// Host stand-ins for the CUDA intrinsics the two sections use. f16/bf16 conversions of non-NaN
// values round to nearest even in one step, as cuda_fp16.h/cuda_bf16.h do.
constexpr const char* kShim = R"CPP(
#include <math.h>
#include <cmath>
#include <cstdint>
#include <cstring>
using namespace std;
typedef signed char s8; typedef unsigned char u8; typedef short s16; typedef unsigned short u16;
typedef int s32; typedef unsigned int u32; typedef long long s64; typedef unsigned long long u64;
#define KILN_DEVICE static inline
static inline float __uint_as_float(u32 u) { float f; memcpy(&f, &u, 4); return f; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline u32 __float_as_uint(float f) { u32 u; memcpy(&u, &f, 4); return u; }
static inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
static inline long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }
#define KILN_INF_F __int_as_float(0x7f800000)
#define KILN_NAN_F __int_as_float(0x7fc00000)
#define KILN_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define KILN_NAN_D __longlong_as_double(0x7ff8000000000000LL)
struct __half { u16 x; };
struct __nv_bfloat16 { u16 x; };
static inline u16 __half_as_ushort(__half h) { return h.x; }
static inline __half __ushort_as_half(u16 b) { return __half{b}; }
static inline u16 __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(u16 b) { return __nv_bfloat16{b}; }
static inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((u32)h.x << 16); }
static inline float __half2float(__half h) {
  const u32 s = (h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1fu, m = h.x & 0x3ffu;
  if (e == 0) { const float v = ldexpf((float)m, -24); return s ? -v : v; }
  if (e == 0x1f) return __uint_as_float(s | 0x7f800000u | (m << 13));
  return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
}
// Round |x| (finite, non-NaN) to `mant` fraction bits with normals from 2^min_exp; returns the
// rounded value as a double, or inf past `max`.
static inline double shim_round(double x, int mant, int min_exp, double max) {
  if (x == 0 || isinf(x)) return x;
  int e;
  frexp(x, &e);
  const int ulp = ((e - 1) < min_exp ? min_exp : (e - 1)) - mant;
  const double r = ldexp(nearbyint(ldexp(x, -ulp)), ulp);
  return fabs(r) > max ? copysign(INFINITY, x) : r;
}
static inline u16 shim_f16_bits(double x) {
  const double r = shim_round(x, 10, -14, 65504.0);
  const u32 s = signbit(r) ? 0x8000u : 0u;
  const double a = fabs(r);
  if (isinf(a)) return (u16)(s | 0x7c00u);
  if (a < ldexp(1.0, -14)) return (u16)(s | (u32)ldexp(a, 24));
  int e;
  const double f = frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  return (u16)(s | ((u32)(e - 1 + 15) << 10) | ((u32)ldexp(f * 2 - 1, 10)));
}
static inline __half __float2half_rn(float x) { return __half{shim_f16_bits(x)}; }
static inline __half __double2half(double x) { return __half{shim_f16_bits(x)}; }
static inline __nv_bfloat16 __double2bfloat16(double x) {
  const float f = (float)shim_round(x, 7, -126, 3.3895313892515355e38);
  return __nv_bfloat16{(u16)(__float_as_uint(f) >> 16)};
}
static inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __double2bfloat16(x); }
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
)CPP";

// Entry points the test calls (extern "C", plain types).
constexpr const char* kExports = R"CPP(
extern "C" {
float h_round_bf16(float x) { return kiln_round_bf16(x); }
float h_round_f16(float x) { return kiln_round_f16(x); }
float h_round_bf16_d(double x) { return kiln_round_bf16(x); }
float h_round_f16_d(double x) { return kiln_round_f16(x); }
u32 h_bf16_bits(float x) { return kiln_bf16_bits(x); }
u32 h_f16_bits(float x) { return kiln_f16_bits(x); }
float h_bf16_from_bits(u32 b) { return kiln_bf16_from_bits(b); }
float h_f16_from_bits(u32 b) { return kiln_f16_from_bits(b); }
#define H_MINI(name) \
  u32 h_encode_##name(float x) { return kiln_encode_##name(x); } \
  float h_decode_##name(u32 b) { return kiln_decode_##name(b); }
H_MINI(f8e5m2) H_MINI(f8e4m3fn) H_MINI(f8e4m3b11fnuz) H_MINI(f8e5m2fnuz) H_MINI(f8e4m3fnuz)
H_MINI(f8e4m3) H_MINI(f8e3m4) H_MINI(f8e8m0fnu) H_MINI(f4e2m1fn)
void h_cdiv64(const float* a, const float* b, float* out) {
  const kiln_c64 r = kiln_cdiv(kiln_c64{a[0], a[1]}, kiln_c64{b[0], b[1]});
  out[0] = r.re; out[1] = r.im;
}
void h_cdiv128(const double* a, const double* b, double* out) {
  const kiln_c128 r = kiln_cdiv(kiln_c128{a[0], a[1]}, kiln_c128{b[0], b[1]});
  out[0] = r.re; out[1] = r.im;
}
}
)CPP";

// The prelude's text from `begin` up to (not including) `end`.
std::string Section(const std::string& prelude, const std::string& begin, const std::string& end) {
  size_t b = prelude.find(begin), e = prelude.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  return prelude.substr(b, e - b);
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

class PreludeHostTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* env = std::getenv("KILN_HOST_CXX");
    std::string cxx = env != nullptr && *env != '\0' ? env : "c++";
    if (std::system((cxx + " --version > /dev/null 2>&1").c_str()) != 0) {
      skip_ = "no host C++ compiler (" + cxx + ")";
      return;
    }
    const std::string prelude = CodegenPrelude();
    const std::string body = Section(prelude, "// ---- Narrow floats", "// ---- Warp shuffles");
    ASSERT_FALSE(body.empty()) << "prelude sections not found";
    dir_ = fs::temp_directory_path() / ("kiln_prelude_host_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const fs::path src = dir_ / "prelude_host.cc", lib = dir_ / "prelude_host.so";
    std::ofstream(src) << kShim << body << kExports;
    const std::string cmd = cxx + " -std=c++17 -O1 -fPIC -shared -w -o " + lib.string() + " " +
                            src.string() + " > " + (dir_ / "log").string() + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream log(dir_ / "log");
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      FAIL() << "host compile of the prelude failed:\n" << text.substr(0, 4000);
    }
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
  }
  static void TearDownTestSuite() {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = nullptr;
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(handle_, nullptr);
  }
  template <typename F>
  static F* Fn(const char* name) {
    void* p = dlsym(handle_, name);
    EXPECT_NE(p, nullptr) << name;
    return reinterpret_cast<F*>(p);
  }

  static inline void* handle_ = nullptr;
  static inline fs::path dir_;
  static inline std::string skip_;
};

// Floats worth converting: every bf16 value and its float neighbours (ties, carries), NaNs
// with payloads in every part of the mantissa, infinities, zeros, and random bit patterns.
std::vector<float> InterestingFloats() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const uint32_t u = h << 16;
    for (uint32_t d : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) v.push_back(FromBits(u + d));
  }
  for (uint32_t m : {1u, 0x1000u, 0x2000u, 0x3fffffu, 0x400000u, 0x400001u, 0x212345u, 0x7fffffu}) {
    v.push_back(FromBits(0x7f800000u | m));
    v.push_back(FromBits(0xff800000u | m));
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; ++i) v.push_back(FromBits(rng()));
  return v;
}

TEST_F(PreludeHostTest, Bf16BitsMatchTheEvaluator) {
  auto round = Fn<float(float)>("h_round_bf16");
  auto bits = Fn<uint32_t(float)>("h_bf16_bits");
  auto from_bits = Fn<float(uint32_t)>("h_bf16_from_bits");
  int bad = 0;
  // Loads and bitcasts: every pattern, NaN payloads included, round-trips.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float r = from_bits(b);
    if (bits(r) != b && bad++ < 10) ADD_FAILURE() << std::hex << "bf16 bits 0x" << b << " -> 0x" << bits(r);
    if (!std::isnan(r) && Bits(r) != Bits(float(bfloat16::FromBits(uint16_t(b)))) && bad++ < 10)
      ADD_FAILURE() << std::hex << "bf16 0x" << b << " widens to 0x" << Bits(r);
  }
  // Rounding a float (convert, the result of an op) then storing.
  for (float x : InterestingFloats()) {
    const uint32_t want = bfloat16(x).bits(), got = bits(round(x));
    if (got != want && bad++ < 10)
      ADD_FAILURE() << std::hex << "f32 0x" << Bits(x) << " -> bf16 0x" << got << ", evaluator 0x" << want;
  }
  EXPECT_EQ(bad, 0);
}

TEST_F(PreludeHostTest, F16BitsMatchTheEvaluator) {
  auto round = Fn<float(float)>("h_round_f16");
  auto bits = Fn<uint32_t(float)>("h_f16_bits");
  auto from_bits = Fn<float(uint32_t)>("h_f16_from_bits");
  int bad = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float r = from_bits(b);
    if (bits(r) != b && bad++ < 10) ADD_FAILURE() << std::hex << "f16 bits 0x" << b << " -> 0x" << bits(r);
    if (!std::isnan(r) && Bits(r) != Bits(float(half::FromBits(uint16_t(b)))) && bad++ < 10)
      ADD_FAILURE() << std::hex << "f16 0x" << b << " widens to 0x" << Bits(r);
  }
  for (float x : InterestingFloats()) {
    const uint32_t want = half(x).bits(), got = bits(round(x));
    if (got != want && bad++ < 10)
      ADD_FAILURE() << std::hex << "f32 0x" << Bits(x) << " -> f16 0x" << got << ", evaluator 0x" << want;
  }
  EXPECT_EQ(bad, 0);
}

TEST_F(PreludeHostTest, DoubleToHalfAndBf16MatchTheEvaluator) {
  auto bf = Fn<float(double)>("h_round_bf16_d");
  auto hf = Fn<float(double)>("h_round_f16_d");
  auto bf_bits = Fn<uint32_t(float)>("h_bf16_bits");
  auto hf_bits = Fn<uint32_t(float)>("h_f16_bits");
  std::mt19937_64 rng(9);
  std::vector<double> xs = {0.0, -0.0, 1.0, 65504.0, 65520.0, 1e-8, 3e38, INFINITY, -INFINITY, NAN, -NAN,
                            1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), 1.0 + std::ldexp(1.0, -11)};
  for (int i = 0; i < 20000; ++i) {
    double d = std::ldexp(std::uniform_real_distribution<double>(-2, 2)(rng), int(rng() % 80) - 40);
    xs.push_back(d);
  }
  int bad = 0;
  for (double x : xs) {
    if (bf_bits(bf(x)) != bfloat16(x).bits() && bad++ < 10)
      ADD_FAILURE() << "f64 " << x << " -> bf16 0x" << std::hex << bf_bits(bf(x)) << ", evaluator 0x" << bfloat16(x).bits();
    if (hf_bits(hf(x)) != half(x).bits() && bad++ < 10)
      ADD_FAILURE() << "f64 " << x << " -> f16 0x" << std::hex << hf_bits(hf(x)) << ", evaluator 0x" << half(x).bits();
  }
  EXPECT_EQ(bad, 0);
}

// Every f8/f4 pattern decodes to the evaluator's value; encoding floats gives its bits.
template <typename T>
void CheckMiniFloat(const std::string& name, uint32_t (*encode)(float), float (*decode)(uint32_t)) {
  SCOPED_TRACE(name);
  const int total = T::kFormat.total_bits;
  int bad = 0;
  for (uint32_t b = 0; b < (1u << total); ++b) {
    const float want = float(T::FromBits(typename T::Storage(b))), got = decode(b);
    if (std::isnan(want) ? !std::isnan(got) : Bits(want) != Bits(got)) {
      if (bad++ < 10) ADD_FAILURE() << "decode 0x" << std::hex << b << ": " << got << ", evaluator " << want;
    }
  }
  std::vector<float> xs = InterestingFloats();
  for (uint32_t b = 0; b < (1u << total); ++b) {  // every value, and the midpoints to its neighbours
    const double v = T::FromBits(typename T::Storage(b)).ToDouble();
    xs.push_back(float(v));
    xs.push_back(float(v * (1 + 1.0 / 64)));
    xs.push_back(float(v * (1 - 1.0 / 64)));
  }
  for (float x : xs) {
    const uint32_t want = T(x).bits(), got = encode(x);
    if (got != want && bad++ < 10)
      ADD_FAILURE() << "encode " << x << " (0x" << std::hex << Bits(x) << "): 0x" << got << ", evaluator 0x" << want;
  }
  EXPECT_EQ(bad, 0);
}

TEST_F(PreludeHostTest, MiniFloatCodecsMatchTheEvaluator) {
#define KILN_CHECK_MINI(T, name) \
  CheckMiniFloat<T>(name, Fn<uint32_t(float)>("h_encode_" name), Fn<float(uint32_t)>("h_decode_" name));
  KILN_CHECK_MINI(float8_e5m2, "f8e5m2")
  KILN_CHECK_MINI(float8_e4m3fn, "f8e4m3fn")
  KILN_CHECK_MINI(float8_e4m3b11fnuz, "f8e4m3b11fnuz")
  KILN_CHECK_MINI(float8_e5m2fnuz, "f8e5m2fnuz")
  KILN_CHECK_MINI(float8_e4m3fnuz, "f8e4m3fnuz")
  KILN_CHECK_MINI(float8_e4m3, "f8e4m3")
  KILN_CHECK_MINI(float8_e3m4, "f8e3m4")
  KILN_CHECK_MINI(float8_e8m0fnu, "f8e8m0fnu")
  KILN_CHECK_MINI(float4_e2m1fn, "f4e2m1fn")
#undef KILN_CHECK_MINI
}

// Same value, or both NaN (a NaN's sign and payload are not specified by std::complex).
template <typename R>
bool SameComponent(R got, R want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

template <typename R>
void CheckComplexDivide(void (*div)(const R*, const R*, R*), const std::string& name) {
  SCOPED_TRACE(name);
  const R inf = std::numeric_limits<R>::infinity(), nan = std::numeric_limits<R>::quiet_NaN();
  const std::vector<R> specials = {0, -0.0, 1, -2, 3.5, 1e-30, 1e30, inf, -inf, nan};
  std::vector<std::pair<std::complex<R>, std::complex<R>>> cases;
  for (R a : specials)
    for (R b : specials)
      for (R c : specials)
        for (R d : {R(0), R(-0.0), R(1), inf, nan}) cases.push_back({{a, b}, {c, d}});
  std::mt19937 rng(3);
  std::uniform_real_distribution<R> u(-4, 4);
  for (int i = 0; i < 20000; ++i) cases.push_back({{u(rng), u(rng)}, {u(rng), u(rng)}});
  int bad = 0;
  for (const auto& [x, y] : cases) {
    const std::complex<R> want = x / y;
    const R a[2] = {x.real(), x.imag()}, b[2] = {y.real(), y.imag()};
    R got[2];
    div(a, b, got);
    // Finite quotients of finite operands may differ in the last bits for c128 (libgcc scales
    // extreme operands; Smith's method does not); everything else must match exactly.
    const bool finite = std::isfinite(want.real()) && std::isfinite(want.imag()) && std::isfinite(a[0]) &&
                        std::isfinite(a[1]) && std::isfinite(b[0]) && std::isfinite(b[1]);
    bool ok;
    if (finite && sizeof(R) == 8) {
      const R scale = std::abs(want) * R(1e-15) + std::numeric_limits<R>::denorm_min();
      ok = std::abs(got[0] - want.real()) <= scale && std::abs(got[1] - want.imag()) <= scale;
    } else {
      ok = SameComponent(got[0], want.real()) && SameComponent(got[1], want.imag());
    }
    if (!ok && bad++ < 10)
      ADD_FAILURE() << x << " / " << y << " = (" << got[0] << ", " << got[1] << "), std::complex " << want;
  }
  EXPECT_EQ(bad, 0);
}

TEST_F(PreludeHostTest, ComplexDivisionMatchesStdComplex) {
  CheckComplexDivide<float>(Fn<void(const float*, const float*, float*)>("h_cdiv64"), "c64");
  CheckComplexDivide<double>(Fn<void(const double*, const double*, double*)>("h_cdiv128"), "c128");
}

}  // namespace
}  // namespace kiln::codegen
