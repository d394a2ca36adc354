#include "kiln/cuda/libs/kernel_loader.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "kiln/cuda/cuda_platform.h"

namespace kiln::cuda::libs {

StatusOr<NvrtcCompiler*> LibraryCompiler() {
  static auto* compiler =
      new StatusOr<std::unique_ptr<NvrtcCompiler>>(NvrtcCompiler::Create(NvrtcOptions{}));
  if (!compiler->ok()) return compiler->status();
  return compiler->value().get();
}

StatusOr<runtime::Module*> LoadLibraryModule(CudaDevice& device, NvrtcRequest request) {
  struct Cache {
    std::mutex mu;
    std::map<std::pair<const CudaDevice*, std::string>, std::unique_ptr<runtime::Module>> modules;
  };
  static auto* cache = new Cache;  // never destroyed: modules outlive every plan
  KILN_ASSIGN_OR_RETURN(NvrtcCompiler * compiler, LibraryCompiler());
  const runtime::DeviceDescription& d = device.description();
  request.arch = ArchForComputeCapability(d.compute_capability_major, d.compute_capability_minor);
  std::pair<const CudaDevice*, std::string> key(&device, compiler->CacheKey(request));
  std::lock_guard<std::mutex> lock(cache->mu);
  if (auto it = cache->modules.find(key); it != cache->modules.end()) return it->second.get();
  KILN_ASSIGN_OR_RETURN(NvrtcProgram program, compiler->Compile(request));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Module> module,
                        device.LoadModule(runtime::ModuleSpec::FromCubin(std::move(program.cubin),
                                                                         request.program_name)));
  runtime::Module* out = module.get();
  cache->modules.emplace(std::move(key), std::move(module));
  return out;
}

}  // namespace kiln::cuda::libs
