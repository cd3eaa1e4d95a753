"""bench/bench_cold.py without a GPU: it imports without CUDA libraries, its command line is checked,
its layers are unseen (not in the shipped FindDB nor tests/shapes.py), and its report marks the
targets. The benchmark itself runs on the GPU only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bench_scripts import load_bench

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "bench" / "bench_cold.py"


@pytest.fixture(scope="module")
def bc():
    return load_bench("bench_cold")


def test_imports_without_cuda_libraries():
    code = (f"import sys; sys.path.insert(0, {str(PATH.parent)!r}); import bench_cold; "
            "print(sorted(m for m in ('torch', 'cupy') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stderr


def test_arguments(bc, capsys):
    a = bc.parse_args(["--out", "x"])
    assert a.shapes == list(bc.SHAPES) and a.dtypes == ["fp32", "fp16"] and a.dirs == "FBW" and not a.resnet50
    assert len(bc.rows_of(a)) == len(bc.SHAPES) * 2 * 3
    a = bc.parse_args(["--out", "x", "--shapes", "inc_48to64_35_5x5_n16", "--dtypes", "FP16", "--dirs", "bw",
                       "--resnet50", "--resnet-configs", "fp32,amp"])
    assert bc.rows_of(a) == [("inc_48to64_35_5x5_n16", "fp16", "B"), ("inc_48to64_35_5x5_n16", "fp16", "W")]
    assert a.resnet_configs == ["fp32", "amp"]
    for argv, msg in ((["--out", "x", "--shapes", "r50_nope"], "--shapes: 'r50_nope' is not one of"),
                      (["--out", "x", "--dtypes", "bf16"], "--dtypes: 'bf16' is not one of"),
                      (["--out", "x", "--dirs", "FX"], "--dirs: 'FX': expected letters of FBW"),
                      (["--out", "x", "--resnet50", "--resnet-configs", "int8"], "--resnet-configs: 'int8'"),
                      (["--out", "x", "--skip-layers"], "--skip-layers leaves nothing"),
                      ([], "--out is required")):
        with pytest.raises(SystemExit):
            bc.parse_args(argv)
        assert msg in capsys.readouterr().err


def test_the_layers_are_unseen(bc, monkeypatch):
    assert bc.unseen() == []
    # the check works: a shipped ResNet-50 layer (batch 32) and a test shape are reported
    monkeypatch.setitem(bc.SHAPES, "shipped", dict(n=32, c=64, k=64, in_size=(56, 56), filter_size=3, pads=1))
    monkeypatch.setitem(bc.SHAPES, "tested", dict(n=2, c=16, k=24, in_size=(14, 14), filter_size=3, pads=1))
    seen = bc.unseen(["shipped", "tested"])
    assert "64-56-56-3x3-64-56-56-32-1x1-1x1-1x1-0-NCHW-FP32-F" in seen and "tested: in tests/shapes.py" in seen
    assert len([k for k in seen if k.endswith(("-F", "-B", "-W"))]) == 6    # every type and direction


def test_report_marks_the_targets(bc):
    t = {"lookup_ms": 1.0, "select_ms": 0.5, "setup_ms": 1.5, "configs_ms": 4.0, "compile_ms": 50.0,
         "reference_compile_ms": 5.0, "isolate_ms": 0.0, "reference_ms": 8.0, "measure_ms": 25.0, "verify_ms": 3.0,
         "timing_ms": 20.0, "benchmark_ms": 81.0, "store_ms": 2.0, "total_ms": 90.0}
    rows = [{"shape": "a", "dtype": "fp32", "direction": "F", "torch_first_ms": 30.0, "ratio_warm_vs_torch": 4.0,
             "warm": {"find_ms": 120.0, "solutions": 6, "cut": 2, "best": "X", "timing": t},
             "empty": {"find_ms": 450.0, "timing": t}},
            {"shape": "b", "dtype": "fp16", "direction": "W", "torch_first_ms": 60.0, "ratio_warm_vs_torch": 2.0,
             "warm": {"find_ms": 120.0, "solutions": 5, "cut": 0, "best": "Y", "timing": None},
             "empty": {"find_ms": 900.0, "timing": t}}]
    md = bc.markdown(rows, [{"config": "train48-fp32", "cudnn_first_s": 3.0, "miofind_first_s": 6.5,
                             "miofind_stats": {"finds_run": 60, "find_ms": 5000.0},
                             "miofind_empty_caches_first_s": 4.0, "cudnn_exit_s": 0.5, "miofind_exit_s": 1.25,
                             "miofind_empty_caches_exit_s": 1.5, "miofind_background_pending": 40}],
                     {"device": "H100"})
    lines = md.splitlines()
    a = next(ln for ln in lines if ln.startswith("| a | fp32 | F | 30.0 | 120.0 | 4.00 |"))
    b = next(ln for ln in lines if ln.startswith("| b | fp16 | W | 60.0 | 120.0 | 2.00 |"))
    assert a.split("|")[7].strip() == "**no**" and a.split("|")[9].strip() == "yes"    # 4x torch; 450 <= 500
    assert b.split("|")[7].strip() == "yes" and b.split("|")[9].strip() == "**no**"    # 900 > 500
    # other = 90 - 1 - 0.5 - 1.5 - 4 - 50 - 0 - 25 - 2
    assert "| a | fp32 | F | 1.0 / 0.5 / 1.5 / 4.0 / 50.0 (5.0) / 8.0 / 25.0 (3.0 + 20.0) / 2.0 / 6.0 |" in md
    assert "(answered without a benchmark)" in md
    r50 = next(ln for ln in lines if ln.startswith("| train48-fp32 |"))
    assert r50 == "| train48-fp32 | 3.00 | 6.50 | **no** | 60 | 5.00 | 4.00 | yes | 0.50 / 1.25 / 1.50 | 40 |"


def test_torch_runs_in_the_same_processes_as_the_warm_finds(bc, monkeypatch):
    """torch's first calls run in one child per layer and data type, as miofind's warm finds do (a process that ran
    other layers has loaded kernels their plans share); ``--torch-one-process`` keeps the old single child."""
    calls = []

    def fake_child(kind, rows, env, timeout, warmup=False):
        calls.append((kind, [tuple(r) for r in rows]))
        if kind == "torch":
            return [{"shape": s, "dtype": t, "direction": d, "torch_first_ms": 10.0} for s, t, d in rows]
        return [{"shape": s, "dtype": t, "direction": d, "key": f"{s}-{t}-{d}", "find_ms": 20.0} for s, t, d in rows]

    monkeypatch.setattr(bc, "run_child", fake_child)
    two = ["--out", "x", "--shapes", "r50_128_28_3x3_n16,inc_160_17_1x7_n16", "--dirs", "FB"]
    rows = bc.layers(bc.parse_args(two))
    torch_calls = [r for k, r in calls if k == "torch"]
    assert len(torch_calls) == 4 and all(len({(s, t) for s, t, _ in r}) == 1 and len(r) == 2 for r in torch_calls)
    assert len(rows) == 8 and all(r["ratio_warm_vs_torch"] == 2.0 for r in rows)
    calls.clear()
    bc.layers(bc.parse_args(two + ["--torch-one-process"]))
    assert [len(r) for k, r in calls if k == "torch"] == [8]


def test_an_unfinished_installed_cache_is_named(bc, tmp_path, capsys):
    """--installed-cache without a finished `miofind warmup` stamp (cut short or failed: session-nov27g's call 1) is
    said on stderr and above the table, since its empty-cache rows are then not fresh-install figures."""
    from miofind.warmup import STAMP_FILE

    assert bc.installed_stamp(None) is None and capsys.readouterr().err == ""
    assert bc.installed_stamp(str(tmp_path)) is None and "no finished `miofind warmup` stamp" in capsys.readouterr().err
    (tmp_path / STAMP_FILE).write_text('{"v": 1, "archs": ["sm_90"]}')
    assert bc.installed_stamp(str(tmp_path)) == {"v": 1, "archs": ["sm_90"]}
    row = [{"shape": "a", "dtype": "fp32", "direction": "F", "torch_first_ms": 10.0}]
    warn = "no finished `miofind warmup` stamp"
    assert warn in bc.markdown(row, [], {"installed_cache": True, "installed_cache_stamp": None})
    assert warn not in bc.markdown(row, [], {"installed_cache": True, "installed_cache_stamp": {"v": 1}})
    assert warn not in bc.markdown(row, [], {"installed_cache": False})


def test_the_empty_caches_child_has_an_empty_cuda_jit_cache(bc, monkeypatch):
    """A fresh install's finds run on an empty CUDA JIT cache too (CUDA_CACHE_PATH: cuFFT compiles a transform size's
    kernels when its first plan is made, 40-240 ms, kept there), and the warm child on what the empty one left, as
    with the kernel and CuPy caches."""
    import os

    seen = []

    def fake_child(kind, rows, env, timeout, warmup=False):
        if kind == "torch":
            return [{"shape": s, "dtype": t, "direction": d, "torch_first_ms": 10.0} for s, t, d in rows]
        jit = env.get("CUDA_CACHE_PATH")
        seen.append((warmup, jit, os.path.isdir(jit) and not os.listdir(jit)))
        return [{"shape": s, "dtype": t, "direction": d, "key": f"{s}-{t}-{d}", "find_ms": 20.0} for s, t, d in rows]

    monkeypatch.setattr(bc, "run_child", fake_child)
    monkeypatch.setenv("CUDA_CACHE_PATH", "/somewhere/else")
    bc.layers(bc.parse_args(["--out", "x", "--shapes", "r50_128_28_3x3_n16", "--dtypes", "fp32", "--dirs", "F"]))
    (empty_warmup, empty_jit, was_empty), (warm_warmup, warm_jit, _) = seen
    assert not empty_warmup and warm_warmup and was_empty
    assert empty_jit == warm_jit and empty_jit != "/somewhere/else"
