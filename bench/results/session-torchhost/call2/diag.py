"""Call 2 diagnostic: why a cuDNN-backed Entry costs 44-105 us per call inside a ResNet-50 step against 11 us
in a tight loop, and how often the Hopper kernels' tensor maps are encoded during training steps.

    python diag.py OUT
"""
import collections
import copy
import json
import math
import sys
import time

sys.path.insert(0, "bench")
import torch
import torchvision
from bench_overhead import host_us

import miofind.torch as mt
from miofind import tma, tiered
from miofind.torch import _policy

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
DT = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}
out = {"configs": {}}


def model_step(config):
    mode, prec = config.split("-")
    train, batch = mode.startswith("train"), int(mode.lstrip("trainfe"))
    amp = prec == "amp"
    torch.manual_seed(0)
    m = torchvision.models.resnet50(weights=None).cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    yl = torch.randint(0, 1000, (batch,), device="cuda")
    if amp:
        m, x = m.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    if not train:
        m.eval()
    mt.convert(m)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)

    def step():
        if not train:
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                m(x)
            return
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(m(x), yl)
        loss.backward()
        opt.step()
    return step


for config in sys.argv[2].split(","):
    res = out["configs"][config] = {}
    step = model_step(config)
    for _ in range(3):
        step()
    tiered.wait(600)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    # tensor-map encodes during 5 steps
    enc = collections.Counter()
    undo = []
    for cls in (tma.Im2colSpec, tma.TiledSpec):
        orig = cls.encode

        def w(self, ptr, _o=orig, _n=cls.__name__):
            enc[_n] += 1
            return _o(self, ptr)
        cls.encode = w
        undo.append((cls, orig))
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    for cls, orig in undo:
        cls.encode = orig
    res["map_encodes_per_step"] = {k: v / 5 for k, v in enc.items()}
    # every cuDNN-backed Entry: its path, and its invoker's host us with fixed pointers, with two pointer sets
    # alternating, and all of them round-robin
    stream = torch.cuda.current_stream().cuda_stream
    rows, calls = [], []
    for key, e in list(_policy._table.items()):
        if not e.solver_id.startswith("ConvCudnn") or e.invoker is None:
            continue
        pr = e.pr
        dt = DT[pr.problem.dtype]
        sets = []
        for _ in range(2):
            bufs = [torch.randn(math.prod(s), dtype=dt, device="cuda") for s in pr._shapes]
            ws = torch.empty(max(e.ws_bytes, 1), dtype=torch.uint8, device="cuda")
            sets.append((bufs, ws))
        ptrs = [(b[0].data_ptr(), b[1].data_ptr(), b[2].data_ptr(), ws.data_ptr() if e.ws_bytes else 0) for b, ws in sets]
        inv = e.invoker
        p0, p1 = ptrs
        flip = [0]

        def alt(inv=inv, p0=p0, p1=p1, flip=flip):
            flip[0] ^= 1
            p = p1 if flip[0] else p0
            inv(p[0], p[1], p[2], p[3], stream)
        f = (lambda inv=inv, p=p0: inv(p[0], p[1], p[2], p[3], stream))
        t = host_us({"fixed": f, "alternating": alt}, 400, torch.cuda.synchronize, burst=20)
        rows.append({"key": pr.problem.key(), "solver": e.solver_id, "plan": (pr.config or {}).get("plan"),
                     "path": getattr(inv, "path", "?"), "ws_bytes": e.ws_bytes, **{k + "_us": v for k, v in t.items()}})
        calls.append(f)
        print(json.dumps(rows[-1]), flush=True)

    def rr():
        for f in calls:
            f()
    if calls:
        res["round_robin_us_per_call"] = host_us(rr, 100, torch.cuda.synchronize, burst=5) / len(calls)
    res["cudnn_entries"] = rows
    res["paths"] = dict(collections.Counter(r["path"] for r in rows))
    print(json.dumps({k: v for k, v in res.items() if k != "cudnn_entries"}), flush=True)
    _policy.clear() if hasattr(_policy, "clear") else None
    torch.cuda.empty_cache()

# the encode's own host cost through ctypes
spec = tma.TiledSpec("FP16", (256, 64), (512,), (64, 64))
buf = torch.empty(256 * 64, dtype=torch.float16, device="cuda")
p = buf.data_ptr()
n = 2000
t0 = time.perf_counter()
for _ in range(n):
    spec.encode(p)
out["tiled_encode_us"] = (time.perf_counter() - t0) / n * 1e6
json.dump(out, open(sys.argv[1], "w"), indent=1)
print(json.dumps({k: v for k, v in out.items() if k != "configs"}))
