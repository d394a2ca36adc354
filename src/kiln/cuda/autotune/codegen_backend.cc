#include "kiln/cuda/autotune/codegen_backend.h"

#include "kiln/base/strings.h"
#include "kiln/codegen/emitters.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/module.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda {

namespace {

using autotune::Candidate;
using autotune::CandidateBuffers;
using autotune::Config;

// Fusions whose operands and results are arrays or tuples of arrays (the kernel's parameters
// are one pointer per operand and per result leaf).
bool Takes(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kFusion) return false;
  for (const HloInstruction* o : instr.operands()) {
    if (!o->shape().IsArray()) return false;
  }
  return true;
}

class KernelCandidate : public Candidate {
 public:
  KernelCandidate(codegen::KernelSpec spec, std::unique_ptr<runtime::Module> module,
                  std::vector<runtime::Kernel*> kernels)
      : spec_(std::move(spec)), module_(std::move(module)), kernels_(std::move(kernels)) {}

  uint64_t scratch_bytes() const override { return static_cast<uint64_t>(spec_.scratch_bytes); }

  Status Launch(runtime::Stream& stream, const CandidateBuffers& b) override {
    // As KernelThunk: an in-place output first receives its operand's value and stands in for
    // the operand.
    std::vector<int64_t> in_place_output(b.inputs.size(), -1);
    for (const auto& [out, op] : spec_.in_place) {
      if (op < 0 || op >= static_cast<int64_t>(b.inputs.size()) || out < 0 ||
          out >= static_cast<int64_t>(b.outputs.size())) {
        return Internal("kernel ", spec_.name, ": in-place pair out of range");
      }
      in_place_output[op] = out;
      const uint64_t bytes = std::min(b.outputs[out].size, b.inputs[op].size);
      if (bytes > 0) KILN_RETURN_IF_ERROR(stream.MemcpyDeviceToDevice(b.outputs[out], b.inputs[op], bytes));
    }
    runtime::KernelArgs args;
    for (const codegen::KernelParam& p : spec_.params) {
      switch (p.kind) {
        case codegen::KernelParam::Kind::kOperand: {
          if (p.index < 0 || p.index >= static_cast<int64_t>(b.inputs.size())) {
            return Internal("kernel ", spec_.name, ": parameter ", p.name, " names operand ", p.index);
          }
          const int64_t out = in_place_output[p.index];
          args.Add(out >= 0 ? b.outputs[out].ptr : b.inputs[p.index].ptr);
          break;
        }
        case codegen::KernelParam::Kind::kOutput:
          if (p.index < 0 || p.index >= static_cast<int64_t>(b.outputs.size())) {
            return Internal("kernel ", spec_.name, ": parameter ", p.name, " names output ", p.index);
          }
          args.Add(b.outputs[p.index].ptr);
          break;
        case codegen::KernelParam::Kind::kScratch:
          args.Add(b.scratch.ptr);
          break;
        case codegen::KernelParam::Kind::kScalar:
          switch (p.scalar_type) {
            case PrimitiveType::kS32: args.Add(static_cast<int32_t>(p.scalar_value)); break;
            case PrimitiveType::kU32: args.Add(static_cast<uint32_t>(p.scalar_value)); break;
            case PrimitiveType::kU64: args.Add(static_cast<uint64_t>(p.scalar_value)); break;
            default: args.Add(static_cast<int64_t>(p.scalar_value)); break;
          }
          break;
      }
    }
    for (size_t i = 0; i < kernels_.size(); ++i) {
      KILN_RETURN_IF_ERROR(stream.Launch(*kernels_[i], spec_.launches[i].dims, args));
    }
    return OkStatus();
  }

 private:
  codegen::KernelSpec spec_;
  std::unique_ptr<runtime::Module> module_;
  std::vector<runtime::Kernel*> kernels_;
};

class CodegenBackend : public autotune::Backend {
 public:
  CodegenBackend(codegen::DeviceSpec spec, runtime::Device* device,
                 std::shared_ptr<NvrtcCompiler> nvrtc, autotune::BackendOptions options)
      : spec_(std::move(spec)), device_(device), nvrtc_(std::move(nvrtc)), options_(options) {}

  std::string_view name() const override { return kCodegenBackend; }
  // The emitters decide what a config does; the architecture is part of the device key.
  std::string version() const override { return "kiln-codegen 1"; }
  bool CanProduceWrongResults() const override { return true; }
  Status CheckConfig(const HloInstruction&, const Config& config) override {
    return KernelConfigFromConfig(config).status();
  }

  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!Takes(instr)) return std::vector<Config>{};
    StatusOr<std::vector<codegen::KernelConfig>> configs = codegen::CandidateConfigs(instr, spec_);
    if (!configs.ok()) return std::vector<Config>{};
    std::vector<Config> out;
    for (const codegen::KernelConfig& c : *configs) out.push_back(KernelConfigToConfig(c));
    if (options_.deterministic) out.resize(std::min<size_t>(out.size(), 1));
    return out;
  }

  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    KILN_ASSIGN_OR_RETURN(codegen::KernelConfig c, codegen::DefaultConfig(instr, spec_));
    return KernelConfigToConfig(c);
  }

  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                               const Config& config) override {
    if (device_ == nullptr) return FailedPrecondition("codegen: no device to compile for");
    if (!nvrtc_) return FailedPrecondition("codegen: no NVRTC");
    KILN_ASSIGN_OR_RETURN(codegen::KernelConfig kc, KernelConfigFromConfig(config));
    KILN_ASSIGN_OR_RETURN(codegen::KernelSpec spec, codegen::EmitKernel(instr, spec_, kc));
    NvrtcRequest r;
    r.source = spec.source;
    r.headers = spec.headers;
    r.arch = spec_.arch();
    r.program_name = StrCat(spec.name, ".cu");
    KILN_ASSIGN_OR_RETURN(NvrtcProgram program, nvrtc_->Compile(r));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Module> module,
                          device_->LoadModule(runtime::ModuleSpec::FromCubin(program.cubin, spec.name)));
    std::vector<runtime::Kernel*> kernels;
    for (const codegen::KernelLaunch& l : spec.launches) {
      KILN_ASSIGN_OR_RETURN(runtime::Kernel * k, module->GetKernel(l.entry));
      if (l.dims.shared_memory_bytes > 48 * 1024) {
        KILN_RETURN_IF_ERROR(k->SetMaxDynamicSharedMemory(l.dims.shared_memory_bytes));
      }
      kernels.push_back(k);
    }
    return std::unique_ptr<Candidate>(
        new KernelCandidate(std::move(spec), std::move(module), std::move(kernels)));
  }

  Status Apply(HloInstruction& instr, const Config& config) override {
    KILN_RETURN_IF_ERROR(KernelConfigFromConfig(config).status());
    return autotune::WriteConfigToBackendConfig(instr, config);
  }

 private:
  codegen::DeviceSpec spec_;
  runtime::Device* device_;
  std::shared_ptr<NvrtcCompiler> nvrtc_;
  autotune::BackendOptions options_;
};

}  // namespace

std::unique_ptr<autotune::Backend> CreateCodegenBackend(codegen::DeviceSpec spec,
                                                        runtime::Device* device,
                                                        std::shared_ptr<NvrtcCompiler> nvrtc,
                                                        const autotune::BackendOptions& options) {
  return std::make_unique<CodegenBackend>(std::move(spec), device, std::move(nvrtc), options);
}

}  // namespace kiln::cuda
