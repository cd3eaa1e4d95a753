"""What every ``miofind`` command shares: the console, one-line failures, byte formatting, and
plain output (TSV, status lines on stderr) when stdout is not a terminal."""

from __future__ import annotations

import sys
from typing import Iterable, Sequence

import click
from rich.console import Console
from rich.text import Text

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


def is_terminal() -> bool:
    """Whether stdout is a terminal (rich tables) rather than a pipe or file (plain TSV)."""
    return sys.stdout.isatty()


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(int(v))
    return " ".join(str(v).split("\t")).replace("\n", " ").replace("\r", " ")


def tsv(columns: Sequence[str], rows: Iterable[Sequence], *, err: bool = False) -> None:
    """Tab-separated values: a header line of ``columns``, then one line per row, every value in full
    (None is empty, booleans 0/1; tabs and newlines inside a value become spaces)."""
    click.echo("\t".join(columns), err=err)
    for row in rows:
        click.echo("\t".join(_cell(v) for v in row), err=err)


def status(markup: str) -> None:
    """A status line beside the results: rich on a terminal's stdout; plain text on stderr otherwise, so
    piped stdout holds only the results."""
    if is_terminal():
        console.print(markup)
    else:
        click.echo(Text.from_markup(markup).plain, err=True)
