"""Full-rank noise at rank-one prices: floored mechanisms and auto's choice."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adult_setup import ADULT_QUERY, adult_income_model
from distpriv import GaussianQueryModel, calibrate
from distpriv.central.floored import FLOORED_MECHANISMS, floor_variances
from distpriv.errors import MechanismNotApplicableError, ParameterError
from distpriv.noise import secure_sample
from distpriv.population import confidence as robust
from distpriv.population.exact import pair_deltas

EPS, DELTA = 1.0, 1e-3


@pytest.fixture(scope="module")
def adult(adult_modeling, adult_analytic):
    from distpriv.pipeline.stages.data import table_facts

    return adult_analytic, table_facts(adult_modeling, ADULT_QUERY, 100)


# Calibration is deterministic: several tests calibrate the same mechanism on the same model
# with the same arguments (daum-floor on Adult four times, optimal-g twice); each is made
# once per module. The key holds the model itself, so its id is never reused while cached.
_CALIBRATED: dict = {}


def _key(value):
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    return value


def quiet(name, model, **kw):
    # The population set in force is part of the key: the same call on the box and on the
    # joint set calibrates against different members.
    key = (
        name,
        id(model),
        robust.set_method(model),
        tuple(sorted((k, _key(v)) for k, v in kw.items())),
    )
    if key in _CALIBRATED:
        return _CALIBRATED[key][1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = calibrate(name, model, **kw)
    _CALIBRATED[key] = (model, mech)
    return mech


def covers_floor(cov, fvar, rtol=1e-9):
    """Σ_Z ⪰ F: the smallest eigenvalue of Σ_Z − F is ≥ 0 (up to rounding)."""
    gap = np.linalg.eigvalsh(cov - np.diag(fvar))
    return gap.min() >= -rtol * max(np.abs(cov).max(), 1.0)


def test_adult_auto_full_rank_below_168(adult):
    from distpriv.pipeline.stages.calibrate import choose_for_table

    model, facts = adult
    # The bound 168 is Adult's E||Z||^2 as measured: the papers' objective, stated.
    l2 = {"objective": "l2"}
    pruned = choose_for_table(model, epsilon=EPS, delta=DELTA, facts=facts, options=l2)
    # The full comparison (every row calibrated) prices against the rank-one optimum.
    choice = choose_for_table(
        model, epsilon=EPS, delta=DELTA, facts=facts, options={"prune": False, **l2}
    )
    assert pruned.name == choice.name and pruned.pruned and not choice.pruned
    assert np.array_equal(pruned.mechanism.noise_covariance, choice.mechanism.noise_covariance)
    mech = choice.mechanism
    assert mech.mse() <= 168.0, (choice.name, mech.mse())
    assert mech.noise_rank == model.dim == 5
    g = mech.guarantee
    assert g.holds is True and g.calibration == "exact"
    assert (g.epsilon, g.delta) == (EPS, DELTA)
    # The headline, re-checked independently of the calibration's own search.
    assert pair_deltas(model, mech.noise_covariance, epsilon=EPS).worst <= DELTA
    # The comparison table prices the floor against the rank-one optimum.
    rows = {r["mechanism"]: r for r in choice.rows()}
    ref = choice.rank_one_optimum
    partial = [
        r["mse"]
        for r in rows.values()
        if r["noise_rank"] is not None
        and r["noise_rank"] < 5
        and (r["verified"] or "directions" in r["reason"])
    ]
    assert ref == min(partial) and ref <= rows["daum"]["mse"]
    assert rows[choice.name]["vs_rank_one"] == pytest.approx(mech.mse() / ref)
    assert 1.0 <= rows[choice.name]["vs_rank_one"] < 1.05
    assert rows["expm-g"]["vs_rank_one"] > 4.0


@pytest.mark.parametrize("name", FLOORED_MECHANISMS)
def test_floor_covers_every_direction_on_adult(adult, name):
    model, facts = adult
    steps = np.array(facts.lattice_steps)
    mech = quiet(name, model, epsilon=EPS, delta=DELTA, lattice=steps)
    fvar = floor_variances(steps, mech.diagnostics["floor"])
    assert mech.noise_rank == 5
    assert covers_floor(mech.noise_covariance, fvar)
    # The main shape alone leaves 4 directions uncovered; each gets at least the floor.
    main = quiet(mech.diagnostics["main_mechanism"], model, epsilon=EPS, delta=DELTA)
    w, v = np.linalg.eigh(main.noise_covariance)
    null = v[:, w < 1e-9 * w.max()]
    assert null.shape[1] == 4
    got = np.diag(null.T @ mech.noise_covariance @ null)
    assert np.all(got >= np.diag(null.T @ np.diag(fvar) @ null) * (1 - 1e-9))
    assert mech.guarantee.holds is True
    assert mech.mse() == pytest.approx(mech.diagnostics["main_mse"] + fvar.sum())
    assert any("grid" in n for n in mech.guarantee.notes)


def test_bigger_floor_more_noise_and_floor_zero_is_main_shape(adult):
    # On the fitted moments (beta=None): with the population set the worst
    # member depends on the noise, and floor noise in the directions the main shape leaves
    # uncertain can lower the main scale (by 7e-5 relative here), so the total is not
    # monotone in the floor there.
    model, facts = adult
    steps = np.array(facts.lattice_steps)
    mses = [
        quiet(
            "daum-floor", model, epsilon=EPS, delta=DELTA, lattice=steps, floor=c, beta=None
        ).mse()
        for c in (0.0, 0.25, 1.0, 3.0)
    ]
    daum = quiet("daum", model, epsilon=EPS, delta=DELTA, beta=None).mse()
    assert mses[0] == pytest.approx(daum, rel=1e-4)
    assert all(a <= b * (1 + 1e-6) for a, b in itertools.pairwise(mses))


def _equal_cov_model(m, seed, ratio):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(m, m))
    cov = a @ a.T + 0.5 * np.eye(m)
    d = rng.normal(size=m)
    d *= ratio * np.sqrt(d @ np.linalg.solve(cov, d)) ** -1  # Mahalanobis distance = ratio
    return GaussianQueryModel(np.stack([np.zeros(m), d]), cov)


def _check_between(model, steps, floor=1.0):
    # Orderings in E||Z||^2, with expm-g among them: the papers' objective, stated (under the
    # default both are compared by the relative objective: test_..._relative below).
    l2 = {"objective": "l2"}
    full = quiet(
        "optimal-g-full", model, epsilon=EPS, delta=DELTA, lattice=steps, floor=floor, **l2
    )
    expm = quiet("expm-g", model, epsilon=EPS, delta=DELTA)
    rank1 = quiet("optimal-g", model, epsilon=EPS, delta=DELTA, **l2)
    fvar = floor_variances(steps, floor)
    assert full.noise_rank == model.dim
    assert covers_floor(full.noise_covariance, fvar)
    assert pair_deltas(model, full.noise_covariance, epsilon=EPS).worst <= DELTA
    if expm.noise_covariance[0, 0] >= fvar.max():  # expm-g's noise respects the floor
        assert full.mse() <= expm.mse() * (1 + 1e-9)
    else:  # never noisier than expm-g raised to the floor
        raised = np.maximum(np.diag(expm.noise_covariance), fvar).sum()
        assert full.mse() <= raised * (1 + 1e-9)
    return full.mse(), rank1.mse()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_optimal_full_between_rank_one_optimum_and_expm_equal_cov(seed):
    # Equal covariances within the pair: the exact profile is Balle & Wang's, the convex
    # program's optimum is the exact optimum, so no full-rank noise can be cheaper.
    model = _equal_cov_model(3, seed, ratio=8.0)
    steps = np.full(3, 0.05)
    full, rank1 = _check_between(model, steps)
    assert full >= rank1 * (1 - 1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_optimal_full_above_the_program_optimum_relative(seed):
    # The same bound under the default objective, in its own metric tr(W Sigma_Z).
    model = _equal_cov_model(3, seed, ratio=8.0)
    steps = np.full(3, 0.05)
    full = quiet("optimal-g-full", model, epsilon=EPS, delta=DELTA, lattice=steps)
    rank1 = quiet("optimal-g", model, epsilon=EPS, delta=DELTA)
    assert full.diagnostics["objective"] >= rank1.diagnostics["objective"] * (1 - 1e-4)
    assert full.noise_rank == model.dim


@pytest.mark.parametrize("population_set", ["box", "joint"])
def test_optimal_full_between_on_adult(adult, population_set):
    model, facts = adult
    with robust.population_set(population_set):
        full, rank1 = _check_between(model, np.array(facts.lattice_steps))
    if population_set == "box":
        # Members fixed by the box's corners: the program's optimum bounds the floored noise.
        assert full >= rank1 * (1 - 1e-4)
    # On the joint set the worst members depend on each noise, so optimal-g and
    # optimal-g-full are each calibrated against the members for their own noise and the
    # lower ordering is not a theorem (measured: 142.34 against 142.43); the floor's cost is.
    assert full <= rank1 + 2.0  # the floor costs about its own trace (1 step: 2.0003)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    m=st.integers(2, 4),
    seed=st.integers(0, 10**6),
    ratio=st.floats(3.0, 30.0),
    step=st.sampled_from([0.001, 0.01, 0.1, 1.0]),
    floor=st.sampled_from([0.25, 1.0, 3.0]),
)
def test_optimal_full_between_hypothesis(m, seed, ratio, step, floor):
    model = _equal_cov_model(m, seed, ratio)
    full, rank1 = _check_between(model, np.full(m, step), floor)
    assert full >= rank1 * (1 - 1e-4)


def test_secure_release_of_full_rank_noise(adult):
    model, facts = adult
    steps = np.array(facts.lattice_steps)
    mech = quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=steps)
    value = np.array([38.57, 10.12, 31.0, 33.0, 40.25])
    rel = mech.release(value)  # rng=None: the secure sampler
    assert rel.secure and rel.value.shape == (5,)
    assert "whitened" in rel.sampler
    # The secure sampler's noise has full rank and the floor's variance in the directions
    # the main shape leaves uncovered: chi-square tolerance for 2,000 draws (relative sd of
    # a variance estimate sqrt(2/2000) ≈ 3.2 %; 0.15 is 4.7 sd).
    z = secure_sample(mech.noise, 2000)
    emp = np.cov(z, rowvar=False)
    assert np.linalg.matrix_rank(emp) == 5
    v = mech.noise.components[0].basis[:, 0]
    w, vecs = np.linalg.eigh(np.eye(5) - np.outer(v, v))
    null = vecs[:, w > 0.5]
    want = np.diag(null.T @ mech.noise_covariance @ null)
    got = np.diag(null.T @ emp @ null)
    assert np.all(np.abs(got / want - 1) < 0.15)
    assert np.all(np.abs(np.diag(emp) / np.diag(mech.noise_covariance) - 1) < 0.15)


def test_bad_input(adult):
    model, facts = adult
    steps = np.array(facts.lattice_steps)
    # A model given as moments carries no table, so no lattice: refused, naming it.
    bare = GaussianQueryModel(model.means, model.covariances, model.pairs, labels=model.labels)
    with pytest.raises(MechanismNotApplicableError, match="lattice"):
        quiet("daum-floor", bare, epsilon=EPS, delta=DELTA)
    # A model built from the table carries the table's lattice, the one
    # the pipeline's table facts find on the whole frame: the default is that grid.
    assert model.facts.lattice_steps == facts.lattice_steps
    own = quiet("daum-floor", model, epsilon=EPS, delta=DELTA)
    given = quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=steps)
    np.testing.assert_array_equal(own.noise_covariance, given.noise_covariance)
    with pytest.raises(ParameterError, match="floor"):
        quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=steps, floor=-1)
    with pytest.raises(ParameterError, match="lattice"):
        quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=[1.0, 2.0])
    with pytest.raises(ParameterError, match="positive"):
        quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=[0.0] * 5)
    with pytest.raises(ParameterError, match="calibration"):
        quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=steps, calibration="x")
    # Statistics with no lattice get a floor relative to their spread:
    # full rank with one or two of them (two were left uncovered before: rank 4).
    one = quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=[None, *steps[1:]])
    assert one.noise_rank == 5
    part = quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=[None, None, *steps[2:]])
    assert part.noise_rank == 5
    assert any("no lattice known" in n for n in part.guarantee.notes)


def test_papers_calibration_plus_floor_is_verified(adult):
    model, facts = adult
    steps = np.array(facts.lattice_steps)
    mech = quiet(
        "daum-floor", model, epsilon=EPS, delta=DELTA, lattice=steps, calibration="analytic"
    )
    assert mech.noise_rank == 5
    assert "exact_check" in mech.diagnostics
    worst = pair_deltas(model, mech.noise_covariance, epsilon=EPS).worst
    g = mech.guarantee
    assert (g.delta >= worst * (1 - 1e-6)) or g.epsilon > EPS or worst <= DELTA


def test_auto_floor_option(adult):
    from distpriv.pipeline.stages.calibrate import choose_for_table

    model, facts = adult
    choice = choose_for_table(model, epsilon=EPS, delta=DELTA, facts=facts, options={"floor": 3.0})
    rows = {r["mechanism"]: r for r in choice.rows()}
    assert rows["optimal-g-full"]["verified"]
    full = next(c for c in choice.candidates if c.mechanism == "optimal-g-full").calibrated
    assert full.diagnostics["floor"] == 3.0
    assert covers_floor(full.noise_covariance, floor_variances(facts.lattice_steps, 3.0))


def test_adult_floored_data_level_check_finds_no_evidence(adult, adult_modeling):
    # The data-level check (attacks.verify_on_data) on resampled Adult subsets: daum is
    # decoded on the grid (certified violation), the same shape with the floor is not.
    from distpriv.attacks import verify_on_data

    model, facts = adult
    sampled = adult_income_model(
        adult_modeling, method="montecarlo", n_samples=3000, quiet=True
    ).to_sampled()
    steps = np.array(facts.lattice_steps)
    floored = quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=steps)
    rank_one = quiet("daum", model, epsilon=EPS, delta=DELTA)
    assert verify_on_data(sampled, rank_one, rng=1, n_eval=1500).delta_lower > 10 * DELTA
    check = verify_on_data(sampled, floored, rng=1, n_eval=1500)
    assert check.noise_rank == 5 and check.delta_lower <= DELTA
