"""Diagnostic (untracked): VGG-16 AMP training step with convert+fuse on a fresh DB; per fused F problem, the pick
and a benchmark-mode find's candidates and failures."""
import os, sys, time
import torch, torchvision
import torch.nn.functional as F
import miofind.torch as mt
from miofind.torch import _policy
from miofind.api import find_solutions

torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(0)
model = torchvision.models.vgg16(weights=None).cuda().to(memory_format=torch.channels_last)
mt.convert(model); print("fused", mt.fuse(model))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
y = torch.randint(0, 1000, (32,), device="cuda")
for i in range(2):
    opt.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    loss.backward(); opt.step()
torch.cuda.synchronize()
for k, e in _policy._table.items():
    if k[0] != "F":
        continue
    tag = k[-1] if len(k) == 13 else None
    print(k[1], k[2], tag, "->", e.solver_id, e.source)
    if tag and e.solver_id != "ConvCudnnFwd":
        p = _policy.problem_for("F", k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], bias=int(tag[0]), activation=tag[1])
        res = find_solutions(p, mode="benchmark", store=False, cut_factor=0)
        for s in res:
            print("   ", s.solver_id, round(s.time_ms, 4), s.config if s.solver_id != "ConvCudnnFwd" else (s.config or {}).get("plan"))
        for f in res.failures:
            print("    FAIL", f.solver_id, str(f.reason)[:300])
