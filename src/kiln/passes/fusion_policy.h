// FusionPolicy: what may fuse with what, into which kind of fusion, and whether it pays.
//
// The fusion passes (InstructionFusion, MultiOutputFusion) are platform-neutral; each platform
// gives them a policy. A policy answers two kinds of question:
//
//   Legality (platform hooks, pure virtual or overridable): which instructions a platform's
//   kernels can compute inside a fusion (IsFusibleProducer), which instructions can root a
//   fusion and with which kind (FusionKindForRoot), whether a producer may feed a particular
//   operand of a consumer (CanFuseIntoOperand: e.g. never into the buffer an in-place
//   dynamic-update-slice writes), and which fusions can share one kernel as a multi-output
//   fusion (IterationSpace).
//
//   Profitability (the shared cost model below, tuned by FusionCostOptions): fusing producer P
//   into consumer C saves P's output being written and re-read, and costs C reading P's
//   operands instead, plus recomputation when P stays for other users (duplication) or when C
//   reads each element of P several times (reuse: C broadcasts P, or P feeds a reduce-window).
//   Expensive producers (transcendentals, dot, convolution, reduce, gather, ...; IsExpensive)
//   are never duplicated, and recomputed through reuse only up to a small bound.
//
// Note [Fusion cost model]
//   Bytes of memory traffic, per decision, with N = P's output bytes, R = bytes of P's operands
//   that C does not already read, I = bytes of all P's operands, k = P's user count:
//     P stays for other users (not all users can fuse it):  gain = N - R
//     P disappears (every user fuses it):    gain = I + N + k*N - k*R + kernel_cost_bytes
//   (before: P reads I, writes N, k users read N; after: every user reads R.) Fuse when
//   gain >= 0. Recompute: a cheap P may be duplicated and reused freely (memory is what costs on
//   both CPU and GPU); an expensive P with k > 1 never fuses, and with reuse factor f > 1 only
//   when (f - 1) * elements(P) <= max_expensive_recompute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/hlo/instruction.h"

namespace kiln {

// The answer to "should these fuse?", with the reason when not (for dumps and tests).
class FusionDecision {
 public:
  static FusionDecision Allow() { return FusionDecision(); }
  static FusionDecision Forbid(std::string reason) { return FusionDecision(std::move(reason)); }
  bool ok() const { return reason_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string& reason() const { return reason_; }

 private:
  FusionDecision() = default;
  explicit FusionDecision(std::string reason)
      : reason_(reason.empty() ? std::string("forbidden") : std::move(reason)) {}
  std::string reason_;
};

struct FusionCostOptions {
  // Most operands (fused parameters) of one fusion.
  int64_t max_operands = 64;
  // Most fused instructions (FusedInstructionCount) of one fusion.
  int64_t max_instructions = 128;
  // Most outputs of a multi-output fusion.
  int64_t max_outputs = 8;
  // Extra evaluations of an expensive producer allowed through element reuse (a consumer that
  // broadcasts it): (reuse - 1) * elements. 0 = never recompute expensive work.
  int64_t max_expensive_recompute = 0;
  // What removing one kernel is worth, in bytes of traffic (launch/dispatch overhead).
  int64_t kernel_cost_bytes = 16 * 1024;
  // Sibling multi-output fusion only pays when the operands the siblings share are at least
  // this big (bytes): below that, the second read comes from cache anyway.
  int64_t min_sibling_shared_bytes = 16 * 1024;
  // Note [In-place update spaces]: a fusion rooted at an in-place dynamic-update-slice iterates
  // over its update window, and may take extra outputs of the window's dimensions.
  bool in_place_update_spaces = false;
};

// What one kernel of a multi-output fusion iterates over: the output dimensions of a loop
// fusion, or the input dimensions and reduced dimensions of a reduction. Fusions can share a
// kernel when their spaces are compatible (CompatibleIterationSpaces).
//
// Note [In-place update spaces]
//   A fusion rooted at a dynamic-update-slice of a fused parameter read by nothing else (the
//   in-place form: the kernel writes only the update window into the operand's buffer) iterates
//   over the update, not the output. Where the policy allows it (FusionCostOptions::
//   in_place_update_spaces, the GPU's), its space is `in_place` with the update's dimensions,
//   size-1 dimensions dropped, and it may share its kernel with loop outputs of those dimensions
//   (size-1 dimensions aside): a scan step's new carry and its write into the stacked output
//   are one kernel. Two in-place spaces never share one kernel, nor does an in-place space and
//   a reduction.
struct IterationSpace {
  bool valid = false;          // false: cannot be part of a multi-output fusion
  bool reduction = false;
  bool in_place = false;       // Note [In-place update spaces]
  std::vector<int64_t> dims;   // loop: output dims; reduction: reduce input dims
  std::vector<int64_t> reduce_dims;  // reduction only (sorted)
  std::string ToString() const;
};

class FusionPolicy {
 public:
  explicit FusionPolicy(FusionCostOptions options = {}) : options_(options) {}
  virtual ~FusionPolicy() = default;
  virtual std::string_view name() const = 0;
  const FusionCostOptions& options() const { return options_; }

