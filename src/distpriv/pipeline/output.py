"""Writing reports: every file of a command appears at once, only when it has succeeded.

Temporary file in the target's folder, then a rename (atomic on POSIX); files follow the
umask (not mkstemp's 0600); errors name the option the user gave (``--out``), not the
temporary file; on any failure, Ctrl-C included, nothing is left behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import DistPrivError

__all__ = ["OutputError", "check_output", "write_atomic", "write_files"]


class OutputError(DistPrivError):
    """An output file cannot be written (the message names the option, e.g. ``--out``)."""


def _mode() -> int:
    """File mode for new files under the process umask (mkstemp would give 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_output(path: str | Path, flag: str, *, overwrite: bool = True) -> Path:
    """Fail before any work if ``flag``'s file cannot be written (naming ``flag``)."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise OutputError(f"{flag} {str(target)!r} is a directory")
    if not parent.is_dir():
        raise OutputError(f"{flag} {str(target)!r}: folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {str(target)!r}: folder {str(parent)!r} is not writable")
    if not overwrite and target.exists():
        raise OutputError(
            f"{flag} {str(target)!r} already exists: a release is never overwritten (its "
            "values may be published already); choose another file"
        )
    return target


def write_files(files: Sequence[tuple[str | Path, str, str]]) -> None:
    """Write every ``(path, text, flag)`` through a temporary file, then rename them all.

    Temporary files live in the target's folder (so the rename is atomic) and follow the
    umask; on any failure, including Ctrl-C, no temporary file is left and errors name the
    flag, not the temporary file.
    """
    temps: list[tuple[str, Path, str]] = []
    try:
        for path, text, flag in files:
            target = Path(path)
            try:
                fd, tmp = tempfile.mkstemp(
                    dir=target.parent if str(target.parent) else ".",
                    prefix=f".{target.name}.",
                    suffix=".tmp",
                )
            except OSError as exc:
                raise OutputError(f"{flag} {str(target)!r}: {exc.strerror}") from None
            temps.append((tmp, target, flag))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(tmp, _mode())
        for tmp, target, flag in temps:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise OutputError(f"{flag} {str(target)!r}: {exc.strerror}") from None
    finally:
        for tmp, _, _ in temps:
            Path(tmp).unlink(missing_ok=True)


def write_atomic(path: str | Path, text: str, flag: str = "--out") -> None:
    """Write one file atomically (see :func:`write_files`)."""
    write_files([(path, text, flag)])
