"""Data-level verification of δ(ε) on resampled f_θ."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from distpriv import (
    MechanismNotApplicableError,
    Noise,
    ParameterError,
    ParameterTypeError,
    SampledQueryModel,
    calibrate,
    gaussian_delta,
    model_query,
)
from distpriv.accounting import gaussian_pair_delta
from distpriv.attacks import verify_on_data
from distpriv.datasets import paper_split
from distpriv.experiments import ADULT_STATISTICS, INCOME_SECRET
from distpriv.modeling.lattice import detect_sample_lattice as detect_lattice
from distpriv.modeling.lattice import lattice_decoder
from distpriv.noise import secure_add


@pytest.fixture(scope="module")
def adult():
    parts = paper_split(rng=0)
    kw = dict(subset_size=100, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analytic = model_query(
            parts["modeling"], ADULT_STATISTICS, INCOME_SECRET, method="analytic", **kw
        )
        sampled = model_query(
            parts["modeling"],
            ADULT_STATISTICS,
            INCOME_SECRET,
            method="montecarlo",
            n_samples=4000,
            **kw,
        ).to_sampled()
    return analytic, sampled


def mech(name, model, epsilon=1.0, delta=1e-3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate(name, model, epsilon=epsilon, delta=delta)


def test_adult_daum_is_flagged_by_grid_decoding(adult):
    # Chen & Ohrimenko 2023 Alg. 1 (DauM) adds rank-one noise; Adult's five statistics are
    # integer counts and means of integer columns over 100 rows, so the noise-free
    # directions pin the release to one lattice point: the check must say so. The
    # decoder's tolerance is a rigorous float bound, so recovery is exact on any build.
    analytic, sampled = adult
    check = verify_on_data(sampled, mech("daum", analytic), rng=1, n_eval=1500)
    assert check.noise_rank == 1
    assert check.verdict == "violation" and not check.consistent
    assert check.recovery == 1.0
    assert check.delta_lower > 0.1  # the undefended attack's delta at eps = 1
    assert any("lattice" in n and "100.0%" in n for n in check.notes)
    for p in check.per_pair:
        assert p.tests["lattice decoding"] == p.lower
    out = check.to_dict()
    assert out["verdict"] == "violation" and out["advice"].startswith("violation")
    json.dumps(out, allow_nan=False)


def test_adult_full_rank_no_evidence_and_under_noised_flagged(adult):
    analytic, sampled = adult
    good = mech("expm-g", analytic)
    check = verify_on_data(sampled, good, rng=2, n_eval=1500)
    assert check.noise_rank == 5 and check.recovery is None
    assert check.verdict != "violation" and check.delta_lower <= 1e-3
    assert check.delta_lower <= check.delta_estimate <= check.delta_upper
    assert 1e-3 < check.detectable_delta < 0.05
    # The same shape with its covariance scaled by 0.05.
    scale = float(np.sqrt(good.noise_covariance[0, 0] * 0.05))
    bad = dataclasses.replace(
        good, name="expm-g x0.05", noise=Noise.isotropic("gaussian", good.dim, scale)
    )
    flagged = verify_on_data(sampled, bad, rng=2, n_eval=1500)
    assert flagged.verdict == "violation"
    assert flagged.delta_lower > 20 * 1e-3
    assert flagged.delta_lower <= flagged.delta_estimate


def floored(m, floor_steps, steps):
    """m's noise plus an independent diagonal floor of ``floor_steps`` grid steps."""
    if floor_steps == 0:
        return m
    extra = Noise.along("gaussian", np.eye(m.dim), floor_steps * np.asarray(steps))
    return dataclasses.replace(m, name=f"{m.name}+floor", noise=m.noise.plus(extra))


def test_lattice_decoder_with_a_noise_floor(adult):
    # The exact decoding attack extended to rank-one noise plus a floor (full-rank noise
    # at rank-one prices). With no floor it recovers every release; a floor of a grid
    # step defeats exact recovery.
    analytic, sampled = adult
    base = mech("daum", analytic)
    lattice = detect_lattice(list(sampled.samples))
    assert lattice is not None
    rates = {}
    for f in (0.0, 0.25, 1.0):
        mf = floored(base, f, lattice[1])
        check = verify_on_data(sampled, mf, rng=4, n_eval=1000, null_control=False)
        assert check.noise_rank == (1 if f == 0 else 5)
        rates[f] = check.recovery
    assert rates[0.0] == 1.0
    assert rates[0.0] >= rates[0.25] >= rates[1.0]
    assert rates[1.0] < 0.5


