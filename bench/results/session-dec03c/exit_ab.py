"""Session dec03c: one fresh process's first training step of ResNet-50 at batch 48 through miofind.torch, and how
long the process took to end after it (bench_models.first_iteration's exit_s), on fresh copies of the installed
caches and an empty user DB. Usage: python exit_ab.py LABEL CONFIG KERNEL_CACHE CUPY_CACHE [VAR=VALUE ...]"""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import bench_models  # noqa: E402

label, config, kc, cupy = sys.argv[1:5]
extra = dict(a.split("=", 1) for a in sys.argv[5:])
with tempfile.TemporaryDirectory(prefix="exit_ab_") as d:
    shutil.copytree(kc, f"{d}/kc")
    shutil.copytree(cupy, f"{d}/cupy")
    env = dict(os.environ, MIOFIND_DB=f"sqlite:///{d}/user.sqlite", MIOFIND_KERNEL_CACHE=f"{d}/kc",
               CUPY_CACHE_DIR=f"{d}/cupy", **extra)
    r = bench_models.first_iteration("resnet50", config, "miofind", env)
print(json.dumps({"label": label, "config": config, "env": extra, "first_s": r["first_s"], "exit_s": r["exit_s"],
                  "process_s": r["process_s"], "background_pending": r.get("background_pending"),
                  "finds_run": r["stats"].get("finds_run"), "compile": r.get("compile")}), flush=True)
