"""The pair accountant at the edges: far tails without overflow, and exactly singular
covariances with a mean difference partly outside their range (mutually singular laws).

References share no code with the accountant: Balle & Wang's closed form evaluated in
mpmath, a seeded sample that exhibits a separating event, and exact rational arithmetic.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from cli_helpers import run
from distpriv import gaussian_pair_delta, gaussian_pair_profile

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "eigm-example.toml"


def _bw_delta(distance: float, epsilon: float) -> mpmath.mpf:
    """Balle & Wang (2018, Thm 8): Φ(D/2 − ε/D) − e^ε Φ(−D/2 − ε/D), at 60 digits."""
    with mpmath.workdps(60):
        d, e = mpmath.mpf(distance), mpmath.mpf(epsilon)
        return mpmath.ncdf(d / 2 - e / d) - mpmath.exp(e) * mpmath.ncdf(-d / 2 - e / d)


@pytest.mark.parametrize(("shift", "epsilon"), [(1e-160, 1.0), (1.0, 1e300), (1e-150, 3.0)])
def test_far_tail_answers_without_overflow(shift, epsilon):
    prof = gaussian_pair_profile([0.0], [[1.0]], [shift], [[1.0]], epsilon=epsilon)
    with mpmath.workdps(30):
        # exact δ ≤ Φ(−x), x = ε/D − D/2 > 0, and Φ(−x) ≤ φ(x)/x (Mills' ratio):
        # far below the smallest double.
        x = mpmath.mpf(epsilon) / shift - mpmath.mpf(shift) / 2
        assert -(x**2) / 2 - mpmath.log(x * mpmath.sqrt(2 * mpmath.pi)) < mpmath.log(1e-300)
    assert np.isfinite(prof.estimate) and np.isfinite(prof.error_bound)
    assert 0.0 < prof.delta <= 1e-299  # an upper bound, and not a vacuous one


def test_calibrate_with_a_huge_epsilon_answers(capsys):
    args = ["calibrate", EXAMPLE, "--mechanism", "expm-g", "--epsilon", "1e300"]
    status, out, err = run([*args, "--delta", "1e-3", "--json"], capsys)
    assert status == 0, err
    assert json.loads(out)["guarantee"]["epsilon"] == 1e300


# Both covariances exactly singular (rank 2: x₁ = x₂ + const almost surely), and the means
# differ by (1e-11, −1e-11, 1): under P, x₁ − x₂ = 2e-11 a.s.; under Q, x₁ − x₂ = 0 a.s.
# The laws are mutually singular, so δ(ε) = 1 for every ε.
_S = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
_MP = np.array([1e-11, -1e-11, 1.0])


def _exact_rank(rows):
    rows, rank = [list(r) for r in rows], 0
    for col in range(len(rows[0])):
        piv = next((r for r in range(rank, len(rows)) if rows[r][col] != 0), None)
        if piv is None:
            continue
        rows[rank], rows[piv] = rows[piv], rows[rank]
        for r in range(rank + 1, len(rows)):
            f = rows[r][col] / rows[rank][col]
            rows[r] = [x - f * y for x, y in zip(rows[r], rows[rank], strict=True)]
        rank += 1
    return rank


def test_mean_difference_outside_the_range_is_exact_not_rounding():
    """The premise, in exact arithmetic: d ∉ range(Σ_p + Σ_q)."""
    total = [[Fraction(2 * x) for x in row] for row in _S]
    diff = [Fraction(x) for x in _MP]
    assert _exact_rank(total) == 2
    assert _exact_rank([[*r, dk] for r, dk in zip(total, diff, strict=True)]) == 3


def test_sample_separates_the_two_laws():
    """A seeded sample (x = μ + L z with L Lᵀ = Σ exactly) and the event A = {x₁ − x₂ >
    1e-11}: P(A) − e^ε Q(A) is a lower bound on δ(ε) at every ε."""
    rng = np.random.default_rng(5)
    lf = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # L Lᵀ = _S
    n = 20_000
    xp = _MP + rng.standard_normal((n, 2)) @ lf.T
    xq = rng.standard_normal((n, 2)) @ lf.T
    hit_p = int(np.sum(xp[:, 0] - xp[:, 1] > 1e-11))
    hit_q = int(np.sum(xq[:, 0] - xq[:, 1] > 1e-11))
    assert hit_p == n and hit_q == 0
    # One-sided 99.9 % Clopper-Pearson bounds: P(A) ≥ lo, Q(A) ≤ hi.
    lo = beta_dist.ppf(1e-3, hit_p, n - hit_p + 1)
    hi = beta_dist.ppf(1 - 1e-3, hit_q + 1, n - hit_q)
    for eps in (0.0, 1.0, 5.0):
        floor = lo - np.exp(eps) * hi
        assert floor > 0.99 if eps == 0.0 else floor > 0.0
        for args in ((_MP, _S, np.zeros(3), _S), (np.zeros(3), _S, _MP, _S)):
            prof = gaussian_pair_profile(*args, epsilon=eps)
            assert prof.delta >= floor
            assert prof.delta == 1.0 and prof.method == "different supports"
            assert "exactly" in prof.detail


def test_mean_difference_inside_the_range_keeps_the_profile():
    """Control: d = (1e-11, 1e-11, 1) is in the range; δ is Balle & Wang's at the
    Mahalanobis distance through the pseudo-inverse (D² = dᵀ (Σ)⁺ d)."""
    d = np.array([1e-11, 1e-11, 1.0])
    dist = float(np.sqrt(d @ np.linalg.pinv(_S) @ d))
    for eps in (0.0, 1.0, 3.0):
        exact = float(_bw_delta(dist, eps))
        got = gaussian_pair_delta(d, _S, np.zeros(3), _S, epsilon=eps)
        assert exact <= got <= exact + 1e-10
