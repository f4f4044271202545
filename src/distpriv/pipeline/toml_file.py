"""A TOML file of the pipeline read, and its keys checked: the one reader both kinds of file share.

Unknown keys are errors (:class:`~distpriv.errors.ConfigError`), so that a typo cannot
silently change what is protected; a misspelt key is named with the known key it most likely
misspells.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = ["check_keys", "nearest", "read_toml"]


def read_toml(path: str | Path, kind: str) -> tuple[Path, dict[str, Any]]:
    """Read and parse a TOML file; a missing file or bad TOML is a one-line ConfigError."""
    p = Path(path)
    if p.exists() and not p.is_file():  # a FIFO would block the read forever
        what = "a directory" if p.is_dir() else "not a regular file"
        raise ConfigError(f"cannot read {kind} {str(p)!r}: it is {what}")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {kind} {str(p)!r}: {exc.strerror}") from exc
    try:
        return p, tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from exc


def check_keys(
    table: dict[str, Any], allowed: set[str] | frozenset[str], where: str, path: str
) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        near = [f"{k!r} -> {m!r}" for k in unknown if (m := nearest(k, allowed, set(table)))]
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise ConfigError(
            f"{path}: unknown key(s) {', '.join(map(repr, unknown))} in {where}{hint}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def nearest(key: str, known: Iterable[str], given: Iterable[str] = ()) -> str | None:
    """The known key ``key`` most likely misspells (difflib), unless it is given too."""
    import difflib

    match = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    return match[0] if match and match[0] not in set(given) else None
