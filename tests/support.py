"""Small helpers many tests share: a call with its warnings silenced, the exact worst δ(ε)
over a Gaussian model's pairs (the reference of the population and composition tests), and
the RAND health insurance experiment's table."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pytest

from distpriv import gaussian_pair_delta

T = TypeVar("T")


def quiet(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with every warning silenced (the assumption warnings of the
    small tables and models a test builds on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def worst_pair_delta(model: Any, noise: np.ndarray, *, epsilon: float) -> float:
    """The largest exact δ(ε) over both directions of every pair of ``model`` (its
    ``pairs``, ``means``, ``covariances``) released with Gaussian noise of covariance
    ``noise`` (``gaussian_pair_delta``)."""
    out = 0.0
    for i, j in model.pairs:
        for a, b in ((i, j), (j, i)):
            d = gaussian_pair_delta(
                model.means[a],
                model.covariances[a] + noise,
                model.means[b],
                model.covariances[b] + noise,
                epsilon=epsilon,
            )
            out = max(out, float(d))
    return out


def load_randhie() -> Any:
    """The RAND health insurance experiment's table (statsmodels; the test is skipped where
    statsmodels is missing)."""
    randhie = pytest.importorskip("statsmodels.datasets.randhie")
    return randhie.load_pandas().data
