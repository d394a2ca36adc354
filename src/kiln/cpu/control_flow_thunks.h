// Thunks that move bytes and run nested sequences on the host: copy, while, conditional, call.
//
// Buffers follow buffer assignment's notes (passes/buffer_assignment.h):
//   WhileThunk       -- Note [While loop buffers]: init leaves are copied into the state slices
//                       where the plan says so; then, until the condition's root (a pred in
//                       memory, read on the host) is false: the body runs, body results that
//                       need staging are copied aside, then every copied leaf lands in its
//                       state slice. The while's value is the state.
//   ConditionalThunk -- Note [Conditional buffers]: the branch index (a pred: true -> branch 0,
//                       false -> branch 1; an s32: out of range -> the last branch) is read on
//                       the host, the branch runs, and root leaves the branch did not compute
//                       in place are copied into the result slices.
//   CallThunk        -- runs the callee's sequence; the call's value is the callee root's.
// Each reports the slices of its nested sequences as its own uses (thunk.h).
#pragma once

#include <optional>
#include <vector>

#include "kiln/cpu/thunk_sequence.h"
#include "kiln/passes/buffer_assignment.h"

namespace kiln::cpu {

class CopyThunk : public Thunk {
 public:
  CopyThunk(std::string name, BufferSlice src, BufferSlice dst);
  const BufferSlice& source() const { return src_; }
  const BufferSlice& destination() const { return dst_; }
  std::string ToString() const override;
  Status Execute(const ExecuteParams& params) const override;

 private:
  BufferSlice src_, dst_;
};

class WhileThunk : public Thunk {
 public:
  // `predicate`: the slice of the condition's root.
  // `trips`: the loop's known trip count (Note [Known trip counts] in
  // passes/while_loop_simplifier.h): the body runs that many times and the condition only
  // when `run_condition` (it has side effects; its result is not read).
  struct TripCount {
    int64_t trips = 0;
    bool run_condition = false;
  };
  WhileThunk(std::string name, ThunkSequence condition, ThunkSequence body, BufferSlice predicate,
             WhileCopyPlan plan, std::optional<TripCount> trips = std::nullopt);
  const ThunkSequence& condition() const { return condition_; }
  const ThunkSequence& body() const { return body_; }
  std::vector<const Thunk*> nested() const override;
  // "while %w: copies in 2 leaves (1.50 MiB), per iteration 1 leaf (16.00 KiB)".
  std::string ToString() const override;
  Status Execute(const ExecuteParams& params) const override;

 private:
  ThunkSequence condition_, body_;
  BufferSlice predicate_;
  WhileCopyPlan plan_;
  std::optional<TripCount> trips_;
  Status CopyBodyResults(const ExecuteParams& params) const;
};

class ConditionalThunk : public Thunk {
 public:
  struct Copy {
    BufferSlice src, dst;
  };
  // `index`: the slice of operand 0 (pred or s32). `result_copies[b]`: copies after branch b.
  ConditionalThunk(std::string name, BufferSlice index, PrimitiveType index_type,
                   std::vector<ThunkSequence> branches, std::vector<std::vector<Copy>> result_copies,
                   std::vector<BufferUse> result_writes);
  const std::vector<ThunkSequence>& branches() const { return branches_; }
  std::vector<const Thunk*> nested() const override;
  Status Execute(const ExecuteParams& params) const override;

 private:
  BufferSlice index_;
  PrimitiveType index_type_;
  std::vector<ThunkSequence> branches_;
  std::vector<std::vector<Copy>> result_copies_;
};

class CallThunk : public Thunk {
 public:
  CallThunk(std::string name, ThunkSequence callee);
  std::vector<const Thunk*> nested() const override;
  Status Execute(const ExecuteParams& params) const override;

 private:
  ThunkSequence callee_;
};

}  // namespace kiln::cpu
