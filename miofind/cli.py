"""The ``miofind`` command line: find, tune, run, solvers, db.

Problems are given as MIOpenDriver arguments (``conv -n 32 -c 64 -H 56 -W 56 -k 64 ... -F 1``);
miofind's own options come before the command word. Commands that need a GPU say so in one line
and exit with status 2 where there is none.
"""

from __future__ import annotations

import json
import math
import sys
import time

import click
from rich.table import Table

from .device import NoGPUError
from .problem import DIRECTION_NAMES, ProblemDescription

from .cli_common import EXIT_NO_GPU, console, fail as _fail, fmt_bytes as _fmt_bytes  # noqa: F401

DRIVER_ARGS = dict(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})


def _parse(driver_args) -> tuple[list[ProblemDescription], object]:
    from .driver_args import parse_driver_args, problems_from_options

    if not driver_args:
        _fail("expected MIOpenDriver arguments, e.g. conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1")
    try:
        opts = parse_driver_args(list(driver_args))
        return problems_from_options(opts), opts
    except ValueError as e:
        _fail(str(e))


def _device():
    from .device import current_device

    try:
        return current_device()
    except NoGPUError as e:
        _fail(str(e), EXIT_NO_GPU)


@click.group()
@click.version_option(package_name="miofind")
def main():
    """Find, verify, time and store the fastest convolution solvers for NVIDIA GPUs."""


@main.command(**DRIVER_ARGS)
@click.option("--mode", type=click.Choice(["normal", "fast", "hybrid", "dynamic_hybrid", "benchmark"]), default=None,
              help="normal (default): the FindDB when it has every candidate, else measure; fast: the FindDB, else a "
                   "prediction, never measure; hybrid: the FindDB, else measure; dynamic_hybrid: the FindDB, else "
                   "measure the solvers needing no compilation; benchmark: always measure. Default $MIOFIND_FIND_MODE.")
@click.option("--immediate", is_flag=True, help="Immediate mode: the FindDB's answer or a prediction; no GPU work.")
@click.option("--sort-by", type=click.Choice(["time", "workspace"]), default="time")
@click.option("--workspace-limit", type=int, default=None, help="Skip solvers needing more workspace bytes.")
@click.option("--solver", "solver_ids", multiple=True, help="Only these solver ids (repeatable).")
@click.option("--no-verify", is_flag=True, help="Skip verification against the float64 reference.")
@click.option("--explain", is_flag=True, help="Also list the solvers that do not apply, and why.")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--json", "as_json", is_flag=True, help="Print the solutions as JSON.")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Also write the solutions as JSON here.")
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def find(mode, immediate, sort_by, workspace_limit, solver_ids, no_verify, explain, db_url, as_json, json_out, driver_args):
    """Find the solutions of a problem for each direction selected by -F, fastest first."""
    problems, _ = _parse(driver_args)
    if explain:
        for p in problems:
            _print_applicability(p)
    dev = _device()
    from .api import find_solutions, get_solutions, warm_up
    from .db import FindDBError

    warm_up()
    out = []
    for p in problems:
        try:
            if immediate:
                res = get_solutions(p, workspace_limit=workspace_limit, solvers=list(solver_ids) or None, db=db_url)
            else:
                res = find_solutions(p, mode=mode, sort_by=sort_by, workspace_limit=workspace_limit,
                                     solvers=list(solver_ids) or None, verify=not no_verify, db=db_url)
        except (ValueError, FindDBError) as e:
            _fail(str(e))
        out.append({"key": p.key(), "direction": p.direction, "source": res.source, "db_layer": res.db_layer,
                    "basis": res.basis, "mode": res.mode, "elapsed_ms": res.elapsed_ms,
                    "solutions": [_sol_json(s) for s in res], "failures": [vars(f) for f in res.failures]})
        if not as_json:
            _print_find(p, res, dev)
    if as_json:
        click.echo(json.dumps(out, indent=2))
    if json_out:
        with open(json_out, "w") as fh:
            json.dump(out, fh, indent=2)


