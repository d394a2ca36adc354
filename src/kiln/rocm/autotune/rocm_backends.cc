#include "kiln/rocm/autotune/rocm_backends.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>

#include "kiln/base/strings.h"
#include "kiln/codegen/emitters.h"
#include "kiln/hlo/computation.h"
#include "kiln/rocm/vendor_apis.h"

namespace kiln::rocm {

namespace {

using autotune::Config;

Status NeedsDevice(std::string_view backend, runtime::Device* device, const Status& library) {
  if (device == nullptr) {
    return FailedPrecondition(backend, ": measuring needs an AMD GPU, and none is available (ROCm is built and "
                              "compile-tested, not executed)");
  }
  if (!library.ok()) return FailedPrecondition(backend, ": ", library.message());
  return Unimplemented(backend, ": candidates on a device are not implemented (no AMD GPU to develop them on)");
}

template <typename Api>
std::string LibraryVersion(std::string_view backend) {
  StatusOr<std::shared_ptr<const Api>> api = Api::Default();
  return StrCat(backend, " ", api.ok() ? (*api)->Version() : std::string("absent"));
}

template <typename Api>
Status LibraryStatus() {
  return Api::Default().status();
}

bool IsLibraryDot(const HloInstruction& i) {
  if (i.opcode() != HloOpcode::kDot) return false;
  const PrimitiveType t = i.operand(0)->shape().element_type();
  return (t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF32 || t == PrimitiveType::kF64 ||
          t == PrimitiveType::kC64 || t == PrimitiveType::kC128) &&
         t == i.operand(1)->shape().element_type();
}

// Config-space checks (Backend::CheckConfig: a cache entry is validated before it is applied).
Status CheckFields(const Config& config, std::initializer_list<const char*> fields) {
  const nlohmann::json& p = config.params();
  if (!p.is_object()) return InvalidArgument(config.backend(), ": config params are not an object: ", config.ToString());
  for (auto it = p.begin(); it != p.end(); ++it)
    if (std::find_if(fields.begin(), fields.end(), [&](const char* f) { return it.key() == f; }) == fields.end())
      return InvalidArgument(config.backend(), ": unknown config field \"", it.key(), "\" in ", config.ToString());
  for (const char* f : fields)
    if (!p.contains(f)) return InvalidArgument(config.backend(), ": config without \"", f, "\": ", config.ToString());
  return OkStatus();
}

Status CheckIndex(const Config& config, const char* field, int64_t limit = INT32_MAX) {
  const nlohmann::json& v = config.params()[field];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > limit)
    return InvalidArgument(config.backend(), ": \"", field, "\" must be an integer in [0, ", limit, "]: ", config.ToString());
  return OkStatus();
}

// A library backend: configs listed from fixed options without a device.
class LibraryBackend : public autotune::Backend {
 public:
  LibraryBackend(std::string name, std::string version, runtime::Device* device, Status library,
                 autotune::BackendOptions options)
      : name_(std::move(name)), version_(std::move(version)), device_(device), library_(std::move(library)),
        options_(options) {}
  std::string_view name() const override { return name_; }
  std::string version() const override { return version_; }
  StatusOr<std::unique_ptr<autotune::Candidate>> Compile(const HloInstruction&, const Config&) override {
    return NeedsDevice(name_, device_, library_);
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return autotune::WriteConfigToBackendConfig(instr, config);
  }

 protected:
  std::string name_, version_;
  runtime::Device* device_;
  Status library_;
  autotune::BackendOptions options_;
};

class RocblasBackend final : public LibraryBackend {
 public:
  using LibraryBackend::LibraryBackend;
  bool CanProduceWrongResults() const override { return false; }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsLibraryDot(instr)) return std::vector<Config>{};
    // Without a device (and a handle), only the default solution is known.
    if (device_ == nullptr || !library_.ok()) return std::vector<Config>{Config(name_, {{"solution", 0}})};
    return NeedsDevice(name_, device_, library_);
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    if (!IsLibraryDot(instr)) return InvalidArgument("rocblas: %", instr.name(), " is not a floating-point dot");
    return Config(name_, {{"solution", 0}});
  }
  // {"solution": N}, N >= 0 (0: the library's default; others are rocblas_gemm_ex_get_solutions'
  // indices, which only a device lists: any non-negative one is accepted offline).
  Status CheckConfig(const HloInstruction& instr, const Config& config) override {
    KILN_RETURN_IF_ERROR(autotune::Backend::CheckConfig(instr, config));
    if (!IsLibraryDot(instr)) return InvalidArgument("rocblas: %", instr.name(), " is not a floating-point dot");
    KILN_RETURN_IF_ERROR(CheckFields(config, {"solution"}));
    return CheckIndex(config, "solution");
  }
};

