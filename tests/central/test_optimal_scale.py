"""optimal-g with many statistics: the structured solver against independent references.

References: the generic convex program (cvxpy/Clarabel on the (m+1)-size LMIs, the solver
optimal-g used before), the closed form of one pair, and the exact accountant (every
calibrated mechanism is re-checked with :func:`distpriv.population.exact.pair_deltas`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from distpriv import GaussianQueryModel, calibrate, max_mahalanobis_distance
from distpriv.central._optimal_solver import solve_structured
from distpriv.central.optimal import _solve_sdp, single_pair_optimum
from distpriv.pipeline.stages.calibrate import choose_mechanism
from distpriv.population.exact import pair_deltas

DIST = max_mahalanobis_distance(epsilon=1.0, delta=1e-3)


def _spd(rng, m, cond=20.0):
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return (q * np.geomspace(1.0, cond, m)) @ q.T


def _unequal(rng, m, k=2, spread=0.6):
    """k hypotheses, each with its own covariance (a shared part plus a perturbation)."""
    base = _spd(rng, m)
    covs = []
    for _ in range(k):
        e = rng.normal(size=(m, m)) * 0.1
        covs.append(base + e @ e.T / m * 5)
    return GaussianQueryModel(rng.normal(size=(k, m)) * spread, np.array(covs))


def _constraints(model):
    out = []
    for (i, j), d in zip(model.pairs, model.mean_differences, strict=True):
        for t in (i, j):
            c = np.array(model.covariances[t])
            if d @ np.linalg.solve(c, d) > DIST**2:
                out.append((c, np.array(d)))
    return out


def _histogram(m=100, n=100, seed=0):
    """Multinomial counts of n rows over m bins under two mixtures (singular covariances)."""
    rng = np.random.default_rng(seed)
    a, b = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(m))
    probs = [0.55 * a + 0.45 * b, 0.45 * a + 0.55 * b]
    means = [n * p for p in probs]
    covs = [n * (np.diag(p) - np.outer(p, p)) for p in probs]
    return GaussianQueryModel(means, np.array(covs), labels=[0.45, 0.55])


@pytest.mark.parametrize(
    ("seed", "m", "k", "diag_w"),
    [(0, 14, 2, False), (1, 16, 2, True), (2, 14, 3, False), (3, 18, 2, False)],
)
def test_structured_matches_generic_program(seed, m, k, diag_w):
    rng = np.random.default_rng(seed)
    model = _unequal(rng, m, k)
    cons = _constraints(model)
    w = np.diag(np.linspace(1.0, 3.0, m)) if diag_w else np.eye(m)
    new = solve_structured(cons, w, DIST)
    old, _ = _solve_sdp(cons, w, DIST)
    new_obj, old_obj = np.trace(w @ new.sigma), np.trace(w @ old)
    # Never noisier than the generic solver, beyond the tolerances of the two solvers.
    assert new_obj <= old_obj * (1 + 1e-6)
    assert new_obj == pytest.approx(old_obj, rel=1e-5)
    assert new.gap <= 1e-7
    # The answer is feasible for the full program (up to the small solver's tolerance).
    for c, d in cons:
        assert d @ np.linalg.solve(c + new.sigma, d) <= DIST**2 * (1 + 1e-6)


@pytest.mark.parametrize("m", [150, 200])
def test_structured_one_pair_matches_closed_form(m):
    rng = np.random.default_rng(m)
    cov = _spd(rng, m)
    d = rng.normal(size=m)
    res = solve_structured([(cov, d)], np.eye(m), DIST)
    closed = single_pair_optimum(cov, d, DIST)
    assert np.trace(res.sigma) == pytest.approx(np.trace(closed), rel=1e-6)
    assert np.linalg.matrix_rank(res.sigma, tol=1e-6 * np.abs(res.sigma).max()) == 1


def test_many_statistics_exactly_private_and_no_noisier_than_daum():
    model = _unequal(np.random.default_rng(7), 100, spread=0.15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mechs = {n: calibrate(n, model, epsilon=1.0, delta=1e-3) for n in ("optimal-g", "daum")}
    opt = mechs["optimal-g"]
    # Independent re-check with the exact accountant, at the strict default accuracy.
    check = pair_deltas(model, opt.noise_covariance, epsilon=1.0)
    assert check.worst <= 1e-3
    for other in ("daum",):
        assert opt.mse() <= mechs[other].mse() * (1 + 1e-9)


def test_auto_on_a_100_bin_histogram():
    model = _histogram()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choice = choose_mechanism(
            model, epsilon=1.0, delta=1e-3, mechanisms=("expm-g", "daum", "optimal-g")
        )
    chosen = choice.mechanism
    assert chosen.guarantee.holds is True
    assert pair_deltas(model, chosen.noise_covariance, epsilon=1.0).worst <= 1e-3
    rows = {c.mechanism: c for c in choice.candidates}
    assert rows["optimal-g"].calibrated is not None  # the program ran at m = 100
    verified = [c.mse for c in choice.candidates if c.verified]
    assert rows[choice.name].mse == pytest.approx(min(verified))
    # The criterion is the default objective's: Σ Var(Z_k)/v_k, v_k each bin's own variance.
    v = np.mean([np.diag(c) for c in model.covariances], axis=0)
    assert rows[choice.name].mse == pytest.approx(
        float(np.sum(np.diag(chosen.noise_covariance) / v))
    )
