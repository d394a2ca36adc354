#include "kiln/eval/collective_groups.h"

#include <algorithm>

#include "kiln/base/strings.h"

namespace kiln {

std::string_view CollectiveGroupModeString(CollectiveGroupMode m) {
  switch (m) {
    case CollectiveGroupMode::kCrossReplica:
      return "cross-replica";
    case CollectiveGroupMode::kCrossPartition:
      return "cross-partition";
    case CollectiveGroupMode::kCrossReplicaAndPartition:
      return "cross-replica-and-partition";
    case CollectiveGroupMode::kFlattenedId:
      return "flattened-id";
  }
  return "?";
}

namespace {

// Ops that carry use_global_device_ids (XLA: all-reduce and reduce-scatter, all-gather).
bool HasGlobalDeviceIdsField(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
      return true;
    default:
      return false;
  }
}

std::string Where(const HloInstruction& instr) {
  std::string s = StrCat(HloOpcodeString(instr.opcode()), " %", instr.name());
  if (instr.location().line > 0) s += StrCat(" at line ", instr.location().line);
  return s;
}

}  // namespace

StatusOr<CollectiveGroupMode> GroupModeOf(const HloInstruction& instr) {
  const bool channel = instr.attrs().channel_id.has_value();
  const bool global = instr.attrs().use_global_device_ids;
  if (!channel) {
    if (global)
      return InvalidArgument(Where(instr), ": use_global_device_ids=true needs a channel_id");
    return CollectiveGroupMode::kCrossReplica;
  }
  if (!HasGlobalDeviceIdsField(instr.opcode())) return CollectiveGroupMode::kCrossPartition;
  return global ? CollectiveGroupMode::kFlattenedId : CollectiveGroupMode::kCrossReplicaAndPartition;
}

StatusOr<std::vector<int64_t>> CollectiveGroupOf(const HloInstruction& instr,
                                                 const DeviceGrid& grid, int64_t device) {
  KILN_ASSIGN_OR_RETURN(CollectiveGroupMode mode, GroupModeOf(instr));
  const int64_t replica = grid.ReplicaOf(device), partition = grid.PartitionOf(device);
  // The id of `device` in the groups' id space, and that space's size.
  int64_t my_id = 0, space = 0;
  switch (mode) {
    case CollectiveGroupMode::kCrossReplica:
    case CollectiveGroupMode::kCrossReplicaAndPartition:
      my_id = replica;
      space = grid.replica_count;
      break;
    case CollectiveGroupMode::kCrossPartition:
      my_id = partition;
      space = grid.num_partitions;
      break;
    case CollectiveGroupMode::kFlattenedId:
      my_id = device;
      space = grid.num_devices();
      break;
  }
  std::vector<int64_t> ids;
  const auto& rg = instr.attrs().replica_groups;
  std::vector<std::vector<int64_t>> groups;
  if (rg) groups = rg->Groups();
  if (groups.empty() || (groups.size() == 1 && groups[0].empty())) {
    for (int64_t i = 0; i < space; ++i) ids.push_back(i);
  } else {
    int found = 0;
    for (const auto& g : groups)
      if (std::find(g.begin(), g.end(), my_id) != g.end()) {
        ids = g;
        ++found;
      }
    if (found != 1)
      return InvalidArgument(Where(instr), ": ", CollectiveGroupModeString(mode), " id ", my_id,
                             found ? " is in more than one replica group"
                                   : " is in no replica group",
                             " (", grid.replica_count, " replicas x ", grid.num_partitions,
                             " partitions)");
  }
  for (int64_t id : ids)
    if (id < 0 || id >= space)
      return InvalidArgument(Where(instr), ": replica group member ", id, " is outside the ",
                             space, " ", CollectiveGroupModeString(mode), " ids of a run over ",
                             grid.replica_count, " replicas x ", grid.num_partitions,
                             " partitions");
  std::vector<int64_t> out;
  switch (mode) {
    case CollectiveGroupMode::kCrossReplica:
      for (int64_t r : ids) out.push_back(grid.DeviceId(r, partition));
      break;
    case CollectiveGroupMode::kCrossPartition:
      for (int64_t p : ids) out.push_back(grid.DeviceId(replica, p));
      break;
    case CollectiveGroupMode::kCrossReplicaAndPartition:
      for (int64_t r : ids)
        for (int64_t p = 0; p < grid.num_partitions; ++p) out.push_back(grid.DeviceId(r, p));
      break;
    case CollectiveGroupMode::kFlattenedId:
      out = ids;
      break;
  }
  return out;
}

StatusOr<PermuteDomain> PermuteDomainOf(const HloInstruction& instr, const DeviceGrid& grid,
                                        int64_t device) {
  PermuteDomain d;
  const int64_t replica = grid.ReplicaOf(device), partition = grid.PartitionOf(device);
  if (instr.attrs().channel_id.has_value()) {  // partition ids
    d.my_id = partition;
    for (int64_t p = 0; p < grid.num_partitions; ++p) d.devices.push_back(grid.DeviceId(replica, p));
  } else {  // replica ids
    d.my_id = replica;
    for (int64_t r = 0; r < grid.replica_count; ++r) d.devices.push_back(grid.DeviceId(r, partition));
  }
  return d;
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> SendRecvPairs(const HloInstruction& instr) {
  for (const auto& [k, v] : instr.frontend_attributes()) {
    if (k != "_xla_send_recv_source_target_pairs") continue;
    // {{0,1},{1,2}}: digits in pairs.
    std::vector<int64_t> nums;
    int64_t cur = 0;
    bool in_num = false;
    for (char c : v) {
      if (c >= '0' && c <= '9') {
        cur = cur * 10 + (c - '0');
        in_num = true;
      } else {
        if (in_num) nums.push_back(cur);
        cur = 0;
        in_num = false;
        if (c != '{' && c != '}' && c != ',' && c != ' ' && c != '"')
          return InvalidArgument(Where(instr), ": malformed _xla_send_recv_source_target_pairs \"",
                                 v, "\"");
      }
    }
    if (in_num) nums.push_back(cur);
    if (nums.size() % 2 != 0)
      return InvalidArgument(Where(instr), ": odd number of ids in "
                                           "_xla_send_recv_source_target_pairs \"", v, "\"");
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (size_t i = 0; i < nums.size(); i += 2) pairs.emplace_back(nums[i], nums[i + 1]);
    return pairs;
  }
  return InvalidArgument(Where(instr),
                         ": send/recv between devices needs the frontend attribute "
                         "_xla_send_recv_source_target_pairs");
}

}  // namespace kiln
