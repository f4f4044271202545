"""The structured solver's restricted programs above ``_CLARABEL_MAX_K`` dimensions go to SCS
first: its answer against an independent reference, the dual program solved by Clarabel.

The restricted program is min tr(A Y) s.t. Y ⪰ 0, Y ⪰ Kₜ; its dual is max Σₜ tr(Xₜ Kₜ)
s.t. Σₜ Xₜ ⪯ A, Xₜ ⪰ 0 (strong duality holds: Y = I·c is strictly feasible). The two
optimal values agree; SCS's Y must meet every Kₜ to its tolerance.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distpriv.central import _optimal_solver as solver


def _instance(k: int, p: int, seed: int) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(k, k))
    a = g @ g.T / k + np.eye(k)  # a W that is not the identity
    bounds = []
    for _ in range(p):
        c = rng.normal(size=k)
        b = rng.normal(size=(k, k))
        bounds.append(2.0 * np.outer(c, c) - (b @ b.T / k + 0.1 * np.eye(k)))
    return a, bounds


def _dual_value(a: np.ndarray, bounds: list[np.ndarray]) -> float:
    k = a.shape[0]
    xs = [cp.Variable((k, k), PSD=True) for _ in bounds]
    prob = cp.Problem(
        cp.Maximize(sum(cp.trace(x @ b) for x, b in zip(xs, bounds, strict=True))),
        [a - sum(xs) >> 0],
    )
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return float(prob.value)


@settings(max_examples=4, deadline=None)
@given(
    k=st.integers(solver._CLARABEL_MAX_K + 1, 24),
    p=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
)
def test_scs_restricted_program_matches_the_dual(k, p, seed):
    a, bounds = _instance(k, p, seed)
    y = solver._small_program(a, bounds)
    value = float(np.trace(a @ y))
    assert value == pytest.approx(_dual_value(a, bounds), rel=1e-6)
    scale = max(1.0, float(np.abs(y).max()))
    assert np.linalg.eigvalsh(y)[0] >= -1e-6 * scale
    for b in bounds:
        assert np.linalg.eigvalsh(y - b)[0] >= -1e-6 * scale


def test_small_programs_stay_with_clarabel():
    a, bounds = _instance(solver._CLARABEL_MAX_K, 3, 7)
    y = solver._small_program(a, bounds)
    assert float(np.trace(a @ y)) == pytest.approx(_dual_value(a, bounds), rel=1e-7)
