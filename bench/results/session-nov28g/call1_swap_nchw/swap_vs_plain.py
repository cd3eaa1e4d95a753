"""Per layer of call 1's sweeps: the swapped-operand NCHW wrapper's best config against the plain NCHW wrapper's and
cuDNN's best plan (isolated ms). Usage: python bench/results/session-nov28g/call1_swap_nchw/swap_vs_plain.py"""
import json, math, pathlib
here = pathlib.Path(__file__).parent / "r"
for name in ("unet_F", "vgg16_F", "unet_B", "vgg16_B"):
    rows = json.loads((here / f"{name}.json").read_text())["rows"]
    d = name[-1]
    s = "Fwd" if d == "F" else "Bwd"
    logs = []
    print(f"{name}: layer | cuDNN ms | plain NCHW / cuDNN | swap NCHW / cuDNN | swap / plain")
    for r in rows:
        cud = min(x["isolated_ms"] for x in r["cudnn"])
        sw = min(x["isolated_ms"] for x in r["ours"])
        pl = min((x["isolated_ms"] for x in r["others"].get(f"ConvImplicitGemmHopper{s}Nchw", [])), default=math.inf)
        logs.append(math.log(sw / pl))
        print(f"  {r['layer']} | {cud:.3f} | {pl / cud:.3f} | {sw / cud:.3f} | {sw / pl:.3f}")
    print(f"  geomean swap / plain: {math.exp(sum(logs) / len(logs)):.3f} ({len(logs)} layers)")
