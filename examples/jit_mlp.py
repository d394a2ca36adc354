#!/usr/bin/env python3
"""A JAX MLP trained for a few steps with kiln.jit, checked against jax.jit.

    ./kiln.sh example                     # builds kiln and its Python extension, runs this too
    PYTHONPATH=python:build-release/python python3 examples/jit_mlp.py [--device cuda:0]

JAX lowers the training step to HLO; kiln compiles it once (the first call) and runs every step.
The parameters are donated: each step's result takes over the previous parameters' memory.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import kiln


def init(rng, sizes):
  params = []
  for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
    w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
    b = np.full((fan_out,), 0.01, np.float32)
    params.append({"w": w, "b": b})
  return params


def predict(params, x):
  for layer in params[:-1]:
    x = jax.nn.relu(x @ layer["w"] + layer["b"])
  return x @ params[-1]["w"] + params[-1]["b"]


def loss(params, x, y):
  return jnp.mean((predict(params, x) - y) ** 2)


def train_step(params, x, y, lr):
  value, grads = jax.value_and_grad(loss)(params, x, y)
  params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
  return params, value


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--device", default=None, help="cpu, cuda:0, ... (default: the best device present)")
  p.add_argument("--steps", type=int, default=20)
  args = p.parse_args()

  rng = np.random.default_rng(0)
  x = rng.standard_normal((256, 64)).astype(np.float32)
  y = np.sin(x[:, :8] * 2).astype(np.float32)
  params = init(rng, [64, 128, 128, 8])

  step = kiln.jit(train_step, device=args.device, static_argnames="lr", donate_argnums=0)
  print(f"kiln {kiln.__version__} on {step.device}; devices: {', '.join(d.name for d in kiln.devices())}")
  print(step.lower(params, x, y, lr=0.05).compile().executable)

  # kiln: parameters live as kiln.Arrays across steps (donated, no copies).
  kparams = jax.tree_util.tree_map(lambda a: kiln.asarray(a, step.device), params)
  kx, ky = kiln.asarray(x, step.device), kiln.asarray(y, step.device)
  start = time.perf_counter()
  losses = []
  for _ in range(args.steps):
    kparams, value = step(kparams, kx, ky, lr=0.05)
    losses.append(float(np.asarray(value)))
  seconds = time.perf_counter() - start

  # The same steps with jax.jit.
  jstep = jax.jit(train_step, static_argnames="lr")
  jparams = params
  jlosses = []
  for _ in range(args.steps):
    jparams, value = jstep(jparams, x, y, lr=0.05)
    jlosses.append(float(value))

  print(f"loss: {losses[0]:.5f} -> {losses[-1]:.5f} in {args.steps} steps ({seconds * 1e3 / args.steps:.2f} ms a step, "
        f"compiles: {step.cache_info().misses})")
  worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(losses, jlosses))
  for kp, jp in zip(jax.tree_util.tree_leaves(kparams), jax.tree_util.tree_leaves(jparams)):
    np.testing.assert_allclose(np.asarray(kp), np.asarray(jp), rtol=2e-3, atol=2e-4)
  if worst > 2e-3 or not losses[-1] < losses[0]:
    raise SystemExit(f"kiln.jit differs from jax.jit: worst relative loss difference {worst:.2e}")
  print(f"matches jax.jit (worst relative loss difference {worst:.1e}; parameters within 2e-3)")


if __name__ == "__main__":
  main()
