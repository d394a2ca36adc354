#include "kiln/tools/backend_registry.h"

#include <charconv>

#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"

namespace kiln {

void BackendRegistry::Register(std::unique_ptr<Backend> backend) {
  if (Find(backend->name())) return;
  backends_.push_back(std::move(backend));
}

Backend* BackendRegistry::Find(std::string_view name) const {
  for (const auto& b : backends_)
    if (b->name() == name) return b.get();
  return nullptr;
}

std::vector<Backend*> BackendRegistry::backends() const {
  std::vector<Backend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

std::string BackendRegistry::AvailableNames() const {
  return StrJoin(backends_, ", ", [](std::ostream& os, const std::unique_ptr<Backend>& b) { os << b->name(); });
}

Backend* BackendRegistry::Best() const {
  for (const auto& b : backends_) {
    auto devices = b->Devices();
    if (devices.ok() && !devices->empty()) return b.get();
  }
  return nullptr;
}

std::span<const std::string_view> KnownPlatformNames() {
  static constexpr std::string_view kNames[] = {"interpreter", "cpu", "cuda", "rocm"};
  return kNames;
}

StatusOr<std::string> Backend::Compile(const HloModule&, const BackendCompileOptions&) {
  return Unimplemented("the ", name(), " backend does not compile modules");
}

namespace {

class RunEachTime : public PreparedModule {
 public:
  RunEachTime(Backend& backend, const HloModule& module, std::span<const Literal> args,
              const BackendRunOptions& options)
      : backend_(backend), module_(module), args_(args.begin(), args.end()), options_(options) {}
  Status Execute() override { return backend_.Run(module_, args_, options_).status(); }

 private:
  Backend& backend_;
  const HloModule& module_;
  std::vector<Literal> args_;
  BackendRunOptions options_;
};

}  // namespace

StatusOr<std::unique_ptr<PreparedModule>> Backend::Prepare(const HloModule& module,
                                                           std::span<const Literal> args,
                                                           const BackendRunOptions& options) {
  return std::unique_ptr<PreparedModule>(new RunEachTime(*this, module, args, options));
}

namespace {

class InterpreterBackend : public Backend {
 public:
  std::string_view name() const override { return "interpreter"; }
  std::string_view description() const override { return "the reference evaluator (host)"; }
  StatusOr<std::vector<DeviceInfo>> Devices() const override {
    return std::vector<DeviceInfo>{{0, "host", "runs every op exactly, one thread, slowly"}};
  }
  StatusOr<Literal> Run(const HloModule& module, std::span<const Literal> args,
                        const BackendRunOptions& options) override {
    if (options.device_ordinal != 0)
      return InvalidArgument("the interpreter has one device (0), not ", options.device_ordinal);
    EvaluatorOptions eo;
    eo.rng_seed = options.seed;
    Evaluator evaluator(eo);
    return evaluator.Run(module, args);
  }
};

}  // namespace

std::unique_ptr<Backend> CreateInterpreterBackend() { return std::make_unique<InterpreterBackend>(); }

void RegisterBuiltinBackends(BackendRegistry& registry) {
  // Best first: compiled backends go above the interpreter as they land, each guarded by its
  // build option where it has one (#if KILN_HAVE_CUDA ...). The CPU backend is always built.
#if defined(KILN_HAVE_CUDA_COMPILER)
  registry.Register(CreateCudaBackend());
#endif
  registry.Register(CreateCpuBackend());
  registry.Register(CreateInterpreterBackend());
}

StatusOr<DeviceSelection> SelectDevice(const BackendRegistry& registry, std::string_view spec,
                                       bool require_device) {
  std::string_view name = spec;
  int ordinal = 0;
  if (size_t colon = spec.find(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    std::string_view num = spec.substr(colon + 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), ordinal);
    if (ec != std::errc() || p != num.data() + num.size() || ordinal < 0)
      return InvalidArgument("bad device '", spec, "' (expected NAME or NAME:ORDINAL)");
  }
  Backend* backend = registry.Find(name);
  if (!backend) {
    for (std::string_view known : KnownPlatformNames())
      if (known == name)
        return Unavailable("device '", name, "' is not built yet (available: ", registry.AvailableNames(), ")");
    return InvalidArgument("unknown device '", name, "' (known: ", StrJoin(KnownPlatformNames(), ", "),
                           "; available: ", registry.AvailableNames(), ")");
  }
  if (!require_device) {
    StatusOr<std::vector<DeviceInfo>> d = backend->Devices();
    if (!d.ok() || d->empty()) return DeviceSelection{backend, ordinal};
  }
  KILN_ASSIGN_OR_RETURN(std::vector<DeviceInfo> devices, backend->Devices());
  if (ordinal >= static_cast<int>(devices.size()))
    return InvalidArgument("device '", spec, "': ", name, " has ", devices.size(), " device(s)");
  return DeviceSelection{backend, ordinal};
}

}  // namespace kiln
