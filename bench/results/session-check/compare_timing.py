"""Old (wall-timed) against new (device-timed) find records of the same problems: per solver, the median of new / old
time; per preset and direction, how often each side's fastest is a cuDNN plan, and how many picks changed.

    python bench/results/session-check/compare_timing.py BEFORE.sqlite AFTER.sqlite [--keys LINES_OF_KEYS]
"""
import sqlite3
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from miofind.models import model_problems  # noqa: E402


def records(path):
    out = defaultdict(dict)
    for key, sid, t in sqlite3.connect(path).execute("select problem_key, solver_id, time_ms from find_records"):
        out[key][sid] = min(t, out[key].get(sid, 1e30))
    return out


def main():
    before, after = records(sys.argv[1]), records(sys.argv[2])
    keys = {p.key(): m for m in ("resnet50", "mobilenet_v2", "inception_v3")
            for p in model_problems(m, batch=32, dtypes=("FP16",), layouts=("NHWC",))}
    ratio = defaultdict(list)
    groups = defaultdict(lambda: [0, 0, 0, 0])   # problems, cuDNN fastest before, after, picks changed
    for key, preset in keys.items():
        b, a = before.get(key), after.get(key)
        if not b or not a:
            continue
        for sid in set(a) & set(b):
            ratio[sid].append(a[sid] / b[sid])
        g = groups[(preset, key.rsplit("-", 1)[1])]
        fb, fa = min(b, key=b.get), min(a, key=a.get)
        g[0] += 1
        g[1] += "Cudnn" in fb
        g[2] += "Cudnn" in fa
        g[3] += fb != fa
    print("solver: median of device-timed / wall-timed time over the problems both measured (count)")
    for sid, v in sorted(ratio.items(), key=lambda kv: statistics.median(kv[1])):
        print(f"  {sid:34s} {statistics.median(v):.3f}  ({len(v)})")
    print("preset, direction: problems, cuDNN fastest wall-timed, cuDNN fastest device-timed, fastest changed")
    for (preset, d), g in sorted(groups.items()):
        print(f"  {preset:13s} {d}  {g[0]:3d}  {g[1]:3d}  {g[2]:3d}  {g[3]:3d}")


if __name__ == "__main__":
    main()
