#include "kiln/cuda/autotune/cuda_backends.h"

#include <cublas_api.h>

#include <array>
#include <memory>

#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/libs/attention_cudnn.h"
#include "kiln/cuda/libs/conv.h"
#include "kiln/cuda/libs/cublas_gemm.h"
#include "kiln/cuda/libs/gemm.h"
#include "kiln/cuda/autotune/codegen_backend.h"
#include "kiln/cuda/autotune/fission_backend.h"

namespace kiln::cuda {

namespace {

using autotune::Candidate;
using autotune::CandidateBuffers;
using autotune::Config;

std::string LibraryVersion(const runtime::DeviceDescription& d, std::string_view library) {
  for (const auto& [name, version] : d.library_versions) {
    if (name == library) return StartsWith(version, "not ") ? "absent" : version;
  }
  return "unknown";
}

runtime::DeviceMemory Input(const CandidateBuffers& b, int64_t i) {
  return i >= 0 && i < static_cast<int64_t>(b.inputs.size()) ? b.inputs[i] : runtime::DeviceMemory{};
}

// ---- GEMMs ----------------------------------------------------------------------------------

libs::GemmBuffers GemmBuffersFor(const GemmConfig& c, const CandidateBuffers& b) {
  libs::GemmBuffers g;
  g.lhs = Input(b, 0);
  g.rhs = Input(b, 1);
  g.c = Input(b, c.c_operand());
  g.bias = Input(b, c.bias_operand());
  g.out = b.outputs.empty() ? runtime::DeviceMemory{} : b.outputs[0];
  return g;
}

// Runs one algorithm of a GEMM plan (GemmPlan or CublasGemmPlan).
template <typename Plan>
class GemmCandidate : public Candidate {
 public:
  GemmCandidate(std::unique_ptr<Plan> plan, libs::GemmAlgorithm algorithm, GemmConfig config)
      : plan_(std::move(plan)), algorithm_(std::move(algorithm)), config_(config) {}
  uint64_t scratch_bytes() const override { return algorithm_.workspace_bytes; }
  Status Launch(runtime::Stream& stream, const CandidateBuffers& buffers) override {
    return plan_->Run(algorithm_, GemmBuffersFor(config_, buffers), buffers.scratch, stream);
  }

 private:
  std::unique_ptr<Plan> plan_;
  libs::GemmAlgorithm algorithm_;
  GemmConfig config_;
};

class GemmBackendBase : public autotune::Backend {
 public:
  GemmBackendBase(CudaDevice* device, autotune::BackendOptions options, std::string version)
      : device_(device), options_(options), version_(std::move(version)) {}
  std::string version() const override { return version_; }
  bool CanProduceWrongResults() const override { return false; }  // vendor libraries
  Status CheckConfig(const HloInstruction& instr, const Config& config) override {
    if (config.backend() != name()) return InvalidArgument("not a ", name(), " config: ", config.ToString());
    KILN_ASSIGN_OR_RETURN(libs::GemmDesc desc, GemmDescForCall(instr));
    return GemmAlgorithmFromConfig(config, desc).status();
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return autotune::WriteConfigToBackendConfig(instr, config);
  }

 protected:
  Status NeedDevice() const {
    if (device_ == nullptr) return FailedPrecondition(name(), ": no CUDA device to compile for");
    return OkStatus();
  }
  CudaDevice* device_;
  autotune::BackendOptions options_;
  std::string version_;
};

class CublasBackend : public GemmBackendBase {
 public:
  using GemmBackendBase::GemmBackendBase;
  std::string_view name() const override { return "cublas"; }

  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsGemmCall(instr)) return std::vector<Config>{};
    StatusOr<libs::GemmDesc> desc = GemmDescForCall(instr);
    if (!desc.ok() || !libs::CublasSupports(*desc).ok()) return std::vector<Config>{};
    std::vector<int> ids = {CUBLAS_GEMM_DEFAULT, CUBLAS_GEMM_DEFAULT_TENSOR_OP};
    if (options_.exhaustive) {
      for (int i = CUBLAS_GEMM_ALGO0; i <= CUBLAS_GEMM_ALGO23; ++i) ids.push_back(i);
      for (int i = CUBLAS_GEMM_ALGO0_TENSOR_OP; i <= CUBLAS_GEMM_ALGO15_TENSOR_OP; ++i) {
        ids.push_back(i);
      }
    }
    std::vector<Config> out;
    for (int id : ids) out.push_back(Config("cublas", {{"algo", id}}));
    return out;
  }
  StatusOr<Config> DefaultConfig(const HloInstruction&) override {
    return Config("cublas", {{"algo", static_cast<int>(CUBLAS_GEMM_DEFAULT)}});
  }
  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                               const Config& config) override {
    KILN_RETURN_IF_ERROR(NeedDevice());
    KILN_ASSIGN_OR_RETURN(GemmConfig gemm, GetGemmConfig(instr));
    KILN_ASSIGN_OR_RETURN(libs::GemmDesc desc, GemmDescForCall(instr));
    KILN_ASSIGN_OR_RETURN(libs::GemmAlgorithm a, GemmAlgorithmFromConfig(config, desc));
    if (a.backend != libs::GemmAlgorithm::Backend::kCublas) {
      return InvalidArgument("not a cublas config: ", config.ToString());
    }
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::CublasGemmPlan> plan,
                          libs::CublasGemmPlan::Create(desc, *device_));
    return std::unique_ptr<Candidate>(
        new GemmCandidate<libs::CublasGemmPlan>(std::move(plan), std::move(a), gemm));
  }
};

