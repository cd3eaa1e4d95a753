"""Per layer of a W sweep (bench/sweep_configs.py --json): the best isolated time of the multicast configs
(MC_M x MC_N > 1) and of the others, each over cuDNN's best plan in the same run, and the geomeans; then each
multicast config's isolated time over the same config without multicast (MC_M = MC_N = 1), as quantiles.
``python3 bench/results/session-mcast/mc_summary.py sweep_w.json``"""
import json
import math
import sys


def main(path):
    rows = json.load(open(path))["rows"]
    print(f"{'layer':28s} {'cudnn us':>8s} {'plain':>7s} {'mcast':>7s} {'best':>7s}  best multicast config")
    acc = {"plain": [], "mcast": [], "best": []}
    for r in rows:
        ok = [o for o in r["ours"] if o.get("isolated_ms")]
        if not ok or not r.get("cudnn"):
            continue
        cd = min(c["isolated_ms"] for c in r["cudnn"] if c.get("isolated_ms"))
        mc = [o for o in ok if o["cfg"].get("MC_M", 1) * o["cfg"].get("MC_N", 1) > 1]
        pl = [o for o in ok if o not in mc]
        if not mc or not pl:
            continue
        bm, bp = min(mc, key=lambda o: o["isolated_ms"]), min(pl, key=lambda o: o["isolated_ms"])
        vals = {"plain": bp["isolated_ms"] / cd, "mcast": bm["isolated_ms"] / cd,
                "best": min(bp["isolated_ms"], bm["isolated_ms"]) / cd}
        for k, v in vals.items():
            acc[k].append(v)
        c = bm["cfg"]
        print(f"{r['layer']:28s} {cd * 1e3:8.1f} {vals['plain']:7.3f} {vals['mcast']:7.3f} {vals['best']:7.3f}  "
              f"{c['BM']}x{c['BN']} wgs{c['WGS']} split{c['SPLITK']} mc{c['MC_M']}x{c['MC_N']}")
    pairs = []
    for r in rows:
        def tile(c):
            return tuple((k, v) for k, v in sorted(c.items()) if k not in ("MC_M", "MC_N"))
        timed = [o for o in r["ours"] if o.get("isolated_ms")]
        plain = {}
        for o in timed:
            if o["cfg"].get("MC_M", 1) * o["cfg"].get("MC_N", 1) == 1:
                plain[tile(o["cfg"])] = min(plain.get(tile(o["cfg"]), math.inf), o["isolated_ms"])
        pairs += [o["isolated_ms"] / plain[tile(o["cfg"])] for o in timed
                  if o["cfg"].get("MC_M", 1) * o["cfg"].get("MC_N", 1) > 1 and tile(o["cfg"]) in plain]
    n = len(acc["best"])
    print("geomean over cuDNN (%d layers): " % n + "  ".join(
        f"{k} {math.exp(sum(map(math.log, v)) / max(1, len(v))):.3f}" for k, v in acc.items()))
    if pairs:
        pairs.sort()
        q = {f"q{int(f * 100)}": pairs[min(len(pairs) - 1, int(f * len(pairs)))] for f in (0.1, 0.5, 0.9)}
        print(f"multicast / the same config without ({len(pairs)} pairs): min {pairs[0]:.3f} "
              + " ".join(f"{k} {v:.3f}" for k, v in q.items()) + f" max {pairs[-1]:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
