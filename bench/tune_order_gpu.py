"""Configs-to-best of the tuner's "model" strategy against "guided", from exhaustive sweeps on the GPU.

For each held-out problem (ResNet-50 and Inception-v3 layers, N=32, FP32 NCHW and FP16 NHWC; the
ordering model, ``--model``, was trained without those presets: ``bench/eval_tune_order.py
--heldout-model``) and each of its tunable solvers here, every valid config of the solver's space
is measured once: compiled ahead in parallel processes (``tuning.precompile``, as the tuner does),
verified and timed through the tuner's ``GpuMeasurer`` (``--warmup``, ``--iters``). Then guided (seeds
0..``--seeds``-1), random (the same seeds) and model are replayed on the swept times
(``tuning.replay``) with no budget, in batches of each ``--batches`` size, and this reports how many
configs each measured until the sweep's best and until one within 2% of it (to the end of that
config's batch: a batch is measured together), per problem and solver and in total, and the
slowdown of the best each reaches within the tuner's default budget (16 configs, patience 8).

Robust for a time-limited call: ``--deadline`` (seconds for the whole run) and ``--per-problem``
(seconds per problem) stop sweeping; an incomplete sweep is replayed over what was swept and left
out of the totals. ``sweep.json``, ``tune_order_gpu.json`` and ``.md`` in ``--out`` are rewritten
after every solver. ``--replay FILE`` recomputes the replays of an earlier ``sweep.json`` on the CPU.

Run from the repository root: ``PYTHONPATH=$PWD python3 bench/tune_order_gpu.py --out DIR``
(cupy, no torch needed).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from miofind.costmodel import CostModel, CostModelError, config_order  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import get_solver  # noqa: E402
from miofind.tuning.replay import configs_to, replay  # noqa: E402
from miofind.tuning.tuner import config_space  # noqa: E402

DEFAULT_MODEL = ROOT / "bench" / "results" / "tune-order" / "heldout-resnet50-inception_v3.tune.model.npz"
IGEMM = {"F": "ConvImplicitGemmFwd", "B": "ConvImplicitGemmBwd", "W": "ConvImplicitGemmWrw"}
FP32 = {"dtype": "FP32", "layout": "NCHW"}
FP16 = {"dtype": "FP16", "layout": "NHWC"}
# (name, direction, layer, data type and layout, solvers): ResNet-50 and Inception-v3 layers, N=32
PROBLEMS = [
    ("r50_64to64_56_3x3_fp32_F", "F", dict(c=64, k=64, in_size=(56, 56), filter_size=3, pads=1), FP32,
     (IGEMM["F"], "ConvDirectTiledFwd")),
    ("r50_128to128_28_3x3_fp32_W", "W", dict(c=128, k=128, in_size=(28, 28), filter_size=3, pads=1), FP32,
     (IGEMM["W"],)),
    ("r50_256to64_56_1x1_fp32_B", "B", dict(c=256, k=64, in_size=(56, 56), filter_size=1), FP32, (IGEMM["B"],)),
    ("inc_128to128_17_1x7_fp32_F", "F", dict(c=128, k=128, in_size=(17, 17), filter_size=(1, 7), pads=(0, 3)), FP32,
     (IGEMM["F"], "ConvDirectTiledFwd")),
    ("r50_256to256_14_3x3_fp16_F", "F", dict(c=256, k=256, in_size=(14, 14), filter_size=3, pads=1), FP16,
     (IGEMM["F"],)),
    ("r50_128to512_28_1x1_fp16_B", "B", dict(c=128, k=512, in_size=(28, 28), filter_size=1), FP16, (IGEMM["B"],)),
    ("r50_512to512_7_3x3_fp16_W", "W", dict(c=512, k=512, in_size=(7, 7), filter_size=3, pads=1), FP16,
     (IGEMM["W"],)),
    ("inc_64to96_35_3x3_fp16_W", "W", dict(c=64, k=96, in_size=(35, 35), filter_size=3, pads=1), FP16,
     (IGEMM["W"],)),
]
BUDGET = {"max_configs": 16, "patience": 8}   # the `miofind tune` defaults
SEEDED = ("guided", "random")                  # replayed per seed; the model-ordered strategies are deterministic
STRATS = ("guided", "random", "model", "model_guided")


def problems(names=None) -> list[tuple[str, ProblemDescription, tuple[str, ...]]]:
    """(name, problem, solver ids) of ``PROBLEMS`` (those named in ``names`` when given)."""
    out = []
    for name, d, layer, dl, solvers in PROBLEMS:
        if names and name not in names:
            continue
        out.append((name, ProblemDescription.make(d, n=32, **layer, **dl), solvers))
    if names and len(out) != len(set(names)):
        unknown = sorted(set(names) - {o[0] for o in out})
        raise SystemExit(f"--problems: unknown {', '.join(unknown)}; known: {', '.join(p[0] for p in PROBLEMS)}")
    return out


def held_out(problem: ProblemDescription, model) -> bool | None:
    """Whether the problem's key is among the presets the model was trained without (None: the model
    does not say which)."""
    presets = (model.meta.get("heldout_presets") if model is not None else None) or None
    if presets is None:
        return None
    from eval_costmodel import preset_keys
    return problem.key() in set().union(*(preset_keys(m) for m in presets))


def replays(space, times, *, problem, solver, model, seeds: int, batches) -> dict:
    """Configs-to-best (``tuning.replay.configs_to``; 0% and 2%) of guided and random (per seed, and
    their means) and model, per batch size, and each strategy's best within ``BUDGET``."""
    finite = [t for t in times if t < math.inf]
    if not finite:
        return {}
    best = min(finite)
    ctx = {"problem": problem, "solver": solver, "model": model}
    out = {}
    for b in batches:
        per = {}
        for strat in STRATS:
            runs = []
            for seed in (range(seeds) if strat in SEEDED else [0]):
                kw = ctx if strat not in SEEDED else {}
                full = replay(strat, space, times, batch=b, seed=seed, **kw)
                budgeted = replay(strat, space, times, batch=b, seed=seed, **BUDGET, **kw)
                got = [times[i] for bb in budgeted for i in bb]
                runs.append({"best": configs_to(full, times), "within_2pct": configs_to(full, times, 0.02),
                             "budget_slowdown": min(got) / best if got and min(got) < math.inf else None,
                             "first": [i for bb in full[:1] for i in bb]})
            per[strat] = {"runs": runs, **{f"{m}_{g}": _mean(runs, m, g) for m in ("best", "within_2pct")
                                           for g in ("config", "batch")},
                          "budget_slowdown": _mean_value([r["budget_slowdown"] for r in runs])}
        out[str(b)] = per
    return out


