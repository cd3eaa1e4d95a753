"""The ``miofind`` logger: one stderr handler, its level from ``-v``/``-q`` and the environment.

Modules log through ``logging.getLogger(__name__)`` (children of ``miofind``). As a library,
miofind attaches no handler unless asked (``configure``, or ``configure_from_env`` when
``MIOFIND_LOG_LEVEL``/``MIOPEN_LOG_LEVEL`` is set); the command line always calls ``configure``.
The level starts at the environment's (``env.log_level``, default WARNING); each ``-v`` lowers it
one step (INFO, then DEBUG), each ``-q`` raises it (ERROR, CRITICAL, then nothing).
"""

from __future__ import annotations

import logging
import sys

from . import env

__all__ = ["configure", "configure_from_env", "level_for", "LADDER", "QUIET"]

QUIET = env.QUIET
LADDER = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL, QUIET)
_FORMAT = "miofind %(levelname)s [%(name)s] %(message)s"
_DEBUG_FORMAT = "miofind %(relativeCreated)9.1f ms %(levelname)s [%(name)s] %(message)s"


class _StderrHandler(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record is emitted (click's test runner
    and redirections replace it after the handler is made)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ assigns it; the live sys.stderr is used
        pass


def level_for(verbose: int = 0, quiet: int = 0, base: int | None = None) -> int:
    """The level ``verbose`` steps below and ``quiet`` steps above ``base`` on ``LADDER`` (DEBUG ... QUIET);
    ``base`` None is WARNING, and a base between two rungs starts at the lower one."""
    base = logging.WARNING if base is None else base
    i = max((k for k, lv in enumerate(LADDER) if lv <= base), default=0)
    return LADDER[min(max(i - verbose + quiet, 0), len(LADDER) - 1)]


def _handler(logger: logging.Logger) -> logging.Handler:
    for h in logger.handlers:
        if isinstance(h, _StderrHandler):
            return h
    h = _StderrHandler()
    logger.addHandler(h)
    return h


def configure(verbose: int = 0, quiet: int = 0, level: int | None = None) -> int:
    """Attach the stderr handler to the ``miofind`` logger (once) and set its level: ``level`` if given,
    else ``level_for(verbose, quiet, env.log_level())``. Returns the level. Raises ValueError (one
    line, naming the variable) for a bad ``MIOFIND_LOG_LEVEL``/``MIOPEN_LOG_LEVEL``."""
    if level is None:
        level = level_for(verbose, quiet, env.log_level())
    logger = logging.getLogger("miofind")
    logger.setLevel(level)
    h = _handler(logger)
    h.setFormatter(logging.Formatter(_DEBUG_FORMAT if level <= logging.DEBUG else _FORMAT))
    return level


def configure_from_env() -> int | None:
    """``configure()`` if the environment sets a log level (for library use and spawned worker
    processes); otherwise leave logging alone. Returns the level set, or None."""
    level = env.log_level()
    return None if level is None else configure(level=level)
