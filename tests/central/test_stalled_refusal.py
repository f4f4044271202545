"""The exact scale search's refusal names the cause that applies (population/_stalled.py).

A noise family that leaves a direction uncovered, one whose only protection there is a fixed
floor, and one that covers everything: each refusal says which, with the least δ(ε) found
(checked against the closed form of equal-covariance Gaussians).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from distpriv.accounting import gaussian_delta
from distpriv.errors import MechanismNotApplicableError
from distpriv.population.exact import smallest_scale
from distpriv.querymodel import GaussianQueryModel

EPS, DELTA = 1.0, 1e-3


def _model() -> GaussianQueryModel:
    # The means differ along the second statistic only, by 3 model standard deviations.
    return GaussianQueryModel([[0.0, 0.0], [0.0, 3.0]], [np.eye(2), np.eye(2)], labels=["a", "b"])


def _along_first(floor: float) -> Callable[[float], np.ndarray]:
    return lambda s: np.diag([s * s, floor])


def test_uncovered_direction_is_named_with_the_rank() -> None:
    with pytest.raises(MechanismNotApplicableError) as err:
        smallest_scale(_model(), _along_first(0.0), epsilon=EPS, delta=DELTA, start=1.0, name="x")
    msg = str(err.value)
    assert "does not cover (its shape has rank 1 of 2)" in msg
    # The δ it stays at is that of the uncovered direction: distance 3, closed form.
    least = float(gaussian_delta(3.0, epsilon=EPS))
    assert f"the least delta(1) found is {least:.3g}" in msg


def test_direction_protected_only_by_the_floor_is_named() -> None:
    with pytest.raises(MechanismNotApplicableError) as err:
        smallest_scale(_model(), _along_first(0.25), epsilon=EPS, delta=DELTA, start=1.0, name="x")
    msg = str(err.value)
    assert "only the fixed part of the noise (the floor)" in msg
    assert "does not cover" not in msg
    least = float(gaussian_delta(3.0 / np.sqrt(1.25), epsilon=EPS))
    assert f"the least delta(1) found is {least:.3g}" in msg


def test_full_rank_shape_that_meets_the_target_is_not_refused() -> None:
    s, check = smallest_scale(
        _model(), lambda s: s * s * np.eye(2), epsilon=EPS, delta=DELTA, start=1.0, name="x"
    )
    assert check.worst <= DELTA
    assert s > 0
