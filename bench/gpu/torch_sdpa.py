#!/usr/bin/env python3
"""PyTorch's fused attention (torch.nn.functional.scaled_dot_product_attention, causal, bf16) on
the attention shapes of the bench suite, to put beside kiln's fused attention in one device call.

    python3 bench/gpu/torch_sdpa.py        # one JSON line per shape: median ms over 30 runs

Shapes [batch, heads, seq, dim]: attention_bf16's [4,16,4096,64]; the attention inside
transformer_bf16 ([8,16,1024,64]) and each gpt_scan_bf16 layer ([4,16,2048,64]).
"""
import json

import torch
import torch.nn.functional as F


def bench(shape, iters=30, warmup=5):
  q, k, v = (torch.randn(shape, device='cuda', dtype=torch.bfloat16) for _ in range(3))
  for _ in range(warmup):
    F.scaled_dot_product_attention(q, k, v, is_causal=True)
  torch.cuda.synchronize()
  times = []
  for _ in range(iters):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    F.scaled_dot_product_attention(q, k, v, is_causal=True)
    b.record()
    b.synchronize()
    times.append(a.elapsed_time(b))
  times.sort()
  return times[len(times) // 2]


for name, shape in (('attention_bf16', (4, 16, 4096, 64)), ('transformer_bf16 attention', (8, 16, 1024, 64)),
                    ('gpt_scan_bf16 layer attention', (4, 16, 2048, 64))):
  print(json.dumps({'name': name, 'shape': shape, 'torch_sdpa_ms': round(bench(shape), 4),
                    'torch': torch.__version__}))
