"""Atomic file writes: a temporary file with an unpredictable name (``tempfile.mkstemp``, created
O_EXCL and 0600) in the target's directory, written, fsynced and renamed over the target with
``os.replace``, so a reader sees the old file or the new one, never a partial one, and no other
user can guess the temporary name to plant a file or link there first.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["atomic_write", "default_file_mode", "exclusive", "stamp"]


@contextlib.contextmanager
def exclusive(path: str | os.PathLike):
    """Within: this process holds the exclusive ``flock`` of the lock file ``path`` (made if missing), waiting for
    any other holder first; released on leaving (or when the process ends)."""
    import fcntl

    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def stamp(path_or_stat) -> list[int] | None:
    """[size, mtime_ns, ctime_ns, inode, device] of a file (a path, or its ``os.stat`` result), None where it
    cannot be stat-ed: equal only while nothing wrote to the file, since the change time moves on any
    write and no tool can set it back (a restored modification time does not hide a write)."""
    if isinstance(path_or_stat, os.stat_result):
        st = path_or_stat
    else:
        try:
            st = os.stat(path_or_stat)
        except (OSError, ValueError):
            return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def default_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0666 less this process's umask."""
    try:
        with open("/proc/self/status") as f:  # Linux >= 4.7: read the umask without changing it
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | os.PathLike, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically (str is written as UTF-8 with ``\\n`` newlines).

    The file keeps mkstemp's 0600 unless ``mode`` is given. On any failure the temporary file is
    removed and ``path`` is left as it was; the OSError (or other exception) propagates.
    """
    path = os.fspath(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
