"""`miofind report` on the CPU: the HTML page rendered from the shipped DB, checked against direct
SQLite queries of that file, and its one-line errors."""

import hashlib
import json
import math
import re
import sqlite3
import sys
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

pytest.importorskip("matplotlib")

from miofind import cli  # noqa: E402
from miofind.db import FindDB, Record  # noqa: E402
from miofind.db.system import system_db_files  # noqa: E402
from miofind.models import model_layers, model_problems  # noqa: E402

SHIPPED = system_db_files()[("sm_90", 132)]
SECTIONS = ["Solvers against cuDNN", "Roofline fraction", "Tuning gains", "DB coverage"]
N_LAYERS = len(model_layers("resnet50"))


class Page(HTMLParser):
    """Headings, image sources, external references and, per table id, its body rows (cells, tr attrs)."""

    def __init__(self, text):
        super().__init__()
        self.headings, self.imgs, self.tables, self.refs = [], [], {}, []
        self._heading = self._table = self._row = self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]
        if tag in ("h1", "h2", "h3"):
            self._heading = []
        elif tag == "img":
            self.imgs.append(a.get("src", ""))
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = ([], a)
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None
        elif tag == "td" and self._cell is not None:
            self._row[0].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row[0]:  # header rows hold <th> only
                self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        for buf in (self._heading, self._cell):
            if buf is not None:
                buf.append(data)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(*args):
    return CliRunner().invoke(cli.main, ["report", *args])


