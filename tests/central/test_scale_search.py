"""The scale search of the exact calibration (``smallest_scale``).

It keeps the δ it has computed (the ends of the bracket are not recomputed by Brent's
method, and a start whose δ is known is not recomputed either). Checked: it never
evaluates the accountant twice at one scale and one accuracy, and its answer is the least
verified scale of an independent bisection on the strict profile, from starts below and
above the root (the bracket walks up, or down by several steps).
"""

from __future__ import annotations

import numpy as np
import pytest

import distpriv.population.exact as exact
from distpriv.population.exact import pair_deltas, search_tolerance, smallest_scale
from distpriv.querymodel import GaussianQueryModel

EPS, DELTA = 1.0, 1e-3


def _model(seed: int, m: int = 4) -> GaussianQueryModel:
    rng = np.random.default_rng(seed)
    covs = []
    for _ in range(3):
        q, _ = np.linalg.qr(rng.normal(size=(m, m)))
        covs.append((q * np.geomspace(1.0, 50.0, m)) @ q.T * 10.0 ** rng.uniform(-2, 2))
    means = rng.normal(size=(3, m)) * 3.0 * 10.0 ** rng.uniform(-1, 1, m)
    return GaussianQueryModel(means, np.stack(covs), labels=["a", "b", "c"])


def _shape(seed: int, m: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed + 100)
    a = rng.normal(size=(m, m))
    return a @ a.T / m + np.eye(m) * 0.1


def _bisect(model, shape) -> float:
    """Independent least scale: bisection on the strict profile, relative width 1e-7."""

    def ok(s: float) -> bool:
        return pair_deltas(model, s * s * shape, epsilon=EPS).worst <= DELTA

    lo, hi = 0.0, 1.0
    while not ok(hi):
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-7 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


@pytest.mark.parametrize("seed", range(3))
# Far starts (a papers' calibration many orders of magnitude off) included: the search
# must walk to the root, not refuse or stop short.
@pytest.mark.parametrize("start_factor", [1e-9, 1e-4, 0.3, 0.97, 1.5, 40.0, 1e3, 1e7, 1e12])
def test_least_verified_scale_without_repeated_evaluations(seed, start_factor, monkeypatch):
    model, shape = _model(seed), _shape(seed)
    root = _bisect(model, shape)
    calls: list[tuple[bytes, float]] = []
    real = exact.pair_deltas

    def recording(mdl, noise, *, epsilon, tol=1e-12, screen=None):
        calls.append((np.asarray(noise).tobytes(), tol))
        return real(mdl, noise, epsilon=epsilon, tol=tol, screen=screen)

    monkeypatch.setattr(exact, "pair_deltas", recording)
    scale, check = smallest_scale(
        model,
        lambda s: s * s * shape,
        epsilon=EPS,
        delta=DELTA,
        start=root * start_factor,
        name="test",
    )
    assert check.worst <= DELTA
    assert real(model, scale * scale * shape, epsilon=EPS).worst <= DELTA
    # Least up to the search's relative width (1e-5) and the bisection's.
    assert root * (1 - 1e-6) <= scale <= root * (1 + 5e-5)
    assert len(calls) == len(set(calls)), "a scale was evaluated twice at one accuracy"


def test_known_values_are_used_not_recomputed(monkeypatch):
    model, shape = _model(5), _shape(5)
    root = _bisect(model, shape)
    start = root * 1.2
    at_start = pair_deltas(model, start * start * shape, epsilon=EPS, tol=search_tolerance(DELTA))
    seen: list[float] = []
    real = exact.pair_deltas

    def recording(mdl, noise, *, epsilon, tol=1e-12, screen=None):
        seen.append(float(np.trace(noise)))
        return real(mdl, noise, epsilon=epsilon, tol=tol, screen=screen)

    monkeypatch.setattr(exact, "pair_deltas", recording)
    scale, _ = smallest_scale(
        model,
        lambda s: s * s * shape,
        epsilon=EPS,
        delta=DELTA,
        start=start,
        name="test",
        known={start: at_start.worst},
    )
    assert float(np.trace(start * start * shape)) not in seen
    assert root * (1 - 1e-6) <= scale <= root * (1 + 5e-5)
