"""miofind: convolution solver search and tuning for NVIDIA GPUs, with a persistent FindDB.

Importing miofind needs no GPU; finding and running solutions do.
"""

__version__ = "0.1.0"

from .problem import ProblemDescription  # noqa: E402
from .device import NoGPUError  # noqa: E402

__all__ = ["ProblemDescription", "NoGPUError", "find_solutions", "run_solution", "Solution", "__version__"]


def __getattr__(name):
    # The find/run API pulls in the registry and, lazily, CuPy; keep `import miofind` light.
    if name in ("find_solutions", "run_solution", "Solution", "FindResult"):
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'miofind' has no attribute {name!r}")