class CublasLtBackend : public GemmBackendBase {
 public:
  using GemmBackendBase::GemmBackendBase;
  std::string_view name() const override { return "cublaslt"; }

  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    // The heuristic needs a device; without one cuBLASLt offers nothing (cache hits that name
    // it still apply).
    if (!IsGemmCall(instr) || device_ == nullptr) return std::vector<Config>{};
    StatusOr<libs::GemmDesc> desc = GemmDescForCall(instr);
    if (!desc.ok()) return std::vector<Config>{};
    StatusOr<std::unique_ptr<libs::GemmPlan>> plan = libs::GemmPlan::Create(*desc, *device_);
    if (!plan.ok()) return std::vector<Config>{};
    StatusOr<std::vector<libs::GemmAlgorithm>> algorithms =
        (*plan)->ListAlgorithms(options_.exhaustive ? 128 : 16);
    if (!algorithms.ok()) return std::vector<Config>{};
    std::vector<Config> out;
    for (const libs::GemmAlgorithm& a : *algorithms) {
      if (options_.deterministic && a.description.find(" splitk=1 ") == std::string::npos &&
          a.description.find(" splitk=0 ") == std::string::npos) {
        continue;  // split-K reductions may not be bitwise reproducible
      }
      out.push_back(GemmAlgorithmToConfig(a));
    }
    return out;
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    KILN_ASSIGN_OR_RETURN(std::vector<Config> configs, SupportedConfigs(instr));
    if (configs.empty()) return Unimplemented("cublaslt has no algorithm for ", instr.name());
    return configs.front();  // the heuristic's favourite
  }
  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                               const Config& config) override {
    KILN_RETURN_IF_ERROR(NeedDevice());
    KILN_ASSIGN_OR_RETURN(GemmConfig gemm, GetGemmConfig(instr));
    KILN_ASSIGN_OR_RETURN(libs::GemmDesc desc, GemmDescForCall(instr));
    KILN_ASSIGN_OR_RETURN(libs::GemmAlgorithm a, GemmAlgorithmFromConfig(config, desc));
    if (a.backend != libs::GemmAlgorithm::Backend::kCublasLt) {
      return InvalidArgument("not a cublaslt config: ", config.ToString());
    }
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::GemmPlan> plan,
                          libs::GemmPlan::Create(desc, *device_));
    return std::unique_ptr<Candidate>(
        new GemmCandidate<libs::GemmPlan>(std::move(plan), std::move(a), gemm));
  }
};

// ---- convolutions ---------------------------------------------------------------------------

class ConvCandidate : public Candidate {
 public:
  ConvCandidate(std::unique_ptr<libs::ConvPlan> plan, libs::ConvAlgorithm algorithm,
                ConvConfig config)
      : plan_(std::move(plan)), algorithm_(std::move(algorithm)), config_(std::move(config)) {}
  uint64_t scratch_bytes() const override { return algorithm_.workspace_bytes; }
  Status Launch(runtime::Stream& stream, const CandidateBuffers& b) override {
    libs::ConvBuffers c;
    c.x = Input(b, 0);
    c.w = Input(b, 1);
    c.bias = Input(b, config_.bias_operand());
    c.side_input = Input(b, config_.side_operand());
    c.y = b.outputs.empty() ? runtime::DeviceMemory{} : b.outputs[0];
    // The backward kinds read (dy, w) -> dx and (x, dy) -> dw (conv_config.h).
    if (config_.kind == ConvCallKind::kBackwardData) std::swap(c.x, c.y);
    if (config_.kind == ConvCallKind::kBackwardFilter) std::swap(c.w, c.y);
    return plan_->Run(algorithm_, c, b.scratch, stream);
  }

