"""Writes the CPU benchmark suite: bench/cpu/modules/<name>.hlo, HLO text as JAX lowers it.

CPU-sized versions of ../shared/bench/suite (GEMM, MLP, transformer block, conv block, softmax,
layernorm, MLP training step) plus an LSTM over a sequence (lax.scan -> while loop) and the
suite's loop and attention workloads at CPU size (GRU scan, layers in a scan, an SGD loop in
fori_loop, causal attention). The files
are checked in; rerun only to change the suite:
    python3 bench/cpu/gen_modules.py            # all
    python3 bench/cpu/gen_modules.py gemm_f32   # some (comma-separated)
The same functions as ../shared/bench/xla_workloads.py (written independently here so that the
suite does not change when that file does), with shapes that take 0.1-50 ms on two cores.
"""
import os
import sys

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "modules")
ONLY = sys.argv[1].split(",") if len(sys.argv) > 1 else None
f32 = jnp.float32


def spec(*shape):
    return jax.ShapeDtypeStruct(shape, f32)


def gelu(x):
    return jax.nn.gelu(x, approximate=True)


def layernorm(x, g, b):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean(jnp.square(x - m), axis=-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def mlp(x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def transformer_block(x, ln_g, ln_b, wqkv, wo, ln2_g, ln2_b, w1, w2, heads):
    B, S, D = x.shape
    h = layernorm(x, ln_g, ln_b)
    q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
    sh = lambda t: t.reshape(B, S, heads, D // heads).transpose(0, 2, 1, 3)
    q, k, v = sh(q), sh(k), sh(v)
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(D // heads))
    s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), s, np.float32(-1e9))
    p = jax.nn.softmax(s, axis=-1)
    a = jnp.einsum("bhqk,bhkd->bhqd", p, v).transpose(0, 2, 1, 3).reshape(B, S, D)
    x = x + a @ wo
    return x + gelu(layernorm(x, ln2_g, ln2_b) @ w1) @ w2


def conv_block(x, w1, s1, b1, w2, s2, b2):
    dn = ("NHWC", "HWIO", "NHWC")
    y = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn)
    y = jax.nn.relu(y * s1 + b1)
    y = lax.conv_general_dilated(y, w2, (1, 1), "SAME", dimension_numbers=dn)
    return jax.nn.relu(y * s2 + b2 + x)


def mlp_train_step(x, y, w1, b1, w2, b2):
    def loss(p):
        return jnp.mean(jnp.square(mlp(x, *p) - y))
    g = jax.grad(loss)((w1, b1, w2, b2))
    return tuple(p - 1e-3 * d for p, d in zip((w1, b1, w2, b2), g))


def lstm(xs, h0, c0, wx, wh, b):
    # xs [T, B, I]; gates i, f, g, o stacked on the last axis of wx [I, 4H], wh [H, 4H].
    def step(carry, x):
        h, c = carry
        z = x @ wx + h @ wh + b
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h
    (h, c), hs = lax.scan(step, (h0, c0), xs)
    return hs, h, c


def gru(wx, wh, b, xs, h0):
    def step(h, x):
        zx = x @ wx + b
        zh = h @ wh
        H = h.shape[-1]
        r = jax.nn.sigmoid(zx[:, :H] + zh[:, :H])
        u = jax.nn.sigmoid(zx[:, H:2 * H] + zh[:, H:2 * H])
        n = jnp.tanh(zx[:, 2 * H:] + r * zh[:, 2 * H:])
        h = (1 - u) * n + u * h
        return h, h
    h, hs = lax.scan(step, h0, xs)
    return hs, h


def attention(q, k, v):
    S, Dh = q.shape[-2], q.shape[-1]
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(Dh))
    s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), s, np.float32(-1e9))
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)


def gpt_scan(x, ln_g, ln_b, wqkv, wo, ln2_g, ln2_b, w1, w2):
    def layer(h, p):
        return transformer_block(h, *p, heads=4), None
    h, _ = lax.scan(layer, x, (ln_g, ln_b, wqkv, wo, ln2_g, ln2_b, w1, w2))
    return h


def train_loop(x, y, w1, b1, w2, b2):
    def body(_, p):
        return mlp_train_step(x, y, *p)
    return lax.fori_loop(0, 10, body, (w1, b1, w2, b2))


def workloads():
    W = {}
    W["gemm_f32"] = (lambda a, b: a @ b, (spec(1024, 1024), spec(1024, 1024)))
    W["gemm_f32_odd"] = (lambda a, b: a @ b, (spec(300, 700), spec(700, 500)))
    B, D, H = 256, 512, 2048
    W["mlp_f32"] = (mlp, (spec(B, D), spec(D, H), spec(H), spec(H, D), spec(D)))
    B, S, D = 2, 128, 256
    W["transformer_f32"] = (lambda *a: transformer_block(*a, heads=4),
                            (spec(B, S, D), spec(D), spec(D), spec(D, 3 * D), spec(D, D), spec(D), spec(D),
                             spec(D, 4 * D), spec(4 * D, D)))
    N, Hh, C = 8, 28, 64
    W["resblock_f32"] = (conv_block, (spec(N, Hh, Hh, C), spec(3, 3, C, C), spec(C), spec(C),
                                      spec(3, 3, C, C), spec(C), spec(C)))
    W["softmax_f32"] = (lambda x: jax.nn.softmax(x, axis=-1), (spec(2048, 2048),))
    W["layernorm_f32"] = (layernorm, (spec(4096, 1024), spec(1024), spec(1024)))
    B, D, H = 256, 256, 1024
    W["mlp_train_f32"] = (mlp_train_step, (spec(B, D), spec(B, D), spec(D, H), spec(H), spec(H, D), spec(D)))
    T, B, I, H = 64, 16, 128, 256
    W["lstm_f32"] = (lstm, (spec(T, B, I), spec(B, H), spec(B, H), spec(I, 4 * H), spec(H, 4 * H), spec(4 * H)))
    T, B, I, H = 32, 16, 256, 256
    W["gru_scan_f32"] = (gru, (spec(I, 3 * H), spec(H, 3 * H), spec(3 * H), spec(T, B, I), spec(B, H)))
    L, B, S, D = 2, 1, 128, 256
    W["gpt_scan_f32"] = (gpt_scan, (spec(B, S, D), spec(L, D), spec(L, D), spec(L, D, 3 * D), spec(L, D, D),
                                    spec(L, D), spec(L, D), spec(L, D, 4 * D), spec(L, 4 * D, D)))
    B, D, H = 128, 128, 512
    W["train_loop_f32"] = (train_loop, (spec(B, D), spec(B, D), spec(D, H), spec(H), spec(H, D), spec(D)))
    W["attention_f32"] = (attention, (spec(1, 4, 512, 64), spec(1, 4, 512, 64), spec(1, 4, 512, 64)))
    return W


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (fn, specs) in workloads().items():
        if ONLY and name not in ONLY:
            continue
        lowered = jax.jit(fn).lower(*specs)
        text = lowered.as_text(dialect="hlo")
        with open(os.path.join(OUT, name + ".hlo"), "w") as f:
            f.write(text)
        print(name, len(text), "bytes")


if __name__ == "__main__":
    main()
