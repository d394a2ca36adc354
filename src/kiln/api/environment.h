// The environment, read in one place: what the `kiln` tool (and an embedder who wants the same
// behaviour) turns into options. Backends, compilers, kernels and the runtime never read KILN_*
// variables (only platform conventions such as HOME, XDG_CACHE_HOME, CUDA_HOME for their
// defaults).
//
//   KILN_<FLAG>=V        backend flag <flag>=V for every flag a registered backend takes
//                        (Backend::flag_help), the name in upper case: KILN_CPU_ROW_TILING=0 ->
//                        cpu_row_tiling=0, KILN_CUDA_GRAPH=0 -> cuda_graph=0,
//                        KILN_CPU_GEMM_KERNEL=eigen -> cpu_gemm_kernel=eigen,
//                        KILN_CUDA_DRIVER_LIBRARY=P -> cuda_driver_library=P.
//   KILN_NVRTC_LIBRARY, KILN_CUBLAS_LIBRARY, KILN_CUBLASLT_LIBRARY, KILN_CUFFT_LIBRARY,
//   KILN_CUDNN_LIBRARY, KILN_NCCL_LIBRARY
//                        the older names of cuda_nvrtc_library, ... (KILN_CUDA_NVRTC_LIBRARY,
//                        ... work too, and win where both are set).
//   OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK
//                        (set by OpenMPI's mpirun) cuda_process_count, cuda_process_index,
//                        cuda_local_rank: a run over several processes (docs/collectives.md).
//   KILN_CACHE_DIR=DIR   root of kiln's on-disk caches (autotuning, NVRTC kernels):
//                        runtime::DiskCache::SetDefaultRoot (default $XDG_CACHE_HOME/kiln, else
//                        ~/.cache/kiln).
//   KILN_LOCK_DIR=DIR    where the autotuner's device locks live:
//                        autotune::SetDefaultDeviceLockDirectory (default /tmp/kiln-locks).
//   KILN_LOG_LEVEL=N     SetLogLevel(N) (base/logging.h): 0 info, 1 warnings (default), 2 errors.
// Unset and empty variables are the same.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kiln/api/client.h"
#include "kiln/backend/options.h"
#include "kiln/backend/registry.h"

namespace kiln {

// The backend flags the environment sets for the backends of `registry`.
BackendFlags BackendFlagsFromEnvironment(const BackendRegistry& registry);

// What the environment asks of a Client: ClientOptions::flags are the backend flags above for
// every backend built in (platform-level ones, such as cuda_driver_library, take effect when the
// client creates its backends; the rest become every compile's defaults). Other fields keep
// their defaults.
ClientOptions ClientOptionsFromEnvironment();

// Applies the process-wide settings the environment names: KILN_LOG_LEVEL, KILN_CACHE_DIR,
// KILN_LOCK_DIR (see above); those unset are left as they are. Call it once at start-up,
// before creating clients (the `kiln` tool's main does).
void ApplyEnvironmentToProcess();

// The names in a Backend::flag_help() text (each line's text before '=').
std::vector<std::string> FlagNames(std::string_view flag_help);

}  // namespace kiln