def shipped_sql(query, *params):
    con = sqlite3.connect(f"file:{SHIPPED}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(query, params).fetchall()
    finally:
        con.close()


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.delenv("MIOFIND_SYSTEM_DB", raising=False)
    monkeypatch.setenv("MIOFIND_DB", str(tmp_path / "never-created.sqlite"))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The resnet50 report at batch 32 from the shipped DB, FP32 NCHW and FP16 NHWC (rendered once)."""
    out, before = {}, sha256(SHIPPED)
    mp = pytest.MonkeyPatch()
    mp.delenv("MIOFIND_SYSTEM_DB", raising=False)
    d = tmp_path_factory.mktemp("report")
    for dt, lay in (("fp32", "NCHW"), ("fp16", "NHWC")):
        path = d / f"{dt}.html"
        r = run("--model", "resnet50", "--batch", "32", "--dtype", dt, "--layout", lay, "--system",
                "--device", "sm_90-132", "-o", str(path))
        assert r.exit_code == 0, r.output
        out[dt, lay] = path.read_text()
    mp.undo()
    assert sha256(SHIPPED) == before  # read-only: the shipped file's bytes are unchanged
    return out


@pytest.mark.parametrize("dt,lay", [("fp32", "NCHW"), ("fp16", "NHWC")])
def test_report_is_one_self_contained_page(rendered, dt, lay):
    text = rendered[dt, lay]
    assert text.startswith("<!DOCTYPE html>") and text.count("<html") == 1 and text.rstrip().endswith("</html>")
    page = Page(text)
    assert page.headings[0] == f"miofind report: resnet50, batch 32, {dt.upper()}, {lay}"
    for s in SECTIONS:
        assert s in page.headings
    for d in ("forward (F)", "backward-data (B)", "backward-weights (W)"):
        assert d in page.headings
    # three solver-vs-cuDNN plots, roofline, tuning, coverage; every one a decodable embedded PNG
    assert len(page.imgs) >= 6
    assert all(s.startswith("data:image/png;base64,iVBORw0KGgo") for s in page.imgs)
    assert page.refs == page.imgs  # nothing else is referenced: no scripts, styles or links
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I) and "<script" not in text
    for tid in ("vs-cudnn-F", "vs-cudnn-B", "vs-cudnn-W", "roofline"):
        rows = page.tables[tid]
        assert [r[0][0] for r in rows] == [str(i) for i in range(1, N_LAYERS + 1)], tid


@pytest.mark.parametrize("dt,lay", [("fp32", "NCHW"), ("fp16", "NHWC")])
def test_report_coverage_matches_the_db(rendered, dt, lay):
    stored = {k for (k,) in shipped_sql("SELECT DISTINCT problem_key FROM find_records")}
    rows = {a["data-direction"]: a for _, a in Page(rendered[dt, lay]).tables["coverage"]}
    for d in "FBW":
        keys = {p.key() for p in model_problems("resnet50", batch=32, dtypes=(dt.upper(),), layouts=(lay,),
                                                directions=d)}
        assert rows[d]["data-problems"] == str(len(keys))
        assert rows[d]["data-covered"] == str(len(keys & stored))


@pytest.mark.parametrize("dt,lay,peak,size", [("fp32", "NCHW", 51.6e12, 4), ("fp16", "NHWC", 667e12, 2)])
def test_report_first_layer_numbers_match_the_db(rendered, dt, lay, peak, size):
    # ResNet-50's stem: 3 -> 64 channels, 224x224 -> 112x112, 7x7 filter, stride 2, pad 3, N=32
    lay_tok = "NCHW" if lay == "NCHW" else "NHWC-NHWC-NHWC"
    key = f"3-224-224-7x7-64-112-112-32-3x3-2x2-1x1-0-{lay_tok}-{dt.upper()}-F"
    page = Page(rendered[dt, lay])
    (cudnn,), = shipped_sql("SELECT time_ms FROM find_records WHERE problem_key=? AND solver_id='ConvCudnnFwd'", key)
    (best,), = shipped_sql("SELECT MIN(time_ms) FROM find_records WHERE problem_key=?", key)
    row = page.tables["vs-cudnn-F"][0][0]
    assert row[2] == f"{cudnn:.4f}"
    flops = 2 * 32 * 64 * 112 * 112 * 3 * 7 * 7
    nbytes = size * (32 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + 32 * 64 * 112 * 112)
    frac = max(flops / peak, nbytes / 3.0e12) * 1e3 / best
    roof = page.tables["roofline"][0][0]
    # columns: #, layer, GFLOP, min MB, roofline ms, then per direction fastest, ms, frac., cuDNN frac.
    assert roof[2] == f"{flops / 1e9:.2f}" and roof[3] == f"{nbytes / 1e6:.1f}"
    assert roof[6] == f"{best:.4f}" and abs(float(roof[7]) - frac) <= 0.00051


def test_report_tuning_gains_match_the_perfdb(rendered):
    keys = {p.key() for p in model_problems("resnet50", batch=32)}
    rows = shipped_sql("SELECT problem_key, solver_id, time_ms, default_time_ms FROM perf_records")
    gains = [d / t for k, s, t, d in rows if k in keys and s == "ConvImplicitGemmFwd" and d]
    assert gains
    want = f"{math.exp(sum(map(math.log, gains)) / len(gains)):.3f}×"
    table = {cells[0]: cells for cells, _ in Page(rendered["fp32", "NCHW"]).tables["tuning"]}
    assert table["ConvImplicitGemmFwd"][1] == str(len(gains)) and table["ConvImplicitGemmFwd"][2] == want


def test_report_from_file_counts_missing_problems(tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_text("# one layer the shipped DB holds, one it does not (batch 7)\n"
                     "conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 0\n\n"
                     "conv -n 7 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1\n")
    out = tmp_path / "r.html"
    r = run("--file", str(lines), "--device", "sm_90-132", "-o", str(out))
    assert r.exit_code == 0, r.output
    page = Page(out.read_text())
    cov = {a["data-direction"]: (a["data-covered"], a["data-problems"]) for _, a in page.tables["coverage"]}
    assert cov == {"F": ("1", "2"), "B": ("1", "1"), "W": ("1", "1")}
    assert len(page.tables["vs-cudnn-F"]) == 2 and len(page.tables["vs-cudnn-B"]) == 1
    assert "64-56-56-3x3-64-56-56-7-1x1-1x1-1x1-0-NCHW-FP32-F" in out.read_text()  # listed as missing
    assert not (tmp_path / "never-created.sqlite").exists()  # the absent user DB was not created


def _copy(key, **kw):
    con = sqlite3.connect(f"file:{SHIPPED}?mode=ro&immutable=1", uri=True)
    con.row_factory = sqlite3.Row
    rows = con.execute("SELECT * FROM find_records WHERE problem_key=?", (key,)).fetchall()
    con.close()
    fields = set(Record.__dataclass_fields__)
    return [Record(**{**{k: r[k] for k in r.keys() if k in fields}, "verified": bool(r["verified"]),
                      "config": json.loads(r["config"]) if r["config"] else None, **kw}) for r in rows]


KEY_A = "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F"
KEY_B = "64-56-56-1x1-64-56-56-32-0x0-1x1-1x1-0-NCHW-FP32-F"


def test_report_user_db_over_system_db(tmp_path, monkeypatch):
    user = tmp_path / "user.sqlite"
    with FindDB(str(user)) as db:
        db.store(_copy(KEY_A)[:1])  # one solver of one problem: the user layer answers that problem
        db.store(_copy(KEY_B, device="sm_80-108-NVIDIA_A100"))  # another GPU's records: not used
    monkeypatch.setenv("MIOFIND_DB", str(user))
    monkeypatch.setenv("MIOFIND_SYSTEM_DB", str(SHIPPED))
    before = sha256(user)
    out = tmp_path / "r.html"
    r = run("--model", "resnet50", "--device", "sm_90-132", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert sha256(user) == before
    page = Page(out.read_text())
    f = next(cells for cells, a in page.tables["coverage"] if a["data-direction"] == "F")
    # direction, problems, with records, covered, from user DB, from system DB, records
    assert f[1:6] == [str(N_LAYERS), str(N_LAYERS), "100%", "1", str(N_LAYERS - 1)]


def test_report_from_db_file(tmp_path):
    part = tmp_path / "part.sqlite"
    with FindDB(str(part)) as db:
        db.store(_copy(KEY_A) + _copy(KEY_B))
    out = tmp_path / "r.html"
    r = run("--model", "resnet50", "--db", str(part), "-o", str(out))
    assert r.exit_code == 0, r.output
    cov = {a["data-direction"]: a["data-covered"] for _, a in Page(out.read_text()).tables["coverage"]}
    assert cov == {"F": "2", "B": "0", "W": "0"}
    with FindDB(str(part)) as db:
        db.store(_copy(KEY_A, device="sm_80-108-NVIDIA_A100"))
    r = run("--model", "resnet50", "--db", str(part), "-o", str(out))
    assert r.exit_code == 1 and "pick one with --device" in r.output


@pytest.mark.parametrize("args,msg", [
    (["--model", "resnet5"], "--model='resnet5': unknown model (known: resnet50,"),
    (["--model", "resnet50", "--batch", "x"], "--batch='x': expected a positive integer"),
    (["--model", "resnet50", "--dtype", "fp8"], "--dtype='fp8': expected fp32, fp16 or bf16"),
    (["--model", "resnet50", "--layout", "CHWN"], "--layout='CHWN': expected NCHW or NHWC"),
    (["--model", "resnet50", "--device", "h100"], "--device='h100': expected ARCH-SMS such as sm_90-132"),
    (["--file", "/nonexistent/lines.txt"], "--file='/nonexistent/lines.txt': cannot read"),
    (["--batch", "8"], "--batch, --dtype and --layout select problems of a --model"),
    ([], "nothing to report on"),
])
def test_report_bad_input_is_one_line(tmp_path, args, msg):
    out = tmp_path / "r.html"
    device = [] if "--device" in args else ["--device", "sm_90-132"]
    r = run(*args, *device, "-o", str(out))
    assert r.exit_code == 1
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("miofind: " + msg), r.output
    assert not out.exists()


def test_report_bad_file_line_names_the_line(tmp_path):
    lines = tmp_path / "lines.txt"
    lines.write_text("conv -n 32 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -F 1\nconv -n x\n")
    r = run("--file", str(lines), "--device", "sm_90-132", "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 1
    (line,) = r.output.strip().splitlines()
    assert line.startswith(f"miofind: --file={str(lines)!r}: line 2: ") and "--batchsize='x'" in line


def test_report_without_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    r = run("--model", "resnet50", "--device", "sm_90-132", "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 1
    assert r.output.strip() == 'miofind: the report needs matplotlib: pip install "miofind[report]"'
