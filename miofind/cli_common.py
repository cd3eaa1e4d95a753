"""What every ``miofind`` command shares: the console, one-line failures, byte formatting."""

from __future__ import annotations

import sys

import click
from rich.console import Console

console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
EXIT_NO_GPU = 2


def fail(msg: str, code: int = 1):
    """Print ``miofind: msg`` on stderr and exit with ``code`` (no traceback)."""
    click.echo(f"miofind: {msg}", err=True)
    sys.exit(code)


def fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
