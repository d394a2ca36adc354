#include "kiln/cuda/autotune/fission_backend.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_set>

#include "kiln/base/strings.h"
#include "kiln/codegen/emitters.h"
#include "kiln/cuda/compiler/epilogue_matching.h"
#include "kiln/cuda/compiler/gemm_config.h"
#include "kiln/cuda/compiler/gemm_rewriter.h"
#include "kiln/cuda/compiler/library_calls.h"
#include "kiln/cuda/cuda_device.h"
#include "kiln/cuda/libs/gemm.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/module.h"
#include "kiln/passes/fusion_utils.h"
#include "kiln/passes/hlo_editor.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/module.h"
#include "kiln/runtime/stream.h"

namespace kiln::cuda {

namespace {

using autotune::Candidate;
using autotune::CandidateBuffers;
using autotune::Config;

bool EpilogueOutput(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

uint64_t RoundUp(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

// The epilogue's inputs, all in the computation being edited: the plain GEMM's f32 value and
// (when the config has them) c and bias.
struct EpilogueInputs {
  HloInstruction* t = nullptr;
  HloInstruction* c = nullptr;
  HloInstruction* bias = nullptr;
};

// Adds convert<T>(act(t + beta * f32(c) + broadcast(f32(bias)))) as unfused instructions of
// `ed`'s computation, shaped `out` (the call's shape) at the end; returns the last one. The
// order of the additions is the fused call's (gemm_config.h), all of it in f32.
StatusOr<HloInstruction*> BuildEpilogue(HloEditor& ed, const GemmConfig& g, const Shape& out,
                                        const EpilogueInputs& in, const HloInstruction* like) {
  const PrimitiveType f32 = PrimitiveType::kF32;
  // Work in the call's own dimensions when its last one is n (the bias then broadcasts over
  // it); otherwise in [batch * m, n], reshaped back at the end.
  std::vector<int64_t> dims = out.dimensions();
  if (dims.empty() || dims.back() != g.n) dims = {g.batch * g.m, g.n};
  const Shape work = ArrayShapeLike(f32, dims, out);
  auto scalar = [&](double x) { return ed.BroadcastScalar(ed.ScalarConstant(f32, x, like), work, like); };
  auto to_f32 = [&](HloInstruction* x) -> StatusOr<HloInstruction*> {
    if (x->shape().element_type() == f32) return x;
    return ed.Convert(x, f32, nullptr, like);
  };
  KILN_ASSIGN_OR_RETURN(HloInstruction * v, ed.Reshape(in.t, work, like));
  if (g.beta != 0) {
    if (in.c == nullptr) return Internal("fission: beta != 0 without c");
    KILN_ASSIGN_OR_RETURN(HloInstruction * c,
                          ed.Reshape(in.c, ArrayShapeLike(in.c->shape().element_type(), dims, out), like));
    KILN_ASSIGN_OR_RETURN(c, to_f32(c));
    if (g.beta != 1) {
      KILN_ASSIGN_OR_RETURN(HloInstruction * s, scalar(g.beta));
      KILN_ASSIGN_OR_RETURN(c, ed.Binary(HloOpcode::kMultiply, c, s, nullptr, like));
    }
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kAdd, v, c, nullptr, like));
  }
  if (g.has_bias) {
    if (in.bias == nullptr) return Internal("fission: a bias epilogue without a bias");
    KILN_ASSIGN_OR_RETURN(
        HloInstruction * b,
        ed.Reshape(in.bias, ArrayShapeLike(in.bias->shape().element_type(), {g.n}, out), like));
    KILN_ASSIGN_OR_RETURN(b, to_f32(b));
    KILN_ASSIGN_OR_RETURN(b, ed.Broadcast(b, work, {static_cast<int64_t>(dims.size()) - 1}, like));
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kAdd, v, b, nullptr, like));
  }
  if (g.activation == GemmActivation::kRelu) {
    KILN_ASSIGN_OR_RETURN(HloInstruction * zero, scalar(0));
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kMaximum, v, zero, nullptr, like));
  } else if (g.activation == GemmActivation::kGelu) {
    // 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), as cuBLASLt's GELU epilogue.
    KILN_ASSIGN_OR_RETURN(HloInstruction * v3, ed.Binary(HloOpcode::kMultiply, v, v, nullptr, like));
    KILN_ASSIGN_OR_RETURN(v3, ed.Binary(HloOpcode::kMultiply, v3, v, nullptr, like));
    KILN_ASSIGN_OR_RETURN(HloInstruction * k1, scalar(0.044715));
    KILN_ASSIGN_OR_RETURN(v3, ed.Binary(HloOpcode::kMultiply, v3, k1, nullptr, like));
    KILN_ASSIGN_OR_RETURN(HloInstruction * inner, ed.Binary(HloOpcode::kAdd, v, v3, nullptr, like));
    KILN_ASSIGN_OR_RETURN(HloInstruction * k2, scalar(0.7978845608028654));
    KILN_ASSIGN_OR_RETURN(inner, ed.Binary(HloOpcode::kMultiply, inner, k2, nullptr, like));
    KILN_ASSIGN_OR_RETURN(HloInstruction * th, ed.Unary(HloOpcode::kTanh, inner, nullptr, like));
    KILN_ASSIGN_OR_RETURN(HloInstruction * one, scalar(1));
    KILN_ASSIGN_OR_RETURN(th, ed.Binary(HloOpcode::kAdd, th, one, nullptr, like));
    KILN_ASSIGN_OR_RETURN(HloInstruction * half, scalar(0.5));
    KILN_ASSIGN_OR_RETURN(th, ed.Binary(HloOpcode::kMultiply, th, half, nullptr, like));
    KILN_ASSIGN_OR_RETURN(v, ed.Binary(HloOpcode::kMultiply, v, th, nullptr, like));
  }
  if (out.element_type() != f32) {
    KILN_ASSIGN_OR_RETURN(v, ed.Convert(v, out.element_type(), nullptr, like));
  }
  KILN_ASSIGN_OR_RETURN(v, ed.Reshape(v, out, like));
  return v;
}

