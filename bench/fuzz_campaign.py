"""Hypothesis campaign of issue 15: hostile problem specs, FindDB keys and MIOpenDriver lines.

Generates inputs with hypothesis (valid ones from tests/core/strategies.py, then hostile: huge,
negative and zero integers, unicode digits, NUL, quotes, very long strings, mutated real MIOpen keys)
and feeds them to ``ProblemDescription.from_key``, ``driver_args.problems_from_driver_args``,
``ProblemDescription.make``, ``ProblemDescription.from_arrays`` and the CLI's ``miofind solvers``.
Every problem accepted goes to every solver of ``miofind.registry.solvers()``: its applicability,
and where it applies its workspace and solution (kernels whose grid and block fit CUDA's limits).

Records every exception other than ValueError (click usage errors and ``miofind:`` one-line exits on
the CLI), every error message that is not one line or is Python's own wording (no field named), every
accepted key that does not write back as given, and every call over 1 s. Writes ``summary.json`` and
``summary.md`` to --out; exits 1 when any of those lists is not empty.

    python bench/fuzz_campaign.py --out bench/results/fuzz-campaign
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import traceback
import types
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "core"))

import strategies as S  # noqa: E402  (tests/core/strategies.py)

from miofind.device import NoGPUError, current_device  # noqa: E402
from miofind.driver_args import FLAGS, problems_from_driver_args  # noqa: E402
from miofind.problem import ProblemDescription  # noqa: E402
from miofind.registry import solvers  # noqa: E402

SLOW_S = 1.0
SOLVERS = solvers()


def _have_gpu() -> bool:
    try:
        current_device()
        return True
    except NoGPUError:
        return False


HAVE_GPU = _have_gpu()
# CUDA's launch limits (grid x 2^31-1, grid y/z 65535, 1024 threads a block)
GRID_MAX = (2**31 - 1, 65535, 65535)
BLOCK_MAX = 1024
# Python's and the C library's own wording: a message with one of these names no field
INTERNAL = re.compile(r"invalid literal for int|Exceeds the limit|No closing quotation|No escaped character|"
                      r"embedded null|unhashable type|object is not iterable|has no attribute|"
                      r"not supported between instances|can't multiply|unsupported operand")

# -- hostile values ------------------------------------------------------------------------------

HUGE = [2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64, 10**19, 10**30, 10**300,
        10**4299, 10**4300 + 7, 10**5000]
HUGE_TEXT = ["2147483647", "2147483648", "4294967296", "9223372036854775807", "9223372036854775808",
             "18446744073709551616", "9" * 19, "9" * 20, "1" + "0" * 30, "9" * 4300, "9" * 5000,
             "-" + "9" * 5000, "0" * 40 + "3"]
HOSTILE_TEXT = ["", " ", "\0", "3\0", "'", '"', "\\", "'3", '"3', "3'", "３", "٣", "−3", "3.0", "1e3", "0x10",
                "inf", "nan", "None", "+3", "03", " 3 ", "3\n", "\n", "\t", "NCHW", "NCWH", "NCHWc", "ＮＣＨＷ",
                "\u202e", "😀", "%00", "$(true)", "--", "-", "=", "x" * 100_000, "-" * 3000, "_" * 3000,
                "é" * 40]

small_ints = st.integers(-4, 70)
hostile_ints = st.one_of(small_ints, small_ints, st.sampled_from(HUGE + [-v for v in HUGE]),
                         st.integers(-2**70, 2**70), st.integers(1, 2**63 - 1))
hostile_text = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=12),
                         st.text(alphabet="0123456789x-_NCDHWcFBWgit", max_size=40))
# what a command-line or key field may hold: decimal text (never str() of a 5000-digit int: Python refuses)
num_text = st.one_of(small_ints.map(str), small_ints.map(str), st.sampled_from(HUGE_TEXT), hostile_text,
                     st.integers(-2**70, 2**70).map(str))
hostile_values = st.one_of(
    hostile_ints, hostile_text, st.none(), st.booleans(), st.floats(allow_nan=True),
    st.lists(hostile_ints, max_size=4), st.tuples(hostile_ints, hostile_ints),
    st.tuples(hostile_ints, hostile_ints, hostile_ints), st.lists(hostile_text, max_size=3),
    st.sampled_from([np.int64(7), np.int32(-1), np.uint64(2**64 - 1), np.float32(3.0), np.int8(0),
                     {"a": 1}, ["NCHW"], ("NCHW",), object(), b"NCHW", 3 + 0j, (), ((3, 3),)]),
)

# -- keys ----------------------------------------------------------------------------------------

FIXTURE = [ln.split("\t")[0] for ln in (REPO / "tests/core/miopen_fdb_keys.txt").read_text().splitlines()
           if ln and not ln.startswith("#")]
LAYOUT_TOKENS = ["NCHW", "NHWC", "CHWN", "NCHWc", "CHWNc", "NCDHW", "NDHWC", "NCWH", "NWHC", "HWNC", "nchw",
                 "NCHWC", "NCHWcc", "NC", "NCDHWc"]
DTYPE_TOKENS = ["FP32", "FP16", "BF16", "INT8", "INT8INT8INT32", "INT8x4", "FP8", "FP32FP32FP32", "FP99", "fp32"]
SUFFIXES = ["_g2", "_g1", "_g0", "_g" + "9" * 30, "_ciFP16", "_trans", "_tf32", "_x", "_", "_g2_g2", "_tf32_g2"]


@st.composite
def structured_keys(draw):
    """A key assembled field by field, each field valid or hostile."""
    nd = draw(st.sampled_from((2, 3)))

    def num():
        return draw(st.one_of(st.integers(1, 64).map(str), st.integers(1, 64).map(str), num_text))

    def tup():
        return "x".join(num() for _ in range(draw(st.sampled_from((nd, nd, nd - 1, 1)))))

    lay = draw(st.lists(st.sampled_from(LAYOUT_TOKENS), min_size=1, max_size=3).map(
        lambda t: t if len(t) != 2 else t[:1]))
    fields = [num(), *(num() for _ in range(nd)), tup(), num(), *(num() for _ in range(nd)), num(), tup(), tup(),
              tup(), draw(st.sampled_from(["0", "1", "2", "-1"])), *lay, draw(st.sampled_from(DTYPE_TOKENS)),
              draw(st.sampled_from(["F", "B", "W", "f", "X", ""]))]
    return "-".join(fields) + "".join(draw(st.lists(st.sampled_from(SUFFIXES), max_size=2)))


@st.composite
def mutated(draw, base):
    """``base`` with one to three edits: a field replaced by hostile text, text inserted, a slice cut."""
    s = draw(base)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(("field", "insert", "cut", "append")))
        if op == "field":
            parts = s.split("-")
            parts[draw(st.integers(0, len(parts) - 1))] = draw(num_text)
            s = "-".join(parts)
        elif op == "insert":
            i = draw(st.integers(0, len(s)))
            s = s[:i] + draw(hostile_text) + s[i:]
        elif op == "cut" and s:
            i = draw(st.integers(0, len(s) - 1))
            s = s[:i] + s[i + draw(st.integers(1, 8)):]
        else:
            s += draw(st.sampled_from(SUFFIXES + [" ", "\n", "-", "x"]))
    return s


fixture_keys = st.sampled_from(FIXTURE)
keys = st.one_of(S.keys, fixture_keys, mutated(st.one_of(S.keys, fixture_keys)), structured_keys(),
                 st.text(max_size=80), st.sampled_from(HOSTILE_TEXT))

# -- MIOpenDriver lines --------------------------------------------------------------------------

LONG_FLAGS = sorted(FLAGS)
SHORT_FLAGS = sorted(v[0] for v in FLAGS.values() if v[0])


@st.composite
def driver_lines(draw):
    """A driver argv (valid, then mutated), as a list or as one string (joined with or without quoting)."""
    kind = draw(st.sampled_from(("valid", "mutated", "mutated", "soup")))
    if kind == "soup":
        args = [draw(st.sampled_from(["conv", "convfp16", "MIOpenDriver", "convx", ""]))]
        for _ in range(draw(st.integers(0, 12))):
            flag = draw(st.one_of(st.sampled_from(LONG_FLAGS).map(lambda f: "--" + f),
                                  st.sampled_from(SHORT_FLAGS).map(lambda f: "-" + f), hostile_text))
            args += [flag, draw(num_text)]
    else:
        args = S.driver_argv(draw(S.driver_problems()), long=draw(st.booleans()))
        if kind == "mutated":
            for _ in range(draw(st.integers(1, 4))):
                op = draw(st.sampled_from(("value", "value", "value", "insert", "drop", "eq")))
                i = draw(st.integers(1, len(args) - 1)) if len(args) > 1 else 0
                if op == "value" and i:
                    args[i] = draw(num_text)
                elif op == "insert":
                    flag = draw(st.one_of(st.sampled_from(LONG_FLAGS).map(lambda f: "--" + f),
                                          st.sampled_from(SHORT_FLAGS).map(lambda f: "-" + f)))
                    args[i:i] = [flag, draw(num_text)]
                elif op == "drop" and i:
                    del args[i]
                elif op == "eq" and i < len(args) - 1 and args[i].startswith("--"):
                    args[i:i + 2] = [args[i] + "=" + args[i + 1]]
    form = draw(st.sampled_from(("list", "join", "quoted")))
    if form == "list":
        return args
    if form == "join":
        return " ".join(args)
    import shlex

    return shlex.join(args)


# -- specs for make and from_arrays ----------------------------------------------------------------

MAKE_BASE = dict(direction="F", n=2, c=4, k=4, in_size=(8, 8), filter_size=3, pads=1, strides=1, dilations=1,
                 groups=1, layout=None, w_layout=None, out_layout=None, dtype="FP32", math="strict",
                 transposed=False, output_padding=0, bias=0)
MAKE_VALUES = {
    "direction": st.one_of(st.sampled_from("FBWfbw"), hostile_values),
    "layout": st.one_of(st.sampled_from(LAYOUT_TOKENS), hostile_values),
    "w_layout": st.one_of(st.sampled_from(LAYOUT_TOKENS), hostile_values),
    "out_layout": st.one_of(st.sampled_from(LAYOUT_TOKENS), hostile_values),
    "dtype": st.one_of(st.sampled_from(["FP16", "BF16", "float16", "INT8", "FP64", np.float32, "half"]),
                       hostile_values),
    "math": st.one_of(st.sampled_from(["tf32", "strict"]), hostile_values),
    "in_size": st.one_of(st.lists(hostile_ints, min_size=0, max_size=4), hostile_values),
}


@st.composite
def make_specs(draw):
    """make()'s keywords: the base with one to four replaced by hostile values."""
    spec = dict(MAKE_BASE)
    for name in draw(st.lists(st.sampled_from(sorted(MAKE_BASE)), min_size=1, max_size=4, unique=True)):
        spec[name] = draw(MAKE_VALUES.get(name, st.one_of(hostile_ints, hostile_values)))
    return spec


