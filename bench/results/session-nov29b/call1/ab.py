"""Session nov29b, call 1: issue 18's warm finds (bench_cold's unseen rows, bench_cold's own child processes: a warm-up
find of another shape, then the row's finds on an empty user DB over the shipped DB) before and after e34c9e85 (the
timing in sets), each side in its own tree, sides alternating by round (ABBA), torch's benchmark-mode first call in
each round beside them. A first pass of the after side fills the shared kernel and CuPy caches.

    python ab.py --before /tmp/before --after . --dtypes fp32,fp16 --rounds 2 --out ab.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def child(root: str, kind: str, rows, env_extra: dict, timeout: float = 120.0) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("MIOFIND_DB", "MIOPEN_USER_DB_PATH")}
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra)
    cmd = [sys.executable, os.path.join(root, "bench", "bench_cold.py"), "--child", kind, "--rows", json.dumps(rows)]
    if kind == "miofind":
        cmd.append("--warmup")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=root)
    if r.returncode:
        print(f"{kind} child in {root} failed ({r.returncode}): {r.stderr[-1500:]}", flush=True)
        return []
    return [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--dtypes", default="fp32")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(a.after), "bench"))
    from bench_cold import SHAPES

    roots = {"before": os.path.abspath(a.before), "after": os.path.abspath(a.after)}
    groups = [[[s, dt, d] for d in "FBW"] for s in SHAPES for dt in a.dtypes.split(",")]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in groups:        # the caches filled (the after side's builds; the kernels are the same on both)
            child(roots["after"], "miofind", g, {"MIOFIND_DB": f"sqlite:///{tmp}/fill.sqlite"}, timeout=300)
        print("caches filled", flush=True)
        n = 0
        for r in range(a.rounds):
            for g in groups:
                torch = {(x["shape"], x["dtype"], x["direction"]): x["torch_first_ms"] for x in child(roots["after"], "torch", g, {})}
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for side in order:
                    n += 1
                    for x in child(roots[side], "miofind", g, {"MIOFIND_DB": f"sqlite:///{tmp}/db{n}.sqlite"}):
                        x.update(side=side, round=r, torch_first_ms=torch.get((x["shape"], x["dtype"], x["direction"])))
                        out.append(x)
                        t = x["timing"]
                        print(f"r{r} {side:6s} {x['shape']} {x['dtype']} {x['direction']}: find {x['find_ms']:.1f} ms "
                              f"(torch {x['torch_first_ms'] or float('nan'):.1f}), timing {t.get('timing_ms', 0):.1f}, "
                              f"verify {t.get('verify_ms', 0):.1f}, best {x['best']}", flush=True)
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)
    summarise(out)


def summarise(out) -> None:
    keys = sorted({(x["shape"], x["dtype"], x["direction"]) for x in out})
    print("\n| layer | type | dir | torch first ms | find before ms | find after ms | after / torch | timing before / "
          "after ms | best before / after |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
    for k in keys:
        xs = [x for x in out if (x["shape"], x["dtype"], x["direction"]) == k]
        side = lambda s, f: [f(x) for x in xs if x["side"] == s]  # noqa: E731
        tq = statistics.median(x["torch_first_ms"] for x in xs if x["torch_first_ms"])
        fb, fa = (statistics.median(side(s, lambda x: x["find_ms"])) for s in ("before", "after"))
        tb, ta = (statistics.median(side(s, lambda x: x["timing"].get("timing_ms", 0.0))) for s in ("before", "after"))
        bb, ba = ("/".join(sorted(set(side(s, lambda x: x["best"])))) for s in ("before", "after"))
        print(f"| {k[0]} | {k[1]} | {k[2]} | {tq:.1f} | {fb:.1f} | {fa:.1f} | {fa / tq:.2f} | {tb:.1f} / {ta:.1f} | "
              f"{bb} / {ba} |")


if __name__ == "__main__":
    main()
