"""Session nov27k, call 7: does another Python thread's hold on the GIL inflate a timed call's device time, and does
the harness's lowered switch interval while timing (harness.prompt_gil, TIMING_SWITCH_INTERVAL) stop it? A call of 6
small CuPy kernels, each launched from Python (as an invoker's several launches are), timed by harness.timed_runs
(device timing: the hold, then events around the call) 3 warm-ups + 10 runs, 15 trials per condition: no other
thread; a busy Python thread (pure-Python loop) with the interval left at 5 ms (TIMING_SWITCH_INTERVAL patched to
0.005) or lowered (5e-5, the default); each with the re-timing of a disturbed set off (UNSTABLE_SPREAD = inf: raw
sets) and on. Prints per condition the medians' median and max, the sets over 1.5x spread, and the sets re-timed.
python3 gil.py > gil.txt"""
import statistics
import sys
import threading

import cupy

from miofind import harness

x = cupy.random.default_rng(1).standard_normal(1 << 20, dtype=cupy.float32)
y = cupy.empty_like(x)


def call():
    for i in range(6):
        cupy.multiply(x, 1.0 + i, out=y)


def busy(stop):
    while not stop.is_set():
        sum(range(2000))


def trials(n, background, interval, guard):
    harness.TIMING_SWITCH_INTERVAL = interval
    harness.UNSTABLE_SPREAD = 1.5 if guard else float("inf")
    stop = threading.Event()
    t = threading.Thread(target=busy, args=(stop,), daemon=True) if background else None
    if t:
        t.start()
    out = []
    try:
        for _ in range(n):
            out.append(harness.timed_runs(call, 3, 10))
    finally:
        stop.set()
        if t:
            t.join()
    return out


call()
cupy.cuda.get_current_stream().synchronize()
print(f"sys switch interval {sys.getswitchinterval()} s; call = 6 CuPy kernels on 2^20 floats")
print("| other thread | switch interval while timing | re-timing | median of medians us | max median us | "
      "sets over 1.5x | re-timed |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
for background, interval, guard in ((False, 5e-5, False), (True, 0.005, False), (True, 5e-5, False),
                                    (True, 0.005, True), (True, 5e-5, True), (False, 5e-5, True)):
    ts = trials(15, background, interval, guard)
    med = [t.median_ms * 1e3 for t in ts]
    spread = sum(t.q80_ms > 1.5 * t.q20_ms for t in ts)
    print(f"| {'busy Python' if background else 'none'} | {interval * 1e3:g} ms | {'on' if guard else 'off'} | "
          f"{statistics.median(med):.1f} | {max(med):.1f} | {spread} | {sum(t.retimed for t in ts)} |")
print(f"sys switch interval after {sys.getswitchinterval()} s")