 private:
  std::unique_ptr<libs::ConvPlan> plan_;
  libs::ConvAlgorithm algorithm_;
  ConvConfig config_;
};

class CudnnBackend : public autotune::Backend {
 public:
  CudnnBackend(CudaDevice* device, autotune::BackendOptions options, std::string version)
      : device_(device), options_(options), version_(std::move(version)) {}
  std::string_view name() const override { return "cudnn"; }
  std::string version() const override { return version_; }
  bool CanProduceWrongResults() const override { return false; }
  Status CheckConfig(const HloInstruction&, const Config& config) override {
    if (config.backend() != name()) return InvalidArgument("not a cudnn config: ", config.ToString());
    return ConvAlgorithmFromConfig(config).status();
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return autotune::WriteConfigToBackendConfig(instr, config);
  }

  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsConvCall(instr) || device_ == nullptr) return std::vector<Config>{};
    StatusOr<libs::ConvDesc> desc = ConvDescForCall(instr);
    if (!desc.ok()) return std::vector<Config>{};
    StatusOr<std::unique_ptr<libs::ConvPlan>> plan = libs::ConvPlan::Create(*desc, *device_);
    if (!plan.ok()) return std::vector<Config>{};
    StatusOr<std::vector<libs::ConvAlgorithm>> algorithms = (*plan)->ListAlgorithms();
    if (!algorithms.ok()) return std::vector<Config>{};
    std::vector<Config> out;
    for (const libs::ConvAlgorithm& a : *algorithms) {
      if (options_.deterministic && !a.deterministic) continue;
      out.push_back(ConvAlgorithmToConfig(a));
      if (!options_.exhaustive && out.size() >= 8) break;
    }
    return out;
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    KILN_ASSIGN_OR_RETURN(std::vector<Config> configs, SupportedConfigs(instr));
    if (configs.empty()) return Unimplemented("cudnn has no algorithm for ", instr.name());
    return configs.front();
  }
  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                               const Config& config) override {
    if (device_ == nullptr) return FailedPrecondition("cudnn: no CUDA device to compile for");
    KILN_ASSIGN_OR_RETURN(libs::ConvAlgorithm a, ConvAlgorithmFromConfig(config));
    KILN_ASSIGN_OR_RETURN(ConvConfig conv, GetConvConfig(instr));
    KILN_ASSIGN_OR_RETURN(libs::ConvDesc desc, ConvDescForCall(instr));
    a.kind = desc.kind;  // the config's algorithm numbers are of the call's kind
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::ConvPlan> plan,
                          libs::ConvPlan::Create(desc, *device_));
    return std::unique_ptr<Candidate>(new ConvCandidate(std::move(plan), std::move(a), conv));
  }

 private:
  CudaDevice* device_;
  autotune::BackendOptions options_;
  std::string version_;
};

// ---- fused attention (kiln's flash-attention kernel) -------------------------------------

class AttentionCandidate : public Candidate {
 public:
  AttentionCandidate(std::unique_ptr<libs::AttentionPlan> plan, AttentionConfig config)
      : plan_(std::move(plan)), config_(std::move(config)) {}
  Status Launch(runtime::Stream& stream, const CandidateBuffers& b) override {
    if (b.outputs.empty()) return InvalidArgument("attention candidate: no output buffer");
    runtime::DeviceMemory bias, mask;
    if (config_.has_bias) bias = Input(b, config_.bias.operand);
    if (config_.has_mask) mask = Input(b, config_.mask_view.operand);
    return plan_->Run(Input(b, config_.q.operand), Input(b, config_.k.operand), Input(b, config_.v.operand),
                      b.outputs[0], stream, bias, mask);
  }

 private:
  std::unique_ptr<libs::AttentionPlan> plan_;
  AttentionConfig config_;
};