class HipblasLtBackend final : public LibraryBackend {
 public:
  using LibraryBackend::LibraryBackend;
  bool CanProduceWrongResults() const override { return false; }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsLibraryDot(instr)) return std::vector<Config>{};
    // The heuristic needs a handle on a device: offline it lists nothing (a cache entry of its
    // own is still applied, after CheckConfig).
    if (device_ == nullptr) return std::vector<Config>{};
    return NeedsDevice(name_, device_, library_);
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    if (!IsLibraryDot(instr)) return InvalidArgument("hipblaslt: %", instr.name(), " is not a floating-point dot");
    return Config(name_, {{"index", 0}, {"heuristic", options_.exhaustive ? 128 : 16}});
  }
  // {"index": i, "heuristic": n}: n algorithms requested (1..128), i < n.
  Status CheckConfig(const HloInstruction& instr, const Config& config) override {
    KILN_RETURN_IF_ERROR(autotune::Backend::CheckConfig(instr, config));
    if (!IsLibraryDot(instr)) return InvalidArgument("hipblaslt: %", instr.name(), " is not a floating-point dot");
    KILN_RETURN_IF_ERROR(CheckFields(config, {"index", "heuristic"}));
    KILN_RETURN_IF_ERROR(CheckIndex(config, "heuristic", 128));
    const int64_t n = config.params()["heuristic"].get<int64_t>();
    if (n < 1) return InvalidArgument("hipblaslt: \"heuristic\" must be at least 1: ", config.ToString());
    return CheckIndex(config, "index", n - 1);
  }
};

class MiopenBackend final : public LibraryBackend {
 public:
  using LibraryBackend::LibraryBackend;
  bool CanProduceWrongResults() const override { return false; }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (instr.opcode() != HloOpcode::kConvolution) return std::vector<Config>{};
    // Find and immediate mode ask the device; offline only the default is known.
    if (device_ == nullptr || !library_.ok()) return std::vector<Config>{*DefaultConfig(instr)};
    return NeedsDevice(name_, device_, library_);
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    if (instr.opcode() != HloOpcode::kConvolution) return InvalidArgument("miopen: %", instr.name(), " is not a convolution");
    return Config(name_, {{"mode", "immediate"}, {"solution", 0}, {"fallback", true}});
  }
  // {"mode": "find" | "immediate", "solution": id >= 0, "fallback": bool}.
  Status CheckConfig(const HloInstruction& instr, const Config& config) override {
    KILN_RETURN_IF_ERROR(autotune::Backend::CheckConfig(instr, config));
    if (instr.opcode() != HloOpcode::kConvolution) return InvalidArgument("miopen: %", instr.name(), " is not a convolution");
    KILN_RETURN_IF_ERROR(CheckFields(config, {"mode", "solution", "fallback"}));
    const nlohmann::json& p = config.params();
    if (!p["mode"].is_string() || (p["mode"] != "find" && p["mode"] != "immediate"))
      return InvalidArgument("miopen: \"mode\" must be \"find\" or \"immediate\": ", config.ToString());
    if (!p["fallback"].is_boolean()) return InvalidArgument("miopen: \"fallback\" must be a boolean: ", config.ToString());
    return CheckIndex(config, "solution");
  }
};

class CodegenBackend final : public autotune::Backend {
 public:
  CodegenBackend(codegen::DeviceSpec spec, runtime::Device* device, std::string version)
      : spec_(std::move(spec)), device_(device), version_(std::move(version)) {}
  std::string_view name() const override { return "codegen"; }
  std::string version() const override { return version_; }
  bool CanProduceWrongResults() const override { return true; }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (instr.opcode() != HloOpcode::kFusion) return std::vector<Config>{};
    KILN_ASSIGN_OR_RETURN(std::vector<codegen::KernelConfig> configs, codegen::CandidateConfigs(instr, spec_));
    std::vector<Config> out;
    for (const codegen::KernelConfig& c : configs) out.push_back(Config("codegen", {{"config", c.ToString()}}));
    return out;
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    KILN_ASSIGN_OR_RETURN(codegen::KernelConfig c, codegen::DefaultConfig(instr, spec_));
    return Config("codegen", {{"config", c.ToString()}});
  }
  Status CheckConfig(const HloInstruction& instr, const Config& config) override {
    KILN_RETURN_IF_ERROR(autotune::Backend::CheckConfig(instr, config));
    if (!config.params().contains("config") || !config.params()["config"].is_string()) {
      return InvalidArgument("codegen config without \"config\": ", config.ToString());
    }
    KILN_ASSIGN_OR_RETURN(codegen::KernelConfig c, codegen::KernelConfig::Parse(config.params()["config"].get<std::string>()));
    return codegen::EmitKernel(instr, spec_, c).status();
  }
  StatusOr<std::unique_ptr<autotune::Candidate>> Compile(const HloInstruction&, const Config&) override {
    return NeedsDevice("codegen", device_, OkStatus());
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return autotune::WriteConfigToBackendConfig(instr, config);
  }

 private:
  codegen::DeviceSpec spec_;
  runtime::Device* device_;
  std::string version_;
};

