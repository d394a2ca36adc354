// GraphApi: the driver's CUDA graph functions that only the executable (capture and replay,
// Note [CUDA graph capture] in gpu_executable.h) and the control-flow thunks (conditional
// nodes, Notes [Device-side loops] and [Device-side conditionals] in control_flow_thunks.h)
// call, so they are not in driver_api.h's required list: one table, loaded once per process.
//
//   KILN_ASSIGN_OR_RETURN(const GraphApi* g, LoadGraphApi(device.api()));
//   KILN_RETURN_IF_ERROR(CuStatus(api, g->cuStreamBeginCapture(s, mode), "cuStreamBeginCapture"));
//
// The capture-and-replay functions are required: LoadGraphApi fails without them. The
// conditional-node and linker functions (CUDA 12.4) are optional: where the driver lacks one
// they stay null, and LoadConditionalGraphApi fails naming it. Thread-safe; the table lives
// for the process.
#pragma once

#include <cuda.h>

#include "kiln/base/status.h"
#include "kiln/cuda/driver_api.h"

// Capture and replay.
#define KILN_CUDA_GRAPH_FUNCTIONS(X)                                                        \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) \
  X(cuGraphExecDestroy) X(cuGraphDestroy)

// Conditional nodes, capture into a given graph, and the linker (the set-condition kernels
// are linked with the device runtime).
#define KILN_CUDA_GRAPH_CONDITIONAL_FUNCTIONS(X)                                              \
  X(cuStreamGetCaptureInfo) X(cuGraphConditionalHandleCreate) X(cuGraphAddNode)               \
  X(cuStreamBeginCaptureToGraph) X(cuGraphGetNodes) X(cuGraphAddEmptyNode) X(cuLinkCreate)    \
  X(cuLinkAddData) X(cuLinkAddFile) X(cuLinkComplete) X(cuLinkDestroy)

namespace kiln::cuda {

struct GraphApi {
#define KILN_CUDA_DECLARE_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CUDA_GRAPH_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
  KILN_CUDA_GRAPH_CONDITIONAL_FUNCTIONS(KILN_CUDA_DECLARE_MEMBER)
#undef KILN_CUDA_DECLARE_MEMBER
  // OK when every conditional-node function loaded, else the first missing one.
  Status conditionals;
};

StatusOr<const GraphApi*> LoadGraphApi(const DriverApi& api);
// LoadGraphApi, failing unless the conditional-node functions loaded too.
StatusOr<const GraphApi*> LoadConditionalGraphApi(const DriverApi& api);

}  // namespace kiln::cuda
