"""linalg_*: Cholesky and triangular solve as native HLO ops; the linear-algebra custom calls.

On the CPU, jax lowers cholesky and triangular_solve to LAPACK custom calls. The linalg_* cases
without a platform tag lower the same functions for platform 'tpu' (lowering only, no TPU
needed), where JAX emits the native HLO `cholesky` and `triangular-solve` ops; their outputs are
XLA's CPU results of the same function.
The linalg_*_cpu_* cases are CPU lowerings that call LAPACK (custom_call_target lapack_*_ffi);
the linalg_*_cuda_* cases lower the same functions for platform 'cuda' (no GPU needed), which
calls cuSOLVER/cuSPARSE (cusolver_*_ffi, cusparse_gtsv2_ffi, cu_lu_pivots_to_permutation), and a
few linalg_*_rocm_* cases for platform 'rocm' (hipsolver_*, hipsparse_*, hip_*). Their outputs
are XLA's CPU results. Eigen- and singular vectors are unique only up to sign/phase, so
those cases return invariants (V diag(w) V^H, |V|, U diag(s) V^H, U U^H) on inputs with
well-separated eigen/singular values in [1, 10].
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .spec import C, DTYPES, F, SPD, TRI


def _unitary(rng, n, complex_):
  a = rng.uniform(-1, 1, size=(n, n))
  if complex_:
    a = a + 1j * rng.uniform(-1, 1, size=(n, n))
  return np.linalg.qr(a)[0]


def SYM(n, dtype='f32', batch=()):
  """A Hermitian matrix Q diag(linspace(1, 10, n)) Q^H with Q random unitary."""

  def make(rng):
    cplx = DTYPES[dtype].kind == 'c'
    w = np.linspace(1, 10, n)
    out = np.empty(tuple(batch) + (n, n), dtype=np.complex128 if cplx else np.float64)
    for idx in np.ndindex(*batch):
      q = _unitary(rng, n, cplx)
      out[idx] = (q * w) @ np.conj(q.T)
    return out.astype(DTYPES[dtype])
  return make


def SVDIN(m, n, dtype='f32', batch=()):
  """An m x n matrix U diag(linspace(10, 1, k)) V^H with U, V random unitary."""

  def make(rng):
    cplx = DTYPES[dtype].kind == 'c'
    k = min(m, n)
    s = np.linspace(10, 1, k)
    out = np.empty(tuple(batch) + (m, n), dtype=np.complex128 if cplx else np.float64)
    for idx in np.ndindex(*batch):
      u = _unitary(rng, m, cplx)[:, :k]
      v = _unitary(rng, n, cplx)[:, :k]
      out[idx] = (u * s) @ np.conj(v.T)
    return out.astype(DTYPES[dtype])
  return make


def _h(x):
  return jnp.conj(jnp.swapaxes(x, -1, -2))


def _eigh(a):
  w, v = jnp.linalg.eigh(a)
  return w, (v * w[..., None, :]) @ _h(v), jnp.abs(v)


def _svd_thin(a):
  u, s, vh = jnp.linalg.svd(a, full_matrices=False)
  return s, (u * s[..., None, :]) @ vh, jnp.abs(vh)


def _svd_full(a):
  u, s, vh = jnp.linalg.svd(a, full_matrices=True)
  k = s.shape[-1]
  return (s, (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], u @ _h(u), _h(vh) @ vh)


def _svd_qr(a):
  u, s, vh = lax.linalg.svd(a, full_matrices=False, algorithm=lax.linalg.SvdAlgorithm.QR)
  return s, (u * s[..., None, :]) @ vh, jnp.abs(u)


def _eig_values(w):
  """Order-free: the sorted real parts, imaginary parts and magnitudes."""
  return jnp.sort(w.real), jnp.sort(w.imag), jnp.sort(jnp.abs(w))


def _eig(a):
  w, vl, vr = lax.linalg.eig(a)
  n = a.shape[-1]
  ac = a.astype(w.dtype)
  # V diag(w) V^-1 and VL^-H diag(w) VL^H both give back a, in any order of the pairs.
  right = jnp.linalg.solve(vr.T, (vr * w).T).T
  left = jnp.linalg.solve(_h(vl), w[:, None] * _h(vl))
  return (*_eig_values(w), right, left, jnp.linalg.norm(vr, axis=0), jnp.linalg.norm(vl, axis=0),
          jnp.abs(ac @ vr - vr * w).max() < 1e-3 * n)


def _tridiag(n, dtype='f32', batch=()):
  """(dl, d, du): a diagonally dominant tridiagonal system (dl[0] = du[-1] = 0, as JAX wants)."""
  def diag(which):
    def make(rng):
      x = rng.uniform(-1, 1, size=tuple(batch) + (n,))
      if DTYPES[dtype].kind == 'c':
        x = x + 1j * rng.uniform(-1, 1, size=tuple(batch) + (n,))
      if which == 'd':
        x = x + 4 * np.sign(x) + (x == 0)
      if which == 'dl':
        x[..., 0] = 0
      if which == 'du':
        x[..., -1] = 0
      return x.astype(DTYPES[dtype])
    return make
  return diag('dl'), diag('d'), diag('du')


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

  # The custom calls of the CPU (LAPACK) and cuda (cuSOLVER/cuSPARSE) lowerings.
  for plat in ('cpu', 'cuda'):
    cc = dict(platform=plat, note=f'lowered for platform {plat}: linear-algebra custom calls')
    def case(name, fn, *args):
      dt = name.rsplit('_', 1)[1]
      add(f'linalg_{name.rsplit("_", 1)[0]}_{plat}_{dt}', fn, *args, **cc)
    case('cholesky_f32', jnp.linalg.cholesky, SPD(8))
    case('cholesky_c64', jnp.linalg.cholesky, SPD(5, 'c64'))
    case('cholesky_batched_f64', jnp.linalg.cholesky, SPD(4, 'f64', batch=(3,)))
    case('trsolve_f32', _trsolve(True, True, False), TRI(6), F((6, 3)))
    case('solve_f32', jnp.linalg.solve, SPD(6), F((6, 2)))
    case('solve_f64', jnp.linalg.solve, SPD(6, 'f64'), F((6, 2), 'f64'))
    case('inv_f32', jnp.linalg.inv, SPD(5))
    case('det_f32', lambda a: (jnp.linalg.det(a), jnp.linalg.slogdet(a)[1]), SPD(5))
    case('slogdet_f64', lambda a: jnp.linalg.slogdet(a), SPD(7, 'f64'))
    case('lu_f32', lambda a: lax.linalg.lu(a), SPD(5))
    case('lu_batched_f32', lambda a: lax.linalg.lu(a), SPD(4, batch=(2,)))
    case('qr_f32', jnp.linalg.qr, F((6, 4)))
    case('qr_f64', jnp.linalg.qr, F((7, 5), 'f64'))
    case('qr_complete_f32', lambda a: jnp.linalg.qr(a, mode='complete'), F((6, 4)))
    case('qr_wide_f32', jnp.linalg.qr, F((4, 6)))
    case('qr_c64', jnp.linalg.qr, C((5, 3)))
    case('qr_pivoting_f32', lambda a: jax.scipy.linalg.qr(a, pivoting=True), F((5, 4)))
    case('qr_pivoting_wide_f64', lambda a: jax.scipy.linalg.qr(a, pivoting=True, mode='economic'),
         F((3, 5), 'f64'))
    case('lu_tall_f32', lambda a: lax.linalg.lu(a), F((6, 4)))
    case('lu_wide_f32', lambda a: lax.linalg.lu(a), F((3, 5)))
    case('lu_solve_f32', lambda a, b: jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(a), b),
         SPD(5), F((5, 2)))
    case('cho_solve_f32', lambda a, b: jax.scipy.linalg.cho_solve(
        jax.scipy.linalg.cho_factor(a), b), SPD(5), F((5, 3)))
    case('inv_c64', jnp.linalg.inv, SPD(4, 'c64'))
    case('svd_full_c64', lambda a: _svd_full(a)[:2], SVDIN(5, 3, 'c64'))
    case('expm_f32', jax.scipy.linalg.expm, lambda rng: (rng.uniform(-1, 1, (4, 4)) * 0.5).astype(
        np.float32))
    case('eigvalsh_f32', jnp.linalg.eigvalsh, SYM(6))
    case('eigh_f32', _eigh, SYM(7))
    # The strictly lower triangle holds junk that the 'U' call must not read.
    case('eigh_upper_f32', lambda a: jnp.linalg.eigh(
        a + jnp.tril(jnp.full_like(a, 5), -1), UPLO='U', symmetrize_input=False)[0], SYM(5))
    case('eigh_f64', _eigh, SYM(9, 'f64'))
    case('eigh_c64', lambda a: _eigh(a)[:2], SYM(5, 'c64'))
    case('eigh_batched_f32', _eigh, SYM(6, batch=(3,)))
    case('svdvals_f32', lambda a: jnp.linalg.svd(a, compute_uv=False), SVDIN(6, 4))
    case('svd_f32', _svd_thin, SVDIN(7, 5))
    case('svd_wide_f32', _svd_thin, SVDIN(4, 6))
    case('svd_full_f32', _svd_full, SVDIN(6, 4))
    case('svd_full_wide_f64', _svd_full, SVDIN(3, 5, 'f64'))
    case('svd_batched_f32', _svd_thin, SVDIN(5, 3, batch=(2,)))
    case('svd_c64', lambda a: _svd_thin(a)[:2], SVDIN(5, 4, 'c64'))
    case('svd_qr_f32', _svd_qr, SVDIN(6, 4))
    case('svd_qr_wide_f32', _svd_qr, SVDIN(4, 6))
    case('pinv_f32', jnp.linalg.pinv, SVDIN(6, 4))
    case('lstsq_f32', lambda a, b: jnp.linalg.lstsq(a, b)[0], SVDIN(6, 4), F((6, 2)))
    case('matrix_rank_f32', lambda a: jnp.linalg.matrix_rank(a), SVDIN(5, 5))
    case('norm2_f32', lambda a: jnp.linalg.norm(a, ord=2), SVDIN(5, 4))
    case('tridiagonal_solve_c64', lax.linalg.tridiagonal_solve, *_tridiag(5, 'c64'), C((5, 2)))
    # Error paths: info > 0 from potrf (JAX then returns NaN) and an exact zero pivot in getrf
    # (integer-valued, rank 2 in 3x3, so both sides see the zero exactly).
    case('cholesky_not_spd_f32', jnp.linalg.cholesky,
         lambda rng: np.array([[4, 2, 0], [2, 1, 3], [0, 3, 5]], np.float32))
    case('lu_singular_f32', lambda a: (*lax.linalg.lu(a), jnp.linalg.det(a)),
         lambda rng: np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32))
    # Repeated eigenvalues (I + u u^T: 1 four times, 1 + |u|^2 once): vectors are not unique,
    # so only w, V diag(w) V^T and V^T V.
    case('eigh_degenerate_f64', lambda a: (lambda w, v: (w, (v * w) @ v.T, v.T @ v))(
        *jnp.linalg.eigh(a)), lambda rng: np.eye(5) + np.outer(np.arange(1.0, 6.0),
                                                               np.arange(1.0, 6.0)) / 10)
    case('tridiagonal_f32', lambda a: lax.linalg.tridiagonal(a), SYM(6))
    case('tridiagonal_upper_f32', lambda a: lax.linalg.tridiagonal(a, lower=False), SYM(5))
    case('tridiagonal_c64', lambda a: lax.linalg.tridiagonal(a), SYM(5, 'c64'))
    case('tridiagonal_batched_f64', lambda a: lax.linalg.tridiagonal(a), SYM(4, 'f64', batch=(2,)))
    case('tridiagonal_solve_f32', lax.linalg.tridiagonal_solve, *_tridiag(6), F((6, 3)))
    case('tridiagonal_solve_f64', lax.linalg.tridiagonal_solve, *_tridiag(5, 'f64', batch=(2,)),
         F((2, 5, 2), 'f64'))
  # cholesky_update: a custom call on cuda only (cu_cholesky_update_ffi), jnp code elsewhere.
  def _chol_update(a, w):
    r = jnp.linalg.cholesky(a, upper=True)
    return jnp.triu(lax.linalg.cholesky_update(r, w))
  add('linalg_cholesky_update_cuda_f32', _chol_update, SPD(5), F((5,)), platform='cuda')
  add('linalg_cholesky_update_cuda_f64', _chol_update, SPD(6, 'f64'), F((6,), 'f64'),
      platform='cuda')
  # symmetric_product: cuBLAS syrk on cuda (only the lower triangle is the product there; the
  # strictly upper one is c's), plain HLO elsewhere.
  add('linalg_symmetric_product_cuda_f32', lambda a, c: jnp.tril(lax.linalg.symmetric_product(
      a, c, alpha=2.0, beta=0.5)), F((2, 4, 3)), F((2, 4, 4)), platform='cuda')
  # The ROCm lowering names the same contracts hipsolver_*/hipsparse_*/hip_*: one case per target.
  roc = dict(platform='rocm', note='lowered for platform rocm: hipSOLVER/hipSPARSE custom calls')
  add('linalg_lu_rocm_f32', lambda a: lax.linalg.lu(a), SPD(5), **roc)
  add('linalg_cholesky_rocm_f32', jnp.linalg.cholesky, SPD(6), **roc)
  add('linalg_qr_rocm_f32', jnp.linalg.qr, F((6, 4)), **roc)
  add('linalg_eigh_rocm_f32', _eigh, SYM(6), **roc)
  add('linalg_svd_wide_rocm_f32', _svd_thin, SVDIN(4, 6), **roc)
  add('linalg_svd_qr_wide_rocm_f32', _svd_qr, SVDIN(4, 6), **roc)
  add('linalg_tridiagonal_rocm_f32', lambda a: lax.linalg.tridiagonal(a), SYM(5), **roc)
  add('linalg_tridiagonal_solve_rocm_f32', lax.linalg.tridiagonal_solve, *_tridiag(6), F((6, 3)),
      **roc)
  # General eigenproblems: lapack_?geev_ffi (CPU), cuhybrid_eig_real/comp (cuda).
  for plat in ('cpu', 'cuda'):
    cc = dict(platform=plat, note=f'lowered for platform {plat}: geev / hybrid eig')
    add(f'linalg_eigvals_{plat}_f32', lambda a: _eig_values(jnp.linalg.eigvals(a)), F((6, 6)),
        **cc)
    add(f'linalg_eig_{plat}_f32', _eig, F((5, 5)), **cc)
    add(f'linalg_eig_{plat}_f64', _eig, F((6, 6), 'f64'), **cc)
    add(f'linalg_eig_{plat}_c64', _eig, C((4, 4)), **cc)
    # The QR iterations follow LAPACK's, so the eigenvalue order (and, for complex types, the
    # vectors with their largest component real positive) match XLA's directly.
    add(f'linalg_eigvals_ordered_{plat}_f32', jnp.linalg.eigvals, F((2, 6, 6)), **cc)
    add(f'linalg_eig_ordered_{plat}_c64', lambda a: lax.linalg.eig(a), C((5, 5)), **cc)
  # Complex Schur form (lapack_?gees_ffi; no GPU lowering): sqrtm is unique, and so are
  # Z T Z^H and T's diagonal as a set.
  def _schur(a):
    t, z = jax.scipy.linalg.schur(a, output='complex')
    w = jnp.diagonal(t)
    return (*_eig_values(w), (z @ t) @ _h(z), jnp.abs(_h(z) @ z))
  add('linalg_schur_complex_cpu_f32', _schur, F((5, 5)), platform='cpu')
  add('linalg_schur_cpu_c128', _schur, C((4, 4), 'c128'), platform='cpu')
  def _schur_real(a):
    t, z = jax.scipy.linalg.schur(a)
    w = jnp.linalg.eigvals(t)  # from the quasi-triangular T (geev on T)
    return (*_eig_values(w), (z @ t) @ z.T, z.T @ z, jnp.abs(jnp.tril(t, -2)).max())
  add('linalg_schur_real_cpu_f32', _schur_real, F((6, 6)), platform='cpu')
  add('linalg_schur_real_cpu_f64', _schur_real, F((5, 5), 'f64'), platform='cpu')
  add('linalg_sqrtm_cpu_f32', jax.scipy.linalg.sqrtm, SPD(4), platform='cpu')
  add('linalg_sqrtm_cpu_c64', jax.scipy.linalg.sqrtm, lambda rng: (
      SPD(4, 'c64')(rng) + np.diag([1j, 0, -1j, 0.5j]).astype(np.complex64)), platform='cpu')
  # Hessenberg reduction: JAX lowers it for the CPU only (?gehrd).
  cpu = dict(platform='cpu', note='lowered for platform cpu: LAPACK ?gehrd')
  add('linalg_hessenberg_cpu_f32', lambda a: lax.linalg.hessenberg(a), F((6, 6)), **cpu)
  add('linalg_hessenberg_cpu_c64', lambda a: lax.linalg.hessenberg(a), C((5, 5)), **cpu)
  add('linalg_hessenberg_batched_cpu_f64', lambda a: lax.linalg.hessenberg(a),
      F((2, 4, 4), 'f64'), **cpu)
