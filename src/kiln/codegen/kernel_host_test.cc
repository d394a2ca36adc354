// Generated loop kernels run on the CPU (label cpu): the catalogue's kernels that need no
// block-level cooperation (no shared memory, barriers, atomics or second launch: the loop
// emitter's elementwise, shape, gather, window and edge-value kernels) are compiled by the host
// C++ compiler against a shim of CUDA's thread indices and intrinsics, launched one thread at a
// time, and compared with the reference evaluator on random inputs (bit for bit where the case
// asks). The GPU test (cuda/compiler/codegen_gpu_test.cc) runs every kernel on a device; this one runs
// the portable subset in CI. Skipped without a host compiler (KILN_HOST_CXX picks one).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/base/strings.h"
#include "kiln/codegen/codegen_test_util.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/emitters.h"
#include "kiln/eval/compare.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::codegen {
namespace {

namespace fs = std::filesystem;

constexpr const char* kShim = R"CPP(
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <utility>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(n)
struct kiln_dim3 { unsigned x, y, z; };
static kiln_dim3 threadIdx, blockIdx, blockDim, gridDim;
template <class A, class B> static inline auto min(A a, B b) -> decltype(a + b) { return b < a ? b : a; }
template <class A, class B> static inline auto max(A a, B b) -> decltype(a + b) { return a < b ? b : a; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
static inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
static inline long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clzll(long long v) { return v == 0 ? 64 : __builtin_clzll((unsigned long long)v); }
static inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
// Sort kernels run with one thread per block here: barriers are no-ops, shared arrays static.
static inline void __syncthreads() {}
#define __shared__ static
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
static inline unsigned atomicCAS(unsigned* p, unsigned c, unsigned v) { unsigned o = *p; if (o == c) *p = v; return o; }
static inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
  unsigned long long o = *p; if (o == c) *p = v; return o;
}
typedef unsigned short kiln_u16_;
struct __half { kiln_u16_ x; };
struct __nv_bfloat16 { kiln_u16_ x; };
static inline kiln_u16_ __half_as_ushort(__half h) { return h.x; }
static inline __half __ushort_as_half(kiln_u16_ b) { return __half{b}; }
static inline kiln_u16_ __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(kiln_u16_ b) { return __nv_bfloat16{b}; }
static inline float __bfloat162float(__nv_bfloat16 h) { return __uint_as_float((unsigned)h.x << 16); }
static inline float __half2float(__half h) {
  const unsigned s = (h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1fu, m = h.x & 0x3ffu;
  if (e == 0) { const float v = ldexpf((float)m, -24); return s ? -v : v; }
  if (e == 0x1f) return __uint_as_float(s | 0x7f800000u | (m << 13));
  return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
}
static inline double kiln_shim_round(double x, int mant, int min_exp, double mx) {
  if (x == 0 || isinf(x)) return x;
  int e;
  frexp(x, &e);
  const int ulp = ((e - 1) < min_exp ? min_exp : (e - 1)) - mant;
  const double r = ldexp(nearbyint(ldexp(x, -ulp)), ulp);
  return fabs(r) > mx ? copysign(INFINITY, x) : r;
}
static inline kiln_u16_ kiln_shim_f16(double x) {
  const double r = kiln_shim_round(x, 10, -14, 65504.0);
  const unsigned s = signbit(r) ? 0x8000u : 0u;
  const double a = fabs(r);
  if (isinf(a)) return (kiln_u16_)(s | 0x7c00u);
  if (a < ldexp(1.0, -14)) return (kiln_u16_)(s | (unsigned)ldexp(a, 24));
  int e;
  const double f = frexp(a, &e);
  return (kiln_u16_)(s | ((unsigned)(e - 1 + 15) << 10) | ((unsigned)ldexp(f * 2 - 1, 10)));
}
static inline __half __float2half_rn(float x) { return __half{kiln_shim_f16(x)}; }
static inline __half __double2half(double x) { return __half{kiln_shim_f16(x)}; }
static inline __nv_bfloat16 __double2bfloat16(double x) {
  const float f = (float)kiln_shim_round(x, 7, -126, 3.3895313892515355e38);
  return __nv_bfloat16{(kiln_u16_)(__float_as_uint(f) >> 16)};
}
static inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __double2bfloat16(x); }
template <class... P, size_t... I>
static void kiln_host_call_(void (*k)(P...), void** a, std::index_sequence<I...>) { k(static_cast<P>(a[I])...); }
template <class... P>
static void kiln_host_call(void (*k)(P...), void** a) { kiln_host_call_(k, a, std::index_sequence_for<P...>{}); }
extern "C" void kiln_host_set(const unsigned* v) {
  blockIdx = {v[0], v[1], v[2]}; threadIdx = {v[3], v[4], v[5]};
  gridDim = {v[6], v[7], v[8]}; blockDim = {v[9], v[10], v[11]};
}
)CPP";

