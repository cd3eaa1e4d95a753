"""One prepared call's launches stay together on a stream shared by threads (CPU: a fake invoker and runtime)."""

from __future__ import annotations

import threading
import time
import types

import miofind.invokers as inv
from miofind.problem import ProblemDescription

P = ProblemDescription.make("B", n=4, c=12, k=11, in_size=(9, 9), filter_size=3)


class Arr:
    """A device array as ``Prepared`` reads one: ``__cuda_array_interface__`` of a shape, at an address."""

    def __init__(self, shape, addr):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "data": (addr, False), "strides": None}


def test_calls_on_one_stream_never_interleave_across_solutions_and_workspace_paths(monkeypatch):
    monkeypatch.setattr(inv, "runtime", lambda: types.SimpleNamespace(getDevice=lambda: 0))
    monkeypatch.setattr(inv, "scratch", lambda n, s: (object(), 0x9000))
    inside, overlaps = [0], []

    def invoker(a, b, out, ws, stream, *extra):
        inside[0] += 1
        if inside[0] > 1:
            overlaps.append(stream)
        time.sleep(0.002)       # the launches of one call, queued one after another
        inside[0] -= 1

    # two solutions (their own workspaces) on one stream, one called with the caller's workspace
    prs = [inv.Prepared(P, "GemmBwdRest", None, invoker, 256), inv.Prepared(P, "ConvWinograd3x3F23Bwd", None, invoker, 256)]
    for pr in prs:
        pr._replay = False
    a, b, y = (Arr(s, 0x1000 * (i + 1)) for i, s in enumerate(P.io_shapes()))

    def work(i):
        for _ in range(20):
            pr = prs[i % 2]
            pr(a, b, y, stream=77, workspace=0x5000 if i % 3 == 0 else None)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    assert inv.stream_lock(77) is inv.stream_lock(77) and inv.stream_lock(77) is not inv.stream_lock(78)