def _mean(runs, metric, granularity):
    return _mean_value([r[metric][granularity] for r in runs])


def _mean_value(values):
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def totals(entries: list[dict], batches) -> dict:
    """Sums over the complete sweeps of each strategy's mean configs-to-best, and how often model
    needed no more than guided's mean."""
    done = [e for e in entries if e["complete"] and e.get("replay")]
    out = {"solvers": len(done)}
    for b in map(str, batches):
        row = {}
        for metric in ("best_batch", "within_2pct_batch", "best_config", "within_2pct_config"):
            row[metric] = {s: sum(e["replay"][b][s][metric] for e in done if s in e["replay"][b]) for s in STRATS}
            for s in ("model", "model_guided"):
                row[metric][f"{s}_not_worse"] = sum(e["replay"][b][s][metric] <= e["replay"][b]["guided"][metric]
                                                    for e in done if s in e["replay"][b])
        row["budget_slowdown_mean"] = {s: _mean_value([e["replay"][b][s]["budget_slowdown"] for e in done
                                                       if s in e["replay"][b]]) for s in STRATS}
        out[b] = row
    return out


def markdown(res: dict) -> str:
    lines = [f"# Configs-to-best: model vs guided ({res['device']})", "",
             f"Ordering model: `{res['model_file']}` (version {res['model_version']}, trained without presets "
             f"{res['model_heldout_presets']}). Each solver's whole space swept once (warm-up {res['warmup']}, "
             f"{res['iters']} timed runs, median); guided and random: mean of {res['seeds']} seeds. Counts are "
             "configs measured to the end of the batch that reached the sweep's best (and within 2% of it); "
             "`slow@16`: the best found within the tuner's default budget (16 configs, patience 8) against "
             "the sweep's best.", ""]
    for b in res["batches"]:
        lines += [f"## batch {b}", "",
                  "| problem | solver | space | failed | held out | to best: guided / random / model / model_guided "
                  "| to 2%: guided / random / model / model_guided | slow@16: guided / model / model_guided |",
                  "| --- | --- | ---: | ---: | --- | --- | --- | --- |"]
        for e in res["entries"]:
            r = e.get("replay", {}).get(str(b))
            if not r:
                lines.append(f"| {e['problem']} | {e['solver']} | {e['space']} | {e['failed']} | "
                             f"{e['held_out']} | {e.get('note', 'no replay')} | | |")
                continue
            f = lambda s, m: "-" if s not in r or r[s][m] is None else f"{r[s][m]:.1f}"  # noqa: E731
            sl = lambda s: "-" if s not in r or r[s]["budget_slowdown"] is None else f"{r[s]['budget_slowdown']:.3f}x"  # noqa: E731
            mark = "" if e["complete"] else " (incomplete sweep)"
            fell = " (model fell back to guided)" if e["model_fallback"] else ""
            lines.append(f"| {e['problem']}{mark} | {e['solver']}{fell} "
                         f"| {e['swept']}/{e['space']} | {e['failed']} | {e['held_out']} "
                         f"| {f('guided', 'best_batch')} / {f('random', 'best_batch')} / {f('model', 'best_batch')} / "
                         f"{f('model_guided', 'best_batch')} "
                         f"| {f('guided', 'within_2pct_batch')} / {f('random', 'within_2pct_batch')} / "
                         f"{f('model', 'within_2pct_batch')} / {f('model_guided', 'within_2pct_batch')} "
                         f"| {sl('guided')} / {sl('model')} / {sl('model_guided')} |")
        t = res["totals"].get(str(b))
        if t:
            lines += ["", f"Total over {res['totals']['solvers']} complete sweeps (batch {b}): to best guided "
                      f"{t['best_batch']['guided']:.1f}, random {t['best_batch']['random']:.1f}, model "
                      f"{t['best_batch']['model']:.1f}, model_guided {t['best_batch']['model_guided']:.1f} (not worse "
                      f"than guided's mean in {t['best_batch']['model_not_worse']} / "
                      f"{t['best_batch']['model_guided_not_worse']}); to 2% guided "
                      f"{t['within_2pct_batch']['guided']:.1f}, random {t['within_2pct_batch']['random']:.1f}, model "
                      f"{t['within_2pct_batch']['model']:.1f}, model_guided {t['within_2pct_batch']['model_guided']:.1f} "
                      f"(not worse in {t['within_2pct_batch']['model_not_worse']} / "
                      f"{t['within_2pct_batch']['model_guided_not_worse']}). Per config (batch 1 granularity) to best: "
                      f"guided {t['best_config']['guided']:.1f}, model {t['best_config']['model']:.1f}, model_guided "
                      f"{t['best_config']['model_guided']:.1f}. Mean slowdown at the default budget: "
                      + ", ".join(f"{s} {v:.3f}x" for s, v in t["budget_slowdown_mean"].items() if v is not None), ""]
    lines.append(f"Wall time {res['wall_seconds']:.0f} s; stopped early: {res['stopped'] or 'no'}.")
    return "\n".join(lines) + "\n"


