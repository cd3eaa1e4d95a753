"""Geomean over ResNet-50 N=32 NHWC problems (the keys of this folder's tune_*.json) of own best / cuDNN's
best and Hopper / cuDNN, from the verified records of each FindDB file given, per data type and direction.

    python bench/results/shipped-db-hopper-tuned/ratio.py BEFORE.sqlite AFTER.sqlite
"""
import glob, json, math, os, sqlite3, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def keys(dtype, d):
    for f in sorted(glob.glob(os.path.join(HERE, "tune_*.json"))):
        ks = [o["key"] for o in json.load(open(f))["outcomes"] if o["key"].endswith("-" + d)]
        if ks:
            return [k.replace("-FP16-", f"-{dtype}-").replace("-BF16-", f"-{dtype}-") for k in ks]
    return []


def ratios(c, ks, hopper_only=False):
    out = {}
    for k in ks:
        rows = c.execute("select solver_id, time_ms from find_records where problem_key=? and verified=1", (k,)).fetchall()
        cud = [t for s, t in rows if s.startswith("ConvCudnn")]
        own = [t for s, t in rows if not s.startswith("ConvCudnn") and (not hopper_only or "Hopper" in s)]
        if cud and own:
            out[k] = min(own) / min(cud)
    return out


def gm(r):
    return math.exp(sum(math.log(v) for v in r.values()) / len(r)) if r else float("nan")


def main(dbs):
    for db in dbs:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        for dt in ("FP16", "BF16"):
            for d in "FBW":
                ks = keys(dt, d)
                r, rh = ratios(c, ks), ratios(c, ks, True)
                if r:
                    print(f"{os.path.basename(db)} {dt} {d}: {len(r)} problems, own best / cuDNN {gm(r):.3f}, "
                          f"Hopper / cuDNN {gm(rh):.3f} ({len(rh)} layers)")


if __name__ == "__main__":
    main(sys.argv[1:])
