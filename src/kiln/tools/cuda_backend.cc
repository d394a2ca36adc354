// The CUDA backend of the `kiln` tool: GpuCompiler + GpuExecutable (src/kiln/cuda/compiler) on
// an NVIDIA GPU. Compiling needs no GPU (kernels are generated and compiled for the sm_90
// preset when no device is present), running does.
//
// Knobs for measuring alternatives (environment, "0" turns a default off):
//   KILN_CUDA_GEMM_EPILOGUE=0   no epilogue fusion into cuBLASLt (bias/activation kernels instead)
//   KILN_CUDA_CONV_EPILOGUE=0   no epilogue fusion into cuDNN
//   KILN_CUDA_CONV_BACKWARD=0   gradient convolutions run as forward cuDNN calls
//   KILN_CUDA_GRAPH=0           no CUDA graph replay
//   KILN_CUDA_SIDE_STREAM=0     everything on one stream (no library call / kernel pairs)
//
// Autotuning (--autotune*, autotune_options.h): with a device and a level other than off (or a
// forced config), the GPU compiler's autotuning step runs with the CUDA factory and the cache
// (default: read-write, so a module's second compile measures nothing). Without a device
// (`kiln compile` on a machine without a GPU) nothing is tuned: the cache's key needs the
// device's description.
#include <iostream>
#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <mutex>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_spec.h"
#include "kiln/passes/module_clone.h"
#include "kiln/cuda/compiler/gpu_compiler.h"
#include "kiln/cuda/compiler/gpu_executable.h"
#include "kiln/cuda/cuda_platform.h"
#include "kiln/hlo/computation.h"
#include "kiln/tools/autotune_options.h"
#include "kiln/tools/backend_registry.h"

namespace kiln {

namespace {

// The process's CUDA platform, created on first use (the result, success or failure, is kept).
// Never destroyed: at exit the driver may already be shut down, and releasing the device's
// context then only produces errors.
StatusOr<runtime::Platform*> Platform() {
  static std::mutex mu;
  static runtime::Platform* platform = nullptr;
  static Status error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    auto p = cuda::CreateCudaPlatform();
    if (p.ok()) platform = p->release();
    else error = p.status();
  }
  if (!platform) return error;
  return platform;
}

StatusOr<cuda::CudaDevice*> Device(int ordinal) {
  KILN_ASSIGN_OR_RETURN(runtime::Platform * p, Platform());
  KILN_ASSIGN_OR_RETURN(runtime::Device * d, p->GetDevice(ordinal));
  return static_cast<cuda::CudaDevice*>(d);
}

bool EnvOff(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "0";
}

cuda::GpuCompileOptions CompileOptions(const codegen::DeviceSpec& spec) {
  cuda::GpuCompileOptions o;
  o.device = spec;
  // The tool verified the module already (unless --no-verify asked it not to).
  o.verify_input = false;
  o.gemm.fuse_epilogues = !EnvOff("KILN_CUDA_GEMM_EPILOGUE");
  o.conv.fuse_epilogues = !EnvOff("KILN_CUDA_CONV_EPILOGUE");
  o.conv.backward_convolutions = !EnvOff("KILN_CUDA_CONV_BACKWARD");
  return o;
}

// The autotuning step of one compile (the cache outlives it).
struct CudaAutotune {
  std::unique_ptr<autotune::Cache> cache;
  cuda::GpuAutotuneOptions options;
};

// Disabled (no factory) without flags, without a device, or with --autotune off and nothing
// forced.
StatusOr<std::unique_ptr<CudaAutotune>> MakeCudaAutotune(const AutotuneFlags* flags, runtime::Device* device) {
  auto out = std::make_unique<CudaAutotune>();
  if (flags == nullptr || device == nullptr) return out;
  KILN_ASSIGN_OR_RETURN(autotune::AutotuneOptions options, MakeAutotuneOptions(*flags));
  if (options.level == autotune::TuningLevel::kOff && options.forced.empty()) return out;
  KILN_ASSIGN_OR_RETURN(out->cache, OpenAutotuneCache(*flags));
  out->options.factory = cuda::CudaAutotuneFactory();
  out->options.target = device->description();
  out->options.device = device;
  out->options.cache = out->cache.get();
  out->options.options = std::move(options);
  return out;
}

Status AfterAutotune(const AutotuneFlags* flags, const cuda::CompiledGpuModule& compiled) {
  if (flags == nullptr || !compiled.stats.autotune) return OkStatus();
  return WriteAutotuneJson(*flags, *compiled.stats.autotune);
}

StatusOr<std::unique_ptr<cuda::GpuExecutable>> CompileAndLoad(const HloModule& module, int ordinal,
                                                              const AutotuneFlags* flags = nullptr) {
  KILN_ASSIGN_OR_RETURN(cuda::CudaDevice * device, Device(ordinal));
  cuda::GpuCompileOptions o = CompileOptions(codegen::DeviceSpec::FromDescription(device->description()));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<CudaAutotune> tuning, MakeCudaAutotune(flags, device));
  o.autotune = tuning->options;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CompiledGpuModule> compiled,
                        cuda::GpuCompiler::Compile(CloneModule(module), o));
  KILN_RETURN_IF_ERROR(AfterAutotune(flags, *compiled));
  cuda::GpuExecutableOptions eo;
  eo.use_cuda_graph = !EnvOff("KILN_CUDA_GRAPH");
  eo.use_side_stream = !EnvOff("KILN_CUDA_SIDE_STREAM");
  return cuda::GpuExecutable::Create(std::move(compiled), *device, eo);
}