def _sol_json(s):
    return {"solver_id": s.solver_id, "algorithm": s.algorithm, "time_ms": s.time_ms, "time_q20_ms": s.time_q20_ms,
            "time_q80_ms": s.time_q80_ms, "workspace_bytes": s.workspace_bytes, "config": s.config,
            "verified": s.verified, "max_error": s.max_error if s.max_error is None or math.isfinite(s.max_error) else None,
            "source": s.source}


def _print_find(p, res, dev):
    t = Table(title=f"{DIRECTION_NAMES[p.direction]}  {p.key()}  on {dev.name}", title_justify="left")
    for col in ("#", "solver", "algorithm", "time ms (q20-q80)", "TFLOP/s", "workspace", "verified (rel err)", "config"):
        t.add_column(col, justify="right" if col in ("#", "time ms (q20-q80)", "TFLOP/s", "workspace") else "left")
    for i, s in enumerate(res, 1):
        q = f" ({s.time_q20_ms:.4f}-{s.time_q80_ms:.4f})" if s.time_q20_ms is not None else ""
        tf = p.flops() / (s.time_ms * 1e-3) / 1e12 if s.time_ms > 0 else float("nan")
        ver = ("yes" if s.verified else "no") + (f" ({s.max_error:.1e})" if s.max_error is not None else "")
        cfg = ",".join(f"{k}={v}" for k, v in s.config.items()) if s.config else ""
        t.add_row(str(i), s.solver_id, s.algorithm, f"{s.time_ms:.4f}{q}", f"{tf:.2f}", _fmt_bytes(s.workspace_bytes), ver, cfg)
    console.print(t)
    for f in res.failures:
        console.print(f"  [yellow]skipped[/] {f.solver_id} ({f.stage}): {f.reason}")
    if res.source == "db":
        console.print(f"  answered from the {res.db_layer} FindDB in {res.elapsed_ms:.1f} ms (no benchmarking)")
    elif res.source == "predicted":
        console.print(f"  PREDICTED, not measured ({res.basis}), in {res.elapsed_ms:.1f} ms (no benchmarking)")
    else:
        console.print(f"  benchmarked {len(res)} solution(s) in {res.elapsed_ms / 1e3:.2f} s"
                      + ("; stored in the FindDB" if res.stored else "; not stored"))


def _print_applicability(p):
    from .registry import applicability_table

    t = Table(title=f"{DIRECTION_NAMES[p.direction]}  {p.key()}", title_justify="left")
    t.add_column("solver")
    t.add_column("applies")
    t.add_column("why not")
    for s, a in applicability_table(p):
        t.add_row(s.id, "yes" if a else "no", "" if a else a.reason)
    console.print(t)


@main.command(**DRIVER_ARGS)
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def solvers(driver_args):
    """List the registered solvers; given a problem, which apply and why the others do not."""
    from .registry import registry

    if driver_args:
        problems, _ = _parse(driver_args)
        for p in problems:
            _print_applicability(p)
        return
    t = Table(title="registered solvers", title_justify="left")
    for col in ("#", "id", "family", "algorithm", "directions", "types", "tunable"):
        t.add_column(col)
    for r in registry():
        s = r.solver
        if s is None:
            t.add_row(str(r.number), r.id, "(retired)", "", "", "", "")
            continue
        t.add_row(str(r.number), s.id, s.family, s.algorithm, "".join(d for d in "FBW" if d in s.directions),
                  ",".join(sorted(s.dtypes)), "yes" if s.tunable else "")
    console.print(t)


def _read_driver_file(path):
    from .driver_args import problems_from_driver_args

    problems = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                problems += problems_from_driver_args(line)
            except ValueError as e:
                _fail(f"{path}:{lineno}: {e}")
    return problems


