// kiln bench MODULE.hlo: compile once, prepare the inputs once, run --warmup times untimed and
// --iterations times timed; prints the median, min and max wall time of one execution.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

#include "kiln/base/strings.h"
#include "kiln/hlo/computation.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/commands.h"
#include "kiln/tools/participants.h"
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
  bool profile = false;
  std::string trace;
  bool cast = false;
  bool fill_elided_constants = false;
  bool json = false;
  CompileFlags compile;
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

// The executable and its argument buffers, made once. A donated argument is consumed by each
// run: the result that took its memory over (input_output_alias) becomes the next run's
// argument, as in a training loop; a donated argument no result replaces is made again from
// the host inputs before the next run (outside the timed region).
class Prepared {
 public:
  // On an error, *exit_code (when given) is the exit code it calls for (CompileErrorExitCode for
  // a failed Compile, else kExitFailure).
  static StatusOr<Prepared> Create(const Client& client, const HloModule& module, const std::string& device,
                                   const CompileOptions& options, std::vector<Literal> args,
                                   int* exit_code = nullptr) {
    Prepared p;
    auto compiled = client.Compile(module, device, options);
    if (exit_code) *exit_code = compiled.ok() ? kExitFailure : CompileErrorExitCode(compiled.status());
    KILN_ASSIGN_OR_RETURN(p.exe_, std::move(compiled));
    p.host_.reserve(args.size());
    for (Literal& a : args)
      for (Literal& leaf : FlattenLiteral(a)) p.host_.push_back(std::move(leaf));
    for (const Literal& l : p.host_) {
      KILN_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, p.exe_->BufferFromLiteral(l));
      p.args_.push_back(std::move(b));
    }
    // Output leaf -> argument leaf it may feed (input_output_alias of array leaves).
    const HloComputation* entry = module.entry_computation();
    const Shape root = entry->root_instruction()->shape();
    for (const InputOutputAlias& a : module.header().input_output_alias) {
      if (!a.parameter_index.empty() || a.parameter_number >= p.exe_->num_parameters()) continue;
      if (!entry->parameter_instruction(a.parameter_number)->shape().IsArray()) continue;
      int64_t out = -1;
      if (a.output_index.empty() && root.IsArray()) out = 0;
      if (a.output_index.size() == 1 && root.IsTuple()) {
        bool flat = true;
        for (int64_t i = 0; i < root.tuple_shapes_size(); ++i) flat &= root.tuple_shapes(i).IsArray();
        if (flat) out = a.output_index[0];
      }
      if (out >= 0) p.feedback_.emplace_back(out, p.exe_->first_leaf_of_parameter(a.parameter_number));
    }
    for (bool d : p.exe_->donated()) p.donates_ |= d;
    return p;
  }

  Status Run(const ExecuteOptions& options) {
    std::vector<Buffer*> raw;
    for (const auto& b : args_) raw.push_back(b.get());
    ExecuteOptions o = options;
    o.discard_results = !donates_;
    KILN_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Buffer>> results, exe_->Execute(raw, o));
    if (!donates_) return OkStatus();
    for (auto& [out, arg] : feedback_)
      if (args_[arg]->is_deleted() && out < static_cast<int64_t>(results.size()) && results[out])
        args_[arg] = std::move(results[out]);
    return OkStatus();
  }
  // Remakes the donated arguments no result replaced (untimed).
  Status Refill() {
    for (size_t i = 0; i < args_.size(); ++i)
      if (args_[i]->is_deleted()) {
        KILN_ASSIGN_OR_RETURN(args_[i], exe_->BufferFromLiteral(host_[i]));
      }
    return OkStatus();
  }
  Executable& exe() { return *exe_; }

 private:
  std::unique_ptr<Executable> exe_;
  std::vector<Literal> host_;
  std::vector<std::unique_ptr<Buffer>> args_;
  std::vector<std::pair<int64_t, int64_t>> feedback_;
  bool donates_ = false;
};