// The prelude without its CUDA includes and pragmas.
std::string HostPrelude() {
  std::string out;
  for (std::string_view line : StrSplit(CodegenPrelude(), '\n')) {
    if (line.rfind("#include", 0) == 0 || line.rfind("#pragma", 0) == 0) continue;
    out += std::string(line) + "\n";
  }
  return out;
}

// Kernels the host can run: one launch, no shared memory, barriers, atomics or scratch.
bool HostRunnable(const KernelSpec& k) {
  // A sort with one thread per block needs no cooperation.
  // (Long rows: the merge and gather launches after the first have independent threads.)
  if (k.emitter == "sort") return !k.launches.empty() && k.launches[0].dims.block.x == 1;
  if (k.emitter != "loop" && k.emitter != "dus_in_place" && k.emitter != "cholesky" &&
      k.emitter != "triangular_solve" && k.emitter != "scan")
    return false;  // threads cooperate
  // Several launches only where each launch's threads are independent (the blocked linalg
  // and the scan kernels: run launch after launch).
  const bool multi = k.emitter == "cholesky" || k.emitter == "triangular_solve" || k.emitter == "scan";
  if (k.launches.empty() || (k.launches.size() != 1 && !multi)) return false;
  for (const KernelLaunch& l : k.launches)
    if (l.dims.shared_memory_bytes > 0) return false;
  for (const char* s : {"__syncthreads", "__shared__", "atomic", "shfl"})
    if (k.source.find(s) != std::string::npos) return false;
  for (const KernelParam& p : k.params)
    if (p.kind == KernelParam::Kind::kScalar) return false;
  return true;
}