// Builds the epilogue of `g` in `computation` on `in` and fuses everything it added into one
// kLoop fusion, which it returns.
StatusOr<HloInstruction*> BuildEpilogueFusion(HloComputation* computation, const GemmConfig& g,
                                              const Shape& out, const EpilogueInputs& in,
                                              const HloInstruction* like, std::string name) {
  std::unordered_set<const HloInstruction*> before;
  for (const HloInstruction* i : computation->instructions()) before.insert(i);
  HloEditor ed(computation);
  KILN_ASSIGN_OR_RETURN(HloInstruction * value, BuildEpilogue(ed, g, out, in, like));
  FuseSpec spec;
  for (HloInstruction* i : computation->instructions())
    if (!before.count(i)) spec.members.push_back(i);
  if (spec.members.empty() || value == in.t) {
    return Internal("fission: the epilogue of ", like ? like->name() : "a GEMM", " computes nothing");
  }
  spec.kind = FusionKind::kLoop;
  spec.name = std::move(name);
  return FuseInstructions(spec);
}

// The plain GEMM config: the call's without c, bias and activation.
GemmConfig PlainConfig(GemmConfig g) {
  g.beta = 0;
  g.has_bias = false;
  g.activation = GemmActivation::kNone;
  return g;
}

// A fission config's algorithm as the `cublaslt` config the GEMM thunk reads.
StatusOr<Config> AsCublasLtConfig(const Config& config) {
  if (config.backend() != kFissionBackend && config.backend() != kCublasLtBackend) {
    return InvalidArgument("not a fission config: ", config.ToString());
  }
  Config lt(std::string(kCublasLtBackend), config.params());
  libs::GemmDesc any;
  KILN_RETURN_IF_ERROR(GemmAlgorithmFromConfig(lt, any).status());  // well-formed
  return lt;
}

