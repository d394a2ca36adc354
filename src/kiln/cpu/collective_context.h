// CollectiveContext: who one run of a CPU executable is in a multi-participant run -- its
// place in the grid, the communicator its collective kernels call, the rendezvous its send /
// recv-done kernels post and take messages at (kernels/collectives.cc) -- and the run's
// occurrence counters (the k-th execution of an op on one participant meets the k-th on the
// others). One per participant per run; the CPU backend's ExecuteParticipants makes them
// (docs/collectives.md). Without one a run is a participant alone (a group with another member
// is an error); a module that sends gets one of its own per run from the executable.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kiln/eval/collective_groups.h"
#include "kiln/eval/communicator.h"
#include "kiln/eval/rendezvous.h"

namespace kiln::cpu {

struct CollectiveContext {
  DeviceGrid grid;
  int64_t device = 0;  // global id: replica * num_partitions + partition
  std::shared_ptr<Rendezvous> rendezvous;
  Communicator* communicator = nullptr;  // over `rendezvous`

  int64_t replica_id() const { return grid.ReplicaOf(device); }
  int64_t partition_id() const { return grid.PartitionOf(device); }
  // Counts one more execution of `op` in this run; returns how many came before.
  int64_t NextOccurrence(const void* op) const {
    std::lock_guard<std::mutex> lock(mu);
    return occurrences[op]++;
  }

  mutable std::mutex mu;
  mutable std::unordered_map<const void*, int64_t> occurrences;
};

}  // namespace kiln::cpu
