"""CPU host cost of miofind::conv_forward through the dispatcher (torch.library custom op, Python implementation) with
the launch replaced by a preallocated output, against calling its Python implementation directly (2-core CPU host,
no GPU: what compiled code in mode="default" pays per call before the lookup and launch).

    PYTHONPATH=. python bench/results/session-nov30l/op_overhead.py
"""
import time, torch
from miofind.torch import _ops
out = torch.empty(8, 64, 56, 56)
def fake_run(direction, a, b, out_shape, *args, **kw):
    return out
_ops._run = fake_run
x = torch.randn(8, 64, 56, 56); w = torch.randn(64, 64, 3, 3)
def bench(f, n=20000):
    for _ in range(1000): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
op = torch.ops.miofind.conv_forward.default
print("custom op (dispatcher -> Python _forward -> fake _run): %.1f us" % bench(lambda: op(x, w, [1, 1], [1, 1], [1, 1], 1)))
print("_forward directly: %.1f us" % bench(lambda: _ops._forward(x, w, [1, 1], [1, 1], [1, 1], 1)))
print("aten empty (reference unit): %.1f us" % bench(lambda: torch.empty(8, 64, 56, 56)))
xm = torch.randn(8, 64, 56, 56, device="meta"); wm = torch.randn(64, 64, 3, 3, device="meta")
print("aten convolution on meta (C++ dispatch + shape fn): %.1f us" % bench(lambda: torch.ops.aten.convolution.default(xm, wm, None, [1,1],[1,1],[1,1], False, [0,0], 1)))