// A dot whose only user is an elementwise fusion (or op): run as GEMM + epilogue kernel.
class FissionBackend final : public autotune::Backend {
 public:
  explicit FissionBackend(runtime::Device* device, std::string version) : device_(device), version_(std::move(version)) {}
  std::string_view name() const override { return "fission"; }
  std::string version() const override { return version_; }
  bool CanProduceWrongResults() const override { return true; }
  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!IsLibraryDot(instr) || instr.users().size() != 1) return std::vector<Config>{};
    return std::vector<Config>{Config("fission", {{"split", true}})};
  }
  StatusOr<Config> DefaultConfig(const HloInstruction&) override { return Config("fission", {{"split", true}}); }
  Status CheckConfig(const HloInstruction& instr, const Config& config) override {
    KILN_RETURN_IF_ERROR(autotune::Backend::CheckConfig(instr, config));
    if (!IsLibraryDot(instr) || instr.users().size() != 1)
      return InvalidArgument("fission: %", instr.name(), " is not a dot with one consumer");
    KILN_RETURN_IF_ERROR(CheckFields(config, {"split"}));
    if (config.params()["split"] != true) return InvalidArgument("fission: \"split\" must be true: ", config.ToString());
    return OkStatus();
  }
  StatusOr<std::unique_ptr<autotune::Candidate>> Compile(const HloInstruction&, const Config&) override {
    return NeedsDevice("fission", device_, OkStatus());
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return autotune::WriteConfigToBackendConfig(instr, config);
  }

 private:
  runtime::Device* device_;
  std::string version_;
};

}  // namespace

const std::vector<std::string>& RocmBackendNames() {
  static const auto* names = new std::vector<std::string>{"rocblas", "hipblaslt", "miopen", "codegen", "fission"};
  return *names;
}

StatusOr<autotune::BackendList> CreateRocmBackends(const runtime::DeviceDescription& target, runtime::Device* device,
                                                   const autotune::BackendOptions& options,
                                                   const RocmBackendsOptions& rocm) {
  for (const std::string& a : rocm.allowed)
    if (std::find(RocmBackendNames().begin(), RocmBackendNames().end(), a) == RocmBackendNames().end()) {
      return InvalidArgument("rocm autotuning: unknown backend '", a, "' (known: ", StrJoin(RocmBackendNames(), ", "), ")");
    }
  auto allowed = [&](std::string_view n) { return rocm.allowed.empty() || rocm.allowed.count(std::string(n)) != 0; };
  codegen::DeviceSpec spec = codegen::DeviceSpec::FromDescription(target);
  if (!spec.is_hip()) return InvalidArgument("rocm autotuning: '", target.name, "' is not an AMD GPU description");
  // The kernels' compiler is part of the codegen/fission versions: a hipRTC or clang upgrade
  // changes the code.
  StatusOr<std::shared_ptr<const HiprtcApi>> rtc = HiprtcApi::Default();
  const std::string kernels = StrCat(spec.arch(), ", hiprtc ", rtc.ok() ? (*rtc)->Version() : std::string("absent"));
  autotune::BackendList out;
  if (allowed("rocblas"))
    out.push_back(std::make_unique<RocblasBackend>("rocblas", LibraryVersion<RocblasApi>("rocblas"), device,
                                                   LibraryStatus<RocblasApi>(), options));
  if (allowed("hipblaslt"))
    out.push_back(std::make_unique<HipblasLtBackend>("hipblaslt", LibraryVersion<HipblasLtApi>("hipblaslt"), device,
                                                     LibraryStatus<HipblasLtApi>(), options));
  if (allowed("miopen"))
    out.push_back(std::make_unique<MiopenBackend>("miopen", LibraryVersion<MiopenApi>("miopen"), device,
                                                  LibraryStatus<MiopenApi>(), options));
  if (allowed("codegen")) out.push_back(std::make_unique<CodegenBackend>(spec, device, StrCat("codegen ", kernels)));
  if (allowed("fission")) out.push_back(std::make_unique<FissionBackend>(device, StrCat("fission ", kernels)));
  return out;
}

autotune::BackendFactory RocmAutotuneFactory(RocmBackendsOptions rocm) {
  return [rocm](const runtime::DeviceDescription& target, runtime::Device* device,
                const autotune::BackendOptions& options) { return CreateRocmBackends(target, device, options, rocm); };
}

Status RegisterRocmAutotuneFactory(autotune::BackendFactoryRegistry& registry) {
  return registry.Register("rocm", RocmAutotuneFactory());
}

}  // namespace kiln::rocm
