"""Call 7 diagnostic: a cuDNN-backed Entry's invoker (the frontend's execute, nothing of ours around it but the
pointer tuple) timed inside a model's AMP training steps, against the same invoker alone in a loop afterwards on
the same pointers. Which part of the in-step cost is the call itself.

    python diag.py OUT.json MODEL
"""
import collections
import json
import statistics
import sys
import time


def main():
    sys.path.insert(0, "bench")
    import torch
    import torchvision
    from bench_overhead import host_us

    import miofind.torch as mt
    from miofind import tiered
    from miofind.torch import _policy

    out_path, name = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    kw = dict(aux_logits=False, init_weights=True) if name == "inception_v3" else {}
    m = getattr(torchvision.models, name)(weights=None, **kw).cuda().to(memory_format=torch.channels_last)
    size = 299 if name == "inception_v3" else 224
    x = torch.randn(32, 3, size, size, device="cuda").to(memory_format=torch.channels_last)
    yl = torch.randint(0, 1000, (32,), device="cuda")
    mt.convert(m)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(m(x), yl)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    tiered.wait(600)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = collections.defaultdict(list)
    last = {}
    entries = [(k, e) for k, e in _policy._table.items() if e.solver_id.startswith("ConvCudnn") and e.invoker]
    orig = {}
    for key, e in entries:
        inv = orig[key] = e.invoker
        pc = time.perf_counter

        def timed(*a, _inv=inv, _k=key):
            t0 = pc()
            r = _inv(*a)
            times[_k].append(pc() - t0)
            last[_k] = a
            return r
        e.invoker = timed
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    rows = []
    for key, e in entries:
        inv = e.invoker = orig[key]
        if key not in last:
            continue
        a = last[key]
        alone = host_us(lambda: inv(*a), 400, torch.cuda.synchronize, burst=20)
        rows.append({"key": e.pr.problem.key(), "solver": e.solver_id, "plan": (e.pr.config or {}).get("plan"),
                     "calls_per_step": len(times[key]) / 10, "in_step_us": statistics.median(times[key]) * 1e6,
                     "alone_us": alone})
        print(json.dumps(rows[-1]), flush=True)
    ins = [r["in_step_us"] for r in rows]
    al = [r["alone_us"] for r in rows]
    summary = {"model": name, "entries": len(rows), "median_in_step_us": statistics.median(ins) if ins else None,
               "median_alone_us": statistics.median(al) if al else None}
    print(json.dumps(summary))
    json.dump({"summary": summary, "rows": rows}, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