std::string Ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", ms);
  return buf;
}

class PreparedCudaModule : public PreparedModule {
 public:
  PreparedCudaModule(std::unique_ptr<cuda::GpuExecutable> exe, bool profile, std::string trace)
      : exe_(std::move(exe)), profile_(profile), trace_(std::move(trace)) {}
  Status Execute() override {
    cuda::GpuRunOptions o;
    o.profile = profile_;
    KILN_RETURN_IF_ERROR(exe_->Execute(o));
    device_ms_.push_back(exe_->last_device_ms());
    return OkStatus();
  }
  std::string Report() const override {
    std::string s;
    if (!device_ms_.empty()) {
      std::vector<double> v = device_ms_;
      std::sort(v.begin(), v.end());
      // The first runs are warm-ups (and the graph capture): the timed runs are the last ones.
      const double median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      s += StrCat("device time (events): median ", Ms(median), " ms  min ", Ms(v.front()), " ms  max ", Ms(v.back()),
                  " ms (all ", v.size(), " runs)\n");
    }
    s += StrCat("cuda graph: ", exe_->graph_captured() ? "captured" : exe_->graph_eligible() ? "eligible, not yet" : "no",
                profile_ ? " (profiling runs eagerly)" : "", "\n");
    s += exe_->compiled().stats.memory.ToString() + "\n";
    if (exe_->compiled().stats.autotune) s += exe_->compiled().stats.autotune->SummaryLine() + "\n";
    if (!exe_->compiled().stats.host_fallbacks.empty()) {
      s += "on the host (evaluator):";
      for (const auto& [k, n] : exe_->compiled().stats.host_fallbacks) s += StrCat(" ", k, " x", n);
      s += "\n";
    }
    if (profile_) {
      s += exe_->ProfileReport();
      if (!trace_.empty()) {
        Status t = exe_->WriteChromeTrace(trace_);
        s += t.ok() ? StrCat("chrome trace: ", trace_, "\n") : StrCat("chrome trace failed: ", t.message(), "\n");
      }
    }
    return s;
  }

 private:
  std::unique_ptr<cuda::GpuExecutable> exe_;
  bool profile_;
  std::string trace_;
  std::vector<double> device_ms_;
};