// ---- the candidate ------------------------------------------------------------------------

// The epilogue kernel of one GEMM shape, compiled and loaded once, shared by its candidates.
struct EpilogueKernel {
  codegen::KernelSpec spec;
  // Per fusion operand: 0 the intermediate t, 1 c, 2 bias.
  std::vector<int> operand_role;
  std::unique_ptr<runtime::Module> module;
  std::vector<runtime::Kernel*> kernels;
};

class FissionCandidate : public Candidate {
 public:
  FissionCandidate(std::unique_ptr<libs::GemmPlan> plan, libs::GemmAlgorithm algorithm, GemmConfig config,
                   uint64_t intermediate_bytes, std::shared_ptr<const EpilogueKernel> kernel)
      : plan_(std::move(plan)),
        algorithm_(std::move(algorithm)),
        config_(config),
        workspace_bytes_(RoundUp(algorithm_.workspace_bytes, 256)),
        intermediate_bytes_(intermediate_bytes),
        kernel_(std::move(kernel)) {}

  // The GEMM's workspace, then the f32 intermediate.
  uint64_t scratch_bytes() const override { return workspace_bytes_ + intermediate_bytes_; }

  Status Launch(runtime::Stream& stream, const CandidateBuffers& b) override {
    if (b.scratch.size < scratch_bytes() || b.outputs.empty()) {
      return InvalidArgument("fission: candidate buffers too small");
    }
    runtime::DeviceMemory workspace = b.scratch.Slice(0, algorithm_.workspace_bytes);
    runtime::DeviceMemory t = b.scratch.Slice(workspace_bytes_, intermediate_bytes_);
    libs::GemmBuffers g;
    g.lhs = b.inputs.size() > 0 ? b.inputs[0] : runtime::DeviceMemory{};
    g.rhs = b.inputs.size() > 1 ? b.inputs[1] : runtime::DeviceMemory{};
    g.out = t;
    KILN_RETURN_IF_ERROR(plan_->Run(algorithm_, g, workspace, stream));

    const int64_t c = config_.c_operand(), bias = config_.bias_operand();
    auto input = [&](int64_t i) -> StatusOr<void*> {
      if (i < 0 || i >= static_cast<int64_t>(b.inputs.size())) return InvalidArgument("fission: missing operand ", i);
      return b.inputs[i].ptr;
    };
    const codegen::KernelSpec& spec = kernel_->spec;
    runtime::KernelArgs args;
    for (const codegen::KernelParam& p : spec.params) {
      switch (p.kind) {
        case codegen::KernelParam::Kind::kOperand: {
          if (p.index < 0 || p.index >= static_cast<int64_t>(kernel_->operand_role.size())) {
            return Internal("fission kernel ", spec.name, ": parameter ", p.name, " names operand ", p.index);
          }
          const int role = kernel_->operand_role[p.index];
          if (role == 0) {
            args.Add(t.ptr);
          } else {
            KILN_ASSIGN_OR_RETURN(void* ptr, input(role == 1 ? c : bias));
            args.Add(ptr);
          }
          break;
        }
        case codegen::KernelParam::Kind::kOutput:
          if (p.index != 0) return Internal("fission kernel ", spec.name, ": output ", p.index);
          args.Add(b.outputs[0].ptr);
          break;
        case codegen::KernelParam::Kind::kScratch:
          return Internal("fission kernel ", spec.name, " wants scratch");
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
    for (size_t i = 0; i < kernel_->kernels.size(); ++i) {
      KILN_RETURN_IF_ERROR(stream.Launch(*kernel_->kernels[i], spec.launches[i].dims, args));
    }
    return OkStatus();
  }

 private:
  std::unique_ptr<libs::GemmPlan> plan_;
  libs::GemmAlgorithm algorithm_;
  GemmConfig config_;
  uint64_t workspace_bytes_;
  uint64_t intermediate_bytes_;
  std::shared_ptr<const EpilogueKernel> kernel_;
};

// ---- the backend --------------------------------------------------------------------------

class FissionBackend : public autotune::Backend {
 public:
  FissionBackend(codegen::DeviceSpec spec, runtime::Device* device, std::shared_ptr<NvrtcCompiler> nvrtc,
                 autotune::BackendOptions options)
      : spec_(std::move(spec)), device_(device), nvrtc_(std::move(nvrtc)), options_(options) {}

  std::string_view name() const override { return kFissionBackend; }
  // The split and the epilogue's arithmetic decide what a config does; the GEMM's library
  // version is in the device part of the cache key.
  std::string version() const override { return "kiln-fission 1"; }
  bool CanProduceWrongResults() const override { return false; }  // see the header

  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!FissionApplies(instr) || device_ == nullptr || !nvrtc_) return std::vector<Config>{};
    StatusOr<libs::GemmDesc> desc = FissionGemmDesc(instr);
    if (!desc.ok()) return std::vector<Config>{};
    StatusOr<std::unique_ptr<libs::GemmPlan>> plan =
        libs::GemmPlan::Create(*desc, *static_cast<CudaDevice*>(device_));
    if (!plan.ok()) return std::vector<Config>{};
    StatusOr<std::vector<libs::GemmAlgorithm>> algorithms = (*plan)->ListAlgorithms(options_.exhaustive ? 128 : 16);
    if (!algorithms.ok()) return std::vector<Config>{};
    std::vector<Config> out;
    for (const libs::GemmAlgorithm& a : *algorithms) {
      if (options_.deterministic && a.description.find(" splitk=1 ") == std::string::npos &&
          a.description.find(" splitk=0 ") == std::string::npos) {
        continue;  // as cublaslt: split-K may not be bitwise reproducible
      }
      out.emplace_back(std::string(kFissionBackend), GemmAlgorithmToConfig(a).params());
    }
    return out;
  }

  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    KILN_ASSIGN_OR_RETURN(std::vector<Config> configs, SupportedConfigs(instr));
    if (configs.empty()) return Unimplemented("fission takes no config for ", instr.name());
    return configs.front();
  }

  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr, const Config& config) override {
    if (device_ == nullptr) return FailedPrecondition("fission: no CUDA device to compile for");
    if (!nvrtc_) return FailedPrecondition("fission: no NVRTC");
    if (!FissionApplies(instr)) return InvalidArgument("fission does not take ", instr.name());
    KILN_ASSIGN_OR_RETURN(GemmConfig g, GetGemmConfig(instr));
    KILN_ASSIGN_OR_RETURN(libs::GemmDesc desc, FissionGemmDesc(instr));
    KILN_ASSIGN_OR_RETURN(Config lt, AsCublasLtConfig(config));
    KILN_ASSIGN_OR_RETURN(libs::GemmAlgorithm a, GemmAlgorithmFromConfig(lt, desc));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<libs::GemmPlan> plan,
                          libs::GemmPlan::Create(desc, *static_cast<CudaDevice*>(device_)));
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const EpilogueKernel> kernel, Kernel(instr, g));
    const uint64_t intermediate = RoundUp(static_cast<uint64_t>(g.batch * g.m * g.n) * 4, 256);
    return std::unique_ptr<Candidate>(
        new FissionCandidate(std::move(plan), std::move(a), g, intermediate, std::move(kernel)));
  }

  Status Apply(HloInstruction& instr, const Config& config) override {
    return SplitGemmEpilogue(&instr, config).status();
  }

 private:
  // The epilogue kernel for `gemm` (FissionEpilogueKernel), compiled and loaded once per
  // kernel source.
  StatusOr<std::shared_ptr<const EpilogueKernel>> Kernel(const HloInstruction& gemm, const GemmConfig&) {
    auto k = std::make_shared<EpilogueKernel>();
    KILN_ASSIGN_OR_RETURN(k->spec, FissionEpilogueKernel(gemm, spec_, &k->operand_role));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kernels_.find(k->spec.source);
    if (it != kernels_.end()) return it->second;
    NvrtcRequest r;
    r.source = k->spec.source;
    r.headers = k->spec.headers;
    r.arch = spec_.arch();
    r.program_name = StrCat(k->spec.name, ".cu");
    KILN_ASSIGN_OR_RETURN(NvrtcProgram program, nvrtc_->Compile(r));
    KILN_ASSIGN_OR_RETURN(k->module,
                          device_->LoadModule(runtime::ModuleSpec::FromCubin(program.cubin, k->spec.name)));
    for (const codegen::KernelLaunch& l : k->spec.launches) {
      KILN_ASSIGN_OR_RETURN(runtime::Kernel * kernel, k->module->GetKernel(l.entry));
      if (l.dims.shared_memory_bytes > 48 * 1024) {
        KILN_RETURN_IF_ERROR(kernel->SetMaxDynamicSharedMemory(l.dims.shared_memory_bytes));
      }
      k->kernels.push_back(kernel);
    }
    std::shared_ptr<const EpilogueKernel> shared = std::move(k);
    kernels_.emplace(shared->spec.source, shared);
    return shared;
  }

  codegen::DeviceSpec spec_;
  runtime::Device* device_;
  std::shared_ptr<NvrtcCompiler> nvrtc_;
  autotune::BackendOptions options_;
  std::mutex mu_;  // guards kernels_ (Compile runs on the autotuner's pool)
  std::map<std::string, std::shared_ptr<const EpilogueKernel>> kernels_;
};

}  // namespace

