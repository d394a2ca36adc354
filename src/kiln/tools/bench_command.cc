// kiln bench MODULE.hlo: compile once, prepare the inputs once, run --warmup times untimed and
// --iterations times timed; prints the median, min and max wall time of one execution.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "kiln/base/strings.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/tool_common.h"

namespace kiln {

namespace {

struct BenchFlags {
  std::string module;
  std::string device;
  std::string inputs;
  uint64_t seed = 42;
  int warmup = 3;
  int iterations = 20;
  int threads = 0;
  bool profile = false;
  std::string trace;
  bool cast = false;
  bool fill_elided_constants = false;
  bool no_verify = false;
  bool json = false;
  AutotuneFlags autotune;
};

std::string JsonString(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// CPU time of the whole process (every thread), in ms.
double ProcessCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Sorts `v` (non-empty) and returns its median.
double Median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int Bench(const BenchFlags& f, BackendRegistry& registry) {
  if (f.iterations < 1 || f.warmup < 0) {
    PrintError("--iterations must be at least 1 and --warmup at least 0");
    return kExitUsage;
  }
  DeviceSelection device;
  if (f.device.empty()) {
    device.backend = registry.Best();
  } else {
    auto sel = SelectDevice(registry, f.device);
    if (!sel.ok()) {
      PrintError(sel.status().message());
      return kExitUsage;
    }
    device = *sel;
  }
  LoadOptions lo;
  lo.fill_elided_constants = f.fill_elided_constants;
  lo.seed = f.seed;
  lo.verify = !f.no_verify;
  auto module = LoadModule(f.module, lo);
  if (!module.ok()) {
    PrintLoadError(f.module, module.status().message());
    return kExitUsage;
  }
  InputOptions io;
  io.npz_path = f.inputs;
  io.seed = f.seed;
  io.allow_cast = f.cast;
  std::vector<std::string> notes;
  auto args = MakeInputs(**module, io, &notes);
  if (!args.ok()) {
    PrintError(args.status().message());
    return kExitUsage;
  }
  BackendRunOptions ro;
  ro.device_ordinal = device.ordinal;
  ro.seed = f.seed;
  ro.threads = f.threads;
  ro.profile = f.profile;
  ro.trace_path = f.trace;
  ro.autotune = &f.autotune;
  auto t0 = std::chrono::steady_clock::now();
  auto prepared = device.backend->Prepare(**module, *args, ro);
  double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!prepared.ok()) {
    PrintError(StrCat(device.backend->name(), ": ", prepared.status().message()));
    return kExitFailure;
  }
  for (int i = 0; i < f.warmup; ++i) {
    Status s = (*prepared)->Execute();
    if (!s.ok()) {
      PrintError(StrCat(device.backend->name(), ": ", s.message()));
      return kExitFailure;
    }
  }
  std::vector<double> ms, cpu_ms;
  for (int i = 0; i < f.iterations; ++i) {
    const double cpu_start = ProcessCpuMs();
    auto start = std::chrono::steady_clock::now();
    Status s = (*prepared)->Execute();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    cpu_ms.push_back(ProcessCpuMs() - cpu_start);
    if (!s.ok()) {
      PrintError(StrCat(device.backend->name(), ": ", s.message()));
      return kExitFailure;
    }
  }
  const double median = Median(ms);
  const double cpu_median = Median(cpu_ms);
  if (f.json) {
    // One JSON object on stdout (bench/cpu/run_suite.py reads it).
    std::cout << "{\"module\": " << JsonString((*module)->name()) << ", \"device\": "
              << JsonString(StrCat(device.backend->name(), ":", device.ordinal))
              << ", \"prepare_ms\": " << RoundTripDouble(prepare_ms) << ", \"median_ms\": " << RoundTripDouble(median)
              << ", \"cpu_median_ms\": " << RoundTripDouble(cpu_median) << ", \"min_ms\": " << RoundTripDouble(ms.front()) << ", \"max_ms\": " << RoundTripDouble(ms.back())
              << ", \"iterations\": " << f.iterations << ", \"warmup\": " << f.warmup << ", \"metrics\": {";
    bool first = true;
    for (const auto& [k, v] : (*prepared)->Metrics()) {
      std::cout << (first ? "" : ", ") << JsonString(k) << ": " << RoundTripDouble(v);
      first = false;
    }
    std::cout << "}}\n";
    return kExitOk;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "median %.4f ms  min %.4f ms  max %.4f ms  (%d iterations, %d warmup); process CPU time %.4f ms/run\n",
                median, ms.front(), ms.back(), f.iterations, f.warmup, cpu_median);
  std::cout << "bench " << (*module)->name() << " on " << device.backend->name() << ":" << device.ordinal
            << " (compile + prepare " << RoundTripDouble(std::round(prepare_ms * 1000) / 1000) << " ms)\n";
  for (const std::string& n : notes) std::cout << "  " << n << "\n";
  std::cout << buf << (*prepared)->Report();
  return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App& app, BackendRegistry& registry, int* exit_code) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand("bench", "Time the execution of a module (compiled and prepared once)");
  cmd->add_option("module", flags->module, "HLO text file")->required();
  cmd->add_option("--device", flags->device, "where to run (default: the best available)");
  cmd->add_option("--inputs", flags->inputs, ".npz with in0, in1, ... (default: random from --seed)");
  cmd->add_option("--seed", flags->seed, "seed of random inputs")->capture_default_str();
  cmd->add_option("--warmup", flags->warmup, "untimed runs first")->capture_default_str();
  cmd->add_option("--iterations", flags->iterations, "timed runs")->capture_default_str();
  cmd->add_option("--threads", flags->threads, "host threads for the cpu backend (default: all cores)");
  cmd->add_flag("--profile", flags->profile, "print the time spent in each kernel / thunk");
  cmd->add_option("--trace", flags->trace,
                  "with --profile: write a Chrome/Perfetto trace of the last run (cuda)");
  cmd->add_flag("--cast", flags->cast, "convert inputs that do not fit the parameter type exactly");
  cmd->add_flag("--fill-elided-constants", flags->fill_elided_constants,
                "fill constants printed as {...} with random values");
  cmd->add_flag("--no-verify", flags->no_verify, "skip the HLO verifier");
  AddAutotuneFlags(cmd, &flags->autotune);
  cmd->add_flag("--json", flags->json, "print one JSON object (times in ms, backend metrics)");
  cmd->footer(
      "Examples:\n"
      "  kiln bench model.hlo --device cpu --iterations 50\n"
      "  kiln bench model.hlo --device cpu --threads 1 --profile\n");
  cmd->callback([flags, &registry, exit_code] { *exit_code = Bench(*flags, registry); });
}

}  // namespace kiln
