#include "kiln/cpu/cpu_backend.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <thread>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/host_backends.h"
#include "kiln/autotune/settings.h"
#include "kiln/backend/host_backend.h"
#include "kiln/base/strings.h"
#include "kiln/cpu/collective_context.h"
#include "kiln/cpu/executable.h"
#include "kiln/runtime/host/host_platform.h"
#include "kiln/passes/module_clone.h"
#include "kiln/passes/send_recv_ordering.h"
#include "kiln/passes/shard_map_lowering.h"

namespace kiln::cpu {

namespace {

constexpr std::string_view kPlatform = "cpu";

constexpr FlagSpec kFlagSpecs[] = {
    {"cpu_row_tiling", "on|off|force  run chains of row-local fusions tile by tile (force: every chain, small tiles)"},
    {"cpu_row_tile_bytes", "N  working set of one row tile (default 524288)"},
    {"cpu_gemm_kernel", "kiln|eigen  f32 GEMMs on kiln's kernels where they measured faster, or all on Eigen (default kiln)"},
    {"cpu_gemm_pool", "shared|separate  Eigen's contractions on the executable's pool or a second one (default shared)"},
    {"cpu_expr_chains", "on|off  fuse chains of elementwise ops into one block op (default on)"},
    {"cpu_attention", "on|off  f32 attention found in the HLO runs as one fused kernel (default on)"},
    {"cpu_in_place_state", "on|off  loop state computed elementwise from its old value is updated in place (default on)"},
    {"cpu_loop_invariants", "on|off  values a loop body computes from its unchanged state computed once before the loop (default on)"},
    {"cpu_conv", "auto|im2col  f32 convolutions without im2col where that pays, or all im2col + GEMM (default auto)"},
};

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (StartsWith(line, "model name")) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return std::string(StripWhitespace(line.substr(colon + 1)));
    }
  return "host CPU";
}


StatusOr<int64_t> PositiveInt(std::string_view name, std::string_view v) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 1)
    return InvalidArgument(name, ": expected a positive integer, got '", v, "'");
  return n;
}

class CpuBackendExecutable final : public Executable {
 public:
  CpuBackendExecutable(const HloModule& module, std::unique_ptr<CpuExecutable> exe, CompileReport report)
      : Executable(std::string(kPlatform), 0, module, std::move(report)), exe_(std::move(exe)) {}

