// MpiBootstrap: just enough MPI to start NCCL across processes (`mpirun -np N kiln run ...`):
// MPI_Init, the rank and size of MPI_COMM_WORLD, a broadcast of bytes (the NCCL unique id) and
// a barrier. libmpi is loaded at run time (dlopen RTLD_GLOBAL: OpenMPI's own plugins need its
// symbols), like every vendor library; no MPI header is needed to build. The handles are
// OpenMPI's (the symbols ompi_mpi_comm_world and ompi_mpi_byte): another MPI is refused with a
// message. MPI_Finalize runs at exit.
//
// Where libmpi is looked for: `library` (CudaLibraryPaths::mpi, KILN_CUDA_MPI_LIBRARY), else
// libmpi.so.40, libmpi.so the usual way, then the usual OpenMPI prefixes
// (/usr/lib/x86_64-linux-gnu/openmpi/lib, /opt/hpcx/ompi/lib, /usr/local/mpi/lib, /opt/openmpi/lib).
#pragma once

#include <string>

#include "kiln/base/status.h"

namespace kiln::cuda {

class MpiBootstrap {
 public:
  // Initializes MPI once per process (the first call's outcome is kept).
  static StatusOr<MpiBootstrap*> Get(const std::string& library = "");

  int rank() const { return rank_; }
  int size() const { return size_; }
  // `bytes` at `data` from `root` to every rank.
  Status Broadcast(void* data, int bytes, int root);
  Status Barrier();

 private:
  MpiBootstrap() = default;
  Status Init(const std::string& library);

  int rank_ = 0, size_ = 1;
  void* comm_world_ = nullptr;
  void* byte_type_ = nullptr;
  int (*bcast_)(void*, int, void*, int, void*) = nullptr;
  int (*barrier_)(void*) = nullptr;
};

}  // namespace kiln::cuda
