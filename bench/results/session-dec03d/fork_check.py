"""Session dec03d: a process forked while miofind's background jobs are pending ends at once, even with
MIOFIND_EXIT_WAIT=inf (session dec03c's fork guard, checked there on the CPU only).

One process runs ResNet-50's first AMP training step at batch 48 through miofind (fresh copies of the caches given,
an empty user DB), so that its finds leave background jobs, then forks twice: a child that ends through the
interpreter's exit (sys.exit: the exit hooks run), and a multiprocessing "fork" child (a DataLoader worker's start
method). Each child has MIOFIND_EXIT_WAIT=inf. Printed as JSON: the jobs pending in the parent before and after,
each child's time from fork to reaped and its exit status. BACKEND "cudnn" runs the step through torch's cuDNN instead
(no miofind jobs): the children's exit times without miofind.

The script has no ``if __name__ == "__main__":`` guard, as many training scripts have none: call 1 (miofind's compile
pool then a spawned multiprocessing pool) printed four JSON lines, since each compile worker ran the script again.
Usage: python fork_check.py KERNEL_CACHE CUPY_CACHE [BACKEND]"""

import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
kc, cupy = sys.argv[1:3]
backend = sys.argv[3] if len(sys.argv) > 3 else "miofind"
d = tempfile.mkdtemp(prefix="fork_")
shutil.copytree(kc, f"{d}/kc")
shutil.copytree(cupy, f"{d}/cupy")
os.environ.update(MIOFIND_DB=f"sqlite:///{d}/user.sqlite", MIOFIND_KERNEL_CACHE=f"{d}/kc", CUPY_CACHE_DIR=f"{d}/cupy")

import bench_models  # noqa: E402

torch = bench_models._torch()
from miofind import tiered  # noqa: E402

train, batch, amp = bench_models.parse("train48-amp")
model = bench_models.prepare(bench_models.build("resnet50"), train, amp, backend, "resnet50")
xs, ys = bench_models.inputs("resnet50", batch, amp, 1)
step = bench_models.stepper(model, train, amp)
t0 = time.perf_counter()
step(xs[0], ys[0])
torch.cuda.synchronize()
out = {"backend": backend, "pid": os.getpid(), "first_s": time.perf_counter() - t0, "pending_before": tiered.pending()}


def child():
    os.environ["MIOFIND_EXIT_WAIT"] = "inf"


t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    child()
    sys.exit(0)     # the interpreter's exit: threading's exit hooks (miofind's among them) run here
_, status = os.waitpid(pid, 0)
out["sys_exit_child"] = {"s": time.perf_counter() - t0, "status": status}

t0 = time.perf_counter()
p = mp.get_context("fork").Process(target=child)
p.start()
p.join(120)
out["mp_fork_child"] = {"s": time.perf_counter() - t0, "exitcode": p.exitcode}
if p.is_alive():
    p.kill()
out["pending_after"] = tiered.pending()
print(json.dumps(out), flush=True)