  StatusOr<std::unique_ptr<Buffer>> BufferFromLiteral(const Literal& literal) override {
    if (!literal.shape().IsArray()) return InvalidArgument("a buffer holds one array, not ", literal.shape().ToString(false));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostBuffer> b, HostBuffer::Copy(literal.untyped_data(), literal.size_bytes(),
                                                                          literal.shape(), std::string(kPlatform), 0));
    return std::unique_ptr<Buffer>(std::move(b));
  }

  std::string RunReport() const override {
    std::string s = StrCat(exe_->memory_stats().ToString(), "\nthreads: ", exe_->num_threads(), "\n");
    if (profiled_) s += exe_->ProfileReport();
    return s;
  }
  std::vector<std::pair<std::string, double>> Metrics() const override {
    std::vector<std::pair<std::string, double>> m = Executable::Metrics();
    m.emplace_back("threads", double(exe_->num_threads()));
    return m;
  }

 protected:
  StatusOr<std::vector<std::unique_ptr<Buffer>>> ExecuteImpl(std::span<Buffer* const> arguments,
                                                              const ExecuteOptions& options) override {
    return RunOne(arguments, options, nullptr);
  }

  // N virtual devices in this process: one thread per participant, each a run of the one
  // compiled program with its own memory, meeting at one in-process communicator.
  StatusOr<std::vector<std::vector<std::unique_ptr<Buffer>>>> ExecuteParticipantsImpl(
      std::span<const std::vector<Buffer*>> arguments, const ExecuteOptions& options) override {
    const int64_t n = static_cast<int64_t>(arguments.size());
    auto rendezvous = std::make_shared<Rendezvous>(
        n, RendezvousOptions{std::chrono::milliseconds(options.collective_timeout_ms)});
    InProcessCommunicator comm(rendezvous);
    std::vector<CollectiveContext> contexts(n);
    std::vector<std::optional<StatusOr<std::vector<std::unique_ptr<Buffer>>>>> results(n);
    auto run_one = [&](int64_t i) {
      CollectiveContext& cc = contexts[i];
      cc.grid = DeviceGrid{replica_count(), num_partitions()};
      cc.device = i;
      cc.rendezvous = rendezvous;
      cc.communicator = &comm;
      auto r = RunOne(arguments[i], options, &cc);
      if (!r.ok())
        rendezvous->Abort(Status(StatusCode::kAborted, StrCat("participant ", i, " failed: ", r.status().message())));
      rendezvous->Finish(i);
      results[i] = std::move(r);
    };
    if (n == 1) {
      run_one(0);
    } else {
      std::vector<std::thread> threads;
      for (int64_t i = 0; i < n; ++i) threads.emplace_back(run_one, i);
      for (auto& t : threads) t.join();
    }
    std::optional<Status> first, first_abort;
    for (int64_t i = 0; i < n; ++i) {
      if (results[i]->ok()) continue;
      const Status& st = results[i]->status();
      Status s(st.code(), StrCat("participant ", i, " (replica ", i / num_partitions(), ", partition ",
                                 i % num_partitions(), "): ", st.message()));
      if (st.code() == StatusCode::kAborted) {
        if (!first_abort) first_abort = s;
      } else if (!first) {
        first = s;
      }
    }
    if (first) return *first;
    if (first_abort) return *first_abort;
    std::vector<std::vector<std::unique_ptr<Buffer>>> out;
    for (auto& r : results) out.push_back(std::move(*r).value());
    return out;
  }


 public:
  void SetParticipants(int64_t replicas, int64_t partitions) { set_participants(replicas, partitions); }

 private:
  StatusOr<std::vector<std::unique_ptr<Buffer>>> RunOne(std::span<Buffer* const> arguments,
                                                        const ExecuteOptions& options,
                                                        const CollectiveContext* collectives) {
    std::vector<void*> raw(arguments.size());
    for (size_t i = 0; i < arguments.size(); ++i) raw[i] = arguments[i]->opaque_pointer();
    CpuRunOptions ro;
    ro.profile = options.profile;
    ro.seed = options.seed;
    ro.collectives = collectives;
    profiled_ |= options.profile;
    KILN_ASSIGN_OR_RETURN(ExecutionOutput run, exe_->ExecuteRowMajor(raw, ro));
    // Results that took over a donated argument keep that argument's memory alive.
    std::vector<std::shared_ptr<void>> donated_memory(arguments.size());
    for (size_t i = 0; i < arguments.size(); ++i) {
      if (!donated()[i]) continue;
      donated_memory[i] = arguments[i]->memory_owner();
      arguments[i]->MarkDonated(StrCat("donated to ", module_name()));
    }
    std::vector<std::unique_ptr<Buffer>> out;
    if (options.discard_results) return out;
    auto shared_run = std::make_shared<ExecutionOutput>(std::move(run));
    const std::vector<ArrayView>& views = shared_run->outputs();
    for (size_t j = 0; j < views.size(); ++j) {
      const Shape& shape = result_shapes()[j];
      const ExecutionOutput::Source source = shared_run->source(j);
      const int64_t arg = shared_run->source_argument(j);
      if (source == ExecutionOutput::Source::kRun) {
        out.push_back(std::make_unique<HostBuffer>(shape, std::string(kPlatform), 0, views[j].data, shared_run));
      } else if (source == ExecutionOutput::Source::kArgument && arg >= 0 && donated_memory[arg]) {
        out.push_back(std::make_unique<HostBuffer>(shape, std::string(kPlatform), 0, views[j].data, donated_memory[arg]));
      } else {
        // A constant or a parameter returned as is: the result gets its own copy.
        KILN_ASSIGN_OR_RETURN(uint64_t bytes, BufferBytes(shape));
        KILN_ASSIGN_OR_RETURN(std::unique_ptr<HostBuffer> b,
                              HostBuffer::Copy(views[j].data, bytes, shape, std::string(kPlatform), 0));
        out.push_back(std::move(b));
      }
    }
    return out;
  }

 private:
  std::unique_ptr<CpuExecutable> exe_;
  bool profiled_ = false;
};

