"""The ``miofind`` command line: find, tune, run, solvers, worker, db.

Problems are given as MIOpenDriver arguments (``conv -n 32 -c 64 -H 56 -W 56 -k 64 ... -F 1``).
miofind's own options may come before the command word or after the driver arguments
(``DriverCommand``). Results go to stdout as rich tables on a terminal and as plain TSV (a header
line, full keys) when stdout is a pipe or file; ``--json`` prints JSON. Logging goes to stderr
(``-v``/``-q``, ``MIOFIND_LOG_LEVEL``). Commands that need a GPU say so in one line and exit with
status 2 where there is none.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time

import click
from rich.markup import escape
from rich.table import Table

from . import env
from .cli_common import EXIT_NO_GPU, console, fail as _fail, fmt_bytes as _fmt_bytes, is_terminal, status, tsv
from .device import DeviceInfo, NoGPUError
from .driver_args import COMMANDS, DRIVER_LAYOUTS, FLAGS
from .problem import DIRECTION_NAMES, ProblemDescription

_log = logging.getLogger(__name__)

NO_GPU_HINT = ("without a GPU, `miofind solvers`, `miofind db ...` and `miofind find --device sm_90-132 ...` "
               "(immediate mode, from the shipped FindDB) still work")


# -- logging options: -v/-q on the group and on every command ----------------------------------------

def _verbosity_changed(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if not value:
        return
    ctx.meta[f"miofind.{param.name}"] = ctx.meta.get(f"miofind.{param.name}", 0) + value
    if ctx.parent is not None:  # the group configured logging already; a command's -v/-q adjusts it
        _configure_logging(ctx)


def _configure_logging(ctx: click.Context) -> None:
    from .log import configure

    try:
        configure(ctx.meta.get("miofind.verbose", 0), ctx.meta.get("miofind.quiet", 0))
    except ValueError as e:
        _fail(str(e))


def verbosity_options(f):
    """``-v/--verbose`` and ``-q/--quiet`` (both counted, and added to the group's)."""
    f = click.option("-q", "--quiet", count=True, expose_value=False, callback=_verbosity_changed,
                     help="Log less on stderr (repeatable: -q errors only, -qq critical only, -qqq nothing). "
                          "After driver arguments, write --quiet (-q is MIOpenDriver's pad_w).")(f)
    f = click.option("-v", "--verbose", count=True, expose_value=False, callback=_verbosity_changed,
                     help="Log more on stderr (repeatable: -v info, -vv debug). After driver arguments, write "
                          "--verbose (-v is MIOpenDriver's conv_stride_w).")(f)
    return f


# -- MIOpenDriver arguments -----------------------------------------------------------------------

PROBLEM_FLAG_HELP = {
    "forw": "directions: 1 forward, 2 backward data, 4 backward weights (sums combine), 0 all",
    "batchsize": "batch size N", "in_channels": "input channels C", "out_channels": "output channels K",
    "in_h": "input height", "in_w": "input width", "in_d": "input depth (3D)",
    "fil_h": "filter height", "fil_w": "filter width", "fil_d": "filter depth (3D)",
    "pad_h": "padding, height", "pad_w": "padding, width", "pad_d": "padding, depth (3D)",
    "conv_stride_h": "stride, height", "conv_stride_w": "stride, width", "conv_stride_d": "stride, depth (3D)",
    "dilation_h": "dilation, height", "dilation_w": "dilation, width", "dilation_d": "dilation, depth (3D)",
    "group_count": "groups (C and K divisible by it)",
    "spatial_dim": "2 or 3 spatial dimensions",
    "in_layout": f"input layout: {', '.join(DRIVER_LAYOUTS[2])} (2D); {', '.join(DRIVER_LAYOUTS[3])} (3D); default "
                 "NCHW or NCDHW",
    "fil_layout": "filter layout (as --in_layout)", "out_layout": "output layout (as --in_layout)",
    "mode": "conv (default), or trans (transposed convolution)",
    "pad_mode": "default (the pads given), same or valid",
    "trans_output_pad_h": "output padding of a transposed convolution, height",
    "trans_output_pad_w": "output padding of a transposed convolution, width",
    "trans_output_pad_d": "output padding of a transposed convolution, depth (3D)",
    "bias": "1: the convolution has a bias",
    "in_cast_type": "cast type of the input (fp8, bf8, fp16, ...; default none)", "wei_cast_type": "cast type of the weights",
    "out_cast_type": "cast type of the output",
    "tf32": "1: allow TF32 tensor-core math for FP32 data (miofind's own flag)",
}
RUN_FLAG_HELP = {
    "solution": "-1 finds and runs the fastest, 0 takes the best known (the FindDB's answer, else a find); a "
                "solver id or name forces that solver (with its tuned PerfDB config if any)",
    "verify": "1 verifies against the float64 reference, 0 does not",
    "time": "1 times the kernel and prints ms and TFLOP/s",
    "iter": "timed iterations for -t 1",
}


def _flag_rows(names) -> list[tuple[str, str]]:
    rows = []
    for name in names:
        short, default, kind = FLAGS[name]
        flag = (f"-{short}, " if short else "") + f"--{name} {'N' if kind == 'int' else 'S'}"
        text = PROBLEM_FLAG_HELP.get(name) or RUN_FLAG_HELP[name]
        shown = kind == "int" or name == "solution"  # other strings state their default in the text
        rows.append((flag, text + (f" (default {default})" if shown else "")))
    return rows


class DriverCommand(click.Command):
    """A command taking MIOpenDriver arguments, with its own options accepted anywhere on the line.

    Before the driver's command word (``conv``, ...) every option is the command's own and click parses
    it. From the command word on, a token is the command's own option only in its long form and only
    where MIOpenDriver has no flag of that name (``--mode`` is miofind's find mode when its value is
    one); everything else goes to the driver-argument parser, whose errors name the flag.
    ``run_flags`` lists, in ``--help``, the MIOpenDriver flags the command acts on beyond the problem.
    """

    def __init__(self, *args, run_flags: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.run_flags = run_flags

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        own, driver = self.split_args(ctx, args)
        return super().parse_args(ctx, own + (["--", *driver] if driver else []))

    def split_args(self, ctx: click.Context, args: list[str]) -> tuple[list[str], list[str]]:
        """(the command's own option tokens, the MIOpenDriver tokens) of ``args``."""
        opts = {name: p for p in self.get_params(ctx) if isinstance(p, click.Option)
                for name in (*p.opts, *p.secondary_opts)}

        def takes_value(p):
            return not (p.is_flag or p.count)

        own: list[str] = []
        i = 0
        while i < len(args):  # before the command word: all ours (click reports unknown options)
            tok = args[i]
            if tok == "--":
                return own, list(args[i + 1:])
            if not tok.startswith("-") or tok == "-" or tok.lstrip("-").isdigit():
                break
            p = opts.get(tok)
            own.append(tok)
            i += 1
            if p is not None and takes_value(p) and i < len(args):
                own.append(args[i])
                i += 1
        driver: list[str] = []
        while i < len(args):
            tok = args[i]
            name, eq, val = tok.partition("=")
            p = opts.get(name) if tok.startswith("--") else None
            if p is None:
                driver.append(tok)
                i += 1
                continue
            width = 2 if takes_value(p) and not eq else 1
            value = val if eq else (args[i + 1] if width == 2 and i + 1 < len(args) else None)
            if name[2:] in FLAGS and not (name == "--mode" and str(value).lower() in env.FIND_MODES):
                driver.append(tok)  # MIOpenDriver's flag of the same name
                i += 1
                continue
            own += args[i:i + width]
            i += width
        return own, driver

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        used = list(PROBLEM_FLAG_HELP) + (list(RUN_FLAG_HELP) if self.run_flags else [])
        with formatter.section("MIOpenDriver arguments"):
            formatter.write_text(f"A command word giving the data type ({', '.join(COMMANDS)}), then flags as "
                                 "-x VALUE, --name VALUE or --name=VALUE. miofind's own options above may also "
                                 "follow them, in their long form (--mode there only with a find mode).")
            formatter.write_dl(_flag_rows(PROBLEM_FLAG_HELP))
        if self.run_flags:
            with formatter.section("MIOpenDriver run flags"):
                formatter.write_dl(_flag_rows(list(RUN_FLAG_HELP)))
        ignored = [f"--{n}" for n in FLAGS if n not in used]
        with formatter.section("Accepted and ignored"):
            formatter.write_text(", ".join(ignored))
        super().format_epilog(ctx, formatter)


def driver_command(group: click.Group, **kwargs):
    return group.command(cls=DriverCommand, **kwargs)


def _parse(driver_args) -> tuple[list[ProblemDescription], object]:
    from .driver_args import parse_driver_args, problems_from_options

    if not driver_args:
        _fail("expected MIOpenDriver arguments, e.g. conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1")
    try:
        opts = parse_driver_args(list(driver_args))
        problems = problems_from_options(opts)
    except ValueError as e:
        _fail(str(e))
    _log.debug("driver arguments %s: %s", " ".join(driver_args), ", ".join(p.key() for p in problems))
    return problems, opts


def _device():
    from .device import current_device

    try:
        dev = current_device()
    except NoGPUError as e:
        _fail(f"{e}; {NO_GPU_HINT}", EXIT_NO_GPU)
    _log.info("GPU %s (%s), CUDA %s, driver %s, CuPy %s", dev.name, dev.db_name, dev.cuda_version,
              dev.driver_version, dev.cupy_version)
    return dev


def _offline_device(spec: str) -> DeviceInfo:
    """A DeviceInfo for ``--device ARCH-SMS[-NAME]`` (as the FindDB stores devices) with no GPU: the
    name comes from the system FindDB's records of that device where it has them, the CUDA version
    from CuPy's runtime library (records are trusted under the same CUDA major only)."""
    import re

    from .device import version_string

    m = re.fullmatch(r"(sm_\d+)-(\d+)(?:-(\S+))?", spec.strip())
    if not m:
        _fail(f"--device={spec!r}: expected ARCH-SMS[-NAME] as the FindDB stores devices, e.g. sm_90-132")
    arch, sms, slug = m.group(1), int(m.group(2)), m.group(3)
    name = slug or ""
    from .db.system import open_system_db

    sysdb = open_system_db(arch, sms)
    if sysdb is None:
        _log.warning("no system FindDB for %s-%d: only the user FindDB answers", arch, sms)
    else:
        for d in sysdb.devices():
            if d == f"{arch}-{sms}-{slug}" or (slug is None and d.startswith(f"{arch}-{sms}-")):
                rec = next(iter(sysdb.iter_records(device=d, limit=1)), None)
                if rec is not None:
                    name = rec.device_name
                    break
    cuda, cupy_version = "", ""
    try:
        import cupy
        cuda, cupy_version = version_string(cupy.cuda.runtime.runtimeGetVersion()), cupy.__version__
    except Exception as e:  # no CuPy or no CUDA runtime: records of every CUDA version are then untrusted
        _log.warning("cannot read the CUDA runtime version (%s): stored records will not be trusted", e)
    dev = DeviceInfo(name=name, arch=arch, sm_count=sms, cuda_version=cuda, cupy_version=cupy_version)
    _log.info("device %s without a GPU (CUDA %s)", dev.db_name, cuda or "?")
    return dev


@click.group()
@click.version_option(package_name="miofind")
@verbosity_options
@click.pass_context
def main(ctx):
    """Find, verify, time and store the fastest convolution solvers for NVIDIA GPUs.

    Logging goes to stderr at the level of -v/-q, else $MIOFIND_LOG_LEVEL or $MIOPEN_LOG_LEVEL (default
    warning). Results go to stdout: tables on a terminal, tab-separated values with a header line when
    piped, JSON with --json.
    """
    _configure_logging(ctx)
    ctx.call_on_close(_finish_background)


def _finish_background() -> None:
    """The CLI fills the FindDB: before it exits, every background job its finds left (specialised builds) is done
    and stored (a library process stops them at exit: MIOFIND_EXIT_WAIT)."""
    tiered = sys.modules.get("miofind.tiered")
    if tiered is None:
        return
    tiered.finish_at_exit()
    n = tiered.pending()
    if n:
        _log.info("waiting for %d background job(s) (specialised builds) to be stored", n)
        tiered.wait()


FIND_MODE_HELP = ("normal (default): the FindDB when it has every candidate, else measure; fast: the FindDB, else "
                  "a prediction, never measure; hybrid: the FindDB, else measure; dynamic_hybrid: the FindDB, else "
                  "measure the solvers needing no compilation; benchmark: always measure. Default: "
                  "$MIOFIND_FIND_MODE, else as $MIOPEN_FIND_ENFORCE and $MIOPEN_FIND_MODE (names or 1-5) say, else "
                  "normal.")
DB_HELP = "FindDB SQLAlchemy URL or file (default: $MIOFIND_DB, else $MIOPEN_USER_DB_PATH, else the user DB)."


@driver_command(main)
@click.option("--mode", type=click.Choice(env.FIND_MODES), default=None, help=FIND_MODE_HELP)
@click.option("--immediate", is_flag=True, help="Immediate mode: the FindDB's answer or a prediction; no GPU work.")
@click.option("--device", "device_spec", default=None,
              help="Answer in immediate mode for this device, as the FindDB names it (e.g. sm_90-132 or "
                   "sm_90-132-NVIDIA_H100_80GB_HBM3), with no GPU: from the shipped FindDB and the user DB.")
@click.option("--sort-by", type=click.Choice(["time", "workspace"]), default="time", show_default=True,
              help="Order the solutions by time, or by workspace size (then time).")
@click.option("--workspace-limit", type=int, default=None, help="Skip solvers needing more workspace bytes.")
@click.option("--solver", "solver_ids", multiple=True, help="Only these solver ids (repeatable).")
@click.option("--no-verify", is_flag=True, help="Skip verification against the float64 reference.")
@click.option("--with-naive", is_flag=True,
              help="Also time the naive reference solvers (default: $MIOFIND_WITH_NAIVE, else only where nothing else "
                   "applies; --solver runs what it names).")
@click.option("--explain", is_flag=True,
              help="Also list the solvers that do not apply, and why (on stderr when stdout is not a terminal; "
                   "in the JSON with --json).")
@click.option("--db", "db_url", default=None, help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the solutions as JSON.")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Also write the solutions as JSON here.")
@verbosity_options
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def find(mode, immediate, device_spec, sort_by, workspace_limit, solver_ids, no_verify, with_naive, explain, db_url,
         as_json, json_out, driver_args):
    """Find the solutions of a problem for each direction selected by -F, fastest first."""
    problems, _ = _parse(driver_args)
    if device_spec is not None:
        if mode is not None:
            _fail(f"--device answers in immediate mode; it does not take --mode {mode}")
        immediate = True
    if not immediate:
        try:
            mode = mode or env.find_mode()
        except ValueError as e:
            _fail(str(e))
        _log.debug("find mode %s", mode)
    if explain and not as_json:
        for p in problems:
            _print_applicability(p, err=not is_terminal())
    dev = _offline_device(device_spec) if device_spec is not None else _device()
    from .api import find_solutions, get_solutions
    from .db import FindDBError
    from .find import ContextBrokenError

    out, rows = [], []
    for p in problems:
        try:
            if immediate:
                res = get_solutions(p, workspace_limit=workspace_limit, solvers=list(solver_ids) or None, db=db_url,
                                    device=dev, with_naive=with_naive or None)
            else:
                # the table lists every solver: none is left to the background (the process would wait for it)
                res = find_solutions(p, mode=mode, sort_by=sort_by, workspace_limit=workspace_limit,
                                     solvers=list(solver_ids) or None, verify=not no_verify, db=db_url,
                                     with_naive=with_naive or None, defer=False)
        except (ValueError, FindDBError) as e:
            _fail(str(e))
        except ContextBrokenError as e:
            _broken_context(e)
        _log.info("%s %s: %d solution(s), source %s%s, %.1f ms", DIRECTION_NAMES[p.direction], p.key(), len(res),
                  res.source, f" ({res.db_layer} DB)" if res.db_layer else "", res.elapsed_ms)
        d = {"key": p.key(), "direction": p.direction, "source": res.source, "db_layer": res.db_layer,
             "basis": res.basis, "model_version": res.model_version, "mode": res.mode, "elapsed_ms": res.elapsed_ms,
             "timing": res.timing,
             "solutions": [_sol_json(s) for s in res], "failures": [vars(f) for f in res.failures]}
        if explain:
            d["applicability"] = _applicability_json(p)
        out.append(d)
        if as_json:
            continue
        if is_terminal():
            _print_find(p, res, dev)
        else:
            rows += _find_rows(p, res)
            _print_find_notes(res)
    if as_json:
        click.echo(json.dumps(out, indent=2))
    elif not is_terminal():
        tsv(FIND_COLUMNS, rows)
    if json_out:
        with open(json_out, "w") as fh:
            json.dump(out, fh, indent=2)


def _broken_context(e) -> None:
    """One line for a candidate that broke the CUDA context, then exit at once: the dead context's
    module unloads would otherwise print screens of tracebacks at interpreter exit."""
    import os

    click.echo(f"miofind: {e}", err=True)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(3)


def _sol_json(s):
    return {"solver_id": s.solver_id, "algorithm": s.algorithm, "time_ms": s.time_ms, "time_q20_ms": s.time_q20_ms,
            "time_q80_ms": s.time_q80_ms, "workspace_bytes": s.workspace_bytes, "config": s.config,
            "verified": s.verified, "max_error": s.max_error if s.max_error is None or math.isfinite(s.max_error) else None,
            "source": s.source, "cut": s.cut, "runs": s.runs}


def _tflops(p, s) -> float:
    return p.flops() / (s.time_ms * 1e-3) / 1e12 if s.time_ms > 0 else float("nan")


FIND_COLUMNS = ("direction", "key", "rank", "solver", "algorithm", "time_ms", "time_q20_ms", "time_q80_ms", "tflops",
                "workspace_bytes", "verified", "max_error", "config", "source")


def _find_rows(p, res) -> list[tuple]:
    return [(p.direction, p.key(), i, s.solver_id, s.algorithm, s.time_ms, s.time_q20_ms, s.time_q80_ms,
             round(_tflops(p, s), 3), s.workspace_bytes, int(bool(s.verified)), s.max_error,
             json.dumps(s.config, sort_keys=True, separators=(",", ":")) if s.config else "", s.source)
            for i, s in enumerate(res, 1)]


def _print_find(p, res, dev):
    t = Table(title=f"{DIRECTION_NAMES[p.direction]}  {p.key()}  on {dev.name or dev.db_name}", title_justify="left")
    for col in ("#", "solver", "algorithm", "time ms (q20-q80)", "TFLOP/s", "workspace", "verified (rel err)", "config"):
        t.add_column(col, justify="right" if col in ("#", "time ms (q20-q80)", "TFLOP/s", "workspace") else "left")
    for i, s in enumerate(res, 1):
        q = f" ({s.time_q20_ms:.4f}-{s.time_q80_ms:.4f})" if s.time_q20_ms is not None else ""
        ver = ("yes" if s.verified else "no") + (f" ({s.max_error:.1e})" if s.max_error is not None else "")
        cfg = ",".join(f"{k}={v}" for k, v in s.config.items()) if s.config else ""
        if s.cut:
            q += f" cut after {s.runs}"
        t.add_row(str(i), s.solver_id, s.algorithm, f"{s.time_ms:.4f}{q}", f"{_tflops(p, s):.2f}",
                  _fmt_bytes(s.workspace_bytes), ver, cfg)
    console.print(t)
    _print_find_notes(res)


def _print_find_notes(res):
    for f in res.failures:
        status(f"  [yellow]skipped[/] {escape(f.solver_id)} ({escape(f.stage)}): {escape(f.reason)}")
    if res.source == "db":
        status(f"  answered from the {res.db_layer} FindDB in {res.elapsed_ms:.1f} ms (no benchmarking)")
    elif res.source == "predicted":
        basis = f"model {res.model_version}" if res.basis == "model" else str(res.basis)
        status(f"  PREDICTED, not measured ({escape(basis)}), in {res.elapsed_ms:.1f} ms (no benchmarking)")
    else:
        status(f"  benchmarked {len(res)} solution(s) in {res.elapsed_ms / 1e3:.2f} s"
               + ("; stored in the FindDB" if res.stored else "; not stored"))
        tm = res.timing or {}
        if tm:
            cut = sum(1 for s in res if s.cut)
            status(f"  where the time went: compile {tm.get('compile_ms', 0.0):.1f} ms (wall), float64 reference "
                   f"{tm.get('reference_ms', 0.0):.1f} ms{' (shared)' if tm.get('reference_shared') else ''}, verify "
                   f"{tm.get('verify_ms', 0.0):.1f} ms, timing {tm.get('timing_ms', 0.0):.1f} ms"
                   + (f"; {cut} cut early (not stored)" if cut else ""))


def _applicability_json(p):
    from .registry import applicability_table

    return [{"solver_id": s.id, "applies": bool(a), "reason": "" if a else a.reason} for s, a in applicability_table(p)]


APPLICABILITY_COLUMNS = ("direction", "key", "solver", "applies", "reason")


def _print_applicability(p, err: bool = False):
    """The applicability table of ``p``: rich on a terminal, else TSV (on stderr with ``err``)."""
    rows = [(p.direction, p.key(), a["solver_id"], int(a["applies"]), a["reason"]) for a in _applicability_json(p)]
    if is_terminal():
        t = Table(title=f"{DIRECTION_NAMES[p.direction]}  {p.key()}", title_justify="left")
        t.add_column("solver")
        t.add_column("applies")
        t.add_column("why not")
        for _, _, sid, ok, why in rows:
            t.add_row(sid, "yes" if ok else "no", why)
        console.print(t)
    else:
        tsv(APPLICABILITY_COLUMNS, rows, err=err)


SOLVER_COLUMNS = ("number", "id", "family", "algorithm", "directions", "types", "tunable")


@driver_command(main)
@click.option("--json", "as_json", is_flag=True, help="Print the solvers (or, given a problem, their applicability) as JSON.")
@verbosity_options
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def solvers(as_json, driver_args):
    """List the registered solvers; given a problem, which apply and why the others do not. Needs no GPU."""
    from .registry import registry

    if driver_args:
        problems, _ = _parse(driver_args)
        if as_json:
            click.echo(json.dumps([{"key": p.key(), "direction": p.direction, "solvers": _applicability_json(p)}
                                   for p in problems], indent=2))
            return
        if is_terminal():
            for p in problems:
                _print_applicability(p)
        else:
            tsv(APPLICABILITY_COLUMNS, [(p.direction, p.key(), a["solver_id"], int(a["applies"]), a["reason"])
                                        for p in problems for a in _applicability_json(p)])
        return
    rows = []
    for r in registry():
        s = r.solver
        if s is None:
            rows.append({"number": r.number, "id": r.id, "retired": True, "family": None, "algorithm": None,
                         "directions": "", "types": [], "tunable": False})
        else:
            rows.append({"number": r.number, "id": s.id, "retired": False, "family": s.family, "algorithm": s.algorithm,
                         "directions": "".join(d for d in "FBW" if d in s.directions), "types": sorted(s.dtypes),
                         "tunable": bool(s.tunable)})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif is_terminal():
        t = Table(title="registered solvers", title_justify="left")
        for col in ("#", "id", "family", "algorithm", "directions", "types", "tunable"):
            t.add_column(col)
        for d in rows:
            t.add_row(str(d["number"]), d["id"], "(retired)" if d["retired"] else d["family"], d["algorithm"] or "",
                      d["directions"], ",".join(d["types"]), "yes" if d["tunable"] else "")
        console.print(t)
    else:
        tsv(SOLVER_COLUMNS, [(d["number"], d["id"], "retired" if d["retired"] else d["family"], d["algorithm"],
                              d["directions"], ",".join(d["types"]), int(d["tunable"])) for d in rows])


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


def _torch_model_problems(spec, input_size, channels_last, tf32, batches, dtypes, directions):
    """The problems of ``--torch-model`` (miofind.torch.problems) for each batch and dtype."""
    try:
        import torch
        from .torch.problems import model_problems
    except ImportError as e:
        _fail(f"--torch-model needs PyTorch ({e}): pip install \"miofind[torch]\"")
    size = input_size or ("299" if spec.rsplit(".", 1)[-1].startswith("inception") else "224")
    try:
        spatial = tuple(int(v) for v in str(size).lower().split("x"))
        if len(spatial) not in (1, 2, 3) or min(spatial) < 1:
            raise ValueError
    except ValueError:
        _fail(f"--input-size={size}: expected H, HxW or DxHxW of positive integers")
    if len(spatial) == 1:
        spatial *= 2
    if tf32 is None:
        tf32 = torch.backends.cudnn.allow_tf32
    out = []
    for b in batches or (32,):
        for dt in dtypes or ("fp32",):
            try:
                found = model_problems(spec, (b, 3, *spatial), dtype=dt, channels_last=channels_last, tf32=tf32)
            except ValueError as e:
                _fail(str(e))
            except Exception as e:   # the model's own code on the meta device
                _fail(f"--torch-model={spec}: the forward/backward pass on the meta device failed: "
                      f"{e.__class__.__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            out += [p for p in found if p.direction in directions]
    return out


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


@driver_command(main)
@click.option("--model", default=None, help="A preset network: resnet50, resnet101, vgg16, mobilenet_v2, inception_v3, unet.")
@click.option("--torch-model", default=None,
              help="A PyTorch model by dotted name (e.g. torchvision.models.resnet50, called with no arguments): "
                   "its convolutions from a forward and backward pass on the meta device (needs torch).")
@click.option("--input-size", default=None,
              help="--torch-model's input spatial size: H (square), HxW or DxHxW (default 224; 299 for inception_v3).")
@click.option("--channels-last", is_flag=True, help="--torch-model in channels_last (NHWC problems).")
@click.option("--tf32/--no-tf32", default=None,
              help="FP32 problems with TF32 math: --torch-model's default is torch.backends.cudnn.allow_tf32 (on in "
                   "PyTorch), --model's is off (--tf32: the preset's FP32 problems as PyTorch runs them by default).")
@click.option("--batch", "batches", type=int, multiple=True, help="Batch size(s) for --model/--torch-model (repeatable; default 32).")
@click.option("--dtype", "dtypes", multiple=True, help="fp32, fp16, bf16 for --model/--torch-model (repeatable; default fp32).")
@click.option("--layout", "layouts", multiple=True, help="NCHW, NHWC for --model (repeatable; default NCHW).")
@click.option("--direction", "direction", multiple=True, help="F, B, W (repeatable; default all, or as -F).")
@click.option("-F", "--forw", type=int, default=None, help="MIOpenDriver's direction mask: 1 F, 2 B, 4 W, 0 all.")
@click.option("--file", "file_", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A file of MIOpenDriver lines, one problem spec per line (# comments allowed).")
@click.option("--strategy", type=click.Choice(["guided", "random", "exhaustive", "model", "model_guided"]), default="guided", show_default=True,
              help="How configs are chosen: guided (neighbours of the best so far, random restarts), random, "
                   "exhaustive (every config in order), model (the order a config-aware cost model predicts, "
                   "fastest first: `miofind db train-model --configs`; guided where none answers), or model_guided "
                   "(the model's first picks, then guided's descent, restarted in the model's order).")
@click.option("--max-configs", type=int, default=16, show_default=True,
              help="At most this many configs per solver and problem. Without --max-configs and --patience, a solver "
                   "may search more (its tune_budget: ConvImplicitGemmHopperWrw 400 configs, patience 48).")
@click.option("--max-seconds", type=float, default=None, help="At most this long per solver and problem.")
@click.option("--patience", type=int, default=8, show_default=True, help="Stop a search after this many configs without improvement.")
@click.option("--tune-solver", "tune_solvers", multiple=True, help="Tune only these solver ids (repeatable; find still runs all).")
@click.option("--where", default=None,
              help="Search only configs with these values, KEY=V[|V...][,KEY=...] (e.g. WGS=3 after a new tile "
                   "shape; with --tune-solver): the find's and the stored configs are still measured first.")
@click.option("--no-precompile", is_flag=True, help="Do not compile ahead in a process pool.")
@click.option("--retune", is_flag=True, help="Tune again even where the DBs already hold a trusted result "
              "(also set by $MIOPEN_FIND_ENFORCE=DB_UPDATE or SEARCH_DB_UPDATE).")
@click.option("--no-tune", is_flag=True, help="Only find (default configs or stored tuned ones), no config search.")
@click.option("--devices", default=None, help="Local GPUs to use, one worker process each: 'all' or 0,1,...")
@click.option("--enqueue", is_flag=True, help="Only queue the problems as jobs in --db for `miofind worker`s.")
@click.option("--db", "db_url", default=None, help=DB_HELP)
@click.option("--json-out", type=click.Path(dir_okay=False), default=None,
              help="Write every problem's outcome here, with each solver's search in order (trace: seconds, ms, "
                   "config) and its budget's stop questions (checks), from which bench/tune_budget.py tells what a "
                   "tighter budget would have kept.")
@verbosity_options
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def tune(torch_model, input_size, channels_last, tf32, model, batches, dtypes, layouts, direction, forw, file_, strategy,
         max_configs, max_seconds, patience, tune_solvers, where, no_precompile, retune, no_tune, devices, enqueue,
         db_url, json_out, driver_args):
    """Tune many problems into the FindDB and PerfDB: each tunable solver's config space is searched,
    then the problem is found with the tuned configs. Resumable: finished problems are skipped."""
    from .tuning import TuneOptions
    from .tuning.tuner import parse_where

    problems: list[ProblemDescription] = []
    if model:
        from .models import model_problems
        try:
            for b in batches or (32,):
                problems += model_problems(model, batch=b, dtypes=tuple(d.upper() for d in dtypes) or ("FP32",),
                                           layouts=tuple(x.upper() for x in layouts) or ("NCHW",),
                                           directions=_directions(direction, forw), tf32=bool(tf32))
        except ValueError as e:
            _fail(str(e))
    if torch_model:
        if model:
            _fail("--model and --torch-model: give one")
        if layouts:
            _fail("--layout is for --model; with --torch-model use --channels-last")
        problems += _torch_model_problems(torch_model, input_size, channels_last, tf32, batches, dtypes,
                                          _directions(direction, forw))
    elif input_size or channels_last:
        _fail("--input-size and --channels-last select problems of a --torch-model")
    elif tf32 is not None and not model:
        _fail("--tf32/--no-tf32 select problems of a --model or --torch-model")
    if not (model or torch_model) and (batches or dtypes or layouts):
        _fail("--batch, --dtype and --layout select problems of a --model")
    if file_:
        problems += _read_driver_file(file_)
    if driver_args:
        problems += _parse(driver_args)[0]
    problems = list({p.key(): p for p in problems}.values())
    if not problems:
        _fail("nothing to tune: give --model NAME, --file lines.txt or MIOpenDriver arguments")
    try:
        enforce = env.find_enforce()
        if enforce.retune and not retune:
            _log.info("MIOPEN_FIND_ENFORCE=%s: re-tuning problems already tuned", enforce.action.upper())
        ctx = click.get_current_context()
        given = any(ctx.get_parameter_source(n) not in (click.core.ParameterSource.DEFAULT, None)
                    for n in ("max_configs", "patience"))
        opts = TuneOptions(strategy=strategy, max_configs=max_configs, max_seconds=max_seconds, patience=patience,
                           retune=retune or enforce.retune, solvers=tuple(tune_solvers) or None, precompile=not no_precompile,
                           where=parse_where(where) if where else None, solver_budgets=not given)
    except ValueError as e:
        _fail(str(e))
    if no_tune:
        opts = TuneOptions(**{**opts.as_json(), "solvers": ()})
    if enqueue:
        from .db import FindDBError
        from .db.jobs import JobQueue
        from .cli_db import open_writable

        try:
            n = JobQueue(open_writable(db_url)).enqueue([p.key() for p in problems], opts.as_json())
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
@verbosity_options
def worker(db_url, devices, lease, idle_exit, max_jobs):
    """Claim tuning jobs queued by `miofind tune --enqueue` from the shared FindDB and run them."""
    devs = _devices(devices)
    _device()
    from .db import FindDBError
    from .tuning.run import worker_loop, worker_name

    if devs and len(devs) > 1:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=_worker_process,
                             args=(d, db_url, lease, idle_exit, max_jobs, logging.getLogger("miofind").level)) for d in devs]
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


def _worker_process(device, db_url, lease, idle_exit, max_jobs, log_level):
    import os

    from .log import configure
    configure(level=log_level)
    os.environ["CUDA_VISIBLE_DEVICES"] = str(device)
    from .tuning.run import worker_loop, worker_name
    worker_loop(db_url, name=worker_name(device), lease_s=lease, idle_exit=idle_exit, max_jobs=max_jobs)
    _finish_background()


@driver_command(main, run_flags=True)
@click.option("--db", "db_url", default=None, help=DB_HELP)
@verbosity_options
@click.argument("driver_args", nargs=-1, type=click.UNPROCESSED)
def run(db_url, driver_args):
    """Run one solution per direction like MIOpenDriver: -S id|name forces a solver, -S -1 finds,
    -S 0 takes the best known; -V 1 verifies against the float64 reference; -t 1 -i N times (the
    flags are listed below)."""
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


@main.command()
@click.option("--arch", "archs", default="sm_80,sm_90,sm_100", show_default=True,
              help="Target architectures, comma-separated (those this NVRTC cannot target are skipped).")
@click.option("--jobs", type=int, default=None, help="Compiler processes (default: the CPU count, at most 32).")
@click.option("--model", "models", multiple=True,
              help="Only the builds these presets reach (repeatable; default all: resnet50, resnet101, vgg16, "
                   "mobilenet_v2, inception_v3, unet).")
@click.option("--device/--no-device", "on_device", default=True, show_default=True,
              help="Where a GPU is usable, also run a find's own GPU steps on tiny problems, so that CuPy's "
                   "kernels for them are compiled into CuPy's cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@verbosity_options
def warmup(archs, jobs, models, on_device, as_json):
    """Compile the generic kernel builds and the float64 reference into the kernel cache (once, at
    install time; no GPU needed), so that a find of an unseen shape compiles nothing before it runs."""
    from .models import canonical_model
    from .warmup import warmup as run_warmup, warmup_kernels

    if jobs is not None and jobs < 1:
        _fail(f"--jobs={jobs}: expected a positive integer")
    try:
        kernels = warmup_kernels(tuple(canonical_model(m) for m in models)) if models else None
        summary = run_warmup(tuple(a.strip() for a in archs.split(",") if a.strip()), jobs, kernels)
        if on_device and not summary["errors"]:
            from .warmup import warm_device
            summary["device"] = warm_device()
        from .warmup import warm_torch_cpp, write_stamp
        summary["torch_cpp"] = warm_torch_cpp()
        if not summary["errors"]:
            write_stamp(summary)
    except ValueError as e:
        _fail(str(e))
    except ImportError as e:
        _fail(f"warmup needs CuPy's NVRTC (pip install \".[cuda13]\"): {e}")
    if as_json:
        print(json.dumps(summary, indent=1))
    else:
        built = ", ".join(f"{a}: {n} compiled" for a, n in summary["archs"].items()) or "no architecture"
        console.print(f"warmup: {summary['kernels']} kernel build(s); {built} (the rest were cached) "
                      f"in {summary['seconds']} s")
        if summary["skipped_archs"]:
            console.print(f"  not supported by this NVRTC: {', '.join(summary['skipped_archs'])}")
        dev = summary.get("device")
        if dev is not None:
            console.print(f"  CuPy kernels of a find's steps: {dev['problems']} tiny problems in {dev['seconds']} s"
                          if "skipped" not in dev else f"  CuPy kernels of a find's steps: skipped (no usable GPU: "
                                                      f"{escape(dev['skipped'])})")
        tc = summary["torch_cpp"]
        console.print(f"  miofind.torch C++ hot path: built in {tc['seconds']} s ({escape(tc['built'])})" if "built" in tc
                      else f"  miofind.torch C++ hot path: {'skipped' if 'skipped' in tc else '[red]failed[/red]'} "
                           f"({escape(tc.get('skipped') or tc.get('failed', ''))})")
        for k, v in summary["errors"].items():
            console.print(f"  [red]failed[/red] {escape(k)}: {escape(v.splitlines()[0] if v else '')}")
    if summary["errors"]:
        sys.exit(1)


from .cli_db import db  # noqa: E402  (the `miofind db ...` commands)

main.add_command(db)

from .report import report_command  # noqa: E402  (`miofind report`)

main.add_command(report_command)


if __name__ == "__main__":  # pragma: no cover
    main()
