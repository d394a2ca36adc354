// The native kernels of kernels/linalg_reduce.cc and kernels/linalg_eig.cc against the
// evaluator (its LAPACK / cuSOLVER contracts), on random inputs of every linear-algebra type,
// batched and not; each must be native (no evaluator fallback).
#include <gtest/gtest.h>

#include <complex>
#include <random>

#include "kiln/base/strings.h"
#include "kiln/cpu/kernels/kernel_test_util.h"

namespace kiln::cpu {
namespace {

using testing::CheckOptions;

// Checks the root of an entry computation made of `body`; `seed` picks the random operands
// when `operands` is empty.
void Check(const std::string& body, std::vector<Literal> operands = {}, uint64_t seed = 1) {
  SCOPED_TRACE(body);
  std::unique_ptr<HloModule> m = testing::Parse(StrCat("HloModule m\nENTRY e {\n  ", body, "\n}\n"));
  ASSERT_NE(m, nullptr);
  CheckOptions o;
  o.seed = seed;
  const std::string name = testing::ExpectMatchesEvaluator(*testing::Find(*m), o, std::move(operands));
  EXPECT_EQ(name.rfind("linalg[", 0), 0u) << name;
}

// "f32[2,5,5]" for (f32, {2}, 5, 5); `batch` empty: no batch dimension.
std::string Type(std::string_view t, const std::vector<int64_t>& batch, std::vector<int64_t> tail) {
  std::vector<int64_t> d = batch;
  d.insert(d.end(), tail.begin(), tail.end());
  std::string s = StrCat(t, "[");
  for (size_t i = 0; i < d.size(); ++i) s += StrCat(i ? "," : "", d[i]);
  return s + "]";
}
std::string Real(std::string_view t) { return t == "c64" ? "f32" : t == "c128" ? "f64" : std::string(t); }
char Prefix(std::string_view t) { return t == "f32" ? 's' : t == "f64" ? 'd' : t == "c64" ? 'c' : 'z'; }

const std::vector<std::string> kTypes = {"f32", "f64", "c64", "c128"};
const std::vector<std::vector<int64_t>> kBatches = {{}, {3}, {2, 2}};

TEST(LinalgReduceKernelTest, SytrdHetrdBothTriangles) {
  for (const std::string& t : kTypes)
    for (int64_t n : {1, 2, 5, 9})
      for (const auto& batch : kBatches)
        for (char uplo : {'L', 'U'}) {
          const bool complex = t[0] == 'c';
          const std::string a = Type(t, batch, {n, n});
          Check(StrCat("a = ", a, " parameter(0)\n  ROOT r = (", a, ", ", Type(Real(t), batch, {n}), ", ",
                       Type(Real(t), batch, {std::max<int64_t>(n - 1, 0)}), ", ", Type(t, batch, {std::max<int64_t>(n - 1, 0)}),
                       ", ", Type("s32", batch, {}), ") custom-call(a), custom_call_target=\"lapack_", Prefix(t),
                       complex ? "hetrd" : "sytrd", "_ffi\", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = ",
                       int(uplo), " : ui8}"));
        }
  // cuSOLVER's name, both triangles.
  for (const char* lower : {"true", "false"})
    Check(StrCat("a = f32[2,6,6] parameter(0)\n  ROOT r = (f32[2,6,6], f32[2,6], f32[2,5], f32[2,5], s32[2]) custom-call(a), "
                 "custom_call_target=\"cusolver_sytrd_ffi\", api_version=API_VERSION_TYPED_FFI, backend_config={lower = ",
                 lower, "}"));
}

TEST(LinalgReduceKernelTest, GehrdWithBalancingRange) {
  for (const std::string& t : kTypes)
    for (int64_t n : {1, 3, 7})
      for (const auto& batch : kBatches) {
        const std::string a = Type(t, batch, {n, n});
        Check(StrCat("a = ", a, " parameter(0)\n  ROOT r = (", a, ", ", Type(t, batch, {std::max<int64_t>(n - 1, 0)}), ", ",
                     Type("s32", batch, {}), ") custom-call(a), custom_call_target=\"lapack_", Prefix(t),
                     "gehrd_ffi\", api_version=API_VERSION_TYPED_FFI, backend_config={high = ", n, " : i32, low = 1 : i32}"));
      }
  // A partial range [ilo, ihi]: tau 0 outside it.
  Check("a = f64[8,8] parameter(0)\n  ROOT r = (f64[8,8], f64[7], s32[]) custom-call(a), "
        "custom_call_target=\"lapack_dgehrd_ffi\", api_version=API_VERSION_TYPED_FFI, "
        "backend_config={high = 6 : i32, low = 2 : i32}");
}

Literal Jpvt(const std::vector<int64_t>& dims, std::vector<int32_t> values) {
  Literal l(Shape::ArrayWithDefaultLayout(PrimitiveType::kS32, dims));
  for (size_t i = 0; i < values.size(); ++i) l.data<int32_t>()[i] = values[i];
  return l;
}

Literal RandomMatrix(PrimitiveType type, const std::vector<int64_t>& dims, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Literal l(Shape::ArrayWithDefaultLayout(type, dims));
  const int64_t count = l.shape().num_elements();
  for (int64_t i = 0; i < count; ++i) {
    const double re = u(rng), im = u(rng);
    switch (type) {
      case PrimitiveType::kF32: l.data<float>()[i] = float(re); break;
      case PrimitiveType::kF64: l.data<double>()[i] = re; break;
      case PrimitiveType::kC64: l.data<std::complex<float>>()[i] = {float(re), float(im)}; break;
      default: l.data<std::complex<double>>()[i] = {re, im}; break;
    }
  }
  return l;
}

PrimitiveType TypeOf(std::string_view t) {
  return t == "f32" ? PrimitiveType::kF32 : t == "f64" ? PrimitiveType::kF64 : t == "c64" ? PrimitiveType::kC64 : PrimitiveType::kC128;
}

TEST(LinalgReduceKernelTest, Geqp3FreeAndLeadingColumns) {
  for (const std::string& t : kTypes)
    for (auto [m, n] : {std::pair<int64_t, int64_t>{6, 4}, {4, 6}, {5, 5}, {1, 3}}) {
      const std::string a = Type(t, {2}, {m, n});
      const std::string body =
          StrCat("a = ", a, " parameter(0)\n  p = s32[2,", n, "] parameter(1)\n  ROOT r = (", a, ", s32[2,", n, "], ",
                 Type(t, {2}, {std::min(m, n)}), ") custom-call(a, p), custom_call_target=\"lapack_", Prefix(t),
                 "geqp3_ffi\", api_version=API_VERSION_TYPED_FFI");
      // All free; then columns 1 and n-1 leading in batch 0, column 0 in batch 1.
      std::vector<int32_t> free(2 * n, 0), some(2 * n, 0);
      some[1] = 1;
      some[n - 1] = 1;
      some[n] = 5;
      for (const auto& jp : {free, some}) {
        std::vector<Literal> ops;
        ops.push_back(RandomMatrix(TypeOf(t), {2, m, n}, 7 + m));
        ops.push_back(Jpvt({2, n}, jp));
        Check(body, std::move(ops));
      }
    }
  std::vector<Literal> ops;
  ops.push_back(RandomMatrix(PrimitiveType::kF32, {5, 4}, 3));
  ops.push_back(Jpvt({4}, {0, 0, 0, 0}));
  Check("a = f32[5,4] parameter(0)\n  p = s32[4] parameter(1)\n  ROOT r = (f32[5,4], s32[4], f32[4]) "
        "custom-call(a, p), custom_call_target=\"cuhybrid_geqp3\", api_version=API_VERSION_TYPED_FFI",
        std::move(ops));
}

TEST(LinalgReduceKernelTest, GtsvPivotingAndZeroPivot) {
  for (const std::string& t : kTypes)
    for (int64_t n : {1, 2, 3, 8})
      for (const auto& batch : kBatches) {
        const std::string v = Type(t, batch, {n}), b = Type(t, batch, {n, 3});
        Check(StrCat("dl = ", v, " parameter(0)\n  d = ", v, " parameter(1)\n  du = ", v, " parameter(2)\n  b = ", b,
                     " parameter(3)\n  ROOT r = (", v, ", ", v, ", ", v, ", ", b, ", ", Type("s32", batch, {}),
                     ") custom-call(dl, d, du, b), custom_call_target=\"lapack_", Prefix(t),
                     "gtsv_ffi\", api_version=API_VERSION_TYPED_FFI"),
              {}, 11 + n);
      }
  // A singular system: d and dl zero in row 1 -> info 2, x as far as elimination got.
  std::vector<Literal> ops;
  for (std::vector<double> v : {std::vector<double>{0, 1, 0, 1}, {1, 1, 0, 2}, {1, 0, 1, 0}}) {
    Literal l(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, {4}));
    for (int i = 0; i < 4; ++i) l.data<double>()[i] = v[i];
    ops.push_back(std::move(l));
  }
  ops.push_back(RandomMatrix(PrimitiveType::kF64, {4, 2}, 5));
  // Row 0: d 1, dl(row 1) 1 -> no interchange, d[1] = 1 - 1 * du[0] = 0; row 1: d 0, dl 0.
  Check("dl = f64[4] parameter(0)\n  d = f64[4] parameter(1)\n  du = f64[4] parameter(2)\n  b = f64[4,2] parameter(3)\n"
        "  ROOT r = (f64[4], f64[4], f64[4], f64[4,2], s32[]) custom-call(dl, d, du, b), "
        "custom_call_target=\"lapack_dgtsv_ffi\", api_version=API_VERSION_TYPED_FFI",
        std::move(ops));
}

TEST(LinalgReduceKernelTest, CholeskyUpdateAndSyrk) {
  for (const std::string& t : kTypes)
    for (int64_t n : {1, 4, 9})
      for (const auto& batch : kBatches) {
        const std::string r = Type(t, batch, {n, n}), w = Type(t, batch, {n});
        Check(StrCat("r = ", r, " parameter(0)\n  w = ", w, " parameter(1)\n  ROOT o = (", r, ", ", w,
                     ") custom-call(r, w), custom_call_target=\"cu_cholesky_update_ffi\", api_version=API_VERSION_TYPED_FFI"));
      }
  for (const std::string& t : kTypes)
    for (const char* transpose : {"false", "true"})
      for (const auto& batch : kBatches) {
        const bool tr = transpose[0] == 't';
        const std::string a = Type(t, batch, tr ? std::vector<int64_t>{3, 5} : std::vector<int64_t>{5, 3});
        const std::string c = Type(t, batch, {5, 5});
        Check(StrCat("a = ", a, " parameter(0)\n  c = ", c, " parameter(1)\n  al = ", t, "[] parameter(2)\n  be = ", t,
                     "[] parameter(3)\n  ROOT o = ", c, " custom-call(a, c, al, be), custom_call_target=\"cusolver_syrk_ffi\", "
                     "api_version=API_VERSION_TYPED_FFI, backend_config={transpose = ", transpose, "}"));
      }
}

std::string GeevBody(const std::string& t, const std::vector<int64_t>& batch, int64_t n, bool left, bool right,
                     bool hybrid) {
  const bool complex = t[0] == 'c';
  const std::string a = Type(t, batch, {n, n});
  const std::string ct = t == "f32" ? "c64" : t == "f64" ? "c128" : t;
  const std::string v = Type(ct, batch, {n, n});
  const std::string values = complex ? Type(t, batch, {n}) : StrCat(Type(t, batch, {n}), ", ", Type(t, batch, {n}));
  const std::string target = hybrid ? StrCat("cuhybrid_eig_", complex ? "comp" : "real") : StrCat("lapack_", Prefix(t), "geev_ffi");
  const std::string config = hybrid ? StrCat("left = ", left ? "true" : "false", ", right = ", right ? "true" : "false")
                                    : StrCat("compute_left = ", left ? 86 : 78, " : ui8, compute_right = ", right ? 86 : 78, " : ui8");
  return StrCat("a = ", a, " parameter(0)\n  ROOT r = (", values, ", ", v, ", ", v, ", ", Type("s32", batch, {}),
                ") custom-call(a), custom_call_target=\"", target, "\", api_version=API_VERSION_TYPED_FFI, backend_config={",
                config, "}");
}

TEST(LinalgEigKernelTest, GeevRandomMatrices) {
  for (const std::string& t : kTypes)
    for (int64_t n : {1, 2, 3, 6, 11})
      for (uint64_t seed : {1, 2, 3}) Check(GeevBody(t, {2}, n, true, true, false), {}, seed);
  // Vectors off, one side only, batch shapes, the hybrid names.
  Check(GeevBody("f32", {}, 5, false, false, false));
  Check(GeevBody("f64", {2, 2}, 4, true, false, false));
  Check(GeevBody("c64", {3}, 5, false, true, false));
  Check(GeevBody("f32", {2}, 6, true, true, true));
  Check(GeevBody("c64", {}, 4, false, true, true));
}

TEST(LinalgEigKernelTest, GeevStructuredMatrices) {
  // A rotation block (an exact conjugate pair), a triangular matrix, a badly scaled matrix that
  // the balancing rescales, and a non-finite input (info = n, all NaN).
  auto lit = [](std::vector<double> v, int64_t n) {
    Literal l(Shape::ArrayWithDefaultLayout(PrimitiveType::kF64, {n, n}));
    for (int64_t i = 0; i < n * n; ++i) l.data<double>()[i] = v[i];
    return l;
  };
  const std::string body = GeevBody("f64", {}, 4, true, true, false);
  for (std::vector<double> v : {std::vector<double>{0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 3},
                                {1, 2, 3, 4, 0, 5, 6, 7, 0, 0, 8, 9, 0, 0, 0, 10},
                                {1, 1e6, 0, 0, 1e-6, 1, 1e6, 0, 0, 1e-6, 1, 1e6, 3e-6, 0, 1e-6, 1},
                                {1, 2, 3, 4, 5, std::numeric_limits<double>::infinity(), 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}) {
    std::vector<Literal> ops;
    ops.push_back(lit(v, 4));
    Check(body, std::move(ops));
  }
}

TEST(LinalgEigKernelTest, GeesComplexAndReal) {
  for (const std::string& t : kTypes)
    for (int64_t n : {1, 2, 5, 10})
      for (const char* mode : {"86", "78"})
        for (uint64_t seed : {1, 2}) {
          const bool complex = t[0] == 'c';
          const std::string a = Type(t, {2}, {n, n}), w = Type(t, {2}, {n});
          const std::string values = complex ? w : StrCat(w, ", ", w);
          Check(StrCat("a = ", a, " parameter(0)\n  ROOT r = (", a, ", ", a, ", ", values, ", s32[2], s32[2]) custom-call(a), "
                       "custom_call_target=\"lapack_", Prefix(t), "gees_ffi\", api_version=API_VERSION_TYPED_FFI, "
                       "backend_config={mode = ", mode, " : ui8, sort = 78 : ui8}"),
                {}, seed);
        }
}

// Larger matrices and more seeds: the eigenvalue order, T and Z must still be the evaluator's
// (Note [Eigenvalue order] in kernels/linalg_eig.cc).
TEST(LinalgEigKernelTest, GeevAndGeesSweep) {
  for (const std::string& t : kTypes)
    for (int64_t n : {4, 7, 12, 17, 25})
      for (uint64_t seed = 1; seed <= 12; ++seed) {
        Check(GeevBody(t, {2}, n, true, true, false), {}, seed * 101);
        const bool complex = t[0] == 'c';
        const std::string a = Type(t, {2}, {n, n}), w = Type(t, {2}, {n});
        const std::string values = complex ? w : StrCat(w, ", ", w);
        Check(StrCat("a = ", a, " parameter(0)\n  ROOT r = (", a, ", ", a, ", ", values, ", s32[2], s32[2]) custom-call(a), "
                     "custom_call_target=\"lapack_", Prefix(t), "gees_ffi\", api_version=API_VERSION_TYPED_FFI, "
                     "backend_config={mode = 86 : ui8, sort = 78 : ui8}"), {}, seed * 101);
      }
}

}  // namespace
}  // namespace kiln::cpu
