"""``auto`` picks what calibrating every candidate on its own and taking the least picks.

``auto`` shares one calibration cache across its candidates (optimal-g's exact search,
which optimal-g-full repeats; the set's members; every exact check), skips what provably
cannot be chosen, and calibrates optimal-g-full's shapes in an order that lets the cache
serve daum-floor. The reference here shares nothing: each mechanism calibrated by its own
:func:`distpriv.calibrate` call (its own cache), judged by the rule ``auto`` states (every
assumption holds, the verified headline meets the request, noise of full rank), the least
E[Zᵀ W Z] kept. The chosen noise is then checked by the exact accountant on the members
of the population set for it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from central.test_auto_pruning import FLOORED, _lattice
from central.test_calibration_sharing import wishart_model
from distpriv import calibrate
from distpriv.central.objective import comparison_weights
from distpriv.errors import DistPrivError
from distpriv.pipeline.stages.calibrate import choose_mechanism
from distpriv.population.confidence import DEFAULT_BETA, population_model
from distpriv.population.exact import pair_deltas

EPS, DELTA = 1.0, 1e-3
NAMES = ("expm-g", "eigm", "daum", "optimal-g", "apgm", "daum-floor", "optimal-g-full")


def _alone(model, name):
    opts = {"lattice": _lattice(model.dim)} if name in FLOORED else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return calibrate(name, model, epsilon=EPS, delta=DELTA, **opts)
    except DistPrivError:
        return None


def _verified(mech, m):
    g = mech.guarantee
    return (
        g.holds is True
        and g.epsilon <= EPS * (1 + 1e-9)
        and g.delta <= DELTA * (1 + 1e-9)
        and mech.noise_rank >= m
    )


@pytest.mark.parametrize(("m", "k", "seed"), [(6, 2, 21), (8, 3, 22), (10, 2, 23)])
def test_auto_choice_is_the_least_of_separate_calibrations(m: int, k: int, seed: int) -> None:
    model = wishart_model(m, k, seed)
    w = comparison_weights(model, weights=None, objective="relative")
    errors = {}
    for name in NAMES:
        mech = _alone(model, name)
        if mech is not None and _verified(mech, m):
            errors[name] = float(np.sum(w * np.diag(mech.noise_covariance)))
    assert errors  # something verifies
    least = min(errors.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choice = choose_mechanism(
            model,
            epsilon=EPS,
            delta=DELTA,
            mechanisms=NAMES,
            options={n: {"lattice": _lattice(m)} for n in FLOORED if n in NAMES},
        )
    chosen = float(np.sum(w * np.diag(choice.mechanism.noise_covariance)))
    # The least error of the separate calibrations, and a mechanism that attains it (two
    # mechanisms can publish the same noise: daum-floor and optimal-g-full's DauM shape).
    assert chosen == pytest.approx(least, rel=1e-9)
    assert choice.name in errors and errors[choice.name] == pytest.approx(least, rel=1e-9)
    cov = choice.mechanism.noise_covariance
    members = population_model(model, beta=DEFAULT_BETA, noise_cov=cov, epsilon=EPS)
    assert pair_deltas(members, cov, epsilon=EPS).worst <= DELTA
