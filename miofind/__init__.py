"""miofind: convolution solver search and tuning for NVIDIA GPUs, with a persistent FindDB.

Importing miofind needs no GPU; finding and running solutions do.
"""

__version__ = "0.1.0"

import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "solvers")) and _os.path.isfile(_os.path.join(_root, "solvers", "__init__.py")):
    # Running from a source checkout without installing: the top-level solvers/, kernels_src/ and
    # finddb/ folders are this package's subpackages (a wheel installs them inside miofind/).
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821

from .problem import ProblemDescription  # noqa: E402
from .device import NoGPUError  # noqa: E402

_API = ("find_solutions", "get_solutions", "run_solution", "clear_caches", "Solution", "FindResult")

__all__ = ["ProblemDescription", "NoGPUError", *_API, "__version__"]


def __getattr__(name):
    # The find/run API pulls in the registry and, lazily, CuPy; keep `import miofind` light.
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'miofind' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
