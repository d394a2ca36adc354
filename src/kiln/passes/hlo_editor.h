// HloEditor: building and replacing instructions inside one computation, for the rewrites in
// src/kiln/passes.
//
// New instructions get names unique in the computation (the opcode's name plus ".kN") and the
// metadata of the instruction they stand in for (`like`). Builders take the full result shape
// where a caller knows it (so a replacement can keep the replaced instruction's layout) and
// check it against shape inference; a mismatch is an Internal error (a bug in the rewrite).
//
// Layouts: the neutral passes run before layout assignment, where a layout is not part of a
// value's meaning -- except for the entry computation's result (entry_computation_layout) and
// the operand of a bitcast (which reinterprets memory). CanReplace() encodes that policy.
//
// The editor keeps pointers into its computation; use it only while the computation lives and
// only from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/literal.h"

namespace kiln {

class HloEditor {
 public:
  explicit HloEditor(HloComputation* computation);

  HloComputation* computation() const { return computation_; }

  // A name not yet used in the computation, built from `base`.
  std::string UniqueName(std::string_view base);
  // Adds `instr` (renamed with UniqueName(opcode) when its name is empty or taken), copying
  // `like`'s metadata when `like` is not null.
  HloInstruction* Add(std::unique_ptr<HloInstruction> instr, const HloInstruction* like = nullptr);

  // ---- Builders (each checks its result shape with shape inference) ----
  // A constant holding `literal`; the instruction's shape is the literal's (a default layout is
  // added when the literal's shape has none).
  HloInstruction* Constant(Literal literal, const HloInstruction* like = nullptr);
  // A scalar constant of type `t` with value `v` (converted as Literal::SetFromDouble does).
  HloInstruction* ScalarConstant(PrimitiveType t, double v, const HloInstruction* like = nullptr);
  // broadcast(operand) into `shape`, operand dimension i going to dimensions[i].
  StatusOr<HloInstruction*> Broadcast(HloInstruction* operand, const Shape& shape,
                                      std::vector<int64_t> dimensions,
                                      const HloInstruction* like = nullptr);
  // A scalar broadcast into `shape` (dimensions={}); returns `scalar` itself when shape is a
  // scalar.
  StatusOr<HloInstruction*> BroadcastScalar(HloInstruction* scalar, const Shape& shape,
                                            const HloInstruction* like = nullptr);
  // reshape to `shape`; returns `operand` itself when the dimensions already match.
  StatusOr<HloInstruction*> Reshape(HloInstruction* operand, const Shape& shape,
                                    const HloInstruction* like = nullptr);
  // transpose with `permutation` (result dimension i is operand dimension permutation[i]);
  // returns `operand` for the identity permutation. `shape` may be null: default layout.
  StatusOr<HloInstruction*> Transpose(HloInstruction* operand, std::vector<int64_t> permutation,
                                      const Shape* shape = nullptr,
                                      const HloInstruction* like = nullptr);
  StatusOr<HloInstruction*> Slice(HloInstruction* operand, std::vector<SliceDimension> slice,
                                  const Shape* shape = nullptr,
                                  const HloInstruction* like = nullptr);
  StatusOr<HloInstruction*> Convert(HloInstruction* operand, PrimitiveType type,
                                    const Shape* shape = nullptr,
                                    const HloInstruction* like = nullptr);
  // Elementwise unary/binary op with the result shape inferred (layout taken from `shape` when
  // given).
  StatusOr<HloInstruction*> Unary(HloOpcode op, HloInstruction* operand,
                                  const Shape* shape = nullptr,
                                  const HloInstruction* like = nullptr);
  StatusOr<HloInstruction*> Binary(HloOpcode op, HloInstruction* lhs, HloInstruction* rhs,
                                   const Shape* shape = nullptr,
                                   const HloInstruction* like = nullptr);
  HloInstruction* Tuple(std::span<HloInstruction* const> elements,
                        const HloInstruction* like = nullptr);
  StatusOr<HloInstruction*> GetTupleElement(HloInstruction* tuple, int64_t index,
                                            const HloInstruction* like = nullptr);

 private:
  HloComputation* computation_;
  std::unordered_set<std::string> names_;
  int64_t counter_ = 0;
};

// Whether `replacement` may take the place of `old` for all of old's users: same element type
// and dimensions; old has no control dependencies; and where the layouts differ, old is neither
// the entry computation's root nor a bitcast's operand.
bool CanReplace(const HloInstruction& old, const HloInstruction& replacement);

// Rewires every use of `old` (and the root, if old is it) to `replacement` after checking
// CanReplace (FailedPrecondition otherwise). `old` stays in the computation (dead) for DCE.
Status ReplaceInstruction(HloInstruction* old, HloInstruction* replacement);

// Moves `old`'s control dependencies to `replacement` (old's predecessors then run before it,
// its successors after it); old is left with none. Nothing when they are the same instruction.
void MoveControlDependencies(HloInstruction* old, HloInstruction* replacement);

// `dims` with a default layout ({rank-1..0}) when `like` has a layout, none otherwise.
Shape ArrayShapeLike(PrimitiveType type, std::vector<int64_t> dims, const Shape& like);

// Removes instructions of `computation` that nothing uses (no side effect, not the root, not a
// parameter); returns whether any was removed.
StatusOr<bool> RemoveDeadInstructions(HloComputation& computation);

}  // namespace kiln
