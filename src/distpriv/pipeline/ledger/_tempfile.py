"""The temporary file a new ledger is built in, and the sweep of ones a killed process left.

A new ledger is built in a hidden temporary file next to its path and hard-linked into place
only when complete (:mod:`.schema`, :mod:`.store`), so a refusal leaves no file. A process
killed with ``SIGKILL`` (or a power cut) between the creation and the clean-up of that
temporary file cannot remove it; the next process that builds a ledger at the same path
does.

How a stale file is told from one in use: its builder holds an exclusive ``flock`` on it for
as long as it exists (the kernel drops the lock when the process dies, however it dies), and
it is older than :data:`STALE_AFTER_S` seconds (the lock is taken right after the file is
created; the age closes that window). SQLite's own locks are POSIX record locks, which are
independent of ``flock`` on Linux, so holding one does not disturb the other. Where ``flock``
does not exist (Windows) nothing is swept: a file is never removed unless it is proven
abandoned.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ...errors import LedgerError

try:  # POSIX only
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["STALE_AFTER_S", "held_temp_ledger", "sweep_stale_temps", "temp_pattern"]

# Far longer than the few instructions between mkstemp and flock, far shorter than a day.
STALE_AFTER_S = 60.0


def ledger_directory(path: Path) -> Path:
    """The folder a new ledger at ``path`` goes into; refused at once if it cannot."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise LedgerError(f"cannot create ledger {str(path)!r}: no directory {str(parent)!r}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise LedgerError(
            f"cannot create ledger {str(path)!r}: directory {str(parent)!r} is not writable; "
            "give --ledger FILE (or [ledger] path) in a writable directory, or --no-ledger"
        )
    return parent


def temp_pattern(path: Path) -> tuple[str, str]:
    """(prefix, suffix) of the temporary files of a ledger at ``path``."""
    return f".{path.name}.", ".tmp"


def sweep_stale_temps(path: Path, *, now: float | None = None) -> list[Path]:
    """Remove the temporary files of ``path``'s ledger that their builder abandoned.

    A file is removed only if no process holds its ``flock`` and it is older than
    :data:`STALE_AFTER_S`. Errors (a file removed meanwhile, no permission) are ignored: the
    sweep is a courtesy, never a reason to refuse a release.

    Returns
    -------
    list of Path
        The files removed.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return []
    prefix, suffix = temp_pattern(path)
    parent = path.parent if str(path.parent) else Path(".")
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        candidate = parent / name
        with contextlib.suppress(OSError):
            fd = os.open(candidate, os.O_RDONLY)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its builder is alive
                if now - os.fstat(fd).st_mtime < STALE_AFTER_S:
                    continue  # just created: its builder may not hold the lock yet
                # Still the same file under that name (not replaced meanwhile)?
                if os.stat(candidate).st_ino == os.fstat(fd).st_ino:
                    os.unlink(candidate)
                    removed.append(candidate)
            finally:
                os.close(fd)
    return removed


@contextlib.contextmanager
def held_temp_ledger(path: Path) -> Iterator[str]:
    """A new empty hidden temporary file next to ``path``, locked while in use, then removed.

    Abandoned ones of earlier killed processes are swept first (:func:`sweep_stale_temps`).

    Yields
    ------
    str
        The temporary file's path; it is removed when the block exits, however it exits.
    """
    parent = ledger_directory(path)
    sweep_stale_temps(path)
    prefix, suffix = temp_pattern(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=parent)
    except OSError as exc:
        raise LedgerError(
            f"cannot create ledger {str(path)!r}: {exc.strerror}; give --ledger FILE (or "
            "[ledger] path) in a writable directory, or --no-ledger"
        ) from exc
    try:
        if fcntl is not None:
            # Held until the file is gone: a sweeper in another process keeps its hands off.
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield tmp
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        os.close(fd)
