"""Call 13 (call 14: with the FP32 yardstick): a yardstick for call 12's logits differences in batch-1 AMP and FP32 inference (calibrated batch-norm
statistics, bench_graph_step.calibrate): the relative L2 difference of the logits of cuDNN's heuristic choice
(benchmark mode off) and of miofind.torch, each against cuDNN benchmark mode's, on the same seeded input; for AMP
also each AMP side's logits against cuDNN benchmark mode's FP32 logits of the same model and input (the error of
FP16 inference itself: call 13 found the heuristic and benchmark choices identical, so no yardstick)."""
import json
import sys

sys.path.insert(0, "bench")
import bench_graph_step as gs  # noqa: E402
import bench_models as bm  # noqa: E402

torch = bm._torch()
out = {}
fp32 = {}
for config in ("infer1-fp32", "infer1-amp"):
    train, batch, amp = bm.parse(config)
    for name in ("resnet50", "mobilenet_v2", "inception_v3"):
        xs, _ = bm.inputs(name, batch, amp, 2)
        logits = {}
        for side in ("cudnn", "heuristic", "miofind"):
            model = bm.build(name)
            gs.calibrate(name, model)
            model = bm.prepare(model, False, amp, "miofind" if side == "miofind" else "cudnn")
            torch.backends.cudnn.benchmark = side == "cudnn"
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                logits[side] = model(xs[1]).float()
        ref = logits["cudnn"]
        row = {s: float((logits[s] - ref).norm() / ref.norm()) for s in ("heuristic", "miofind")}
        if not amp:
            fp32[name] = ref
        else:
            row.update({f"{s}_vs_fp32": float((logits[s] - fp32[name]).norm() / fp32[name].norm())
                        for s in ("cudnn", "miofind")})
        out[f"{name} {config}"] = row
        print(name, config, json.dumps(row), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
