// The process's kiln Client for the Python package, and device names resolved once.
//
// One Client per process, made on first use the way the `kiln` tool makes its own
// (ApplyEnvironmentToProcess, ClientOptionsFromEnvironment: KILN_* variables apply), and never
// destroyed: executables and arrays may outlive the module's globals at interpreter shutdown.
#pragma once

#include <string>
#include <string_view>

#include "kiln/api/client.h"
#include "kiln/base/status.h"

namespace kiln::python {

StatusOr<Client*> GetClient();

// A device as the binding keeps it: the backend and ordinal, and its name ("cuda:0").
struct DeviceRef {
  Backend* backend = nullptr;
  int ordinal = 0;
  std::string name;
  bool is_host() const { return name.rfind("cuda", 0) != 0 && name.rfind("rocm", 0) != 0; }
  bool is_cuda() const { return name.rfind("cuda", 0) == 0; }
};

// Resolves "cpu", "cuda:1", "" (the best device present) through Client::SelectDevice; results
// are memoized by name (devices do not come and go within a process).
StatusOr<DeviceRef> ResolveDevice(std::string_view name);

}  // namespace kiln::python
