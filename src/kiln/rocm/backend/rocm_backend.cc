#include "kiln/rocm/backend/rocm_backend.h"

#include <cmath>
#include <mutex>

#include "kiln/autotune/autotuner.h"
#include "kiln/autotune/cache.h"
#include "kiln/autotune/settings.h"
#include "kiln/base/strings.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/passes/module_clone.h"
#include "kiln/passes/send_recv_ordering.h"
#include "kiln/passes/shard_map_lowering.h"
#include "kiln/rocm/autotune/rocm_backends.h"
#include "kiln/rocm/compiler/rocm_compiler.h"
#include "kiln/rocm/hip_api.h"
#include "kiln/rocm/rocm_device.h"
#include "kiln/rocm/rocm_platform.h"

namespace kiln::rocm {

namespace {

constexpr std::string_view kPlatform = "rocm";

constexpr FlagSpec kFlagSpecs[] = {
    {"rocm_target", "gfxNNN|mi250x|mi300x  the AMD GPU to compile for without a device (default gfx942; with a device: its own)"},
    {"rocm_compiler", "auto|hiprtc|clang  how kernels become code objects (default auto: hipRTC where it supports the target, else clang)"},
    {"rocm_clang", "PATH  clang++ with the amdgcn target (default: the one found at configure time, clang++-19)"},
    {"rocm_device_libs", "DIR[:DIR...]  ROCm device-library bitcode directories (default: those found at configure time)"},
    {"rocm_code_object_version", "4|5  code object version for clang (default: clang's)"},
    // Platform-level (ClientOptions::flags, read when the backend is created).
    {"rocm_hip_library", "PATH  the HIP runtime to load (platform-level; default libamdhip64.so.7/.6/.5)"},
    {"rocm_hiprtc_library", "PATH  hipRTC to load (platform-level; default libhiprtc.so.7/.6, libamdhip64.so.5)"},
    {"rocm_rocblas_library", "PATH  rocBLAS to load (platform-level)"},
    {"rocm_hipblaslt_library", "PATH  hipBLASLt to load (platform-level)"},
    {"rocm_miopen_library", "PATH  MIOpen to load (platform-level)"},
    {"rocm_rccl_library", "PATH  RCCL to load (platform-level; default librccl.so.1)"},
};

StatusOr<runtime::Platform*> Platform() {
  static std::mutex mu;
  static runtime::Platform* platform = nullptr;  // never destroyed (as the CUDA one)
  static Status error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    auto p = CreateRocmPlatform();
    if (p.ok()) platform = p->release();
    else error = p.status();
  }
  if (!platform) return error;
  return platform;
}

class RocmExecutable final : public Executable {
 public:
  RocmExecutable(const HloModule& module, int ordinal, std::unique_ptr<RocmCompiledModule> compiled, CompileReport report)
      : Executable(std::string(kPlatform), ordinal, module, std::move(report)), compiled_(std::move(compiled)) {}
  bool can_execute() const override { return false; }
  StatusOr<std::unique_ptr<Buffer>> BufferFromLiteral(const Literal&) override { return NotRunnable(); }
  std::string RunReport() const override { return "rocm: compiled, not executed (no AMD GPU available)\n"; }
  const RocmCompiledModule& compiled() const { return *compiled_; }

 protected:
  StatusOr<std::vector<std::unique_ptr<Buffer>>> ExecuteImpl(std::span<Buffer* const>, const ExecuteOptions&) override {
    return NotRunnable();
  }

 private:
  static Status NotRunnable() {
    return FailedPrecondition(
        "rocm: this executable was compiled for an AMD GPU but cannot run: ROCm is built and compile-tested, not "
        "executed (no AMD GPU available)");
  }
  std::unique_ptr<RocmCompiledModule> compiled_;
};

class RocmBackend final : public Backend {
 public:
  std::string_view name() const override { return kPlatform; }
  std::string_view description() const override {
    return "AMD GPUs: generated HIP kernels (hipRTC / clang to HSACO), rocBLAS / hipBLASLt GEMMs, MIOpen "
           "convolutions; compile-only here (no AMD GPU)";
  }
  std::string flag_help() const override { return RocmFlagHelp(); }

