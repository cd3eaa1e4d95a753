"""Every environment variable miofind honours, read in one place.

Each function reads its variables when called (nothing is cached, so a test or a long-running
process may change them) and returns the value to use, or raises a one-line ValueError naming the
variable and its bad value. Where MIOpen has a variable for the same thing, miofind accepts it
with MIOpen's values; where both are set, the ``MIOFIND_*`` one wins. ``VARIABLES`` lists them all
(the README's table is checked against it).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["VARIABLES", "EnvVar", "FIND_MODES", "FindEnforce", "find_mode", "find_enforce", "user_db_url",
           "system_db", "log_level", "kernel_cache_dir", "cudnn_plans", "cudnn_execute", "import_key", "isolate",
           "with_naive", "lt_bridge", "native", "cut_factor", "DEFAULT_CUT_FACTOR", "predict_defer", "DEFAULT_PREDICT_DEFER",
           "predict_keep", "DEFAULT_PREDICT_KEEP", "exit_wait",
           "specialize", "reference", "child_env", "QUIET"]

FIND_MODES = ("normal", "fast", "hybrid", "dynamic_hybrid", "benchmark")

# MIOpen's miopenConvolutionFindMode_t numbers (find_controls.hpp). 4 is MIOpen's deprecated
# FAST_HYBRID: MIOpen itself no longer treats it as fast or hybrid, so it runs as NORMAL there.
MIOPEN_FIND_MODE_NUMBERS = {1: "normal", 2: "fast", 3: "hybrid", 4: "normal", 5: "dynamic_hybrid"}
MIOPEN_FIND_MODE_NAMES = ("normal", "fast", "hybrid", "dynamic_hybrid")

# A level above CRITICAL: nothing is logged (MIOpen's MIOPEN_LOG_LEVEL=1, "quiet").
QUIET = logging.CRITICAL + 10
_LEVEL_NAMES = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
                "error": logging.ERROR, "critical": logging.CRITICAL, "quiet": QUIET, "off": QUIET}
# MIOPEN_LOG_LEVEL (MIOpen's DebugAndLogging docs): 0 default (4 in release builds), 1 quiet,
# 2 fatal, 3 errors, 4 warnings, 5 info, 6 detailed info, 7 trace. Python has no level below DEBUG.
MIOPEN_LOG_LEVELS = {0: logging.WARNING, 1: QUIET, 2: logging.CRITICAL, 3: logging.ERROR, 4: logging.WARNING,
                     5: logging.INFO, 6: logging.DEBUG, 7: logging.DEBUG}

_INT_RE = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class EnvVar:
    name: str
    meaning: str
    values: str
    miopen: str  # MIOpen's variable for the same thing ("" where there is none)


VARIABLES: tuple[EnvVar, ...] = (
    EnvVar("MIOFIND_FIND_MODE", "find mode when `--mode`/`mode=` is not given",
           "normal (default), fast, hybrid, dynamic_hybrid, benchmark; or MIOpen's 1-5", "MIOPEN_FIND_MODE"),
    EnvVar("MIOPEN_FIND_MODE", "MIOpen's find mode, used when MIOFIND_FIND_MODE is unset",
           "NORMAL/1, FAST/2, HYBRID/3, DYNAMIC_HYBRID/5 (any case); 4 (MIOpen's deprecated FAST_HYBRID) runs as "
           "normal, as in MIOpen", ""),
    EnvVar("MIOPEN_FIND_ENFORCE", "MIOpen's find enforcement, mapped to miofind's nearest behaviour",
           "NONE/1: no change; DB_UPDATE/2 and SEARCH_DB_UPDATE/4: find measures again (benchmark mode) and "
           "`miofind tune` re-tunes (as `--retune`); SEARCH/3: find mode normal (find never tunes: run "
           "`miofind tune`); DB_CLEAN/5: not supported (an error)", ""),
    EnvVar("MIOFIND_DB", "the user FindDB", "a SQLAlchemy URL or a file path (default: the per-user file "
           "`finddb.sqlite` in the user data directory)", "MIOPEN_USER_DB_PATH"),
    EnvVar("MIOPEN_USER_DB_PATH", "directory of MIOpen's user DBs, used when MIOFIND_DB is unset",
           "a directory; miofind keeps `miofind-finddb.sqlite` in it", ""),
    EnvVar("MIOFIND_SYSTEM_DB", "the read-only system FindDB beneath the user DB",
           "a file path, or `none` for no system DB (default: the shipped file of this GPU's architecture "
           "and nearest SM count)", ""),
    EnvVar("MIOFIND_LOG_LEVEL", "logging level on stderr (before `-v`/`-q`)",
           "debug, info, warning (default), error, critical, quiet; or MIOpen's 0-7", "MIOPEN_LOG_LEVEL"),
    EnvVar("MIOPEN_LOG_LEVEL", "MIOpen's log level, used when MIOFIND_LOG_LEVEL is unset",
           "0 default (warning), 1 quiet, 2 critical, 3 error, 4 warning, 5 info, 6 and 7 debug", ""),
    EnvVar("MIOFIND_KERNEL_CACHE", "directory of the compiled-kernel (cubin) cache",
           "a directory (default: `miofind/cubin` in the user cache directory)", "MIOPEN_CUSTOM_CACHE_DIR"),
    EnvVar("MIOPEN_CUSTOM_CACHE_DIR", "MIOpen's binary cache directory, used when MIOFIND_KERNEL_CACHE is unset",
           "a directory; miofind keeps its cubins in `miofind-cubin` inside it", ""),
    EnvVar("MIOFIND_CUDNN_PLANS", "how many cuDNN plans (in cuDNN's heuristic order) each find measures (a find "
           "that may leave work to the background measures the first two at once and the others once no find runs)",
           "a positive integer (default 8)", ""),
    EnvVar("MIOFIND_CUDNN_DEFER_RTC", "whether a find that may leave work to the background leaves cuDNN plans whose "
           "engine compiles its kernels when the plan is built (cuDNN's runtime-compiled engines, 100-300 ms each) to the "
           "configs it measures once no find runs, where other plans or solvers can answer at once: a shorter first "
           "step, but the process keeps the find's answer where the background timing (beside the running steps) does "
           "not find those plans faster",
           "0 (default: build them in the find), 1 (defer them)", ""),
    EnvVar("MIOFIND_CUDNN_PREFETCH", "what a find's miss starts at once in a thread for its cuDNN candidate while it "
           "reads the DBs and prepares its other candidates: cuDNN's heuristics asked through the backend API in one C "
           "call that releases the GIL (miofind._native), then the plans the find measures at once built (one such "
           "call each); the find's own listing then takes them; load also runs each such plan once on scratch buffers on "
           "a stream of the thread's, so that CUDA loads its kernels there (a cuDNN engine's first run in a process "
           "loads its modules, up to tens of ms) and the find waits for that before it times anything",
           "load (default: build, then each plan run once), build (no run), list (the heuristics only), off (the "
           "find lists and builds them itself)", ""),
    EnvVar("MIOFIND_FFT_PREFETCH", "whether a find's miss makes its FFT candidates' two cuFFT plans in a thread from "
           "its start (cuFFT plans a new transform size on the host for 7-16 ms in a warm process, more on an empty "
           "JIT cache), so that the find's lookup and other candidates overlap it; the candidate's preparation takes "
           "them", "1 (default), 0 (the preparation makes them)", ""),
    EnvVar("MIOFIND_CUDNN_EXECUTE", "how cuDNN plans are launched",
           "backend (default: calls from Python through the frontend's C++ binding, and native replays — "
           "miofind.torch's C++ path, prepared solutions — through the plan rebuilt on cuDNN's backend API, "
           "`cudnnBackendExecute` from C with no Python), direct (the binding alone, no native replay) or public "
           "(always the public `execute_plan_at_index`); the binding falls back to the public call on failure", ""),
    EnvVar("MIOFIND_IMPORT_KEY", "the HMAC key that signs exports (`db export --sign`) and makes a signed import "
           "trusted", "a secret of at least 16 characters, shared by the machines that exchange FindDB files "
           "(unset: imports are stored untrusted)", ""),
    EnvVar("MIOFIND_ISOLATE", "whether a find runs and verifies each candidate without a trusted record in a child "
           "process first (`miofind.isolate`), so that a sticky CUDA error cannot poison the finding process",
           "1 (always), 0 (never); unset: only for problems with a tensor of 2^30 elements or more", ""),
    EnvVar("MIOFIND_TORCH_FUSE_BIAS", "whether miofind.torch puts a convolution's bias into the forward solution's "
           "epilogue where one of miofind's own solvers fuses it (channels_last FP16/BF16; the find then chooses "
           "among the fusing solvers), or adds it with one PyTorch op", "1 (default: fuse), 0 (add)", ""),
    EnvVar("MIOFIND_WITH_NAIVE", "whether a find without an explicit solver list also times the naive reference "
           "solvers (`--with-naive`, `with_naive=`), which otherwise only verify the others (and answer where "
           "nothing else applies)", "1 (time them), 0 (default: leave them out)", ""),
    EnvVar("MIOFIND_CUT_FACTOR", "early stop of a find: a candidate whose warm-up runs (the verification run and "
           "the 2 after it), or else whose first 5 timed runs, all take at least this many times the best median so "
           "far stops being timed (and, "
           "while this is on, a solver's later config at 1.25x that solver's best; after three such cuts in a row its "
           "remaining configs, e.g. cuDNN's later plans, are not measured); it is reported as cut and "
           "unverified, and recorded in the user FindDB as cut rather than as a measured record",
           "a number of at least 1 (default 3), or 0 to time every candidate fully", ""),
    EnvVar("MIOFIND_PREDICT_DEFER", "a find on a miss leaves to the background the candidates that the learned cost "
           "model shipped next to the system DB predicts at least this many times slower than the candidate it "
           "predicts fastest (where it covers the problem and every candidate; the FFT solvers, whose cuFFT plans "
           "cost more than their measurement, from 1.3 where that is lower): they are measured once no find "
           "runs, stored, and replace the answer in miofind.torch where faster (`miofind.tiered`)",
           "a number of at least 1 (default 2), or 0 to measure every candidate at once", ""),
    EnvVar("MIOFIND_PREDICT_KEEP", "how many of a miss's candidates a find measures at once where the learned cost "
           "model covers the problem and them: cuDNN's always, and the own solvers it predicts fastest up to this many "
           "candidates in all (at least one own solver); the others, as MIOFIND_PREDICT_DEFER's, are measured in the "
           "background once no find runs, stored, and replace the answer in miofind.torch where faster",
           "an integer of at least 2 (default 3), or 0 to measure every candidate the model does not defer", ""),
    EnvVar("MIOFIND_EXIT_WAIT", "how long a process that ends gives the background jobs its finds left (deferred "
           "solvers, specialised builds, later configs: `miofind.tiered`) before it stops them; a stopped job stores "
           "nothing, and a deferred solver keeps its mark in the user FindDB, so the next process measures it. The "
           "CLI and `miofind worker` wait for every job",
           "seconds >= 0, or inf (default 0: stop at once; the job running finishes the step it is in)", ""),
    EnvVar("MIOFIND_FIND_TIMING", "what a find's and the tuner's timing measures (`miofind.harness.timed_runs`)",
           "device (default: the GPU's time of each call; the timed runs go in sets back to back behind a short spin "
           "kernel that holds the GPU while the host enqueues them, so that the CUDA events between them do not count "
           "the host's enqueueing), wall (each run alone and synchronised; the events also count the host's time "
           "before the call's first kernel starts, as before 2026-11-26; cuDNN plans, whose host path is longer, were "
           "charged more of it than miofind's launches)", ""),
    EnvVar("MIOFIND_SPECIALIZE", "how a find on a miss gets the shape-specialised kernels of solvers that have a "
           "generic build (`miofind.tiered`)", "background (default: measure the generic build at once, compile "
           "the specialised one in a background thread and keep it where faster), sync (compile the specialised "
           "build before measuring, as before generic builds), off (generic builds only)", ""),
    EnvVar("MIOFIND_REFERENCE", "how a find computes its float64 reference output (`miofind.harness.Reference`)",
           "auto (default: the naive float64 kernel until this process's naive references, where GEMMs would gain, "
           "add up to 60 ms, then float64 GEMMs per filter tap wherever the naive kernel would take 2 ms or more; "
           "the naive kernel for groups of fewer than 8 channels), gemm (always the GEMMs), naive (always the naive "
           "kernel); both GEMM choices fall back to the naive kernel where one sample's float64 temporaries exceed "
           "1 GiB", ""),
    EnvVar("MIOFIND_NATIVE", "whether kernel launches and the cuBLASLt/cuFFT calls of a prepared solution go through "
           "miofind's native extension (`miofind._native`, built at install where a C compiler is found) or through "
           "ctypes and CuPy; also whether a cost model loaded meanwhile scores its trees there or with numpy",
           "1 (default: native where built), 0 (the pure-Python path)", ""),
    EnvVar("MIOFIND_PDL", "whether the launches of a Hopper implicit-GEMM solution that may start before the one "
           "before them ends (a split's reduce kernel, waiting on the device for the partials; the next stride phase "
           "of backward data, whose pixels are disjoint) go as programmatic dependent launches (`cuLaunchKernelEx`, "
           "Hopper) or as plain launches; read when a solution's launches are first bound", "1 (default), 0", ""),
    EnvVar("MIOFIND_HOPPER_TF32", "whether the Hopper implicit-GEMM solvers take FP32 problems with TF32 math "
           "(forward, backward data). Their wgmma reads FP32 operands truncated to TF32, not rounded to nearest as "
           "cuDNN and the Ampere kernels do: each layer verifies against float64, but the bias compounds over a deep "
           "network in inference (ResNet-50 in channels_last drifted past 1e-2 of cuDNN), so they are off by default",
           "1 (offer them), 0 (default)", ""),
    EnvVar("MIOFIND_HOPPER_NCHW", "whether the Hopper implicit-GEMM solvers' NCHW wrappers are offered (rows 40-46 and 48: the "
           "channels-first operands copied channels-last in the workspace, the NHWC kernels run on the copies, the output "
           "copied back; rows 45-46 also follow MIOFIND_HOPPER_SWAP_NCHW). Off, an NCHW problem's find and DB answers "
           "leave them out, records and all",
           "1 (default), 0", ""),
    EnvVar("MIOFIND_HOPPER_SWAP_NCHW", "whether the NCHW wrappers of the swapped-operand Hopper solvers (rows 45-46, "
           "narrow layers: the channels-first operands copied channels-last in the workspace, the swapped-operand NHWC "
           "kernels run on the copies). Off, an NCHW problem's find and DB answers leave them out",
           "1 (default), 0", ""),
    EnvVar("MIOFIND_LT_BRIDGE", "whether a cuBLASLt-backed solution (im2col GEMM, Winograd) run before cuBLASLt "
           "has set itself up in the process (its first call costs about 100 ms) runs its matmuls with miofind's own "
           "plain GEMM kernel (`kernels_src/gemm_bridge.cu`, only where its binary is in the kernel cache) while "
           "background threads set cuBLASLt up and make its first query of the GEMM's own type (16-bit and TF32 "
           "types cost 18-120 ms more), or waits for cuBLASLt; never in a find's or the tuner's timing or "
           "verification, nor under a stream capture", "1 (default: bridge), 0 (wait for cuBLASLt)", ""),
    EnvVar("MIOFIND_TORCH_CPP", "whether miofind.torch's planned convolutions run their forward, and their backward "
           "as a C++ autograd node, through its C++ extension (`miofind/torch/_fast.cpp`, built against the installed "
           "PyTorch with the C++ compiler into the kernel cache: by `miofind warmup`, or on first use)",
           "background (default: use the built extension; if none is built, build it in a background process and "
           "use it once loaded), sync (build it at first use and wait), off (the Python path)", ""),
    EnvVar("MIOFIND_TORCH_HOST_US", "the host time, in microseconds, miofind.torch charges a solution its C++ path "
           "cannot launch (cuDNN plans; GEMM, Winograd and FFT off the stream they were traced on: each call goes through "
           "Python) when it chooses a "
           "problem's solution: a solution the C++ path launches is chosen over a faster one of those when its "
           "measured time is within this much (only where the C++ path is on)",
           "a number of microseconds >= 0 (default 30; 0: the fastest by measured time alone)", ""),
    EnvVar("MIOFIND_TORCH_CUDNN_HOST_US", "the host time, in microseconds, miofind.torch charges a cuDNN plan that its "
           "C++ path replays natively (`MIOFIND_CUDNN_EXECUTE=backend`: the plan rebuilt through cuDNN's backend API, "
           "its variant pack made and executed in C) over a solution whose replay is kernel launches, when it chooses "
           "a problem's solution (only where the C++ path is on and `MIOFIND_TORCH_HOST_US` is not 0)",
           "a number of microseconds >= 0 (default 8)", ""),
    EnvVar("MIOFIND_COMPILE_NICE", "how much lower the scheduling priority of miofind's compile processes is (the "
           "pool of `miofind tune`'s ahead-of-time compiles and of `miofind warmup`, the background specialised builds' "
           "pool): a find times each call with its host time, and a training step's host thread launches the "
           "kernels, so compiles running beside them must not take their CPU", "a niceness increment from 0 to 19 "
           "(default 10; 0: the same priority as the process that starts them)", ""),
    EnvVar("MIOFIND_TORCH_PRELOAD", "whether `miofind.torch.convert` starts a background thread that imports what a "
           "model's first convolution would (CuPy, the find, every solver module, the built C++ extension), so that "
           "the script's set-up after it overlaps that work (no GPU work; only where PyTorch sees a CUDA device)",
           "1 (default: preload), 0 (everything at the first convolution)", ""),
)

DEFAULT_CUT_FACTOR = 3.0
DEFAULT_PREDICT_DEFER = 2.0
DEFAULT_PREDICT_KEEP = 3


def child_env() -> dict[str, str]:
    """This process's environment for a child Python process, with this miofind's folder first on its path (the
    child imports the same miofind, installed or from a checkout)."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _get(name: str) -> str | None:
    """The variable's value stripped, or None when unset or blank."""
    v = os.environ.get(name)
    return v.strip() if v is not None and v.strip() else None


