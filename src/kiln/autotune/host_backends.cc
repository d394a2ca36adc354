#include "kiln/autotune/host_backends.h"

#include <algorithm>
#include <cstring>

#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"
#include "kiln/hlo/clone.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"
#include "kiln/runtime/host/host_kernel.h"

namespace kiln::autotune {

namespace {

bool DefaultLayout(const Shape& s) {
  return s.IsArray() && (!s.has_layout() || s.layout().IsDefaultFor(s.rank()));
}

bool AllDefaultLayouts(const HloInstruction& instr) {
  if (!DefaultLayout(instr.shape())) return false;
  return std::all_of(instr.operands().begin(), instr.operands().end(),
                     [](const HloInstruction* op) { return DefaultLayout(op->shape()); });
}

// A candidate that runs one host kernel with (inputs..., output) pointers as arguments.
class HostCandidate : public Candidate {
 public:
  HostCandidate(std::unique_ptr<runtime::Module> module, runtime::Kernel* kernel)
      : module_(std::move(module)), kernel_(kernel) {}
  Status Launch(runtime::Stream& stream, const CandidateBuffers& buffers) override {
    runtime::KernelArgs args;
    for (const runtime::DeviceMemory& in : buffers.inputs) args.Add(in);
    for (const runtime::DeviceMemory& out : buffers.outputs) args.Add(out);
    return stream.Launch(*kernel_, runtime::LaunchDims{}, args);
  }

 private:
  std::unique_ptr<runtime::Module> module_;
  runtime::Kernel* kernel_;
};

StatusOr<std::unique_ptr<Candidate>> LoadHostKernel(runtime::Device* device, std::string name,
                                                    runtime::HostKernelFn fn) {
  if (device == nullptr) return FailedPrecondition(name, ": no device to compile for");
  if (device->description().platform != "host") {
    return FailedPrecondition(name, " runs on the host platform only");
  }
  auto library = std::make_shared<runtime::HostKernelLibrary>();
  KILN_RETURN_IF_ERROR(library->Add(name, std::move(fn)));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Module> module,
                        device->LoadModule(runtime::ModuleSpec::FromHostLibrary(library, name)));
  KILN_ASSIGN_OR_RETURN(runtime::Kernel * kernel, module->GetKernel(name));
  return std::unique_ptr<Candidate>(new HostCandidate(std::move(module), kernel));
}

// ---- host_eval ------------------------------------------------------------------------------

class HostEvalBackend : public Backend {
 public:
  explicit HostEvalBackend(runtime::Device* device) : device_(device) {}
  std::string_view name() const override { return "host_eval"; }
  std::string version() const override { return "kiln-evaluator 1"; }
  bool CanProduceWrongResults() const override { return false; }

  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    bool op = instr.opcode() == HloOpcode::kDot || instr.opcode() == HloOpcode::kConvolution;
    if (!op || !instr.called_computations().empty() || !AllDefaultLayouts(instr)) {
      return std::vector<Config>{};
    }
    return std::vector<Config>{Config(std::string(name()), nlohmann::json::object())};
  }
  StatusOr<Config> DefaultConfig(const HloInstruction&) override {
    return Config(std::string(name()), nlohmann::json::object());
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    return WriteConfigToBackendConfig(instr, config);
  }

  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                               const Config&) override {
    // A module holding just this instruction, its operands as parameters.
    auto module = std::make_shared<HloModule>("autotune_" + instr.name());
    auto entry = std::make_unique<HloComputation>("main");
    std::vector<HloInstruction*> params;
    std::vector<Shape> shapes;
    for (int64_t i = 0; i < instr.operand_count(); ++i) {
      auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, instr.operand(i)->shape(),
                                                StrCat("p", i));
      p->set_parameter_number(i);
      params.push_back(entry->AddInstruction(std::move(p)));
      shapes.push_back(instr.operand(i)->shape());
    }
    HloInstruction* root =
        entry->AddInstruction(CloneInstruction(instr, instr.shape(), params, "root"));
    entry->set_root_instruction(root);
    module->AddComputation(std::move(entry), /*is_entry=*/true);
    Shape result = instr.shape();
    return LoadHostKernel(
        device_, "host_eval", [module, shapes, result](const runtime::HostKernelContext& ctx) -> Status {
          std::vector<Literal> args;
          for (size_t i = 0; i < shapes.size(); ++i) {
            args.emplace_back(shapes[i]);
            std::memcpy(args.back().untyped_data(), ctx.args.Get<const void*>(i),
                        args.back().size_bytes());
          }
          Evaluator evaluator;
          KILN_ASSIGN_OR_RETURN(Literal out, evaluator.Run(*module, args));
          std::memcpy(ctx.args.Get<void*>(shapes.size()), out.untyped_data(), out.size_bytes());
          return OkStatus();
        });
  }

 private:
  runtime::Device* device_;
};

// ---- host_gemm ------------------------------------------------------------------------------

struct GemmTile {
  int tile_m = 64;
  int tile_n = 64;
  int tile_k = 64;
  std::string order = "ikj";
  NLOHMANN_DEFINE_TYPE_INTRUSIVE(GemmTile, tile_m, tile_n, tile_k, order)
};

