"""How long cuFFT takes to make the FFT solvers' plans (``solvers/fft_cufft.InPlacePlan``, batched in-place R2C and
C2R), per plan, in this process: a diagnosis of where a find's FFT candidate spends its preparation.

    python bench/cufft_plan_probe.py 24x40:64 24x40:64 17x24:100 ...   (HxW:batch, or L:batch for a 1D transform)

Prints one line per spec: the R2C and the C2R plan's wall ms."""
import sys
import time

import cupy


def main(argv) -> int:
    cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(0).use()
    from miofind.solvers import fft_cufft

    fft_cufft.library()
    for spec in argv:
        dims_s, batch_s = spec.split(":")
        dims = [int(v) for v in dims_s.split("x")]
        plane = 1
        for v in dims[:-1]:
            plane *= v
        plane *= dims[-1] // 2 + 1
        ms = []
        for kind in (fft_cufft.CUFFT_R2C, fft_cufft.CUFFT_C2R):
            t0 = time.perf_counter()
            fft_cufft.InPlacePlan(dims, kind, int(batch_s), plane)
            ms.append((time.perf_counter() - t0) * 1e3)
        print(f"{spec}: R2C {ms[0]:.1f} ms, C2R {ms[1]:.1f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
