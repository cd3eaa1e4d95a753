"""ConvImplicitGemmHopperWrw on a few small problems against the float64 reference, for each of the two
readings of the MN-major descriptor's byte offsets (LBO_MN=1: leading = next 64-wide MN block, the
kernel's default; 0: swapped). A GPU diagnostic: prints one line per (problem, config, LBO_MN)."""

from __future__ import annotations

import dataclasses
import sys

sys.path.insert(0, "tests")


def main():
    from gpu_helpers import check_solver
    from miofind import clear_caches
    from miofind.problem import ProblemDescription
    from miofind.registry import get_solver

    wrw = get_solver("ConvImplicitGemmHopperWrw")
    orig = type(wrw).get_solution
    cases = [
        (dict(n=2, c=64, k=64, in_size=(8, 8), filter_size=1), {"BM": 64, "BN": 64, "WGS": 1, "STAGES": 3, "SPLITK": 1}),
        (dict(n=2, c=64, k=64, in_size=(8, 8), filter_size=1), {"BM": 64, "BN": 128, "WGS": 1, "STAGES": 3, "SPLITK": 1}),
        (dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1), None),
        (dict(n=2, c=40, k=72, in_size=(15, 13), filter_size=3, pads=1), {"BM": 128, "BN": 256, "WGS": 2, "STAGES": 4, "SPLITK": 3}),
    ]
    for lbo in ("1", "0"):
        def patched(self, problem, config=None, _lbo=lbo):
            sol = orig(self, problem, config)
            sol.kernels = [dataclasses.replace(k, macros=k.macros + (("LBO_MN", _lbo),)) for k in sol.kernels]
            return sol
        type(wrw).get_solution = patched
        clear_caches()      # else the prepared solutions of the first pass are reused
        for kw, cfg in cases:
            p = ProblemDescription.make("W", layout="NHWC", dtype="FP16", **kw)
            try:
                err, tol = check_solver(wrw, p, seed=3, config=cfg)
                res = f"err {err:.3g} tol {tol:.1g} {'OK' if err <= tol else 'FAIL'}"
            except Exception as e:  # noqa: BLE001 - a diagnostic reports every failure and goes on
                res = f"error {type(e).__name__}: {str(e)[:200]}"
            print(f"LBO_MN={lbo} {p.key()} {cfg or wrw.default_config(p)}: {res}", flush=True)
    type(wrw).get_solution = orig


if __name__ == "__main__":
    main()