def _directions(direction, forw):
    if direction:
        dirs = "".join(d.upper() for d in direction)
        bad = [d for d in dirs if d not in "FBW"]
        if bad:
            _fail(f"--direction={bad[0]!r}: expected F, B or W")
        return dirs
    if forw is None or forw == 0:
        return "FBW"
    if not 0 < forw <= 7:
        _fail(f"-F {forw}: expected 0 (all) or a bitmask of 1 (F), 2 (B), 4 (W)")
    return "".join(d for bit, d in ((1, "F"), (2, "B"), (4, "W")) if forw & bit)


def _devices(spec):
    if spec is None:
        return None
    if spec.strip().lower() == "all":
        import cupy
        try:
            return list(range(cupy.cuda.runtime.getDeviceCount()))
        except Exception as e:
            _fail(f"--devices all: cannot count the GPUs ({e})", EXIT_NO_GPU)
    try:
        devs = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        _fail(f"--devices={spec!r}: expected 'all' or GPU indices like 0,1,2")
    if not devs or any(d < 0 for d in devs) or len(set(devs)) != len(devs):
        _fail(f"--devices={spec!r}: expected 'all' or distinct GPU indices like 0,1,2")
    return devs


@main.command(**DRIVER_ARGS)
@click.option("--model", default=None, help="A preset network: resnet50, resnet101, vgg16, mobilenet_v2, inception_v3, unet.")
@click.option("--batch", "batches", type=int, multiple=True, help="Batch size(s) for --model (repeatable; default 32).")
@click.option("--dtype", "dtypes", multiple=True, help="fp32, fp16, bf16 for --model (repeatable; default fp32).")
@click.option("--layout", "layouts", multiple=True, help="NCHW, NHWC for --model (repeatable; default NCHW).")
@click.option("--direction", "direction", multiple=True, help="F, B, W (repeatable; default all, or as -F).")
@click.option("-F", "--forw", type=int, default=None, help="MIOpenDriver's direction mask: 1 F, 2 B, 4 W, 0 all.")
@click.option("--file", "file_", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A file of MIOpenDriver lines, one problem spec per line (# comments allowed).")
@click.option("--strategy", type=click.Choice(["guided", "random", "exhaustive"]), default="guided", show_default=True)
@click.option("--max-configs", type=int, default=16, show_default=True, help="At most this many configs per solver and problem.")
@click.option("--max-seconds", type=float, default=None, help="At most this long per solver and problem.")
@click.option("--patience", type=int, default=8, show_default=True, help="Stop a search after this many configs without improvement.")
@click.option("--tune-solver", "tune_solvers", multiple=True, help="Tune only these solver ids (repeatable; find still runs all).")
@click.option("--no-precompile", is_flag=True, help="Do not compile ahead in a process pool.")
@click.option("--retune", is_flag=True, help="Tune again even where the DBs already hold a trusted result.")
@click.option("--no-tune", is_flag=True, help="Only find (default configs or stored tuned ones), no config search.")
@click.option("--devices", default=None, help="Local GPUs to use, one worker process each: 'all' or 0,1,...")
@click.option("--enqueue", is_flag=True, help="Only queue the problems as jobs in --db for `miofind worker`s.")
@click.option("--db", "db_url", default=None, help="FindDB SQLAlchemy URL or file (default: $MIOFIND_DB or the user DB).")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write every problem's outcome here.")
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def tune(model, batches, dtypes, layouts, direction, forw, file_, strategy, max_configs, max_seconds, patience,
         tune_solvers, no_precompile, retune, no_tune, devices, enqueue, db_url, json_out, driver_args):
    """Tune many problems into the FindDB and PerfDB: each tunable solver's config space is searched,
    then the problem is found with the tuned configs. Resumable: finished problems are skipped."""
    from .tuning import TuneOptions

    problems: list[ProblemDescription] = []
    if model:
        from .models import model_problems
        try:
            for b in batches or (32,):
                problems += model_problems(model, batch=b, dtypes=tuple(d.upper() for d in dtypes) or ("FP32",),
                                           layouts=tuple(x.upper() for x in layouts) or ("NCHW",),
                                           directions=_directions(direction, forw))
        except ValueError as e:
            _fail(str(e))
    elif batches or dtypes or layouts:
        _fail("--batch, --dtype and --layout select problems of a --model")
    if file_:
        problems += _read_driver_file(file_)
    if driver_args:
        problems += _parse(driver_args)[0]
    problems = list({p.key(): p for p in problems}.values())
    if not problems:
        _fail("nothing to tune: give --model NAME, --file lines.txt or MIOpenDriver arguments")
    try:
        opts = TuneOptions(strategy=strategy, max_configs=max_configs, max_seconds=max_seconds, patience=patience,
                           retune=retune, solvers=tuple(tune_solvers) or None, precompile=not no_precompile)
    except ValueError as e:
        _fail(str(e))
    if no_tune:
        opts = TuneOptions(**{**opts.as_json(), "solvers": ()})
    if enqueue:
        from .db import FindDBError
        from .db.jobs import JobQueue
        from .cli_db import _open

        try:
            n = JobQueue(_open(db_url)).enqueue([p.key() for p in problems], opts.as_json())
        except FindDBError as e:
            _fail(str(e))
        console.print(f"queued {n} new job(s) of {len(problems)} problem(s); start `miofind worker --db ...` on GPU hosts")
        return
    devs = _devices(devices)
    _device()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .api import warm_up
    from .tuning.run import tune_local

    warm_up()
    counts = {"done": 0, "skipped": 0, "failed": 0}
    t0 = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=console) as prog:
        task = prog.add_task("tuning", total=len(problems))

        def report(o):
            counts[o["status"]] += 1
            if o["status"] == "failed":
                prog.console.print(f"[red]failed[/] {o['key']}: {o['error']}")
            prog.advance(task)

        def event(msg):
            prog.update(task, description=msg[:70])

        try:
            outcomes = tune_local(problems, opts, db_url, devices=devs, report=report, event=event)
        except (RuntimeError, ValueError) as e:
            _fail(str(e))
        except KeyboardInterrupt:
            _fail(f"interrupted after {sum(counts.values())} of {len(problems)} problem(s); finished problems are "
                  "stored, and the same command resumes", 130)
    secs = time.perf_counter() - t0
    console.print(f"tuned {counts['done']} problem(s), skipped {counts['skipped']} already done, "
                  f"{counts['failed']} failed, in {secs:.1f} s")
    if json_out:
        with open(json_out, "w") as fh:
            json.dump({"seconds": secs, "counts": counts, "options": opts.as_json(), "outcomes": outcomes}, fh, indent=1)
    if counts["failed"]:
        sys.exit(1)


@main.command()
@click.option("--db", "db_url", required=True, help="The shared FindDB (e.g. postgresql+psycopg://host/db).")
@click.option("--devices", default=None, help="'all' or 0,1,...: one worker process per GPU (default: the current GPU).")
@click.option("--lease", type=float, default=600.0, show_default=True, help="Seconds a claimed job stays ours without renewal.")
@click.option("--idle-exit", type=float, default=None, help="Exit after this many seconds without a job (default: never).")
@click.option("--max-jobs", type=int, default=None, help="Exit after this many jobs.")
def worker(db_url, devices, lease, idle_exit, max_jobs):
    """Claim tuning jobs queued by `miofind tune --enqueue` from the shared FindDB and run them."""
    devs = _devices(devices)
    _device()
    from .db import FindDBError
    from .tuning.run import worker_loop, worker_name

    if devs and len(devs) > 1:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=_worker_process, args=(d, db_url, lease, idle_exit, max_jobs)) for d in devs]
        for pr in procs:
            pr.start()
        for pr in procs:
            pr.join()
        sys.exit(max(pr.exitcode or 0 for pr in procs))
    if devs:
        import cupy
        cupy.cuda.Device(devs[0]).use()
    try:
        n = worker_loop(db_url, name=worker_name(devs[0] if devs else None), lease_s=lease, idle_exit=idle_exit,
                        max_jobs=max_jobs, event=lambda m: console.print(m))
    except FindDBError as e:
        _fail(str(e))
    console.print(f"worker finished {n} job(s)")


