// SendRecvOrdering: orders each device-to-device send / recv chain of one channel in a
// computation as XLA's P2PSchedulePreparation does for an unpipelined chain:
//
//   send -> recv-done -> send-done   (control edges, where the graph leaves them unordered)
//
// A participant's recv-done waits for another participant's send of the same channel: with
// both ops independent in the graph, a schedule that put recv-done first on every participant
// would have them all wait. A send-done waits until its data is taken: on NCCL the transfer
// is posted together with the receive of the next recv-done (Note [Send and recv on NCCL] in
// cuda/compiler/collective_thunks.h), so a send-done scheduled before the recv-done of its
// channel would post the send alone, and two participants that send to each other would both
// wait for a receive neither has posted. An edge is added only where the other direction is
// not already implied (no cycles: a send of a value received, a recv-done that needs the
// send-done's token). Host transfers are left alone. docs/collectives.md. Returns whether an
// edge was added.
#pragma once

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

StatusOr<bool> OrderSendsBeforeRecvDones(HloModule& module);

}  // namespace kiln
