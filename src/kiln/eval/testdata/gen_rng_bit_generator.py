"""Generates rng_bit_generator.json: reference outputs of XLA's rng-bit-generator on the CPU,
computed by jax (jax.lax.rng_bit_generator), for misc_test's bit-exact checks.

The jax key is u32[4]; XLA's state operand is its bitcast u64[2]:
state[0] = key[0] | key[1] << 32, state[1] = key[2] | key[3] << 32.
Run: python3 gen_rng_bit_generator.py > rng_bit_generator.json
"""
import json

import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from jax import lax

ALGS = {
    "rng_three_fry": lax.RandomAlgorithm.RNG_THREE_FRY,
    "rng_philox": lax.RandomAlgorithm.RNG_PHILOX,
    "rng_default": lax.RandomAlgorithm.RNG_DEFAULT,
}
DTYPES = {"u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32, "u64": jnp.uint64}
SHAPES = [(), (1,), (5,), (4,), (3, 5), (5, 3), (2, 3, 4), (3, 5, 7), (1, 1, 9), (6, 7)]
KEYS = [
    [0x12345678, 0x9ABCDEF0, 0xDEADBEEF, 0x01234567],
    [0, 0, 0xFFFFFFFE, 0xFFFFFFFF],  # counter about to wrap
    [7, 0, 42, 0],
]

cases = []
for alg_name, alg in ALGS.items():
    for dname, dt in DTYPES.items():
        for shape in SHAPES:
            for key in KEYS:
                # Keep the file small: all shapes for the first key, a few for the others.
                if key is not KEYS[0] and shape not in [(), (5,), (3, 5), (2, 3, 4)]:
                    continue
                k = jnp.array(key, jnp.uint32)
                st, bits = jax.jit(
                    lambda k: lax.rng_bit_generator(k, shape, dtype=dt, algorithm=alg))(k)
                cases.append({
                    "algorithm": alg_name,
                    "type": dname,
                    "shape": list(shape),
                    "key": [int(x) for x in key],
                    "new_key": [int(x) for x in np.asarray(st)],
                    "bits": [str(int(x)) for x in np.asarray(bits).reshape(-1)],
                })
print(json.dumps({"jax_version": jax.__version__, "cases": cases}, indent=None))
