// Fusion utilities: creating, growing, merging and undoing `fusion` instructions.
//
// Note [Fusion representation]
//   A fusion is an ordinary instruction F (opcode kFusion) calling one computation C, its fused
//   computation (F->fused_computation()). F's operands are C's parameters in order; F's value
//   is C's root value; F->attrs().fusion_kind says which kernel family runs it:
//     kLoop   -- one loop over the output's elements (elementwise, broadcast, reshape, slice,
//                pad, concatenate, iota, dynamic-slice... chains);
//     kInput  -- a reduction kernel: the root is a reduce (or a tuple whose elements include
//                reduces) with its elementwise producers fused in;
//     kOutput -- a library op (dot, convolution) with fused epilogue work;
//     kCustom -- backend-specific.
//   A multi-output fusion is one whose C root is a `tuple`; its outputs are the root's operands
//   and its users read them through get-tuple-element (these utilities keep that invariant: the
//   users they create for a multi-output fusion are all get-tuple-elements). A fusion whose
//   root has tuple shape but is not a `tuple` instruction (a variadic reduce) has one output.
//   Modules with fusions stay printable, parseable and verifiable, and the reference evaluator
//   runs them (it evaluates C on F's operands).
//
//   Every fused computation belongs to exactly one fusion instruction. The utilities rebuild C
//   from scratch on every change (a computation's parameters cannot be removed in place) and
//   keep the same fusion instruction object where they say so; the replaced computations stay
//   in the module, unreachable, until RemoveUnreachableComputations (the fusion passes call it
//   at the end of a run).
//
// None of these functions checks that the result is a good idea: FusionPolicy decides that.
// They check structural preconditions (same computation, operand relation, no control
// dependencies, no parameters fused) and return FailedPrecondition when one fails, leaving the
// module unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

bool IsFusion(const HloInstruction& instr);
// F is a fusion whose fused root is a tuple instruction.
bool IsMultiOutputFusion(const HloInstruction& instr);
// The fused root of a fusion (nullptr for other instructions).
const HloInstruction* FusedRoot(const HloInstruction& fusion);
// Number of non-parameter, non-tuple instructions in the fused computation (1 for an ordinary
// instruction): the size that FusionLimits bound.
int64_t FusedInstructionCount(const HloInstruction& instr);
// The fused parameter of `fusion` that operand `operand_index` feeds.
const HloInstruction* FusedParameter(const HloInstruction& fusion, int64_t operand_index);

// How FuseInstructions builds a fusion from a set of instructions of one computation.
struct FuseSpec {
  // Instructions of one computation to put into one fusion, any order, each once. Fusions among
  // them are inlined (merged). Parameters, and instructions with control dependencies, are
  // refused.
  std::vector<HloInstruction*> members;
  // Members that stay in the parent computation as well, for their users outside the fusion
  // (the fusion recomputes them: "duplication"). A member not listed here whose value is used
  // outside becomes an output of the fusion (multi-output when there are several outputs).
  std::vector<HloInstruction*> duplicated;
  FusionKind kind = FusionKind::kLoop;
  // An existing fusion among the members whose instruction object becomes the result (its
  // users keep pointing at it; with several outputs its old users are moved onto
  // get-tuple-elements). nullptr: a new fusion instruction is created.
  HloInstruction* reuse = nullptr;
  // Name of a new fusion instruction (made unique; default "fusion").
  std::string name;
  // If set, receives every instruction removed from the parent computation (fused members and
  // get-tuple-elements made redundant), so callers holding instruction lists can skip them.
  std::vector<const HloInstruction*>* removed = nullptr;
};

// Replaces `spec.members` by one fusion instruction and returns it. Outputs are ordered by the
// members' topological order (a multi-output member contributes its outputs in order). The
// caller guarantees the result is acyclic: see FusionWouldCreateCycle.
StatusOr<HloInstruction*> FuseInstructions(const FuseSpec& spec);

// True if fusing `members` (with `duplicated` as in FuseSpec) would create a cycle: some value
// computed outside the set depends on a member and feeds another member. Linear time.
bool FusionWouldCreateCycle(std::span<HloInstruction* const> members,
                            std::span<HloInstruction* const> duplicated = {});

// Wraps one instruction in a fusion of `kind` (its users now read the fusion). Returns the new
// fusion. (`removed`, here and below: as FuseSpec::removed.)
StatusOr<HloInstruction*> CreateFusion(HloInstruction* instr, FusionKind kind,
                                       std::vector<const HloInstruction*>* removed = nullptr);

// Fuses `producer` (an operand of `fusion`) into `fusion`, which keeps its identity and kind
// unless `kind` is given. If the producer has other users it stays for them and the fusion
// recomputes it (duplication); otherwise it is removed. A producer that is itself a fusion is
// merged (inlined); a multi-output producer is refused (fuse its consumer into it with
// FuseInstructionIntoMultiOutputFusion instead). Never creates a cycle.
StatusOr<HloInstruction*> FuseInstructionIntoFusion(
    HloInstruction* producer, HloInstruction* fusion, std::optional<FusionKind> kind = {},
    std::vector<const HloInstruction*>* removed = nullptr);

// Like FuseInstructionIntoFusion, but the producer is not duplicated: its value becomes an
// extra output of the fusion and its other users read it through get-tuple-element. Fails
// with FailedPrecondition if that would create a cycle (a user of the producer feeding the
// fusion).
StatusOr<HloInstruction*> FuseInstructionIntoMultiOutputFusion(
    HloInstruction* producer, HloInstruction* fusion, std::optional<FusionKind> kind = {},
    std::vector<const HloInstruction*>* removed = nullptr);

// Merges two fusions (or fusible instructions) of one computation that do not depend on each
// other -- typically siblings reading the same operand -- into one multi-output fusion that
// reads each shared operand once. `a` keeps its identity if it is a fusion. Fails with
// FailedPrecondition if one depends on the other.
StatusOr<HloInstruction*> MergeSiblingFusions(
    HloInstruction* a, HloInstruction* b, std::optional<FusionKind> kind = {},
    std::vector<const HloInstruction*>* removed = nullptr);

// Replaces a fusion by the instructions of its fused computation (users of a multi-output
// fusion's get-tuple-elements read the unfused values directly).
Status Unfuse(HloInstruction* fusion);

// A name not yet used by an instruction of `computation`: `base`, else base.1, base.2, ...
std::string UniqueInstructionName(const HloComputation& computation, std::string_view base);
// A computation name not yet used in `module`.
std::string UniqueComputationName(const HloModule& module, std::string_view base);

}  // namespace kiln
