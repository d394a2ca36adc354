// Fusion passes (platform-neutral; a FusionPolicy decides).
//
// InstructionFusion: producer -> consumer fusion. Visits each sequential computation's
// instructions consumers-first (reverse post order); for each consumer, repeatedly fuses the
// operands the policy accepts, wrapping the consumer in a fusion the first time. A producer
// with other users is duplicated (it stays for them) when the policy allows; it "dies" -- its
// own kernel disappears -- once every user has fused it, which the cost model anticipates:
// a producer that every one of its users could fuse is costed as dying.
//
// MultiOutputFusion: after InstructionFusion.
//   1. Producer-consumer: a producer the instruction fusion could not fuse (expensive and used
//      several times, e.g. softmax's exp feeding both the sum and the division) is fused into
//      one consuming fusion as an extra output; its other users read that output.
//   2. Siblings: fusions (or reductions) reading a common large operand, independent of each
//      other, with compatible iteration spaces, become one multi-output fusion that reads the
//      operand once (layernorm's mean and mean-of-squares, a softmax's max when computed
//      beside other reductions of the same rows).
// Both passes leave fused computations out of their walk and remove unreachable computations
// at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kiln/passes/fusion_policy.h"
#include "kiln/passes/pass.h"

namespace kiln {

struct FusionPassStats {
  int64_t fusions_created = 0;      // new fusion instructions
  int64_t instructions_fused = 0;   // producers fused into a consumer
  int64_t duplicated = 0;           // of those, producers that stayed for other users
  int64_t multi_output_merges = 0;  // MultiOutputFusion merges
};

class InstructionFusion : public HloPass {
 public:
  // `policy` must outlive the pass.
  explicit InstructionFusion(const FusionPolicy& policy) : policy_(policy) {}
  std::string_view name() const override { return "instruction-fusion"; }
  StatusOr<bool> Run(HloModule& module) override;
  const FusionPassStats& stats() const { return stats_; }

 private:
  StatusOr<bool> RunOnComputation(HloComputation& computation);
  const FusionPolicy& policy_;
  FusionPassStats stats_;
};

class MultiOutputFusion : public HloPass {
 public:
  explicit MultiOutputFusion(const FusionPolicy& policy) : policy_(policy) {}
  std::string_view name() const override { return "multi-output-fusion"; }
  StatusOr<bool> Run(HloModule& module) override;
  const FusionPassStats& stats() const { return stats_; }

 private:
  StatusOr<bool> FuseProducerConsumer(HloComputation& computation);
  StatusOr<bool> FuseSiblings(HloComputation& computation);
  const FusionPolicy& policy_;
  FusionPassStats stats_;
};

}  // namespace kiln
