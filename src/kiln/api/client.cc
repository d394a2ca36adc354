#include "kiln/api/client.h"

#include <fstream>
#include <new>
#include <stdexcept>
#include <sstream>

#include "kiln/base/npy.h"
#include "kiln/base/strings.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/verifier.h"
#include "kiln/runtime/drivers.h"

namespace kiln {

namespace {

// What the text probably is when it is not HLO text: a hint for the error message, or "".
std::string NotHloHint(std::string_view text) {
  const std::string_view head = text.substr(0, 4096);
  for (char c : head.substr(0, 256))
    if (c == '\0' || (static_cast<unsigned char>(c) < 0x09))
      return "hint: this looks like a binary file (a serialized HloModuleProto?); kiln reads HLO text, "
             "as `jax.jit(f).lower(...).as_text(dialect=\"hlo\")` or XLA's --xla_dump_hlo_as_text write it";
  if (head.find("func.func") != std::string_view::npos || head.find("stablehlo.") != std::string_view::npos ||
      head.find("module @") != std::string_view::npos)
    return "hint: this looks like StableHLO / MLIR text; kiln reads HLO text: "
           "`jax.jit(f).lower(...).as_text(dialect=\"hlo\")` (docs/cli.md)";
  return "";
}

}  // namespace

StatusOr<std::unique_ptr<HloModule>> ParseModule(std::string_view text, std::string_view filename,
                                                 const ParseModuleOptions& options) {
  ParseOptions po;
  po.filename = std::string(filename);
  po.fill_elided_constants = options.fill_elided_constants;
  po.fill_seed = options.fill_seed;
  StatusOr<std::unique_ptr<HloModule>> parsed = ParseHloModule(text, po);
  if (!parsed.ok()) {
    const std::string hint = NotHloHint(text);
    if (hint.empty()) return parsed.status();
    return Status(parsed.status().code(), StrCat(parsed.status().message(), "\n", hint));
  }
  std::unique_ptr<HloModule> module = std::move(parsed).value();
  if (options.verify) {
    Status s = VerifyModule(*module);
    if (!s.ok()) return InvalidArgument(filename, ": the module does not verify:\n", s.message());
  }
  return module;
}

StatusOr<std::unique_ptr<HloModule>> ParseModuleFile(const std::string& path, const ParseModuleOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  ParseModuleOptions parse = options;
  parse.verify = false;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseModule(text, path, parse));
  if (options.verify) {
    Status s = VerifyModule(*module);
    if (!s.ok()) return InvalidArgument(path, ": the module does not verify (--no-verify skips this):\n", s.message());
  }
  return module;
}

StatusOr<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  auto registry = std::make_unique<BackendRegistry>();
  RegisterBuiltinBackends(*registry, options.flags);
  if (!options.platforms.empty()) {
    for (const std::string& name : options.platforms) {
      bool known = false;
      for (std::string_view k : KnownPlatformNames()) known |= k == name;
      if (!known)
        return InvalidArgument("unknown platform '", name, "' (known: ", StrJoin(KnownPlatformNames(), ", "), ")");
    }
    registry->RetainOnly(options.platforms);
  }
  return std::unique_ptr<Client>(new Client(std::move(registry), options));
}

std::vector<PlatformInfo> Client::Platforms() const {
  std::vector<PlatformInfo> out;
  for (Backend* b : registry_->backends()) {
    PlatformInfo p;
    p.name = std::string(b->name());
    p.description = std::string(b->description());
    p.built = true;
    auto devices = b->Devices();
    if (devices.ok()) p.devices = std::move(*devices);
    else p.status = devices.status();
    out.push_back(std::move(p));
  }
  for (std::string_view name : KnownPlatformNames())
    if (!registry_->Find(name)) {
      PlatformInfo p;
      p.name = std::string(name);
      p.status = Unavailable(name, ": not built into this kiln");
      out.push_back(std::move(p));
    }
  return out;
}

std::string Client::DriverListing(bool verbose) const {
  return runtime::FormatPlatformListing(runtime::ListPlatformsAndDevices(), verbose);
}

StatusOr<DeviceSelection> Client::SelectDevice(std::string_view device, bool require_device) const {
  return kiln::SelectDevice(*registry_, device, require_device);
}

std::string Client::DeviceName(const DeviceSelection& d) { return StrCat(d.backend->name(), ":", d.ordinal); }

CompileOptions Client::WithClientFlags(CompileOptions options) const {
  for (const auto& [name, value] : options_.flags) options.flags.emplace(name, value);  // keeps the compile's own
  return options;
}

StatusOr<std::unique_ptr<Executable>> Client::Compile(const HloModule& module, std::string_view device,
                                                      CompileOptions options) const {
  KILN_ASSIGN_OR_RETURN(DeviceSelection d, SelectDevice(device, /*require_device=*/false));
  options = WithClientFlags(std::move(options));
  options.device_ordinal = d.ordinal;
  try {
    return d.backend->Compile(module, options);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of host memory compiling ", module.name(), " for ", DeviceName(d));
  } catch (const std::length_error&) {
    return ResourceExhausted("out of host memory compiling ", module.name(), " for ", DeviceName(d));
  }
}

StatusOr<std::unique_ptr<Executable>> Client::CompileText(std::string_view hlo_text, std::string_view device,
                                                          CompileOptions options) const {
  ParseModuleOptions po;
  po.verify = options.verify;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseModule(hlo_text, "<text>", po));
  options.verify = false;  // just verified
  return Compile(*module, device, std::move(options));
}

StatusOr<CompileReport> Client::Tune(const HloModule& module, std::string_view device, CompileOptions options) const {
  KILN_ASSIGN_OR_RETURN(DeviceSelection d, SelectDevice(device));
  options = WithClientFlags(std::move(options));
  options.device_ordinal = d.ordinal;
  return d.backend->Tune(module, options);
}

StatusOr<std::unique_ptr<Buffer>> Client::BufferFromHost(const void* data, uint64_t bytes, const Shape& shape,
                                                         std::string_view device) const {
  KILN_ASSIGN_OR_RETURN(DeviceSelection d, SelectDevice(device));
  return d.backend->BufferFromHost(data, bytes, shape, d.ordinal);
}

StatusOr<std::unique_ptr<Buffer>> Client::BufferFromLiteral(const Literal& literal, std::string_view device) const {
  KILN_ASSIGN_OR_RETURN(DeviceSelection d, SelectDevice(device));
  return d.backend->BufferFromLiteral(literal, d.ordinal);
}

StatusOr<std::unique_ptr<Buffer>> Client::BufferFromPointer(void* ptr, const Shape& shape, std::string_view device,
                                                            std::function<void()> release) const {
  KILN_ASSIGN_OR_RETURN(DeviceSelection d, SelectDevice(device));
  return d.backend->BufferFromPointer(ptr, shape, d.ordinal, std::move(release));
}

}  // namespace kiln
