"""Child process for the Ctrl-C test: prefetch-compile U-Net's N=32 problems, as a tune does, until
interrupted; prints "closed" once the Prefetcher is closed, then exits 130 like `miofind tune`."""

import sys
import time


def main() -> int:
    # Ctrl-C as a terminal delivers it: a process started with SIGINT ignored (a background job of a
    # non-interactive shell, such as CI run with `&`) inherits that, and Python then installs no handler
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)

    from miofind.models import model_problems
    from miofind.tuning.precompile import Prefetcher

    probs = model_problems("unet", batch=32, dtypes=("FP32",), layouts=("NHWC",))
    pre = Prefetcher(probs, "sm_90", lambda p, s: list(s.find_configs(p)) if s.tunable else [None], jobs=2)
    print("started", flush=True)
    try:
        for i in range(len(probs)):
            pre.advance(i)
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        pre.close()
        print("closed", flush=True)
    return 130


if __name__ == "__main__":
    sys.exit(main())