def _one_of(name: str, choices: tuple[str, ...], default: str) -> str:
    """The variable's value, lower-cased, which must be one of ``choices``; ``default`` when unset."""
    raw = _get(name)
    if raw is None:
        return default
    if raw.lower() not in choices:
        raise ValueError(f"{name}={raw!r}: expected {', '.join(choices[:-1])} or {choices[-1]}")
    return raw.lower()


def _parse_find_mode(name: str, raw: str, names: tuple[str, ...]) -> str:
    v = raw.lower()
    if v in names:
        return v
    if _INT_RE.match(v) and int(v) in MIOPEN_FIND_MODE_NUMBERS:
        return MIOPEN_FIND_MODE_NUMBERS[int(v)]
    raise ValueError(f"{name}={raw!r}: expected one of {', '.join(names)} or MIOpen's numbers 1-5")


def find_mode(default: str = "normal") -> str:
    """The find mode from the environment: ``MIOFIND_FIND_MODE``, else the mode ``MIOPEN_FIND_ENFORCE``
    implies (MIOpen runs NORMAL whenever something is enforced), else ``MIOPEN_FIND_MODE``, else
    ``default``. Names are case-insensitive; MIOpen's numbers 1-5 are accepted in both variables."""
    raw = _get("MIOFIND_FIND_MODE")
    if raw is not None:
        return _parse_find_mode("MIOFIND_FIND_MODE", raw, FIND_MODES)
    enforced = find_enforce().find_mode
    if enforced is not None:
        return enforced
    raw = _get("MIOPEN_FIND_MODE")
    if raw is not None:
        return _parse_find_mode("MIOPEN_FIND_MODE", raw, MIOPEN_FIND_MODE_NAMES)
    return default


