// kiln_collectives_bench: kiln's collective thunks (NCCL underneath) on one-collective modules,
// timed as nccl_direct_bench times NCCL's own calls: wall time of one synchronous call (launch
// and wait for the device), median of the iterations, per op and message size.
//
//   kiln_collectives_bench [--participants N] [--min BYTES] [--max BYTES] [--iterations I]
//                          [--warmup W] [--ops all_reduce,all_gather,reduce_scatter,all_to_all]
//
// One line per (op, size), tab-separated: system op participants bytes time_us algbw_GBps
// busbw_GBps, with nccl-tests' definitions (bench/gpu/collectives/README.md): bytes is the
// all-reduce / all-to-all buffer, all-gather's output, reduce-scatter's input; algbw = bytes /
// time; busbw = algbw * 2(n-1)/n (all-reduce), * (n-1)/n (the others).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kiln/api/client.h"
#include "kiln/api/environment.h"
#include "kiln/base/strings.h"

namespace {

struct Args {
  int64_t participants = 1;
  int64_t min_bytes = 8, max_bytes = int64_t{1} << 30;
  int iterations = 20, warmup = 5;
  std::string ops = "all_reduce,all_gather,reduce_scatter,all_to_all";
};

std::string ModuleText(const std::string& op, int64_t n, int64_t elements) {
  const std::string header = kiln::StrCat("HloModule bench_", op, ", replica_count=", n, "\n\n");
  const std::string add = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n";
  const int64_t part = elements / n;
  if (op == "all_reduce")
    return kiln::StrCat(header, add, "ENTRY e {\n  p = f32[", elements, "] parameter(0)\n  ROOT r = f32[", elements,
                        "] all-reduce(p), replica_groups={}, to_apply=add\n}\n");
  if (op == "all_gather")
    return kiln::StrCat(header, "ENTRY e {\n  p = f32[", part, "] parameter(0)\n  ROOT r = f32[", elements,
                        "] all-gather(p), replica_groups={}, dimensions={0}\n}\n");
  if (op == "reduce_scatter")
    return kiln::StrCat(header, add, "ENTRY e {\n  p = f32[", elements, "] parameter(0)\n  ROOT r = f32[", part,
                        "] reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=add\n}\n");
  return kiln::StrCat(header, "ENTRY e {\n  p = f32[", elements, "] parameter(0)\n  ROOT r = f32[", elements,
                      "] all-to-all(p), replica_groups={}, dimensions={0}\n}\n");
}

double BusFactor(const std::string& op, int64_t n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  return static_cast<double>(n - 1) / n;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--participants") a.participants = std::atoll(v.c_str());
    else if (k == "--min") a.min_bytes = std::atoll(v.c_str());
    else if (k == "--max") a.max_bytes = std::atoll(v.c_str());
    else if (k == "--iterations") a.iterations = std::atoi(v.c_str());
    else if (k == "--warmup") a.warmup = std::atoi(v.c_str());
    else if (k == "--ops") a.ops = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  kiln::ApplyEnvironmentToProcess();
  auto client = kiln::Client::Create(kiln::ClientOptionsFromEnvironment());
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  const int64_t n = a.participants;
  std::vector<std::string> ops;
  for (std::string_view o : kiln::StrSplit(a.ops, ',')) ops.emplace_back(o);
  std::vector<uint8_t> zeros(static_cast<size_t>(a.max_bytes), 0);
  std::printf("system\top\tparticipants\tbytes\ttime_us\talgbw_GBps\tbusbw_GBps\n");
  for (const std::string& op : ops) {
    for (int64_t bytes = a.min_bytes; bytes <= a.max_bytes; bytes *= 2) {
      const int64_t elements = std::max<int64_t>(bytes / 4, n);
      if (elements % n != 0) continue;
      kiln::CompileOptions co;
      co.autotune.level = "off";
      auto exe = (*client)->CompileText(ModuleText(op, n, elements), "cuda:0", co);
      if (!exe.ok()) {
        std::fprintf(stderr, "%s %lld: %s\n", op.c_str(), static_cast<long long>(bytes), exe.status().ToString().c_str());
        return 1;
      }
      // Every participant's argument (on cuda:0; a participant on another GPU gets a copy there
      // once per run -- for N > 1 the bench places them on their own devices instead).
      std::vector<std::vector<std::unique_ptr<kiln::Buffer>>> owned(n);
      std::vector<std::vector<kiln::Buffer*>> args(n);
      const kiln::Shape& shape = (*exe)->argument_shapes()[0];
      const uint64_t arg_bytes = static_cast<uint64_t>(shape.num_elements()) * 4;
      for (int64_t i = 0; i < n; ++i) {
        auto b = (*client)->BufferFromHost(zeros.data(), arg_bytes, shape, kiln::StrCat("cuda:", i));
        if (!b.ok()) {
          std::fprintf(stderr, "%s\n", b.status().ToString().c_str());
          return 1;
        }
        args[i].push_back(b->get());
        owned[i].push_back(std::move(*b));
      }
      kiln::ExecuteOptions eo;
      eo.discard_results = true;
      std::vector<double> us;
      for (int it = 0; it < a.warmup + a.iterations; ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        kiln::Status s = n == 1 ? (*exe)->Execute(args[0], eo).status() : (*exe)->ExecuteParticipants(args, eo).status();
        const auto t1 = std::chrono::steady_clock::now();
        if (!s.ok()) {
          std::fprintf(stderr, "%s %lld: %s\n", op.c_str(), static_cast<long long>(bytes), s.ToString().c_str());
          return 1;
        }
        if (it >= a.warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
      std::sort(us.begin(), us.end());
      const double t = us[us.size() / 2];
      const double size = static_cast<double>(elements) * 4;
      const double algbw = size / (t * 1e-6) / 1e9;
      std::printf("kiln\t%s\t%lld\t%.0f\t%.2f\t%.2f\t%.2f\n", op.c_str(), static_cast<long long>(n), size, t, algbw,
                  algbw * BusFactor(op, n));
      std::fflush(stdout);
    }
  }
  return 0;
}