def log_ints(lo: int, hi: int):
    """Integers in [lo, hi], log-uniformly: as many near 2^62 as near 1."""
    return st.integers(max(1, lo).bit_length() - 1, hi.bit_length() - 1).flatmap(
        lambda b: st.integers(max(lo, 1 << b), min(hi, (2 << b) - 1)))


@st.composite
def big_specs(draw):
    """Valid-looking problems of every size up to 2^62 per field: what solvers must reject in bounded
    time (or accept with a solution whose sizes and launch fit)."""
    nd = draw(st.sampled_from((2, 2, 3)))
    top = draw(st.sampled_from((64, 4096, 2**31, 2**62)))
    groups = draw(st.sampled_from((1, 1, 2, 3, 4, 32)))
    filt = [draw(log_ints(1, min(top, 2**20))) for _ in range(nd)]
    dil = [draw(st.sampled_from((1, 1, 2))) for _ in range(nd)]
    pads = [draw(st.one_of(st.integers(0, 3), log_ints(0, top))) for _ in range(nd)]
    ins = [max(1, (f - 1) * d + 1 - 2 * p) + draw(log_ints(0, top)) for f, d, p in zip(filt, dil, pads)]
    return dict(direction=draw(S.directions), n=draw(log_ints(1, top)), c=groups * draw(log_ints(1, top)),
                k=groups * draw(log_ints(1, top)), in_size=ins, filter_size=filt, pads=pads,
                strides=[draw(st.sampled_from((1, 1, 2, 3))) for _ in range(nd)], dilations=dil, groups=groups,
                layout=draw(st.sampled_from((None, "NHWC" if nd == 2 else "NDHWC"))),
                dtype=draw(st.sampled_from(("FP32", "FP16", "BF16"))), transposed=draw(st.booleans()))


