"""Units do not matter: the default objective weighs each statistic's noise against its own
sampling spread, so rescaling one statistic (dollars to cents) rescales its noise by the
same factor and leaves every other statistic's noise as it was — for the mechanisms whose
shape an objective chooses (optimal-g, optimal-g-full, daum-floor) and for ``auto``'s
choice, on given models and on models built from a table with the population layer on.
``objective="l2"`` is the papers' E||Z||^2, checked against the program solved here with
cvxpy directly.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from distpriv import GaussianQueryModel, calibrate
from distpriv.accounting import max_distance
from distpriv.central import MECHANISMS, mechanism_info
from distpriv.central.objective import relative_weights
from distpriv.errors import MechanismNotApplicableError, ParameterError
from distpriv.modeling import ProportionSecret, model_query
from distpriv.noise import unit_free_rank
from distpriv.pipeline.stages.calibrate import choose_for_table, choose_mechanism

EPS, DELTA = 1.0, 1e-3
FACTOR = 100.0  # dollars to cents
# Calibration tolerance: the exact search brackets its scale to 1e-5 relative
# (central/exact.py, _SCALE_RTOL); the eigen-decomposition of a noise covariance whose
# statistics' variances span 10^12 costs a few 1e-6 on the smallest (measured ≤ 2e-6).
RTOL = 1e-5


def _model(seed: int, m: int = 5, span: float = 1e4, cond: float = 1.0, k_scale=None):
    """Two hypotheses with unequal covariances, statistics in units spanning ``span``;
    ``cond`` > 1 makes the correlation matrix ill-conditioned. ``k_scale``: statistic
    rescaled by FACTOR (the same population in other units)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(m, m))
    corr = a @ a.T / m + np.eye(m) / cond
    corr2 = corr + 0.1 * np.diag(rng.uniform(size=m))
    mu = np.vstack([np.zeros(m), 0.6 * rng.normal(size=m)])
    units = np.logspace(0, math.log10(span), m)[rng.permutation(m)]
    if k_scale is not None:
        units[k_scale] *= FACTOR
    return GaussianQueryModel(mu * units, np.stack([corr, corr2]) * np.outer(units, units))


CASES = [(0, 1.0), (1, 1.0), (2, 1e4)]  # (seed, ill-conditioning of the correlations)
NAN = [math.nan] * 5  # no grid: the floored mechanisms' continuous floor
SHAPED = ("optimal-g", "optimal-g-full", "daum-floor")


def _sd(mech) -> np.ndarray:
    return np.sqrt(np.diag(mech.noise_covariance))


def _assert_only_k_rescaled(before: np.ndarray, after: np.ndarray, k: int) -> None:
    expected = before.copy()
    expected[k] *= FACTOR
    np.testing.assert_allclose(after, expected, rtol=RTOL)


def _calibrate(name: str, model) -> object:
    opts = {"lattice": NAN} if "lattice" in mechanism_info(name).options else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate(name, model, epsilon=EPS, delta=DELTA, **opts)


@pytest.mark.parametrize(("seed", "cond"), CASES)
@pytest.mark.parametrize("name", SHAPED)
def test_rescaling_one_statistic_rescales_only_its_noise(name, seed, cond):
    k = seed % 5
    try:
        before = _sd(_calibrate(name, _model(seed, cond=cond)))
    except MechanismNotApplicableError:
        # A shape that cannot meet the target (daum-floor's one direction on the
        # ill-conditioned model) cannot in cents either.
        with pytest.raises(MechanismNotApplicableError):
            _calibrate(name, _model(seed, cond=cond, k_scale=k))
        return
    after = _sd(_calibrate(name, _model(seed, cond=cond, k_scale=k)))
    _assert_only_k_rescaled(before, after, k)


def test_the_papers_objective_is_not_unit_free():
    # The same test fails for E||Z||^2 (the default before): there the largest unit sets
    # every statistic's noise, so cents change the others' noise too.
    opts = {"objective": "l2"}
    before = calibrate("optimal-g", _model(0), epsilon=EPS, delta=DELTA, **opts)
    after = calibrate("optimal-g", _model(0, k_scale=0), epsilon=EPS, delta=DELTA, **opts)
    others = np.arange(5) != 0
    assert np.max(np.abs(_sd(after)[others] / _sd(before)[others] - 1)) > 1e-2


@pytest.mark.parametrize(("seed", "cond"), CASES)
def test_auto_choice_and_noise_do_not_depend_on_units(seed, cond):
    lattice = {n: {"lattice": NAN} for n in MECHANISMS if "lattice" in mechanism_info(n).options}
    k = (seed + 2) % 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = choose_mechanism(_model(seed, cond=cond), epsilon=EPS, delta=DELTA, options=lattice)
        b = choose_mechanism(
            _model(seed, cond=cond, k_scale=k), epsilon=EPS, delta=DELTA, options=lattice
        )
    assert a.name == b.name and a.objective == "relative"
    _assert_only_k_rescaled(_sd(a.mechanism), _sd(b.mechanism), k)
    # The criterion is unit-free: the chosen error is the same number in both units
    # (expm-g's is not: its σ²I weighs a statistic in cents 10^4 times more).
    best = {c.mechanism: c.mse for c in b.candidates}
    assert best[b.name] == pytest.approx(
        {c.mechanism: c.mse for c in a.candidates}[a.name], rel=RTOL
    )
    assert a.to_dict()["objective"] == "relative"