bool FissionApplies(const HloInstruction& instr) {
  if (!IsGemmCall(instr) || !instr.shape().IsArray() || !match::RowMajor(instr.shape())) return false;
  // The split replaces the call for its users, which control edges would forbid.
  if (!instr.control_predecessors().empty() || !instr.control_successors().empty()) return false;
  if (!EpilogueOutput(instr.shape().element_type())) return false;
  StatusOr<GemmConfig> g = GetGemmConfig(instr);
  if (!g.ok()) return false;
  if (!g->has_bias && g->activation == GemmActivation::kNone && g->beta == 0) return false;
  for (int64_t i : {g->c_operand(), g->bias_operand()}) {
    if (i < 0) continue;
    const Shape& s = instr.operand(i)->shape();
    if (!s.IsArray() || !match::RowMajor(s) || !EpilogueOutput(s.element_type())) return false;
  }
  // The plain GEMM must exist with an f32 result (bf16/f16/f32 operands).
  return GemmTypesSupported(instr.operand(0)->shape().element_type(), instr.operand(1)->shape().element_type(),
                            PrimitiveType::kF32);
}

StatusOr<codegen::KernelSpec> FissionEpilogueKernel(const HloInstruction& gemm, const codegen::DeviceSpec& device,
                                                    std::vector<int>* operand_roles) {
  if (!FissionApplies(gemm)) return FailedPrecondition("fission does not take %", gemm.name());
  KILN_ASSIGN_OR_RETURN(GemmConfig g, GetGemmConfig(gemm));
  // A scratch module: parameters t (f32, the call's dimensions), c, bias; the fusion as root.
  HloModule scratch("fission_epilogue");
  HloComputation* entry = scratch.AddComputation(std::make_unique<HloComputation>("epilogue"), true);
  Shape t_shape = gemm.shape();
  t_shape.set_element_type(PrimitiveType::kF32);
  int64_t next = 0;
  auto parameter = [&](const Shape& s, const char* name) {
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, s, name);
    p->set_parameter_number(next++);
    return entry->AddInstruction(std::move(p));
  };
  EpilogueInputs in;
  in.t = parameter(t_shape, "t");
  if (g.c_operand() >= 0) in.c = parameter(gemm.operand(g.c_operand())->shape(), "c");
  if (g.bias_operand() >= 0) in.bias = parameter(gemm.operand(g.bias_operand())->shape(), "bias");
  KILN_ASSIGN_OR_RETURN(HloInstruction * fusion,
                        BuildEpilogueFusion(entry, g, gemm.shape(), in, nullptr, StrCat(gemm.name(), ".epilogue")));
  entry->set_root_instruction(fusion);
  std::vector<int> roles;
  for (const HloInstruction* o : fusion->operands()) {
    roles.push_back(o == in.t ? 0 : o == in.c ? 1 : o == in.bias ? 2 : -1);
    if (roles.back() < 0) return Internal("fission: the epilogue fusion reads ", o->name());
  }
  KILN_ASSIGN_OR_RETURN(codegen::KernelSpec spec, codegen::EmitKernel(*fusion, device));
  if (spec.scratch_bytes != 0 || !spec.in_place.empty()) {
    return Unimplemented("fission: the epilogue kernel of %", gemm.name(), " wants scratch or in-place outputs");
  }
  if (operand_roles != nullptr) *operand_roles = std::move(roles);
  return spec;
}

