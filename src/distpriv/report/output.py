"""Writing reports: every file of a command appears at once, only when it has succeeded.

Temporary file in the target's folder, then a rename (atomic on POSIX); files follow the
umask (not mkstemp's 0600); errors name the option the user gave (``--out``), not the
temporary file; on any failure, Ctrl-C included, nothing is left behind.
"""

from __future__ import annotations

import contextlib
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


def check_output(
    path: str | Path, flag: str, *, overwrite: bool = True, create_parents: bool = False
) -> Path:
    """Fail before any work if ``flag``'s file cannot be written (naming ``flag``).

    With ``create_parents`` missing folders are allowed (the nearest existing one must be
    writable); they are created only by the final :func:`write_files`, so a command that
    fails leaves no empty folder behind.
    """
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise OutputError(f"{flag} {str(target)!r} is a directory")
    if create_parents:
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{flag} {str(target)!r}: folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {str(target)!r}: folder {str(parent)!r} is not writable")
    _probe(parent, target, flag)
    if not overwrite and target.exists():
        raise OutputError(
            f"{flag} {str(target)!r} already exists: a release is never overwritten (its "
            "values may be published already); choose another file"
        )
    return target


def _probe(folder: Path, target: Path, flag: str) -> None:
    """Create and remove a temporary file in ``folder``: permission bits do not tell
    (root may write anywhere ``os.access`` looks, yet not into ``/proc`` or a read-only
    mount), and a command must fail here, before it records a release, not after."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(
            f"{flag} {str(target)!r}: cannot write in folder {str(folder)!r} ({exc.strerror})"
        ) from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def _link_new(tmp: str, target: Path, flag: str) -> None:
    """Move ``tmp`` to ``target`` only if ``target`` does not exist (atomically: a hard link
    fails on an existing name, so a file that appeared since :func:`check_output` survives)."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise OutputError(
            f"{flag} {str(target)!r} already exists: distpriv never overwrites it; choose "
            "another file"
        ) from None
    except OSError:  # no hard links here (some network or FAT file systems)
        if target.exists():
            raise OutputError(
                f"{flag} {str(target)!r} already exists; choose another file"
            ) from None
        os.replace(tmp, target)


def _make_parents(folder: Path, made: list[Path]) -> None:
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for d in reversed(missing):
        d.mkdir()
        made.append(d)


def write_files(
    files: Sequence[tuple[str | Path, str, str]],
    *,
    overwrite: bool = True,
    create_parents: bool = False,
) -> None:
    """Write every ``(path, text, flag)`` through a temporary file, then rename them all:
    all or nothing (a failure after some renames removes the files this call created).

    Temporary files live in the target's folder (so the rename is atomic) and follow the
    umask; on any failure, including Ctrl-C, no temporary file is left and errors name the
    flag, not the temporary file. With ``overwrite=False`` an existing target is an error
    even if it appeared after :func:`check_output`; with ``create_parents`` missing folders
    are created here and removed again if the write fails.
    """
    temps: list[tuple[str, Path, str]] = []
    made: list[Path] = []
    placed: list[Path] = []  # targets this call created, removed again if a later one fails
    done = False
    try:
        for path, text, flag in files:
            target = Path(path)
            if create_parents:
                _make_parents(target.parent, made)
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
            existed = target.exists()
            try:
                if overwrite:
                    os.replace(tmp, target)
                else:
                    _link_new(tmp, target, flag)
            except OutputError:
                raise
            except OSError as exc:
                raise OutputError(f"{flag} {str(target)!r}: {exc.strerror}") from None
            if not existed:
                placed.append(target)
        done = True
    finally:
        for tmp, _, _ in temps:
            Path(tmp).unlink(missing_ok=True)
        if not done:
            # All or nothing: a failure (or Ctrl-C) between two renames takes back the
            # files already placed, so no command leaves half of its outputs.
            for target in placed:
                with contextlib.suppress(OSError):
                    target.unlink()
            for d in reversed(made):
                with contextlib.suppress(OSError):
                    d.rmdir()


def write_atomic(
    path: str | Path,
    text: str,
    flag: str = "--out",
    *,
    overwrite: bool = True,
    create_parents: bool = False,
) -> None:
    """Write one file atomically (see :func:`write_files`)."""
    write_files([(path, text, flag)], overwrite=overwrite, create_parents=create_parents)
