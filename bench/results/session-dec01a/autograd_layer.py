"""CPU host cost per call of the custom op miofind::conv_forward (custom_op: its Python autograd kernel, then its
Python implementation) against the same call below the Autograd key (``torch._C._AutoDispatchBelowAutograd``: no
autograd kernel), and the implementation called directly; ``_run`` replaced by a preallocated output (2-core CPU
host, no GPU; CI ran beside it). The first difference is what a C++ autograd kernel would take off each call of a
compiled graph, whose op calls reach our C++ CUDA kernel after the Python autograd kernel.

    PYTHONPATH=. python bench/results/session-dec01a/autograd_layer.py
"""
import statistics
import time

import torch

from miofind.torch import _ops

out = torch.empty(8, 64, 56, 56)
_ops._run = lambda direction, a, b, out_shape, *args, **kw: out
x, w = torch.randn(8, 64, 56, 56), torch.randn(64, 64, 3, 3)
args = (x, w, [1, 1], [1, 1], [1, 1], 1)
op = torch.ops.miofind.conv_forward.default


def bench(f, n=5000):
    for _ in range(300):
        f()
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e6


def below():
    with torch._C._AutoDispatchBelowAutograd():
        return op(*args)


guard = torch._C._AutoDispatchBelowAutograd
res = {"op (autograd kernel + impl)": [], "op below autograd (+ guard)": [], "guard alone": [], "impl directly": []}
with torch.no_grad():
    for r in range(5):
        res["op (autograd kernel + impl)"].append(bench(lambda: op(*args)))
        res["op below autograd (+ guard)"].append(bench(below))
        res["guard alone"].append(bench(lambda: guard().__enter__()))
        res["impl directly"].append(bench(lambda: _ops._forward(*args)))
print(f"torch {torch.__version__}, no_grad, median of 5 rounds of 5000 calls, µs per call:")
for k, v in res.items():
    print(f"  {k}: {statistics.median(v):.2f} (rounds {min(v):.2f}-{max(v):.2f})")