StatusOr<libs::GemmDesc> FissionGemmDesc(const HloInstruction& gemm, uint64_t min_alignment) {
  if (!FissionApplies(gemm)) return FailedPrecondition("fission does not take %", gemm.name());
  KILN_ASSIGN_OR_RETURN(libs::GemmDesc d, GemmDescForCall(gemm, min_alignment));
  d.out.dtype = PrimitiveType::kF32;
  d.beta = 0;
  d.epilogue = libs::GemmEpilogue::kNone;
  d.bias_dtype = PrimitiveType::kInvalid;
  return d;
}

StatusOr<HloInstruction*> SplitGemmEpilogue(HloInstruction* gemm, const Config& algorithm) {
  if (gemm == nullptr || !FissionApplies(*gemm)) {
    return FailedPrecondition("fission does not take ", gemm ? StrCat("%", gemm->name()) : "null");
  }
  KILN_ASSIGN_OR_RETURN(Config lt, AsCublasLtConfig(algorithm));
  KILN_ASSIGN_OR_RETURN(GemmConfig g, GetGemmConfig(*gemm));
  HloComputation* computation = gemm->parent();
  if (computation == nullptr) return FailedPrecondition("fission: %", gemm->name(), " is in no computation");
  HloEditor ed(computation);
  // The plain GEMM: the call's lhs and rhs, an f32 result of the same dimensions and layout.
  Shape t_shape = gemm->shape();
  t_shape.set_element_type(PrimitiveType::kF32);
  auto plain = std::make_unique<HloInstruction>(HloOpcode::kCustomCall, t_shape);
  plain->AppendOperand(gemm->operand(0));
  plain->AppendOperand(gemm->operand(1));
  plain->attrs().custom_call_target = std::string(kGemmCallTarget);
  plain->backend_config() = BackendConfig{PlainConfig(g).ToJson(), true};
  plain->set_name(UniqueInstructionName(*computation, StrCat(gemm->name(), ".plain")));
  HloInstruction* t = ed.Add(std::move(plain), gemm);
  KILN_RETURN_IF_ERROR(autotune::WriteConfigToBackendConfig(*t, lt));
  EpilogueInputs in;
  in.t = t;
  if (g.c_operand() >= 0) in.c = gemm->operand(g.c_operand());
  if (g.bias_operand() >= 0) in.bias = gemm->operand(g.bias_operand());
  KILN_ASSIGN_OR_RETURN(HloInstruction * fusion,
                        BuildEpilogueFusion(computation, g, gemm->shape(), in, gemm, StrCat(gemm->name(), ".epilogue")));
  KILN_RETURN_IF_ERROR(ReplaceInstruction(gemm, fusion));
  return fusion;
}

std::unique_ptr<autotune::Backend> CreateFissionBackend(codegen::DeviceSpec spec, runtime::Device* device,
                                                        std::shared_ptr<NvrtcCompiler> nvrtc,
                                                        const autotune::BackendOptions& options) {
  return std::make_unique<FissionBackend>(std::move(spec), device, std::move(nvrtc), options);
}

}  // namespace kiln::cuda
