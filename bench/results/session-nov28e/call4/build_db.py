"""A FindDB of one model's convolutions measured on this GPU alone: every problem miofind.torch asks of torchvision's
ResNet-50 (batch 32, AMP FP16, channels-first: F, B, W) found in benchmark mode (every applicable solver but the naive
ones compiled, verified against the float64 reference and timed), into the user DB at URL, with no system DB beneath
it. Kernels are compiled first in a process pool.  python3 build_db.py URL OUT.json [tf32]
With ``tf32`` (call 6): FP32 with TF32 convolutions instead, PyTorch's default (``cudnn.allow_tf32``), NCHW."""
import json
import os
import sys
import time

os.environ["MIOFIND_SYSTEM_DB"] = "none"
os.environ["MIOFIND_SPECIALIZE"] = "sync"

from miofind import find_solutions  # noqa: E402
from miofind.device import current_device  # noqa: E402
from miofind.find import candidates, find_configs, open_dbs  # noqa: E402
from miofind.torch.problems import model_problems  # noqa: E402
from miofind.tuning.precompile import precompile, problem_kernels  # noqa: E402

def main():
    url, out = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    dev = current_device()
    tf32 = sys.argv[3:] == ["tf32"]
    probs = list(dict.fromkeys(model_problems("torchvision.models.resnet50", (32, 3, 224, 224),
                                              dtype="FP32" if tf32 else "FP16", tf32=tf32)))
    dbs = open_dbs(url, dev)
    kernels = []
    for p in probs:
        cands = [s for s in candidates(p)[0] if not s.is_reference]
        kernels += problem_kernels(p, cands, lambda s, p=p: find_configs(dbs, dev, p, s))
    done, errors = precompile(kernels, dev.arch)
    print(f"{len(probs)} problems; compiled {done} of {len(kernels)} kernels in {time.perf_counter() - t0:.1f} s, "
          f"{len(errors)} failed", flush=True)
    rows = []
    for p in probs:
        res = find_solutions(p, mode="benchmark", db=url, defer=False)
        best = [s for s in res if s.verified and not s.cut]
        rows.append({"problem": p.key(), "times": {s.solver_id: s.time_ms for s in best},
                     "failures": {f.solver_id: f"{f.stage}: {f.reason[:160]}" for f in res.failures}})
        print(p.key(), " ".join(f"{s.solver_id}={s.time_ms * 1e3:.1f}us" for s in best[:3]), flush=True)
    json.dump({"device": dev.name, "rows": rows, "seconds": time.perf_counter() - t0}, open(out, "w"), indent=1)


if __name__ == "__main__":     # the compile pool spawns processes that import this module
    main()
