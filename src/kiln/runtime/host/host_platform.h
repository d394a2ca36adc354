// The host platform: devices that are the machine's own CPU and memory, implementing every
// runtime interface so that the conformance suite, tests and the CPU backend run anywhere.
//
//   - Streams are in-order work queues, each served by one worker thread.
//   - Events are completion signals with steady-clock timestamps.
//   - "Device memory" and "pinned host memory" are ordinary aligned host memory (256 bytes);
//     copies are memcpy on the stream's thread.
//   - Kernels are C++ functions from a HostKernelLibrary (host_kernel.h).
//   - The stream-ordered allocator is a small pool: blocks return to it in stream order.
#pragma once

#include <memory>

#include "kiln/base/status.h"
#include "kiln/runtime/platform.h"
#include "kiln/runtime/platform_registry.h"

namespace kiln::runtime {

struct HostPlatformOptions {
  // Number of host devices to expose (each an independent set of streams and memory on the
  // same CPU; useful to test multi-device code). Default 1.
  int device_count = 1;
};

StatusOr<std::unique_ptr<Platform>> CreateHostPlatform(const HostPlatformOptions& options = {});

// Registers "host" with `registry`.
Status RegisterHostPlatform(PlatformRegistry& registry, const HostPlatformOptions& options = {});

}  // namespace kiln::runtime
