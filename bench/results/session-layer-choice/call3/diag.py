"""Call 3 diagnosis: where an eager batch-1 step's convolutions run with and without the eager choice.

bench_graph_step.py's sequence for the miofind side (one eager forward on the default stream, the background builds
waited for, three forwards on a side stream, a capture there, then eager forwards on the default stream), then per
forward plan: its Entry, the eager Entry (``_policy.eager``), whether it has a C++ plan, and that plan's C++ and
Python-fallback call counts over the timed eager steps; and the eager step's median ms.

    python diag.py MODEL CONFIG EAGER_TRIES [--default-stream]
"""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import bench_models as bm  # noqa: E402
import bench_graph_step as gs  # noqa: E402


def main():
    name, config, tries = sys.argv[1], sys.argv[2], int(sys.argv[3])
    side_warm = "--default-stream" not in sys.argv
    torch = bm._torch()
    from miofind import tiered
    from miofind.torch import _fast, _policy, functional as MF
    import miofind.torch as mt
    _policy.EAGER_TRIES = tries
    train, batch, amp = bm.parse(config)
    xs, ys = bm.inputs(name, batch, amp, 2)
    model = bm.build(name)
    gs.calibrate(name, model)
    model = bm.prepare(model, False, amp, "miofind")
    step = bm.stepper(model, False, amp)
    step(xs[0], ys[0])
    tiered.wait(900)
    if side_warm:
        replay, body, sx, sy, _ = gs.captured(model, False, amp, xs[0], ys[0])
        replay()
    else:
        for _ in range(3):
            step(xs[0], ys[0])
    for _ in range(3):
        step(xs[1], ys[1])
    torch.cuda.synchronize()
    mod = _fast.module()
    plans = list(MF._plans.values())
    before = {id(p): mod.counts(p.fast) if type(p.fast) is int else None for p in plans}
    ms = [bm.event_median_ms(lambda i: step(xs[1], ys[1]), 20) for _ in range(5)]
    rows = []
    for p in plans:
        e = p.entry
        ev = e.eager
        c0, c1 = before[id(p)], (mod.counts(p.fast) if type(p.fast) is int else None)
        rows.append({"problem": e.problem_key, "entry": e.solver_id, "eager": ev.solver_id if ev is not None else None,
                     "fast": p.fast if type(p.fast) is int else repr(p.fast),
                     "cpp_calls": None if c0 is None or c1 is None else c1[0] - c0[0],
                     "fallback_calls": None if c0 is None or c1 is None else c1[1] - c0[1]})
    out = {"model": name, "config": config, "eager_tries": tries, "side_warm": side_warm,
           "step_ms_rounds": ms, "step_ms": statistics.median(ms), "stats": mt.stats(), "plans": rows}
    print(json.dumps({k: v for k, v in out.items() if k != "plans"}))
    bad = [r for r in rows if r["fallback_calls"] or r["cpp_calls"] in (None, 0)]
    print(f"plans {len(rows)}; with an eager alternative "
          f"{sum(1 for r in rows if r['eager'] and r['eager'] != r['entry'])}; not on the C++ path: {len(bad)}")
    for r in bad:
        print("  ", r)
    return out


if __name__ == "__main__":
    res = main()
    Path(sys.argv[4] if len(sys.argv) > 4 and not sys.argv[4].startswith("--") else "/dev/null").write_text(
        json.dumps(res, indent=1))
