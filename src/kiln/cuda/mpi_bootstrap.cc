#include "kiln/cuda/mpi_bootstrap.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "kiln/base/strings.h"

namespace kiln::cuda {

namespace {

using InitFn = int (*)(int*, char***);
using FlagFn = int (*)(int*);
using CommIntFn = int (*)(void*, int*);
using VoidFn = int (*)();

VoidFn finalize_fn = nullptr;
FlagFn finalized_fn = nullptr;

void FinalizeAtExit() {
  int done = 0;
  if (finalized_fn != nullptr) finalized_fn(&done);
  if (!done && finalize_fn != nullptr) finalize_fn();
}

}  // namespace

StatusOr<MpiBootstrap*> MpiBootstrap::Get(const std::string& library) {
  static std::mutex mu;
  static MpiBootstrap* instance = nullptr;
  static Status error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    auto* b = new MpiBootstrap();
    Status s = b->Init(library);
    if (s.ok()) instance = b;
    else error = s;
  }
  if (instance == nullptr) return error;
  return instance;
}

Status MpiBootstrap::Init(const std::string& library) {
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates = {library};
  } else {
    candidates = {"libmpi.so.40", "libmpi.so"};
    for (const char* dir : {"/usr/lib/x86_64-linux-gnu/openmpi/lib", "/opt/hpcx/ompi/lib", "/usr/local/mpi/lib",
                            "/opt/openmpi/lib", "/usr/local/lib"})
      candidates.push_back(StrCat(dir, "/libmpi.so.40"));
  }
  void* h = nullptr;
  std::string errors;
  for (const std::string& c : candidates) {
    h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h != nullptr) break;
    const char* e = dlerror();
    if (errors.size() < 600) errors += StrCat(errors.empty() ? "" : "; ", e != nullptr ? e : c);
  }
  if (h == nullptr)
    return NotFound("MPI not found (a run over several processes loads libmpi at run time; name it with "
                    "KILN_CUDA_MPI_LIBRARY): ", errors);
  auto sym = [&](const char* name) { return dlsym(h, name); };
  comm_world_ = sym("ompi_mpi_comm_world");
  byte_type_ = sym("ompi_mpi_byte");
  if (comm_world_ == nullptr || byte_type_ == nullptr)
    return Unimplemented("mpi: the loaded libmpi is not OpenMPI (no ompi_mpi_comm_world): kiln speaks OpenMPI's ABI only");
  auto init = reinterpret_cast<InitFn>(sym("MPI_Init"));
  auto initialized = reinterpret_cast<FlagFn>(sym("MPI_Initialized"));
  auto comm_rank = reinterpret_cast<CommIntFn>(sym("MPI_Comm_rank"));
  auto comm_size = reinterpret_cast<CommIntFn>(sym("MPI_Comm_size"));
  bcast_ = reinterpret_cast<int (*)(void*, int, void*, int, void*)>(sym("MPI_Bcast"));
  barrier_ = reinterpret_cast<int (*)(void*)>(sym("MPI_Barrier"));
  finalize_fn = reinterpret_cast<VoidFn>(sym("MPI_Finalize"));
  finalized_fn = reinterpret_cast<FlagFn>(sym("MPI_Finalized"));
  if (!init || !initialized || !comm_rank || !comm_size || !bcast_ || !barrier_ || !finalize_fn)
    return NotFound("mpi: libmpi lacks one of MPI_Init, MPI_Comm_rank, MPI_Comm_size, MPI_Bcast, MPI_Barrier, MPI_Finalize");
  int already = 0;
  initialized(&already);
  if (!already) {
    if (int rc = init(nullptr, nullptr); rc != 0) return Internal("mpi: MPI_Init failed (", rc, ")");
    std::atexit(FinalizeAtExit);
  }
  if (comm_rank(comm_world_, &rank_) != 0 || comm_size(comm_world_, &size_) != 0)
    return Internal("mpi: MPI_Comm_rank / MPI_Comm_size failed");
  return OkStatus();
}

Status MpiBootstrap::Broadcast(void* data, int bytes, int root) {
  if (int rc = bcast_(data, bytes, byte_type_, root, comm_world_); rc != 0) return Internal("mpi: MPI_Bcast failed (", rc, ")");
  return OkStatus();
}

Status MpiBootstrap::Barrier() {
  if (int rc = barrier_(comm_world_); rc != 0) return Internal("mpi: MPI_Barrier failed (", rc, ")");
  return OkStatus();
}

}  // namespace kiln::cuda
