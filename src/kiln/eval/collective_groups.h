// Who takes part in a collective: XLA's group modes, replica groups and source-target pairs
// turned into lists of global device ids. Shared by the evaluator and the backends' collective
// thunks, so every backend forms the same groups.
//
// Note [Participants]
// A module runs over replica_count x num_partitions participants. Participant (replica r,
// partition p) has the global device id r * num_partitions + p (XLA's flattened id with the
// default device assignment, where device d runs replica d / P, partition d % P). Groups are
// lists of global ids in rank order: rank order is the order in which all-gather concatenates,
// reduce-scatter and all-to-all hand out chunks, and collective-broadcast takes its root
// (rank 0).
//
// The group mode (XLA's CollectiveOpGroupMode) says what the ids in replica_groups mean:
//   cross-replica               no channel_id: replica ids; a group meets within each
//                               partition (members (r, my partition) for r in the group).
//   cross-partition             channel_id on an op without use_global_device_ids (all-to-all,
//                               ragged-all-to-all, collective-broadcast, collective-permute,
//                               send/recv): partition ids, within each replica.
//   cross-replica-and-partition channel_id, use_global_device_ids=false (all-reduce,
//                               reduce-scatter, all-gather): replica ids; the group holds every
//                               partition of each listed replica, replica-major.
//   flattened-id                channel_id, use_global_device_ids=true: global ids.
// Empty replica_groups mean one group of every replica (cross-replica,
// cross-replica-and-partition), every partition (cross-partition) or every device
// (flattened-id). use_global_device_ids without channel_id is invalid (InvalidArgument).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/instruction.h"

namespace kiln {

enum class CollectiveGroupMode : uint8_t {
  kCrossReplica,
  kCrossPartition,
  kCrossReplicaAndPartition,
  kFlattenedId,
};
std::string_view CollectiveGroupModeString(CollectiveGroupMode m);  // "cross-replica", ...

// The device grid of a run: replica_count x num_partitions participants.
struct DeviceGrid {
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  int64_t num_devices() const { return replica_count * num_partitions; }
  int64_t DeviceId(int64_t replica, int64_t partition) const {
    return replica * num_partitions + partition;
  }
  int64_t ReplicaOf(int64_t device) const { return device / num_partitions; }
  int64_t PartitionOf(int64_t device) const { return device % num_partitions; }
};

// The group mode of a collective (see the Note). `instr` is a collective or its -start form,
// collective-permute, send or recv.
StatusOr<CollectiveGroupMode> GroupModeOf(const HloInstruction& instr);

// The members of the group `device` belongs to, as global ids in rank order, for an op with
// replica groups (all-reduce, all-gather, reduce-scatter, all-to-all, ragged-all-to-all,
// collective-broadcast and their -start forms). InvalidArgument when `device` is in no group,
// in two, or when the group names an id outside the grid.
StatusOr<std::vector<int64_t>> CollectiveGroupOf(const HloInstruction& instr,
                                                 const DeviceGrid& grid, int64_t device);

// A point-to-point op (collective-permute, send, recv): the participants it runs among (the
// devices that share `device`'s replica when the ids are partition ids, its partition when they
// are replica ids; global ids, ascending), and the pairs in that id space.
struct PermuteDomain {
  std::vector<int64_t> devices;  // global ids; devices[i] has id i in the pairs' id space
  int64_t my_id = 0;             // `device`'s id in the pairs' id space
};
StatusOr<PermuteDomain> PermuteDomainOf(const HloInstruction& instr, const DeviceGrid& grid,
                                        int64_t device);

// The source-target pairs of a send or recv: the frontend attribute
// _xla_send_recv_source_target_pairs="{{0,1},{1,2}}" (InvalidArgument when absent or
// malformed).
StatusOr<std::vector<std::pair<int64_t, int64_t>>> SendRecvPairs(const HloInstruction& instr);

}  // namespace kiln
