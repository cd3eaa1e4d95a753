"""CPU host cost of an op defined by torch.library.custom_op (with register_autograd) against one defined through
torch.library.Library + impl + register_autograd, the same trivial Python implementation (2-core CPU host, no GPU).

    python bench/results/session-nov30l/op_defs.py
"""
import time, torch
out = torch.empty(8, 64, 56, 56)
def impl(x: torch.Tensor, w: torch.Tensor, stride: list[int], padding: list[int], dilation: list[int], groups: int) -> torch.Tensor:
    return out
def bwd(ctx, g):
    return g, g, None, None, None, None
def setup(ctx, inputs, output):
    pass
op1 = torch.library.custom_op("t1::f", impl, mutates_args=())
op1.register_autograd(bwd, setup_context=setup)
lib = torch.library.Library("t2", "DEF")
lib.define("f(Tensor x, Tensor w, int[] stride, int[] padding, int[] dilation, int groups) -> Tensor")
lib.impl("f", impl, "CPU")
torch.library.register_autograd("t2::f", bwd, setup_context=setup, lib=lib)
x = torch.randn(8, 64, 56, 56); w = torch.randn(64, 64, 3, 3)
def bench(f, n=20000):
    for _ in range(1000): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
a = torch.ops.t1.f.default; b = torch.ops.t2.f.default
for name, ctx in (("grad", torch.enable_grad), ("no_grad", torch.no_grad)):
    with ctx():
        print(name, "custom_op+autograd: %.1f us" % bench(lambda: a(x, w, [1,1],[1,1],[1,1],1)),
              "Library.impl+register_autograd: %.1f us" % bench(lambda: b(x, w, [1,1],[1,1],[1,1],1)))