  // ---- Platform hooks ----

  // Whether `instr` can be computed inside a consumer's fusion (for a fusion: whether it can be
  // merged into a consumer fusion as a whole).
  virtual bool IsFusibleProducer(const HloInstruction& instr) const = 0;
  // The kind of a fusion rooted at the unfused instruction `instr`, or nullopt if nothing can
  // be fused into it.
  virtual std::optional<FusionKind> FusionKindForRoot(const HloInstruction& instr) const = 0;
  // Whether producers may still be fused into the existing fusion `fusion` (default: kLoop and
  // kInput fusions).
  virtual bool CanGrow(const HloInstruction& fusion) const;
  // Whether `producer` may feed operand `operand_index` of `consumer` inside one fusion
  // (consumer may be a fusion: the operand is its fused parameter). Default: yes.
  virtual FusionDecision CanFuseIntoOperand(const HloInstruction& producer,
                                            const HloInstruction& consumer,
                                            int64_t operand_index) const;
  // The iteration space of a fusion (or of an unfused instruction that could root one), for
  // multi-output fusion. Default: loop fusions by output dims, reductions by input and reduced
  // dims; anything else invalid.
  virtual IterationSpace GetIterationSpace(const HloInstruction& instr) const;
  // Whether two iteration spaces can run as one kernel (default: equal spaces, or a loop
  // output over a reduction's input dims).
  virtual bool CompatibleIterationSpaces(const IterationSpace& a, const IterationSpace& b) const;
  // Transcendentals, integer division, and heavy non-elementwise ops; a fusion is expensive if
  // any fused instruction is.
  virtual bool IsExpensive(const HloInstruction& instr) const;

  // ---- Decisions (shared cost model; see Note [Fusion cost model]) ----

  // Legality of fusing `producer` into `consumer` (an operand of it), limits included.
  FusionDecision CanFuse(const HloInstruction& producer, const HloInstruction& consumer) const;
  // CanFuse plus the cost model. `producer_dies`: every user of the producer is expected to fuse
  // it, so its own kernel disappears.
  virtual FusionDecision ShouldFuse(const HloInstruction& producer, const HloInstruction& consumer,
                                    bool producer_dies) const;
  // The kind of the fusion that results from fusing producer into consumer.
  virtual FusionKind KindAfterFusion(const HloInstruction& producer,
                                     const HloInstruction& consumer) const;
  // Two independent fusions (or fusion roots) reading common operands, merged into one
  // multi-output fusion. The caller checks that neither depends on the other.
  virtual FusionDecision ShouldFuseSiblings(const HloInstruction& a, const HloInstruction& b) const;
  // `producer` fused into its user `consumer` (a fusion) as an extra output because other users
  // also need it. The caller checks for cycles.
  virtual FusionDecision ShouldFuseMultiOutput(const HloInstruction& producer,
                                               const HloInstruction& consumer) const;
  // `consumer` (a fusion) merged into the multi-output fusion `producer` whose outputs it
  // reads (through get-tuple-elements), every one at its own index: one kernel computes both,
  // the producer's outputs stay outputs. The caller checks for cycles.
  virtual FusionDecision ShouldMergeIntoMultiOutputProducer(const HloInstruction& producer,
                                                            const HloInstruction& consumer) const;

 protected:
  FusionCostOptions options_;
};

// ---- Helpers shared by policies ----

// A dynamic-update-slice of a fused parameter that nothing else reads, with an update smaller
// than the array: the form the in-place emitters write window-only (Note [In-place update
// spaces]).
bool IsInPlaceUpdate(const HloInstruction& dus);
// The dimensions without those of size 1.
std::vector<int64_t> SqueezedDims(const std::vector<int64_t>& dims);
std::vector<int64_t> SqueezedDims(const Shape& shape);
// Bytes of all array leaves of a shape (dense).
int64_t ShapeBytes(const Shape& shape);
// Elements of the array (first array leaf for tuples).
int64_t ShapeElements(const Shape& shape);
// How many times `consumer` reads each element of its operand `operand_index` at most
// (1 for elementwise use, out/in for a broadcast, the window size for reduce-window, a large
// number for dot/convolution/gather operands). For fusions, through the fused computation.
double OperandReuse(const HloInstruction& consumer, int64_t operand_index);
// Whether `consumer` reads each element of operand `operand_index` only at that element's own
// index, through elementwise ops of the operand's dimensions and reduce inputs (so fusing the
// operand's producer as an extra output computes it once per element).
bool ReadsAtSameIndex(const HloInstruction& consumer, int64_t operand_index);
// A transpose that only moves dimensions of size 1 (a relabelling of a row-major array).
bool IsTrivialTranspose(const HloInstruction& transpose);
// The distinct operands a fusion of producer into consumer would have.
int64_t FusedOperandCount(const HloInstruction& producer, const HloInstruction& consumer);

}  // namespace kiln
