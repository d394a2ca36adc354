// CUDA modules (cuModule*) and kernels (cuFunc*).
#include "kiln/base/logging.h"
#include "kiln/base/strings.h"
#include "kiln/cuda/cuda_device.h"

namespace kiln::cuda {

CudaModule::~CudaModule() {
  kernels_.clear();
  Status status = device_.Activate();
  if (status.ok()) status = KILN_CU(device_.api(), cuModuleUnload(module_));
  if (!status.ok()) {
    KILN_LOG(Warning) << "unloading module '" << name_ << "': " << status.ToString();
  }
}

StatusOr<runtime::Kernel*> CudaModule::GetKernel(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = kernels_.find(name); it != kernels_.end()) return it->second.get();
  KILN_RETURN_IF_ERROR(device_.Activate());
  std::string key(name);
  CUfunction function;
  CUresult result = device_.api().cuModuleGetFunction(&function, module_, key.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) {
    return NotFound("no kernel '", name, "' in module '", name_,
                    "' (C++ kernels need their mangled name, or extern \"C\")");
  }
  KILN_RETURN_IF_ERROR(CuStatus(device_.api(), result, StrCat("cuModuleGetFunction(", key, ")")));
  auto kernel = std::make_unique<CudaKernel>(device_, key, function);
  runtime::Kernel* out = kernel.get();
  kernels_.emplace(std::move(key), std::move(kernel));
  return out;
}

StatusOr<runtime::KernelAttributes> CudaKernel::GetAttributes() const {
  KILN_RETURN_IF_ERROR(device_.Activate());
  const DriverApi& api = device_.api();
  auto get = [&](CUfunction_attribute attribute, int& out) -> Status {
    return KILN_CU(api, cuFuncGetAttribute(&out, attribute, function_));
  };
  runtime::KernelAttributes a;
  int shared = 0, local = 0;
  KILN_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, a.max_threads_per_block));
  KILN_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_NUM_REGS, a.registers_per_thread));
  KILN_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, shared));
  KILN_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, local));
  KILN_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_PTX_VERSION, a.ptx_version));
  KILN_RETURN_IF_ERROR(get(CU_FUNC_ATTRIBUTE_BINARY_VERSION, a.binary_version));
  a.static_shared_memory_bytes = static_cast<uint64_t>(shared);
  a.local_memory_bytes = static_cast<uint64_t>(local);
  return a;
}

StatusOr<int> CudaKernel::MaxActiveBlocksPerMultiprocessor(int block_size,
                                                           uint64_t dynamic_shared) const {
  KILN_RETURN_IF_ERROR(device_.Activate());
  int blocks = 0;
  KILN_RETURN_IF_ERROR(KILN_CU(device_.api(), cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                                  &blocks, function_, block_size, dynamic_shared)));
  return blocks;
}

Status CudaKernel::SetMaxDynamicSharedMemory(uint64_t bytes) {
  uint64_t limit = device_.description().shared_memory_per_block_optin;
  if (limit != 0 && bytes > limit) {
    return InvalidArgument("kernel '", name_, "': ", bytes,
                           " bytes of dynamic shared memory exceed the device's opt-in limit of ",
                           limit);
  }
  KILN_RETURN_IF_ERROR(device_.Activate());
  return KILN_CU(device_.api(),
                 cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(bytes)));
}

}  // namespace kiln::cuda
