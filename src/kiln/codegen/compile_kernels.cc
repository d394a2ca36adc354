#include "kiln/codegen/compile_kernels.h"

#include <optional>

namespace kiln::codegen {

StatusOr<std::vector<CompiledKernel>> CompileKernels(std::span<const KernelSpec> kernels,
                                                     KernelCompiler& compiler,
                                                     std::string_view arch, ThreadPool& pool) {
  const int64_t n = static_cast<int64_t>(kernels.size());
  std::vector<std::optional<StatusOr<CompiledKernel>>> results(n);
  const std::string arch_name(arch);
  pool.ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) results[i].emplace(compiler.Compile(kernels[i], arch_name));
  });
  std::vector<CompiledKernel> out;
  out.reserve(n);
  Status first;
  int64_t failures = 0;
  for (int64_t i = 0; i < n; ++i) {
    StatusOr<CompiledKernel>& r = *results[i];
    if (!r.ok()) {
      if (failures++ == 0)
        first = r.status().WithContext("compiling kernel " + kernels[i].name + " for " + arch_name);
      continue;
    }
    out.push_back(std::move(r).value());
  }
  if (failures > 1)
    return Status(first.code(), first.message() + " (and " + std::to_string(failures - 1) +
                                    " more kernel(s) failed)");
  if (failures == 1) return first;
  return out;
}

}  // namespace kiln::codegen