// The kernel's tile configs (warps, query rows per warp, k/v tile) for __kiln$attention calls.
// Generated code: not trusted, so the default config's outputs are the reference (the kernel
// tests check it against a float64 evaluation).
class FlashAttentionBackend : public autotune::Backend {
 public:
  FlashAttentionBackend(CudaDevice* device, int compute_capability_major)
      : device_(device), cc_(compute_capability_major) {}
  std::string_view name() const override { return kFlashAttentionBackend; }
  std::string version() const override { return "flash-attention 1"; }
  bool CanProduceWrongResults() const override { return true; }
  Status CheckConfig(const HloInstruction&, const Config& config) override {
    return AttentionKernelConfigFromConfig(config).status();
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return autotune::WriteConfigToBackendConfig(instr, config);
  }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsAttentionCall(instr)) return std::vector<Config>{};
    StatusOr<libs::AttentionDesc> desc = AttentionDescForCall(instr, cc_);
    // The kernel writes no softmax statistics (Note [Attention statistics]).
    if (!desc.ok() || desc->stats) return std::vector<Config>{};
    std::vector<Config> out;
    for (const libs::AttentionKernelConfig& c : libs::AttentionConfigs(*desc)) out.push_back(AttentionKernelConfigToConfig(c));
    return out;
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    KILN_ASSIGN_OR_RETURN(libs::AttentionDesc desc, AttentionDescForCall(instr, cc_));
    if (desc.stats) return Unimplemented("flash attention: no softmax statistics output (", instr.name(), ")");
    return AttentionKernelConfigToConfig(libs::DefaultAttentionConfig(desc));
  }
  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr, const Config& config) override {
    if (device_ == nullptr) return FailedPrecondition("flash attention: no CUDA device to compile for");
    KILN_ASSIGN_OR_RETURN(libs::AttentionKernelConfig c, AttentionKernelConfigFromConfig(config));
    KILN_ASSIGN_OR_RETURN(AttentionConfig ac, AttentionConfigOf(instr));
    KILN_ASSIGN_OR_RETURN(libs::AttentionDesc desc, AttentionDescForConfig(ac, cc_));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::AttentionPlan> plan, libs::AttentionPlan::Create(desc, *device_, c));
    return std::unique_ptr<Candidate>(new AttentionCandidate(std::move(plan), std::move(ac)));
  }

 private:
  CudaDevice* device_;
  int cc_;
};

class CudnnSdpaCandidate : public Candidate {
 public:
  CudnnSdpaCandidate(std::unique_ptr<libs::CudnnAttentionPlan> plan, AttentionConfig config)
      : plan_(std::move(plan)), config_(std::move(config)) {}
  uint64_t scratch_bytes() const override { return plan_->workspace_bytes(); }
  Status Launch(runtime::Stream& stream, const CandidateBuffers& b) override {
    if (b.outputs.size() != (config_.stats ? 2u : 1u)) return InvalidArgument("cudnn sdpa candidate: ", b.outputs.size(), " output buffers");
    return plan_->Run(Input(b, config_.q.operand), Input(b, config_.k.operand), Input(b, config_.v.operand),
                      b.outputs[0], b.scratch, stream, config_.stats ? b.outputs[1] : runtime::DeviceMemory{});
  }

 private:
  std::unique_ptr<libs::CudnnAttentionPlan> plan_;
  AttentionConfig config_;
};

