// Module and Kernel: device code loaded onto a device, and the entry points inside it.
//
// A ModuleSpec says where code comes from: a CUDA cubin (ELF), PTX text (JIT-compiled by the
// driver at load time), an AMDGPU code object (HSACO, an ELF for one gfx target), or a host
// kernel library (C++ functions, for the host driver). A driver
// rejects formats it cannot load with InvalidArgument.
//
// Ownership: a Module owns its Kernels; a Kernel pointer is valid while its Module lives. The
// Module must outlive every launch of its kernels (destroying it while launches are pending is a
// caller bug: synchronize first).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kiln/base/status.h"

namespace kiln::runtime {

class HostKernelLibrary;  // runtime/host/host_kernel.h

struct ModuleSpec {
  enum class Format { kCubin, kPtx, kHostLibrary, kHsaco };
  Format format = Format::kCubin;
  std::string image;  // cubin or code object bytes, or PTX text
  std::shared_ptr<const HostKernelLibrary> host_library;
  std::string name;  // for messages ("fusion_3", "cts_kernels")

  static ModuleSpec FromCubin(std::string cubin, std::string name = "");
  static ModuleSpec FromPtx(std::string ptx, std::string name = "");
  static ModuleSpec FromHsaco(std::string code_object, std::string name = "");
  static ModuleSpec FromHostLibrary(std::shared_ptr<const HostKernelLibrary> library,
                                    std::string name = "");
};
const char* ModuleFormatName(ModuleSpec::Format format);

// Static properties of a compiled kernel (0 = unknown).
struct KernelAttributes {
  int max_threads_per_block = 0;  // the most threads a launch of this kernel may use
  int registers_per_thread = 0;
  uint64_t static_shared_memory_bytes = 0;
  uint64_t local_memory_bytes = 0;  // per thread (spills)
  int ptx_version = 0;              // e.g. 90
  int binary_version = 0;           // SASS architecture, e.g. 90
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  virtual std::string_view name() const = 0;
  virtual StatusOr<KernelAttributes> GetAttributes() const = 0;
  // Occupancy: how many blocks of `block_size` threads using `dynamic_shared_memory_bytes` fit on
  // one multiprocessor at once.
  virtual StatusOr<int> MaxActiveBlocksPerMultiprocessor(
      int block_size, uint64_t dynamic_shared_memory_bytes) const = 0;
  // Raises the dynamic shared memory a launch may request (CUDA needs this above 48 KiB).
  virtual Status SetMaxDynamicSharedMemory(uint64_t bytes) = 0;

 protected:
  Kernel() = default;
};

class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The entry point `name` (the mangled/lowered name for C++ kernels); NotFound lists what the
  // module holds when it can. Repeated calls return the same Kernel.
  virtual StatusOr<Kernel*> GetKernel(std::string_view name) = 0;

 protected:
  Module() = default;
};

}  // namespace kiln::runtime
