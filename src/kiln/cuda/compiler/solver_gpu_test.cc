// The linear-algebra custom calls on cuSOLVER / cuBLAS (SolverThunk, solver_thunk.h) through
// the GPU compiler on a device (label gpu), against the reference evaluator: every call must
// become a SolverThunk that runs on the device (no host fallback at compile time or at
// Initialize). Skips (visibly) without a CUDA device.
//
// Inputs are built inside the module from random parameters with exact elementwise ops (the same
// bits on both sides): Hermitian x + x^H (+ a dominant diagonal for potrf), and for eigen / SVD
// problems a diagonal of well-separated values (spacing 10 max(m, n)) added to x, so vectors are
// well conditioned. Eigenvectors and singular vectors are compared as absolute values (cuSOLVER's
// unit factors are not the evaluator's), singular vectors only in their unique (thin) part.
// Tolerance: the backend-vs-evaluator table (eval/tolerance.h).
#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/gpu_executable.h"
#include "kiln/cuda/compiler/solver_thunk.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cuda {
namespace {

CudaDevice* TheDevice() {
  static runtime::Platform* platform = [] {
    auto p = CreateCudaPlatform();
    return p.ok() ? p->release() : nullptr;
  }();
  if (!platform || platform->device_count() == 0) return nullptr;
  auto d = platform->GetDevice(0);
  return d.ok() ? static_cast<CudaDevice*>(*d) : nullptr;
}

// Compiles `text` with the host fallback off, checks that it has `solver_calls` solver thunks
// that all run on the device, runs it on random inputs and compares with the evaluator. Without
// a device the module is only evaluated and compiled (for the sm_90 preset: NVRTC runs without
// a GPU), and the test skips at its end (REQUIRE_DEVICE).
void RunAndCompare(const std::string& text, const std::string& what, int solver_calls) {
  SCOPED_TRACE(what);
  CudaDevice* device = TheDevice();
  auto m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << text;
  std::vector<Shape> shapes;
  for (const HloInstruction* p : (*m)->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
  std::vector<Literal> args = MakeRandomArguments(shapes, 11);
  auto expected = EvaluateModule(**m, args);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString() << "\n" << text;
  GpuCompileOptions o;
  if (device) {
    o.device = codegen::DeviceSpec::FromDescription(device->description());
  } else {
    auto preset = codegen::DeviceSpec::FromPreset("sm_90");
    ASSERT_TRUE(preset.ok()) << preset.status().ToString();
    o.device = *preset;
  }
  o.allow_host_fallback = false;
  auto compiled = GpuCompiler::Compile(std::move(*m), o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString() << "\n" << text;
  int emitted = 0;
  for (const GpuThunk* t : (*compiled)->entry.Flatten()) emitted += t->kind() == GpuThunk::Kind::kSolver;
  EXPECT_EQ(emitted, solver_calls) << text;
  if (!device) return;
  auto exe = GpuExecutable::Create(std::move(*compiled), *device, {});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  GpuRunOptions ro;
  ro.poison = true;
  auto got = (*exe)->Run(args, ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString() << "\n" << text;
  int solvers = 0;
  for (const GpuThunk* t : (*exe)->compiled().entry.Flatten()) {
    if (t->kind() != GpuThunk::Kind::kSolver) continue;
    ++solvers;
    EXPECT_FALSE(static_cast<const SolverThunk*>(t)->uses_fallback()) << t->ToString();
  }
  EXPECT_EQ(solvers, solver_calls) << text;
  // A second run (the executable may now replay a CUDA graph) gives the same results.
  auto again = (*exe)->Run(args, ro);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  CompareOptions co;
  co.backend_vs_evaluator = true;
  Comparison c = CompareLiterals(*got, *expected, co);
  EXPECT_TRUE(c.ok()) << c.ToString() << "\n" << text;
  Comparison c2 = CompareLiterals(*again, *expected, co);
  EXPECT_TRUE(c2.ok()) << "second run: " << c2.ToString();
}

bool Complex(const std::string& t) { return t == "c64" || t == "c128"; }
std::string Real(const std::string& t) { return t == "c64" ? "f32" : t == "c128" ? "f64" : t; }
std::string Dims(int64_t batch, int64_t m, int64_t n) {
  return StrCat("[", batch > 0 ? StrCat(batch, ",") : "", m, ",", n, "]");
}
std::string Vec(int64_t batch, int64_t n) { return StrCat("[", batch > 0 ? StrCat(batch, ",") : "", n, "]"); }
std::string Scalar(int64_t batch) { return batch > 0 ? StrCat("[", batch, "]") : "[]"; }

// Builds a module: parameters, then matrix definitions, then the custom calls and the root.
class Module {
 public:
  std::string text = "HloModule solver\nENTRY e {\n";
  int params = 0;

  // `name` = a t[batch, m, n] parameter.
  void Param(const std::string& name, const std::string& t, const std::string& dims) {
    text += StrCat("  ", name, " = ", t, dims, " parameter(", params++, ")\n");
  }
  // `name` = x (+ x^H when `hermitian`) + diag(spacing * (i + 1)), from a new parameter x.
  void Matrix(const std::string& name, const std::string& t, int64_t batch, int64_t m, int64_t n,
              bool hermitian, double spacing) {
    const std::string d = Dims(batch, m, n), r = Real(t), rm = r + d, tm = t + d;
    const std::string x = name + "_x";
    Param(x, t, d);
    const std::string row = batch > 0 ? "1" : "0", col = batch > 0 ? "2" : "1";
    const std::string tr = batch > 0 ? "{0,2,1}" : "{1,0}";
    auto line = [&](const std::string& s) { text += "  " + name + "_" + s + "\n"; };
    line(StrCat("i = s32", d, " iota(), iota_dimension=", row));
    line(StrCat("j = s32", d, " iota(), iota_dimension=", col));
    line(StrCat("eq = pred", d, " compare(", name, "_i, ", name, "_j), direction=EQ"));
    line(StrCat("fi = ", rm, " convert(", name, "_i)"));
    line(StrCat("sc = ", r, "[] constant(", spacing, ")"));
    line(StrCat("sb = ", rm, " broadcast(", name, "_sc), dimensions={}"));
    line(StrCat("d0 = ", rm, " multiply(", name, "_fi, ", name, "_sb)"));
    line(StrCat("d1 = ", rm, " add(", name, "_d0, ", name, "_sb)"));
    line(StrCat("zc = ", r, "[] constant(0)"));
    line(StrCat("zb = ", rm, " broadcast(", name, "_zc), dimensions={}"));
    line(StrCat("dg = ", rm, " select(", name, "_eq, ", name, "_d1, ", name, "_zb)"));
    std::string base = x;
    if (hermitian) {
      line(StrCat("xt = ", tm, " transpose(", x, "), dimensions=", tr));
      if (!Complex(t)) {
        line(StrCat("h = ", tm, " add(", x, ", ", name, "_xt)"));
      } else {
        line(StrCat("xr = ", rm, " real(", x, ")"));
        line(StrCat("xi = ", rm, " imag(", x, ")"));
        line(StrCat("tr = ", rm, " real(", name, "_xt)"));
        line(StrCat("ti = ", rm, " imag(", name, "_xt)"));
        line(StrCat("re = ", rm, " add(", name, "_xr, ", name, "_tr)"));
        line(StrCat("im = ", rm, " subtract(", name, "_xi, ", name, "_ti)"));
        line(StrCat("h = ", tm, " complex(", name, "_re, ", name, "_im)"));
      }
      base = name + "_h";
    }
    if (Complex(t)) {
      line(StrCat("dc = ", tm, " complex(", name, "_dg, ", name, "_zb)"));
      text += StrCat("  ", name, " = ", tm, " add(", base, ", ", name, "_dc)\n");
    } else {
      text += StrCat("  ", name, " = ", tm, " add(", base, ", ", name, "_dg)\n");
    }
  }
  void Line(const std::string& s) { text += "  " + s + "\n"; }
  std::string Finish(const std::string& root) { return text + "  ROOT root = " + root + "\n}\n"; }
};

// A custom call line with JAX's spelling (typed FFI, column-major operand layouts are left to
// the layout normalization: the calls' semantics are logical).
std::string Call(const std::string& name, const std::string& shape, const std::string& operands,
                 const std::string& target, const std::string& config) {
  return StrCat(name, " = ", shape, " custom-call(", operands, "), custom_call_target=\"", target,
                "\", api_version=API_VERSION_TYPED_FFI, backend_config={", config, "}");
}

// At the end of a test: without a device its modules were only evaluated and compiled.
#define REQUIRE_DEVICE() \
  if (!TheDevice()) GTEST_SKIP() << "no CUDA device: the modules were evaluated and compiled, not run"

TEST(SolverGpuTest, CholeskyLuQr) {
  struct Potrf { std::string t, target, config; int64_t batch, n; };
  for (const Potrf& c : {Potrf{"f32", "cusolver_potrf_ffi", "lower = true", 0, 6},
                         Potrf{"c64", "cusolver_potrf_ffi", "lower = false", 2, 5},
                         Potrf{"f64", "lapack_dpotrf_ffi", "uplo = 85 : ui8", 0, 7},
                         Potrf{"c128", "hipsolver_potrf_ffi", "lower = true", 0, 4}}) {
    Module m;
    m.Matrix("a", c.t, c.batch, c.n, c.n, /*hermitian=*/true, 3.0 * c.n + 2);
    m.Line(Call("f", StrCat("(", c.t, Dims(c.batch, c.n, c.n), ", s32", Scalar(c.batch), ")"), "a", c.target,
                c.config));
    m.Line(StrCat("l = ", c.t, Dims(c.batch, c.n, c.n), " get-tuple-element(f), index=0"));
    m.Line(StrCat("info = s32", Scalar(c.batch), " get-tuple-element(f), index=1"));
    RunAndCompare(m.Finish(StrCat("(", c.t, Dims(c.batch, c.n, c.n), ", s32", Scalar(c.batch), ") tuple(l, info)")),
                  StrCat("potrf ", c.t, " ", c.target, " ", c.config), 1);
  }
  {
    // Not positive definite: only info is defined.
    Module m;
    m.Param("a", "f32", "[2,5,5]");
    m.Line(Call("f", "(f32[2,5,5], s32[2])", "a", "cusolver_potrf_ffi", "lower = true"));
    RunAndCompare(m.Finish("s32[2] get-tuple-element(f), index=1"), "potrf of a random matrix", 1);
  }
  struct Getrf { std::string t, target; int64_t batch, m, n; };
  for (const Getrf& c : {Getrf{"f32", "cusolver_getrf_ffi", 0, 5, 5}, Getrf{"f64", "lapack_dgetrf_ffi", 0, 7, 4},
                         Getrf{"c64", "cusolver_getrf_ffi", 2, 4, 6}, Getrf{"c128", "hipsolver_getrf_ffi", 0, 3, 3},
                         Getrf{"f32", "cusolver_getrf_ffi", 3, 6, 6}}) {
    const int64_t k = std::min(c.m, c.n);
    const std::string d = Dims(c.batch, c.m, c.n), p = Vec(c.batch, k), perm = Vec(c.batch, c.m);
    Module m;
    m.Param("a", c.t, d);
    m.Line(Call("f", StrCat("(", c.t, d, ", s32", p, ", s32", Scalar(c.batch), ")"), "a", c.target, ""));
    m.Line(StrCat("lu = ", c.t, d, " get-tuple-element(f), index=0"));
    m.Line(StrCat("ipiv = s32", p, " get-tuple-element(f), index=1"));
    m.Line(StrCat("info = s32", Scalar(c.batch), " get-tuple-element(f), index=2"));
    m.Line("one = s32[] constant(1)");
    m.Line(StrCat("ones = s32", p, " broadcast(one), dimensions={}"));
    m.Line(StrCat("piv0 = s32", p, " subtract(ipiv, ones)"));
    m.Line(Call("perm", StrCat("s32", perm), "piv0", "cu_lu_pivots_to_permutation", ""));
    RunAndCompare(m.Finish(StrCat("(", c.t, d, ", s32", p, ", s32", Scalar(c.batch), ", s32", perm,
                                  ") tuple(lu, ipiv, info, perm)")),
                  StrCat("getrf ", c.t, " ", c.target, " ", d), 2);
  }
  struct Qr { std::string t, geqrf, orgqr; int64_t batch, m, n; };
  for (const Qr& c : {Qr{"f32", "cusolver_geqrf_ffi", "cusolver_orgqr_ffi", 0, 6, 4},
                      Qr{"c64", "lapack_cgeqrf_ffi", "lapack_cungqr_ffi", 2, 5, 3},
                      Qr{"f64", "hipsolver_geqrf_ffi", "", 0, 3, 5},
                      Qr{"c128", "cusolver_geqrf_ffi", "cusolver_orgqr_ffi", 0, 4, 4}}) {
    const int64_t k = std::min(c.m, c.n);
    const std::string d = Dims(c.batch, c.m, c.n), tau = Vec(c.batch, k);
    Module m;
    m.Param("a", c.t, d);
    m.Line(Call("f", StrCat("(", c.t, d, ", ", c.t, tau, ")"), "a", c.geqrf, ""));
    m.Line(StrCat("r = ", c.t, d, " get-tuple-element(f), index=0"));
    m.Line(StrCat("tau = ", c.t, tau, " get-tuple-element(f), index=1"));
    std::string root = StrCat("(", c.t, d, ", ", c.t, tau, ") tuple(r, tau)");
    int calls = 1;
    if (!c.orgqr.empty()) {
      m.Line(Call("q", c.t + d, "r, tau", c.orgqr, ""));
      root = StrCat("(", c.t, d, ", ", c.t, tau, ", ", c.t, d, ") tuple(r, tau, q)");
      calls = 2;
    }
    RunAndCompare(m.Finish(root), StrCat("geqrf/orgqr ", c.t, " ", d), calls);
  }
  REQUIRE_DEVICE();
}

TEST(SolverGpuTest, EigenAndTridiagonal) {
  struct Eig { std::string t, target, config; int64_t batch, n; };
  for (const Eig& c : {Eig{"f32", "cusolver_syevd_ffi", "algorithm = 0 : ui8, lower = true", 0, 6},
                       Eig{"f64", "cusolver_syevd_ffi", "algorithm = 0 : ui8, lower = false", 2, 5},
                       Eig{"c64", "lapack_cheevd_ffi", "mode = 86 : ui8, uplo = 76 : ui8", 0, 4},
                       Eig{"c128", "hipsolver_syevd_ffi", "lower = false", 0, 3},
                       Eig{"f32", "lapack_ssyevd_ffi", "mode = 86 : ui8, uplo = 85 : ui8", 3, 5}}) {
    const std::string d = Dims(c.batch, c.n, c.n), r = Real(c.t), w = r + Vec(c.batch, c.n);
    Module m;
    m.Matrix("a", c.t, c.batch, c.n, c.n, /*hermitian=*/true, 10.0 * c.n);
    m.Line(Call("f", StrCat("(", c.t, d, ", ", w, ", s32", Scalar(c.batch), ")"), "a", c.target, c.config));
    m.Line(StrCat("v = ", c.t, d, " get-tuple-element(f), index=0"));
    m.Line(StrCat("w = ", w, " get-tuple-element(f), index=1"));
    m.Line(StrCat("info = s32", Scalar(c.batch), " get-tuple-element(f), index=2"));
    m.Line(StrCat("av = ", r, d, " abs(v)"));
    RunAndCompare(m.Finish(StrCat("(", w, ", ", r, d, ", s32", Scalar(c.batch), ") tuple(w, av, info)")),
                  StrCat("syevd ", c.t, " ", c.target, " ", c.config), 1);
  }
  struct Trd { std::string t, target, config; int64_t batch, n; };
  for (const Trd& c : {Trd{"f32", "cusolver_sytrd_ffi", "lower = true", 0, 5},
                       Trd{"c64", "cusolver_sytrd_ffi", "lower = false", 2, 4},
                       Trd{"f64", "lapack_dsytrd_ffi", "uplo = 76 : ui8", 0, 6}}) {
    const std::string d = Dims(c.batch, c.n, c.n), r = Real(c.t);
    const std::string dv = r + Vec(c.batch, c.n), ev = r + Vec(c.batch, c.n - 1), tv = c.t + Vec(c.batch, c.n - 1);
    const std::string shape = StrCat("(", c.t, d, ", ", dv, ", ", ev, ", ", tv, ", s32", Scalar(c.batch), ")");
    Module m;
    m.Matrix("a", c.t, c.batch, c.n, c.n, /*hermitian=*/true, 1.0);
    m.Line(Call("f", shape, "a", c.target, c.config));
    const std::string parts[] = {c.t + d, dv, ev, tv, "s32" + Scalar(c.batch)};
    for (int i = 0; i < 5; ++i) m.Line(StrCat("g", i, " = ", parts[i], " get-tuple-element(f), index=", i));
    RunAndCompare(m.Finish(shape + " tuple(g0, g1, g2, g3, g4)"), StrCat("sytrd ", c.t, " ", c.config), 1);
  }
  REQUIRE_DEVICE();
}

TEST(SolverGpuTest, SingularValueDecompositions) {
  // x and y: the shapes of the third and fourth results; u_is_x: which holds U; v_is_vh: the
  // other holds V^H (else V).
  struct Svd { std::string t, target, config; int64_t batch, m, n, xr, xc, yr, yc; bool u_is_x, vh; };
  for (const Svd& c : {
           Svd{"f32", "cusolver_gesvdj_ffi", "compute_uv = true, full_matrices = true", 0, 7, 5, 7, 7, 5, 5, true, false},
           Svd{"f64", "cusolver_gesvdj_ffi", "compute_uv = true, full_matrices = true", 0, 3, 5, 3, 3, 5, 5, true, false},
           Svd{"c64", "cusolver_gesvdj_ffi", "compute_uv = true, full_matrices = false", 2, 4, 3, 4, 3, 3, 3, true, false},
           Svd{"f32", "cusolver_gesvd_ffi", "compute_uv = true, full_matrices = false, transposed = false", 0, 6, 4, 6, 4, 4, 4, true, true},
           Svd{"f32", "cusolver_gesvd_ffi", "compute_uv = true, full_matrices = false, transposed = true", 0, 4, 6, 4, 6, 4, 4, false, true},
           Svd{"f32", "lapack_sgesdd_ffi", "mode = 83 : ui8", 0, 4, 6, 4, 4, 4, 6, true, true},
           Svd{"c64", "lapack_cgesdd_ffi", "mode = 65 : ui8", 0, 5, 3, 5, 5, 3, 3, true, true},
           Svd{"f64", "lapack_dgesvd_ffi", "mode = 65 : ui8", 2, 3, 5, 3, 3, 5, 5, true, true},
           Svd{"c128", "hipsolver_gesvdj_ffi", "compute_uv = true, full_matrices = true", 0, 4, 4, 4, 4, 4, 4, true, false},
       }) {
    const int64_t k = std::min(c.m, c.n);
    const std::string r = Real(c.t), d = Dims(c.batch, c.m, c.n), s = r + Vec(c.batch, k);
    const std::string x = c.t + Dims(c.batch, c.xr, c.xc), y = c.t + Dims(c.batch, c.yr, c.yc);
    Module m;
    m.Matrix("a", c.t, c.batch, c.m, c.n, /*hermitian=*/false, 10.0 * std::max(c.m, c.n));
    m.Line(Call("f", StrCat("(", c.t, d, ", ", s, ", ", x, ", ", y, ", s32", Scalar(c.batch), ")"), "a", c.target,
                c.config));
    m.Line(StrCat("s = ", s, " get-tuple-element(f), index=1"));
    m.Line(StrCat("x = ", x, " get-tuple-element(f), index=2"));
    m.Line(StrCat("y = ", y, " get-tuple-element(f), index=3"));
    m.Line(StrCat("info = s32", Scalar(c.batch), " get-tuple-element(f), index=4"));
    // The unique parts: U's first k columns, V's first k columns / V^H's first k rows.
    const std::string lead = c.batch > 0 ? StrCat("[0:", c.batch, "], ") : "";
    auto thin = [&](const std::string& name, bool u, bool vh, int64_t rows, int64_t cols) {
      const bool columns = u || !vh;  // U and V: leading columns; V^H: leading rows
      const int64_t tr = columns ? rows : k, tc = columns ? k : cols;
      const std::string ts = Dims(c.batch, tr, tc);
      m.Line(StrCat(name, "t = ", c.t, ts, " slice(", name, "), slice={", lead, "[0:", tr, "], [0:", tc, "]}"));
      m.Line(StrCat(name, "a = ", r, ts, " abs(", name, "t)"));
      return r + ts;
    };
    const std::string xs = thin("x", c.u_is_x, c.vh, c.xr, c.xc);
    const std::string ys = thin("y", !c.u_is_x, c.vh, c.yr, c.yc);
    RunAndCompare(m.Finish(StrCat("(", s, ", ", xs, ", ", ys, ", s32", Scalar(c.batch), ") tuple(s, xa, ya, info)")),
                  StrCat("svd ", c.t, " ", c.target, " ", c.config, " ", d), 1);
  }
  {
    // Singular values only.
    Module m;
    m.Matrix("a", "f32", 0, 6, 4, false, 60.0);
    m.Line(Call("f", "(f32[6,4], f32[4], f32[6,6], f32[4,4], s32[])", "a", "cusolver_gesvdj_ffi",
                "compute_uv = false, full_matrices = true"));
    RunAndCompare(m.Finish("f32[4] get-tuple-element(f), index=1"), "svdvals", 1);
  }
  REQUIRE_DEVICE();
}

TEST(SolverGpuTest, TriangularSolveSyrkCholeskyUpdate) {
  struct Trsm { std::string t, config; int64_t a_batch, batch, m, n; };
  for (const Trsm& c : {
           Trsm{"f32", "diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8", 0, 0, 6, 3},
           Trsm{"f64", "diag = 85 : ui8, side = 82 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8", 0, 0, 4, 5},
           Trsm{"c64", "diag = 78 : ui8, side = 76 : ui8, trans_x = 67 : ui8, uplo = 85 : ui8", 2, 2, 5, 2},
           Trsm{"c128", "diag = 78 : ui8, side = 82 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8", 3, 3, 2, 4},
       }) {
    const bool left = c.config.find("side = 76") != std::string::npos;
    const int64_t k = left ? c.m : c.n;
    const std::string b = c.t + Dims(c.batch, c.m, c.n);
    Module m;
    // a well-conditioned triangle: the random x scaled by 1/k off the diagonal, 2 on it (the
    // solve reads one triangle).
    m.Matrix("a0", c.t, c.a_batch, k, k, false, 0.0);
    const std::string ad = c.t + Dims(c.a_batch, k, k), rd = Real(c.t) + Dims(c.a_batch, k, k);
    m.Line(StrCat("sc = ", c.t, "[] constant(", Complex(c.t) ? StrCat("(", 1.0 / k, ", 0)") : StrCat(1.0 / k), ")"));
    m.Line(StrCat("sb = ", ad, " broadcast(sc), dimensions={}"));
    m.Line(StrCat("off = ", ad, " multiply(a0, sb)"));
    m.Line(StrCat("two = ", c.t, "[] constant(", Complex(c.t) ? "(2, 0)" : "2", ")"));
    m.Line(StrCat("tb = ", ad, " broadcast(two), dimensions={}"));
    m.Line(StrCat("a = ", ad, " select(a0_eq, tb, off)"));
    m.Param("b", c.t, Dims(c.batch, c.m, c.n));
    const char p = c.t == "f32" ? 's' : c.t == "f64" ? 'd' : c.t == "c64" ? 'c' : 'z';
    m.Line(Call("x", b, "a, b", StrCat("lapack_", std::string(1, p), "trsm_ffi"), c.config));
    RunAndCompare(m.Finish(b + " copy(x)"), StrCat("trsm ", c.t, " ", c.config), 1);
  }
  struct Syrk { std::string t; bool transpose; int64_t batch, n, k; };
  for (const Syrk& c : {Syrk{"f32", false, 2, 4, 3}, Syrk{"f64", true, 0, 5, 3}, Syrk{"c64", false, 0, 3, 4}}) {
    const std::string a = c.t + (c.transpose ? Dims(c.batch, c.k, c.n) : Dims(c.batch, c.n, c.k));
    const std::string cm = c.t + Dims(c.batch, c.n, c.n);
    Module m;
    m.Param("a", c.t, a.substr(c.t.size()));
    m.Param("c", c.t, cm.substr(c.t.size()));
    m.Line(StrCat("alpha = ", c.t, "[] constant(", Complex(c.t) ? "(1.5, -0.5)" : "1.5", ")"));
    m.Line(StrCat("beta = ", c.t, "[] constant(", Complex(c.t) ? "(0.25, 0.75)" : "0.25", ")"));
    m.Line(Call("s", cm, "a, c, alpha, beta", "cusolver_syrk_ffi", c.transpose ? "transpose = true" : "transpose = false"));
    RunAndCompare(m.Finish(cm + " copy(s)"), StrCat("syrk ", c.t, c.transpose ? " transpose" : ""), 1);
  }
  for (const std::string t : {"f32", "f64"}) {
    // r: upper triangular with a dominant positive diagonal; w random.
    Module m;
    m.Matrix("r0", t, 0, 5, 5, false, 4.0);
    m.Line("le = pred[5,5] compare(r0_i, r0_j), direction=LE");
    m.Line(StrCat("z = ", t, "[5,5] broadcast(r0_zc), dimensions={}"));
    m.Line(StrCat("r = ", t, "[5,5] select(le, r0, z)"));
    m.Param("w", t, "[5]");
    m.Line(Call("u", StrCat("(", t, "[5,5], ", t, "[5])"), "r, w", "cu_cholesky_update_ffi", ""));
    m.Line(StrCat("u0 = ", t, "[5,5] get-tuple-element(u), index=0"));
    m.Line(StrCat("u1 = ", t, "[5] get-tuple-element(u), index=1"));
    RunAndCompare(m.Finish(StrCat("(", t, "[5,5], ", t, "[5]) tuple(u0, u1)")), "cholesky_update " + t, 1);
  }
  REQUIRE_DEVICE();
}

TEST(SolverGpuTest, TridiagonalSolves) {
  // dominant: the diagonal shifted by 4 (no interchanges); else random (pivoting, f64 only: a
  // random tridiagonal system may be badly conditioned).
  struct Gtsv { std::string t, target; int64_t batch, n, nrhs; bool dominant; };
  for (const Gtsv& c : {Gtsv{"f32", "lapack_sgtsv_ffi", 0, 6, 3, true}, Gtsv{"c64", "lapack_cgtsv_ffi", 2, 5, 2, true},
                        Gtsv{"f64", "lapack_dgtsv_ffi", 0, 7, 2, false}, Gtsv{"f64", "cusparse_gtsv2_ffi", 3, 6, 1, false},
                        Gtsv{"c128", "cusparse_gtsv2_ffi", 0, 5, 4, false}, Gtsv{"f32", "hipsparse_gtsv2_ffi", 0, 6, 3, true}}) {
    const std::string v = c.t + Vec(c.batch, c.n), b = c.t + Dims(c.batch, c.n, c.nrhs);
    Module m;
    m.Param("dl", c.t, Vec(c.batch, c.n));
    m.Param("d0", c.t, Vec(c.batch, c.n));
    m.Param("du", c.t, Vec(c.batch, c.n));
    m.Param("b", c.t, Dims(c.batch, c.n, c.nrhs));
    m.Line(StrCat("four = ", c.t, "[] constant(", Complex(c.t) ? "(4, 0)" : "4", ")"));
    m.Line(StrCat("fb = ", v, " broadcast(four), dimensions={}"));
    m.Line(StrCat("d = ", v, " ", c.dominant ? "add(d0, fb)" : "copy(d0)"));
    const bool lapack = c.target.starts_with("lapack");
    if (lapack) {
      const std::string shape = StrCat("(", v, ", ", v, ", ", v, ", ", b, ", s32", Scalar(c.batch), ")");
      m.Line(Call("g", shape, "dl, d, du, b", c.target, ""));
      const std::string parts[] = {v, v, v, b, "s32" + Scalar(c.batch)};
      for (int i = 0; i < 5; ++i) m.Line(StrCat("g", i, " = ", parts[i], " get-tuple-element(g), index=", i));
      RunAndCompare(m.Finish(shape + " tuple(g0, g1, g2, g3, g4)"), "gtsv " + c.t + " " + c.target, 1);
    } else {
      m.Line(Call("x", b, "dl, d, du, b", c.target, ""));
      RunAndCompare(m.Finish(b + " copy(x)"), "gtsv2 " + c.t + " " + c.target, 1);
    }
  }
  REQUIRE_DEVICE();
}

}  // namespace
}  // namespace kiln::cuda
