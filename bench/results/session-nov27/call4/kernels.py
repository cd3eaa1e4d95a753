"""GPU time per step by kind of kernel, from step_timeline's JSON (its first 40 kernels per side):
python3 bench/results/session-nov27/call4/kernels.py bench/results/session-nov27/call4/r/timeline/timeline_mobilenet_v2_train32-fp32.json"""
import json
import sys

CONV = ("igemm", "dw_nchw", "dw_wrw", "wrw_reduce", "im2col", "col2im", "winograd", "fft", "xmma_fprop", "xmma_dgrad",
        "xmma_wgrad", "xmma_gemm", "wgrad_alg", "dgrad_engine", "conv_depthwise", "cutlass", "scalePackedTensor",
        "splitKreduce")


def kind(name):
    if "bn_" in name:
        return "batch norm (cuDNN's kernels, through PyTorch)"
    if any(s in name for s in CONV):
        return "convolution (and its GEMMs)"
    return "other (elementwise, loss, optimizer, ...)"


d = json.load(open(sys.argv[1]))
print(f"{d['model']} {d['config']}: GPU ms per step by kind (the first 40 kernels by time of each side)")
for side in ("cudnn", "miofind"):
    tot = {}
    for name, ms, _ in d[side]["kernels_per_step"]:
        tot[kind(name)] = tot.get(kind(name), 0.0) + ms
    m = d[side]["median"]
    print(f"{side}: step {d[side]['unprofiled_step_ms']:.2f} ms unprofiled, GPU busy {m['busy_ms']:.2f} ms; "
          + "; ".join(f"{k} {v:.2f}" for k, v in sorted(tot.items())))
