#include "kiln/autotune/testing/fake_backend.h"

#include <chrono>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/runtime/host/host_kernel.h"

namespace kiln::autotune::testing {

namespace {

bool IsF32Array(const Shape& s) { return s.IsArray() && s.element_type() == PrimitiveType::kF32; }

void Spin(int us) {
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

class FakeCandidate : public Candidate {
 public:
  FakeCandidate(FakeConfig config, std::unique_ptr<runtime::Module> module,
                runtime::Kernel* kernel, std::shared_ptr<std::atomic<int>> launches)
      : config_(config), module_(std::move(module)), kernel_(kernel), launches_(std::move(launches)) {}

  uint64_t scratch_bytes() const override { return config_.scratch_bytes; }

  Status Launch(runtime::Stream& stream, const CandidateBuffers& buffers) override {
    ++*launches_;
    if (config_.behavior == FakeBehavior::kEnqueueError) {
      return Internal("fake enqueue failure of config ", config_.id);
    }
    runtime::KernelArgs args;
    args.Add(static_cast<uint64_t>(buffers.inputs.size()));
    for (const runtime::DeviceMemory& in : buffers.inputs) args.Add(in);
    args.Add(buffers.outputs[0]);
    args.Add(static_cast<uint64_t>(buffers.outputs[0].size / sizeof(float)));
    args.Add(buffers.scratch);
    args.Add(static_cast<uint64_t>(buffers.scratch.size));
    return stream.Launch(*kernel_, runtime::LaunchDims{}, args);
  }

 private:
  FakeConfig config_;
  std::unique_ptr<runtime::Module> module_;
  runtime::Kernel* kernel_;
  std::shared_ptr<std::atomic<int>> launches_;
};

}  // namespace

FakeBackend::FakeBackend(std::string name, bool can_be_wrong, runtime::Device* device,
                         std::vector<FakeConfig> configs, int default_index, std::string version)
    : name_(std::move(name)),
      can_be_wrong_(can_be_wrong),
      device_(device),
      configs_(std::move(configs)),
      default_index_(default_index),
      version_(std::move(version)) {}

Config FakeBackend::MakeConfig(std::string backend, int id) {
  return Config(std::move(backend), nlohmann::json{{"id", id}});
}

StatusOr<std::vector<Config>> FakeBackend::SupportedConfigs(const HloInstruction& instr) {
  supported_calls_->fetch_add(1);
  if (!IsF32Array(instr.shape()) || instr.operand_count() == 0) return std::vector<Config>{};
  for (const HloInstruction* op : instr.operands()) {
    if (!IsF32Array(op->shape()) || op->shape().num_elements() != instr.shape().num_elements()) {
      return std::vector<Config>{};
    }
  }
  std::vector<Config> out;
  for (const FakeConfig& c : configs_) out.push_back(MakeConfig(name_, c.id));
  return out;
}

Status FakeBackend::CheckConfig(const HloInstruction&, const Config& config) {
  const nlohmann::json& p = config.params();
  if (config.backend() != name_ || !p.is_object() || !p.contains("id") || !p["id"].is_number_integer())
    return InvalidArgument("not a ", name_, " config: ", config.ToString());
  for (const FakeConfig& c : configs_)
    if (c.id == p["id"].get<int>()) return OkStatus();
  return InvalidArgument(name_, " has no config ", config.ToString());
}

StatusOr<Config> FakeBackend::DefaultConfig(const HloInstruction&) {
  if (configs_.empty()) return NotFound(name_, " has no configs");
  return MakeConfig(name_, configs_[default_index_].id);
}

StatusOr<std::unique_ptr<Candidate>> FakeBackend::Compile(const HloInstruction&,
                                                          const Config& config) {
  ++compile_calls_;
  if (device_ == nullptr) return FailedPrecondition(name_, ": no device");
  int id = config.params().value("id", -1);
  const FakeConfig* found = nullptr;
  for (const FakeConfig& c : configs_) {
    if (c.id == id) found = &c;
  }
  if (found == nullptr) return InvalidArgument(name_, " has no config ", id);
  const FakeConfig fc = *found;
  if (fc.behavior == FakeBehavior::kCompileError) {
    return Internal("fake compile failure of ", name_, " config ", id, "\nsecond line");
  }
  auto library = std::make_shared<runtime::HostKernelLibrary>();
  KILN_RETURN_IF_ERROR(library->Add("fake", [fc](const runtime::HostKernelContext& ctx) -> Status {
    const runtime::KernelArgs& a = ctx.args;
    uint64_t inputs = a.Get<uint64_t>(0);
    auto* out = a.Get<float*>(1 + inputs);
    uint64_t n = a.Get<uint64_t>(2 + inputs);
    auto* scratch = a.Get<char*>(3 + inputs);
    uint64_t scratch_bytes = a.Get<uint64_t>(4 + inputs);
    Spin(fc.busy_us);
    if (fc.behavior == FakeBehavior::kKernelError) {
      return Internal("fake kernel failure of config ", fc.id);
    }
    if (scratch != nullptr) std::memset(scratch, 0, scratch_bytes);
    uint64_t written = fc.behavior == FakeBehavior::kPartial && n > 0 ? n - 1 : n;
    for (uint64_t i = 0; i < written; ++i) {
      float sum = 0;
      for (uint64_t k = 0; k < inputs; ++k) sum += a.Get<const float*>(1 + k)[i];
      out[i] = fc.behavior == FakeBehavior::kWrong ? sum + 1 : sum;
    }
    if (fc.behavior == FakeBehavior::kRedzoneWrite) out[n + 2] = 7.0f;
    if (fc.behavior == FakeBehavior::kFrontWrite) out[-1] = 7.0f;
    return OkStatus();
  }));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Module> module,
                        device_->LoadModule(runtime::ModuleSpec::FromHostLibrary(library, name_)));
  KILN_ASSIGN_OR_RETURN(runtime::Kernel * kernel, module->GetKernel("fake"));
  return std::unique_ptr<Candidate>(
      new FakeCandidate(fc, std::move(module), kernel, launch_calls_));
}

Status FakeBackend::Apply(HloInstruction& instr, const Config& config) {
  return WriteConfigToBackendConfig(instr, config);
}

}  // namespace kiln::autotune::testing