// Literal (logical order) <-> bytes in `shape`'s layout.
std::vector<int64_t> PhysicalOffsets(const Shape& shape) {
  const int64_t n = shape.num_elements();
  std::vector<int64_t> strides = PhysicalStrides(shape), out(n), idx(shape.rank(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (int64_t d = 0; d < shape.rank(); ++d) off += idx[d] * strides[d];
    out[i] = off;
    for (int64_t d = shape.rank() - 1; d >= 0; --d) {
      if (++idx[d] < shape.dimensions(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

struct HostKernel {
  std::string name;
  std::unique_ptr<HloModule> module;
  KernelSpec kernel;
  bool exact = false;
  // The expected result from the arguments, instead of the evaluator (which is too slow for
  // some kernels: a reduce-window over 10^5-long windows).
  std::function<Literal(const std::vector<Literal>&)> reference;
};

// Compiles `jobs` into one shared library, runs each kernel thread by thread on random inputs
// and compares with the evaluator. Returns the number of kernels that differ.
int RunChunk(const std::string& cxx, std::vector<HostKernel>& jobs, size_t begin, size_t end) {
  // One translation unit: the prelude once, each kernel in a namespace of its own.
  // A directory (and library path) of its own per chunk: dlopen would hand back a library
  // still loaded under the same name.
  const fs::path dir = fs::temp_directory_path() /
                       ("kiln_kernel_host_" + std::to_string(::getpid()) + "_" + std::to_string(begin));
  fs::create_directories(dir);
  {
    std::ofstream src(dir / "kernels.cc");
    src << kShim << HostPrelude();
    for (size_t i = begin; i < end; ++i) {
      std::string s = jobs[i].kernel.source;
      const std::string inc = std::string("#include \"") + CodegenPreludeName() + "\"";
      for (size_t p; (p = s.find(inc)) != std::string::npos;) s.erase(p, inc.size());
      for (size_t p; (p = s.find("extern \"C\" ")) != std::string::npos;) s.erase(p, 11);
      src << "namespace k" << i << " {\n" << s << "\n}\n";
      for (const std::string& entry : jobs[i].kernel.Entries())
        src << "extern \"C\" void run_" << i << "_" << entry << "(void** a) { kiln_host_call(k" << i
            << "::" << entry << ", a); }\n";
    }
  }
  const fs::path lib = dir / "kernels.so";
  const std::string cmd = cxx + " -std=c++17 -O1 -fPIC -shared -w -o " + lib.string() + " " +
                          (dir / "kernels.cc").string() + " > " + (dir / "log").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << "host compile of the kernels failed:\n" << text.substr(0, 6000);
    return 1;
  }
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    ADD_FAILURE() << dlerror();
    return 1;
  }
  auto set = reinterpret_cast<void (*)(const unsigned*)>(dlsym(handle, "kiln_host_set"));
  if (set == nullptr) return 1;
  int failures = 0;
  for (size_t i = begin; i < end; ++i) {
    HostKernel& j = jobs[i];
    SCOPED_TRACE(j.name);
    std::vector<Shape> shapes;
    for (const HloInstruction* p : j.module->entry_computation()->parameter_instructions()) shapes.push_back(p->shape());
    std::vector<Literal> args = MakeRandomArguments(shapes, /*seed=*/11 + i);
    Evaluator evaluator(EvaluatorOptions{});
    StatusOr<Literal> want = j.reference ? StatusOr<Literal>(j.reference(args)) : evaluator.Run(*j.module, args);
    if (!want.ok()) continue;  // the reference cannot run it: nothing to compare
    const HloInstruction* root = j.module->entry_computation()->root_instruction();
    // One buffer per parameter; an in-place output uses its operand's (operands come first,
    // parameter k of kind kOperand is operand k).
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<void*> pointers;
    std::vector<std::pair<Shape, size_t>> outputs;  // shape, buffer index
    for (const KernelParam& p : j.kernel.params) {
      const int w = PrimitiveByteWidth(p.shape.element_type());
      std::vector<uint8_t> b(std::max<int64_t>(p.shape.num_elements() * w, 16), 0xA5);
      if (p.kind == KernelParam::Kind::kOperand) {
        const HloInstruction* op = root->operand(p.index);
        const Literal& l = op->opcode() == HloOpcode::kParameter ? args[op->parameter_number()] : op->literal();
        std::vector<int64_t> offs = PhysicalOffsets(p.shape);
        for (size_t e = 0; e < offs.size(); ++e) std::memcpy(&b[offs[e] * w], l.untyped_data() + e * w, w);
      }
      buffers.push_back(std::move(b));
    }
    for (size_t k = 0; k < j.kernel.params.size(); ++k) {
      const KernelParam& p = j.kernel.params[k];
      size_t b = k;
      if (p.kind == KernelParam::Kind::kOutput)
        for (const auto& [out, operand] : j.kernel.in_place)
          if (out == p.index) b = size_t(operand);
      pointers.push_back(buffers[b].data());
      if (p.kind == KernelParam::Kind::kOutput) outputs.push_back({p.shape, b});
    }
    for (const KernelLaunch& launch : j.kernel.launches) {
    auto run = reinterpret_cast<void (*)(void**)>(
        dlsym(handle, ("run_" + std::to_string(i) + "_" + launch.entry).c_str()));
    if (run == nullptr) return 1;
    const runtime::LaunchDims& d = launch.dims;
    for (unsigned bz = 0; bz < d.grid.z; ++bz)
      for (unsigned by = 0; by < d.grid.y; ++by)
        for (unsigned bx = 0; bx < d.grid.x; ++bx)
          for (unsigned tz = 0; tz < d.block.z; ++tz)
            for (unsigned ty = 0; ty < d.block.y; ++ty)
              for (unsigned tx = 0; tx < d.block.x; ++tx) {
                const unsigned v[12] = {bx, by, bz, tx, ty, tz, d.grid.x, d.grid.y, d.grid.z, d.block.x, d.block.y, d.block.z};
                set(v);
                run(pointers.data());
              }
    }
    std::vector<Literal> outs;
    for (const auto& [shape, b] : outputs) {
      Literal l(shape);
      const int w = PrimitiveByteWidth(shape.element_type());
      std::vector<int64_t> offs = PhysicalOffsets(shape);
      for (size_t e = 0; e < offs.size(); ++e) std::memcpy(l.untyped_data() + e * w, &buffers[b][offs[e] * w], w);
      outs.push_back(std::move(l));
    }
    Literal got = outs.size() == 1 ? std::move(outs[0]) : Literal::MakeTuple(std::move(outs));
    bool ok = true;
    if (j.exact) {
      std::vector<const Literal*> g, x;
      if (got.shape().IsTuple()) {
        for (int64_t t = 0; t < got.tuple_size(); ++t) {
          g.push_back(&got.tuple_element(t));
          x.push_back(&want->tuple_element(t));
        }
      } else {
        g.push_back(&got);
        x.push_back(&*want);
      }
      for (size_t t = 0; t < g.size(); ++t)
        if (g[t]->size_bytes() != x[t]->size_bytes() ||
            std::memcmp(g[t]->untyped_data(), x[t]->untyped_data(), g[t]->size_bytes()) != 0) {
          ok = false;
          if (failures < 20) ADD_FAILURE() << j.name << ": output " << t << " differs in its bits";
        }
    }
    CompareOptions o;
    o.backend_vs_evaluator = true;
    Comparison c = CompareLiterals(got, *want, o);
    if (!c.ok()) {
      ok = false;
      if (failures < 20) ADD_FAILURE() << j.name << ":\n" << c.ToString() << "\n" << j.kernel.hlo;
    }
    if (!ok) ++failures;
  }
  dlclose(handle);
  fs::remove_all(dir);
  return failures;
}

// Runs `jobs` in chunks of 100 kernels (one translation unit each: bounded compiler memory).
int RunOnHost(const std::string& cxx, std::vector<HostKernel>& jobs) {
  int failures = 0;
  for (size_t begin = 0; begin < jobs.size(); begin += 100)
    failures += RunChunk(cxx, jobs, begin, std::min(jobs.size(), begin + 100));
  std::cout << jobs.size() - failures << " of " << jobs.size() << " host-run kernels match the evaluator\n";
  return failures;
}

std::string HostCompiler() {
  const char* env = std::getenv("KILN_HOST_CXX");
  return env != nullptr && *env != '\0' ? env : "c++";
}
bool HaveCompiler(const std::string& cxx) {
  return std::system((cxx + " --version > /dev/null 2>&1").c_str()) == 0;
}

TEST(KernelHostTest, LoopKernelsMatchTheEvaluator) {
  const std::string cxx = HostCompiler();
  if (!HaveCompiler(cxx)) GTEST_SKIP() << "no host compiler " << cxx;
  KILN_ASSERT_OK_AND_ASSIGN(DeviceSpec device, DeviceSpec::FromPreset("sm_90"));
  // The catalogue's runnable kernels: the default config, and for the window cases every
  // candidate (vector widths, unrolls); also for dots and convolutions.
  std::vector<HostKernel> jobs;
  for (const testing::CatalogueCase& c : testing::Catalogue()) {
    KILN_ASSERT_OK_AND_ASSIGN(auto probe, testing::ParseModule(c.hlo));
    const HloInstruction& root = *probe->entry_computation()->root_instruction();
    std::vector<KernelConfig> configs = {KernelConfig{}};
    if (c.name.find("window") != std::string::npos || c.name.find("select_and_scatter") != std::string::npos ||
        c.name.rfind("cholesky", 0) == 0 || c.name.rfind("trsm", 0) == 0 ||
        c.name.rfind("edge_", 0) == 0 || c.name.rfind("bitcast", 0) == 0 || c.name.rfind("dot_", 0) == 0 ||
        c.name.rfind("conv_", 0) == 0) {
      KILN_ASSERT_OK_AND_ASSIGN(configs, CandidateConfigs(root, device));
    }
    if (c.emitter == "sort") configs = {KernelConfig{1, 1, 1, 0, 0, 0}};
    for (const KernelConfig& config : configs) {
      KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(c.hlo));
      StatusOr<KernelSpec> k = EmitKernel(*m->entry_computation()->root_instruction(), device, config);
      ASSERT_TRUE(k.ok()) << c.name << ": " << k.status().ToString();
      if (!HostRunnable(*k)) continue;
      bool operands_ok = true;
      for (const HloInstruction* op : m->entry_computation()->root_instruction()->operands())
        operands_ok &= op->opcode() == HloOpcode::kParameter || op->opcode() == HloOpcode::kConstant;
      if (!operands_ok) continue;
      jobs.push_back(HostKernel{c.name + "." + k->config.ToString(), std::move(m), std::move(k).value(), c.exact, {}});
    }
  }
  ASSERT_GT(jobs.size(), 20u);
  EXPECT_EQ(RunOnHost(cxx, jobs), 0);
}

// Text of a constant `t`[batch, n, n] whose element (bi, i, j) is f(bi, i, j) = (re, im).
template <class F>
std::string MatrixLiteral(bool complex, int64_t batch, int64_t n, F f) {
  std::string s = batch > 1 ? "{" : "";
  char buf[96];
  for (int64_t bi = 0; bi < batch; ++bi) {
    s += bi > 0 ? ", {" : "{";
    for (int64_t i = 0; i < n; ++i) {
      s += i > 0 ? ", {" : "{";
      for (int64_t j = 0; j < n; ++j) {
        const auto [re, im] = f(bi, i, j);
        if (complex) std::snprintf(buf, sizeof buf, "%s(%.17g, %.17g)", j > 0 ? ", " : "", re, im);
        else std::snprintf(buf, sizeof buf, "%s%.17g", j > 0 ? ", " : "", re);
        s += buf;
      }
      s += "}";
    }
    s += "}";
  }
  return s + (batch > 1 ? "}" : "");
}

// Deterministic values in [-1, 1).
double Noise(int64_t bi, int64_t i, int64_t j, int salt) {
  uint64_t h = (uint64_t(bi) * 1000003u + uint64_t(i)) * 998244353u + uint64_t(j) * 2654435761u + uint64_t(salt);
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return double(h % 2000001) / 1000000.0 - 1.0;
}

std::string Dims(int64_t batch, int64_t a, int64_t b) {
  return "[" + (batch > 1 ? std::to_string(batch) + "," : std::string()) + std::to_string(a) + "," +
         std::to_string(b) + "]";
}

// The blocked cholesky and triangular-solve kernels (several launches over a scratch copy,
// docs/codegen.md) with small tiles, so that many blocks and a partial last block occur:
// positive definite (Hermitian, diagonally dominant) and random (not positive definite: NaN)
// matrices, every side / triangle / transpose / unit-diagonal combination over the four types.
TEST(KernelHostTest, BlockedLinalgKernelsMatchTheEvaluator) {
  const std::string cxx = HostCompiler();
  if (!HaveCompiler(cxx)) GTEST_SKIP() << "no host compiler " << cxx;
  KILN_ASSERT_OK_AND_ASSIGN(DeviceSpec device, DeviceSpec::FromPreset("sm_90"));
  std::vector<HostKernel> jobs;
  auto add = [&](const std::string& name, const std::string& hlo, KernelConfig config) {
    KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(hlo));
    StatusOr<KernelSpec> k = EmitKernel(*m->entry_computation()->root_instruction(), device, config);
    ASSERT_TRUE(k.ok()) << name << ": " << k.status().ToString();
    ASSERT_GT(k->launches.size(), 2u) << name << " is not blocked";
    ASSERT_TRUE(HostRunnable(*k)) << name;
    jobs.push_back(HostKernel{name + "." + k->config.ToString(), std::move(m), std::move(k).value(), false, {}});
  };
  struct Chol { std::string t; int64_t batch, n; bool lower, spd; int tile, block; };
  for (const Chol& c : {Chol{"f32", 2, 40, true, true, 16, 32}, Chol{"f64", 1, 37, false, true, 8, 64},
                        Chol{"c64", 2, 30, false, true, 16, 32}, Chol{"c128", 1, 33, true, true, 8, 32},
                        Chol{"f64", 2, 20, true, false, 8, 32}, Chol{"c64", 1, 19, false, false, 4, 32},
                        Chol{"f32", 1, 257, true, true, 0, 0}}) {
    const bool cplx = c.t[0] == 'c';
    const std::string shape = c.t + Dims(c.batch, c.n, c.n);
    std::string a;
    if (c.spd) {
      const double diag = 2.0 * c.n + 1.0;
      a = "a = " + shape + " constant(" + MatrixLiteral(cplx, c.batch, c.n, [&](int64_t b, int64_t i, int64_t j) {
            if (i == j) return std::pair<double, double>(diag + Noise(b, i, i, 1), 0.0);
            const int64_t lo = std::min(i, j), hi = std::max(i, j);
            const double im = cplx ? Noise(b, hi, lo, 2) : 0.0;
            return std::pair<double, double>(Noise(b, hi, lo, 1), i > j ? im : -im);
          }) + ")";
    } else {
      a = "a = " + shape + " parameter(0)";
    }
    add("blocked_cholesky_" + c.t + "_" + std::to_string(c.n) + (c.lower ? "_lower" : "_upper"),
        "HloModule m\nENTRY e {\n  " + a + "\n  ROOT c = " + shape + " cholesky(a), lower=" +
            (c.lower ? "true" : "false") + "\n}\n",
        KernelConfig{c.block, 0, 0, 0, 0, c.tile});
  }
  const char* types[] = {"f32", "f64", "c64", "c128"};
  const char* transposes[] = {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
  int combo = 0;
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (const char* tr : transposes)
        for (bool unit : {false, true}) {
          const std::string t = types[combo % 4];
          const bool cplx = t[0] == 'c';
          const int64_t batch = 1 + combo % 2, k = 29 + combo % 5, other = 1 + combo % 4;
          const int tile = combo % 3 == 0 ? 4 : 8;
          ++combo;
          const std::string ashape = t + Dims(batch, k, k);
          const std::string bshape = t + (left ? Dims(batch, k, other) : Dims(batch, other, k));
          // Off-diagonal entries small, diagonal entries of magnitude 1 to 2: well conditioned.
          const std::string a = MatrixLiteral(cplx, batch, k, [&](int64_t b, int64_t i, int64_t j) {
            if (i == j) {
              const double v = Noise(b, i, j, 3);
              return std::pair<double, double>(v < 0 ? v - 1.0 : v + 1.0, cplx ? 0.5 * Noise(b, i, j, 4) : 0.0);
            }
            return std::pair<double, double>(Noise(b, i, j, 3) / k, cplx ? Noise(b, i, j, 4) / k : 0.0);
          });
          const std::string name = std::string("blocked_trsm_") + t + (left ? "_left" : "_right") +
                                   (lower ? "_lower_" : "_upper_") + tr + (unit ? "_unit" : "");
          add(name,
              "HloModule m\nENTRY e {\n  a = " + ashape + " constant(" + a + ")\n  b = " + bshape +
                  " parameter(0)\n  ROOT x = " + bshape + " triangular-solve(a, b), left_side=" +
                  (left ? "true" : "false") + ", lower=" + (lower ? "true" : "false") +
                  ", unit_diagonal=" + (unit ? "true" : "false") + ", transpose_a=" + tr + "\n}\n",
              KernelConfig{32, 0, 0, 0, 0, tile});
        }
  EXPECT_EQ(RunOnHost(cxx, jobs), 0);
}

// Scans of 10^5-long rows (the evaluator would take ~5 x 10^9 reduce-window steps per row):
// against the prefix computed in double and rounded once for floating-point sums (the chunked
// scan reassociates: within the backend tolerance), exactly for integer sums (wrapping) and bf16
// cummax. Forward and reverse, along the minor axis and along a major one.
TEST(KernelHostTest, LongScansMatchTheirPrefixes) {
  const std::string cxx = HostCompiler();
  if (!HaveCompiler(cxx)) GTEST_SKIP() << "no host compiler " << cxx;
  KILN_ASSERT_OK_AND_ASSIGN(DeviceSpec device, DeviceSpec::FromPreset("sm_90"));
  constexpr int64_t n = 100000;
  struct Case {
    std::string name, type, op, init;
    int64_t inner;
    bool reverse;
  };
  std::vector<HostKernel> jobs;
  for (const Case& c : {Case{"cumsum_f32", "f32", "add", "0", 1, false}, Case{"reverse_cumsum_f32", "f32", "add", "0", 1, true},
                        Case{"cumsum_s32", "s32", "add", "5", 1, false}, Case{"cummax_bf16", "bf16", "maximum", "-inf", 1, false},
                        Case{"reverse_cumsum_f64_axis0", "f64", "add", "0", 3, true}}) {
    const std::string shape = c.type + "[" + std::to_string(n) + (c.inner > 1 ? "," + std::to_string(c.inner) : "") + "]";
    const std::string pad = c.reverse ? "0_" + std::to_string(n - 1) : std::to_string(n - 1) + "_0";
    const std::string window = c.inner > 1 ? "size=" + std::to_string(n) + "x1 pad=" + pad + "x0_0"
                                           : "size=" + std::to_string(n) + " pad=" + pad;
    const std::string hlo = "HloModule m\nf { a = " + c.type + "[] parameter(0)  b = " + c.type + "[] parameter(1)  ROOT r = " +
                            c.type + "[] " + c.op + "(a, b) }\nENTRY e {\n  x = " + shape + " parameter(0)\n  i = " + c.type +
                            "[] constant(" + c.init + ")\n  ROOT s = " + shape + " reduce-window(x, i), window={" + window +
                            "}, to_apply=f\n}\n";
    KILN_ASSERT_OK_AND_ASSIGN(auto m, testing::ParseModule(hlo));
    KILN_ASSERT_OK_AND_ASSIGN(KernelSpec k, EmitKernel(*m->entry_computation()->root_instruction(), device));
    ASSERT_EQ(k.emitter, "scan") << c.name;
    ASSERT_EQ(k.launches.size(), 3u) << c.name;
    const Shape out = m->entry_computation()->root_instruction()->shape();
    const int64_t inner = c.inner;
    const bool reverse = c.reverse;
    const std::string type = c.type;
    auto reference = [out, inner, reverse, type](const std::vector<Literal>& args) {
      Literal l(out);
      const uint8_t* x = args[0].untyped_data();
      uint8_t* y = l.untyped_data();
      for (int64_t in = 0; in < inner; ++in) {
        double acc = 0;
        int32_t iacc = 5;
        float facc = -INFINITY;
        uint16_t fbits = 0xff80;  // bf16 -inf
        for (int64_t s = 0; s < n; ++s) {
          const int64_t e = (reverse ? n - 1 - s : s) * inner + in;
          if (type == "f32") {
            float v;
            std::memcpy(&v, x + e * 4, 4);
            acc += v;
            const float r = static_cast<float>(acc);
            std::memcpy(y + e * 4, &r, 4);
          } else if (type == "f64") {
            double v;
            std::memcpy(&v, x + e * 8, 8);
            acc += v;
            std::memcpy(y + e * 8, &acc, 8);
          } else if (type == "s32") {
            int32_t v;
            std::memcpy(&v, x + e * 4, 4);
            iacc = static_cast<int32_t>(static_cast<uint32_t>(iacc) + static_cast<uint32_t>(v));
            std::memcpy(y + e * 4, &iacc, 4);
          } else {  // bf16 max
            uint16_t b;
            std::memcpy(&b, x + e * 2, 2);
            const uint32_t w = uint32_t{b} << 16;
            float v;
            std::memcpy(&v, &w, 4);
            if (v > facc) {
              facc = v;
              fbits = b;
            }
            std::memcpy(y + e * 2, &fbits, 2);
          }
        }
      }
      return l;
    };
    jobs.push_back(HostKernel{"long_" + c.name, std::move(m), std::move(k), type == "s32" || type == "bf16", reference});
  }
  EXPECT_EQ(RunOnHost(cxx, jobs), 0);
}

// The loop kernels (and sorts, one thread per block) of the tests/data modules (fused with the
// CPU policy, each extracted into a module of its own; KILN_CODEGEN_HOST_CORPUS=N runs every N-th distinct kernel, default 3).
TEST(KernelHostTest, TestDataLoopKernelsMatchTheEvaluator) {
  const std::string cxx = HostCompiler();
  if (!HaveCompiler(cxx)) GTEST_SKIP() << "no host compiler " << cxx;
  const char* src = std::getenv("KILN_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "KILN_SOURCE_DIR is not set";
  int stride = 3;  // all ~2,300 take about two minutes on a loaded 2-core machine
  if (const char* env = std::getenv("KILN_CODEGEN_HOST_CORPUS")) stride = std::atoi(env);
  if (stride <= 0) GTEST_SKIP() << "KILN_CODEGEN_HOST_CORPUS=0";
  KILN_ASSERT_OK_AND_ASSIGN(DeviceSpec device, DeviceSpec::FromPreset("sm_90"));
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(src) / "tests" / "data"))
    if (e.is_regular_file() && e.path().filename() == "module.hlo") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<HostKernel> jobs;
  std::set<std::string> sources;
  int64_t seen = 0;
  for (const fs::path& p : paths) {
    ParseOptions po;
    po.fill_elided_constants = true;
    StatusOr<std::unique_ptr<HloModule>> m = ParseHloModuleFile(p.string(), po);
    if (!m.ok() || !testing::FuseModule(**m).ok()) continue;
    for (const HloInstruction* i : testing::KernelInstructions(**m)) {
      // Sorts (every one the sort emitter takes, single-key ones included) run with one thread
      // per block: host-runnable.
      const KernelConfig config = i->opcode() == HloOpcode::kSort ? KernelConfig{1, 1, 1, 0, 0, 0} : KernelConfig{};
      StatusOr<KernelSpec> k = EmitKernel(*i, device, config);
      if (!k.ok() || !HostRunnable(*k) || !sources.insert(k->source).second) continue;
      if (i->opcode() != HloOpcode::kSort && seen++ % stride != 0) continue;  // every sort runs
      StatusOr<std::unique_ptr<HloModule>> one = testing::ExtractKernelModule(**m, *i);
      if (!one.ok()) continue;
      StatusOr<KernelSpec> again = EmitKernel(*(*one)->entry_computation()->root_instruction(), device, config);
      if (!again.ok()) continue;
      jobs.push_back(HostKernel{p.parent_path().filename().string() + "." + i->name(), std::move(one).value(),
                                std::move(again).value(), false, {}});
    }
  }
  std::cout << "running " << jobs.size() << " of " << sources.size() << " distinct loop kernels" << std::endl;
  ASSERT_GT(jobs.size(), 20u);
  EXPECT_EQ(RunOnHost(cxx, jobs), 0);
}

}  // namespace
}  // namespace kiln::codegen