@dataclass(frozen=True)
class FindEnforce:
    """What ``MIOPEN_FIND_ENFORCE`` asks of miofind."""

    action: str               # none, db_update, search, search_db_update
    find_mode: str | None     # the find mode it implies (None: no change)
    retune: bool              # whether `miofind tune` tunes again problems already tuned


# MIOpen's FindEnforceAction (find_controls.hpp, docs/perfdatabase): DB_UPDATE searches even where
# the PerfDB has an answer and rewrites it; SEARCH searches where MIOpen would not (miofind's find
# never tunes, so only MIOpen's "find mode becomes NORMAL when enforced" carries over).
_ENFORCE = {
    "none": FindEnforce("none", None, False),
    "db_update": FindEnforce("db_update", "benchmark", True),
    "search": FindEnforce("search", "normal", False),
    "search_db_update": FindEnforce("search_db_update", "benchmark", True),
}
_ENFORCE_NUMBERS = {1: "none", 2: "db_update", 3: "search", 4: "search_db_update", 5: "db_clean"}


def find_enforce() -> FindEnforce:
    """``MIOPEN_FIND_ENFORCE`` (names any case, or 1-5) as miofind behaviour; unset is ``none``.
    DB_CLEAN (5), which deletes user PerfDB entries in MIOpen, is refused with a ValueError."""
    raw = _get("MIOPEN_FIND_ENFORCE")
    if raw is None:
        return _ENFORCE["none"]
    v = raw.lower()
    if _INT_RE.match(v) and int(v) in _ENFORCE_NUMBERS:
        v = _ENFORCE_NUMBERS[int(v)]
    if v == "db_clean":
        raise ValueError(f"MIOPEN_FIND_ENFORCE={raw!r}: DB_CLEAN is not supported by miofind (it never deletes "
                         "tuned configs on its own; see `miofind db prune`)")
    if v not in _ENFORCE:
        raise ValueError(f"MIOPEN_FIND_ENFORCE={raw!r}: expected NONE, DB_UPDATE, SEARCH, SEARCH_DB_UPDATE or 1-4")
    return _ENFORCE[v]


