"""Winners of call 7's first-step finds compared run against run: per pair, how many of the 68 problems
chose the same solver (fastest verified, uncut candidate) and the geomean ratio of the chosen times.
Usage: tar xzf r7.tgz -C /tmp && python winners.py /tmp/r7 [A:B ...] > winners.txt (A, B: fb-* run names; by
default call 7's pairs)."""
import json
import math
import sys


def load(root, name):
    out = {}
    for r in json.load(open(f"{root}/fb-{name}/find_breakdown.json"))["finds"]:
        c = [x for x in r["timing"].get("candidates", []) if not x["cut"]]
        if c:
            b = min(c, key=lambda x: x["time_ms"])
            out[r["key"]] = (b["solver_id"], b["time_ms"])
    return out


root = sys.argv[1]
pairs = [tuple(a.split(":")) for a in sys.argv[2:]] or [("fp32-before", "fp32-before2"), ("fp32-after", "fp32-after2"), ("fp32-before", "fp32-after"),
         ("fp32-before2", "fp32-after2"), ("fp32-before", "fp32-after2"), ("fp32-before2", "fp32-after"),
         ("amp-before", "amp-after")]
for a, b in pairs:
    A, B = load(root, a), load(root, b)
    ks = sorted(set(A) & set(B))
    same = sum(A[k][0] == B[k][0] for k in ks)
    g = math.exp(sum(math.log(B[k][1] / A[k][1]) for k in ks) / len(ks))
    print(f"{a:13s} vs {b:13s}: same winner in {same} of {len(ks)}, geomean chosen-time ratio {g:.3f}")
