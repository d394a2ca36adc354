"""rng_*: jax.random with the threefry, rbg and unsafe_rbg implementations; rng-bit-generator.

Keys are passed as raw uint32 data (2 words for threefry, 4 for rbg/unsafe_rbg) and wrapped
inside the function, which is what jax.config.update('jax_default_prng_impl', ...) selects.
"""

import jax
import jax.numpy as jnp
from jax import lax

from .spec import F, KEY, V

IMPLS = (('threefry', 'threefry2x32', 2), ('rbg', 'rbg', 4), ('unsaferbg', 'unsafe_rbg', 4))


def _with_key(impl, body):
  return lambda k, *a: body(jax.random.wrap_key_data(k, impl=impl), *a)


def register(add):
  kd = jax.random.key_data
  for short, impl, words in IMPLS:
    key = KEY(words)
    w = lambda body, impl=impl: _with_key(impl, body)  # noqa: E731
    add(f'rng_{short}_uniform', w(lambda k: jax.random.uniform(k, (8, 8))), key)
    add(f'rng_{short}_uniform_range_bf16', w(lambda k: jax.random.uniform(
        k, (16,), jnp.bfloat16, -2.0, 3.0)), key)
    add(f'rng_{short}_normal', w(lambda k: jax.random.normal(k, (4, 16))), key)
    add(f'rng_{short}_bits', w(lambda k: (jax.random.bits(k, (16,), jnp.uint32),
                                          jax.random.bits(k, (8,), jnp.uint8))), key)
    add(f'rng_{short}_split', w(lambda k: kd(jax.random.split(k, 4))), key)
    add(f'rng_{short}_fold_in', w(lambda k, d: (kd(jax.random.fold_in(k, 7)),
                                                kd(jax.random.fold_in(k, d)))),
        key, V(123456, 'u32'))
    add(f'rng_{short}_bernoulli', w(lambda k: jax.random.bernoulli(k, 0.3, (32,))), key)
    add(f'rng_{short}_randint', w(lambda k: jax.random.randint(k, (32,), -5, 10)), key)
    add(f'rng_{short}_permutation', w(lambda k, x: (jax.random.permutation(k, 16),
                                                    jax.random.permutation(k, x))),
        key, F((10,)))
    add(f'rng_{short}_split_then_normal', w(lambda k: jax.vmap(
        lambda kk: jax.random.normal(kk, (4,)))(jax.random.split(k, 3))), key)
  t = lambda body: _with_key('threefry2x32', body)  # noqa: E731
  add('rng_threefry_truncated_normal', t(lambda k: jax.random.truncated_normal(k, -1.0, 2.0, (16,))),
      KEY(2))
  add('rng_threefry_categorical', t(lambda k, logits: jax.random.categorical(k, logits, shape=(8, 3))),
      KEY(2), F((3, 5)))
  add('rng_threefry_choice', t(lambda k, x: jax.random.choice(k, x, (4,), replace=False)),
      KEY(2), F((10,)))
  add('rng_threefry_gamma', t(lambda k: jax.random.gamma(k, jnp.array([0.5, 1.0, 3.0]), (4, 3))),
      KEY(2))
  add('rng_threefry_bits_u64', t(lambda k: jax.random.bits(k, (8,), jnp.uint64)), KEY(2), x64=True)
  add('rng_threefry_uniform_f64', t(lambda k: jax.random.uniform(k, (8,), jnp.float64)), KEY(2))
  add('rng_legacy_prngkey', lambda s: jax.random.uniform(jax.random.PRNGKey(s), (8,)),
      V(42, 'u32'))
  # Raw rng-bit-generator with each algorithm.
  for name, alg in (('default', lax.RandomAlgorithm.RNG_DEFAULT),
                    ('three_fry', lax.RandomAlgorithm.RNG_THREE_FRY),
                    ('philox', lax.RandomAlgorithm.RNG_PHILOX)):
    add(f'rng_bit_generator_{name}_u32', lambda k, alg=alg: lax.rng_bit_generator(
        k, (8, 8), jnp.uint32, algorithm=alg), KEY(4))
    add(f'rng_bit_generator_{name}_u8', lambda k, alg=alg: lax.rng_bit_generator(
        k, (3, 5), jnp.uint8, algorithm=alg), KEY(4))
    add(f'rng_bit_generator_{name}_u64', lambda k, alg=alg: lax.rng_bit_generator(
        k, (4, 3), jnp.uint64, algorithm=alg), KEY(4))
