// NcclWorld: the NCCL communicators of one run over N participants, for the participants this
// process drives -- every one of them (one process driving N GPUs, ncclCommInitAll), or some
// (one process per GPU under MPI: ncclCommInitRank on a unique id that rank 0 made and
// broadcast, mpi_bootstrap.h).
//
// Note [NCCL communicators]
//   World rank r is participant r (global device id r = replica * num_partitions + partition,
//   docs/collectives.md), so point-to-point ops (collective-permute, send/recv, all-to-all,
//   collective-broadcast) address world ranks directly on the world communicator. Ops that
//   reduce or gather over a group (all-reduce, all-gather, reduce-scatter) need a communicator
//   of exactly the group: the world one when the group is every participant in order, else one
//   split from the world (ncclCommSplit: color = the group's smallest id, key = the rank in the
//   group), made when a participant first reaches an op of that group and cached per (rank,
//   group) for the world's lifetime. ncclCommSplit is collective over the world: every
//   participant reaches the same op at the same point of the same program (SPMD), so they all
//   split together, each on its own thread.
//
// Note [Never a hang on NCCL]
//   A rank that fails, or a peer that never comes, would leave NCCL kernels spinning on the GPU
//   forever. Wait() replaces a plain stream synchronize: it polls the stream, the rank's
//   communicators (ncclCommGetAsyncError) and the world's abort flag; on an NCCL error, an
//   abort by another participant (Abort: a participant that failed before its collectives) or
//   the timeout, it calls ncclCommAbort on every communicator of the world, which frees the
//   kernels, and returns the error (DEADLINE_EXCEEDED after the timeout). An aborted world is
//   dead: later calls fail with the abort's reason; the owner makes a new one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/cuda/nccl_api.h"

namespace kiln::cuda {

class CudaDevice;

class NcclWorld {
 public:
  // Every participant in this process: participant i on devices[i] (distinct devices: NCCL
  // takes one rank per GPU).
  static StatusOr<std::shared_ptr<NcclWorld>> CreateInProcess(std::shared_ptr<const NcclApi> api,
                                                              std::vector<CudaDevice*> devices);
  // Participants `local` (world ranks, ascending) of a world of `nranks`, local[k] on
  // devices[k], joined through `id` (the same on every process).
  static StatusOr<std::shared_ptr<NcclWorld>> CreateWithId(std::shared_ptr<const NcclApi> api,
                                                           const nccl::ncclUniqueId& id, int64_t nranks,
                                                           std::vector<int64_t> local,
                                                           std::vector<CudaDevice*> devices);
  ~NcclWorld();
  NcclWorld(const NcclWorld&) = delete;
  NcclWorld& operator=(const NcclWorld&) = delete;

  const NcclApi& api() const { return *api_; }
  int64_t size() const { return nranks_; }
  bool IsLocal(int64_t rank) const;
  CudaDevice* device(int64_t rank) const;

  // The world communicator of local rank `rank`.
  StatusOr<nccl::ncclComm_t> World(int64_t rank);
  // The communicator of `group` (world ranks in rank order) for its member `rank` (Note [NCCL
  // communicators]).
  StatusOr<nccl::ncclComm_t> Group(int64_t rank, std::span<const int64_t> group);

  // OK unless one of `rank`'s communicators reported an asynchronous error or the world was
  // aborted.
  Status Check(int64_t rank);
  // Waits until `done()` says the rank's work is complete (Note [Never a hang on NCCL]).
  Status Wait(int64_t rank, const std::function<StatusOr<bool>()>& done, std::chrono::milliseconds timeout);
  // Aborts every communicator; the first reason given is what later calls report.
  void Abort(const Status& why);
  bool aborted() const { return aborted_.load(); }

  // Checks `result` of `call` on `comm` (NcclStatus).
  Status Result(nccl::ncclResult_t result, std::string_view call, nccl::ncclComm_t comm = nullptr) const {
    return NcclStatus(*api_, result, call, comm);
  }

 private:
  NcclWorld(std::shared_ptr<const NcclApi> api, int64_t nranks) : api_(std::move(api)), nranks_(nranks) {}
  struct Rank {
    CudaDevice* device = nullptr;
    nccl::ncclComm_t world = nullptr;
    std::map<std::vector<int64_t>, nccl::ncclComm_t> groups;
  };
  Rank* Local(int64_t rank);

  std::shared_ptr<const NcclApi> api_;
  int64_t nranks_ = 0;
  std::map<int64_t, Rank> ranks_;
  std::mutex mu_;  // ranks_' group maps, the abort
  std::atomic<bool> aborted_{false};
  Status abort_reason_;
};

}  // namespace kiln::cuda
