"""PyTorch integration: convolutions run by miofind's solutions, chosen once per problem and kept
in the FindDB, so that a new process runs no benchmark (``pip install "miofind[torch]"``).

    import miofind.torch
    miofind.torch.convert(model)          # every nn.Conv1d/2d/3d, in place
    miofind.torch.fuse(model)             # optional: each conv + ReLU/GELU of a Sequential as one problem

or ``miofind.torch.conv2d(x, w, bias, stride, padding, dilation, groups)`` as
``torch.nn.functional.conv2d``. The launches are ``torch.library`` custom ops (``torch.compile``
without graph breaks, CUDA graphs), on the current torch stream, with outputs and workspaces from
PyTorch's caching allocator. ``stats()`` counts FindDB lookups and finds.

Importing this module imports torch, but neither CuPy nor the databases: they load when the first
convolution runs on the GPU, or in a background thread that ``convert`` starts (``MIOFIND_TORCH_PRELOAD``).
"""

from __future__ import annotations

try:
    import torch as _torch
except ModuleNotFoundError as e:  # pragma: no cover - depends on the environment
    raise ImportError('miofind.torch needs PyTorch: pip install "miofind[torch]" (or install torch)') from e
if getattr(_torch, "__file__", None) is None or not hasattr(_torch, "library"):
    # a folder named torch on sys.path (a namespace package), not PyTorch
    raise ImportError(f"miofind.torch needs PyTorch, but 'torch' resolves to {getattr(_torch, '__path__', '?')}")

from ._policy import clear, reset_stats, settle, stats  # noqa: E402
from .functional import conv1d, conv2d, conv3d  # noqa: E402
from .modules import Conv1d, Conv2d, Conv3d, Converted, convert, fuse, revert  # noqa: E402
from .problems import model_problems  # noqa: E402

__all__ = ["conv1d", "conv2d", "conv3d", "Conv1d", "Conv2d", "Conv3d", "convert", "fuse", "revert", "Converted",
           "stats", "reset_stats", "clear", "settle", "model_problems"]
