"""An LSTM over time steps with lax.scan (T64 B64 I512 H512 by default), for kiln against XLA.

    python3 bench/gpu/loops/lstm.py OUT_DIR [T B I H]

Writes OUT_DIR/lstm_scan_f32.hlo (the HLO JAX hands a compiler, as kiln reads it) and prints
XLA's median wall time of the jitted function on the default JAX device (GPU when present):
30 timed calls after 3 warm-ups, each call synchronized (block_until_ready). Run
`kiln bench OUT_DIR/lstm_scan_f32.hlo --device cuda` in the same call for the comparison.
"""
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cpu"))
from gen_modules import lstm  # noqa: E402  (the CPU suite's LSTM: one definition)


def main():
    out = sys.argv[1]
    t, b, i, h = (int(v) for v in sys.argv[2:6]) if len(sys.argv) >= 6 else (64, 64, 512, 512)
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    shapes = [(t, b, i), (b, h), (b, h), (i, 4 * h), (h, 4 * h), (4 * h,)]  # xs, h0, c0, wx, wh, b
    args = [jnp.asarray(rng.standard_normal(s, dtype=np.float32) * 0.1) for s in shapes]
    f = jax.jit(lstm)
    with open(os.path.join(out, "lstm_scan_f32.hlo"), "w") as fh:
        fh.write(f.lower(*args).as_text("hlo"))
    for _ in range(3):
        jax.block_until_ready(f(*args))
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append((time.perf_counter() - t0) * 1e3)
    print(f"xla lstm_scan_f32 T{t} B{b} I{i} H{h} on {jax.devices()[0].platform}: median {np.median(times):.3f} ms "
          f"(min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
