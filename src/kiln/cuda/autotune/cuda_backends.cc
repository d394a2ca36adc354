#include "kiln/cuda/autotune/cuda_backends.h"

#include <cublas_api.h>

#include <array>
#include <memory>

#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/libs/conv.h"
#include "kiln/cuda/libs/cublas_gemm.h"
#include "kiln/cuda/libs/gemm.h"

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
    if (!config.params().contains("algo") || !config.params()["algo"].is_number_integer()) {
      return InvalidArgument("cublas config without an integer \"algo\": ", config.ToString());
    }
    KILN_ASSIGN_OR_RETURN(GemmConfig gemm, GetGemmConfig(instr));
    KILN_ASSIGN_OR_RETURN(libs::GemmDesc desc, GemmDescForCall(instr));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::CublasGemmPlan> plan,
                          libs::CublasGemmPlan::Create(desc, *device_));
    libs::GemmAlgorithm a;
    a.backend = libs::GemmAlgorithm::Backend::kCublas;
    a.cublas_algo = config.params()["algo"].get<int>();
    a.workspace_bytes = desc.max_workspace_bytes;
    a.description = StrCat("cublas algo=", a.cublas_algo);
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
      nlohmann::json opaque = nlohmann::json::array();
      for (uint64_t word : a.opaque) opaque.push_back(word);
      out.push_back(Config("cublaslt", {{"index", a.index},
                                        {"opaque", opaque},
                                        {"workspace", a.workspace_bytes},
                                        {"waves", a.waves},
                                        {"desc", a.description}}));
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
    const nlohmann::json& p = config.params();
    if (!p.contains("opaque") || !p["opaque"].is_array() || p["opaque"].size() != 8 ||
        !p.contains("workspace") || !p["workspace"].is_number_unsigned()) {
      return InvalidArgument("malformed cublaslt config ", config.ToString());
    }
    KILN_ASSIGN_OR_RETURN(GemmConfig gemm, GetGemmConfig(instr));
    KILN_ASSIGN_OR_RETURN(libs::GemmDesc desc, GemmDescForCall(instr));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::GemmPlan> plan,
                          libs::GemmPlan::Create(desc, *device_));
    libs::GemmAlgorithm a;
    a.backend = libs::GemmAlgorithm::Backend::kCublasLt;
    a.index = p.value("index", 0);
    for (size_t i = 0; i < 8; ++i) a.opaque[i] = p["opaque"][i].get<uint64_t>();
    a.workspace_bytes = p["workspace"].get<uint64_t>();
    a.description = p.value("desc", std::string("cublasLt"));
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
      out.push_back(Config("cudnn", {{"index", a.index},
                                     {"algo", a.algo},
                                     {"math_type", a.math_type},
                                     {"workspace", a.workspace_bytes},
                                     {"deterministic", a.deterministic},
                                     {"tensor_ops", a.tensor_ops},
                                     {"split_epilogue", a.split_epilogue},
                                     {"desc", a.description}}));
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
    const nlohmann::json& p = config.params();
    if (!p.contains("algo") || !p.contains("math_type") || !p.contains("workspace")) {
      return InvalidArgument("malformed cudnn config ", config.ToString());
    }
    KILN_ASSIGN_OR_RETURN(ConvConfig conv, GetConvConfig(instr));
    KILN_ASSIGN_OR_RETURN(libs::ConvDesc desc, ConvDescForCall(instr));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::ConvPlan> plan,
                          libs::ConvPlan::Create(desc, *device_));
    libs::ConvAlgorithm a;
    a.kind = libs::ConvKind::kForward;
    a.index = p.value("index", 0);
    a.algo = p["algo"].get<int>();
    a.math_type = p["math_type"].get<int>();
    a.workspace_bytes = p["workspace"].get<uint64_t>();
    a.deterministic = p.value("deterministic", false);
    a.tensor_ops = p.value("tensor_ops", false);
    a.split_epilogue = p.value("split_epilogue", false);
    a.description = p.value("desc", std::string("cudnn"));
    return std::unique_ptr<Candidate>(new ConvCandidate(std::move(plan), std::move(a), conv));
  }

 private:
  CudaDevice* device_;
  autotune::BackendOptions options_;
  std::string version_;
};

}  // namespace

StatusOr<libs::GemmDesc> GemmDescForCall(const HloInstruction& gemm) {
  KILN_ASSIGN_OR_RETURN(GemmConfig c, GetGemmConfig(gemm));
  libs::GemmDesc d;
  d.batch = c.batch;
  d.m = c.m;
  d.n = c.n;
  d.k = c.k;
  d.lhs.dtype = gemm.operand(0)->shape().element_type();
  d.lhs.transposed = c.lhs_transposed;
  d.lhs.batch_stride = c.lhs_broadcast ? 0 : -1;
  d.rhs.dtype = gemm.operand(1)->shape().element_type();
  d.rhs.transposed = c.rhs_transposed;
  d.rhs.batch_stride = c.rhs_broadcast ? 0 : -1;
  d.out.dtype = gemm.shape().element_type();
  d.precision = c.precision;
  d.alpha = c.alpha;
  d.beta = c.beta;
  using E = libs::GemmEpilogue;
  switch (c.activation) {
    case GemmActivation::kNone: d.epilogue = c.has_bias ? E::kBias : E::kNone; break;
    case GemmActivation::kRelu: d.epilogue = c.has_bias ? E::kBiasRelu : E::kRelu; break;
    case GemmActivation::kGelu: d.epilogue = c.has_bias ? E::kBiasGelu : E::kGelu; break;
  }
  if (c.has_bias) d.bias_dtype = gemm.operand(c.bias_operand())->shape().element_type();
  return d;
}

StatusOr<libs::ConvDesc> ConvDescForCall(const HloInstruction& conv) {
  KILN_ASSIGN_OR_RETURN(ConvConfig c, GetConvConfig(conv));
  libs::ConvDesc d;
  d.kind = libs::ConvKind::kForward;
  d.dtype = conv.shape().element_type();
  d.precision = c.precision;
  const libs::ConvLayout layout =
      c.channels_last ? libs::ConvLayout::kChannelsLast : libs::ConvLayout::kChannelsFirst;
  d.input_layout = d.filter_layout = d.output_layout = layout;
  d.batch = c.batch;
  d.input_features = c.input_features;
  d.output_features = c.output_features;
  d.input_spatial = c.input_spatial;
  d.filter_spatial = c.filter_spatial;
  d.output_spatial = c.output_spatial;
  d.strides = c.strides;
  d.padding_low = c.padding_low;
  d.padding_high = c.padding_high;
  d.dilations = c.dilations;
  d.feature_group_count = c.feature_group_count;
  d.alpha = c.alpha;
  d.has_bias = c.has_bias;
  d.side_input_scale = c.side_input_scale;
  d.activation = c.relu ? libs::ConvActivation::kRelu : libs::ConvActivation::kNone;
  return d;
}

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
  backends.push_back(std::make_unique<CudnnBackend>(
      cuda, options, StrCat("cudnn ", LibraryVersion(target, "cudnn"))));
  return backends;
}

Status RegisterCudaAutotuneFactory(autotune::BackendFactoryRegistry& registry) {
  return registry.Register("cuda", CreateCudaBackends);
}

}  // namespace kiln::cuda
