// eigen_gemm: Eigen's best time for one f32 GEMM C[M,N] = A[M,K] B[K,N] (row-major), the
// yardstick for kiln's GEMM-bound workloads (bench/cpu/run_suite.py runs it beside them).
//
//   eigen_gemm M N K [--threads T] [--iterations R]
//
// Times, as the median of R runs after 3 warm-ups: Eigen's tensor contraction on its own
// Eigen::ThreadPool of T threads (default: every core; what XLA's CPU runtime historically
// used), the same contraction single-threaded, and Eigen's dense matrix product (single
// thread: Eigen parallelizes matrix products only with OpenMP, which kiln does not use).
// Prints one JSON object: {"m":..,"n":..,"k":..,"threads":..,"pool_ms":..,"single_ms":..,
// "matrix_ms":..,"best_ms":..}.
#define EIGEN_USE_THREADS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <Eigen/Dense>
#include <unsupported/Eigen/CXX11/Tensor>

namespace {

template <class F>
double MedianMs(int iterations, F&& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: eigen_gemm M N K [--threads T] [--iterations R]\n");
    return 2;
  }
  const long m = std::atol(argv[1]), n = std::atol(argv[2]), k = std::atol(argv[3]);
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int iterations = 20;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
  }
  if (m <= 0 || n <= 0 || k <= 0 || threads <= 0 || iterations <= 0) {
    std::fprintf(stderr, "eigen_gemm: sizes, threads and iterations must be positive\n");
    return 2;
  }
  using T2 = Eigen::Tensor<float, 2, Eigen::RowMajor, Eigen::Index>;
  T2 a(m, k), b(k, n), c(m, n);
  a.setRandom();
  b.setRandom();
  const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> dims{{Eigen::IndexPair<Eigen::Index>(1, 0)}};
  Eigen::ThreadPool pool(threads);
  Eigen::ThreadPoolDevice device(&pool, threads);
  const double pool_ms = MedianMs(iterations, [&] { c.device(device) = a.contract(b, dims); });
  const double single_ms = MedianMs(iterations, [&] { c = a.contract(b, dims); });
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  M am = M::Random(m, k), bm = M::Random(k, n), cm(m, n);
  const double matrix_ms = MedianMs(iterations, [&] { cm.noalias() = am * bm; });
  const double best = std::min({pool_ms, single_ms, matrix_ms});
  std::printf("{\"m\": %ld, \"n\": %ld, \"k\": %ld, \"threads\": %d, \"pool_ms\": %.4f, \"single_ms\": %.4f, "
              "\"matrix_ms\": %.4f, \"best_ms\": %.4f}\n",
              m, n, k, threads, pool_ms, single_ms, matrix_ms, best);
  return 0;
}
