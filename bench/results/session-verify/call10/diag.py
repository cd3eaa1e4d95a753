"""Call 10's check of call 9's NaN logits (MobileNetV2 and Inception-v3, batch-1 AMP inference from the seeded
untrained weights): each side's eager forward (PyTorch without miofind, cuDNN benchmark mode; miofind.torch), the
count of non-finite logits and the largest magnitude among the finite ones, and the largest activation magnitude
any convolution or linear layer produces in the FP32 forward (above 65504 an FP16 forward overflows)."""
import json
import sys

sys.path.insert(0, "bench")
import bench_models as bm  # noqa: E402

torch = bm._torch()
out = {}
for name in ("mobilenet_v2", "inception_v3", "resnet50"):
    xs, ys = bm.inputs(name, 1, True, 2)
    row = {}
    for backend in ("cudnn", "miofind"):
        model = bm.prepare(bm.build(name), False, True, backend)
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
            y = model(xs[1]).float()
        row[backend] = {"nonfinite": int((~torch.isfinite(y)).sum()),
                        "absmax_finite": float(y[torch.isfinite(y)].abs().max()) if torch.isfinite(y).any() else None}
        if backend == "cudnn":
            ref = y
        else:
            fin = torch.isfinite(ref) & torch.isfinite(y)
            row["rel_l2_finite"] = float((y[fin] - ref[fin]).norm() / ref[fin].norm()) if fin.any() else None
    # the FP32 forward's largest activation per module kind
    model = bm.prepare(bm.build(name), False, False, "cudnn")
    peak = {"max": 0.0, "where": ""}

    def hook(mod, inp, o, peak=peak):
        m = float(o.abs().max()) if torch.is_tensor(o) else 0.0
        if m > peak["max"]:
            peak.update(max=m, where=type(mod).__name__)

    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear,
                                                                                   torch.nn.BatchNorm2d))]
    with torch.no_grad():
        model(xs[1].float().contiguous())
    for h in hs:
        h.remove()
    row["fp32_peak_activation"] = peak
    out[name] = row
    print(name, json.dumps(row), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
