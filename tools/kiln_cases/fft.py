"""fft_*: jnp.fft over power-of-two and other lengths, complex64 and complex128.

Inputs of the inverse real transforms are spectra of real signals (Hermitian), so that the
result does not depend on how an implementation treats the imaginary parts it must ignore.
"""

import jax.numpy as jnp
import numpy as np

from .spec import DTYPES, C, F


def H(real_shape, naxes, dtype='c64'):
  """The rfftn (over the last naxes axes) of a random real array of real_shape."""
  def make(rng):
    x = rng.uniform(-3, 3, size=real_shape)
    axes = tuple(range(len(real_shape) - naxes, len(real_shape)))
    return np.fft.rfftn(x, axes=axes).astype(DTYPES[dtype])
  return make


def register(add):
  ft = jnp.fft
  for t, rt in (('c64', 'f32'), ('c128', 'f64')):
    add(f'fft_fft_8_{t}', ft.fft, C((8,), t))
    add(f'fft_fft_12_{t}', ft.fft, C((3, 12), t))
    add(f'fft_ifft_10_{t}', ft.ifft, C((2, 10), t))
    add(f'fft_rfft_16_{rt}', ft.rfft, F((4, 16), rt))
    add(f'fft_rfft_10_{rt}', ft.rfft, F((10,), rt))
    add(f'fft_irfft_16_{t}', ft.irfft, H((3, 16), 1, t))
    add(f'fft_irfft_15_{t}', lambda x: ft.irfft(x, n=15), H((15,), 1, t))
    add(f'fft_fft2_{t}', ft.fft2, C((2, 8, 6), t))
    add(f'fft_ifft2_{t}', ft.ifft2, C((6, 5), t))
  add('fft_fft_7_c64', ft.fft, C((7,)))
  add('fft_fft_padded_c64', lambda x: ft.fft(x, n=16), C((11,)))
  add('fft_fft_axis0_c64', lambda x: ft.fft(x, axis=0), C((8, 3)))
  add('fft_rfftn_f32', ft.rfftn, F((4, 6, 8)))
  add('fft_irfftn_c64', lambda x: ft.irfftn(x, s=(4, 6, 8)), H((4, 6, 8), 3))
  add('fft_fftn_c64', ft.fftn, C((4, 3, 8)))
  add('fft_ifftn_c64', ft.ifftn, C((2, 4, 3, 8)))
  add('fft_rfft2_f32', ft.rfft2, F((2, 6, 10)))
  add('fft_irfft2_c64', lambda x: ft.irfft2(x, s=(6, 9)), H((6, 9), 2))
  add('fft_rfftn_f64', ft.rfftn, F((4, 5, 6), 'f64'))
  add('fft_fft_64_c64', ft.fft, C((4, 64)))