def user_db_url() -> str | None:
    """The user FindDB from the environment: ``MIOFIND_DB`` as given (a SQLAlchemy URL or a file
    path), else ``<MIOPEN_USER_DB_PATH>/miofind-finddb.sqlite``, else None (the per-user default)."""
    raw = _get("MIOFIND_DB")
    if raw is not None:
        return raw
    raw = _get("MIOPEN_USER_DB_PATH")
    if raw is not None:
        d = Path(raw).expanduser()
        if d.exists() and not d.is_dir():
            raise ValueError(f"MIOPEN_USER_DB_PATH={raw!r}: not a directory")
        return str(d.absolute() / "miofind-finddb.sqlite")
    return None


def system_db() -> Path | str | None:
    """``MIOFIND_SYSTEM_DB``: None when unset (choose the shipped file by GPU), the string ``"none"``
    for no system DB (any case), else the file's Path."""
    raw = _get("MIOFIND_SYSTEM_DB")
    if raw is None:
        return None
    if raw.lower() == "none":
        return "none"
    return Path(raw).expanduser()


def _parse_level(name: str, raw: str, names: bool) -> int:
    v = raw.lower()
    if names and v in _LEVEL_NAMES:
        return _LEVEL_NAMES[v]
    if _INT_RE.match(v) and int(v) in MIOPEN_LOG_LEVELS:
        return MIOPEN_LOG_LEVELS[int(v)]
    expected = "debug, info, warning, error, critical, quiet or MIOpen's 0-7" if names else "0-7 (MIOpen's levels)"
    raise ValueError(f"{name}={raw!r}: expected {expected}")


