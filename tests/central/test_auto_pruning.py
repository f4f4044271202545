"""``auto`` with ``prune=True`` against the full search (to save calibration time).

The reference is ``prune=False`` (every candidate calibrated): the same choice and the
same published noise bit for bit; every candidate skipped is one whose full calibration
costs more than the choice (the certificate of distpriv/central/auto_pruning.py checked
against the calibration it avoided); the published noise passes the exact accountant on
the worst members of the population set for it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from central.test_calibration_sharing import wishart_model
from distpriv import GaussianQueryModel
from distpriv.central import auto_pruning
from distpriv.pipeline.stages.calibrate import AutoChoice, choose_mechanism
from distpriv.population.confidence import DEFAULT_BETA, population_model
from distpriv.population.exact import pair_deltas

EPS, DELTA = 1.0, 1e-3
FLOORED = ("daum-floor", "dirm-g-floor", "optimal-g-full")


def _lattice(m: int) -> list[float | None]:
    """Mixed statistics: every other one on a grid, the others continuous (no lattice)."""
    return [1e-3 if i % 2 == 0 else None for i in range(m)]


def _choose(model: GaussianQueryModel, prune: bool = True, weights: object = None) -> AutoChoice:
    lattice = _lattice(model.dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return choose_mechanism(
            model,
            epsilon=EPS,
            delta=DELTA,
            weights=weights,
            options={n: {"lattice": lattice} for n in FLOORED},
            prune=prune,
        )


def _no_population(model: GaussianQueryModel) -> GaussianQueryModel:
    return GaussianQueryModel(model.means, model.covariances)


@pytest.mark.parametrize(
    ("m", "k", "seed", "population", "weighted"),
    [
        (6, 2, 0, True, False),
        (8, 3, 1, True, False),
        (7, 2, 2, False, False),
        (6, 2, 3, True, True),
    ],
)
def test_pruned_auto_chooses_what_the_full_search_chooses(
    m: int, k: int, seed: int, population: bool, weighted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = wishart_model(m, k, seed)
    if not population:
        model = _no_population(model)
    weights = np.linspace(0.5, 2.0, m) if weighted else None
    full = _choose(model, False, weights)
    skipped: list[str] = []
    real = auto_pruning.dominated

    def spy(name: str, *args: object, **kwargs: object) -> str:
        why = real(name, *args, **kwargs)  # type: ignore[arg-type]
        if why:
            skipped.append(name)
        return why

    monkeypatch.setattr(auto_pruning, "dominated", spy)  # auto imports it at call time
    fast = _choose(model, True, weights)
    assert fast.name == full.name
    assert np.array_equal(fast.mechanism.noise_covariance, full.mechanism.noise_covariance)
    rows = {c.mechanism: c for c in full.candidates}
    fast_rows = {c.mechanism: c for c in fast.candidates}
    assert list(fast_rows) == list(rows)  # the table keeps its rows and order
    # Something was skipped (expm-g and eigm lose to optimal-g-full on these models), and
    # the certificate holds: the skipped calibration costs more than the choice.
    assert skipped
    for name in skipped:
        row = fast_rows[name]
        assert "cannot be chosen" in row.reason and row.calibrated is None
        assert not row.verified
        # (mse: the criterion auto compares by, the chosen row's as well)
        assert rows[name].mse > rows[full.name].mse or not rows[name].verified
    # Rows calibrated either way are the same.
    for name, row in fast_rows.items():
        if name not in skipped:
            assert row.verified == rows[name].verified
            assert row.mse == rows[name].mse or (np.isnan(row.mse) and np.isnan(rows[name].mse))
    # The published noise is the accountant's verdict on the set's worst members for it.
    cov = fast.mechanism.noise_covariance
    target = population_model(model, beta=DEFAULT_BETA, noise_cov=cov) if population else model
    assert pair_deltas(target, cov, epsilon=EPS).worst <= DELTA


@pytest.mark.filterwarnings("ignore::distpriv.errors.AssumptionWarning")
def test_nothing_is_pruned_without_a_best_or_with_other_options() -> None:
    model = wishart_model(5, 2, 0)
    assert (
        auto_pruning.dominated(
            "expm-g", model, {"calibration": "analytic"}, None, 1.0, "x", epsilon=EPS, delta=DELTA
        )
        == ""
    )
    assert (
        auto_pruning.dominated("optimal-g", model, {}, None, 1.0, "x", epsilon=EPS, delta=DELTA)
        == ""
    )
    # A best so cheap that no noise of expm-g's shape meets it: pruned; a huge one: not.
    assert auto_pruning.dominated("expm-g", model, {}, None, 1e-6, "x", epsilon=EPS, delta=DELTA)
    assert (
        auto_pruning.dominated("expm-g", model, {}, None, 1e12, "x", epsilon=EPS, delta=DELTA) == ""
    )
