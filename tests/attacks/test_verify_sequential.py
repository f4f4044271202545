"""The data-level check on decoded releases and with sequential drawing."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

from distpriv import (
    GaussianQueryModel,
    Noise,
    ParameterError,
    ParameterTypeError,
    SampledQueryModel,
    calibrate,
)
from distpriv.attacks import look_schedule, verify_on_data, verify_sequential

from ._gaussian_pair import G_COVS, G_MEANS, exact_delta, gaussian_draw, scaled

# Rows of n = 50 records: a, b in {0, 1}, x in {0, 1, 2}; released: Σa, Σb, mean(x), three
# grid-valued statistics (two counts and the mean of an integer column).
N_ROWS = 50
CATS = np.array([(a, b, x) for a in (0, 1) for b in (0, 1) for x in (0, 1, 2)])


def row_probs(t: float) -> np.ndarray:
    w = np.exp(t * CATS[:, 0] - t * CATS[:, 1] + t * CATS[:, 2] + 0.3 * CATS[:, 0] * CATS[:, 2])
    return w / w.sum()


def exact_pmf(p: np.ndarray) -> np.ndarray:
    """P(Σa, Σb, Σx) of N_ROWS i.i.d. rows by repeated convolution (the reference)."""
    n = N_ROWS
    g = np.zeros((n + 1, n + 1, 2 * n + 1))
    g[0, 0, 0] = 1.0
    for _ in range(n):
        h = np.zeros_like(g)
        for (a, b, x), pc in zip(CATS, p, strict=True):
            h[a:, b:, x:] += pc * g[: n + 1 - a, : n + 1 - b, : 2 * n + 1 - x]
        g = h
    return g


def draw_stats(p: np.ndarray, n: int, g: np.random.Generator) -> np.ndarray:
    s = g.multinomial(N_ROWS, p, size=n).astype(float) @ CATS
    return np.column_stack([s[:, 0], s[:, 1], s[:, 2] / N_ROWS])


def moments(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = CATS * np.array([1.0, 1.0, 1.0 / N_ROWS])
    mu = p @ v
    c = (v - mu).T @ ((v - mu) * p[:, None])
    return N_ROWS * mu, N_ROWS * c


def quiet_calibrate(name, model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate(name, model, epsilon=1.0, delta=1e-3, **kw)


@pytest.fixture(scope="module")
def reproducer():
    # A decoded release: a rank-one release (DauM, calibrated on f's Gaussian model at
    # (1, 1e-3)) of three grid-valued statistics. The decoder reads f back from every
    # release, so the release's delta is delta(f), here 6.1e-3 (> 5.8e-3).
    p0, p1 = row_probs(0.0), row_probs(0.062)
    g0, g1 = exact_pmf(p0), exact_pmf(p1)
    exact = max(
        float(np.sum(np.maximum(0.0, g0 - math.e * g1))),
        float(np.sum(np.maximum(0.0, g1 - math.e * g0))),
    )
    (m0, c0), (m1, c1) = moments(p0), moments(p1)
    mech = quiet_calibrate("daum", GaussianQueryModel(np.stack([m0, m1]), np.stack([c0, c1])))

    def draw(n, g):
        return [draw_stats(p0, n, g), draw_stats(p1, n, g)]

    return mech, draw, exact


def test_reproducer_fixed_size_misses_sequential_certifies(reproducer):
    mech, draw, exact = reproducer
    assert mech.noise_rank == 1
    assert 5.8e-3 < exact < 6.5e-3
    # The fixed-size check at 20,000 datasets per value (release --verify's size): the
    # decoder recovers every release, but the excess is not certified.
    g = np.random.default_rng(1)
    fixed = verify_on_data(SampledQueryModel(draw(20_000, g)), mech, rng=g, null_control=False)
    assert fixed.recovery == 1.0 and fixed.verdict != "violation"
    # Drawing more, on the sample budget (never on wall-clock time), certifies it.
    check = verify_sequential(
        draw, mech, rng=2, first=20_000, max_samples=160_000, max_seconds=None
    )
    assert check.verdict == "violation" and check.stopped == "certified"
    assert check.recovery == 1.0
    assert 1e-3 < check.delta_lower <= exact
    assert check.n_samples in look_schedule(20_000, 160_000) and check.max_looks == 4
    # exact decoding on the train split: the mixture density is neither scored nor chosen
    # nor the expected hits: the release reveals f, averaging over the noise gains nothing
    for p in check.per_pair:
        assert p.selected not in ("mixture density", "expected hits (half-space)")
        assert set(p.tests) <= {p.selected, "lattice decoding"}
    out = check.to_dict()
    assert out["stopped"] == "certified" and out["looks"] == check.looks
    json.dumps(out, allow_nan=False)


def test_noiseless_lattice_release_with_disjoint_supports_is_flagged():
    # f_0 even, f_1 odd in the first statistic (disjoint supports, delta = 1 exactly) but
    # close in mean: a Gaussian test sees little. Released without noise, the release is f
    # itself; the sets of lattice points certify most of delta = 1.
    def draw(k, n, g):
        a = 2 * g.binomial(50, 0.5, n) + k
        b = g.binomial(40, 0.3 + 0.02 * k, n)
        c = g.binomial(100, 0.5, n) / 100
        return np.column_stack([a, b, c]).astype(float)

    g = np.random.default_rng(3)
    s = [draw(0, 6000, g), draw(1, 6000, g)]
    model = GaussianQueryModel(
        np.stack([x.mean(0) for x in s]), np.stack([np.cov(x, rowvar=False) for x in s])
    )
    mech = dataclasses.replace(quiet_calibrate("daum", model), noise=Noise.none(3))
    check = verify_on_data(SampledQueryModel(s), mech, rng=1, n_eval=3000)
    assert check.verdict == "violation" and check.recovery == 1.0
    assert 0.5 < check.delta_lower <= 1.0
    assert all(p.selected.startswith("lattice points") for p in check.per_pair)
    assert any("no noise is added" in n for n in check.notes)


def test_look_schedule_and_bad_input(reproducer):
    assert look_schedule(20_000, 320_000) == (20_000, 40_000, 80_000, 160_000, 320_000)
    assert look_schedule(10, 25) == (10, 20, 25)
    assert look_schedule(100, 100) == (100,)
    with pytest.raises(ParameterError, match="first"):
        look_schedule(5, 100)
    with pytest.raises(ParameterError, match="max_samples"):
        look_schedule(100, 50)
    mech, draw, _ = reproducer
    with pytest.raises(ParameterTypeError, match="draw must be callable"):
        verify_sequential("draw", mech)
    with pytest.raises(ParameterTypeError, match="draw must return"):
        verify_sequential(lambda n, g: "x", mech, first=100, max_samples=100)
    with pytest.raises(ParameterError, match="max_seconds"):
        verify_sequential(draw, mech, first=100, max_samples=200, max_seconds=0.0)
    with pytest.raises(ParameterError, match="releases 3 statistics"):
        verify_sequential(lambda n, g: [np.zeros((n, 2)), np.ones((n, 2))], mech, first=100)


def test_sequential_stopping_rules_on_a_gaussian_model():
    good = quiet_calibrate("expm-g", GaussianQueryModel(G_MEANS, G_COVS))
    assert exact_delta(good) <= 1e-3 * (1 + 1e-9)
    # Four times the noise: exact delta far below the claim; the chosen sets' upper bounds
    # fall below it before the sample budget is spent.
    loud = scaled(good, 4.0)
    assert exact_delta(loud) < 1e-5
    check = verify_sequential(gaussian_draw, loud, rng=4, first=4000, max_samples=64_000)
    # (the expected-hit set's empirical-Bernstein upper bound keeps a range term of about
    # 52/n, so it falls below 1e-3 only near the budget)
    assert check.stopped == "below the target" and check.max_looks == 5
    assert check.verdict == "no evidence"
    # Exactly calibrated: no violation, it runs to the sample budget (3 looks).
    check = verify_sequential(
        gaussian_draw, good, rng=5, first=2000, max_samples=8000, null_control=True
    )
    assert check.verdict != "violation" and check.delta_lower <= exact_delta(good)
    assert check.stopped == "sample budget" and check.looks == 3 and check.n_samples == 8000
    assert check.null is not None and check.null.covered
    # A time budget that no look fits ends the check after the first look (the bounds keep
    # their Bonferroni factor over the 3 looks the sample budget allows).
    check = verify_sequential(
        gaussian_draw, good, rng=5, first=2000, max_samples=8000, max_seconds=1e-9
    )
    assert check.stopped == "time budget" and check.looks == 1 and check.max_looks == 3


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_sequential_certified_bound_never_above_the_exact_delta(seed):
    # Under-noised 20x: certified within the budget, and the bound is below the exact delta.
    good = quiet_calibrate("expm-g", GaussianQueryModel(G_MEANS, G_COVS))
    lo, hi = 1e-4, 1.0
    for _ in range(50):  # bisection on the noise scale: exact delta = 20 x 1e-3
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if exact_delta(scaled(good, mid)) > 0.02 else (lo, mid)
    bad = scaled(good, hi)
    exact = exact_delta(bad)
    assert 0.019 < exact < 0.021
    check = verify_sequential(gaussian_draw, bad, rng=seed, first=4000, max_samples=32_000)
    assert check.verdict == "violation"
    assert 1e-3 < check.delta_lower <= exact
