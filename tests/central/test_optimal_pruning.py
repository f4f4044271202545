"""optimal-g's shortcuts in the exact calibration on the population set.

Three shortcuts keep optimal-g within a few times expm-g's calibration time: the set's
program is not solved where a proven floor shows no noise of its rank meets the target
(central/_rank_bound.py); the isotropic shape is not searched where, at the cost of the
best noise, it fails on the set's members for that noise; each cutting-plane round starts
its search at the last round's scale. The reference for each is the calibration without
it (the shortcut disabled): the same noise to the search's accuracy, never a noisier one,
and the published noise passes the exact accountant on the set's members.
"""

from __future__ import annotations

import numpy as np
import pytest

from distpriv import GaussianQueryModel, calibrate
from distpriv.central import _exact_families, exact_calibration
from distpriv.population.confidence import DEFAULT_BETA, population_model
from distpriv.population.confidence import population_set as population_set_of
from distpriv.population.exact import pair_deltas

from .test_calibration_sharing import wishart_model

EPS, DELTA = 1.0, 1e-3


def _calibrate(model: GaussianQueryModel) -> tuple[float, np.ndarray]:
    mech = calibrate("optimal-g", model, epsilon=EPS, delta=DELTA)
    return mech.mse(), mech.noise_covariance


@pytest.mark.parametrize("population_set", ["box", "joint"])
@pytest.mark.parametrize(("m", "k", "seed"), [(6, 2, 0), (8, 3, 1)])
def test_shortcuts_choose_the_noise_of_the_full_search(
    m: int, k: int, seed: int, population_set: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = wishart_model(m, k, seed)
    solved: list[int] = []
    isotropic: list[int] = []
    original = exact_calibration._set_program
    original_scale = exact_calibration._scale_for_set

    def counting(*args: object, **kwargs: object) -> object:
        solved.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    def scaling(gm: object, shape: object, method: str, *args: object, **kw: object) -> object:
        isotropic.extend([1] if "isotropic" in method else [])
        return original_scale(gm, shape, method, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(exact_calibration, "_set_program", counting)
    monkeypatch.setattr(exact_calibration, "_scale_for_set", scaling)
    with population_set_of(population_set):
        fast, cov = _calibrate(model)
        fast_solves, fast_iso = len(solved), len(isotropic)
        # The published noise passes the exact accountant on the set's members for it.
        members = population_model(model, beta=DEFAULT_BETA, noise_cov=cov, epsilon=EPS)
        assert pair_deltas(members, cov, epsilon=EPS, screen=DELTA).worst <= DELTA

        # Every shortcut off: the floor never rules out, the isotropic shape always searched.
        monkeypatch.setattr(_exact_families, "rank_limited_floor", lambda *a, **k: 0.0)
        monkeypatch.setattr(exact_calibration, "_fails_at_cost", lambda *a, **k: False)
        solved.clear()
        isotropic.clear()
        slow, _ = _calibrate(model)
    if population_set == "box":
        # Independent covariances: the floor ruled the set's low-rank program out in some
        # round (the box's members: 2^S corners per pair, the program's rank at most two
        # per member pair, below m).
        assert fast_solves < len(solved)
    else:
        # The joint set's program also sees its stratum corners, so its rank cap (two per
        # member pair: 2 (2^2 + 1) = 10 per pair of Ψ here, two strata each) is at least m
        # and the floor cannot rule it out: the same solves. The isotropic shape failed at
        # the best noise's cost on the members for that noise, so it was not searched.
        assert fast_solves == len(solved)
        assert fast_iso < len(isotropic)
    # Same choice, to the scale search's accuracy (the warm start brackets the same root).
    assert fast <= slow * (1 + 1e-6)
    assert fast == pytest.approx(slow, rel=1e-6)
