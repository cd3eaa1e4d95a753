"""What a model's first convolution would import, imported in a background thread once ``convert`` has swapped a
model's convolutions (``MIOFIND_TORCH_PRELOAD``, default on).

A first training step otherwise imports CuPy (80-130 ms on an H100 host after PyTorch), miofind's find and
registry with every solver module, the cuDNN frontend (18-200 ms, where a pick is a cuDNN plan: ResNet-50 FP32's
first step imported it inside one backward-weights choice, ``bench/results/session-floor/``), and loads the built
C++ extension, all inside its first convolution (``bench/results/session-first/``). A training script's set-up
after ``convert`` (the optimizer, a data loader's first batch, a checkpoint) then overlaps that work. Nothing here touches the GPU: no device is asked (a thread's
current CUDA device is not the caller's), no context made, no library set up; a C++ extension that is not built
is not built here. Only where PyTorch sees a CUDA device. Errors are left for the first convolution to meet.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

_lock = threading.Lock()
_thread: threading.Thread | None = None


def start() -> threading.Thread | None:
    """Start the preload once per process (where it applies); the thread, or None."""
    global _thread
    from .. import env
    with _lock:
        if _thread is not None or not env.torch_preload():
            return _thread
        import torch
        if not torch.cuda.is_available():
            return None
        _thread = threading.Thread(target=_run, name="miofind-torch-preload", daemon=True)
        _thread.start()
        return _thread


def _run() -> None:
    try:
        import cupy  # noqa: F401
        from .. import api, find, tiered  # noqa: F401
        from ..registry import solvers
        solvers()           # every direction's solver modules
        from ..solvers import cudnn_base
        if cudnn_base.frontend_status()[0]:
            cudnn_base._cudnn()     # ``import cudnn``: the frontend and libcudnn's loader, no handle, no GPU work
        from . import _fast
        if _fast.use and _fast.library_path().exists():
            _fast.module()  # loads the built extension (never builds it here)
    except Exception as e:      # noqa: BLE001  the first convolution meets it again and reports it
        log.debug("miofind.torch: preload stopped (%s: %s)", type(e).__name__, e)
