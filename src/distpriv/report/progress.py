"""Progress bars for long steps: rich on stderr on a terminal, silent otherwise.

Long library functions take an optional ``progress`` callback ``(done, total) -> None``
and know nothing about terminals; the CLI makes one callback per step with
:meth:`ProgressDisplay.step`. Bars go to stderr only, and only when stderr is a terminal
and neither ``--quiet`` nor ``--json`` was given, so JSON on stdout is never mixed with
progress text (docs/architecture.md §3, CLI).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["ProgressCallback", "ProgressDisplay", "progress_enabled"]

ProgressCallback = Callable[[int, int], None]


def progress_enabled(
    *, quiet: bool = False, json: bool = False, stream: TextIO | None = None
) -> bool:
    """Whether to draw bars: stderr (or ``stream``) is a terminal, no ``--quiet``/``--json``."""
    target = sys.stderr if stream is None else stream
    if quiet or json:
        return False
    isatty = getattr(target, "isatty", None)
    return bool(isatty is not None and isatty())


def _ignore(done: int, total: int) -> None:
    """The callback of a disabled display."""


class ProgressDisplay:
    """Rich progress bars on stderr, one per step, as a context manager.

    Parameters
    ----------
    enabled : bool
        Draw bars (see :func:`progress_enabled`); when ``False`` every callback is a no-op
        and nothing is written anywhere.

    Examples
    --------
    >>> with ProgressDisplay(enabled=False) as bars:
    ...     tick = bars.step("calibrating mechanisms")
    ...     tick(1, 3)
    """

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = bool(enabled)
        self._bar: Any = None

    def __enter__(self) -> ProgressDisplay:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
                # stdout stays the command's own: a report printed there is never
                # routed through the progress console.
                redirect_stdout=False,
            )
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def step(self, description: str, total: int | None = None) -> ProgressCallback:
        """A ``(done, total)`` callback that drives one bar labelled ``description``.

        The bar appears on the first call (so a step that never reports shows nothing).
        """
        if self._bar is None:
            return _ignore
        bar = self._bar
        task: list[Any] = []

        def tick(done: int, total_now: int) -> None:
            if not task:
                task.append(bar.add_task(description, total=total_now or total))
            bar.update(task[0], completed=done, total=total_now or total)

        return tick

    def print(self, text: str) -> None:
        """Write ``text`` to stdout, above the bars when they are drawn (no torn lines)."""
        if self._bar is None:
            sys.stdout.write(text)
            return
        self._bar.stop()
        sys.stdout.write(text)
        sys.stdout.flush()
        self._bar.start()

    @contextmanager
    def phase(self, description: str) -> Iterator[None]:
        """An indeterminate (pulsing) bar for a step that cannot count its progress."""
        if self._bar is None:
            yield
            return
        task = self._bar.add_task(description, total=None)
        try:
            yield
        finally:
            self._bar.remove_task(task)
