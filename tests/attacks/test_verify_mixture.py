"""The data-level check's mixture density (attacks/_verify_stats._log_mixture) against a
float64 log-sum-exp of the Gaussian kernel (scipy.special.logsumexp, no shifting tricks):
the float32 shifted product (the check's fast path) keeps the score within 1e-4 of it (relative
beyond 1), on rows near the centres (the shifted product), far from them (the per-row
maximum) and both mixed, and for Laplace noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from distpriv.attacks import _verify_stats as vs


def _reference(kind: str, w: np.ndarray, c: np.ndarray) -> np.ndarray:
    d = w[:, None, :] - c[None, :, :]
    log_k = -0.5 * np.sum(d * d, axis=2) if kind == "gaussian" else -np.sum(np.abs(d), axis=2)
    return logsumexp(log_k, axis=1) - math.log(c.shape[0])


def _frame(kind: str, m: int) -> vs._NoiseFrame:
    return vs._NoiseFrame(kind, np.eye(m), np.eye(m), np.ones(m))


@pytest.mark.parametrize(
    ("spread", "reach", "paths"),
    [
        (0.3, 1.5, {"shifted"}),  # the check's usual case: noise dominates the centres
        (0.3, 40.0, {"shifted", "maximum"}),  # some releases far from every centre
        (8.0, 3.0, {"maximum"}),  # centres spread far beyond the noise
    ],
)
def test_gaussian_mixture_matches_float64_logsumexp(spread, reach, paths):
    rng = np.random.default_rng(7)
    m = 5
    c = rng.normal(size=(700, m)) * spread + 3.0
    w = np.vstack([rng.normal(size=(900, m)) * reach + 3.0, rng.normal(size=(3, m)) * 1e-3])
    got = vs._log_mixture(_frame("gaussian", m), w, c)
    want = _reference("gaussian", w, c)
    # float32 products: 1e-4 on the usual scale, relative far out (|log density| ~ 1e3)
    err = np.abs(got - want)
    assert np.all(err <= 1e-4 * (1.0 + np.abs(want))), float(np.max(err))
    # Which path the rows took (the test covers both): the shift bound's gap.
    cc = c - c.mean(axis=0)
    rad = np.sqrt(np.sum(cc * cc, axis=1))
    norm = np.sqrt(np.sum((w - c.mean(axis=0)) ** 2, axis=1))
    gap = norm * (rad.max() + rad.min()) + 0.5 * rad.min() ** 2
    took = {"maximum"} if np.all(gap > vs._SHIFT_GAP) else {"shifted"}
    took |= {"maximum"} if np.any(gap > vs._SHIFT_GAP) else set()
    assert took == paths


def test_shifted_rows_agree_with_the_per_row_maximum():
    """The two paths are the same function: on rows where both apply they agree."""
    rng = np.random.default_rng(3)
    c = rng.normal(size=(300, 4)) * 0.5
    c -= c.mean(axis=0)
    x = rng.normal(size=(400, 4)) * 2.0
    rad = np.sqrt(np.sum(c * c, axis=1))
    norm = np.sqrt(np.sum(x * x, axis=1))
    r = rad.max()
    upper = np.where(norm >= r, norm * r - 0.5 * r * r, 0.5 * norm * norm)
    np.testing.assert_allclose(
        vs._shifted_rows(x, c, rad, upper), vs._max_shifted_rows(x, c), rtol=0, atol=1e-4
    )


def test_laplace_mixture_matches_float64_logsumexp():
    rng = np.random.default_rng(11)
    c = rng.normal(size=(200, 3)) * 0.4
    w = rng.normal(size=(300, 3)) * 2.0
    got = vs._log_mixture(_frame("laplace", 3), w, c)
    np.testing.assert_allclose(got, _reference("laplace", w, c), rtol=0, atol=1e-9)