def _frame(factor: float, seed: int = 7, n: int = 3000) -> pd.DataFrame:
    """Five statistics whose units differ by 10^4: a price (heavy-tailed, in dollars or
    cents), a score, a count, an average of an integer column, a share."""
    rng = np.random.default_rng(seed)
    flag = rng.random(n) < 0.35
    return pd.DataFrame(
        {
            "flag": flag.astype(int),
            "price": np.round(rng.lognormal(10 + 0.3 * flag, 0.8, n), 2) * factor,
            "score": rng.normal(0.5 + 0.05 * flag, 0.2, n),
            "visits": rng.poisson(2 + flag, n),
            "smoker": (rng.random(n) < 0.2 + 0.15 * flag).astype(int),
            "member": (rng.random(n) < 0.5 + 0.1 * flag).astype(int),
        }
    )


STATS = {
    "avg_price": "avg(price)",
    "avg_score": "avg(score)",
    "avg_visits": "avg(visits)",
    "n_smokers": "count_if(smoker = 1)",
    "share_members": "avg(member)",
}


@pytest.fixture(scope="module")
def tables():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        secret = ProportionSecret("flag = 1", values=[0.3, 0.45])
        return [model_query(_frame(f), STATS, secret, subset_size=100, rng=0) for f in (1, FACTOR)]


