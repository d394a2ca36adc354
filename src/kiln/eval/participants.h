// Runs one module over several participants with the reference evaluator: one thread and one
// Evaluator per participant, exchanging values through one Rendezvous (eval/rendezvous.h).
// This is the oracle for multi-device programs (every backend's N-participant run is compared
// with it).
//
// Participant i is replica i / num_partitions, partition i % num_partitions (Note
// [Participants] in eval/collective_groups.h). Each runs the module's entry computation on its
// own arguments; results come back in participant order. When any participant fails, the
// others are released at once (Rendezvous::Abort) and the first failure that is not such a
// release is returned, prefixed "participant i (replica r, partition p): ". A participant that
// waits for a peer that never comes fails after `timeout` (never a hang).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "kiln/base/status.h"
#include "kiln/hlo/literal.h"
#include "kiln/hlo/module.h"

namespace kiln {

struct ParticipantsOptions {
  // The grid; 0 = the module header's replica_count / num_partitions.
  int64_t replica_count = 0;
  int64_t num_partitions = 0;
  // Every participant's rng seed (EvaluatorOptions::rng_seed).
  uint64_t rng_seed = 0;
  // EvaluatorOptions::max_loop_iterations for every participant (-1 = no limit).
  int64_t max_loop_iterations = -1;
  // How long one participant waits for the others at one collective (Rendezvous's timeout).
  std::chrono::milliseconds timeout{60000};
};

// The grid a run of `module` with `options` uses (header values where the options say 0);
// InvalidArgument for a count below 1 or a grid over 4096 participants.
StatusOr<std::pair<int64_t, int64_t>> ParticipantGrid(const HloModule& module,
                                                      const ParticipantsOptions& options);

// args[i]: participant i's arguments (one per entry parameter). A single argument set is given
// to every participant. InvalidArgument for any other count.
StatusOr<std::vector<Literal>> RunParticipants(const HloModule& module,
                                               std::span<const std::vector<Literal>> args,
                                               const ParticipantsOptions& options = {});

}  // namespace kiln