def test_decoder_recovers_secure_sampler_releases(adult):
    # The secure sampler rounds whitened noise to its stated grid (noise.grid_rounding);
    # the decoder's tolerance is derived from it: recovery must be exact.
    analytic, sampled = adult
    m = mech("daum", analytic)
    f = sampled.samples[0][:300]
    y = secure_add(m.noise, f)
    dec = lattice_decoder(m.noise, detect_lattice(list(sampled.samples)), np.max(np.abs(f), 0))
    got = dec.decode(y)
    assert np.all(np.abs(got - f) < 0.5 * dec.steps)


def gaussian_samples(rng, means, cov, n):
    return [rng.multivariate_normal(mu, cov, n) for mu in means]


def _exact(means, covs, noise_cov, eps):
    """Exact δ per direction (pair order of SampledQueryModel: (0, 1), then (1, 0))."""
    out = []
    for a, b in ((0, 1), (1, 0)):
        out.append(
            float(
                gaussian_pair_delta(
                    means[a], covs[a] + noise_cov, means[b], covs[b] + noise_cov, epsilon=eps
                )
            )
        )
    return out


NULLS = {
    # shared covariance, isotropic noise, delta ~ 1e-2
    "shared": (
        [[0.0, 0.0], [1.2, -0.4]],
        [[[0.5, 0.1], [0.1, 0.3]], [[0.5, 0.1], [0.1, 0.3]]],
        np.eye(2),
        0.5,
    ),
    # statistics on very different spreads (1e-3, 1, 1e3), noise narrow in one direction
    "spreads": (
        [[0.0, 0.0, 0.0], [2e-3, 0.5, 800.0]],
        [np.diag([1e-6, 1.0, 1e6]), np.diag([1.5e-6, 1.2, 0.8e6])],
        np.diag([1e-7, 1.0, 4e5]),
        1.0,
    ),
    # unequal covariances, correlated narrow noise
    "unequal": (
        [[0.0, 0.0], [0.3, 0.1]],
        [np.array([[1.0, 0.6], [0.6, 1.0]]), np.array([[1.6, 0.2], [0.2, 0.7]])],
        np.array([[0.2, 0.19], [0.19, 0.2]]),
        0.3,
    ),
}


@pytest.mark.parametrize("name", sorted(NULLS))
def test_gaussian_null_interval_contains_exact_delta(name):
    # On draws from a Gaussian model whose exact delta is known (generalised
    # chi-square, accounting.gaussian_pair_delta), the held-out estimate's interval
    # contains it, in both directions; so does the built-in null control's.
    means, covs, noise_cov, eps = NULLS[name]
    means, covs = np.asarray(means, float), np.asarray(covs, float)
    rng = np.random.default_rng(11)
    samples = SampledQueryModel(
        [
            rng.multivariate_normal(mu, c, 8000, method="eigh")
            for mu, c in zip(means, covs, strict=True)
        ]
    )
    base = mech("expm-g", _gaussian_model(means, covs.mean(axis=0)), epsilon=eps, delta=1e-2)
    vals, vecs = np.linalg.eigh(noise_cov)
    m = dataclasses.replace(base, noise=Noise.along("gaussian", vecs, np.sqrt(vals)))
    check = verify_on_data(samples, m, rng=12, n_eval=4000)
    exact = _exact(means, covs, m.noise_covariance, eps)
    assert max(exact) > 1e-3  # the nulls are not trivial
    for p, x in zip(check.per_pair, exact, strict=True):
        lo, hi = p.interval
        assert lo <= x <= hi, (name, p.pair, x, p.interval)
        assert p.lower <= x
    assert check.null is not None and check.null.covered
    # a violation is certified exactly when the truth exceeds the claim (here 1e-2)
    assert (check.verdict == "violation") <= (max(exact) > 1e-2)