@pytest.mark.parametrize("name", ["optimal-g", "optimal-g-full", "auto"])
def test_a_table_in_cents_changes_only_the_price_noise(tables, name):
    # Built from the table (grid detected, the population layer's box set on): the model,
    # its confidence set's members and the calibration on them all follow the units.
    dollars, cents = tables
    assert cents.facts.lattice_steps[0] == pytest.approx(FACTOR * dollars.facts.lattice_steps[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "auto":
            a = choose_for_table(dollars, epsilon=EPS, delta=DELTA, facts=dollars.facts)
            b = choose_for_table(cents, epsilon=EPS, delta=DELTA, facts=cents.facts)
            assert a.name == b.name
            mech_a, mech_b = a.mechanism, b.mechanism
        else:
            mech_a = calibrate(name, dollars, epsilon=EPS, delta=DELTA)
            mech_b = calibrate(name, cents, epsilon=EPS, delta=DELTA)
    assert mech_a.guarantee.holds is True and mech_b.guarantee.holds is True
    assert mech_a.noise_rank == mech_b.noise_rank == 5
    _assert_only_k_rescaled(_sd(mech_a), _sd(mech_b), 0)


def test_the_default_prices_each_statistic_by_its_own_spread(tables):
    # With E||Z||^2 the price's units set everyone's noise: the share (sd ~0.05) gets
    # noise in the thousands. The default keeps every statistic's noise a comparable
    # multiple of its own sampling sd.
    dollars, _ = tables
    spread = np.sqrt(np.diagonal(dollars.covariances, axis1=1, axis2=2).mean(axis=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        l2 = calibrate("optimal-g-full", dollars, epsilon=EPS, delta=DELTA, objective="l2")
        rel = calibrate("optimal-g-full", dollars, epsilon=EPS, delta=DELTA)
    ratio_l2, ratio_rel = _sd(l2) / spread, _sd(rel) / spread
    assert ratio_l2.max() / ratio_l2.min() > 1e3
    assert ratio_rel.max() / ratio_rel.min() < 10.0
    # And at a lower weighted price: each is optimal for its own objective.
    w = np.diag(1.0 / spread**2)
    assert np.trace(w @ rel.noise_covariance) < np.trace(w @ l2.noise_covariance)
    assert rel.diagnostics["objective_kind"] == "relative"
    assert l2.diagnostics["objective_kind"] == "l2"


def _program(model: GaussianQueryModel, w: np.ndarray, distance: float) -> float:
    """min tr(W S) s.t. S >= 0, [[Sigma + S, d], [d^T, D^2]] >= 0 per pair: cvxpy here."""
    import cvxpy as cp

    m = model.dim
    s = cp.Variable((m, m), PSD=True)
    cons = []
    for (i, j), d in zip(model.pairs, model.mean_differences, strict=True):
        for t in (i, j):
            col = d.reshape(-1, 1)
            block = cp.bmat([[model.covariances[t] + s, col], [col.T, np.eye(1) * distance**2]])
            cons.append(block >> 0)
    prob = cp.Problem(cp.Minimize(cp.trace(w @ s)), cons)
    prob.solve(solver="CLARABEL")
    return float(prob.value)


@pytest.mark.parametrize("objective", ["l2", "relative"])
def test_the_programs_optimum_matches_cvxpy(objective):
    # The papers' calibration (analytic D*), so the program is all there is: its optimum
    # against the program written out here, for W = I and W = diag(1/v) with v computed
    # here from the covariances. A well-scaled model, so cvxpy is accurate on it directly.
    model = _model(3, span=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate(
            "optimal-g", model, epsilon=EPS, delta=DELTA, calibration="analytic",
            objective=objective,
        )  # fmt: skip
    v = np.mean([np.diag(c) for c in model.covariances], axis=0)
    w = np.eye(5) if objective == "l2" else np.diag(1.0 / v)
    ref = _program(model, w, max_distance(EPS, DELTA, "analytic"))
    assert np.trace(w @ mech.noise_covariance) == pytest.approx(ref, rel=1e-4)
    np.testing.assert_allclose(np.asarray(mech.diagnostics["weights"]), w, rtol=1e-12)


def test_l2_keeps_the_choice_table_in_squared_units():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ch = choose_mechanism(_model(1), epsilon=EPS, delta=DELTA, objective="l2")
    assert ch.weights is None and ch.objective == "l2"
    for c in ch.candidates:
        if c.calibrated is not None:
            assert c.mse == pytest.approx(float(np.trace(c.calibrated.noise_covariance)))


def test_declared_weights_win_and_bad_objectives_are_named():
    model = _model(0)
    mech = calibrate("optimal-g", model, epsilon=EPS, delta=DELTA, weights=[1, 2, 3, 4, 5])
    assert mech.diagnostics["objective_kind"] == "declared weights"
    np.testing.assert_array_equal(np.diag(mech.diagnostics["weights"]), [1, 2, 3, 4, 5])
    with pytest.raises(ParameterError, match="objective must be one of 'relative', 'l2'"):
        calibrate("optimal-g", model, epsilon=EPS, delta=DELTA, objective="L2")
    with pytest.raises(ParameterError, match=r"unknown option.*'objective'.*'expm-g'"):
        calibrate("expm-g", model, epsilon=EPS, delta=DELTA, objective="l2")
    with pytest.raises(ParameterError, match="objective must be one of"):
        choose_mechanism(model, epsilon=EPS, delta=DELTA, objective="dollars")


def test_a_statistic_without_sampling_spread_is_weighed_by_its_spread_across_hypotheses():
    # stat1 is computed exactly (variance 0) but differs between the hypotheses: its scale
    # is the variance of its means; rescaling it still rescales only its noise.
    def model(c: float) -> GaussianQueryModel:
        return GaussianQueryModel(
            [[0.0, 0.0], [1.0, 0.5 * c], [0.5, -0.5 * c]], np.diag([4.0, 0.0])
        )

    assert relative_weights(model(1.0))[1] == pytest.approx(1.0 / np.var([0.0, 0.5, -0.5]))
    a = calibrate("optimal-g", model(1.0), epsilon=EPS, delta=DELTA)
    b = calibrate("optimal-g", model(FACTOR), epsilon=EPS, delta=DELTA)
    _assert_only_k_rescaled(_sd(a), _sd(b), 1)


def test_noise_rank_does_not_depend_on_units():
    # A rank-3 covariance in 5 statistics whose units span 10^8: numpy's rank on the raw
    # matrix sees the small statistics' noise as rounding; at unit diagonal it does not.
    rng = np.random.default_rng(0)
    basis = rng.normal(size=(5, 3))
    units = np.array([1e8, 1.0, 1e-1, 1e4, 1.0])
    cov = (basis @ basis.T) * np.outer(units, units)
    assert unit_free_rank(cov) == 3
    full = cov + np.diag((1e-3 * units) ** 2)
    assert unit_free_rank(full) == 5
    assert np.linalg.matrix_rank(full / np.abs(full).max(), hermitian=True) < 5


def test_a_constant_statistic_is_weighed_by_its_own_value_and_rescales_with_it():
    """A statistic that is the same number on every dataset (a column constant in a small
    modelling table) does not stop the default objective: its noise is weighed against its
    own value, so rescaling it rescales its weight and leaves the others' noise alone."""
    from distpriv.central.objective import relative_weights

    means = np.array([[1.0, 3.0], [1.4, 3.0]])
    cov = np.array([[0.5, 0.0], [0.0, 0.0]])
    w = relative_weights(GaussianQueryModel(means, cov))
    np.testing.assert_allclose(w, [1 / 0.5, 1 / 9.0])
    scaled = relative_weights(GaussianQueryModel(means * [1.0, 100.0], cov))
    np.testing.assert_allclose(scaled, [1 / 0.5, 1 / 9.0e4])
    mech = calibrate("optimal-g", GaussianQueryModel(means, cov), epsilon=1.0, delta=1e-3)
    assert np.isfinite(mech.noise_covariance).all()
