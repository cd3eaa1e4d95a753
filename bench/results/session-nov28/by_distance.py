"""Leave-one-preset-out picks by how near the nearest known problem is (issue 20's ceiling question).

For each held-out problem of an ``eval_costmodel.py --rows`` file: the distance today's predictor finds to its
nearest training problem of the same shape class (``miofind.predict.nearest_problem``: L1 of log2 N, C, K, Ho, Wo,
same direction, layouts, types, math, filter, strides, dilations, grouping), then per distance band the model's and
today's top-1 and mean slowdown. Today's pick at a small distance is the measured ranking of a near twin (another
batch or channel count of the same layer shape, FLOP-scaled). ResNet-101's split (= ResNet-50's) is counted once.

``python bench/results/session-nov28/by_distance.py ROWS.json[.gz] [...]`` (CPU)
"""

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import eval_costmodel as ev  # noqa: E402
from miofind.db import FindDB  # noqa: E402
from miofind.models import MODELS  # noqa: E402
from miofind.predict import nearest_problem, parse_problem_key  # noqa: E402

BANDS = ((0.5, "<= 0.5"), (1.5, "0.5-1.5"), (3.0, "1.5-3"), (float("inf"), "> 3 or none"))


def distances(rows, keys):
    out = {}
    for held in MODELS:
        if held == "resnet101":
            continue
        ex = ev.held_out_keys(held)
        by_suffix = defaultdict(list)
        for k in keys:
            if k not in ex:
                by_suffix[k[k.rfind("-"):]].append(k)
        for x in rows:
            if x["held"] == held:
                k = x["key"]
                near = nearest_problem(parse_problem_key(k), by_suffix[k[k.rfind("-"):]])
                out[(held, k)] = near[1] if near else float("inf")
    return out


def main():
    db = FindDB(str(ROOT / "finddb" / "sm_90-132.sqlite"), readonly=True, immutable=True)
    keys = sorted({r.problem_key for r in db.iter_records(None)})
    dist = None
    for path in sys.argv[1:]:
        text = gzip.decompress(Path(path).read_bytes()) if path.endswith(".gz") else Path(path).read_bytes()
        rows = [x for x in json.loads(text) if x["held"] != "resnet101"]
        if dist is None:
            dist = distances(rows, keys)
        bands = defaultdict(list)
        for x in rows:
            d = dist[(x["held"], x["key"])]
            label = next(lab for lim, lab in BANDS if d <= lim)
            r = x["rows"]
            best = min(q[1] for q in r)
            bands[label].append((min(r, key=lambda q: q[4])[1] / best, min(r, key=lambda q: q[3])[1] / best))
        print(f"{path}: {len(rows)} held-out problems (ResNet-101's split once)")
        print("| nearest known problem's distance | problems | model top-1 | model mean slowdown | today's top-1 | "
              "today's mean slowdown |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for _, label in BANDS:
            v = np.array(bands[label])
            if len(v):
                print(f"| {label} | {len(v)} | {100 * (v[:, 0] <= 1 + 1e-12).mean():.1f}% | {100 * (v[:, 0].mean() - 1):.2f}% "
                      f"| {100 * (v[:, 1] <= 1 + 1e-12).mean():.1f}% | {100 * (v[:, 1].mean() - 1):.2f}% |")
        allv = np.array([v for b in bands.values() for v in b])
        ties = np.mean([sorted(q[1] for q in x["rows"])[1] / min(q[1] for q in x["rows"]) <= 1.03
                        for x in rows if len(x["rows"]) > 1])
        print(f"\nnear ties: the second fastest within 3% of the fastest in {100 * ties:.1f}% of the problems; a pick "
              f"within 3% of the fastest: model {100 * (allv[:, 0] <= 1.03).mean():.1f}%, today "
              f"{100 * (allv[:, 1] <= 1.03).mean():.1f}%\n")


if __name__ == "__main__":
    main()