@st.composite
def array_specs(draw):
    """from_arrays(x, w, **kw) with fake arrays (shape and dtype only) and hostile keywords."""
    def shape():
        return draw(st.one_of(st.lists(st.one_of(st.integers(1, 16), hostile_ints), min_size=3, max_size=5),
                              hostile_values))

    def arr():
        return types.SimpleNamespace(shape=shape(), dtype=draw(st.sampled_from(["float32", "float16", "int8", "x"])))

    kw = {}
    for name in draw(st.lists(st.sampled_from(["stride", "padding", "dilation", "groups", "direction", "layout",
                                               "math", "transposed", "output_padding"]), max_size=3, unique=True)):
        kw[name] = draw(hostile_values)
    if draw(st.booleans()):  # shapes that describe a real convolution
        n, c, k, h = (draw(st.integers(1, 8)) for _ in range(4))
        return types.SimpleNamespace(shape=(n, c, h + 2, h + 2), dtype="float32"), \
            types.SimpleNamespace(shape=(k, c, 3, 3), dtype="float32"), kw
    return arr(), arr(), kw


# -- the campaign ---------------------------------------------------------------------------------

def _short(v, n: int = 160) -> str:
    from miofind.problem import show

    return show(v, n)


class Campaign:
    def __init__(self):
        self.preloaded: list[str] = []     # ``preload``'s imports, made before the timed calls
        self.examples = Counter()
        self.accepted = Counter()
        self.rejected = Counter()
        self.calls = Counter()
        self.max_s = defaultdict(float)
        self.max_at: dict[str, str] = {}
        self.unexpected: dict[tuple, dict] = {}
        self.bad_messages: list[dict] = []
        self.slow: list[dict] = []
        self.applicable = Counter()
        self.needs_gpu = Counter()     # cuDNN solutions asked on a host without a GPU: NoGPUError, as they should
        self.reasons: dict[str, Counter] = defaultdict(Counter)
        self.problems_checked = 0

    # one timed call; ``allowed`` exceptions are rejections, anything else is recorded
    def call(self, kind: str, what, fn, *args, allowed=(ValueError,), **kw):
        # timed with the garbage collector off (it runs between examples): its pauses, which grow with the
        # heap of a long campaign, are not the call's own time
        gc.disable()
        t0 = time.perf_counter()
        ok, out = False, None
        try:
            out, ok = fn(*args, **kw), True
        except allowed as e:
            out = e
        except Exception as e:
            self._unexpected(kind, what, e)
        dt = time.perf_counter() - t0
        gc.enable()
        if not ok and isinstance(out, allowed):
            self._check_message(kind, what, out)
        self.calls[kind] += 1
        dt = self._timed(kind, what, dt)
        if dt > self.max_s[kind]:
            self.max_s[kind], self.max_at[kind] = dt, _short(what, 200)
        return ok, out

    def _timed(self, kind, what, dt) -> float:
        if dt > SLOW_S:
            self.slow.append({"kind": kind, "input": _short(what, 300), "seconds": round(dt, 3)})
        return dt

    def _unexpected(self, kind, what, e):
        tb = traceback.extract_tb(e.__traceback__)
        frame = next((f for f in reversed(tb) if "/miofind/" in f.filename or "/solvers/" in f.filename), tb[-1])
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        key = (kind, type(e).__name__, where)
        rec = self.unexpected.setdefault(key, {"kind": kind, "exception": type(e).__name__, "where": where,
                                               "count": 0, "examples": []})
        rec["count"] += 1
        if len(rec["examples"]) < 3:
            rec["examples"].append({"input": _short(what, 300), "message": _short(str(e), 300)})

    def _check_message(self, kind, what, e):
        msg = str(e)
        why = None
        if "\n" in msg or not msg.strip():
            why = "not one line"
        elif len(msg) > 2000:
            why = f"{len(msg)} characters"
        elif INTERNAL.search(msg):
            why = "Python's own wording, no field named"
        if why and len(self.bad_messages) < 50:
            self.bad_messages.append({"kind": kind, "why": why, "input": _short(what, 300), "message": _short(msg, 300)})
        elif why:
            self.bad_messages.append({"kind": kind, "why": why})

    def fail(self, kind, what, why):
        """A property that does not hold (no exception): recorded like an unexpected exception."""
        key = (kind, "PropertyFailure", why)
        rec = self.unexpected.setdefault(key, {"kind": kind, "exception": "PropertyFailure", "where": why,
                                               "count": 0, "examples": []})
        rec["count"] += 1
        if len(rec["examples"]) < 3:
            rec["examples"].append({"input": _short(what, 300)})

    # every solver on an accepted problem
    def check_problem(self, p: ProblemDescription):
        self.problems_checked += 1
        ok, k = self.call("problem.key", p, p.key, allowed=())
        if ok:
            ok2, q = self.call("problem.from_key(key)", k, ProblemDescription.from_key, k, allowed=())
            if ok2 and q.key() != k:
                self.fail("problem.from_key(key)", k, "key() of the parsed key differs")
        self.call("problem.network_config", p, p.network_config, allowed=())
        self.call("problem.flops", p, p.flops, allowed=())
        for s in SOLVERS:
            ok, a = self.call(f"applicability[{s.id}]", p, s.applicability, p, allowed=())
            if not ok:
                continue
            if not a:
                self.reasons[s.id][" ".join(a.reason.split(" ")[:4])] += 1
                continue
            self.applicable[s.id] += 1
            ok, ws = self.call(f"workspace_bytes[{s.id}]", p, s.workspace_bytes, p, allowed=())
            if ok and (not isinstance(ws, int) or not 0 <= ws < 2**63):
                self.fail(f"workspace_bytes[{s.id}]", p, "workspace is not an integer in [0, 2^63)")
            # a cuDNN solution is the plans cuDNN builds on the current device: without a GPU, NoGPUError (one line)
            ok, sol = self.call(f"get_solution[{s.id}]", p, s.get_solution, p,
                                allowed=(NoGPUError,) if s.family == "cudnn" and not HAVE_GPU else ())
            if not ok and isinstance(sol, NoGPUError):
                self.needs_gpu[s.id] += 1
            if ok:
                for ki in sol.kernels:
                    if any(not 1 <= g <= m for g, m in zip(ki.grid, GRID_MAX)) or \
                            math.prod(ki.block) > BLOCK_MAX or min(ki.block) < 1:
                        self.fail(f"get_solution[{s.id}]", p, f"kernel {ki.name} launch grid {ki.grid} block "
                                                               f"{ki.block} outside CUDA's limits")
                if not 0 <= sol.workspace_bytes < 2**63:
                    self.fail(f"get_solution[{s.id}]", p, "solution workspace outside [0, 2^63)")

    # targets
    def key(self, k):
        self.examples["from_key"] += 1
        ok, p = self.call("from_key", k, ProblemDescription.from_key, k)
        if not ok:
            self.rejected["from_key"] += 1
            return
        self.accepted["from_key"] += 1
        if p.key() != k.strip() or ProblemDescription.from_key(p.key()) != p:
            self.fail("from_key", k, "accepted key does not write back as given")
        self.check_problem(p)

    def driver(self, argv):
        self.examples["driver_args"] += 1
        ok, ps = self.call("driver_args", argv, problems_from_driver_args, argv)
        if not ok:
            self.rejected["driver_args"] += 1
            return
        self.accepted["driver_args"] += 1
        for p in ps:
            self.check_problem(p)

    def make(self, spec, target="make"):
        self.examples[target] += 1
        ok, p = self.call(target, spec, lambda: ProblemDescription.make(**spec))
        if not ok:
            self.rejected[target] += 1
            return
        self.accepted[target] += 1
        self.check_problem(p)

    def arrays(self, spec):
        x, w, kw = spec
        self.examples["from_arrays"] += 1
        ok, p = self.call("from_arrays", (x.shape, w.shape, kw), lambda: ProblemDescription.from_arrays(x, w, **kw))
        if not ok:
            self.rejected["from_arrays"] += 1
            return
        self.accepted["from_arrays"] += 1
        self.check_problem(p)

    def cli(self, argv, runner, main):
        """``miofind solvers --json <argv>``: exit 0, or a one-line ``miofind:`` error, or click usage (2)."""
        self.examples["cli_solvers"] += 1
        args = argv if isinstance(argv, list) else argv.split(" ")
        gc.disable()
        t0 = time.perf_counter()
        r = runner.invoke(main, ["solvers", "--json", *args])
        dt = time.perf_counter() - t0
        gc.enable()
        self.calls["cli_solvers"] += 1
        dt = self._timed("cli_solvers", args, dt)
        if dt > self.max_s["cli_solvers"]:
            self.max_s["cli_solvers"], self.max_at["cli_solvers"] = dt, _short(args, 200)
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            self._unexpected("cli_solvers", args, r.exception)
            return
        if r.exit_code == 0:
            self.accepted["cli_solvers"] += 1
            return
        self.rejected["cli_solvers"] += 1
        err = r.stderr.strip()
        if r.exit_code == 1:
            if err.count("\n") or not err.startswith("miofind: "):
                self.bad_messages.append({"kind": "cli_solvers", "why": "exit 1 without one miofind: line",
                                          "input": _short(args, 300), "message": _short(err, 300)})
            elif INTERNAL.search(err):
                self.bad_messages.append({"kind": "cli_solvers", "why": "Python's own wording, no field named",
                                          "input": _short(args, 300), "message": _short(err, 300)})
        elif r.exit_code != 2:  # 2: click's usage error
            self.fail("cli_solvers", args, f"exit code {r.exit_code}")


