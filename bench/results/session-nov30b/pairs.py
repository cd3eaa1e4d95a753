"""Resident B (PERSIST = 2) against its PERSIST = 1 twin, per layer of call N's sweeps: the median of the twins' time
ratios, the best PERSIST = 2 and best PERSIST = 1 config against cuDNN's best plan (isolated kernel time).
    python pairs.py call1/sweep_*.json"""
import json, math, sys, statistics

for f in sys.argv[1:]:
    d = json.load(open(f))
    for row in d["rows"]:
        ours = [o for o in row["ours"] if o.get("isolated_ms")]
        cud = row.get("cudnn_best_ms") or min((c["isolated_ms"] for c in row.get("cudnn", []) if c.get("isolated_ms")),
                                              default=None)
        by = {json.dumps({k: v for k, v in o["cfg"].items() if k != "PERSIST"}, sort_keys=True) + str(o["cfg"]["PERSIST"]):
              o["isolated_ms"] for o in ours}
        ratios = []
        for o in ours:
            if o["cfg"]["PERSIST"] == 2:
                twin = by.get(json.dumps({k: v for k, v in o["cfg"].items() if k != "PERSIST"}, sort_keys=True) + "1")
                if twin:
                    ratios.append(o["isolated_ms"] / twin)
        b2 = min((o["isolated_ms"] for o in ours if o["cfg"]["PERSIST"] == 2), default=math.nan)
        b1 = min((o["isolated_ms"] for o in ours if o["cfg"]["PERSIST"] != 2), default=math.nan)
        med = statistics.median(ratios) if ratios else math.nan
        print(f"{row['layer']:28s} twins {len(ratios):3d} median {med:.3f} min {min(ratios, default=math.nan):.3f} "
              f"max {max(ratios, default=math.nan):.3f} | best P2 {b2 * 1e3:7.1f} us, best P0/1 {b1 * 1e3:7.1f} us, "
              f"P2/P1 best {b2 / b1:.3f}" + (f", cuDNN {cud * 1e3:.1f} us" if cud else ""))
