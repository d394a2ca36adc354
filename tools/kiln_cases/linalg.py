"""linalg_*: Cholesky and triangular solve as native HLO ops; LAPACK custom calls apart.

On the CPU, jax lowers cholesky and triangular_solve to LAPACK custom calls. The linalg_* cases
lower the same functions for platform 'tpu' (lowering only, no TPU needed), where JAX emits the
native HLO `cholesky` and `triangular-solve` ops; their outputs are XLA's CPU results of the
same function. The _custom_call/ cases are CPU lowerings that call LAPACK (custom_call_target
lapack_*_ffi); a conformance test treats them separately.
"""

import jax.numpy as jnp
from jax import lax

from .spec import C, F, SPD, TRI

CC = '_custom_call'


def _trsolve(left, lower, trans, conj=False, unit=False):
  return lambda a, b: lax.linalg.triangular_solve(a, b, left_side=left, lower=lower,
                                                   transpose_a=trans, conjugate_a=conj,
                                                   unit_diagonal=unit)


def register(add):
  nat = dict(platform='tpu', note='lowered for platform tpu: native cholesky/triangular-solve')
  add('linalg_cholesky_f32', jnp.linalg.cholesky, SPD(8), **nat)
  add('linalg_cholesky_batched_f32', jnp.linalg.cholesky, SPD(5, batch=(3,)), **nat)
  add('linalg_cholesky_upper_f32', lambda a: jnp.linalg.cholesky(a, upper=True), SPD(6), **nat)
  add('linalg_cholesky_lax_f32', lambda a: lax.linalg.cholesky(a, symmetrize_input=False), SPD(6),
      **nat)
  add('linalg_cholesky_f64', jnp.linalg.cholesky, SPD(8, 'f64'), **nat)
  add('linalg_cholesky_c64', jnp.linalg.cholesky, SPD(5, 'c64'), **nat)
  for left in (True, False):
    for lower in (True, False):
      for trans in (False, True):
        name = (f'linalg_trsolve_{"left" if left else "right"}_{"lower" if lower else "upper"}'
                f'{"_trans" if trans else ""}_f32')
        b = F((6, 3) if left else (3, 6))
        add(name, _trsolve(left, lower, trans), TRI(6, lower=lower), b, **nat)
  add('linalg_trsolve_unit_diagonal_f32', _trsolve(True, True, False, unit=True),
      TRI(6, unit=True), F((6, 4)), **nat)
  add('linalg_trsolve_conj_trans_c64', _trsolve(True, False, True, conj=True),
      TRI(5, 'c64', lower=False), C((5, 2)), **nat)
  add('linalg_trsolve_batched_f32', _trsolve(False, True, False), TRI(4, batch=(2,)),
      F((2, 3, 4)), **nat)
  add('linalg_trsolve_f64', _trsolve(True, True, True), TRI(6, 'f64'), F((6, 2), 'f64'), **nat)
  add('linalg_cholesky_then_solve_f32', lambda a, b: lax.linalg.triangular_solve(
      jnp.linalg.cholesky(a), b, left_side=True, lower=True), SPD(6), F((6, 2)), **nat)

  # LAPACK custom calls (CPU lowering).
  cc = dict(subdir=CC)
  add('linalg_cholesky_cpu_f32', jnp.linalg.cholesky, SPD(8), **cc)
  add('linalg_trsolve_cpu_f32', _trsolve(True, True, False), TRI(6), F((6, 3)), **cc)
  add('linalg_solve_cpu_f32', jnp.linalg.solve, SPD(6), F((6, 2)), **cc)
  add('linalg_inv_cpu_f32', jnp.linalg.inv, SPD(5), **cc)
  add('linalg_det_cpu_f32', lambda a: (jnp.linalg.det(a), jnp.linalg.slogdet(a)[1]), SPD(5), **cc)
  add('linalg_lu_cpu_f32', lambda a: lax.linalg.lu(a), SPD(5), **cc)
  add('linalg_qr_cpu_f32', jnp.linalg.qr, F((6, 4)), **cc)
  add('linalg_eigh_cpu_f32', jnp.linalg.eigvalsh, SPD(6), **cc)
  add('linalg_svd_cpu_f32', lambda a: jnp.linalg.svd(a, compute_uv=False), F((6, 4)), **cc)
