// Waiting for CUDA's legacy default stream from the binding (Note [Streams across DLPack] in
// array.h).
//
// The Python room may not include the cuda rooms (docs/ARCHITECTURE.md), and the public API
// has no "wait for a foreign stream" call; a GPU array arriving through DLPack only needs the
// host to wait for the legacy default stream, which is one driver call. The driver library is
// the one kiln's cuda backend already loaded (dlopen with RTLD_NOLOAD first, then by soname);
// the call runs in the device's primary context, the one kiln, PyTorch and JAX all use.
#pragma once

#include "kiln/base/status.h"

namespace kiln::python {

// Blocks until the work queued on CUDA's legacy default stream of device `ordinal` is done.
// Unavailable when the driver cannot be loaded.
Status WaitForLegacyStream(int ordinal);

}  // namespace kiln::python