// cuDNN's SDPA plans for __kiln$attention calls (a vendor library: trusted, so its first plan
// that runs gives the reference the flash configs are checked against).
class CudnnSdpaBackend : public autotune::Backend {
 public:
  CudnnSdpaBackend(CudaDevice* device, int compute_capability_major, autotune::BackendOptions options,
                   std::string version)
      : device_(device), cc_(compute_capability_major), options_(options), version_(std::move(version)) {}
  std::string_view name() const override { return kCudnnSdpaBackend; }
  std::string version() const override { return version_; }
  bool CanProduceWrongResults() const override { return false; }
  Status CheckConfig(const HloInstruction&, const Config& config) override {
    const nlohmann::json& p = config.params();
    if (config.backend() != kCudnnSdpaBackend || !p.is_object() || !p.contains("plan") || !p["plan"].is_number_integer() ||
        p["plan"].get<int64_t>() < -1 || p["plan"].get<int64_t>() > 4096)
      return InvalidArgument("not a cudnn_sdpa config: ", config.ToString());
    return OkStatus();
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return autotune::WriteConfigToBackendConfig(instr, config);
  }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsAttentionCall(instr) || !libs::CudnnAttentionBuilt()) return std::vector<Config>{};
    StatusOr<libs::AttentionDesc> desc = AttentionDescForCall(instr, cc_);
    if (!desc.ok()) return std::vector<Config>{};
    // Without a device: the heuristic's first plan only (what a shared cache may hold).
    if (device_ == nullptr) return std::vector<Config>{CudnnSdpaPlanToConfig(-1)};
    StatusOr<int64_t> count = libs::CudnnAttentionPlan::PlanCount(*desc, *device_);
    if (!count.ok() || *count <= 0) return std::vector<Config>{};
    std::vector<Config> out;
    const int64_t n = options_.exhaustive ? *count : std::min<int64_t>(*count, 4);
    for (int64_t i = 0; i < n; ++i) out.push_back(CudnnSdpaPlanToConfig(i));
    return out;
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    KILN_ASSIGN_OR_RETURN(std::vector<Config> configs, SupportedConfigs(instr));
    if (configs.empty()) return Unimplemented("cudnn sdpa takes no plan for ", instr.name());
    return configs.front();
  }
  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr, const Config& config) override {
    if (device_ == nullptr) return FailedPrecondition("cudnn sdpa: no CUDA device to compile for");
    const nlohmann::json& p = config.params();
    if (config.backend() != kCudnnSdpaBackend || !p.is_object() || !p.contains("plan") || !p["plan"].is_number_integer())
      return InvalidArgument("not a cudnn_sdpa config: ", config.ToString());
    KILN_ASSIGN_OR_RETURN(AttentionConfig ac, AttentionConfigOf(instr));
    KILN_ASSIGN_OR_RETURN(libs::AttentionDesc desc, AttentionDescForConfig(ac, cc_));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::CudnnAttentionPlan> plan,
                          libs::CudnnAttentionPlan::Create(desc, *device_, p["plan"].get<int64_t>()));
    return std::unique_ptr<Candidate>(new CudnnSdpaCandidate(std::move(plan), std::move(ac)));
  }

 private:
  CudaDevice* device_;
  int cc_;
  autotune::BackendOptions options_;
  std::string version_;
};

}  // namespace

StatusOr<autotune::BackendList> CreateCudaBackends(const runtime::DeviceDescription& target,
                                                   runtime::Device* device,
                                                   const autotune::BackendOptions& options) {
  CudaDevice* cuda = nullptr;
  if (device != nullptr) {
    if (device->description().platform != "cuda") {
      return InvalidArgument("the CUDA autotuning backends need a CUDA device, got ",
                             device->description().platform);
    }
    cuda = static_cast<CudaDevice*>(device);
  }
  autotune::BackendList backends;
  backends.push_back(std::make_unique<CublasBackend>(
      cuda, options, StrCat("cublas ", LibraryVersion(target, "cublas"))));
  backends.push_back(std::make_unique<CublasLtBackend>(
      cuda, options, StrCat("cublasLt ", LibraryVersion(target, "cublasLt"))));
  // Generated kernels need NVRTC; without it fission is left out and the fusions keep their
  // default configs.
  StatusOr<std::unique_ptr<NvrtcCompiler>> nvrtc = NvrtcCompiler::Create(NvrtcOptions{});
  std::shared_ptr<NvrtcCompiler> shared_nvrtc;
  if (nvrtc.ok()) shared_nvrtc = std::move(*nvrtc);
  if (shared_nvrtc) {
    backends.push_back(
        CreateFissionBackend(codegen::DeviceSpec::FromDescription(target), device, shared_nvrtc, options));
  }
  backends.push_back(std::make_unique<CudnnBackend>(
      cuda, options, StrCat("cudnn ", LibraryVersion(target, "cudnn"))));
  backends.push_back(std::make_unique<CudnnSdpaBackend>(cuda, target.compute_capability_major, options,
                                                        StrCat("cudnn ", LibraryVersion(target, "cudnn"))));
  backends.push_back(std::make_unique<FlashAttentionBackend>(cuda, target.compute_capability_major));
  if (shared_nvrtc) {
    backends.push_back(
        CreateCodegenBackend(codegen::DeviceSpec::FromDescription(target), device, shared_nvrtc, options));
  }
  return backends;
}

autotune::BackendFactory CudaAutotuneFactory() { return CreateCudaBackends; }

Status RegisterCudaAutotuneFactory(autotune::BackendFactoryRegistry& registry) {
  return registry.Register("cuda", CreateCudaBackends);
}

}  // namespace kiln::cuda