def sweep_solver(problem, solver, space, *, warmup, iters, chunk, stop_at) -> tuple[list[float], int, str]:
    """(time per config, inf for failed or not swept; how many were swept; why it stopped early or '')."""
    from miofind.device import current_device
    from miofind.tuning import GpuMeasurer
    from miofind.tuning.precompile import precompile, solution_kernels

    precompile(solution_kernels(problem, solver, space), current_device().arch)   # the whole space, in parallel
    m = GpuMeasurer(problem, precompile=False)
    times: list[float] = []
    for i in range(0, len(space), chunk):
        if time.monotonic() >= stop_at:
            return times + [math.inf] * (len(space) - len(times)), len(times), "time cap"
        times += [t for t, _ in m.evaluate(solver, space[i:i + chunk], warmup=warmup, iters=iters)]
    return times, len(times), ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for sweep.json, tune_order_gpu.json and .md")
    ap.add_argument("--model", default=str(DEFAULT_MODEL), help="the config-aware ordering model file")
    ap.add_argument("--deadline", type=float, default=440.0, help="seconds for the whole run (default 440)")
    ap.add_argument("--per-problem", type=float, default=75.0, help="seconds of sweeping per problem (default 75)")
    ap.add_argument("--seeds", type=int, default=5, help="guided and random replays per solver (default 5)")
    ap.add_argument("--batches", default="16,4", help="batch sizes to replay at (default 16,4; the tuner's is 16)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=32, help="configs prepared and measured per step")
    ap.add_argument("--problems", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--replay", default=None, metavar="SWEEP_JSON", help="replay an earlier sweep.json (no GPU)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    deadline = t0 + args.deadline
    for name in ("seeds", "warmup", "iters", "chunk"):
        if getattr(args, name) < (0 if name == "warmup" else 1):
            raise SystemExit(f"--{name}: {getattr(args, name)} is out of range")
    try:
        batches = [int(b) for b in args.batches.split(",")]
        assert all(b >= 1 for b in batches)
    except (ValueError, AssertionError):
        raise SystemExit(f"--batches: {args.batches!r}: expected positive integers, comma-separated") from None

    try:
        model = CostModel.load(args.model)
    except CostModelError as e:
        raise SystemExit(f"--model: {e}") from None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    previous = json.loads(Path(args.replay).read_text()) if args.replay else None
    if previous is None:
        from miofind.device import current_device
        dev = current_device().name
    else:
        dev = previous["device"] + " (replayed on the CPU)"
    model_file = Path(args.model).resolve()
    model_file = model_file.relative_to(ROOT) if model_file.is_relative_to(ROOT) else model_file
    res = {"device": dev, "host": platform.node(), "model_file": str(model_file), "model_version": model.version,
           "model_heldout_presets": model.meta.get("heldout_presets"), "warmup": args.warmup, "iters": args.iters,
           "seeds": args.seeds, "batches": batches, "budget": BUDGET, "entries": [], "stopped": "",
           "wall_seconds": 0.0}
    sweeps = previous or {"device": dev, "sweeps": []}

    def write():
        res["totals"] = totals(res["entries"], batches)
        res["wall_seconds"] = time.monotonic() - t0
        if previous is None:
            (out / "sweep.json").write_text(json.dumps(sweeps, indent=1) + "\n")
        (out / "tune_order_gpu.json").write_text(json.dumps(res, indent=1) + "\n")
        (out / "tune_order_gpu.md").write_text(markdown(res))

    todo = problems(args.problems.split(",") if args.problems else None)
    if previous is not None:
        todo = [(s["problem"], _problem_of(s["key"]), (s["solver"],)) for s in previous["sweeps"]]
    for k, (name, p, solver_ids) in enumerate(todo):
        stop_at = min(deadline, time.monotonic() + args.per_problem)
        for sid in solver_ids:
            s = get_solver(sid)
            if previous is not None:
                sw = previous["sweeps"][k]
                space, times, swept, why = sw["space"], [math.inf if t is None else t for t in sw["times"]], \
                    sw["swept"], sw["stopped"]
            else:
                if time.monotonic() >= deadline:
                    res["stopped"] = f"deadline before {name} {sid}"
                    break
                space = config_space(p, s)
                try:
                    times, swept, why = sweep_solver(p, s, space, warmup=args.warmup, iters=args.iters,
                                                     chunk=args.chunk, stop_at=stop_at)
                except Exception as e:   # one solver's failure must not lose the others
                    times, swept, why = [math.inf] * len(space), 0, f"error: {e.__class__.__name__}: {e}"[:300]
                sweeps["sweeps"].append({"problem": name, "key": p.key(), "solver": sid, "space": space,
                                         "times": [None if t == math.inf else t for t in times], "swept": swept,
                                         "stopped": why})
            # an incomplete sweep is replayed over the swept part only
            sub = list(range(swept))
            entry = {"problem": name, "key": p.key(), "solver": sid, "space": len(space), "swept": swept,
                     "failed": sum(1 for i in sub if times[i] == math.inf), "complete": swept == len(space) and not why,
                     "held_out": held_out(p, model), "note": why,
                     "model_fallback": config_order(model, p, s, space[:1]) is None}
            if sub and any(times[i] < math.inf for i in sub):
                t_best = min(times[i] for i in sub if times[i] < math.inf)
                entry["best_config"] = space[min(sub, key=lambda i: times[i])]
                entry["best_ms"], entry["default_ms"] = t_best, (times[0] if times[0] < math.inf else None)
                entry["replay"] = replays([space[i] for i in sub], [times[i] for i in sub], problem=p, solver=s,
                                          model=model, seeds=args.seeds, batches=batches)
            res["entries"].append(entry)
            write()
            print(f"{name} {sid}: swept {swept}/{len(space)} {why} ({time.monotonic() - t0:.0f} s)", flush=True)
        if res["stopped"]:
            break
    write()
    print(markdown(res))


def _problem_of(key: str) -> ProblemDescription:
    from miofind.predict import parse_problem_key
    p = parse_problem_key(key)
    if p is None:
        raise SystemExit(f"--replay: problem key {key!r} cannot be parsed")
    return p


if __name__ == "__main__":
    main()
