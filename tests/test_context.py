"""distpriv.util.context.run_inside: each call of the wrapped function in a fresh context."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from distpriv.util.context import run_inside


def test_each_call_enters_and_leaves_a_fresh_context_even_on_error() -> None:
    log: list[str] = []

    @contextmanager
    def ctx():
        log.append("enter")
        try:
            yield
        finally:
            log.append("exit")

    def fn(x: int, *, y: int = 0) -> int:
        """Adds."""
        log.append(f"call {x} {y}")
        if x < 0:
            raise ValueError("negative")
        return x + y

    wrapped = run_inside(ctx, fn)
    assert wrapped(1, y=2) == 3
    assert wrapped(3) == 3
    with pytest.raises(ValueError, match="negative"):
        wrapped(-1)
    assert log == [
        *("enter", "call 1 2", "exit"),
        *("enter", "call 3 0", "exit"),
        *("enter", "call -1 0", "exit"),
    ]
    assert wrapped.__name__ == "fn" and wrapped.__doc__ == "Adds."
    assert wrapped.__wrapped__ is fn  # type: ignore[attr-defined]


def test_the_library_decorators_keep_their_functions() -> None:
    from distpriv.accounting.calibration_cache import active_cache, sharing_calibration
    from distpriv.util.threads import on_one_blas_thread

    seen = []

    @sharing_calibration
    def shared() -> None:
        seen.append(active_cache())

    shared()
    shared()
    assert seen[0] is not None and seen[1] is not None and seen[0] is not seen[1]
    assert active_cache() is None
    assert on_one_blas_thread(len)("abc") == 3
