"""Parameter checks shared by every module (docs/architecture.md §3, "Parameters").

Each ``check_*`` returns the normalised value or raises :class:`ParameterTypeError`
(wrong type) or :class:`ParameterError` (wrong value) with a message that names the
parameter and the value. Library code never ``assert``s on user input.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from ..errors import ParameterError, ParameterTypeError

__all__ = [
    "check_array",
    "check_choice",
    "check_covariance",
    "check_delta",
    "check_epsilon",
    "check_positive_int",
    "check_privacy",
    "check_real",
    "check_rng",
    "readonly",
]

RngLike = int | np.random.Generator | None

# Relative tolerance for symmetry and for negative eigenvalues of a covariance, scaled by
# its largest absolute entry: sample covariances are PSD only up to rounding.
_COV_RTOL = 1e-10


def _short(value: object) -> str:
    """Return a short repr of ``value`` for error messages."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_real(
    value: object,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Check that ``value`` is a finite real number within optional bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(
            f"{name} must be a real number, got {type(value).__name__} {_short(value)}"
        )
    x = float(value)
    if not math.isfinite(x):
        raise ParameterError(f"{name} must be finite, got {x!r}")
    if low is not None and (x < low or (x == low and not low_inclusive)):
        op = ">=" if low_inclusive else ">"
        raise ParameterError(f"{name} must be {op} {low}, got {x!r}")
    if high is not None and (x > high or (x == high and not high_inclusive)):
        op = "<=" if high_inclusive else "<"
        raise ParameterError(f"{name} must be {op} {high}, got {x!r}")
    return x


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """ε must be finite and > 0."""
    return check_real(epsilon, name, low=0.0, low_inclusive=False)


def check_delta(delta: object, name: str = "delta", *, positive: bool = False) -> float:
    """δ must be in [0, 1) (or (0, 1) when ``positive``)."""
    return check_real(
        delta, name, low=0.0, low_inclusive=not positive, high=1.0, high_inclusive=False
    )


def check_privacy(
    epsilon: object, delta: object, *, delta_positive: bool = False
) -> tuple[float, float]:
    """Validate the pair (ε, δ); Gaussian mechanisms need ``delta_positive``."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, positive=delta_positive)
    return eps, dlt


def check_positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    """Check an integer ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(
            f"{name} must be an integer, got {type(value).__name__} {_short(value)}"
        )
    if int(value) < minimum:
        raise ParameterError(f"{name} must be >= {minimum}, got {int(value)}")
    return int(value)


def check_choice(value: object, name: str, choices: Sequence[str]) -> str:
    """Check that ``value`` is one of the strings in ``choices``."""
    if not isinstance(value, str):
        raise ParameterTypeError(
            f"{name} must be a string, got {type(value).__name__} {_short(value)}"
        )
    if value not in choices:
        raise ParameterError(
            f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}"
        )
    return value


def check_array(
    value: object,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: tuple[int | None, ...] | None = None,
    nonnegative: bool = False,
    min_size: int = 1,
) -> np.ndarray:
    """Convert ``value`` to a finite float64 array and check its dimensions.

    Parameters
    ----------
    value : array_like
        The input.
    name : str
        Parameter name used in error messages.
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.
    shape : tuple of (int or None), optional
        Required shape; ``None`` entries match any length.
    nonnegative : bool
        Reject negative entries.
    min_size : int
        Minimum number of elements.
    """
    if isinstance(value, str | bytes) or value is None:
        raise ParameterTypeError(
            f"{name} must be an array of numbers, got {type(value).__name__} {_short(value)}"
        )
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(
            f"{name} must be an array of numbers, got {_short(value)}"
        ) from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if arr.ndim not in allowed:
            want = " or ".join(str(a) for a in allowed)
            raise ParameterError(f"{name} must have {want} dimension(s), got shape {arr.shape}")
    if shape is not None and (
        arr.ndim != len(shape)
        or any(s is not None and s != a for s, a in zip(shape, arr.shape, strict=True))
    ):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ParameterError(f"{name} must have shape {want}, got {arr.shape}")
    if arr.size < min_size:
        raise ParameterError(f"{name} must have at least {min_size} element(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)].flat[0]
        raise ParameterError(f"{name} must be finite; it contains {bad!r}")
    if nonnegative and np.any(arr < 0):
        raise ParameterError(f"{name} must be non-negative; it contains {arr[arr < 0].min()!r}")
    return arr


def check_covariance(
    value: object, name: str = "covariance", *, dim: int | None = None
) -> np.ndarray:
    """Check a symmetric positive semi-definite matrix (or a stack of them).

    Accepts shape ``(m, m)`` or ``(k, m, m)``. Symmetry and PSD are checked with a
    relative tolerance of 1e-10 of the largest entry; within that tolerance the matrix is
    symmetrised (a rounding repair, not a silent change of the input's meaning).
    """
    arr = check_array(value, name, ndim=(2, 3))
    if arr.shape[-1] != arr.shape[-2]:
        raise ParameterError(f"{name} must be square, got shape {arr.shape}")
    if dim is not None and arr.shape[-1] != dim:
        raise ParameterError(
            f"{name} must be {dim}x{dim} to match the means, got shape {arr.shape}"
        )
    mats = arr.reshape(-1, arr.shape[-1], arr.shape[-1])
    sym = mats / 2 + np.swapaxes(mats, -1, -2) / 2  # no overflow near max
    # The whole stack at once (a range secret's population set: 1,520 matrices); the
    # message names the first offending matrix, as a loop over them would.
    scale = np.maximum(np.max(np.abs(mats), axis=(1, 2)), 1e-300)
    asym = np.max(np.abs(mats - np.swapaxes(mats, -1, -2)), axis=(1, 2))
    low = np.linalg.eigvalsh(sym)[:, 0] if mats.shape[-1] else np.zeros(len(mats))
    bad_sym = asym > _COV_RTOL * scale
    bad_psd = low < -_COV_RTOL * scale * mats.shape[-1]
    for idx in np.flatnonzero(bad_sym | bad_psd)[:1]:
        where = f"{name}[{idx}]" if arr.ndim == 3 else name
        if bad_sym[idx]:
            raise ParameterError(f"{where} must be symmetric; max |C - C^T| = {asym[idx]:.3g}")
        raise ParameterError(
            f"{where} must be positive semi-definite; smallest eigenvalue {low[idx]:.6g}"
        )
    return sym.reshape(arr.shape)


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """Normalise ``rng`` (None, an int seed, or a Generator) to a Generator.

    ``None`` draws fresh OS entropy; pass an int for reproducible results.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, bool) or not isinstance(rng, numbers.Integral):
        raise ParameterTypeError(
            f"{name} must be None, an int seed or a numpy.random.Generator, "
            f"got {type(rng).__name__} {_short(rng)}"
        )
    if int(rng) < 0:
        raise ParameterError(f"{name} seed must be non-negative, got {int(rng)}")
    return np.random.default_rng(int(rng))


def readonly(value: object, dtype: type | None = np.float64) -> np.ndarray:
    """A read-only copy of ``value`` (as ``dtype``; ``None`` keeps the input's dtype).

    Frozen result types store arrays this way, so that a caller cannot change them.
    """
    arr = np.array(value, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr
