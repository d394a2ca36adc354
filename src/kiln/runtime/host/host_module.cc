// Host kernel libraries, modules and kernels.
#include "kiln/base/strings.h"
#include "kiln/runtime/host/host_internal.h"

namespace kiln::runtime {

Status HostKernelLibrary::Add(std::string name, HostKernelFn fn, int max_threads_per_block) {
  if (!fn) return InvalidArgument("host kernel '", name, "' has no function");
  if (max_threads_per_block < 1) {
    return InvalidArgument("host kernel '", name, "': max_threads_per_block must be positive");
  }
  auto [it, inserted] = entries_.emplace(std::move(name), Entry{std::move(fn), max_threads_per_block});
  if (!inserted) return AlreadyExists("host kernel '", it->first, "' is already defined");
  return OkStatus();
}

const HostKernelLibrary::Entry* HostKernelLibrary::Find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> HostKernelLibrary::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

namespace host_internal {

StatusOr<Kernel*> HostModule::GetKernel(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = kernels_.find(name); it != kernels_.end()) return it->second.get();
  const HostKernelLibrary::Entry* entry = library_->Find(name);
  if (entry == nullptr) {
    return NotFound("no host kernel '", name, "' in the module (it has: ",
                    StrJoin(library_->names(), ", "), ")");
  }
  auto kernel = std::make_unique<HostKernel>(std::string(name), entry);
  Kernel* out = kernel.get();
  kernels_.emplace(std::string(name), std::move(kernel));
  return out;
}

StatusOr<KernelAttributes> HostKernel::GetAttributes() const {
  KernelAttributes attributes;
  attributes.max_threads_per_block = entry_->max_threads_per_block;
  return attributes;
}

StatusOr<int> HostKernel::MaxActiveBlocksPerMultiprocessor(int block_size,
                                                           uint64_t dynamic_shared) const {
  if (block_size < 1 || block_size > entry_->max_threads_per_block) {
    return InvalidArgument("block size ", block_size, " is outside [1, ",
                           entry_->max_threads_per_block, "] for host kernel '", name_, "'");
  }
  if (dynamic_shared > max_dynamic_shared_) return 0;
  return 1;  // a host "multiprocessor" (hardware thread) runs one block at a time
}

Status HostKernel::SetMaxDynamicSharedMemory(uint64_t bytes) {
  if (bytes > (16u << 20)) {
    return InvalidArgument("host kernels allow at most 16 MiB of shared memory, asked for ",
                           bytes);
  }
  max_dynamic_shared_ = bytes;
  return OkStatus();
}

}  // namespace host_internal
}  // namespace kiln::runtime
