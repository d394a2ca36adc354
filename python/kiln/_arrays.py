"""The array hooks of the extension (src/kiln/python/array.h): how objects without __dlpack__
(Python scalars, lists, buffer-protocol objects) and numpy arrays of ml_dtypes types, which
numpy cannot export, become arrays kiln can take."""

import numpy as np

from . import _dtypes, _kiln


_SIGNED_SUB_BYTE = frozenset(("s1", "s2", "s4"))


def _raw_view(a):
  """(uint array of the bytes kiln keeps, hlo name) of a numpy array of an ml_dtypes type.
  ml_dtypes keeps a signed sub-byte integer in the low bits of its byte, kiln sign-extended
  (hlo/float_types.h): those are converted, the rest viewed."""
  name = _dtypes.HLO_NAMES[a.dtype]
  if name in _SIGNED_SUB_BYTE:
    return a.astype(np.int8).view(np.uint8), name
  if not a.flags.c_contiguous:
    a = a.copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
  return a.view(np.dtype(f"u{a.dtype.itemsize}")), name


def coerce(obj, hlo_type):
  """obj as a numpy array (of `hlo_type` where obj has no dtype of its own), or the raw-bits pair
  for ml_dtypes arrays."""
  if isinstance(obj, np.ndarray):
    a = obj
  elif hasattr(obj, "dtype") and hasattr(obj, "shape") and not isinstance(obj, (int, float, complex, bool)):
    a = np.asarray(obj)  # numpy scalars, buffer-protocol arrays with a dtype
  elif hlo_type is not None and hlo_type in _dtypes.NUMPY_DTYPES:
    a = np.asarray(obj, dtype=_dtypes.NUMPY_DTYPES[hlo_type])
  else:
    a = np.asarray(obj)
  if a.dtype in _dtypes.HLO_NAMES and _dtypes.HLO_NAMES[a.dtype] in _dtypes.ML_DTYPE_NAMES:
    return _raw_view(a)
  if not a.flags.c_contiguous or not a.flags.aligned:
    a = a.copy(order="C")
  return a


_kiln._set_array_hooks(coerce, dict(_dtypes.NUMPY_DTYPES))


def asarray(obj, device=None):
  """obj (numpy, jax, torch, anything with __dlpack__ or the buffer protocol, a scalar) as a
  kiln.Array on `device` ("cpu", "cuda:0"; None: the best device present). Memory already on
  that device is wrapped, not copied."""
  return _kiln.asarray(obj, device or "")