def test_wrong_model_is_a_certified_violation():
    # The model says the two values differ by 1 in the first statistic; the data say 3.
    # Calibrated on the model, the noise is too small for the data: certified violation.
    rng = np.random.default_rng(13)
    cov = np.eye(2)
    model = _gaussian_model(np.array([[0.0, 0.0], [1.0, 0.0]]), cov)
    m = mech("expm-g", model, epsilon=1.0, delta=1e-3)
    data = SampledQueryModel(gaussian_samples(rng, np.array([[0.0, 0.0], [3.0, 0.0]]), cov, 6000))
    check = verify_on_data(data, m, rng=13, n_eval=3000)
    exact = _exact(
        np.array([[0.0, 0.0], [3.0, 0.0]]), np.stack([cov, cov]), m.noise_covariance, 1.0
    )
    assert check.verdict == "violation"
    assert 1e-3 < check.delta_lower <= max(exact)
    assert "do not publish" in check.advice


def _gaussian_model(means, cov):
    from distpriv import GaussianQueryModel

    return GaussianQueryModel(means, cov)


def test_rank_deficient_continuous_statistics_not_decoded():
    rng = np.random.default_rng(3)
    cov = np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.0]])
    means = np.array([[0.0, 0.0, 0.0], [3.0, 2.0, 0.0]])
    samples = SampledQueryModel(gaussian_samples(rng, means, cov, 3000))
    m = mech("daum", _gaussian_model(means, cov))
    check = verify_on_data(samples, m, rng=3, n_eval=1000)
    assert check.noise_rank == 1 and check.recovery is None
    assert check.consistent
    assert "lattice decoding" not in check.per_pair[0].tests


def test_grid_decoder_recovers_statistics():
    rng = np.random.default_rng(5)
    f = np.column_stack([rng.integers(0, 100, 500), rng.integers(3000, 5000, 500) / 100])
    u = np.array([1.0, np.sqrt(2.0)]) / np.sqrt(3.0)  # generic: a rational one repeats
    noise = Noise.along("gaussian", u.reshape(2, 1), np.array([7.0]))
    y = f + rng.normal(0, 7.0, (500, 1)) * u
    lattice = detect_lattice([f])
    assert lattice is not None
    dec = lattice_decoder(noise, lattice, np.max(np.abs(f), axis=0))
    np.testing.assert_allclose(dec.decode(y), f, atol=1e-9)
    assert detect_lattice([f + rng.normal(0, 1e-3, f.shape)]) is None
    # isotropic noise of several grid steps has no single main direction: no decoder
    assert lattice_decoder(Noise.isotropic("gaussian", 2, 7.0), lattice, np.ones(2)) is None


def test_detectable_delta_is_an_exact_binomial_power():
    import math

    from scipy.stats import binom

    from distpriv.attacks import clopper_pearson
    from distpriv.attacks.verify import detectable_delta

    d = detectable_delta(0.0, 2000, 2000, epsilon=1.0, target=1e-3, alpha=0.025)
    assert 1e-3 < d < 0.02
    # With no Q-hits the upper bound on Q(S) still costs e^eps * CP_upper(0): the first
    # count whose certified bound clears the target, reached with probability 0.8 at d.
    q_hi = clopper_pearson(0, 2000, 0.9875, "upper")
    k = next(
        k for k in range(2001) if clopper_pearson(k, 2000, 0.9875, "lower") - math.e * q_hi > 1e-3
    )
    assert abs(binom.sf(k - 1, 2000, d) - 0.8) < 1e-6
    # more draws detect smaller excesses
    assert detectable_delta(0.0, 20000, 20000, epsilon=1.0, target=1e-3, alpha=0.025) < d