  StatusOr<std::vector<DeviceInfo>> Devices() const override {
    KILN_ASSIGN_OR_RETURN(runtime::Platform * p, Platform());
    std::vector<DeviceInfo> out;
    for (int i = 0; i < p->device_count(); ++i) {
      KILN_ASSIGN_OR_RETURN(runtime::Device * d, p->GetDevice(i));
      const runtime::DeviceDescription& dd = d->description();
      out.push_back({i, dd.name, StrCat(dd.gpu_arch, ", ", dd.multiprocessor_count, " CUs, ", HumanBytes(dd.memory_bytes))});
    }
    return out;
  }

  StatusOr<std::unique_ptr<Executable>> Compile(const HloModule& module, const CompileOptions& options) override {
    KILN_RETURN_IF_ERROR(CheckBackendFlags(options.flags, "rocm_", kFlagSpecs));
    RocmCompileOptions o;
    CompileReport report;
    std::string_view target = FlagOr(options.flags, "rocm_target", "");
    StatusOr<runtime::Platform*> platform = Platform();
    runtime::Device* device = nullptr;
    if (platform.ok() && target.empty()) {
      KILN_ASSIGN_OR_RETURN(device, (*platform)->GetDevice(options.device_ordinal));
      o.device = codegen::DeviceSpec::FromDescription(device->description());
      report.target = StrCat(device->description().name, " (", o.device.arch(), ")");
    } else {
      const std::string name = target.empty() ? "gfx942" : std::string(target);
      StatusOr<codegen::DeviceSpec> spec = codegen::DeviceSpec::FromPreset(name);
      if (!spec.ok() || !spec->is_hip()) {
        // An AMD architecture without a preset of its own: gfx90a's limits, its own target (the
        // compiler then checks it against what it supports).
        if (name.rfind("gfx", 0) != 0) {
          return InvalidArgument("rocm: unknown target '", name, "' (an AMD architecture gfxNNN, or one of ",
                                 StrJoin(codegen::DeviceSpec::PresetNames(codegen::GpuDialect::kHip), ", "), ")");
        }
        runtime::DeviceDescription d;
        d.platform = "rocm";
        d.gpu_arch = name;
        spec = codegen::DeviceSpec::FromDescription(d);
      }
      o.device = *spec;
      report.target = StrCat(o.device.name, " preset",
                             platform.ok() ? "" : StrCat(" (no device: ", platform.status().message(), ")"));
    }
    std::string_view path = FlagOr(options.flags, "rocm_compiler", "auto");
    if (path == "hiprtc") o.path = HsacoPath::kHiprtc;
    else if (path == "clang") o.path = HsacoPath::kClang;
    else if (path != "auto") return InvalidArgument("rocm_compiler: expected auto, hiprtc or clang, got '", path, "'");
    if (std::string_view c = FlagOr(options.flags, "rocm_clang", ""); !c.empty()) o.hsaco.clang = std::string(c);
    if (std::string_view d = FlagOr(options.flags, "rocm_device_libs", ""); !d.empty())
      for (std::string_view part : StrSplit(d, ':'))
        if (!part.empty()) o.hsaco.device_lib_dirs.emplace_back(part);
    if (std::string_view v = FlagOr(options.flags, "rocm_code_object_version", ""); !v.empty()) {
      if (v != "4" && v != "5") return InvalidArgument("rocm_code_object_version: expected 4 or 5, got '", v, "'");
      o.hsaco.code_object_version = v == "4" ? 4 : 5;
    }
    o.verify_input = options.verify;
    o.dump_dir = options.dump_dir;
    o.kernel_dump_dir = options.kernel_dump_dir;
    if (options.threads > 0) o.compile_threads = options.threads;
    // The autotuning step (Note [Deviceless autotuning] in rocm_compiler.cc): the factory of
    // rocm/autotune under the settings' level, allow-list and cache; without a device, cache
    // hits and defaults only.
    std::unique_ptr<autotune::Cache> cache;
    if (options.autotune.enabled()) {
      KILN_ASSIGN_OR_RETURN(o.autotune.options, autotune::MakeAutotuneOptions(options.autotune));
      KILN_ASSIGN_OR_RETURN(cache, autotune::OpenAutotuneCache(options.autotune));
      o.autotune.factory = RocmAutotuneFactory();
      o.autotune.target = device != nullptr ? device->description() : RocmTargetDescription(o.device);
      o.autotune.device = nullptr;  // no candidate can run yet (Note [Untested ROCm execution])
      o.autotune.cache = cache.get();
    }
    std::unique_ptr<HloModule> lowered = CloneModule(module);
    KILN_RETURN_IF_ERROR(LowerShardMap(*lowered).status());
    KILN_RETURN_IF_ERROR(OrderSendsBeforeRecvDones(*lowered).status());
    // The run's grid in the header: the collectives' groups (Note [Collectives on RCCL]).
    KILN_ASSIGN_OR_RETURN(auto grid, ParticipantsOf(*lowered, options));
    lowered->header().replica_count = grid.first;
    lowered->header().num_partitions = grid.second;
    StatusOr<std::unique_ptr<RocmCompiledModule>> compiled = RocmCompiler::Compile(std::move(lowered), o);
    if (!compiled.ok()) {
      // The tool names the backend already ("kiln: rocm: ..."): no second "rocm: ".
      std::string_view m = compiled.status().message();
      if (m.rfind("rocm: ", 0) == 0) m.remove_prefix(6);
      return Status(compiled.status().code(), std::string(m));
    }
    std::unique_ptr<RocmCompiledModule> c = std::move(compiled).value();
    const RocmCompileStats& st = c->stats;
    if (st.autotune) KILN_RETURN_IF_ERROR(autotune::WriteAutotuneJson(options.autotune, *st.autotune));
    report.autotune = st.autotune;
    report.compile_seconds = st.compile_seconds;
    report.memory = st.memory;
    for (const auto& [k, n] : st.host_fallbacks) report.host_fallbacks.emplace_back(k, n);
    std::string fallbacks;
    for (const auto& [k, n] : st.host_fallbacks) fallbacks += StrCat(" ", k, " x", n);
    report.details = StrCat("target: ", report.target, "\n", st.ToString());
    report.thunk_listing = c->ThunkListing();
    int64_t bytes = 0;
    for (const CompiledHsaco& co : c->code_objects) bytes += static_cast<int64_t>(co.image.size());
    report.summary = StrCat("target: ", report.target, "\n", st.autotune ? st.AutotuneLine() + "\n" : "", "compiled ",
                            module.name(), " in ",
                            RoundTripDouble(std::round(st.compile_seconds * 1e5) / 100), " ms: ", c->thunks.size(),
                            " thunks, ", st.kernels, " kernels in ", c->code_objects.size(), " code object(s) for ",
                            o.device.arch(), " (", HumanBytes(bytes), ", ", st.kernels_from_cache, " kernels from the hsaco cache",
                            st.compiler.empty() ? "" : ", " + st.compiler, ")\n", st.memory.ToString(), "\n",
                            fallbacks.empty() ? "" : StrCat("on the host (evaluator):", fallbacks, "\n"),
                            "not executable here: ROCm is built and compile-tested, not executed (no AMD GPU available)\n",
                            options.kernel_dump_dir.empty() ? "" : StrCat("kernel sources and code objects in ", options.kernel_dump_dir, "\n"));
    if (options.keep_compiled_module_text) report.compiled_module_text = c->module->ToString();
    return std::unique_ptr<Executable>(new RocmExecutable(module, options.device_ordinal, std::move(c), std::move(report)));
  }

