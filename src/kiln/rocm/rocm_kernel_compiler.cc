#include "kiln/rocm/rocm_kernel_compiler.h"

#include <cctype>
#include <set>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"

namespace kiln::rocm {

namespace {
bool IsHip(const codegen::KernelSpec& k) {
  for (const auto& [name, text] : k.headers)
    if (name == codegen::CodegenPreludeName()) return text == codegen::CodegenHipPrelude();
  return false;
}
}  // namespace

StatusOr<HsacoSource> BatchKernelSource(std::span<const codegen::KernelSpec> kernels, std::string name,
                                        bool c_linkage) {
  HsacoSource out;
  out.name = std::move(name);
  const std::string include = StrCat("#include \"", codegen::CodegenPreludeName(), "\"\n");
  out.source = StrCat("// ", kernels.size(), " kernels of ", out.name, " in one code object (Note [One code ",
                      "object per module], src/kiln/rocm/rocm_kernel_compiler.h)\n", include);
  out.headers = {{codegen::CodegenPreludeName(), codegen::CodegenHipPrelude()}};
  std::set<std::string> entries;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const codegen::KernelSpec& k = kernels[i];
    if (!IsHip(k)) return InvalidArgument("kernel ", k.name, " was not generated in the HIP dialect");
    if (c_linkage)
      for (const std::string& e : k.Entries())
        if (!entries.insert(e).second) return InvalidArgument("two kernels have the entry point ", e);
    std::string body = k.source;
    if (size_t p = body.find(include); p != std::string::npos) body.erase(p, include.size());
    if (!c_linkage) {
      const std::string c = "extern \"C\" ";
      for (size_t p = body.find(c); p != std::string::npos; p = body.find(c, p)) body.erase(p, c.size());
    }
    out.source += StrCat("\nnamespace kiln_kernel_", i, " {  // %", k.name, "\n", body, "\n}  // namespace kiln_kernel_", i, "\n");
  }
  return out;
}

namespace {
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
// Replaces whole-identifier occurrences of `from` in `text`.
void ReplaceIdentifier(std::string& text, const std::string& from, const std::string& to) {
  for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p)) {
    const bool starts = p == 0 || !IsIdentChar(text[p - 1]);
    const bool ends = p + from.size() >= text.size() || !IsIdentChar(text[p + from.size()]);
    if (starts && ends) {
      text.replace(p, from.size(), to);
      p += to.size();
    } else {
      p += from.size();
    }
  }
}
}  // namespace

int MakeEntriesUnique(std::vector<codegen::KernelSpec>& kernels) {
  std::set<std::string> taken;
  int renamed = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    codegen::KernelSpec& k = kernels[i];
    for (const std::string& e : k.Entries()) {
      if (taken.insert(e).second) continue;
      const std::string fresh = StrCat(e, "_k", i);
      ReplaceIdentifier(k.source, e, fresh);
      for (codegen::KernelLaunch& l : k.launches)
        if (l.entry == e) l.entry = fresh;
      taken.insert(fresh);
      ++renamed;
    }
  }
  return renamed;
}

StatusOr<codegen::CompiledKernel> RocmKernelCompiler::Compile(const codegen::KernelSpec& kernel,
                                                              std::string_view arch) {
  HsacoSource source;
  source.name = kernel.name;
  source.source = kernel.source;
  source.headers = kernel.headers;
  KILN_ASSIGN_OR_RETURN(CompiledHsaco co, compiler_.Compile(source, arch, path_));
  codegen::CompiledKernel out;
  out.name = kernel.name;
  out.arch = std::string(arch);
  out.cubin = std::move(co.image);
  out.log = std::move(co.log);
  out.from_cache = co.from_cache;
  return out;
}

}  // namespace kiln::rocm
