"""The acceptance find, measured: ``miofind find conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1
-q 1 -F 0`` in a fresh process on an empty FindDB (benchmarks), then again in a second process
(answered from the FindDB), with cuDNN's time for the same problem (PyTorch, benchmark mode)
side by side. Writes find_timing.json and the two CLI transcripts to --out."""

import argparse
import json
import os
import subprocess
import sys
import time

ARGS = "conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 0".split()


def cudnn_times():
    import torch

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.randn(32, 64, 56, 56, device="cuda", requires_grad=True)
    w = torch.randn(64, 64, 3, 3, device="cuda", requires_grad=True)
    out = {}

    def timed(fn):
        for _ in range(5):
            fn()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(30):
            s.record(); fn(); e.record(); e.synchronize()
            ts.append(s.elapsed_time(e))
        return sorted(ts)[len(ts) // 2]

    y = torch.nn.functional.conv2d(x, w, padding=1)
    dy = torch.randn_like(y)
    out["F"] = timed(lambda: torch.nn.functional.conv2d(x, w, padding=1))
    out["B"] = timed(lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1))
    out["W"] = timed(lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    try:
        cud = cudnn_times()
    except Exception as e:  # no torch: still report ours
        print("cuDNN timing unavailable:", e)
        cud = {}
    for run in ("cold", "warm"):
        t0 = time.perf_counter()
        jpath = os.path.join(a.out, f"find_{run}.json")
        p = subprocess.run([sys.executable, "-m", "miofind.cli", "find", "--json-out", jpath, *ARGS],
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        open(os.path.join(a.out, f"find_{run}.txt"), "w").write(p.stdout + p.stderr)
        print(p.stdout, p.stderr)
        if p.returncode:
            sys.exit(p.returncode)
        found = json.load(open(jpath))
        os.remove(jpath)   # merged into find_timing.json below
        for d in found:
            best = d["solutions"][0] if d["solutions"] else None
            rows.append({"run": run, "direction": d["direction"], "key": d["key"], "source": d["source"],
                         "elapsed_ms": d["elapsed_ms"], "process_wall_s": wall,
                         "best": best["solver_id"] if best else "-", "best_ms": best["time_ms"] if best else float("nan"),
                         "n_solutions": len(d["solutions"]), "all_verified": all(s["verified"] for s in d["solutions"]),
                         "cudnn_ms": cud.get(d["direction"])})
    json.dump({"command": "miofind find " + " ".join(ARGS), "rows": rows}, open(os.path.join(a.out, "find_timing.json"), "w"), indent=2)


if __name__ == "__main__":
    main()