def _worker_process(device, db_url, lease, idle_exit, max_jobs):
    import os
    os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    from .tuning.run import worker_loop, worker_name
    worker_loop(db_url, name=worker_name(device), lease_s=lease, idle_exit=idle_exit, max_jobs=max_jobs)


@main.command(**DRIVER_ARGS)
@click.option("--db", "db_url", default=None)
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def run(db_url, driver_args):
    """Run one solution per direction like MIOpenDriver: -S id|name forces a solver, -S -1 finds,
    -S 0 takes the best known; -V 1 verifies against the float64 reference; -t 1 -i N times."""
    problems, opts = _parse(driver_args)
    dev = _device()
    from .api import Solution, find_solutions
    from .db.handles import open_dbs
    from .invokers import get_invoker
    from .trust import tuned_config
    from .harness import Harness, VerifyError
    from .registry import get_solver

    sel = str(opts["solution"])
    bad = 0
    for p in problems:
        name = DIRECTION_NAMES[p.direction]
        if sel.lstrip("-").isdigit() and int(sel) <= 0:
            try:
                res = find_solutions(p, db=db_url)
            except ValueError as e:
                _fail(str(e))
            if not res:
                _fail(f"{name}: no solver could solve {p.key()}")
            sol = res[0]
            origin = f"source: {sol.source}"
        else:
            try:
                s = get_solver(sel)
            except ValueError as e:
                _fail(str(e))
            a = s.applicability(p)
            if not a:
                _fail(f"{name}: solver {s.id} does not apply: {a.reason}")
            # a forced tunable solver runs its trusted PerfDB config (user over system), else its default
            cfg = tuned_config(open_dbs(db_url, dev), dev, p, s)
            origin = "tuned config from the PerfDB" if cfg is not None else "default config"
            cfg = cfg if cfg is not None else s.default_config(p.as_conv())
            sol = Solution(s.id, s.algorithm, float("nan"), s.workspace_bytes(p), cfg, False, p)
        inv, ws = get_invoker(p, sol.solver_id, sol.config)
        h = Harness(p, verify=bool(opts["verify"]))
        wsbuf = h.workspace(ws)
        solver = get_solver(sol.solver_id)
        console.print(f"{name}: {sol.solver_id} ({sol.algorithm})  {p.key()}")
        if sol.config is not None and solver.tunable:
            console.print(f"  config {sol.config} ({origin})")
        try:
            err = h.check(inv, wsbuf, solver.family)
            if err is not None:
                console.print(f"  {name} convolution verifies against the float64 reference: relative error {err:.3g}")
        except VerifyError as e:
            bad += 1
            console.print(f"  {name} convolution [red]FAILED[/] against the float64 reference: {e}")
        if opts["time"]:
            med, q20, q80 = h.time(inv, wsbuf, 3, max(1, opts["iter"]))
            tf = p.flops() / (med * 1e-3) / 1e12
            console.print(f"  GPU kernel time {name}: {med:.4f} ms (q20 {q20:.4f}, q80 {q80:.4f}; "
                          f"{opts['iter']} iterations)  {tf:.2f} TFLOP/s")
    if bad:
        sys.exit(1)


from .cli_db import db  # noqa: E402  (the `miofind db ...` commands)

main.add_command(db)

from .report import report_command  # noqa: E402  (`miofind report`)

main.add_command(report_command)


if __name__ == "__main__":  # pragma: no cover
    main()
