#include "kiln/cuda/compiler/gpu_autotune.h"

#include "kiln/base/strings.h"

namespace kiln::cuda {

autotune::Config KernelConfigToConfig(const codegen::KernelConfig& c) {
  return autotune::Config(std::string(kCodegenBackend), {{"config", c.ToString()}});
}

StatusOr<codegen::KernelConfig> KernelConfigFromConfig(const autotune::Config& config) {
  const nlohmann::json& p = config.params();
  if (config.backend() != kCodegenBackend || !p.is_object() || !p.contains("config") ||
      !p["config"].is_string()) {
    return InvalidArgument("malformed codegen config ", config.ToString());
  }
  return codegen::KernelConfig::Parse(p["config"].get<std::string>());
}

StatusOr<codegen::KernelConfig> TunedKernelConfig(const HloInstruction& instr) {
  if (instr.backend_config().empty()) return codegen::KernelConfig{};
  StatusOr<autotune::Config> config = autotune::ReadConfigFromBackendConfig(instr);
  if (!config.ok() || config->backend() != kCodegenBackend) return codegen::KernelConfig{};
  return KernelConfigFromConfig(*config);
}

StatusOr<bool> GpuAutotunePass::Run(HloModule& module) {
  if (!options_.enabled()) return false;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<autotune::Autotuner> tuner,
                        autotune::Autotuner::Create(options_.factory, options_.target,
                                                    options_.device, options_.cache,
                                                    options_.options));
  KILN_ASSIGN_OR_RETURN(autotune::AutotuneReport report, tuner->Run(module));
  bool changed = false;
  for (const autotune::InstructionReport& g : report.groups) {
    changed |= g.chosen.has_value() && g.source != autotune::ChoiceSource::kMissing;
  }
  if (report_ != nullptr) *report_ = std::move(report);
  return changed;
}

}  // namespace kiln::cuda
