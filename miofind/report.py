"""``miofind report``: one self-contained HTML page (plots embedded as base64 PNG) of what a FindDB
knows about a model preset or a file of MIOpenDriver lines: every solver against cuDNN per layer and
direction, the roofline fraction per layer, tuning gains per solver and the DB's coverage.

It reads the databases read-only and needs no GPU; the plots need matplotlib, an optional extra
(``pip install "miofind[report]"``).
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import click

from .cli_common import fail
from .problem import DIRECTION_NAMES, DIRECTIONS, ProblemDescription

__all__ = ["CEIL_TFLOPS", "BANDWIDTH", "ReportError", "gmean", "tuning_gains", "min_bytes", "roofline_ms",
           "roofline_fraction", "Source", "open_source", "collect", "render_html", "report_command"]

# H100 SXM ceilings measured on our device machine: dense FP32 SGEMM without tensor cores, FP16/BF16 tensor
# cores, HBM3 bandwidth.
CEIL_TFLOPS = {"FP32": 51.6, "FP16": 667.0, "BF16": 667.0}
BANDWIDTH = 3.0e12  # bytes/s
_DTYPE_BYTES = {"FP64": 8, "FP32": 4, "INT32": 4, "INT64": 8, "FP16": 2, "BF16": 2, "INT8": 1, "INT8x4": 1,
                "FP8": 1, "BF8": 1}
_INSTALL_HINT = 'the report needs matplotlib: pip install "miofind[report]"'
_DEVICE_RE = re.compile(r"^(sm_\d+)-(\d+)(-.+)?$")
_FASTER, _SAME = 1.02, 0.98  # a tuned config counts as faster / as fast as the default beyond these


class ReportError(ValueError):
    """Bad input or an unreadable database; the message is one line naming the option and value."""


# -- the numbers -----------------------------------------------------------------------------------

def gmean(xs: Iterable[float]) -> float:
    """Geometric mean of the positive finite values of ``xs``; NaN when there are none."""
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def tuning_gains(perf_records) -> list[float]:
    """Default over tuned time of each PerfDB entry whose default config was timed too (>1: tuning helped)."""
    return [r.default_time_ms / r.time_ms for r in perf_records if r.default_time_ms and r.time_ms]


def min_bytes(p: ProblemDescription) -> int:
    """The least traffic of one pass: both inputs read once and the output written once (the same
    three tensors x, w, y in every direction), in bytes, as an exact int."""
    q = p.as_conv()
    return sum(math.prod(shape) * _DTYPE_BYTES[dt] for shape, dt in zip((q.x_shape, q.w_shape, q.y_shape), q.dtypes))


def roofline_ms(p: ProblemDescription) -> float | None:
    """The H100 roofline time: max(FLOPs over the dtype's peak, min_bytes over 3.0 TB/s), in ms;
    None where no ceiling is given (types other than FP32/FP16/BF16, TF32 math)."""
    peak = CEIL_TFLOPS.get(p.dtype) if p.math == "strict" else None
    if peak is None:
        return None
    return max(p.flops() / (peak * 1e12), min_bytes(p) / BANDWIDTH) * 1e3


def roofline_fraction(p: ProblemDescription, time_ms: float | None) -> float | None:
    """roofline_ms / time_ms: 1 is the ceiling (algorithms doing fewer FLOPs than the direct one,
    Winograd and FFT, can pass it); None when unknown."""
    r = roofline_ms(p)
    return r / time_ms if r is not None and time_ms else None


# -- the databases ---------------------------------------------------------------------------------

def _matches(device: str | None, stored: str) -> bool:
    # "sm_90-132" names every "sm_90-132-<GPU name>"; a full db_name names itself
    return device is None or stored == device or stored.startswith(device + "-")


@dataclass
class Source:
    """The FindDB layers a report reads, first wins per problem: (name, FindDB, device filter or None)."""

    layers: list[tuple[str, object, str | None]]
    device: str
    note: str = ""

    def records(self, key: str) -> tuple[str | None, list]:
        """(layer name, records fastest first) of the first layer holding records of ``key``."""
        for name, db, dev in self.layers:
            recs = [r for r in db.lookup(None, key) if _matches(dev, r.device)]
            if recs:
                return name, recs
        return None, []

    def perf(self, key: str) -> dict[str, object]:
        """The newest PerfDB entry per solver of ``key``, the first layer holding one winning."""
        out: dict[str, object] = {}
        for _, db, dev in self.layers:
            for r in db.lookup_perf(None, key):
                if _matches(dev, r.device):
                    out.setdefault(r.solver_id, r)
        return out

    def describe(self) -> list[str]:
        return [f"{name}: {db.path or db.url}" for name, db, _ in self.layers]


def open_writable(url: str, option: str, **kw):
    from .db import FindDB, FindDBError

    try:
        return FindDB(url, readonly=True, **kw)
    except FindDBError as e:
        raise ReportError(f"{option}={url!r}: {e}") from None


def _user_db():
    """The user DB read-only, or None where it was never written (nothing is created)."""
    import platformdirs
    import sqlalchemy as sa

    url = os.environ.get("MIOFIND_DB", "").strip()
    if not url:
        path = Path(platformdirs.user_data_dir("miofind")) / "finddb.sqlite"
    elif "://" not in url:
        path = Path(url).expanduser()
    else:
        u = sa.make_url(url)
        path = Path(u.database) if u.get_backend_name() == "sqlite" and u.database else None
    if path is not None and (not path.is_file() or path.stat().st_size == 0):
        return None
    return open_writable(url or str(path), "MIOFIND_DB")


def open_source(db_url: str | None = None, *, system: bool = False, device: str | None = None) -> Source:
    """The databases to report on, all opened read-only.

    ``db_url``: that DB alone (``device`` filters it; needed when it holds several devices).
    ``system``: the shipped DB alone. Otherwise the user DB over the shipped one. The shipped DB is
    the one for ``device`` (``ARCH-SMS``, e.g. ``sm_90-132``), else for this GPU, else, with no GPU,
    the only shipped file. Raises ReportError.
    """
    from .db.system import open_system_db, system_db_files

    arch = sms = None
    if device is not None:
        m = _DEVICE_RE.match(device)
        if not m:
            raise ReportError(f"--device={device!r}: expected ARCH-SMS such as sm_90-132")
        arch, sms = m.group(1), int(m.group(2))
    if db_url:
        if system:
            raise ReportError(f"--db={db_url!r} and --system: give one of them")
        db = open_writable(db_url, "--db")
        devs = [d for d in db.devices() if _matches(device, d)]
        if device is None and len(devs) > 1:
            raise ReportError(f"--db={db_url!r} holds several devices ({', '.join(devs)}): pick one with --device")
        return Source([("db", db, device)], device or (devs[0] if devs else "(empty DB)"))
    shipped = system_db_files()
    note = ""
    if device is None:
        from .device import NoGPUError, current_device

        try:
            d = current_device()
            arch, sms = d.arch, d.sm_count
        except NoGPUError:
            if len(shipped) != 1:
                raise ReportError("no GPU to choose the device by: give --device ARCH-SMS (shipped: "
                                  f"{', '.join(f'{a}-{s}' for a, s in shipped) or 'none'})") from None
            arch, sms = next(iter(shipped))
            note = f"no GPU: reporting for {arch}-{sms}, the shipped DB's device (--device picks another)"
        device = f"{arch}-{sms}"
    layers: list[tuple[str, object, str | None]] = []
    if not system:
        user = _user_db()
        if user is not None:
            layers.append(("user", user, device))
    sysdb = open_system_db(arch, sms)
    if sysdb is not None:
        layers.append(("system", sysdb, None))  # chosen by device already (nearest SM count)
    elif system:
        raise ReportError(f"--system: no shipped system DB for {device} (shipped: "
                          f"{', '.join(f'{a}-{s}' for a, s in shipped) or 'none'})")
    return Source(layers, device, note)


# -- what the report shows -------------------------------------------------------------------------

@dataclass
class Layer:
    """One convolution (forward view) and its problems per direction."""

    index: int
    label: str
    count: int | None
    problems: dict[str, ProblemDescription] = field(default_factory=dict)


@dataclass
class ReportData:
    title: str
    source: Source
    layers: list[Layer]
    records: dict[str, list]           # problem key -> records (fastest first)
    answered_by: dict[str, str]        # problem key -> layer name
    perf: dict[str, dict[str, object]]  # problem key -> solver id -> PerfRecord

    def problems(self) -> list[ProblemDescription]:
        return [p for lay in self.layers for p in lay.problems.values()]


def _layer_label(p: ProblemDescription) -> str:
    sp = "×".join(map(str, p.in_size))
    f = "×".join(map(str, p.filter_size))
    s = "×".join(map(str, p.strides))
    g = f" g{p.groups}" if p.groups > 1 else ""
    return f"{p.c}→{p.k} @{sp} {f}/s{s}{g}" + (" transposed" if p.transposed else "")


def collect(problems: list[ProblemDescription], source: Source, *, title: str,
            counts: dict[str, int] | None = None) -> ReportData:
    """Group ``problems`` into layers (by forward-view key; ``counts`` gives occurrences by that key)
    and read their records and tuned configs from ``source``."""
    layers: dict[str, Layer] = {}
    for p in problems:
        fkey = p.with_direction("F").key()
        lay = layers.get(fkey)
        if lay is None:
            lay = layers[fkey] = Layer(len(layers) + 1, _layer_label(p), (counts or {}).get(fkey))
        lay.problems.setdefault(p.direction, p)
    records, answered, perf = {}, {}, {}
    for lay in layers.values():
        for p in lay.problems.values():
            k = p.key()
            name, recs = source.records(k)
            records[k] = recs
            if name:
                answered[k] = name
            perf[k] = source.perf(k)
    return ReportData(title, source, list(layers.values()), records, answered, perf)


def _is_cudnn(solver_id: str) -> bool:
    return solver_id.startswith("ConvCudnn")


def _solver_order(ids: Iterable[str]) -> list[str]:
    from .registry import registry

    rank = {r.id: r.number for r in registry()}
    return sorted(set(ids), key=lambda s: (rank.get(s, 10**6), s))


def coverage(data: ReportData) -> dict[str, dict[str, int]]:
    """Per direction: the model's problems, how many have records, and from which DB layer."""
    out: dict[str, dict[str, int]] = {}
    for p in data.problems():
        c = out.setdefault(p.direction, {"problems": 0, "covered": 0, "records": 0})
        c["problems"] += 1
        k = p.key()
        if data.records[k]:
            c["covered"] += 1
            c["records"] += len(data.records[k])
            c[data.answered_by[k]] = c.get(data.answered_by[k], 0) + 1
    return {d: out[d] for d in DIRECTIONS if d in out}


# -- HTML ------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1180px;color:#222}
h1{font-size:1.5em;margin-bottom:4px} h2{border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:34px}
p.meta{color:#555;font-size:.9em;margin:2px 0} img{max-width:100%;display:block;margin:8px 0}
table{border-collapse:collapse;font-size:.78em;margin:8px 0 18px} td,th{border:1px solid #ccc;padding:2px 5px}
th{background:#f3f3f3;max-width:7em;overflow-wrap:anywhere;vertical-align:bottom} td.n{text-align:right}
td.good{background:#e3f4e0} td.best{font-weight:bold} .note{color:#555;font-size:.88em}
"""


def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _table(headers: list[str], rows: list[list], *, tid: str, row_attrs: list[str] | None = None) -> str:
    """An HTML table; a cell is text or (text, css class, tooltip)."""
    # let long solver ids wrap at their word boundaries (ConvImplicit|Gemm|Fwd), not mid-word
    heads = [re.sub(r"(?<=[a-z0-9])(?=[A-Z])(?!DNN)|(?<=_)", "<wbr>", _esc(h)) for h in headers]
    out = [f'<table id="{_esc(tid)}"><thead><tr>' + "".join(f"<th>{h}</th>" for h in heads)
           + "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cells = []
        for c in row:
            text, cls, tip = c if isinstance(c, tuple) else (c, None, None)
            attrs = (f' class="{cls}"' if cls else "") + (f' title="{_esc(tip)}"' if tip else "")
            cells.append(f"<td{attrs}>{_esc(text)}</td>")
        extra = f" {row_attrs[i]}" if row_attrs else ""
        out.append(f"<tr{extra}>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</tbody></table>"


def _img(fig, alt: str) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


_MARKERS = "os^vDPX*hp<>"


def _colors(n: int):
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _ms(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


def _xticks(ax, layers: list[Layer]) -> None:
    ax.set_xticks([lay.index for lay in layers])
    ax.set_xticklabels([f"L{lay.index}" for lay in layers], rotation=90 if len(layers) > 30 else 0, fontsize=8)
    ax.set_xlim(0.3, len(layers) + 0.7)
    ax.set_xlabel("layer (see the table)")


def _section_vs_cudnn(data: ReportData) -> str:
    from matplotlib.figure import Figure

    out = ["<h2>Solvers against cuDNN</h2>",
           '<p class="note">Each stored solver time divided by the cuDNN time (the ConvCudnn* record of the '
           "same problem): below 1 is faster than cuDNN. Log scale.</p>"]
    for d in DIRECTIONS:
        lays = [lay for lay in data.layers if d in lay.problems]
        if not lays:
            continue
        per = {lay.index: {r.solver_id: r for r in data.records[lay.problems[d].key()]} for lay in lays}
        ids = _solver_order(s for recs in per.values() for s in recs if not _is_cudnn(s))
        cud = {i: next((r for s, r in recs.items() if _is_cudnn(s)), None) for i, recs in per.items()}
        out.append(f"<h3>{_esc(DIRECTION_NAMES[d])} ({d})</h3>")
        if ids and any(cud.values()):
            fig = Figure(figsize=(12, 3.8))
            ax = fig.add_subplot()
            for j, (sid, color) in enumerate(zip(ids, _colors(len(ids)))):
                pts = [(i, recs[sid].time_ms / cud[i].time_ms) for i, recs in per.items()
                       if sid in recs and cud[i] and cud[i].time_ms > 0]
                if pts:
                    ax.scatter(*zip(*pts), label=sid, color=color, marker=_MARKERS[j % len(_MARKERS)], s=26, alpha=.85)
            ax.axhline(1.0, color="k", lw=.9)
            ax.set_yscale("log")
            ax.set_ylabel("time / cuDNN time")
            ax.grid(True, which="major", axis="y", alpha=.3)
            _xticks(ax, lays)
            ax.set_title(f"{DIRECTION_NAMES[d]}: solver time relative to cuDNN (lower is faster)", fontsize=10)
            ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=7, frameon=False)
            out.append(_img(fig, f"solvers against cuDNN, {DIRECTION_NAMES[d]}"))
        else:
            out.append('<p class="note">No cuDNN record to compare with for these problems.</p>')
        rows = []
        for lay in lays:
            recs, c = per[lay.index], cud[lay.index]
            own = min((r for s, r in recs.items() if not _is_cudnn(s)), key=lambda r: r.time_ms, default=None)
            row = [lay.index, lay.label, _ms(c.time_ms if c else None), own.solver_id if own else "–",
                   _ratio_cell(own, c)]
            for sid in ids:
                r = recs.get(sid)
                cell = _ratio_cell(r, c)
                if r is not None and r is own:
                    cell = (cell[0], (cell[1] or "") + " best", cell[2])
                row.append(cell)
            rows.append(row)
        out.append(_table(["#", "layer", "cuDNN ms", "fastest other solver", "its time / cuDNN", *ids], rows,
                          tid=f"vs-cudnn-{d}"))
    return "\n".join(out)


def _ratio_cell(r, c) -> tuple:
    if r is None:
        return ("–", None, None)
    if c is None or not c.time_ms:
        return (f"{r.time_ms:.4f} ms", None, f"{r.solver_id}: {r.time_ms:.4f} ms (no cuDNN record)")
    x = r.time_ms / c.time_ms
    return (f"{x:.2f}×", "n good" if x < 1 else "n", f"{r.solver_id}: {r.time_ms:.4f} ms, cuDNN {c.time_ms:.4f} ms")


def _section_roofline(data: ReportData) -> str:
    from matplotlib.figure import Figure

    out = ["<h2>Roofline fraction</h2>",
           f'<p class="note">Roofline time = max(FLOPs / peak, minimum bytes / {BANDWIDTH / 1e12:.1f} TB/s), with the '
           f"H100 ceilings {CEIL_TFLOPS['FP32']} TFLOP/s FP32 and {CEIL_TFLOPS['FP16']:g} TFLOP/s FP16/BF16; the minimum "
           "bytes read each input once and write the output once. Fraction = roofline time / stored time of the "
           "fastest solver (bars) and of cuDNN (dots). Winograd and FFT do fewer FLOPs than direct "
           "convolution, so they can pass 1.</p>"]
    dirs = [d for d in DIRECTIONS if any(d in lay.problems for lay in data.layers)]
    best, cudf = {}, {}
    for lay in data.layers:
        for d, p in lay.problems.items():
            recs = data.records[p.key()]
            if recs:
                best[lay.index, d] = (recs[0], roofline_fraction(p, recs[0].time_ms))
            c = next((r for r in recs if _is_cudnn(r.solver_id)), None)
            if c:
                cudf[lay.index, d] = roofline_fraction(p, c.time_ms)
    if any(f is not None for _, f in best.values()):
        fig = Figure(figsize=(12, 3.8))
        ax = fig.add_subplot()
        w = 0.8 / len(dirs)
        for j, (d, color) in enumerate(zip(dirs, _colors(len(dirs)))):
            off = (j - (len(dirs) - 1) / 2) * w
            xs = [lay.index for lay in data.layers if best.get((lay.index, d), (None, None))[1] is not None]
            ax.bar([x + off for x in xs], [best[x, d][1] for x in xs], w, color=color, label=f"{d} fastest")
            cx = [x for x in xs if cudf.get((x, d)) is not None]
            ax.scatter([x + off for x in cx], [cudf[x, d] for x in cx], color="k", s=9, zorder=3,
                       label="cuDNN" if j == 0 else None)
        ax.axhline(1.0, color="k", lw=.8, ls="--")
        ax.set_ylabel("fraction of the H100 roofline")
        ax.grid(True, axis="y", alpha=.3)
        _xticks(ax, data.layers)
        ax.set_title("roofline fraction per layer", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=7, frameon=False)
        out.append(_img(fig, "roofline fraction per layer"))
    else:
        out.append('<p class="note">No stored time with a known ceiling for these problems.</p>')
    headers = ["#", "layer", "GFLOP", "min MB", "roofline ms"]
    for d in dirs:
        headers += [f"{d} fastest", f"{d} ms", f"{d} frac.", f"{d} cuDNN frac."]
    rows = []
    for lay in data.layers:
        p0 = next(iter(lay.problems.values()))
        rl = roofline_ms(p0)
        row = [lay.index, lay.label, (f"{p0.flops() / 1e9:.2f}", "n", None), (f"{min_bytes(p0) / 1e6:.1f}", "n", None),
               (_ms(rl), "n", None)]
        for d in dirs:
            r, f = best.get((lay.index, d), (None, None))
            cf = cudf.get((lay.index, d))
            row += [r.solver_id if r else "–", (_ms(r.time_ms if r else None), "n", None),
                    ("–" if f is None else f"{f:.3f}", "n", None), ("–" if cf is None else f"{cf:.3f}", "n", None)]
        rows.append(row)
    out.append(_table(headers, rows, tid="roofline"))
    return "\n".join(out)


def _section_tuning(data: ReportData) -> str:
    import numpy as np
    from matplotlib.figure import Figure

    out = ["<h2>Tuning gains</h2>",
           '<p class="note">Per PerfDB entry of these problems: the default config\'s time over the tuned '
           "config's (both measured in the same tuning run); above 1, tuning helped.</p>"]
    by_solver: dict[str, list] = {}
    for recs in data.perf.values():
        for sid, r in recs.items():
            by_solver.setdefault(sid, []).append(r)
    ids = _solver_order(by_solver)
    gains = {sid: tuning_gains(by_solver[sid]) for sid in ids}
    ids_g = [sid for sid in ids if gains[sid]]
    if ids_g:
        fig = Figure(figsize=(12, 3.6))
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
        colors = dict(zip(ids_g, _colors(len(ids_g))))
        gm = [gmean(gains[s]) for s in ids_g]
        ax1.barh(range(len(ids_g)), gm, color=[colors[s] for s in ids_g])
        ax1.set_yticks(range(len(ids_g)))
        ax1.set_yticklabels([f"{s} (n={len(gains[s])})" for s in ids_g], fontsize=7)
        ax1.invert_yaxis()
        ax1.axvline(1.0, color="k", lw=.8)
        ax1.set_xlim(min(0.9, min(gm) * 0.95), max(gm) * 1.08)
        ax1.set_xlabel("geometric-mean default / tuned time")
        ax1.set_title("tuning gain per solver", fontsize=10)
        allg = [g for s in ids_g for g in gains[s]]
        lo, hi = min(min(allg), 1.0), max(allg)
        ax2.hist([gains[s] for s in ids_g], bins=np.linspace(lo * 0.99, hi * 1.01, 40), stacked=True,
                 color=[colors[s] for s in ids_g], label=ids_g)
        ax2.axvline(1.0, color="k", lw=.8)
        ax2.set_xlabel("default / tuned time")
        ax2.set_ylabel("tuned configs")
        ax2.set_title("distribution of gains", fontsize=10)
        ax2.legend(fontsize=7, frameon=False)
        fig.tight_layout()
        out.append(_img(fig, "tuning gains per solver"))
    else:
        out.append('<p class="note">No tuned config with a timed default among these problems.</p>')
    rows = []
    for sid in ids:
        g, rs = gains[sid], by_solver[sid]
        rows.append([sid, (len(rs), "n", None), (f"{gmean(g):.3f}×" if g else "–", "n", None),
                     (f"{sum(x > _FASTER for x in g)}/{len(g)}", "n", None),
                     (f"{sum(_SAME <= x <= _FASTER for x in g)}", "n", None), (f"{sum(x < _SAME for x in g)}", "n", None),
                     (f"{max(g):.2f}×" if g else "–", "n", None),
                     (f"{sum(r.configs_tried for r in rs) / len(rs):.1f}", "n", None)])
    out.append(_table(["solver", "tuned configs", "geomean gain", ">2% faster", "within 2%", "slower", "best gain",
                       "configs tried (mean)"], rows, tid="tuning"))
    return "\n".join(out)


def _section_coverage(data: ReportData, cov: dict[str, dict[str, int]]) -> str:
    from matplotlib.figure import Figure

    names = [name for name, _, _ in data.source.layers]
    out = ["<h2>DB coverage</h2>",
           "<p class=\"note\">How many of the (problem, direction) keys have find records, per direction, and which "
           "DB layer answered them (the first layer holding records of a key wins).</p>"]
    if cov:
        dirs = list(cov)
        fig = Figure(figsize=(12, 0.6 + 0.4 * len(dirs)))
        ax = fig.add_subplot()
        have = [cov[d]["covered"] for d in dirs]
        miss = [cov[d]["problems"] - cov[d]["covered"] for d in dirs]
        ax.barh(range(len(dirs)), have, color="#4c9a2a", label="with records")
        ax.barh(range(len(dirs)), miss, left=have, color="#cccccc", label="missing")
        for i, d in enumerate(dirs):
            ax.text(cov[d]["problems"], i, f" {have[i]}/{cov[d]['problems']}", va="center", fontsize=8)
        ax.set_yticks(range(len(dirs)))
        ax.set_yticklabels([DIRECTION_NAMES[d] for d in dirs], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(c["problems"] for c in cov.values()) * 1.12)
        ax.set_xlabel("problems")
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1), fontsize=7, frameon=False)
        out.append(_img(fig, "DB coverage per direction"))
    rows, attrs = [], []
    for d, c in cov.items():
        pct = 100 * c["covered"] / c["problems"]
        rows.append([f"{DIRECTION_NAMES[d]} ({d})", (c["problems"], "n", None), (c["covered"], "n", None),
                     (f"{pct:.0f}%", "n", None), *[(c.get(n, 0), "n", None) for n in names], (c["records"], "n", None)])
        attrs.append(f'data-direction="{d}" data-covered="{c["covered"]}" data-problems="{c["problems"]}"')
    out.append(_table(["direction", "problems", "with records", "covered", *[f"from {n} DB" for n in names],
                       "records"], rows, tid="coverage", row_attrs=attrs))
    missing = [p.key() for p in data.problems() if not data.records[p.key()]]
    if missing:
        out.append(f"<details><summary>{len(missing)} key(s) without records</summary><pre>"
                   + _esc("\n".join(missing)) + "</pre></details>")
    return "\n".join(out)


def render_html(data: ReportData) -> str:
    """The whole report as one HTML document (plots as base64 PNG, no external references)."""
    from . import __version__

    cov = coverage(data)
    n = sum(c["problems"] for c in cov.values())
    meta = [f"device {data.source.device}; {len(data.layers)} layer(s), {n} problem(s); "
            f"FindDB layers, first wins: {'; '.join(data.source.describe()) or 'none'}",
            f"miofind {__version__}, {time.strftime('%Y-%m-%d %H:%M %Z')}"]
    if data.source.note:
        meta.append(data.source.note)
    body = [f"<h1>{_esc(data.title)}</h1>", *(f'<p class="meta">{_esc(m)}</p>' for m in meta),
            _section_vs_cudnn(data), _section_roofline(data), _section_tuning(data), _section_coverage(data, cov)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_esc(data.title)}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


# -- the command -----------------------------------------------------------------------------------

def _model_problems(model: str, batch: str | None, dtype: str | None, layout: str | None):
    from .models import canonical_model, model_layers, model_problems

    try:
        name = canonical_model(model)
    except ValueError:
        raise ReportError(f"--model={model!r}: unknown model (known: {', '.join(_models())})") from None
    try:
        b = int(batch) if batch is not None else 32
        if b < 1:
            raise ValueError
    except ValueError:
        raise ReportError(f"--batch={batch!r}: expected a positive integer") from None
    dt = (dtype or "fp32").upper()
    if dt not in ("FP32", "FP16", "BF16"):
        raise ReportError(f"--dtype={dtype!r}: expected fp32, fp16 or bf16")
    lay = (layout or "NCHW").upper()
    if lay not in ("NCHW", "NHWC"):
        raise ReportError(f"--layout={layout!r}: expected NCHW or NHWC")
    problems = model_problems(name, batch=b, dtypes=(dt,), layouts=(lay,))
    counts = {}
    for layer in model_layers(name):
        p = ProblemDescription.make("F", n=b, c=layer.c, k=layer.k, in_size=layer.in_size,
                                    filter_size=layer.filter_size, pads=layer.pads, strides=layer.strides,
                                    groups=layer.groups, layout=lay, dtype=dt)
        counts[p.key()] = counts.get(p.key(), 0) + layer.count
    return problems, counts, f"{name}, batch {b}, {dt}, {lay}"


def _models() -> tuple[str, ...]:
    from .models import MODELS

    return MODELS


def _file_problems(path: str) -> list[ProblemDescription]:
    from .driver_args import problems_from_driver_args

    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ReportError(f"--file={path!r}: cannot read ({e.strerror or e})") from None
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            try:
                out += problems_from_driver_args(line)
            except ValueError as e:
                raise ReportError(f"--file={path!r}: line {lineno}: {e}") from None
    if not out:
        raise ReportError(f"--file={path!r}: no MIOpenDriver lines in it")
    return out


def _write(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise ReportError(f"--output={path!r}: cannot write ({e.strerror or e})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@click.command("report")
@click.option("--model", default=None, help="A preset network: resnet50, resnet101, vgg16, mobilenet_v2, inception_v3, unet.")
@click.option("--batch", default=None, help="Batch size for --model (default 32).")
@click.option("--dtype", default=None, help="fp32, fp16 or bf16 for --model (default fp32).")
@click.option("--layout", default=None, help="NCHW or NHWC for --model (default NCHW).")
@click.option("--file", "file_", default=None, help="A file of MIOpenDriver lines (# comments allowed).")
@click.option("--db", "db_url", default=None, help="Report on this FindDB alone (SQLAlchemy URL or file), read-only.")
@click.option("--system", is_flag=True, help="Report on the shipped system DB alone (no user DB).")
@click.option("--device", default=None,
              help="ARCH-SMS, e.g. sm_90-132: the device whose records and shipped DB to use (default: this GPU; "
                   "with no GPU, the shipped DB's).")
@click.option("-o", "--output", default="miofind-report.html", show_default=True, help="The HTML file to write.")
def report_command(model, batch, dtype, layout, file_, db_url, system, device, output):
    """Write one self-contained HTML page of plots and tables: every solver against cuDNN per layer
    and direction, the roofline fraction per layer, tuning gains per solver and the DB's coverage of
    a --model preset or a --file of MIOpenDriver lines. Reads the DBs read-only; needs no GPU."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        fail(_INSTALL_HINT)
    from .db import FindDBError

    try:
        problems, counts, titles = [], {}, []
        if model:
            ps, counts, t = _model_problems(model, batch, dtype, layout)
            problems += ps
            titles.append(t)
        elif batch is not None or dtype is not None or layout is not None:
            raise ReportError("--batch, --dtype and --layout select problems of a --model")
        if file_:
            problems += _file_problems(file_)
            titles.append(os.path.basename(file_))
        if not problems:
            raise ReportError("nothing to report on: give --model NAME or --file lines.txt")
        source = open_source(db_url, system=system, device=device)
        if source.note:
            click.echo(f"miofind: {source.note}", err=True)
        data = collect(list({p.key(): p for p in problems}.values()), source,
                       title="miofind report: " + " + ".join(titles), counts=counts)
        _write(output, render_html(data))
    except (ReportError, FindDBError) as e:
        fail(str(e))
    cov = coverage(data)
    got = ", ".join(f"{d} {c['covered']}/{c['problems']}" for d, c in cov.items())
    click.echo(f"wrote {output}: {len(data.layers)} layer(s), problems with records {got}", err=True)
