"""kiln: XLA HLO compiled and run by kiln, from Python.

    import kiln
    f = kiln.jit(jax_function)                 # JAX lowers, kiln compiles and runs
    exe = kiln.compile(hlo_text, device="cpu")  # HLO text -> Executable
    out = exe.run(x, w)                         # numpy / jax / torch / kiln arrays in
    exe.run_participants([[x0], [x1]])          # a module over several participants
    exe.run_global(x)                           # ... on global arrays, split and joined by shardings
    kiln.devices()

Arrays travel through DLPack (docs/python.md).
"""

import pkgutil

# In a build tree the extension lives in <build>/python/kiln (src/kiln/python/CMakeLists.txt):
# the package spans both folders.
__path__ = pkgutil.extend_path(__path__, __name__)

from . import _kiln  # noqa: E402
from .errors import (DeadlineExceededError, FailedPreconditionError, InternalError,  # noqa: E402
                     InvalidArgumentError, KilnError, NotFoundError, ResourceExhaustedError,
                     UnavailableError, UnimplementedError)
from . import _arrays  # noqa: E402  (installs the array hooks)
from ._arrays import asarray  # noqa: E402
from ._devices import Device, Platform, default_device, devices, platforms  # noqa: E402
from ._executable import ArraySpec, Executable, compile  # noqa: E402
from ._jit import CacheInfo, Compiled, Jitted, Lowered, jit  # noqa: E402

Array = _kiln.Array

__version__ = "0.1.0"

__all__ = [
    "Array", "ArraySpec", "CacheInfo", "Compiled", "Device", "Executable", "Jitted", "Lowered",
    "Platform", "asarray", "compile", "default_device", "devices", "jit", "platforms",
    "KilnError", "InvalidArgumentError", "UnimplementedError", "UnavailableError",
    "FailedPreconditionError", "ResourceExhaustedError", "DeadlineExceededError", "NotFoundError",
    "InternalError",
]