// Several participants: every timed run is one ExecuteParticipants of all of them (argument
// buffers made once; remade untimed before each run where the module donates them).
int BenchParticipants(const BenchFlags& f, const Client& client, const HloModule& module, const DeviceSelection& device,
                      const CompileOptions& options, int64_t replicas, int64_t partitions) {
  InputOptions io;
  io.npz_path = f.inputs;
  io.seed = f.seed;
  io.allow_cast = f.cast;
  std::vector<std::string> notes;
  auto args = MakeParticipantInputs(module, replicas, partitions, io, &notes);
  if (!args.ok()) {
    PrintError(args.status().message());
    return InputErrorExitCode(args.status());
  }
  const std::string where = Client::DeviceName(device);
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Executable> compiled;
  if (int rc = CompileForParticipants(client, module, device, options, replicas, partitions, &compiled)) return rc;
  std::unique_ptr<Executable>* exe = &compiled;
  bool donates = false;
  for (bool d : (*exe)->donated()) donates |= d;
  std::vector<std::vector<std::unique_ptr<Buffer>>> buffers;
  auto make_buffers = [&]() -> Status {
    buffers.clear();
    for (const std::vector<Literal>& set : *args) {
      buffers.emplace_back();
      for (const Literal& a : set)
        for (Literal& leaf : FlattenLiteral(a)) {
          KILN_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, (*exe)->BufferFromLiteral(leaf));
          buffers.back().push_back(std::move(b));
        }
    }
    return OkStatus();
  };
  auto run = [&]() -> Status {
    std::vector<std::vector<Buffer*>> raw;
    for (auto& set : buffers) {
      raw.emplace_back();
      for (auto& b : set) raw.back().push_back(b.get());
    }
    ExecuteOptions eo;
    eo.seed = f.seed;
    eo.discard_results = true;
    return (*exe)->ExecuteParticipants(raw, eo).status();
  };
  Status s = make_buffers();
  double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> ms;
  for (int i = 0; s.ok() && i < f.warmup + f.iterations; ++i) {
    if (donates && i > 0) s = make_buffers();
    if (!s.ok()) break;
    auto start = std::chrono::steady_clock::now();
    s = run();
    if (i >= f.warmup)
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  if (!s.ok()) {
    PrintError(StrCat(device.backend->name(), ": ", s.message()));
    return kExitFailure;
  }
  const double median = Median(ms);
  if (f.json) {
    std::cout << "{\"module\": " << JsonString(module.name()) << ", \"device\": " << JsonString(where)
              << ", \"participants\": " << replicas * partitions << ", \"prepare_ms\": " << RoundTripDouble(prepare_ms)
              << ", \"median_ms\": " << RoundTripDouble(median) << ", \"min_ms\": " << RoundTripDouble(ms.front())
              << ", \"max_ms\": " << RoundTripDouble(ms.back()) << ", \"iterations\": " << f.iterations
              << ", \"warmup\": " << f.warmup << "}\n";
    return kExitOk;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "median %.4f ms  min %.4f ms  max %.4f ms  (%d iterations, %d warmup)\n", median,
                ms.front(), ms.back(), f.iterations, f.warmup);
  std::cout << "bench " << module.name() << " on " << where << ", " << replicas * partitions << " participants ("
            << replicas << " replicas x " << partitions << " partitions; compile + prepare "
            << RoundTripDouble(std::round(prepare_ms * 1000) / 1000) << " ms)\n";
  for (const std::string& n : notes) std::cout << "  " << n << "\n";
  std::cout << buf;
  return kExitOk;
}