def log_level() -> int | None:
    """The ``logging`` level from ``MIOFIND_LOG_LEVEL`` (a name or MIOpen's 0-7), else from
    ``MIOPEN_LOG_LEVEL`` (0-7 mapped as MIOpen means them: 1 quiet, 3 errors, 4 warnings, 5 info,
    6-7 debug), else None. ``QUIET`` is above every level (nothing is logged)."""
    raw = _get("MIOFIND_LOG_LEVEL")
    if raw is not None:
        return _parse_level("MIOFIND_LOG_LEVEL", raw, True)
    raw = _get("MIOPEN_LOG_LEVEL")
    if raw is not None:
        return _parse_level("MIOPEN_LOG_LEVEL", raw, False)
    return None


def kernel_cache_dir() -> Path | None:
    """The cubin cache directory from ``MIOFIND_KERNEL_CACHE``, else ``<MIOPEN_CUSTOM_CACHE_DIR>/miofind-cubin``,
    else None (the per-user cache directory)."""
    for name, sub in (("MIOFIND_KERNEL_CACHE", None), ("MIOPEN_CUSTOM_CACHE_DIR", "miofind-cubin")):
        raw = _get(name)
        if raw is not None:
            d = Path(raw).expanduser()
            if d.exists() and not d.is_dir():
                raise ValueError(f"{name}={raw!r}: not a directory")
            return d / sub if sub else d
    return None


