// Internal to buffer assignment (buffer_assignment.cc, buffer_packing.cc): the assigner's
// state. Not part of the public interface.
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/passes/buffer_assignment.h"
#include "kiln/passes/call_graph.h"

namespace kiln {

// One logical buffer: storage that one or more positions (instruction, leaf) share. Buffers
// are merged (union-find) when a value takes over another's storage.
struct LogicalBuffer {
  enum class Origin : uint8_t { kArena, kParameter, kConstant };
  Origin origin = Origin::kArena;
  const HloInstruction* def = nullptr;  // defining position
  ShapeIndex index;
  int64_t size = 0;
  bool writable = false;   // may be updated in place (Note [In-place updates])
  bool live_out = false;   // holds an entry output leaf
  int64_t parent = -1;     // union-find
  // Live range in the flattened schedule (computed by ComputeLiveRanges).
  int64_t start = 0, end = -1;
  // Packing result (arena) or allocation index (parameters/constants).
  int64_t allocation = -1, offset = 0;
};

struct PositionKey {
  const HloInstruction* instr;
  ShapeIndex index;
  bool operator==(const PositionKey&) const = default;
};
struct PositionKeyHash {
  size_t operator()(const PositionKey& k) const;
};

struct WhileInfo {
  std::vector<ShapeIndex> leaves;
  std::vector<int64_t> init, state, body_result, staging;  // buffer ids (-1: none)
  std::vector<bool> copy_init, copy_body_result;
};

class BufferAssigner {
 public:
  BufferAssigner(const HloModule& module, const BufferAssignmentOptions& options,
                 const HloSchedule& schedule, std::unordered_set<int64_t> undonatable);
  StatusOr<std::unique_ptr<BufferAssignment>> Run();
  // Parameter leaves (allocation order numbers) whose donation had to be dropped; Run()
  // returns FailedPrecondition("retry") after filling this when a must-alias conflicts with
  // in-place updates.
  const std::unordered_set<int64_t>& undonatable() const { return undonatable_; }

 private:
  // ---- the walk (buffer_assignment.cc) ----
  Status Visit(const HloComputation* c, const std::vector<std::vector<int64_t>>* params);
  Status VisitWhile(const HloInstruction* w);
  Status VisitConditional(const HloInstruction* c);
  Status VisitCall(const HloInstruction* call);
  void VisitFusionOrCustomCall(const HloInstruction* instr);
  int64_t NewBuffer(LogicalBuffer::Origin origin, const HloInstruction* def, const ShapeIndex& index);
  void Define(const HloInstruction* instr);
  void SetPosition(const HloInstruction* instr, const ShapeIndex& index, int64_t buffer);
  void AliasLeaves(const HloInstruction* instr, const HloInstruction* source, const ShapeIndex& prefix);
  int64_t Get(const HloInstruction* instr, const ShapeIndex& index) const;
  int64_t Find(int64_t b) const;
  void Merge(int64_t from, int64_t into);
  // Note [In-place updates]: may `x` (at the current time) take over buffer `b`, which it reads
  // through operand `operand_number`?
  bool CanUpdateInPlace(int64_t b, const HloInstruction* x, int64_t operand_number) const;
  int64_t UseTime(const HloInstruction* user) const;  // -1: not visited yet
  bool IsRootPosition(const PositionKey& p) const;

  // ---- liveness, donation, packing, output (buffer_packing.cc) ----
  void ComputeLiveRanges();
  Status ResolveDonations();
  Status Pack(BufferAssignment& out);
  void FillResult(BufferAssignment& out);
  std::string DebugString(const BufferAssignment& out) const;

  const HloModule& module_;
  const BufferAssignmentOptions& options_;
  const HloSchedule& schedule_;
  CallGraph graph_;
  std::unordered_set<int64_t> undonatable_;

  std::vector<LogicalBuffer> buffers_;
  std::unordered_map<PositionKey, int64_t, PositionKeyHash> pos_;
  std::vector<std::vector<PositionKey>> positions_;  // by root buffer (merged on Merge)
  std::unordered_map<const HloInstruction*, int64_t> def_time_, use_time_;
  std::vector<std::pair<int64_t, int64_t>> extra_uses_;  // (buffer, time)
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> extra_ranges_;  // (buffer, [a,b])
  std::unordered_map<int64_t, int64_t> readonly_;  // buffer -> nesting count
  std::unordered_map<const HloInstruction*, WhileInfo> whiles_;
  std::vector<int64_t> param_buffers_;   // entry parameter leaves, allocation order
  std::vector<std::pair<int64_t, ShapeIndex>> param_leaf_ids_;  // (parameter, index) of each
  int64_t clock_ = 0;
  int64_t end_time_ = 0;
  int64_t aliased_bytes_ = 0;
};

}  // namespace kiln
