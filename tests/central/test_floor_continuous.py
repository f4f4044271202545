"""Full rank everywhere: continuous statistics get a floor relative to
their spread; floored mechanisms are never silently rank-deficient; auto can choose them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from adult_setup import ADULT_QUERY
from distpriv import GaussianQueryModel, calibrate
from distpriv.central.floor_levels import CONTINUOUS_FLOOR
from distpriv.errors import MechanismNotApplicableError
from distpriv.population.confidence import population_model
from distpriv.population.exact import pair_deltas

EPS, DELTA, BETA = 1.0, 1e-3, 0.05
CONTINUOUS = (0, 4)  # avg_age and avg_hours_per_week declared continuous (no lattice)


@pytest.fixture(scope="module")
def adult(adult_modeling, adult_analytic):
    from distpriv.pipeline.stages.data import table_facts

    steps = list(table_facts(adult_modeling, ADULT_QUERY, 100).lattice_steps)
    for k in CONTINUOUS:
        steps[k] = None
    return adult_analytic, steps


def quiet(name, model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate(name, model, **kw)


@pytest.mark.parametrize("name", ["daum-floor", "optimal-g-full"])
def test_two_continuous_statistics_full_rank_and_verified(adult, name):
    model, steps = adult
    mech = quiet(name, model, epsilon=EPS, delta=DELTA, lattice=steps)
    cov = mech.noise_covariance
    assert model.dim == 5
    # Rank 5 (independently of CalibratedMechanism.noise_rank): the least eigenvalue is
    # at least the continuous floor's variance, far from zero.
    assert mech.noise_rank == 5
    sd = np.sqrt(np.array([np.mean([c[k, k] for c in model.covariances]) for k in range(5)]))
    floor = np.array(mech.diagnostics["floor_variances"])
    for k in CONTINUOUS:
        assert floor[k] == pytest.approx((CONTINUOUS_FLOOR * sd[k]) ** 2, rel=1e-12)
        assert floor[k] > 0
    assert np.linalg.eigvalsh(cov - np.diag(floor)).min() >= -1e-9 * np.abs(cov).max()
    assert np.linalg.eigvalsh(cov).min() >= 0.5 * floor[list(CONTINUOUS)].min()
    # The accountant confirms the headline: on the fitted model and on the worst members of
    # the population confidence set for this noise.
    assert mech.guarantee.holds is True
    assert pair_deltas(model, cov, epsilon=EPS).worst <= DELTA
    members = population_model(model, beta=BETA, noise_cov=cov)
    assert pair_deltas(members, cov, epsilon=EPS).worst <= DELTA


def test_auto_chooses_a_floored_mechanism_on_mixed_statistics(adult):
    from distpriv.pipeline.stages.calibrate import choose_mechanism

    model, steps = adult
    names = ("expm-g", "daum-floor", "optimal-g-full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choice = choose_mechanism(
            model,
            epsilon=EPS,
            delta=DELTA,
            mechanisms=names,
            options={n: {"lattice": steps} for n in names[1:]},
            prune=False,  # every row calibrated: daum-floor's too
        )
    rows = {c.mechanism: c for c in choice.candidates}
    assert rows["daum-floor"].verified and rows["optimal-g-full"].verified
    assert choice.name in ("daum-floor", "optimal-g-full")
    assert choice.mechanism.noise_rank == 5
    assert choice.mechanism.mse() < rows["expm-g"].mse


def test_constant_continuous_statistic_is_refused():
    cov = np.diag([1.0, 2.0, 0.0])
    model = GaussianQueryModel([[0.0, 0.0, 5.0], [3.0, 1.0, 5.0]], cov, statistics=["a", "b", "c"])
    with pytest.raises(MechanismNotApplicableError, match="c have no lattice and no spread"):
        quiet("daum-floor", model, epsilon=EPS, delta=DELTA, lattice=[0.5, 0.5, None])