// C[m,n] = A[m,k] · B[k,n], row-major, tiled.
void TiledGemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
               const GemmTile& t) {
  std::fill(c, c + m * n, 0.0f);
  for (int64_t i0 = 0; i0 < m; i0 += t.tile_m) {
    for (int64_t k0 = 0; k0 < k; k0 += t.tile_k) {
      for (int64_t j0 = 0; j0 < n; j0 += t.tile_n) {
        const int64_t i1 = std::min(m, i0 + t.tile_m), k1 = std::min(k, k0 + t.tile_k),
                      j1 = std::min(n, j0 + t.tile_n);
        if (t.order == "ikj") {
          for (int64_t i = i0; i < i1; ++i) {
            for (int64_t kk = k0; kk < k1; ++kk) {
              const float av = a[i * k + kk];
              for (int64_t j = j0; j < j1; ++j) c[i * n + j] += av * b[kk * n + j];
            }
          }
        } else {
          for (int64_t i = i0; i < i1; ++i) {
            for (int64_t j = j0; j < j1; ++j) {
              float acc = 0;
              for (int64_t kk = k0; kk < k1; ++kk) acc += a[i * k + kk] * b[kk * n + j];
              c[i * n + j] += acc;
            }
          }
        }
      }
    }
  }
}

class HostGemmBackend : public Backend {
 public:
  HostGemmBackend(runtime::Device* device, bool exhaustive)
      : device_(device), exhaustive_(exhaustive) {}
  std::string_view name() const override { return "host_gemm"; }
  std::string version() const override { return "kiln-host-gemm 1"; }
  bool CanProduceWrongResults() const override { return true; }

  StatusOr<std::vector<Config>> SupportedConfigs(const HloInstruction& instr) override {
    if (!Supports(instr)) return std::vector<Config>{};
    std::vector<GemmTile> tiles;
    if (exhaustive_) {
      for (const char* order : {"ikj", "ijk"}) {
        for (int tm : {16, 32, 64, 128}) {
          for (int tn : {16, 32, 64, 128}) {
            for (int tk : {16, 32, 64, 128}) tiles.push_back({tm, tn, tk, order});
          }
        }
      }
    } else {
      tiles = {{64, 64, 64, "ikj"}, {32, 256, 32, "ikj"}, {128, 128, 16, "ikj"},
               {16, 16, 256, "ijk"}, {64, 64, 64, "ijk"}};
    }
    std::vector<Config> out;
    for (const GemmTile& t : tiles) out.push_back(Config::From(std::string(name()), t));
    return out;
  }
  StatusOr<Config> DefaultConfig(const HloInstruction& instr) override {
    if (!Supports(instr)) return Unimplemented("host_gemm does not support ", instr.name());
    return Config::From(std::string(name()), GemmTile{});
  }
  Status Apply(HloInstruction& instr, const Config& config) override {
    KILN_RETURN_IF_ERROR(CheckConfig(instr, config));
    return WriteConfigToBackendConfig(instr, config);
  }
  // Tiles of 1..4096 in each dimension, loop order ikj or ijk.
  Status CheckConfig(const HloInstruction&, const Config& config) override {
    if (config.backend() != name()) return InvalidArgument("not a host_gemm config: ", config.ToString());
    KILN_ASSIGN_OR_RETURN(GemmTile t, config.As<GemmTile>());
    auto in_range = [](int v) { return v >= 1 && v <= 4096; };
    if (!in_range(t.tile_m) || !in_range(t.tile_n) || !in_range(t.tile_k) || (t.order != "ikj" && t.order != "ijk"))
      return InvalidArgument("bad host_gemm config ", config.ToString(), " (tiles 1..4096, order ikj or ijk)");
    return OkStatus();
  }

  StatusOr<std::unique_ptr<Candidate>> Compile(const HloInstruction& instr,
                                               const Config& config) override {
    KILN_RETURN_IF_ERROR(CheckConfig(instr, config));
    KILN_ASSIGN_OR_RETURN(GemmTile t, config.As<GemmTile>());
    const int64_t m = instr.operand(0)->shape().dimensions()[0];
    const int64_t k = instr.operand(0)->shape().dimensions()[1];
    const int64_t n = instr.operand(1)->shape().dimensions()[1];
    return LoadHostKernel(device_, "host_gemm",
                          [t, m, n, k](const runtime::HostKernelContext& ctx) -> Status {
                            TiledGemm(ctx.args.Get<const float*>(0), ctx.args.Get<const float*>(1),
                                      ctx.args.Get<float*>(2), m, n, k, t);
                            return OkStatus();
                          });
  }

 private:
  static bool Supports(const HloInstruction& instr) {
    if (instr.opcode() != HloOpcode::kDot || instr.operand_count() != 2) return false;
    const Shape& a = instr.operand(0)->shape();
    const Shape& b = instr.operand(1)->shape();
    for (const Shape* s : {&a, &b, &instr.shape()}) {
      if (!s->IsArray() || s->element_type() != PrimitiveType::kF32 || s->rank() != 2) return false;
    }
    const auto& dn = instr.attrs().dot_dimension_numbers;
    if (!dn || !dn->lhs_batch_dimensions.empty() || dn->lhs_contracting_dimensions != std::vector<int64_t>{1} ||
        dn->rhs_contracting_dimensions != std::vector<int64_t>{0}) {
      return false;
    }
    return AllDefaultLayouts(instr) && instr.attrs().sparsity.empty();
  }

  runtime::Device* device_;
  bool exhaustive_;
};

}  // namespace

StatusOr<BackendList> CreateHostBackends(const runtime::DeviceDescription&, runtime::Device* device,
                                         const BackendOptions& options) {
  BackendList backends;
  // The GEMM first: the first supporting backend's default is the instruction's default, and
  // the evaluator is the slowest way to run a dot. It is still the reference (trusted).
  backends.push_back(std::make_unique<HostGemmBackend>(device, options.exhaustive));
  backends.push_back(std::make_unique<HostEvalBackend>(device));
  return backends;
}

Status RegisterHostAutotuneFactory(BackendFactoryRegistry& registry) {
  return registry.Register("host", CreateHostBackends);
}

}  // namespace kiln::autotune
