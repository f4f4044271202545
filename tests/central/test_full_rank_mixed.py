"""Full rank everywhere on a table with continuous and grid-valued columns.

The lattice is detected from the table (nothing declared): the two float columns have no
lattice, the integer column's mean and the count are on grids. The floored mechanisms must
give noise of rank m (checked here from the covariance's eigenvalues, not from
``noise_rank``), verified by the accountant, and ``auto`` must keep them as candidates.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from distpriv import calibrate
from distpriv.central.floored import FLOORED_MECHANISMS
from distpriv.errors import MechanismNotApplicableError
from distpriv.modeling import ProportionSecret, model_query
from distpriv.population.confidence import population_model
from distpriv.population.exact import pair_deltas

EPS, DELTA, BETA = 1.0, 1e-3, 0.05
STATS = {
    "avg_income": "avg(income)",  # continuous (log-normal)
    "avg_score": "avg(score)",  # continuous
    "avg_visits": "avg(visits)",  # integer column: grid 1/n
    "n_smokers": "count_if(smoker = 1)",  # count: grid 1
}


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(7)
    n = 3000
    flag = rng.random(n) < 0.35
    frame = pd.DataFrame(
        {
            "flag": flag.astype(int),
            "income": np.exp(rng.normal(10 + 0.4 * flag, 0.6)),
            "score": rng.normal(50 + 6 * flag, 10),
            "visits": rng.poisson(3 + 2 * flag),
            "smoker": (rng.random(n) < 0.2 + 0.15 * flag).astype(int),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(
            frame, STATS, ProportionSecret("flag = 1", values=[0.3, 0.45]), subset_size=100, rng=0
        )
    return model


def test_detected_lattice_is_mixed(mixed):
    steps = mixed.facts.lattice_steps
    assert np.isnan(steps[0]) and np.isnan(steps[1])
    assert steps[2] == pytest.approx(0.01) and steps[3] == pytest.approx(1.0)


# DauM's direction (or DirM's span) plus a fixed floor cannot cover where the hypotheses'
# covariances differ (δ(1) stays at 0.006 here): that refusal is the accountant's, about
# the shape, and is kept; it is never about a missing lattice or the rank.
SHAPE_REFUSAL = "no scale of its noise shape meets"


@pytest.mark.parametrize("name", FLOORED_MECHANISMS)
def test_floored_noise_has_rank_m(mixed, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            mech = calibrate(name, mixed, epsilon=EPS, delta=DELTA)
        except MechanismNotApplicableError as exc:
            assert name != "optimal-g-full"
            assert SHAPE_REFUSAL in str(exc) and "lattice" not in str(exc)
            return
    cov = mech.noise_covariance
    m = mixed.dim
    # Rank m from the eigenvalues: the noise is at least half the floor in every direction
    # (F^(-1/2) Σ_Z F^(-1/2) ⪰ I/2 with F = diag(floor) positive definite). Computed in the
    # floor's metric, where rounding is relative to the whitened noise: the statistics'
    # scales differ by 1e8 (income against visits), and noise shaped for the population set
    # follows them (eigenvalues 0.39 to 4.8e7 for optimal-g-full), so in the raw metric the
    # least floor is within 1e-12 of the largest eigenvalue, as rounding would be.
    floor = np.asarray(mech.diagnostics["floor_variances"])
    assert np.all(floor > 0)
    inv = 1.0 / np.sqrt(floor)
    assert np.linalg.eigvalsh(cov * inv[:, None] * inv[None, :]).min() >= 0.5
    ev = np.linalg.eigvalsh(cov)
    assert ev.min() >= 0.5 * floor.min()
    assert np.linalg.matrix_rank(cov, tol=1e-12 * ev.max()) == m
    assert mech.noise_rank == m
    # The accountant confirms the headline on the worst population members for this noise.
    assert mech.guarantee.holds is True
    members = population_model(mixed, beta=BETA, noise_cov=cov)
    assert pair_deltas(members, cov, epsilon=EPS).worst <= DELTA


def test_auto_keeps_the_floored_candidates(mixed):
    from distpriv.pipeline.stages.calibrate import choose_mechanism

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choice = choose_mechanism(mixed, epsilon=EPS, delta=DELTA)
    rows = {c.mechanism: c for c in choice.candidates}
    for name in FLOORED_MECHANISMS:
        assert name in rows
        # Never refused for a missing lattice or for rank: calibrated with rank m, or
        # refused by the accountant for its shape (daum-floor, dirm-g-floor).
        row = rows[name]
        assert "lattice" not in row.reason and "directions" not in row.reason, row.reason
        if row.calibrated is None:
            assert name != "optimal-g-full" and SHAPE_REFUSAL in row.reason
        else:
            assert row.noise_rank == mixed.dim
    assert rows["optimal-g-full"].verified, rows["optimal-g-full"].reason
    verified = [n for n in FLOORED_MECHANISMS if rows[n].verified]
    # The choice is of full rank, and no rank-deficient mechanism is chosen by default.
    cov = choice.mechanism.noise_covariance
    assert np.linalg.matrix_rank(cov, tol=1e-12 * np.abs(cov).max()) == mixed.dim
    best_floored = min(rows[n].mse for n in verified)
    assert rows[choice.name].mse <= best_floored
