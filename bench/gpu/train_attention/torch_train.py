#!/usr/bin/env python3
"""PyTorch's figure for the training step with attention (gen.py's train_step): the same pre-LN
transformer block (16 heads, causal, bf16, B8 S1024 D1024), loss mean(block(x)^2), backward and
an SGD update of the 8 parameters, with F.scaled_dot_product_attention (flash) for attention.
Prints one JSON line per mode (eager, torch.compile) with the median ms of 30 steps.

    python3 bench/gpu/train_attention/torch_train.py
"""
import json
import statistics
import time

import torch
import torch.nn.functional as F


def block(x, ln_g, ln_b, wqkv, wo, ln2_g, ln2_b, w1, w2, heads):
  B, S, D = x.shape
  h = F.layer_norm(x, (D,), ln_g, ln_b, 1e-5)
  q, k, v = (h @ wqkv).split(D, dim=-1)
  sh = lambda t: t.reshape(B, S, heads, D // heads).transpose(1, 2)
  a = F.scaled_dot_product_attention(sh(q), sh(k), sh(v), is_causal=True)
  x = x + a.transpose(1, 2).reshape(B, S, D) @ wo
  h = F.layer_norm(x, (D,), ln2_g, ln2_b, 1e-5)
  return x + F.gelu(h @ w1, approximate='tanh') @ w2


def main():
  dev, dt = 'cuda', torch.bfloat16
  B, S, D = 8, 1024, 1024
  g = torch.Generator(device=dev).manual_seed(0)
  r = lambda *s, scale=1.0: (torch.randn(*s, device=dev, generator=g) * scale).to(dt)
  x = r(B, S, D)
  params = [1 + r(D, scale=0.1), r(D, scale=0.1), r(D, 3 * D, scale=D**-0.5), r(D, D, scale=D**-0.5),
            1 + r(D, scale=0.1), r(D, scale=0.1), r(D, 4 * D, scale=D**-0.5), r(4 * D, D, scale=(4 * D)**-0.5)]
  for p in params:
    p.requires_grad_(True)

  def step(x, *ps):
    loss = torch.mean(torch.square(block(x, *ps, heads=16).float()))
    grads = torch.autograd.grad(loss, ps)
    with torch.no_grad():
      return loss, [p - 0.01 * gp for p, gp in zip(ps, grads)]

  for mode in ('eager', 'compile'):
    f = step if mode == 'eager' else torch.compile(step)
    try:
      for _ in range(3):
        f(x, *params)
      torch.cuda.synchronize()
      ts = []
      for _ in range(30):
        t = time.perf_counter()
        f(x, *params)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
      print(json.dumps({'name': 'train_attention_bf16', 'torch': mode, 'ms': round(statistics.median(ts) * 1e3, 4)}))
    except Exception as e:  # noqa: BLE001
      print(json.dumps({'name': 'train_attention_bf16', 'torch': mode, 'error': str(e)[:200]}))


if __name__ == '__main__':
  main()
