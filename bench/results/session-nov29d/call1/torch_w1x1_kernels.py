"""What cuDNN (through torch, benchmark mode) launches for ResNet-50's 1x1 stride-1 W layers, FP16 NHWC, N=32: kernel
names, grids, blocks and mean durations from torch.profiler's trace (one layer at a time, 20 weight-gradient calls)."""
import json, sys, collections
import torch
from torch.profiler import profile, ProfilerActivity

torch.backends.cudnn.benchmark = True
LAYERS = [(256, 64, 56), (256, 128, 56), (128, 512, 28), (512, 128, 28), (512, 256, 28), (256, 1024, 14),
          (1024, 256, 14), (1024, 512, 14), (512, 2048, 7)]
out = sys.argv[1]
for c, k, hw in LAYERS:
    x = torch.randn(32, c, hw, hw, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    w = torch.randn(k, c, 1, 1, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    dy = torch.randn(32, k, hw, hw, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    f = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                                    [False, True, False])
    for _ in range(10):
        f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            f()
        torch.cuda.synchronize()
    prof.export_chrome_trace(f"{out}/trace_{c}_{k}_{hw}.json")
    ev = [e for e in json.load(open(f"{out}/trace_{c}_{k}_{hw}.json"))["traceEvents"] if e.get("cat") == "kernel"]
    agg = collections.OrderedDict()
    for e in ev:
        a = e.get("args", {})
        key = (e["name"][:150], str(a.get("grid")), str(a.get("block")), a.get("shared memory"), a.get("registers per thread"))
        agg.setdefault(key, []).append(e["dur"])
    print(f"== {c}->{k} @{hw} 1x1 W FP16 NHWC N=32")
    for (n, g, b, sm, r), d in agg.items():
        print(f"  {len(d):3d}x {sum(d)/len(d):7.2f} us grid {g} block {b} smem {sm} regs {r}  {n}")