# Libraries the solvers import on their first call (CuPy through cudnn_base._device_id, the cuDNN frontend): a process
# pays that once, not per call. Imported before the timed calls, else the first such call carries it (1.15-1.68 s on
# a cold page cache on the 2-core CPU machine, session nov28g, where its later calls took 0.1 ms).
PRELOAD = ("cupy", "cudnn")


def preload() -> list[str]:
    """Import ``PRELOAD``; the names that imported (a host without them skips them)."""
    import importlib

    done = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
            done.append(name)
        except Exception:       # noqa: BLE001  not installed, or no CUDA: the solvers meet it themselves
            pass
    return done


def run(counts: dict[str, int], seed_label: str) -> tuple[Campaign, float]:
    c = Campaign()
    c.preloaded = preload()

    def conf(n):
        return settings(max_examples=n, database=None, deadline=None, derandomize=True,
                        phases=[Phase.generate], suppress_health_check=list(HealthCheck))

    from click.testing import CliRunner

    from miofind.cli import main

    runner = CliRunner()
    targets = {
        "from_key": (keys, c.key),
        "driver_args": (driver_lines(), c.driver),
        "make": (make_specs(), c.make),
        "make_big": (big_specs(), lambda s: c.make(s, "make_big")),
        "from_arrays": (array_specs(), c.arrays),
        "cli_solvers": (driver_lines(), lambda a: c.cli(a, runner, main)),
    }
    t0 = time.perf_counter()
    for name, n in counts.items():
        strat, fn = targets[name]
        t = time.perf_counter()

        def make_test(fn):
            def test(x):
                fn(x)
            return test

        given(strat)(conf(n)(make_test(fn)))()
        print(f"{name}: {c.examples[name]} examples in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    return c, time.perf_counter() - t0


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""


def write(c: Campaign, wall: float, counts, out: Path, command: str) -> dict:
    import hypothesis

    out.mkdir(parents=True, exist_ok=True)
    total = sum(c.examples.values())
    unexpected = sorted(c.unexpected.values(), key=lambda r: -r["count"])
    summary = {
        "command": command,
        "commit": _git("rev-parse", "--short", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "python": platform.python_version(), "hypothesis": hypothesis.__version__,
        "machine": f"{platform.machine()} {os.cpu_count()} cores (one used)",
        "wall_seconds": round(wall, 1),
        "examples_total": total,
        "examples_requested": counts,
        "examples": dict(c.examples), "accepted": dict(c.accepted), "rejected_with_one_line_error": dict(c.rejected),
        "problems_checked": c.problems_checked,
        "solver_calls": {k: v for k, v in sorted(c.calls.items()) if "[" in k},
        "applicable_per_solver": dict(sorted(c.applicable.items())),
        "have_gpu": HAVE_GPU, "no_gpu_errors_per_solver": dict(sorted(c.needs_gpu.items())),
        "preloaded": c.preloaded,
        "max_call_seconds": {k: round(v, 4) for k, v in sorted(c.max_s.items())},
        "slowest_call_input": c.max_at,
        "calls_over_1s": c.slow,
        "unexpected_exceptions": unexpected,
        "unexpected_total": sum(r["count"] for r in unexpected),
        "bad_error_messages": c.bad_messages,
        "bad_error_messages_total": len(c.bad_messages),
    }
    summary["passed"] = not c.slow and not unexpected and not c.bad_messages and total >= 50_000
    (out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=True) + "\n")

    apply_calls = sum(v for k, v in c.calls.items() if k.startswith("applicability["))
    ws_calls = sum(v for k, v in c.calls.items() if k.startswith("workspace_bytes["))
    sol_calls = sum(v for k, v in c.calls.items() if k.startswith("get_solution["))
    slowest = max(c.max_s.items(), key=lambda kv: kv[1])
    lines = [
        "# Hypothesis campaign (issue 15): hostile specs, keys and driver lines",
        "",
        f"`{command}` at commit {summary['commit']}{' (with uncommitted changes)' if summary['dirty'] else ''}, "
        f"Python {summary['python']}, hypothesis {summary['hypothesis']}, {summary['machine']}: "
        f"**{'PASSED' if summary['passed'] else 'FAILED'}** in {wall:.0f} s.",
        "",
        f"{total:,} generated inputs; {c.problems_checked:,} accepted problems went through every one of the "
        f"{len(SOLVERS)} solvers: {apply_calls:,} applicability checks, {ws_calls:,} workspace and "
        f"{sol_calls:,} solution calls (every kernel's grid and block checked against CUDA's limits).",
        "",
        "| target | inputs | accepted | rejected (one-line ValueError / usage error) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name in counts:
        lines.append(f"| {name} | {c.examples[name]:,} | {c.accepted[name]:,} | {c.rejected[name]:,} |")
    lines += [
        "",
        f"- exceptions other than ValueError / usage errors, and properties that did not hold: "
        f"**{summary['unexpected_total']}**",
        f"- error messages not one line, or in Python's own words: **{len(c.bad_messages)}**",
        f"- calls over {SLOW_S:.0f} s (wall time, garbage collector off during each call; imported before the "
        f"timed calls, as a process pays it once: {', '.join(summary['preloaded']) or 'nothing'}): "
        f"**{len(c.slow)}**; slowest call {slowest[1] * 1e3:.1f} ms ({slowest[0]})",
        "",
        "Slowest call per kind (ms):",
        "",
        "| kind | ms |",
        "| --- | ---: |",
    ]
    for k, v in sorted(c.max_s.items(), key=lambda kv: -kv[1])[:15]:
        lines.append(f"| {k} | {v * 1e3:.2f} |")
    lines += ["", "Problems each solver found applicable:", "", "| solver | applicable |", "| --- | ---: |"]
    for sid, n in sorted(c.applicable.items()):
        lines.append(f"| {sid} | {n:,} |")
    never = [sid for sid in (sv.id for sv in SOLVERS) if not c.applicable[sid]]
    for sid in never:
        why, n = c.reasons[sid].most_common(1)[0] if c.reasons[sid] else ("", 0)
        lines.append(f"| {sid} | 0 (most common reason: \"{why} ...\", {n:,} of its checks) |")
    if c.needs_gpu:
        lines += ["", "Without a GPU here (no CUDA device), the cuDNN solvers' get_solution raised NoGPUError, a one-line "
                  "error: " + ", ".join(f"{sid} {n:,}" for sid, n in sorted(c.needs_gpu.items())) + "."]
    for r in unexpected:
        lines += ["", f"- {r['kind']}: {r['exception']} at {r['where']} x{r['count']}: {r['examples'][:1]}"]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    return summary


DEFAULT_COUNTS = {"from_key": 17_000, "driver_args": 13_000, "make": 8_000, "make_big": 8_000,
                  "from_arrays": 3_000, "cli_solvers": 2_000}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "fuzz-campaign")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every target's example count")
    args = ap.parse_args(argv)
    counts = {k: max(1, int(v * args.scale)) for k, v in DEFAULT_COUNTS.items()}
    command = "python bench/fuzz_campaign.py" + (f" --scale {args.scale:g}" if args.scale != 1 else "")
    c, wall = run(counts, "campaign")
    s = write(c, wall, counts, args.out, command)
    print(json.dumps({k: s[k] for k in ("examples_total", "unexpected_total", "bad_error_messages_total",
                                        "wall_seconds", "passed")}))
    print(f"calls over 1 s: {len(s['calls_over_1s'])}")
    return 0 if s["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
