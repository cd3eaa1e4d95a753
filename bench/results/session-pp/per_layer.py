"""Per layer, isolated kernel time of the Hopper solver at its find configs and shipped record's config over cuDNN's
best plan (same run, same buffers): call 1 (the session's start: alternates without ping-pong, the DB before) and
call 4 (the final code and DB), with call 4's fastest config.

    python bench/results/session-pp/per_layer.py > bench/results/session-pp/per_layer.txt
"""
import gzip
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(rel):
    p = HERE / rel
    return json.loads(gzip.decompress(p.with_name(p.name + ".gz").read_bytes()) if not p.exists() else p.read_text())


def best(row):
    cb = min(r["isolated_ms"] for r in row["cudnn"])
    rs = list(row["others"].values())[0]
    r = min(rs, key=lambda r: r["isolated_ms"])
    return r["isolated_ms"] / cb, r["cfg"], cb


for d in "FB":
    before = {r["layer"]: r for r in load(f"call1/sweep_{d}.json")["rows"]}
    after = load(f"call4/r/sweep_resnet50_{d}.json")["rows"]
    print(f"ResNet-50 N=32 FP16 {d}: Hopper at its find configs and DB config / cuDNN, isolated; call 1 -> call 4 "
          "(cuDNN us in call 4; call 4's fastest config: BM x BN / WGS / stages, pp = ping-pong)")
    lb, la = [], []
    for row in after:
        a, c, cb = best(row)
        b = best(before[row["layer"]])[0] if row["layer"] in before else None
        la.append(math.log(a))
        if b:
            lb.append(math.log(b))
        tag = f"{c['BM']}x{c['BN']}/{c['WGS']}/s{c['STAGES']}" + (" pp" if c.get("PINGPONG") else "")
        print(f"  {row['layer']:26s} {b if b else float('nan'):6.3f} -> {a:6.3f}  cuDNN {cb * 1e3:6.1f} us  {tag}")
    print(f"geomean: {math.exp(sum(lb) / len(lb)):.3f} -> {math.exp(sum(la) / len(la)):.3f} ({len(la)} layers)\n")
for d in "FB":
    rows = load(f"call4/r/sweep_nonresnet_{d}.json")["rows"]
    v = [math.log(best(r)[0]) for r in rows]
    npp = sum(1 for r in rows if best(r)[1].get("PINGPONG"))
    print(f"non-ResNet N=32 FP16 {d} (call 4): {math.exp(sum(v) / len(v)):.3f} over {len(v)} layers; ping-pong fastest on {npp}")
