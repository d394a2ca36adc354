// AsyncInliner: async-start / async-update / async-done wrappers of ordinary computations run
// as the computation itself.
//
// Note [Async wrappers]
//   XLA's GPU pipeline wraps work in async pairs to overlap it with other work: fusions
//   (`fusion-start` / `fusion-done`), calls, and collectives (`all-reduce-start` inside an
//   async-start). Its post-optimization dumps, run as they are (`module.opt.hlo`,
//   `xla-optimized.hlo`), carry them. A wrapper means the same as the computation it wraps:
//   async-done's value is the wrapped computation's result on the async-start's operands
//   (async-update passes the start's value through). The pass replaces every such chain by a
//   copy of the wrapped computation's instructions at the async-done, so the backends compile
//   the work natively instead of running the wrapper on the evaluator. Collectives (anything the
//   wrapped computation contains that IsCollectiveOpcode says) keep their wrapper unless
//   `collectives` is set: the cuda backend runs those on its collective stream, the cpu runs them
//   in place. Wrapped send/recv always keep theirs (their pairing is by channel, not by order).
//
//   Control dependencies. XLA orders a scheduled module with control-predecessors; the copy's
//   root takes the predecessors of the start, updates and done and their successors, except the
//   instructions XLA placed between start and done (successors of the start that precede the
//   done): those lose both edges, since the work no longer has a start and an end to sit between.
//   A chain whose start has users other than its updates and done is left alone.
#pragma once

#include "kiln/passes/pass.h"

namespace kiln {

class AsyncInliner : public HloPass {
 public:
  // `collectives`: also inline wrappers of collectives (a backend without async collectives).
  explicit AsyncInliner(bool collectives = false) : collectives_(collectives) {}
  std::string_view name() const override { return "async-inliner"; }
  StatusOr<bool> Run(HloModule& module) override;

 private:
  bool collectives_;
};

}  // namespace kiln
