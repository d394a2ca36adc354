#include "kiln/backend/backend.h"

#include "kiln/base/strings.h"

namespace kiln {

StatusOr<std::unique_ptr<Buffer>> Backend::BufferFromLiteral(const Literal& literal, int ordinal) {
  if (!literal.shape().IsArray())
    return InvalidArgument("a buffer holds one array, not ", literal.shape().ToString(false));
  return BufferFromHost(literal.untyped_data(), literal.size_bytes(), literal.shape(), ordinal);
}

StatusOr<CompileReport> Backend::Tune(const HloModule& module, const CompileOptions& options) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, Compile(module, options));
  if (!exe->compile_report().autotune)
    return FailedPrecondition("the ", name(), " backend ran no autotuning step for ", module.name(),
                              " (no device to measure on, or tuning is off)");
  return exe->compile_report();
}

StatusOr<std::unique_ptr<Buffer>> Backend::BufferFromPointer(void*, const Shape&, int, std::function<void()>) {
  return Unimplemented("the ", name(), " backend cannot wrap external memory");
}

Status CheckBackendFlags(const BackendFlags& flags, std::string_view prefix, std::span<const FlagSpec> known) {
  for (const auto& [name, value] : flags) {
    if (!StartsWith(name, prefix)) continue;
    bool found = false;
    for (const FlagSpec& k : known) found |= k.name == name;
    if (!found) {
      std::vector<std::string_view> names;
      for (const FlagSpec& k : known) names.push_back(k.name);
      return InvalidArgument("unknown flag '", name, "' (", prefix, "* flags: ",
                             names.empty() ? std::string("none") : StrJoin(names, ", "), ")");
    }
  }
  return OkStatus();
}

std::string FlagHelp(std::span<const FlagSpec> specs) {
  std::string s;
  for (const FlagSpec& f : specs) s += StrCat(f.name, "=", f.help, "\n");
  return s;
}

std::string_view FlagOr(const BackendFlags& flags, std::string_view name, std::string_view fallback) {
  auto it = flags.find(name);
  return it == flags.end() ? fallback : std::string_view(it->second);
}

}  // namespace kiln
