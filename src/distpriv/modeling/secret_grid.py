"""Range secrets: every value of a secret on the subset's grid within a range.

A dataset of n rows has a share of rows satisfying a predicate that is a multiple of 1/n,
so "hide the share to within ±k anywhere between a and b" (Chen & Ohrimenko 2023, Ex. 2.1
and Fig. 3, which sweeps the gap Δp) means: the values θ are every k/n in [a, b], and Ψ is
every pair of them at most k apart. The grid needs n, which the secret does not know until
the model is built: :meth:`ProportionSecret.grid` materialises it (the model builder calls
it with ``subset_size``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_real

__all__ = ["check_range", "grid_values", "within_pairs"]

# Slack of "on the grid" and "within": the config's decimals (0.2, 0.05) are not exact in
# binary, and 0.25 − 0.2 = 0.04999999999999999.
_SLACK = 1e-9


def check_range(value: object, name: str = "range", *, unit: bool = True) -> tuple[float, float]:
    """``(low, high)`` with low < high (and both in [0, 1] when ``unit``: proportions), or
    a ParameterError naming ``name``."""
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise ParameterTypeError(f"{name} must be a pair [low, high], got {value!r}")
    low, high = (0.0, 1.0) if unit else (None, None)
    lo = check_real(value[0], f"{name}[0]", low=low, high=high)
    hi = check_real(value[1], f"{name}[1]", low=low, high=high)
    if not lo < hi:
        raise ParameterError(f"{name} must have low < high, got [{lo:g}, {hi:g}]")
    return lo, hi


def grid_values(
    low: float, high: float, subset_size: int, *, name: str = "range"
) -> tuple[float, ...]:
    """Every share k/n with low ≤ k/n ≤ high (to within 1e-9), in increasing order.

    Raises
    ------
    ParameterError
        Fewer than two grid values in the range (one value protects nothing).
    """
    n = subset_size
    first = math.ceil(low * n - _SLACK)
    last = math.floor(high * n + _SLACK)
    vals = tuple(k / n for k in range(first, last + 1))
    if len(vals) < 2:
        found = "no value" if not vals else f"only the value {vals[0]:g}"
        raise ParameterError(
            f"{name} [{low:g}, {high:g}] has {found} on the grid of subset_size {n} "
            f"(multiples of 1/{n}): widen the range or use a larger subset_size"
        )
    return vals


def within_pairs(values: Sequence[float], within: float) -> tuple[tuple[float, float], ...]:
    """Every pair (a, b), a < b in the order given, with |a − b| ≤ ``within`` (Chen &
    Ohrimenko 2023, Ex. 2.1), or a ParameterError when there is none."""
    out = [
        (a, b)
        for i, a in enumerate(values)
        for b in values[i + 1 :]
        if abs(a - b) <= within + _SLACK
    ]
    if not out:
        raise ParameterError(
            f"within={within:g}: no two of the {len(values)} values "
            f"{values[0]:g} … {values[-1]:g} are within {within:g} of each other (a range's "
            "grid step is 1/subset_size)"
        )
    return tuple(out)
