"""kiln's exceptions: one class per kind of failure, raised with the message the `kiln` tool
prints after "kiln: ".

Every error of the C++ library is a Status; the extension turns a failed one into the class of
its code here. The classes also derive from the built-in exception a Python caller would
catch for that kind of failure.
"""

from . import _kiln


class KilnError(Exception):
  """Base class of every error kiln raises. `code` is the status code ("INVALID_ARGUMENT")."""
  code = "UNKNOWN"


class InvalidArgumentError(KilnError, ValueError):
  """Malformed HLO (file:line:col), a bad device name, arguments of the wrong shape or type."""
  code = "INVALID_ARGUMENT"


class UnimplementedError(KilnError, NotImplementedError):
  """Something kiln does not support yet (an op on a backend, a custom-call target)."""
  code = "UNIMPLEMENTED"


class UnavailableError(KilnError):
  """A device or driver that is not there (no GPU, a platform this build lacks)."""
  code = "UNAVAILABLE"


class FailedPreconditionError(KilnError):
  """An operation on an array that was donated or deleted."""
  code = "FAILED_PRECONDITION"


class ResourceExhaustedError(KilnError, MemoryError):
  """Out of host or device memory (the message gives the size asked for)."""
  code = "RESOURCE_EXHAUSTED"


class DeadlineExceededError(KilnError, TimeoutError):
  """A participant of a multi-participant run waited longer than the run's timeout for the
  others at a collective (Executable.run_participants, run_global: `timeout`)."""
  code = "DEADLINE_EXCEEDED"


class NotFoundError(KilnError, LookupError):
  code = "NOT_FOUND"


class InternalError(KilnError):
  """A kiln bug: please report it with the module."""
  code = "INTERNAL"


_BY_CODE = {cls.code: cls for cls in (InvalidArgumentError, UnimplementedError, UnavailableError,
                                      FailedPreconditionError, ResourceExhaustedError,
                                      DeadlineExceededError, NotFoundError, InternalError)}
_BY_CODE["KilnError"] = KilnError
_kiln._set_error_classes(_BY_CODE)

__all__ = ["KilnError", "InvalidArgumentError", "UnimplementedError", "UnavailableError",
           "FailedPreconditionError", "ResourceExhaustedError", "DeadlineExceededError", "NotFoundError",
           "InternalError"]
