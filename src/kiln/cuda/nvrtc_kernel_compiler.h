// NvrtcKernelCompiler: codegen's KernelCompiler interface (codegen/compile_kernels.h) over the
// NVRTC service, so that codegen::CompileKernels compiles generated kernels with NVRTC and its
// on-disk cache. Header-only: users link kiln_cuda and kiln_codegen.
//
//   KILN_ASSIGN_OR_RETURN(auto nvrtc, cuda::NvrtcCompiler::Create({}));
//   cuda::NvrtcKernelCompiler compiler(*nvrtc);
//   KILN_ASSIGN_OR_RETURN(auto cubins, codegen::CompileKernels(kernels, compiler, "sm_90", pool));
//
// Thread safety: as NvrtcCompiler (Compile may be called concurrently). `nvrtc` must outlive
// this object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/codegen/compile_kernels.h"
#include "kiln/codegen/kernel_spec.h"
#include "kiln/cuda/nvrtc_compiler.h"

namespace kiln::cuda {

class NvrtcKernelCompiler : public codegen::KernelCompiler {
 public:
  // `options`: extra NVRTC options for every kernel ("-lineinfo"); none by default.
  explicit NvrtcKernelCompiler(NvrtcCompiler& nvrtc, std::vector<std::string> options = {})
      : nvrtc_(nvrtc), options_(std::move(options)) {}

  StatusOr<codegen::CompiledKernel> Compile(const codegen::KernelSpec& kernel,
                                            std::string_view arch) override {
    NvrtcRequest request;
    request.source = kernel.source;
    request.headers = kernel.headers;
    request.arch = std::string(arch);
    request.program_name = kernel.name + ".cu";
    request.options = options_;
    KILN_ASSIGN_OR_RETURN(NvrtcProgram program, nvrtc_.Compile(request));
    return codegen::CompiledKernel{kernel.name, program.arch, std::move(program.cubin),
                                   std::move(program.log), program.from_cache};
  }

 private:
  NvrtcCompiler& nvrtc_;
  std::vector<std::string> options_;
};

}  // namespace kiln::cuda
