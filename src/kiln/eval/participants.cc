#include "kiln/eval/participants.h"

#include <memory>
#include <optional>
#include <thread>

#include "kiln/base/strings.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/rendezvous.h"

namespace kiln {

StatusOr<std::pair<int64_t, int64_t>> ParticipantGrid(const HloModule& module,
                                                      const ParticipantsOptions& options) {
  const int64_t r = options.replica_count > 0 ? options.replica_count : module.header().replica_count;
  const int64_t p = options.num_partitions > 0 ? options.num_partitions : module.header().num_partitions;
  if (r < 1 || p < 1)
    return InvalidArgument("a run needs at least one replica and one partition, got ", r,
                           " replicas x ", p, " partitions");
  if (r * p > 4096)
    return InvalidArgument(r, " replicas x ", p, " partitions is more than 4096 participants");
  return std::make_pair(r, p);
}

StatusOr<std::vector<Literal>> RunParticipants(const HloModule& module,
                                               std::span<const std::vector<Literal>> args,
                                               const ParticipantsOptions& options) {
  KILN_ASSIGN_OR_RETURN(auto grid, ParticipantGrid(module, options));
  // Plain variables, not a structured binding: clang before 16 cannot capture those (run_one).
  const int64_t replicas = grid.first, partitions = grid.second;
  const int64_t n = replicas * partitions;
  if (args.size() != 1 && static_cast<int64_t>(args.size()) != n)
    return InvalidArgument("a run over ", n, " participants (", replicas, " replicas x ",
                           partitions, " partitions) takes 1 or ", n, " argument sets, got ",
                           args.size());
  auto rendezvous = std::make_shared<Rendezvous>(n, RendezvousOptions{options.timeout});
  std::vector<std::optional<StatusOr<Literal>>> results(n);
  auto run_one = [&](int64_t i) {
    EvaluatorOptions eo;
    eo.rng_seed = options.rng_seed;
    eo.max_loop_iterations = options.max_loop_iterations;
    eo.replica_id = i / partitions;
    eo.partition_id = i % partitions;
    eo.replica_count = replicas;
    eo.num_partitions = partitions;
    eo.rendezvous = rendezvous;
    Evaluator evaluator(eo);
    StatusOr<Literal> r = evaluator.Run(module, args.size() == 1 ? args[0] : args[i]);
    if (!r.ok())
      rendezvous->Abort(Status(StatusCode::kAborted,
                               StrCat("participant ", i, " failed: ", r.status().message())));
    rendezvous->Finish(i);
    results[i] = std::move(r);
  };
  if (n == 1) {
    run_one(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (int64_t i = 0; i < n; ++i) threads.emplace_back(run_one, i);
    for (auto& t : threads) t.join();
  }
  std::optional<Status> first, first_abort;
  for (int64_t i = 0; i < n; ++i) {
    const StatusOr<Literal>& r = *results[i];
    if (r.ok()) continue;
    Status s(r.status().code(), StrCat("participant ", i, " (replica ", i / partitions,
                                       ", partition ", i % partitions, "): ",
                                       r.status().message()));
    if (r.status().code() == StatusCode::kAborted) {
      if (!first_abort) first_abort = s;
    } else if (!first) {
      first = s;
    }
  }
  if (first) return *first;
  if (first_abort) return *first_abort;
  std::vector<Literal> out;
  out.reserve(n);
  for (auto& r : results) out.push_back(std::move(*r).value());
  return out;
}

}  // namespace kiln