class CudaBackend : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  std::string_view description() const override {
    return "NVIDIA GPUs: generated CUDA kernels (NVRTC), cuBLASLt GEMMs, cuDNN convolutions, CUDA graphs";
  }
  StatusOr<std::vector<DeviceInfo>> Devices() const override {
    KILN_ASSIGN_OR_RETURN(runtime::Platform * p, Platform());
    std::vector<DeviceInfo> out;
    for (int i = 0; i < p->device_count(); ++i) {
      KILN_ASSIGN_OR_RETURN(runtime::Device * d, p->GetDevice(i));
      const runtime::DeviceDescription& dd = d->description();
      out.push_back({i, dd.name,
                     StrCat("compute capability ", dd.compute_capability(), ", ", dd.multiprocessor_count, " SMs, ",
                            HumanBytes(dd.memory_bytes))});
    }
    return out;
  }
  bool RunsF32ProductsInTf32(const HloModule& module) const override {
    for (const HloComputation* c : module.computations())
      for (const HloInstruction* i : c->instructions()) {
        if (i->opcode() != HloOpcode::kDot && i->opcode() != HloOpcode::kConvolution) continue;
        const PrimitiveType t = i->operand(0)->shape().element_type();
        if (t != PrimitiveType::kF32 && t != PrimitiveType::kC64) continue;
        bool highest = false;
        for (Precision p : i->attrs().precision_config.operand_precision) highest |= p == Precision::kHighest;
        if (!highest) return true;
      }
    return false;
  }
  StatusOr<Literal> Run(const HloModule& module, std::span<const Literal> args,
                        const BackendRunOptions& options) override {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::GpuExecutable> exe,
                          CompileAndLoad(module, options.device_ordinal, options.autotune));
    if (const auto& report = exe->compiled().stats.autotune) std::cerr << report->SummaryLine() << "\n";
    cuda::GpuRunOptions ro;
    ro.poison = true;  // an element no kernel writes comes back as NaN, never as a lucky value
    return exe->Run(args, ro);
  }
  StatusOr<std::string> Compile(const HloModule& module, const BackendCompileOptions& options) override {
    codegen::DeviceSpec spec;
    std::string where = "sm_90 preset (no device)";
    runtime::Device* device = nullptr;
    if (auto d = Device(options.device_ordinal); d.ok()) {
      spec = codegen::DeviceSpec::FromDescription((*d)->description());
      where = (*d)->description().name;
      device = *d;
    } else {
      KILN_ASSIGN_OR_RETURN(spec, codegen::DeviceSpec::FromPreset("sm_90"));
    }
    cuda::GpuCompileOptions o = CompileOptions(spec);
    o.dump_dir = options.dump_passes_dir;
    o.kernel_dump_dir = options.dump_kernels_dir;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<CudaAutotune> tuning, MakeCudaAutotune(options.autotune, device));
    o.autotune = tuning->options;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CompiledGpuModule> compiled,
                          cuda::GpuCompiler::Compile(CloneModule(module), o));
    KILN_RETURN_IF_ERROR(AfterAutotune(options.autotune, *compiled));
    const cuda::GpuCompileStats& st = compiled->stats;
    std::string s = StrCat("target: ", where, " (", spec.arch(), ")\n");
    if (options.stats) return s + st.ToString() + "thunks:\n" + compiled->ThunkListing();
    if (st.autotune) s += st.autotune->SummaryLine() + "\n";
    s += StrCat("compiled ", module.name(), " in ", RoundTripDouble(std::round(st.compile_seconds * 1e5) / 100), " ms: ",
                st.thunks, " thunks, ", st.kernels, " kernels (", st.kernels_from_cache, " from the NVRTC cache)\n",
                st.memory.ToString(), "\n");
    if (!st.host_fallbacks.empty()) {
      s += "on the host (evaluator):";
      for (const auto& [k, n] : st.host_fallbacks) s += StrCat(" ", k, " x", n);
      s += "\n";
    }
    if (!options.dump_kernels_dir.empty()) s += StrCat("kernel sources in ", options.dump_kernels_dir, "\n");
    return s;
  }
  StatusOr<std::unique_ptr<PreparedModule>> Prepare(const HloModule& module, std::span<const Literal> args,
                                                    const BackendRunOptions& options) override {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<cuda::GpuExecutable> exe,
                          CompileAndLoad(module, options.device_ordinal, options.autotune));
    KILN_RETURN_IF_ERROR(exe->SetArguments(args));
    return std::unique_ptr<PreparedModule>(new PreparedCudaModule(std::move(exe), options.profile, options.trace_path));
  }
};

}  // namespace

std::unique_ptr<Backend> CreateCudaBackend() { return std::make_unique<CudaBackend>(); }

}  // namespace kiln
