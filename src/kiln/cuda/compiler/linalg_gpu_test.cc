// Cholesky and triangular-solve through the GPU compiler on a device (label gpu), against the
// reference evaluator, at the sizes that take the blocked kernels (matrices over 256, systems
// over 2048: docs/codegen.md, Note [Blocked linalg] in codegen/emit_linalg.cc) and the
// one-thread ones below them. Inputs are built inside the module from random parameters with
// exact elementwise ops (the same bits on both sides): Hermitian matrices x + x^H + (3n+2) I
// for cholesky, well-conditioned triangles (off-diagonal entries at most 1/k, diagonal 2) for
// the solves. Tolerance: the backend-vs-evaluator table (eval/tolerance.h: f32/c64 rtol 1e-5
// + 1e-5 of the largest value, f64/c128 rtol 1e-9): both sides compute in double with the
// same operation order, so only FMA contraction separates them, far below those bounds even
// at n = 3000. Skips (visibly) without a CUDA device.
#include <gtest/gtest.h>

#include "kiln/base/strings.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/gpu_executable.h"
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

// Compiles `text` with the host fallback off (every op on the device), runs it on random
// inputs and compares with the evaluator.
void RunAndCompare(const std::string& text, const std::string& what) {
  SCOPED_TRACE(what);
  CudaDevice* device = TheDevice();
  auto m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << "\n" << text;
  std::vector<Shape> shapes;
  for (const HloInstruction* p : (*m)->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
  std::vector<Literal> args = MakeRandomArguments(shapes, 7);
  auto expected = EvaluateModule(**m, args);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  GpuCompileOptions o;
  o.device = codegen::DeviceSpec::FromDescription(device->description());
  o.allow_host_fallback = false;
  auto compiled = GpuCompiler::Compile(std::move(*m), o);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  auto exe = GpuExecutable::Create(std::move(*compiled), *device, {});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  GpuRunOptions ro;
  ro.poison = true;
  auto got = (*exe)->Run(args, ro);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  CompareOptions co;
  co.backend_vs_evaluator = true;
  Comparison c = CompareLiterals(*got, *expected, co);
  EXPECT_TRUE(c.ok()) << c.ToString();
}

std::string Real(const std::string& t) { return t == "c64" ? "f32" : t == "c128" ? "f64" : t; }

// [batch,]n,n and the dimension numbers that go with it.
struct Dims {
  std::string mat, tr, row, col;
};
Dims MatrixDims(int64_t batch, int64_t n) {
  const std::string nn = std::to_string(n) + "," + std::to_string(n);
  if (batch > 1) return {"[" + std::to_string(batch) + "," + nn + "]", "{0,2,1}", "1", "2"};
  return {"[" + nn + "]", "{1,0}", "0", "1"};
}

// The module's lines defining `eq` (the diagonal mask) for `d`.
std::string DiagonalMask(const Dims& d) {
  return "  i = s32" + d.mat + " iota(), iota_dimension=" + d.row + "\n  j = s32" + d.mat +
         " iota(), iota_dimension=" + d.col + "\n  eq = pred" + d.mat + " compare(i, j), direction=EQ\n";
}

std::string CholeskyModule(const std::string& t, int64_t batch, int64_t n, bool lower) {
  const Dims d = MatrixDims(batch, n);
  const std::string r = Real(t), rm = r + d.mat, tm = t + d.mat;
  std::string s = "HloModule chol\nENTRY e {\n  x = " + tm + " parameter(0)\n" + DiagonalMask(d);
  s += "  dc = " + r + "[] constant(" + std::to_string(3 * n + 2) + ")\n  db = " + rm + " broadcast(dc), dimensions={}\n";
  s += "  zc = " + r + "[] constant(0)\n  zb = " + rm + " broadcast(zc), dimensions={}\n";
  s += "  dg = " + rm + " select(eq, db, zb)\n";
  if (t == r) {
    s += "  xt = " + tm + " transpose(x), dimensions=" + d.tr + "\n  sy = " + tm + " add(x, xt)\n";
    s += "  a = " + tm + " add(sy, dg)\n";
  } else {
    // Hermitian: x + x^H (imaginary parts of the diagonal cancel exactly).
    s += "  xt = " + tm + " transpose(x), dimensions=" + d.tr + "\n";
    s += "  xr = " + rm + " real(x)\n  xi = " + rm + " imag(x)\n  tr = " + rm + " real(xt)\n  ti = " + rm + " imag(xt)\n";
    s += "  re0 = " + rm + " add(xr, tr)\n  re = " + rm + " add(re0, dg)\n  im = " + rm + " subtract(xi, ti)\n";
    s += "  a = " + tm + " complex(re, im)\n";
  }
  s += "  ROOT c = " + tm + " cholesky(a), lower=" + (lower ? "true" : "false") + "\n}\n";
  return s;
}

std::string SolveModule(const std::string& t, int64_t batch, int64_t k, int64_t rhs, const std::string& opts,
                        bool left) {
  const Dims d = MatrixDims(batch, k);
  const std::string r = Real(t), rm = r + d.mat, tm = t + d.mat;
  const std::string pre = batch > 1 ? std::to_string(batch) + "," : "";
  const std::string bm = t + "[" + pre + (left ? std::to_string(k) + "," + std::to_string(rhs)
                                                : std::to_string(rhs) + "," + std::to_string(k)) + "]";
  std::string s = "HloModule solve\nENTRY e {\n  x = " + tm + " parameter(0)\n  b = " + bm + " parameter(1)\n" +
                  DiagonalMask(d);
  s += "  sc = " + r + "[] constant(" + std::to_string(1.0 / double(k)) + ")\n  sb = " + rm +
       " broadcast(sc), dimensions={}\n";
  s += "  two = " + t + "[] constant(" + (t == r ? "2" : "(2, 0)") + ")\n  tb = " + tm + " broadcast(two), dimensions={}\n";
  if (t == r) {
    s += "  off = " + tm + " multiply(x, sb)\n";
  } else {
    s += "  xr = " + rm + " real(x)\n  xi = " + rm + " imag(x)\n  sr = " + rm + " multiply(xr, sb)\n  si = " + rm +
         " multiply(xi, sb)\n  off = " + tm + " complex(sr, si)\n";
  }
  s += "  a = " + tm + " select(eq, tb, off)\n";
  s += "  ROOT s = " + bm + " triangular-solve(a, b), " + opts + "\n}\n";
  return s;
}

#define REQUIRE_DEVICE() \
  if (!TheDevice()) GTEST_SKIP() << "no CUDA device";

TEST(LinalgGpuTest, CholeskyAtBlockedSizes) {
  REQUIRE_DEVICE();
  struct Case { std::string t; int64_t batch, n; bool lower; };
  for (const Case& c : {Case{"f32", 2, 257, true}, Case{"f64", 1, 257, false}, Case{"c64", 1, 257, false},
                        Case{"c128", 2, 257, true}, Case{"f32", 1, 600, false}, Case{"c128", 1, 600, true},
                        Case{"f64", 1, 2049, true}, Case{"f32", 1, 3000, true}}) {
    RunAndCompare(CholeskyModule(c.t, c.batch, c.n, c.lower),
                  StrCat("cholesky ", c.t, " batch ", c.batch, " n ", c.n, c.lower ? " lower" : " upper"));
  }
}

TEST(LinalgGpuTest, NotPositiveDefiniteIsNaN) {
  REQUIRE_DEVICE();
  RunAndCompare("HloModule m\nENTRY e {\n  a = f64[2,300,300] parameter(0)\n  ROOT c = f64[2,300,300] cholesky(a), lower=true\n}\n",
                "random (not positive definite) f64 300");
}

TEST(LinalgGpuTest, TriangularSolveAtBlockedSizes) {
  REQUIRE_DEVICE();
  struct Case { std::string t; int64_t batch, k, rhs; bool left; std::string opts; };
  for (const Case& c : {
           Case{"f32", 1, 2049, 16, true, "left_side=true, lower=true, transpose_a=NO_TRANSPOSE"},
           Case{"f64", 2, 2049, 4, true, "left_side=true, lower=false, unit_diagonal=true, transpose_a=TRANSPOSE"},
           Case{"c64", 1, 3000, 8, false, "left_side=false, lower=false, transpose_a=ADJOINT"},
           Case{"c128", 1, 3000, 3, false, "left_side=false, lower=true, transpose_a=NO_TRANSPOSE"},
           Case{"f32", 1, 3000, 5, false, "left_side=false, lower=true, transpose_a=TRANSPOSE"},
           Case{"c64", 2, 2049, 6, true, "left_side=true, lower=true, transpose_a=ADJOINT"},
           Case{"f64", 1, 3000, 2, true, "left_side=true, lower=false, transpose_a=NO_TRANSPOSE"},
           Case{"f32", 1, 600, 7, true, "left_side=true, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE"},
           Case{"c128", 1, 257, 5, false, "left_side=false, lower=false, transpose_a=TRANSPOSE"},
       }) {
    RunAndCompare(SolveModule(c.t, c.batch, c.k, c.rhs, c.opts, c.left),
                  StrCat("triangular-solve ", c.t, " batch ", c.batch, " k ", c.k, " rhs ", c.rhs, ": ", c.opts));
  }
}

}  // namespace
}  // namespace kiln::cuda