class CpuBackend final : public HostBackend {
 public:
  CpuBackend() : HostBackend(std::string(kPlatform)) {}
  std::string_view description() const override { return "compiled for the host CPU: fused kernels on a thread pool"; }
  StatusOr<std::vector<DeviceInfo>> Devices() const override {
    unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return std::vector<DeviceInfo>{{0, "host", StrCat(CpuModelName(), ", ", cores, " threads")}};
  }
  std::string flag_help() const override { return CpuFlagHelp(); }

  StatusOr<std::unique_ptr<Executable>> Compile(const HloModule& module, const CompileOptions& options) override {
    KILN_RETURN_IF_ERROR(CheckOrdinal(options.device_ordinal));
    if (options.threads < 0 || options.threads > kMaxHostThreads)
      return InvalidArgument("threads ", options.threads, " is out of range: 1 to ", kMaxHostThreads,
                             " (0: one per hardware thread)");
    CpuCompileOptions co;
    co.threads = options.threads;
    co.dump_dir = options.dump_dir;
    co.verify_input = options.verify;
    KILN_RETURN_IF_ERROR(ApplyCpuFlags(options.flags, &co));
    // A shard_map program runs as its per-device program (passes/shard_map_lowering.h).
    std::unique_ptr<HloModule> lowered = CloneModule(module);
    KILN_RETURN_IF_ERROR(LowerShardMap(*lowered).status());
    KILN_RETURN_IF_ERROR(OrderSendsBeforeRecvDones(*lowered).status());
    KILN_ASSIGN_OR_RETURN(auto grid, ParticipantsOf(*lowered, options));
    const auto [replicas, partitions] = grid;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<CpuExecutable> exe, CpuCompiler::Compile(CloneModule(*lowered), co));
    const CpuCompileStats& st = exe->compile_stats();
    CompileReport report;
    report.target = StrCat("host (", exe->num_threads(), " threads)");
    report.compile_seconds = st.compile_seconds;
    report.memory = st.memory;
    report.host_fallbacks.assign(st.evaluator_fallbacks.begin(), st.evaluator_fallbacks.end());
    report.details = st.ToString();
    report.thunk_listing = exe->ThunkListing();
    report.summary = StrCat("compiled ", module.name(), " in ", RoundTripDouble(std::round(st.compile_seconds * 1e5) / 100),
                            " ms: ", st.thunks, " thunks (", st.kernel_thunks, " kernels), ", st.threads, " threads\n",
                            st.memory.ToString(), "\n", HostFallbackLine(report.host_fallbacks));
    if (replicas * partitions > 1)
      report.summary += StrCat("runs over ", replicas, " replicas x ", partitions,
                               " partitions: one thread per virtual device, one in-process communicator\n");
    auto result = std::make_unique<CpuBackendExecutable>(*lowered, std::move(exe), std::move(report));
    result->SetParticipants(replicas, partitions);
    return std::unique_ptr<Executable>(std::move(result));
  }

  // The host autotuner over the module as written (autotune/host_backends.h: a tiled GEMM and
  // the evaluator for dots and convolutions), on the runtime's host platform. The cpu compiler
  // does not read these choices yet; `kiln tune --device cpu` fills the cache and reports them.
  StatusOr<CompileReport> Tune(const HloModule& module, const CompileOptions& options) override {
    KILN_RETURN_IF_ERROR(CheckOrdinal(options.device_ordinal));
    KILN_ASSIGN_OR_RETURN(autotune::AutotuneOptions ao, autotune::MakeAutotuneOptions(options.autotune));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Platform> host, runtime::CreateHostPlatform());
    KILN_ASSIGN_OR_RETURN(runtime::Device * device, host->GetDevice(0));
    autotune::BackendFactoryRegistry factories;
    KILN_RETURN_IF_ERROR(autotune::RegisterHostAutotuneFactory(factories));
    KILN_ASSIGN_OR_RETURN(autotune::BackendFactory factory, factories.Get("host"));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<autotune::Cache> cache, autotune::OpenAutotuneCache(options.autotune));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<autotune::Autotuner> tuner,
                          autotune::Autotuner::Create(factory, device->description(), device, cache.get(), ao));
    std::unique_ptr<HloModule> copy = CloneModule(module);
    KILN_ASSIGN_OR_RETURN(autotune::AutotuneReport report, tuner->Run(*copy));
    KILN_RETURN_IF_ERROR(autotune::WriteAutotuneJson(options.autotune, report));
    CompileReport out;
    out.target = StrCat("host (", device->description().name, ")");
    out.summary = report.SummaryLine() + "\n";
    out.autotune = std::make_shared<autotune::AutotuneReport>(std::move(report));
    if (options.keep_compiled_module_text) out.compiled_module_text = copy->ToString();
    return out;
  }
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(const BackendFlags&) { return std::make_unique<CpuBackend>(); }

