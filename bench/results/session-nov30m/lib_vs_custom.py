"""CPU host cost of miofind::conv_forward defined by torch.library.custom_op (the shipped op) against the same Python
implementation through torch.library.Library (CompositeExplicitAutograd or CPU key) with register_fake and
register_autograd, and against calling it directly; _run replaced by a preallocated output (2-core CPU host, no GPU).

    PYTHONPATH=. python bench/results/session-nov30m/lib_vs_custom.py
"""
import time, torch, statistics
from miofind.torch import _ops
out = torch.empty(8, 64, 56, 56)
_ops._run = lambda direction, a, b, out_shape, *args, **kw: out
lib = torch.library.Library("mf2", "DEF")
lib.define("conv_forward(Tensor x, Tensor w, int[] stride, int[] padding, int[] dilation, int groups) -> Tensor")
lib.impl("conv_forward", _ops._forward, "CompositeExplicitAutograd")
torch.library.register_fake("mf2::conv_forward", lambda x, w, s, p, d, g: torch.empty_like(x), lib=lib)
def bwd(ctx, dy):
    return dy, dy, None, None, None, None
torch.library.register_autograd("mf2::conv_forward", bwd, setup_context=_ops._setup_context, lib=lib)
lib2 = torch.library.Library("mf3", "DEF")
lib2.define("conv_forward(Tensor x, Tensor w, int[] stride, int[] padding, int[] dilation, int groups) -> Tensor")
lib2.impl("conv_forward", _ops._forward, "CPU")
torch.library.register_fake("mf3::conv_forward", lambda x, w, s, p, d, g: torch.empty_like(x), lib=lib2)
torch.library.register_autograd("mf3::conv_forward", bwd, setup_context=_ops._setup_context, lib=lib2)
x = torch.randn(8, 64, 56, 56); w = torch.randn(64, 64, 3, 3)
def bench(f, n=5000):
    for _ in range(300): f()
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
ops = {"custom_op": torch.ops.miofind.conv_forward.default, "Library CEA": torch.ops.mf2.conv_forward.default,
       "Library CPU": torch.ops.mf3.conv_forward.default}
args = (x, w, [1, 1], [1, 1], [1, 1], 1)
for mode, ctx in (("no_grad", torch.no_grad), ("grad(no req)", torch.enable_grad)):
    res = {k: [] for k in ops}
    with ctx():
        for r in range(5):
            for k, op in ops.items():
                res[k].append(bench(lambda: op(*args)))
        res["direct"] = [bench(lambda: _ops._forward(*args)) for _ in range(3)]
    print(mode, {k: round(statistics.median(v), 2) for k, v in res.items()})
