// The runtime conformance suite on the CUDA driver (label gpu), twice: kernels as cubins for the
// device's architecture, and as PTX JIT-compiled by the driver. Skipped where there is no GPU.
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_test_util.h"
#include "kiln/runtime/cts/conformance.h"

namespace kiln::cuda {
namespace {

using runtime::cts::ConformanceTest;
using runtime::cts::Driver;

StatusOr<runtime::Device*> Device() {
  KILN_ASSIGN_OR_RETURN(CudaDevice * device, testing::TestDevice());
  return static_cast<runtime::Device*>(device);
}

Driver CubinDriver() {
  Driver driver;
  driver.name = "cuda_cubin";
  driver.device = Device;
  driver.kernels = [](runtime::Device& device) -> StatusOr<runtime::ModuleSpec> {
    KILN_ASSIGN_OR_RETURN(NvrtcCompiler * compiler, testing::TestCompiler());
    NvrtcRequest request;
    request.source = runtime::cts::CudaCtsKernelSource();
    request.arch = testing::DeviceArch(device);
    KILN_ASSIGN_OR_RETURN(NvrtcProgram program, compiler->Compile(request));
    return runtime::ModuleSpec::FromCubin(program.cubin, "kiln_cts");
  };
  return driver;
}

Driver PtxDriver() {
  Driver driver;
  driver.name = "cuda_ptx";
  driver.device = Device;
  driver.kernels = [](runtime::Device& device) -> StatusOr<runtime::ModuleSpec> {
    KILN_ASSIGN_OR_RETURN(NvrtcCompiler * compiler, testing::TestCompiler());
    NvrtcRequest request;
    request.source = runtime::cts::CudaCtsKernelSource();
    const runtime::DeviceDescription& d = device.description();
    request.arch = StrCat("compute_", d.compute_capability_major, d.compute_capability_minor);
    KILN_ASSIGN_OR_RETURN(NvrtcProgram program, compiler->Compile(request));
    return runtime::ModuleSpec::FromPtx(program.ptx, "kiln_cts_ptx");
  };
  return driver;
}

INSTANTIATE_TEST_SUITE_P(Cuda, ConformanceTest, ::testing::Values(CubinDriver(), PtxDriver()),
                         runtime::cts::CtsDriverName);

}  // namespace
}  // namespace kiln::cuda