def test_laplace_noise_runs_and_mixed_noise_refused():
    rng = np.random.default_rng(6)
    cov = np.eye(2) * 0.2
    means = np.array([[0.0, 0.0], [0.5, 0.5]])
    samples = SampledQueryModel(gaussian_samples(rng, means, cov, 2000))
    lap = mech("expm-l", _gaussian_model(means, cov))
    check = verify_on_data(samples, lap, rng=6, n_eval=800)
    assert check.noise_rank == 2 and check.consistent and check.null is None
    mixed = dataclasses.replace(lap, noise=lap.noise.plus(Noise.isotropic("gaussian", 2, 1.0)))
    with pytest.raises(MechanismNotApplicableError, match="laplace \\+ gaussian"):
        verify_on_data(samples, mixed)


def test_noiseless_release_of_separated_statistics_is_flagged():
    rng = np.random.default_rng(8)
    means = np.array([[0.0, 0.0], [3.0, 0.0]])
    samples = SampledQueryModel(gaussian_samples(rng, means, np.eye(2), 1000))
    m = mech("expm-g", _gaussian_model(means, np.eye(2)))
    m = dataclasses.replace(m, noise=Noise.none(2))
    check = verify_on_data(samples, m, rng=8, n_eval=500)
    # N(0, 1) vs N(3, 1) at eps = 1: delta = 0.78 (Balle & Wang); the test set certifies most
    assert check.noise_rank == 0 and check.verdict == "violation"
    assert 0.6 < check.delta_lower <= float(gaussian_delta(3.0, epsilon=m.guarantee.epsilon))
    assert any("no noise" in n for n in check.notes)
    assert check.null is not None and check.null.covered


def test_bad_input():
    rng = np.random.default_rng(7)
    means = np.array([[0.0, 0.0], [0.5, 0.5]])
    samples = SampledQueryModel(gaussian_samples(rng, means, np.eye(2), 50))
    m = mech("expm-g", _gaussian_model(means, np.eye(2)))
    with pytest.raises(ParameterTypeError, match="SampledQueryModel"):
        verify_on_data(_gaussian_model(means, np.eye(2)), m)
    with pytest.raises(ParameterTypeError, match="CalibratedMechanism"):
        verify_on_data(samples, "expm-g")
    with pytest.raises(ParameterError, match="n_eval"):
        verify_on_data(samples, m, n_eval=1)
    with pytest.raises(ParameterError, match="confidence"):
        verify_on_data(samples, m, confidence=1.0)
    tiny = SampledQueryModel([np.zeros((5, 2)), np.ones((5, 2))])
    with pytest.raises(ParameterError, match="at least 6"):
        verify_on_data(tiny, m)
    three = SampledQueryModel([np.zeros((10, 3)), np.ones((10, 3))])
    with pytest.raises(ParameterError, match="releases 2 statistics"):
        verify_on_data(three, m)


def test_optimal_g_on_very_different_spreads_is_not_flagged():
    # A case the old plug-in check flagged wrongly: optimal-g at (1, 1e-4) on statistics
    # whose spreads differ by six orders of magnitude, checked on draws from its own Gaussian model
    # (exact delta <= 1e-4). The previous plug-in estimated 16-70x the exact delta here.
    sd = np.array([1e-3, 1.0, 30.0, 1e3])
    corr = np.full((4, 4), 0.3) + 0.7 * np.eye(4)
    cov0 = corr * np.outer(sd, sd)
    r = np.sqrt(np.array([1.1, 0.95, 1.05, 0.9]))
    cov1 = cov0 * np.outer(r, r)
    means = np.stack([np.zeros(4), 0.4 * sd * np.array([1.0, -0.5, 0.8, 0.3])])
    model = _gaussian_model(means, np.stack([cov0, cov1]))
    m = mech("optimal-g", model, epsilon=1.0, delta=1e-4)
    covs = np.stack([cov0, cov1])
    exact = _exact(means, covs, m.noise_covariance, 1.0)
    assert max(exact) <= 1e-4 * (1 + 1e-6)
    rng = np.random.default_rng(17)
    samples = SampledQueryModel([rng.multivariate_normal(means[k], covs[k], 6000) for k in (0, 1)])
    check = verify_on_data(samples, m, rng=17, n_eval=3000)
    assert check.verdict != "violation"
    for p, x in zip(check.per_pair, exact, strict=True):
        assert p.interval[0] <= x <= p.interval[1]
    assert check.null.covered and abs(check.null.bias) < check.detectable_delta