def cudnn_plans(default: int = 8) -> int:
    """``MIOFIND_CUDNN_PLANS``: how many cuDNN plans a find measures per problem (a positive integer)."""
    raw = _get("MIOFIND_CUDNN_PLANS")
    if raw is None:
        return default
    if not _INT_RE.match(raw) or int(raw) < 1:
        raise ValueError(f"MIOFIND_CUDNN_PLANS={raw!r}: expected a positive integer")
    return int(raw)


def cudnn_execute() -> str:
    """``MIOFIND_CUDNN_EXECUTE``: ``backend`` (default; the frontend's C++ binding from Python, and native
    replays through the plan rebuilt on the backend API), ``direct`` (the binding alone, falling back to the
    public call) or ``public`` (always the public call)."""
    return _one_of("MIOFIND_CUDNN_EXECUTE", ("backend", "direct", "public"), "backend")


MIN_IMPORT_KEY = 16
SPECIALIZE = ("off", "background", "sync")


def specialize() -> str:
    """``MIOFIND_SPECIALIZE``: ``background`` (default), ``sync`` or ``off`` (miofind.tiered)."""
    return _one_of("MIOFIND_SPECIALIZE", SPECIALIZE, "background")


FIND_TIMING = ("device", "wall")


def find_timing() -> str:
    """``MIOFIND_FIND_TIMING``: ``device`` (default) or ``wall`` (miofind.harness.timed_runs)."""
    return _one_of("MIOFIND_FIND_TIMING", FIND_TIMING, "device")


TORCH_CPP = ("background", "sync", "off")


def torch_cpp() -> str:
    """``MIOFIND_TORCH_CPP``: ``background`` (default), ``sync`` or ``off`` (miofind.torch._fast)."""
    return _one_of("MIOFIND_TORCH_CPP", TORCH_CPP, "background")


def torch_host_us(default: float = 30.0) -> float:
    """``MIOFIND_TORCH_HOST_US``: microseconds of host time charged to a solution miofind.torch's C++ path cannot
    launch (miofind.torch._policy's choice)."""
    return _number("MIOFIND_TORCH_HOST_US", default, lambda v: 0 <= v < float("inf"),
                   "a number of microseconds >= 0")


def torch_cudnn_host_us(default: float = 8.0) -> float:
    """``MIOFIND_TORCH_CUDNN_HOST_US``: microseconds of host time charged to a cuDNN plan miofind.torch's C++ path
    replays natively, over a solution it replays as kernel launches (miofind.torch._policy's choice)."""
    return _number("MIOFIND_TORCH_CUDNN_HOST_US", default, lambda v: 0 <= v < float("inf"),
                   "a number of microseconds >= 0")