int Bench(const BenchFlags& f, const Client& client) {
  if (f.iterations < 1 || f.warmup < 0) {
    PrintError("--iterations must be at least 1 and --warmup at least 0");
    return kExitUsage;
  }
  auto device = client.SelectDevice(f.device);
  if (!device.ok()) {
    PrintError(device.status().message());
    return kExitUsage;
  }
  LoadOptions lo;
  lo.fill_elided_constants = f.fill_elided_constants;
  lo.seed = f.seed;
  lo.verify = !f.compile.no_verify;
  auto module = LoadModule(f.module, lo);
  if (!module.ok()) {
    PrintLoadError(f.module, module.status().message());
    return kExitUsage;
  }
  CompileOptions compile_options;
  std::pair<int64_t, int64_t> participants;
  if (int rc = CompileOptionsAndGrid(client, f.compile, **module, &compile_options, &participants)) return rc;
  if (participants.first * participants.second > 1)
    return BenchParticipants(f, client, **module, *device, compile_options, participants.first, participants.second);
  std::optional<CompileOptions> options = std::move(compile_options);
  InputOptions io;
  io.npz_path = f.inputs;
  io.seed = f.seed;
  io.allow_cast = f.cast;
  std::vector<std::string> notes;
  auto args = MakeInputs(**module, io, &notes);
  if (!args.ok()) {
    PrintError(args.status().message());
    return InputErrorExitCode(args.status());
  }
  const std::string where = Client::DeviceName(*device);
  auto t0 = std::chrono::steady_clock::now();
  int failure = kExitFailure;
  auto prepared = Prepared::Create(client, **module, where, *options, std::move(*args), &failure);
  double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!prepared.ok()) {
    PrintError(StrCat(device->backend->name(), ": ", prepared.status().message()));
    return failure;
  }
  ExecuteOptions eo;
  eo.seed = f.seed;
  eo.profile = f.profile;
  eo.trace_path = f.trace;
  for (int i = 0; i < f.warmup; ++i) {
    Status s = prepared->Refill();
    if (s.ok()) s = prepared->Run(eo);
    if (!s.ok()) {
      PrintError(StrCat(device->backend->name(), ": ", s.message()));
      return kExitFailure;
    }
  }
  std::vector<double> ms, cpu_ms;
  for (int i = 0; i < f.iterations; ++i) {
    Status s = prepared->Refill();
    const double cpu_start = ProcessCpuMs();
    auto start = std::chrono::steady_clock::now();
    if (s.ok()) s = prepared->Run(eo);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    cpu_ms.push_back(ProcessCpuMs() - cpu_start);
    if (!s.ok()) {
      PrintError(StrCat(device->backend->name(), ": ", s.message()));
      return kExitFailure;
    }
  }
  const double median = Median(ms);
  const double cpu_median = Median(cpu_ms);
  if (f.json) {
    // One JSON object on stdout (bench/cpu/run_suite.py reads it).
    std::cout << "{\"module\": " << JsonString((*module)->name()) << ", \"device\": "
              << JsonString(where)
              << ", \"prepare_ms\": " << RoundTripDouble(prepare_ms) << ", \"median_ms\": " << RoundTripDouble(median)
              << ", \"cpu_median_ms\": " << RoundTripDouble(cpu_median) << ", \"min_ms\": " << RoundTripDouble(ms.front()) << ", \"max_ms\": " << RoundTripDouble(ms.back())
              << ", \"iterations\": " << f.iterations << ", \"warmup\": " << f.warmup << ", \"metrics\": {";
    bool first = true;
    for (const auto& [k, v] : prepared->exe().Metrics()) {
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
  std::cout << "bench " << (*module)->name() << " on " << where
            << " (compile + prepare " << RoundTripDouble(std::round(prepare_ms * 1000) / 1000) << " ms)\n";
  for (const std::string& n : notes) std::cout << "  " << n << "\n";
  std::cout << buf << prepared->exe().RunReport();
  return kExitOk;
}

}  // namespace

StatusOr<double> TimeWholeProgram(const Client& client, const HloModule& module, const std::string& device,
                                  const CompileOptions& options, uint64_t seed, int warmup, int iterations) {
  InputOptions io;
  io.seed = seed;
  KILN_ASSIGN_OR_RETURN(std::vector<Literal> args, MakeInputs(module, io, nullptr));
  KILN_ASSIGN_OR_RETURN(Prepared p, Prepared::Create(client, module, device, options, std::move(args)));
  ExecuteOptions eo;
  eo.seed = seed;
  for (int i = 0; i < warmup; ++i) {
    KILN_RETURN_IF_ERROR(p.Refill());
    KILN_RETURN_IF_ERROR(p.Run(eo));
  }
  std::vector<double> ms;
  for (int i = 0; i < std::max(1, iterations); ++i) {
    KILN_RETURN_IF_ERROR(p.Refill());
    auto start = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(p.Run(eo));
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return Median(ms);
}

void AddBenchCommand(CLI::App& app, const Client& client, int* exit_code) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand("bench", "Time the execution of a module (compiled and prepared once)");
  cmd->add_option("module", flags->module, "HLO text file")->required();
  cmd->add_option("--device", flags->device, "where to run (default: the best available)")
      ->check(DeviceNameValidator());
  cmd->add_option("--inputs", flags->inputs, ".npz with in0, in1, ... (default: random from --seed)");
  cmd->add_option("--seed", flags->seed, "seed of random inputs")->capture_default_str()
      ->check(SeedValidator());
  cmd->add_option("--warmup", flags->warmup, "untimed runs first, 0 to 1000000")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--iterations", flags->iterations, "timed runs, 1 to 1000000")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_flag("--profile", flags->profile, "print the time spent in each kernel / thunk");
  cmd->add_option("--trace", flags->trace,
                  "with --profile: write a Chrome/Perfetto trace of the last run (cuda)");
  cmd->add_flag("--cast", flags->cast, "convert inputs that do not fit the parameter type exactly");
  cmd->add_flag("--fill-elided-constants", flags->fill_elided_constants,
                "fill constants printed as {...} with random values");
  cmd->add_flag("--no-verify", flags->compile.no_verify, "skip the HLO verifier");
  AddCompileFlags(cmd, &flags->compile);
  cmd->add_flag("--json", flags->json, "print one JSON object (times in ms, backend metrics)");
  cmd->footer(
      "Examples:\n"
      "  kiln bench model.hlo --device cpu --iterations 50\n"
      "  kiln bench model.hlo --device cpu --threads 1 --profile\n");
  cmd->callback([flags, &client, exit_code] { *exit_code = Bench(*flags, client); });
}

}  // namespace kiln
