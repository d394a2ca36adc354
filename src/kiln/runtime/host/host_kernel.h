// Host kernels: C++ functions the host driver launches like device kernels.
//
// A host kernel is called once per block of the launch grid, in order (z, y, x), on the
// stream's worker thread; it loops over the block's threads itself. This keeps CUDA's
// grid/block vocabulary so that one conformance suite and one set of launch helpers serve every
// driver. Example (the host twin of a CUDA `out[i] = value` kernel):
//
//   library->Add("fill_u32", [](const HostKernelContext& ctx) -> Status {
//     auto* out = ctx.args.Get<uint32_t*>(0);
//     uint32_t value = ctx.args.Get<uint32_t>(1);
//     uint64_t n = ctx.args.Get<uint64_t>(2);
//     for (uint32_t t = 0; t < ctx.dims.block.x; ++t) {
//       uint64_t i = uint64_t{ctx.block_index.x} * ctx.dims.block.x + t;
//       if (i < n) out[i] = value;
//     }
//     return OkStatus();
//   });
//
// An error returned by a kernel becomes the stream's (sticky) error, reported by the next
// Synchronize. Kernels must be thread-safe if launched on several streams at once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/runtime/kernel_args.h"
#include "kiln/runtime/types.h"

namespace kiln::runtime {

struct HostKernelContext {
  const LaunchDims& dims;
  Dim3 block_index;
  const KernelArgs& args;
  // dims.shared_memory_bytes of scratch private to this block (contents undefined on entry).
  void* shared_memory;
};

using HostKernelFn = std::function<Status(const HostKernelContext& context)>;

class HostKernelLibrary {
 public:
  struct Entry {
    HostKernelFn fn;
    int max_threads_per_block = 1024;
  };

  // AlreadyExists when `name` is taken.
  Status Add(std::string name, HostKernelFn fn, int max_threads_per_block = 1024);
  // nullptr when absent.
  const Entry* Find(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace kiln::runtime