Status ApplyCpuFlags(const BackendFlags& flags, CpuCompileOptions* options) {
  KILN_RETURN_IF_ERROR(CheckBackendFlags(flags, "cpu_", kFlagSpecs));
  if (std::string_view v = FlagOr(flags, "cpu_row_tiling", ""); !v.empty()) {
    if (v == "off" || v == "0") {
      options->row_tiling = false;
    } else if (v == "force") {
      options->row_tiling = true;
      options->row_tiling_options.min_chain_bytes = 0;
      options->row_tiling_options.tile_bytes = 1024;
    } else if (v == "on" || v == "1") {
      options->row_tiling = true;
    } else {
      return InvalidArgument("cpu_row_tiling: expected on, off or force, got '", v, "'");
    }
  }
  if (std::string_view v = FlagOr(flags, "cpu_row_tile_bytes", ""); !v.empty()) {
    KILN_ASSIGN_OR_RETURN(options->row_tiling_options.tile_bytes, PositiveInt("cpu_row_tile_bytes", v));
  }
  // The kernels' A/B switches (CpuKernelOptions): each flag is one of two values, the first the
  // default.
  struct Choice {
    std::string_view flag, first, second;
    bool* field;
    bool first_sets;  // the value the field takes for `first`
  };
  CpuKernelOptions& ko = options->kernel_options;
  const Choice choices[] = {
      {"cpu_gemm_kernel", "kiln", "eigen", &ko.gemm_kiln_kernels, true},
      {"cpu_gemm_pool", "shared", "separate", &ko.gemm_separate_pool, false},
      {"cpu_expr_chains", "on", "off", &ko.expr_chains, true},
      {"cpu_conv", "auto", "im2col", &ko.conv_indirect, true},
      {"cpu_attention", "on", "off", &options->fused_attention, true},
      {"cpu_in_place_state", "on", "off", &options->elementwise_state_updates, true},
      {"cpu_loop_invariants", "on", "off", &options->hoist_loop_invariants, true},
  };
  for (const Choice& c : choices) {
    std::string_view v = FlagOr(flags, c.flag, "");
    if (v.empty()) continue;
    if (c.first == "on" && (v == "1" || v == "0")) v = v == "1" ? "on" : "off";
    if (v == c.first) *c.field = c.first_sets;
    else if (v == c.second) *c.field = !c.first_sets;
    else return InvalidArgument(c.flag, ": expected ", c.first, " or ", c.second, ", got '", v, "'");
  }
  return OkStatus();
}

std::string CpuFlagHelp() { return FlagHelp(kFlagSpecs); }

}  // namespace kiln::cpu
