"""calibration="exact": every Gaussian mechanism meets its target on the model as it is.

The check is independent of the library's accounting: a Monte Carlo of the privacy loss
of the two output Gaussians N(μ_θ, Σ_θ + Σ_Z), each with its own covariance (tests/central
/_mc.py, plain Cholesky solves), with ≥ 1e6 draws on the Adult model.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adult_setup import adult_income_model
from distpriv import (
    GaussianQueryModel,
    MechanismNotApplicableError,
    ParameterError,
    calibrate,
    gaussian_pair_delta,
)

from ._mc import mc_delta

GAUSSIAN = ("expm-g", "dirm-g", "eigm", "daum", "optimal-g", "apgm", "noiseless")
DELTA = 1e-3


@pytest.fixture(scope="module")
def adult_model(adult_modeling):
    # Layer 1 (exact on the model) of the paper's modelling split, taken as the
    # population as in the paper: the numbers of docs/guarantees.md §2.
    return adult_income_model(adult_modeling, population=True)


def _outputs(model, noise_cov):
    return [(model.means[t], model.covariances[t] + noise_cov) for t in range(model.n_thetas)]


def _mc_both_directions(model, noise_cov, eps, rng, n):
    out = []
    for i, j in model.pairs:
        (mi, ci), (mj, cj) = _outputs(model, noise_cov)[i], _outputs(model, noise_cov)[j]
        out.append(mc_delta(mi, ci, mj, cj, eps, rng, n))
        out.append(mc_delta(mj, cj, mi, ci, eps, rng, n))
    return out


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 5.0])
@pytest.mark.parametrize("name", GAUSSIAN)
def test_adult_meets_target_exactly(adult_model, name, epsilon):
    rng = np.random.default_rng(int(epsilon * 10) + GAUSSIAN.index(name))
    if name in ("dirm-g", "daum") and epsilon == 0.2:
        # Rank-one noise cannot hide the covariance difference in the other four
        # directions: their own delta(0.2) is 1.8e-3 > 1e-3 (Monte Carlo below), so no
        # scale meets the target and the mechanism refuses, naming the limit.
        with pytest.raises(MechanismNotApplicableError, match="no scale of its noise shape"):
            calibrate(name, adult_model, epsilon=epsilon, delta=DELTA)
        d = adult_model.mean_differences[0]
        q, _ = np.linalg.qr(np.column_stack([d, np.eye(5)[:, :4]]))
        perp = q[:, 1:]
        m0, m1 = perp.T @ adult_model.means[0], perp.T @ adult_model.means[1]
        c0 = perp.T @ adult_model.covariances[0] @ perp
        c1 = perp.T @ adult_model.covariances[1] @ perp
        est, se = mc_delta(m0, c0, m1, c1, epsilon, rng, 400_000)
        assert est - 4 * se > DELTA
        return
    if name == "noiseless":
        # The model alone does not hide the secret: refused, and rightly so (the Monte
        # Carlo of the zero-noise outputs is far above the target).
        with pytest.raises(MechanismNotApplicableError, match="exact profile"):
            calibrate(name, adult_model, epsilon=epsilon, delta=DELTA)
        mc = _mc_both_directions(adult_model, np.zeros((5, 5)), epsilon, rng, 200_000)
        assert max(e - 4 * se for e, se in mc) > DELTA
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the exact calibration has nothing to warn about
        mech = calibrate(name, adult_model, epsilon=epsilon, delta=DELTA)
    g = mech.guarantee
    assert (g.epsilon, g.delta) == (epsilon, DELTA)
    assert (g.requested_epsilon, g.requested_delta) == (None, None) and g.meets_target
    assert g.holds is True and g.calibration == "exact" and g.fallback is None
    assert [p.name for p in g.premises] == ["gaussian", "population"]
    assert "whole population" in g.premises[1].statement
    assert "skewness" in g.premises[0].detail  # the model's normality diagnostics
    assert g.to_dict()["requested_epsilon"] == epsilon
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        paper = calibrate(name, adult_model, epsilon=epsilon, delta=DELTA, calibration="analytic")
    print(
        f"\n{name:9s} eps={epsilon:<4g} E||Z||^2 exact {mech.mse():12.6g}  papers' (analytic) "
        f"{paper.mse():12.6g}  ratio {mech.mse() / paper.mse() if paper.mse() else math.inf:.4g}"
    )
    n = 1_000_000
    for est, se in _mc_both_directions(adult_model, mech.noise_covariance, epsilon, rng, n):
        # Within 4 standard errors of <= delta (3/n when no draw hit).
        assert est <= DELTA + 4 * se + 3.0 / n, (est, se)
    # The calibration is tight: at 0.98 of the scale (0.96 of the variance) the target fails.
    scale = mech.diagnostics["calibration_scale"]
    if scale > 0 and name != "optimal-g":
        from distpriv.central.exact_calibration import _family
        from distpriv.population.exact import pair_deltas

        fam, _ = _family(name, paper)
        assert pair_deltas(adult_model, fam(0.98 * scale), epsilon=epsilon).worst > DELTA


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 5.0])
def test_adult_optimal_no_noisier_than_daum(adult_model, epsilon):
    # E||Z||^2 against the papers' mechanisms' shapes: the papers' objective, stated (the
    # default weighs each statistic by its own spread, and its candidates follow it).
    opt = calibrate("optimal-g", adult_model, epsilon=epsilon, delta=DELTA, objective="l2")
    for other in ("daum", "eigm", "dirm-g", "expm-g"):
        try:
            mech = calibrate(other, adult_model, epsilon=epsilon, delta=DELTA)
        except MechanismNotApplicableError:
            assert other in ("daum", "dirm-g") and epsilon == 0.2
            continue
        assert opt.mse() <= mech.mse() * (1 + 1e-4)


def test_adult_papers_calibration_headline_is_what_holds(adult_model):
    # The papers' calibration of DauM misses delta(1) = 1e-3 on the real covariances: the
    # headline becomes the weaker verified epsilon, the target is "requested".
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate("daum", adult_model, epsilon=1.0, delta=DELTA, calibration="analytic")
    g = mech.guarantee
    assert g.requested_epsilon == 1.0 and g.requested_delta == DELTA and not g.meets_target
    assert 1.0 < g.epsilon < 1.3 and g.delta == DELTA
    assert "requested (1, 0.001)" in g.summary()
    # Thm 4.6 stays as extra information only, weaker than the headline.
    assert g.fallback is not None and g.fallback.epsilon > g.epsilon
    rng = np.random.default_rng(5)
    for est, se in _mc_both_directions(adult_model, mech.noise_covariance, g.epsilon, rng, 400_000):
        assert est <= DELTA + 4 * se
    # ... and the target itself is really missed (Monte Carlo at eps = 1).
    worst = max(
        e for e, _ in _mc_both_directions(adult_model, mech.noise_covariance, 1.0, rng, 400_000)
    )
    assert worst > DELTA


@st.composite
def unequal_models(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    m = draw(st.integers(1, 4))
    k = draw(st.integers(2, 3))
    log_cond = draw(st.floats(0.0, 10.0))
    units = 10.0 ** rng.uniform(-4, 4, m)  # statistics in units up to 1e8 apart
    covs = []
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    base = (q * np.geomspace(1.0, 10.0**log_cond, m)) @ q.T
    for _ in range(k):
        r, _ = np.linalg.qr(rng.normal(size=(m, m)))
        deform = (r * 10.0 ** rng.uniform(-0.5, 0.5, m)) @ r.T
        root = np.linalg.cholesky(base)
        c = root @ deform @ root.T
        covs.append(np.outer(units, units) * (c + c.T) / 2)
    means = rng.normal(size=(k, m)) * units * rng.uniform(0.0, 3.0)
    return GaussianQueryModel(means, np.stack(covs))


@settings(max_examples=25, deadline=None)
@given(
    model=unequal_models(),
    eps=st.sampled_from([0.3, 1.0, 3.0]),
    delta=st.sampled_from([1e-2, 1e-4]),
    name=st.sampled_from(GAUSSIAN),
)
def test_random_unequal_models_meet_target_or_refuse(model, eps, delta, name):
    try:
        mech = calibrate(name, model, epsilon=eps, delta=delta)
    except MechanismNotApplicableError as exc:
        assert name in str(exc) or "noiseless" in str(exc)
        return
    g = mech.guarantee
    assert (g.epsilon, g.delta) == (eps, delta) and g.holds is True
    rng = np.random.default_rng(0)
    outs = _outputs(model, mech.noise_covariance)
    for i, j in model.pairs:
        for (mp, cp), (mq, cq) in ((outs[i], outs[j]), (outs[j], outs[i])):
            # The public API, validated path, agrees with the calibration's check ...
            assert gaussian_pair_delta(mp, cp, mq, cq, epsilon=eps) <= delta
            # ... and an independent Monte Carlo does not contradict it.
            if np.linalg.cond(cp) < 1e12 and np.linalg.cond(cq) < 1e12:
                est, se = mc_delta(mp, cp, mq, cq, eps, rng, 50_000)
                assert est <= delta + 4 * se + 3.0 / 50_000


@pytest.mark.parametrize(
    "model",
    [
        # Statistics on scales 1e8 apart, 4x variance change on the small one.
        GaussianQueryModel(
            [[0.0, 0.0], [1e4, 1e-4]], np.stack([np.diag([1e8, 1e-8]), np.diag([1e8, 4e-8])])
        ),
        # Near-zero variance on one statistic, with a mean difference there.
        GaussianQueryModel(
            [[0.0, 0.0], [1.0, 1e-9]], np.stack([np.diag([1.0, 1e-20]), np.diag([1.1, 1e-20])])
        ),
        # Condition number 1e10, correlated.
        GaussianQueryModel(
            [[0.0, 0.0], [0.3, 0.3]],
            np.stack(
                [
                    np.array([[1.0, 1 - 1e-10], [1 - 1e-10, 1.0]]),
                    np.array([[1.0, 1 - 2e-10], [1 - 2e-10, 1.0]]),
                ]
            ),
        ),
        # Condition number 1e6 with a tiny, exactly zero-free difference.
        GaussianQueryModel(
            [[5.0, 5.0], [5.0, 5.0 + 1e-7]],
            np.stack([np.diag([1e3, 1e-3]), np.diag([1e3, 1e-3])]),
        ),
    ],
)
@pytest.mark.parametrize("name", GAUSSIAN)
def test_extreme_models_correct_or_clear_error(model, name):
    for cal in ("exact", "analytic"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mech = calibrate(name, model, epsilon=1.0, delta=1e-3, calibration=cal)
        except MechanismNotApplicableError as exc:
            assert str(exc)  # a clear, named refusal (never RuntimeError)
            continue
        g = mech.guarantee
        outs = _outputs(model, mech.noise_covariance)
        worst = max(
            gaussian_pair_delta(*outs[a], *outs[b], epsilon=g.epsilon) for a, b in ((0, 1), (1, 0))
        )
        # Whatever the calibration, the headline is verified.
        assert worst <= g.delta, (name, cal, worst, g)
        if cal == "exact":
            assert (g.epsilon, g.delta) == (1.0, 1e-3) and g.holds is True


@pytest.mark.parametrize("cond", [1e6, 1e8, 1e10])
@pytest.mark.parametrize("name", ["daum", "optimal-g"])
def test_ill_conditioned_2x2_no_internal_error(name, cond):
    w = np.array([1.0, 1.0 / cond])
    q = np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    cov = (q * w) @ q.T
    model = GaussianQueryModel([[0.0, 0.0], [1.0, 0.5]], np.stack([cov, cov * 1.05]))
    for cal in ("exact", "analytic"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech = calibrate(name, model, epsilon=1.0, delta=1e-3, calibration=cal)
        g = mech.guarantee
        outs = _outputs(model, mech.noise_covariance)
        assert gaussian_pair_delta(*outs[0], *outs[1], epsilon=g.epsilon) <= g.delta
        assert gaussian_pair_delta(*outs[1], *outs[0], epsilon=g.epsilon) <= g.delta


@pytest.mark.parametrize(
    "means, cov",
    [
        ([[1e308, 0.0], [-1e308, 0.0]], np.eye(2)),
        ([[0.0, 0.0], [1.0, 0.0]], np.eye(2) * 1e308),
        ([[0.0, 0.0], [1e200, 0.0]], np.eye(2) * 1e-200),
    ],
)
@pytest.mark.parametrize("name", GAUSSIAN)
def test_overflow_is_a_clear_error(means, cov, name):
    model = GaussianQueryModel(means, cov)
    for cal in ("exact", "analytic"):
        with pytest.raises(ParameterError, match="overflow"):
            calibrate(name, model, epsilon=1.0, delta=1e-3, calibration=cal)


# Found by CI (Hypothesis): statistics in units 1e4 apart, nearly singular covariances. EigM's
# least scale put δ(1) at 0.99997e-4 under the accountant's inversion, but the published
# Noise (rebuilt from an eigendecomposition) differed by rounding, and on it the inversion's
# two contours disagreed: the certified Rényi bound 1.19e-3 > δ. The calibration now checks
# the covariance it publishes.
_CI_MEANS = [
    [-14.530629374970962, -0.0033271425107648865, 0.00029731558336804927],
    [33.18988211229631, -0.032319828835538, 0.0005741418544971717],
]
_CI_COVS = [
    [
        [124739445.21153605, 269192.20994021796, 4275.525007272951],
        [269192.20994021796, 584.8033706312168, 9.285819470538232],
        [4275.525007272951, 9.285819470538232, 0.14744690979072006],
    ],
    [
        [250442888.89196622, 552382.1019022691, 8762.046733370506],
        [552382.1019022691, 1222.3381786288994, 19.386662581048665],
        [8762.046733370506, 19.386662581048665, 0.3074800281341352],
    ],
]


# The second CI case (the same means, the covariances about 1.22x larger): with the published
# noise re-checked, the calibration's check (one whitening shared by both directions) still
# passed while the public accountant (each direction whitened on its own) fell back to the
# Renyi bound. The checks behind a guarantee now compute each direction as the public API.
_CI_COVS_2 = [
    [
        [152333728.0517447, 329281.81101350434, 5229.46591671003],
        [329281.81101350434, 716.05519120701, 11.369226800054792],
        [5229.46591671003, 11.369226800054792, 0.18051774589343195],
    ],
    [
        [305844705.852787, 674954.857935919, 10706.306058261385],
        [674954.857935919, 1493.9408972805918, 23.694585851886117],
        [10706.306058261385, 23.694585851886117, 0.3758086780782628],
    ],
]


@pytest.mark.parametrize("covs", [_CI_COVS, _CI_COVS_2], ids=["ci1", "ci2"])
@pytest.mark.parametrize("name", GAUSSIAN)
def test_the_published_noise_is_the_verified_one(name, covs):
    model = GaussianQueryModel(np.array(_CI_MEANS), np.array(covs))
    try:
        mech = calibrate(name, model, epsilon=1.0, delta=1e-4)
    except MechanismNotApplicableError:
        return
    outs = _outputs(model, mech.noise_covariance)
    for (mp, cp), (mq, cq) in ((outs[0], outs[1]), (outs[1], outs[0])):
        assert gaussian_pair_delta(mp, cp, mq, cq, epsilon=1.0) <= 1e-4
    assert mech.diagnostics["achieved_delta"] <= 1e-4
