"""Call 5's table: host ms to queue one no_grad batch-1 step per side, and miofind's Python-path Entry calls per solver
(us per call, calls per step), before / after the refresh. python3 call5/summary.py call5/r > call5/summary.txt"""
import glob, json, sys

for f in sorted(glob.glob(sys.argv[1] + "/*/bench_torch_host.json")):
    arm = f.split("/")[-2]
    for m in json.load(open(f))["models"]:
        print(f"{arm:22s} {m['config']:12s} host ms: cuDNN {m['cudnn_host_ms']:.2f}, miofind {m['miofind_host_ms']:.2f}")
        for lab, v in m.get("miofind_parts", {}).items():
            if lab.startswith("Entry.run") or lab.startswith("forward"):
                print(f"    {lab:44s} {v['us_per_call']:6.1f} us/call {v['calls_per_step']:5.1f} calls/step")
