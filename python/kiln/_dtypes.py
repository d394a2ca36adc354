"""kiln's element types (HLO names) <-> numpy dtypes, ml_dtypes' narrow types included."""

import numpy as np

try:
  import ml_dtypes
except ImportError:  # narrow types then have no numpy form
  ml_dtypes = None

_NUMPY = {
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
}
_ML = {
    "bf16": "bfloat16", "f8e5m2": "float8_e5m2", "f8e4m3fn": "float8_e4m3fn",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz", "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e4m3fnuz": "float8_e4m3fnuz", "f8e4m3": "float8_e4m3", "f8e3m4": "float8_e3m4",
    "f8e8m0fnu": "float8_e8m0fnu", "f4e2m1fn": "float4_e2m1fn",
    "s1": "int1", "s2": "int2", "s4": "int4", "u1": "uint1", "u2": "uint2", "u4": "uint4",
}

# hlo name -> np.dtype
NUMPY_DTYPES = {name: np.dtype(t) for name, t in _NUMPY.items()}
if ml_dtypes is not None:
  for name, attr in _ML.items():
    if hasattr(ml_dtypes, attr):
      NUMPY_DTYPES[name] = np.dtype(getattr(ml_dtypes, attr))
# np.dtype -> hlo name
HLO_NAMES = {d: name for name, d in NUMPY_DTYPES.items()}
# hlo names whose numpy arrays numpy cannot export through DLPack
ML_DTYPE_NAMES = frozenset(n for n in _ML if n in NUMPY_DTYPES)


def hlo_name(dtype):
  """The HLO name of a numpy dtype ("f32"); ValueError for dtypes kiln lacks."""
  try:
    return HLO_NAMES[np.dtype(dtype)]
  except KeyError:
    raise ValueError(f"kiln has no element type for numpy dtype {np.dtype(dtype)}") from None


def numpy_dtype(hlo):
  return NUMPY_DTYPES[hlo]
