// SendRecvOrdering: every device-to-device send runs before the recv-done of its channel in
// the same computation (a control edge send -> recv-done, where the send does not already
// depend on the recv-done). A participant's recv-done waits for another participant's send of
// the same channel: with both ops independent in the graph, a schedule that put recv-done
// first on every participant would have them all wait (docs/collectives.md). Host transfers
// are left alone. Returns whether an edge was added.
#pragma once

#include "kiln/base/status.h"
#include "kiln/hlo/module.h"

namespace kiln {

StatusOr<bool> OrderSendsBeforeRecvDones(HloModule& module);

}  // namespace kiln
