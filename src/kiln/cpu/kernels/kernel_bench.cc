// A small local benchmark of the CPU kernels (not a test; built only on request:
// `ninja -C build cpu_kernels_bench`): times kernels on one HLO instruction each, and GEMMs
// against Eigen's contraction on Eigen's own thread pool, the yardstick of issue 3.
//
//   cpu_kernels_bench [--threads N] [--reps R] [filter]
//
// Prints the best time of R runs (after one warm-up) and GFLOP/s where it applies.
#define EIGEN_USE_THREADS
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <unsupported/Eigen/CXX11/Tensor>

#include "kiln/base/strings.h"
#include "kiln/base/thread_pool.h"
#include "kiln/cpu/kernel.h"
#include "kiln/cpu/kernels/gemm.h"
#include "kiln/hlo/module.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/random_literal.h"

namespace kiln::cpu {
namespace {

struct Options {
  int threads = 0;
  int reps = 5;
  std::string filter;
};

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Best wall time of `reps` runs; *cpu receives the best process CPU time (robust on a shared
// machine: time spent waiting for a core does not count).
template <class F>
double BestSeconds(int reps, F&& f, double* cpu = nullptr) {
  f();
  double best = 1e30, best_cpu = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double c0 = ProcessCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    best_cpu = std::min(best_cpu, ProcessCpuSeconds() - c0);
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  if (cpu) *cpu = best_cpu;
  return best;
}

void Report(const std::string& name, double seconds, double flops, double cpu = 0) {
  std::printf("%-58s %10.3f ms", name.c_str(), seconds * 1e3);
  if (flops > 0) std::printf(" %8.1f GFLOP/s", flops / seconds * 1e-9);
  if (cpu > 0) std::printf("   cpu %10.3f ms", cpu * 1e3);
  std::printf("\n");
  std::fflush(stdout);
}

// Times the kernel of the root of `hlo` on random operands.
void BenchHlo(const Options& o, ThreadPool& pool, const std::string& name, const std::string& hlo,
              double flops) {
  if (!o.filter.empty() && name.find(o.filter) == std::string::npos) return;
  StatusOr<std::unique_ptr<HloModule>> m = ParseHloModule(hlo);
  if (!m.ok()) {
    std::printf("%s: %s\n", name.c_str(), m.status().ToString().c_str());
    return;
  }
  const HloInstruction& instr = *(*m)->entry_computation()->root_instruction();
  StatusOr<std::unique_ptr<CpuKernel>> k = CreateCpuKernel(instr);
  if (!k.ok()) {
    std::printf("%s: %s\n", name.c_str(), k.status().ToString().c_str());
    return;
  }
  std::vector<Literal> ops;
  std::vector<ArrayView> in;
  for (int64_t i = 0; i < instr.operand_count(); ++i)
    ops.push_back(MakeRandomLiteral(instr.operand(i)->shape(), 1, i));
  for (Literal& l : ops) in.push_back({l.untyped_data(), l.shape()});
  std::vector<Literal> outs;
  std::vector<ArrayView> out;
  if (instr.shape().IsTuple()) {
    for (const Shape& s : instr.shape().tuple_shapes()) outs.emplace_back(s);
  } else {
    outs.emplace_back(instr.shape());
  }
  for (Literal& l : outs) out.push_back({l.untyped_data(), l.shape()});
  KernelContext ctx;
  ctx.pool = &pool;
  Status st = OkStatus();
  double cpu = 0;
  const double s = BestSeconds(o.reps, [&] { st = (*k)->Run(in, out, ctx); }, &cpu);
  if (!st.ok()) std::printf("%s: %s\n", name.c_str(), st.ToString().c_str());
  Report(StrCat(name, "  ", (*k)->name().substr(0, 24)), s, flops, cpu);
}

// Eigen's contraction on Eigen's own pool: C[M,N] = A[M,K] B[K,N].
void BenchEigenGemm(const Options& o, int64_t m, int64_t n, int64_t k) {
  const std::string name = StrCat("eigen-pool gemm f32 ", m, "x", n, "x", k);
  if (!o.filter.empty() && name.find(o.filter) == std::string::npos) return;
  using T2 = Eigen::Tensor<float, 2, Eigen::RowMajor, Eigen::Index>;
  T2 a(m, k), b(k, n), c(m, n);
  a.setRandom();
  b.setRandom();
  Eigen::ThreadPool tp(o.threads);
  Eigen::ThreadPoolDevice dev(&tp, o.threads);
  const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{{Eigen::IndexPair<Eigen::Index>(1, 0)}};
  const double s = BestSeconds(o.reps, [&] { c.device(dev) = a.contract(b, dims); });
  Report(name, s, 2.0 * m * n * k);
}

// kiln's parallel GEMM driver (gemm.h) against Eigen's contraction on the same pool (kiln's
// Eigen path), C[M,N] = op(A) op(B), on one shape: "pair gemm MxNxK [A^T] [B^T]".
void BenchPair(const Options& o, ThreadPool& pool, int64_t m, int64_t n, int64_t k, bool ta,
               bool tb) {
  const std::string name =
      StrCat("pair gemm ", m, "x", n, "x", k, ta ? " A^T" : "", tb ? " B^T" : "");
  if (!o.filter.empty() && name.find(o.filter) == std::string::npos) return;
  using T2 = Eigen::Tensor<float, 2, Eigen::RowMajor, Eigen::Index>;
  T2 a(ta ? k : m, ta ? m : k), b(tb ? n : k, tb ? k : n), c(m, n);
  a.setRandom();
  b.setRandom();
  const double flops = 2.0 * m * n * k;
  KernelContext ctx;
  ctx.pool = &pool;
  const internal::GemmShape s{m, n, k, ta, tb, false};
  double dcpu = 0, ecpu = 0;
  const double d = BestSeconds(
      o.reps, [&] { internal::ParallelGemmF32(s, a.data(), b.data(), c.data(), ctx, true); },
      &dcpu);
  Report(StrCat(name, "  driver"), d, flops, dcpu);
  Eigen::ThreadPoolDevice dev(pool.eigen_pool(), pool.num_threads());
  const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{
      {Eigen::IndexPair<Eigen::Index>(ta ? 0 : 1, tb ? 1 : 0)}};
  const double e = BestSeconds(o.reps, [&] { c.device(dev) = a.contract(b, dims); }, &ecpu);
  Report(StrCat(name, "  eigen"), e, flops, ecpu);
}

std::string Dot(const std::string& t, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                const std::string& out = "") {
  const std::string a = ta ? StrCat(t, "[", k, ",", m, "]") : StrCat(t, "[", m, ",", k, "]");
  const std::string b = tb ? StrCat(t, "[", n, ",", k, "]") : StrCat(t, "[", k, ",", n, "]");
  return StrCat("ENTRY e {\n a = ", a, " parameter(0)\n b = ", b, " parameter(1)\n ROOT d = ",
                out.empty() ? t : out, "[", m, ",", n, "] dot(a, b), lhs_contracting_dims={",
                ta ? 0 : 1, "}, rhs_contracting_dims={", tb ? 1 : 0, "}\n}\n");
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) o.threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) o.reps = std::atoi(argv[++i]);
    else o.filter = argv[i];
  }
  if (o.threads <= 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(o.threads);
  std::printf("threads %d, best of %d\n", o.threads, o.reps);
  // The products of bench/cpu's models (16-core profile of b26f825), driver vs Eigen.
  for (auto [m, n, k, ta, tb] :
       {std::array<int64_t, 5>{256, 256, 1024, 0, 0}, {256, 256, 1024, 1, 0},
        {256, 256, 1024, 0, 1}, {256, 1024, 256, 0, 0}, {256, 1024, 256, 0, 1},
        {1024, 256, 256, 1, 0}, {256, 2048, 512, 0, 0}, {256, 512, 2048, 0, 0},
        {1024, 1024, 1024, 0, 0}, {1024, 1024, 1024, 1, 1}, {300, 500, 700, 0, 0},
        {256, 768, 256, 0, 0}, {256, 256, 256, 0, 0}, {128, 64, 128, 0, 0},
        {128, 128, 64, 0, 1}, {64, 64, 512, 0, 0}, {4096, 4096, 1024, 0, 0},
        {300, 512, 704, 0, 0}, {300, 500, 704, 0, 0}, {300, 512, 700, 0, 0}})
    BenchPair(o, pool, m, n, k, ta != 0, tb != 0);
  for (int64_t s : {256, 1024}) {
    const double f = 2.0 * s * s * s;
    BenchEigenGemm(o, s, s, s);
    BenchHlo(o, pool, StrCat("gemm f32 ", s), Dot("f32", s, s, s, false, false), f);
    BenchHlo(o, pool, StrCat("gemm f32 ", s, " A^T B^T"), Dot("f32", s, s, s, true, true), f);
    BenchHlo(o, pool, StrCat("gemm bf16 ", s), Dot("bf16", s, s, s, false, false), f);
    BenchHlo(o, pool, StrCat("gemm bf16->f32 ", s), Dot("bf16", s, s, s, false, false, "f32"), f);
    BenchHlo(o, pool, StrCat("gemm f64 ", s), Dot("f64", s, s, s, false, false), f);
    BenchHlo(o, pool, StrCat("gemm s32 ", s), Dot("s32", s, s, s, false, false), f);
  }
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 4096, 1024}, {4096, 1, 1024}, {64, 64, 64},
                         {16, 512, 128}, {128, 128, 64}, {256, 64, 576},
                         {1024, 64, 576}}) {
    BenchHlo(o, pool, StrCat("small gemm f32 ", m, "x", n, "x", k),
             Dot("f32", m, n, k, false, false), 2.0 * m * n * k);
  }
  // lstm_f32's per-step GEMMs (M = 16) and the bf16 -> f32 form.
  for (auto [m, n, k] : {std::array<int64_t, 3>{16, 1024, 256}, {16, 1024, 128}, {16, 4096, 1024},
                         {8, 777, 301}, {32, 1024, 256}, {24, 1000, 512}}) {
    BenchEigenGemm(o, m, n, k);
    BenchHlo(o, pool, StrCat("small-M gemm f32 ", m, "x", n, "x", k),
             Dot("f32", m, n, k, false, false), 2.0 * m * n * k);
    BenchHlo(o, pool, StrCat("small-M gemm f32 B^T ", m, "x", n, "x", k),
             Dot("f32", m, n, k, false, true), 2.0 * m * n * k);
  }
  BenchHlo(o, pool, "small-M gemm bf16->f32 16x1024x256",
           Dot("bf16", 16, 1024, 256, false, false, "f32"), 2.0 * 16 * 1024 * 256);
  // The normalizing loops of bench/cpu's layernorm and softmax (as the CPU pipeline fuses them).
  BenchHlo(o, pool, "fusion layernorm normalize f32[4096,1024]",
           "fused {\n p0 = f32[1024] parameter(0)\n p1 = f32[1024] parameter(1)\n"
           " p2 = f32[4096,1024] parameter(2)\n p3 = f32[4096,1] parameter(3)\n"
           " p4 = f32[4096] parameter(4)\n c = f32[] constant(0.0009765625)\n"
           " cb = f32[4096,1] broadcast(c), dimensions={}\n r4 = f32[4096,1] reshape(p4)\n"
           " mean = f32[4096,1] multiply(r4, cb)\n m1 = f32[4096] reshape(mean)\n"
           " r3 = f32[4096] reshape(p3)\n mb = f32[4096,1024] broadcast(m1), dimensions={0}\n"
           " sb = f32[4096,1024] broadcast(r3), dimensions={0}\n d = f32[4096,1024] subtract(p2, mb)\n"
           " gb = f32[4096,1024] broadcast(p1), dimensions={1}\n n = f32[4096,1024] multiply(d, sb)\n"
           " bb = f32[4096,1024] broadcast(p0), dimensions={1}\n g = f32[4096,1024] multiply(n, gb)\n"
           " ROOT o = f32[4096,1024] add(g, bb)\n}\n"
           "ENTRY e {\n p0 = f32[1024] parameter(0)\n p1 = f32[1024] parameter(1)\n"
           " p2 = f32[4096,1024] parameter(2)\n p3 = f32[4096,1] parameter(3)\n"
           " p4 = f32[4096] parameter(4)\n ROOT f = f32[4096,1024] fusion(p0, p1, p2, p3, p4),"
           " kind=kLoop, calls=fused\n}\n",
           0);
  BenchHlo(o, pool, "fusion softmax exp+sum f32[2048,2048]",
           "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }\n"
           "fused {\n m = f32[2048] parameter(0)\n x = f32[2048,2048] parameter(1)\n"
           " mb = f32[2048,2048] broadcast(m), dimensions={0}\n d = f32[2048,2048] subtract(x, mb)\n"
           " e = f32[2048,2048] exponential(d)\n z = f32[] constant(0)\n"
           " s = f32[2048] reduce(e, z), dimensions={1}, to_apply=add\n"
           " ROOT t = (f32[2048,2048], f32[2048]) tuple(e, s)\n}\n"
           "ENTRY e {\n m = f32[2048] parameter(0)\n x = f32[2048,2048] parameter(1)\n"
           " ROOT f = (f32[2048,2048], f32[2048]) fusion(m, x), kind=kInput, calls=fused\n}\n",
           0);
  BenchHlo(o, pool, "fusion softmax scale f32[2048,2048]",
           "fused {\n x = f32[2048,2048] parameter(0)\n r = f32[2048] parameter(1)\n"
           " rb = f32[2048,2048] broadcast(r), dimensions={0}\n"
           " ROOT o = f32[2048,2048] multiply(x, rb)\n}\n"
           "ENTRY e {\n x = f32[2048,2048] parameter(0)\n r = f32[2048] parameter(1)\n"
           " ROOT f = f32[2048,2048] fusion(x, r), kind=kLoop, calls=fused\n}\n",
           0);
  BenchEigenGemm(o, 256, 4096, 1024);
  BenchHlo(o, pool, "gemm f32 256x4096x1024 (mlp)", Dot("f32", 256, 4096, 1024, false, false),
           2.0 * 256 * 4096 * 1024);
  BenchHlo(o, pool, "batched attention f32 [8,128,128]x[8,128,64]",
           "ENTRY e {\n a = f32[8,128,128] parameter(0)\n b = f32[8,128,64] parameter(1)\n"
           " ROOT d = f32[8,128,64] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},"
           " rhs_batch_dims={0}, rhs_contracting_dims={1}\n}\n",
           2.0 * 8 * 128 * 128 * 64);
  BenchHlo(o, pool, "batched attention f32 [8,128,64]x[8,64,128]",
           "ENTRY e {\n a = f32[8,128,64] parameter(0)\n b = f32[8,64,128] parameter(1)\n"
           " ROOT d = f32[8,128,128] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},"
           " rhs_batch_dims={0}, rhs_contracting_dims={1}\n}\n",
           2.0 * 8 * 128 * 128 * 64);
  BenchHlo(o, pool, "batched attention f32 [8,16,128,64]x[..,128,64]^T",
           "ENTRY e {\n a = f32[8,16,128,64] parameter(0)\n b = f32[8,16,128,64] parameter(1)\n"
           " ROOT d = f32[8,16,128,128] dot(a, b), lhs_batch_dims={0,1}, lhs_contracting_dims={3},"
           " rhs_batch_dims={0,1}, rhs_contracting_dims={3}\n}\n",
           2.0 * 8 * 16 * 128 * 128 * 64);
  auto conv = [&](const std::string& name, const std::string& t, int64_t n, int64_t hw, int64_t c,
                  int64_t oc) {
    BenchHlo(o, pool, name,
             StrCat("ENTRY e {\n x = ", t, "[", n, ",", hw, ",", hw, ",", c, "] parameter(0)\n",
                    " k = ", t, "[3,3,", c, ",", oc, "] parameter(1)\n ROOT c = ", t, "[", n, ",",
                    hw, ",", hw, ",", oc,
                    "] convolution(x, k), window={size=3x3 pad=1_1x1_1},"
                    " dim_labels=b01f_01io->b01f\n}\n"),
             2.0 * n * hw * hw * oc * 9 * c);
  };
  conv("conv3x3 f32 N8 56x56 C64", "f32", 8, 56, 64, 64);
  conv("conv3x3 bf16 N8 56x56 C64", "bf16", 8, 56, 64, 64);
  BenchHlo(o, pool, "conv backward-filter f32 N8 56x56 C64",
           "ENTRY e {\n x = f32[8,56,56,64] parameter(0)\n g = f32[8,56,56,64] parameter(1)\n"
           " ROOT c = f32[3,3,64,64] convolution(x, g), window={size=56x56 pad=1_1x1_1},"
           " dim_labels=f01b_i01o->01bf\n}\n",
           2.0 * 8 * 56 * 56 * 64 * 9 * 64);
  BenchHlo(o, pool, "depthwise 3x3 f32 N8 56x56 C64",
           "ENTRY e {\n x = f32[8,56,56,64] parameter(0)\n k = f32[3,3,1,64] parameter(1)\n"
           " ROOT c = f32[8,56,56,64] convolution(x, k), window={size=3x3 pad=1_1x1_1},"
           " dim_labels=b01f_01io->b01f, feature_group_count=64\n}\n",
           2.0 * 8 * 56 * 56 * 64 * 9);
  BenchHlo(o, pool, "gather rows f32 [50000,256] x 16384",
           "ENTRY e {\n x = f32[50000,256] parameter(0)\n i = s32[16384,1] parameter(1)\n"
           " ROOT g = f32[16384,256] gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
           " start_index_map={0}, index_vector_dim=1, slice_sizes={1,256}\n}\n",
           0);
  BenchHlo(o, pool, "scatter-add rows f32 [50000,256] x 16384",
           "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT r = f32[] add(a, b) }\n"
           "ENTRY e {\n x = f32[50000,256] parameter(0)\n i = s32[16384,1] parameter(1)\n"
           " u = f32[16384,256] parameter(2)\n"
           " ROOT s = f32[50000,256] scatter(x, i, u), update_window_dims={1},"
           " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
           " to_apply=add\n}\n",
           0);
  BenchHlo(o, pool, "sort f32 [64,16384] total order",
           "lt { a = f32[] parameter(0)  b = f32[] parameter(1)\n"
           " ROOT r = pred[] compare(a, b), direction=LT, type=TOTALORDER }\n"
           "ENTRY e {\n x = f32[64,16384] parameter(0)\n"
           " ROOT s = f32[64,16384] sort(x), dimensions={1}, to_apply=lt\n}\n",
           0);
  BenchHlo(o, pool, "topk f32 [256,32000] k=40",
           "ENTRY e {\n x = f32[256,32000] parameter(0)\n"
           " ROOT t = (f32[256,40], s32[256,40]) topk(x), k=40, largest=true\n}\n",
           0);
  BenchHlo(o, pool, "rng-bit-generator philox u32[16M]",
           "ENTRY e {\n s = u64[2] parameter(0)\n"
           " ROOT r = (u64[2], u32[16777216]) rng-bit-generator(s), algorithm=rng_philox\n}\n",
           0);
  return 0;
}

}  // namespace
}  // namespace kiln::cpu

int main(int argc, char** argv) { return kiln::cpu::Main(argc, argv); }