REFERENCES = ("auto", "gemm", "naive")


def reference() -> str:
    """``MIOFIND_REFERENCE``: how a harness computes its float64 reference (``miofind.harness.Reference``):
    ``auto`` (default: the naive kernel, or float64 GEMMs per filter tap where they gain: ``reference_kind``),
    ``gemm`` or ``naive``."""
    return _one_of("MIOFIND_REFERENCE", REFERENCES, "auto")


def isolate() -> bool | None:
    """``MIOFIND_ISOLATE``: True (1), False (0), or None when unset (the problem's size decides)."""
    raw = _get("MIOFIND_ISOLATE")
    if raw is None:
        return None
    if raw not in ("0", "1"):
        raise ValueError(f"MIOFIND_ISOLATE={raw!r}: expected 1 (check every find candidate not yet trusted in a "
                         "child process) or 0 (never)")
    return raw == "1"


def import_key() -> bytes | None:
    """``MIOFIND_IMPORT_KEY``: the HMAC-SHA256 key of signed FindDB exports (UTF-8 bytes, at least
    16), or None when unset."""
    raw = _get("MIOFIND_IMPORT_KEY")
    if raw is None:
        return None
    key = raw.encode("utf-8", "surrogateescape")
    if len(key) < MIN_IMPORT_KEY:
        raise ValueError(f"MIOFIND_IMPORT_KEY: {len(key)} bytes; expected a secret of at least {MIN_IMPORT_KEY}")
    return key


def _switch(name: str, default: bool, meaning: str) -> bool:
    """A 0/1 variable: ``default`` when unset; ValueError naming it (and what 1 means) otherwise."""
    raw = _get(name)
    if raw is None:
        return default
    if raw not in ("0", "1"):
        raise ValueError(f"{name}={raw!r}: expected 1 ({meaning}) or 0")
    return raw == "1"


def torch_fuse_bias() -> bool:
    """``MIOFIND_TORCH_FUSE_BIAS``: whether miofind.torch fuses a bias into the forward (1, unset) or adds it (0)."""
    return _switch("MIOFIND_TORCH_FUSE_BIAS", True,
                   "the bias in the forward's epilogue where a solver of miofind's fuses it; 0: one PyTorch add")


def torch_preload() -> bool:
    """``MIOFIND_TORCH_PRELOAD``: whether ``miofind.torch.convert`` preloads in the background (1, unset) or not (0)."""
    return _switch("MIOFIND_TORCH_PRELOAD", True, "imports preloaded in a background thread after convert")


def native() -> bool:
    """``MIOFIND_NATIVE``: whether the hot path may use the native extension (1, unset) or stays in Python (0)."""
    return _switch("MIOFIND_NATIVE", True, "launches through miofind._native where it is built")


def native_extension():
    """``miofind._native`` where ``native()`` allows it and it is built, else None (read at each call: a cost model's
    tables take the setting at the time they are built)."""
    if not native():
        return None
    try:
        from . import _native
    except ImportError:
        return None
    return _native


def pdl() -> bool:
    """``MIOFIND_PDL``: whether a solution's later kernel launches that may overlap the one before (a split's reduce,
    the next stride phase) go as programmatic dependent launches (1, unset) or as plain launches (0)."""
    return _switch("MIOFIND_PDL", True, "programmatic dependent launches within a solution")


def hopper_tf32() -> bool:
    """``MIOFIND_HOPPER_TF32``: whether the Hopper TF32 solvers (truncating wgmma) are offered (1) or not (0, unset)."""
    return _switch("MIOFIND_HOPPER_TF32", False, "offer the Hopper TF32 solvers")


def hopper_nchw() -> bool:
    """``MIOFIND_HOPPER_NCHW``: whether the Hopper family's NCHW wrappers are offered (1, unset) or not (0)."""
    return _switch("MIOFIND_HOPPER_NCHW", True, "offer the Hopper NCHW wrappers")


def hopper_swap_nchw() -> bool:
    """``MIOFIND_HOPPER_SWAP_NCHW``: whether the NCHW wrappers of the swapped-operand Hopper solvers (rows 45-46) are
    offered (1, unset) or not (0)."""
    return _switch("MIOFIND_HOPPER_SWAP_NCHW", True, "offer the swapped-operand Hopper NCHW wrappers")