  StatusOr<std::unique_ptr<Buffer>> BufferFromHost(const void*, uint64_t, const Shape&, int) override {
    return FailedPrecondition("rocm: no AMD GPU to hold a buffer (ROCm is built and compile-tested, not executed)");
  }
  StatusOr<std::unique_ptr<Buffer>> BufferFromPointer(void*, const Shape&, int, std::function<void()>) override {
    return FailedPrecondition("rocm: no AMD GPU to hold a buffer (ROCm is built and compile-tested, not executed)");
  }
};

}  // namespace

// The platform-level flags set the process's RocmLibraryPaths (hip_api.h), before first use.
std::unique_ptr<Backend> CreateRocmBackend(const BackendFlags& flags) {
  RocmLibraryPaths paths = GetRocmLibraryPaths();
  const std::pair<std::string_view, std::string*> fields[] = {
      {"rocm_hip_library", &paths.hip},         {"rocm_hiprtc_library", &paths.hiprtc},
      {"rocm_rocblas_library", &paths.rocblas}, {"rocm_hipblaslt_library", &paths.hipblaslt},
      {"rocm_miopen_library", &paths.miopen},   {"rocm_rccl_library", &paths.rccl},
  };
  bool given = false;
  for (const auto& [name, field] : fields)
    if (std::string_view v = FlagOr(flags, name, ""); !v.empty()) {
      *field = std::string(v);
      given = true;
    }
  if (given) SetRocmLibraryPaths(paths);
  return std::make_unique<RocmBackend>();
}

std::string RocmFlagHelp() { return FlagHelp(kFlagSpecs); }

}  // namespace kiln::rocm