def cudnn_defer_rtc() -> bool:
    """``MIOFIND_CUDNN_DEFER_RTC``: whether a find's first cuDNN plans skip runtime-compiled engines, left to the
    configs measured once no find runs (1), or build them in the find (0, unset)."""
    return _switch("MIOFIND_CUDNN_DEFER_RTC", False, "defer cuDNN's runtime-compiled plans")


CUDNN_PREFETCH = ("off", "list", "build", "load")


def cudnn_prefetch() -> str:
    """``MIOFIND_CUDNN_PREFETCH``: what a find's miss starts at once in a thread for its cuDNN candidate while it reads
    the DBs and prepares its other candidates: ``build`` (cuDNN's heuristics asked through the backend API in C, the
    GIL released, then the find's first plans built so), ``load`` (default: built, then each run once on scratch
    buffers so that CUDA loads its kernels in the thread: ``cudnn_base.prefetch``), ``list`` (the heuristics only) or
    ``off``."""
    return _one_of("MIOFIND_CUDNN_PREFETCH", CUDNN_PREFETCH, "load")


def fft_prefetch() -> bool:
    """``MIOFIND_FFT_PREFETCH``: whether a find's miss makes its FFT candidates' cuFFT plans in a thread from its start
    (1, unset: ``fft_cufft.prefetch_plans``), or the candidate's preparation makes them (0)."""
    return _switch("MIOFIND_FFT_PREFETCH", True, "cuFFT plans made in a thread from a find's start")


def lt_bridge() -> bool:
    """``MIOFIND_LT_BRIDGE``: whether a cuBLASLt matmul asked for before cuBLASLt is set up in the process runs on the
    bridge GEMM meanwhile (1, unset) or waits for cuBLASLt (0)."""
    return _switch("MIOFIND_LT_BRIDGE", True, "the bridge GEMM while cuBLASLt sets itself up")


def with_naive() -> bool:
    """``MIOFIND_WITH_NAIVE``: whether finds time the naive reference solvers too (1), or not (0, unset)."""
    return _switch("MIOFIND_WITH_NAIVE", False, "time the naive solvers too")


def _number(name: str, default: float, ok, expected: str) -> float:
    """A numeric variable: its value where ``ok(value)`` holds, ``default`` when unset; otherwise a ValueError
    naming the variable, its value and what is ``expected``."""
    raw = _get(name)
    if raw is None:
        return default
    try:
        v = float(raw)
    except ValueError:
        v = float("nan")
    if not ok(v):
        raise ValueError(f"{name}={raw!r}: expected {expected}")
    return v


def _factor(name: str, default: float, off: str) -> float:
    """A factor variable: a number of at least 1, or 0 (``off``); ``default`` when unset."""
    return _number(name, default, lambda v: v == 0 or 1 <= v < float("inf"), f"a number of at least 1, or 0 ({off})")


DEFAULT_COMPILE_NICE = 10


def compile_nice() -> int:
    """``MIOFIND_COMPILE_NICE``: the niceness increment of miofind's compile processes (0 to 19; default
    ``DEFAULT_COMPILE_NICE``)."""
    return int(_number("MIOFIND_COMPILE_NICE", DEFAULT_COMPILE_NICE, lambda v: 0 <= v <= 19 and v == int(v),
                       "an integer from 0 to 19"))


def cut_factor() -> float:
    """``MIOFIND_CUT_FACTOR``: the early-stop factor of a find (``DEFAULT_CUT_FACTOR`` when unset; 0: off)."""
    return _factor("MIOFIND_CUT_FACTOR", DEFAULT_CUT_FACTOR, "no early stop")


def predict_keep() -> int:
    """``MIOFIND_PREDICT_KEEP``: how many candidates a find on a miss measures at once where the cost model ranks them
    (``DEFAULT_PREDICT_KEEP`` when unset; 0: no such limit)."""
    def ok(v: float) -> bool:
        return v < float("inf") and v == int(v) and (v == 0 or v >= 2)
    return int(_number("MIOFIND_PREDICT_KEEP", DEFAULT_PREDICT_KEEP, ok, "an integer of at least 2, or 0 (no limit)"))


def exit_wait() -> float:
    """``MIOFIND_EXIT_WAIT``: the seconds an ending process gives its background jobs before it stops them (0 when
    unset; ``inf``: until they are done)."""
    return _number("MIOFIND_EXIT_WAIT", 0.0, lambda v: v >= 0, "a number of seconds >= 0, or inf")


def predict_defer() -> float:
    """``MIOFIND_PREDICT_DEFER``: how many times slower than the predicted best a find's candidate must be
    predicted to be measured in the background (``DEFAULT_PREDICT_DEFER`` when unset; 0: off)."""
    return _factor("MIOFIND_PREDICT_DEFER", DEFAULT_PREDICT_DEFER, "measure every candidate at once")
