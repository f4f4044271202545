"""The pair accountant on near-singular covariances, against independent references.

Every pair here is given by double matrices that are taken as exact (dyadic entries, so
that a matrix meant to be singular is singular, and one meant to be positive definite is,
to the last bit). The references share no code with the accountant:

- exactly singular against positive definite (either way): P lives on a subspace that Q
  gives probability zero (or the reverse), so δ(ε) = 1 for every ε, by reasoning alone;
- both positive definite: an 80-digit mpmath whitening by Q's Cholesky factor (the
  accountant whitens by the sum, with an eigendecomposition), the generalised eigenvalues
  μ and the shift t giving P = N(t, diag μ) against Q = N(0, I); δ is then the exact 1-D
  profile of the most extreme coordinate (the quadratic loss region, ≥ 40 digits) integrated
  against the other coordinate's density (QUADPACK, whose error estimate is the slack);
- both singular on the same line (an exact common null space): the 1-D profile on it.

The condition numbers of the covariances run from 1e6 to 1e16, both directions, ε from 0
to 30. Asserted: ``delta`` (estimate + stated bound) is never below the exact δ beyond the
reference's own accuracy, and ``estimate`` is within ``error_bound`` of it (except for the
labelled upper bounds: ``Renyi bound`` and δ = 1). Run as a script, the scan prints the
number of under-reports (before the near-singular fix: 109 of 300 evaluations, worst by 1).
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy.integrate import quad

from distpriv import gaussian_pair_delta, gaussian_pair_epsilon, gaussian_pair_profile
from distpriv.accounting.pair_profile import pair_profiles_unchecked

# --------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------


def _mp_delta_1d(t: mpmath.mpf, mu: mpmath.mpf, eps: mpmath.mpf) -> mpmath.mpf:
    """δ(ε) of N(t, μ) against N(0, 1), any real ε, from the quadratic loss region.

    The working precision is raised until δ keeps 40 digits beyond its cancellation.
    """
    val = mpmath.mpf(0)
    for dps in (50, 120, 400):
        with mpmath.workdps(dps):
            t_, mu_, e_ = mpmath.mpf(t), mpmath.mpf(mu), mpmath.mpf(eps)
            # log p − log q − ε = A x² + B x + C
            a = mpmath.mpf(1) / 2 - 1 / (2 * mu_)
            b = t_ / mu_
            c = -(t_**2) / (2 * mu_) - mpmath.log(mu_) / 2 - e_
            sd = mpmath.sqrt(mu_)

            def mass(lo, hi, sd=sd, t_=t_):
                return (
                    mpmath.ncdf((hi - t_) / sd) - mpmath.ncdf((lo - t_) / sd),
                    mpmath.ncdf(hi) - mpmath.ncdf(lo),
                )

            if a == 0:
                if b == 0:
                    val = max(mpmath.mpf(0), 1 - mpmath.exp(e_)) if c > 0 else mpmath.mpf(0)
                    return val
                root = -c / b
                ps, qs = mass(root, mpmath.inf) if b > 0 else mass(-mpmath.inf, root)
            else:
                disc = b * b - 4 * a * c
                if disc <= 0:
                    return max(mpmath.mpf(0), 1 - mpmath.exp(e_)) if a > 0 else mpmath.mpf(0)
                r1 = (-b - mpmath.sqrt(disc)) / (2 * a)
                r2 = (-b + mpmath.sqrt(disc)) / (2 * a)
                ps, qs = mass(min(r1, r2), max(r1, r2))
                if a > 0:  # the region is outside the roots
                    ps, qs = 1 - ps, 1 - qs
            val = ps - mpmath.exp(e_) * qs
            if val != 0 and mpmath.log10(abs(val)) > -(dps - 45):
                return val
    return val


def _mp_whiten(mean_p, cov_p, mean_q, cov_q):
    """(t, μ) with P = N(t, diag μ), Q = N(0, I) after Q's Cholesky whitening, at 80 digits."""
    with mpmath.workdps(80):
        sp = mpmath.matrix(np.asarray(cov_p, dtype=float).tolist())
        sq = mpmath.matrix(np.asarray(cov_q, dtype=float).tolist())
        d = mpmath.matrix(
            [mpmath.mpf(float(x)) - float(y) for x, y in zip(mean_p, mean_q, strict=True)]
        )
        chol = mpmath.cholesky(sq)
        inv = chol**-1
        mu, vec = mpmath.eigsy(inv * sp * inv.T)
        t = vec.T * (inv * d)
        return [t[i] for i in range(len(mu))], [mu[i] for i in range(len(mu))]


def _ref_whitened(t, mu, eps: float) -> tuple[float, float]:
    """δ(ε) of N(t, diag μ) against N(0, I) (one or two coordinates), and its accuracy."""
    if len(t) == 1:
        return float(_mp_delta_1d(t[0], mu[0], eps)), 1e-30
    # The inner coordinate is the most extreme one (exact); the outer is integrated.
    inner = max(range(2), key=lambda k: abs(mpmath.log(mu[k])))
    outer = 1 - inner
    t_o, mu_o = float(t[outer]), float(mu[outer])
    s_o = math.sqrt(mu_o)

    def f(u: float) -> float:
        y = t_o + s_o * u
        # log N(y; t_o, μ_o) − log N(y; 0, 1)
        l2 = -0.5 * u * u - math.log(s_o) + 0.5 * y * y
        dens = math.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)
        return dens * float(_mp_delta_1d(t[inner], mu[inner], eps - l2))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        val, err = quad(f, -40.0, 40.0, epsabs=1e-15, epsrel=1e-13, limit=400, points=[0.0])
    return val, 10.0 * err + 1e-15


def _reference(pair, eps: float) -> tuple[float, float]:
    """Exact δ(ε) of the pair (P against Q) and the reference's accuracy."""
    mean_p, cov_p, mean_q, cov_q = pair
    t, mu = _mp_whiten(mean_p, cov_p, mean_q, cov_q)
    return _ref_whitened(t, mu, eps)


def _reference_reverse(pair, eps: float) -> tuple[float, float]:
    """Q against P, from the same whitening: in P's coordinates Q = N(−t/√μ, 1/μ)."""
    mean_p, cov_p, mean_q, cov_q = pair
    t, mu = _mp_whiten(mean_p, cov_p, mean_q, cov_q)
    with mpmath.workdps(80):
        t2 = [-ti / mpmath.sqrt(mi) for ti, mi in zip(t, mu, strict=True)]
        mu2 = [1 / mi for mi in mu]
    return _ref_whitened(t2, mu2, eps)


# --------------------------------------------------------------------------------------
# The pairs (dyadic entries: exact in double)
# --------------------------------------------------------------------------------------

# Relative perturbations 2^-k: covariance condition numbers from about 1e6 to 1e16.
_POWERS = (20, 27, 33, 40, 47, 52)


def _line(c: float, s: float, v: float = 1.0) -> np.ndarray:
    """v·[[1, c], [c, c² + s]]: singular for s = 0 (the line x₂ = c x₁), else det v²s."""
    return v * np.array([[1.0, c], [c, c * c + s]])


def _singular_pairs():
    """Exactly singular P against positive definite Q: δ = 1 both ways, every ε."""
    out = []
    for k in _POWERS:
        s = 2.0**-k
        for c, v in ((1.0, 1.0), (0.75, 4.0), (-1.25, 0.5)):
            p, q = _line(c, 0.0, v), _line(c, s, v)
            out.append((f"2d c={c} s=2^-{k}", (np.zeros(2), p, np.array([0.3, 0.3 * c]), q)))
        # Three statistics, the third independent with a different variance.
        p3 = np.zeros((3, 3))
        p3[:2, :2] = _line(1.0, 0.0)
        p3[2, 2] = 2.0
        q3 = p3.copy()
        q3[:2, :2] = _line(1.0, s)
        q3[2, 2] = 3.0
        out.append((f"3d s=2^-{k}", (np.zeros(3), p3, np.array([0.3, 0.3, 0.5]), q3)))
    return out


def _definite_pairs():
    """Both positive definite and near-singular (exact references by integration)."""
    out = [
        # The pair: corners 1 + 1e-11 and 1 + 1e-7 (as written, not dyadic).
        ("issue", (np.zeros(2), _line(1.0, 1e-11), np.array([0.3, 0.3]), _line(1.0, 1e-7))),
    ]
    for kp, kq in ((20, 27), (27, 40), (33, 47), (40, 52), (47, 20), (52, 33)):
        sp, sq = 2.0**-kp, 2.0**-kq
        # Nearly singular along the same line: the sum is as ill-conditioned as the better.
        pair = (np.zeros(2), _line(1.0, sp), np.array([0.3, 0.3]), _line(1.0, sq))
        out.append((f"same line 2^-{kp}/2^-{kq}", pair))
    for kp, kq in ((20, 33), (40, 27), (52, 52)):
        sp, sq = 2.0**-kp, 2.0**-kq
        # Nearly singular along different lines: the sum is well conditioned, but P and Q
        # are each nearly degenerate where the other is not.
        pair = (np.zeros(2), _line(1.0, sp), np.array([0.5, -0.25]), _line(-1.0, sq))
        out.append((f"crossed 2^-{kp}/2^-{kq}", pair))
    return out


_EPS_SINGULAR = (0.0, 1.0, 5.0, 10.0, 30.0)
_EPS_DEFINITE = (1.0, 5.0, 10.0)


def _check(prof, exact: float, slack: float) -> None:
    """delta ≥ exact (to the reference's accuracy); the estimate within its bound."""
    assert 0.0 <= prof.delta <= 1.0
    assert prof.delta >= exact - slack, (prof, exact)
    if prof.method in ("Renyi bound", "different supports"):
        return  # labelled upper bounds (δ = 1 is one); never below the exact value
    assert abs(prof.estimate - exact) <= prof.error_bound + slack, (prof, exact)


# --------------------------------------------------------------------------------------
# Near-singular pairs the fixed tolerance got wrong
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("corner", "eps"), [(1.000000001, 10.0), (1.0000001, 1.0), (1.0000001, 5.0), (1.0000001, 10.0)]
)
def test_near_singular_singular_against_nearly_singular(corner, eps):
    """P lives on the line x₁ = x₂, which Q gives probability zero: δ = 1 both ways."""
    p = [[1.0, 1.0], [1.0, 1.0]]
    q = [[1.0, 1.0], [1.0, corner]]
    fwd = gaussian_pair_profile([0.0, 0.0], p, [0.3, 0.3], q, epsilon=eps)
    rev = gaussian_pair_profile([0.3, 0.3], q, [0.0, 0.0], p, epsilon=eps)
    assert fwd.delta == 1.0 and rev.delta == 1.0
    assert fwd.method == rev.method == "different supports"
    assert gaussian_pair_epsilon([0.0, 0.0], p, [0.3, 0.3], q, delta=0.5) == math.inf


def test_near_singular_both_positive_definite():
    """Corners 1 + 1e-11 and 1 + 1e-7, ε = 5: exact 0.0055201197 (reported 0.0055198728)."""
    pair = (np.zeros(2), _line(1.0, 1e-11), np.array([0.3, 0.3]), _line(1.0, 1e-7))
    exact, slack = _reference(pair, 5.0)
    assert exact == pytest.approx(0.0055201197, abs=1e-10)  # the value, its digits
    prof = gaussian_pair_profile(*pair, epsilon=5.0)
    _check(prof, exact, slack)
    assert prof.delta - exact < 1e-9  # and not loose
    back = (pair[2], pair[3], pair[0], pair[1])
    exact_rev, slack_rev = _reference_reverse(pair, 5.0)
    _check(gaussian_pair_profile(*back, epsilon=5.0), exact_rev, slack_rev)


def test_near_singular_epsilon_zero_without_cancellation():
    """δ(0) = 2Φ(D/2) − 1 at D = 1e-16 is 3.99e-17 (the closed form gave 1e-300)."""
    with mpmath.workdps(50):  # 2Φ(D/2) − 1 cancels 16 digits: 50 leave 34
        exact = float(2 * mpmath.ncdf(mpmath.mpf("1e-16") / 2) - 1)
    assert exact == pytest.approx(3.989422804014327e-17, rel=1e-15)  # D/√(2π)
    for args in (([0.0], [[1.0]], [1e-16], [[1.0]]), ([1e-16], [[1.0]], [0.0], [[1.0]])):
        prof = gaussian_pair_profile(*args, epsilon=0.0)
        assert prof.method == "closed form"
        assert prof.delta >= exact
        assert prof.estimate == pytest.approx(exact, rel=1e-12)


def test_near_singular_variance_ratio_beyond_double_range():
    """N(0, 1e-300) against N(0, 1e300): δ = 1 (was an overflow ParameterError)."""
    for args in (([0.0], [[1e-300]], [0.0], [[1e300]]), ([0.0], [[1e300]], [0.0], [[1e-300]])):
        for eps in (0.0, 1.0, 50.0):
            assert gaussian_pair_delta(*args, epsilon=eps) == 1.0
    # Exact to double precision: the reference at 1e-150 / 1e150 (in range) is 1 too.
    assert float(_mp_delta_1d(0, mpmath.mpf("1e-300"), 50.0)) == 1.0


# --------------------------------------------------------------------------------------
# The scan: condition numbers 1e6–1e16, both directions, several ε
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "pair"), _singular_pairs())
def test_scan_singular_against_definite(name, pair):
    mean_p, cov_p, mean_q, cov_q = pair
    assert np.linalg.matrix_rank(cov_p) < cov_p.shape[0]  # exactly singular, as built
    assert np.all(np.linalg.eigvalsh(cov_q) > 0)
    for eps in _EPS_SINGULAR:
        for args in ((mean_p, cov_p, mean_q, cov_q), (mean_q, cov_q, mean_p, cov_p)):
            prof = gaussian_pair_profile(*args, epsilon=eps)
            _check(prof, 1.0, 0.0)
        # The scale search's path: both directions from one whitening.
        both = pair_profiles_unchecked(mean_p, cov_p, mean_q, cov_q, eps)
        assert [p.delta for p in both] == [1.0, 1.0]


@pytest.mark.parametrize(("name", "pair"), _definite_pairs())
def test_scan_near_singular_definite(name, pair):
    for eps in _EPS_DEFINITE:
        exact, slack = _reference(pair, eps)
        _check(gaussian_pair_profile(*pair, epsilon=eps), exact, slack)
        exact_rev, slack_rev = _reference_reverse(pair, eps)
        back = (pair[2], pair[3], pair[0], pair[1])
        _check(gaussian_pair_profile(*back, epsilon=eps), exact_rev, slack_rev)
        # The scale search's path: both directions from one whitening.
        fwd, rev = pair_profiles_unchecked(*pair, eps)
        _check(fwd, exact, slack)
        _check(rev, exact_rev, slack_rev)


@pytest.mark.parametrize("scale", [1.0, 2.0**-30, 2.0**40])
def test_common_null_space(scale):
    """Both singular on the same line: δ is the 1-D profile along it; off it, δ = 1."""
    p, q = _line(0.75, 0.0, scale), _line(0.75, 0.0, 2.0 * scale)
    on, off = np.array([0.5, 0.375]), np.array([0.5, 0.5])  # on the line x₂ = 0.75 x₁
    for eps in (0.0, 1.0, 4.0):
        # Along the line, coordinate x₁ in units √scale: P = N(0, 1), Q = N(0.5, 2); in
        # Q's standard coordinate P = N(−0.5/√2, 1/2).
        sd = math.sqrt(scale)
        exact = float(_mp_delta_1d(-0.5 / mpmath.sqrt(2), mpmath.mpf(1) / 2, eps))
        prof = gaussian_pair_profile(np.zeros(2), p, on * sd, q, epsilon=eps)
        _check(prof, exact, 1e-15)
        assert prof.method != "different supports"
        assert gaussian_pair_delta(np.zeros(2), p, off * sd, q, epsilon=eps) == 1.0
    # Q exactly singular too but on a different line: δ = 1.
    other = _line(-0.75, 0.0, scale)
    assert gaussian_pair_delta(np.zeros(2), p, np.zeros(2), other, epsilon=1.0) == 1.0


def _scan_under_reports() -> tuple[int, int, float]:
    """(under-reports, evaluations, worst) over the whole scan, for the script below."""
    under, total, worst = 0, 0, 0.0
    for _, pair in _singular_pairs():
        for eps in _EPS_SINGULAR:
            for args in (pair, (pair[2], pair[3], pair[0], pair[1])):
                total += 1
                d = gaussian_pair_profile(*args, epsilon=eps).delta
                under += d < 1.0
                worst = max(worst, 1.0 - d)
    for _, pair in _definite_pairs():
        for eps in _EPS_DEFINITE:
            for args, (exact, slack) in (
                (pair, _reference(pair, eps)),
                ((pair[2], pair[3], pair[0], pair[1]), _reference_reverse(pair, eps)),
            ):
                total += 1
                d = gaussian_pair_profile(*args, epsilon=eps).delta
                under += d < exact - slack
                worst = max(worst, exact - d)
    return under, total, worst


if __name__ == "__main__":
    u, n, w = _scan_under_reports()
    print(f"under-reports: {u} of {n} evaluations; worst {w:.3g}")


# --------------------------------------------------------------------------------------
# The double whitening's stated rounding, against the 80-digit reference
# --------------------------------------------------------------------------------------


def _random_pd(rng: np.random.Generator, m: int, cond: float) -> np.ndarray:
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    c = (q * np.geomspace(1.0, 1.0 / cond, m)) @ q.T
    return c / 2 + c.T / 2


def test_double_whitening_within_its_stated_rounding():
    """Whatever the path, the whitened variances and the two Mahalanobis distances of the
    means are within the decomposition's stated rounding of the exact ones: a = μ/(1 + μ),
    b = 1/(1 + μ), Σ s²/b = Σ t² and Σ s²/a = Σ t²/μ, with μ, t from the independent
    Cholesky whitening by Q. (The shift itself is compared through these invariants: its
    components are defined only up to rotations among nearly equal a_k.)"""
    from distpriv.accounting._whitening import _decompose

    kept = 0
    for log_cond in (1, 2, 3, 4, 6, 8, 10, 12):
        rng = np.random.default_rng(log_cond)
        for _ in range(8):
            m = int(rng.integers(2, 6))
            base = _random_pd(rng, m, 10.0**log_cond)
            cov_p = base + _random_pd(rng, m, 10.0) * 10.0 ** rng.uniform(-log_cond, 0)
            cov_q = base * rng.uniform(0.5, 2.0)
            mean_p, mean_q = rng.normal(size=m), rng.normal(size=m)
            dec = _decompose(mean_p, cov_p, mean_q, cov_q)
            assert dec.kind == "regular"
            kept += np.ndim(dec.err_a) == 0  # the double path (scalar bounds)
            t, mu = _mp_whiten(mean_p, cov_p, mean_q, cov_q)
            with mpmath.workdps(80):
                a_ref = sorted(float(x / (1 + x)) for x in mu)
                b_ref = sorted((float(1 / (1 + x)) for x in mu), reverse=True)
                dq = float(sum(y * y for y in t))
                dp = float(sum(y * y / x for x, y in zip(mu, t, strict=True)))
            order = np.argsort(dec.a)
            a, b, s = dec.a[order], dec.b[order], np.abs(dec.shift[order])
            err_a = np.broadcast_to(dec.err_a, a.shape)[order]
            err_b = np.broadcast_to(dec.err_b, a.shape)[order]
            err_s = np.broadcast_to(dec.err_shift, a.shape)[order]
            assert np.all(np.abs(a - a_ref) <= err_a), (a, a_ref, err_a)
            assert np.all(np.abs(b - b_ref) <= err_b), (b, b_ref, err_b)
            for var, err, ref in ((b, err_b, dq), (a, err_a, dp)):
                # First order, off-diagonal entries (≤ err) included by Cauchy–Schwarz.
                tol = 2 * np.sum(s * err_s / var) + np.max(err) * np.sum(s / var) ** 2
                assert abs(np.sum(s * s / var) - ref) <= tol, (ref, tol)
    assert kept >= 8  # the double path is exercised, not only the extended one


def test_literal_support_check():
    """Exact ranks decide: an exactly singular covariance against one that is not (even by
    2^-52 of its size) differs in support; two covariances made rank-deficient by floating
    point products (never exactly singular) do not; nor do two that are singular on the
    same subspace."""
    from distpriv.accounting._whitening import _literal_support_mismatch

    rng = np.random.default_rng(26)
    for m in (3, 8, 20):
        a = rng.normal(size=(m, m - 1))
        fp = a @ a.T
        assert _literal_support_mismatch(fp, 2.0 * fp + fp) == ""
        ints = np.round(a * 8.0)  # integer entries: the products are exact
        sing = ints @ ints.T  # exactly of rank m − 1
        assert np.linalg.matrix_rank(sing) == m - 1
        bumped = sing.copy()
        bumped[-1, -1] += 2.0**-52 * abs(bumped[-1, -1]) or 1.0
        assert _literal_support_mismatch(sing, bumped) == "P"
        assert _literal_support_mismatch(bumped, sing) == "Q"
        assert _literal_support_mismatch(sing, 3.0 * sing) == ""
        other = np.round(rng.normal(size=(m, m - 1)) * 8.0)
        assert _literal_support_mismatch(sing, other @ other.T) == "P"  # same rank, apart


def test_many_statistics_beyond_the_extended_whitening():
    """30 statistics, the issue's singular block among them: δ = 1 (exact here), never
    the unresolved double value, and labelled as an upper bound where mpmath is not used."""
    m = 30
    p = np.eye(m)
    p[:2, :2] = _line(1.0, 0.0)
    q = p.copy()
    q[:2, :2] = _line(1.0, 1e-9)
    mean_q = np.r_[0.3, 0.3, np.zeros(m - 2)]
    for eps in (1.0, 10.0):
        for args in ((np.zeros(m), p, mean_q, q), (mean_q, q, np.zeros(m), p)):
            prof = gaussian_pair_profile(*args, epsilon=eps)
            assert prof.delta == 1.0 and prof.method == "different supports"
            assert "upper bound" in prof.detail or "degenerate" in prof.detail


# --------------------------------------------------------------------------------------
# Calibration time: the cheap float64 test that decides re-whitening
# --------------------------------------------------------------------------------------


def _wishart(rng: np.random.Generator, m: int) -> np.ndarray:
    x = rng.normal(size=(m + 10, m)) * rng.uniform(0.5, 2.0, size=m)
    c = x.T @ x / (m + 10)
    return c / 2 + c.T / 2


def _reference_profile(mean_p, cov_p, mean_q, cov_q, eps: float):
    """The accountant's inversion on the 80-digit whitening (``_mp_whiten``): with Q
    whitened to I and P = N(t, diag μ), the sum-normalised a = μ/(1+μ), b = 1/(1+μ),
    shift = t/√(1+μ), carried with errors at the level of double rounding of exact values."""
    from distpriv.accounting._whitening import _Decomposition

    t, mu = _mp_whiten(mean_p, cov_p, mean_q, cov_q)
    with mpmath.workdps(80):
        a = np.array([float(x / (1 + x)) for x in mu])
        b = np.array([float(1 / (1 + x)) for x in mu])
        s = np.array([float(y / mpmath.sqrt(1 + x)) for x, y in zip(mu, t, strict=True)])
    u = float(np.finfo(float).eps)
    dec = _Decomposition("regular", a, b, s, err_a=u * a, err_b=u * b, err_shift=u * np.abs(s))
    from distpriv.accounting.pair_profile import _profile_from

    return _profile_from(dec, eps, 1e-12, reverse=False)


def test_double_whitening_kept_when_its_weighted_error_is_small():
    """20 statistics, independent Wishart covariances (as in
    benchmarks/bench_shape_scale.py) plus noise: the double whitening's first-order bound
    (its m² factor) is above 1e-10, which sends the pair to the 50-digit whitening (seconds
    at m = 20); at a scale search's accuracy (1e-7) the double whitening is kept on the
    1e-6 bar of the unweighted bound (its error still added to δ) — and the
    result still brackets the 80-digit reference: ``delta`` ≥ the exact δ, ``estimate``
    within ``error_bound``. The strict accountant (1e-10) still re-whitens this pair."""
    from distpriv.accounting import _whitening as wh

    rng = np.random.default_rng(0)
    m = 20
    cov_p = _wishart(rng, m) + 3.0 * np.eye(m)
    cov_q = _wishart(rng, m) + 3.0 * np.eye(m)
    mean_p = rng.normal(size=m) * 10
    mean_q = mean_p + rng.normal(size=m) * 1.5
    called: list[int] = []
    orig = wh._decompose_extended
    wh._decompose_extended = lambda *a: called.append(1) or orig(*a)
    try:
        prof = gaussian_pair_profile(mean_p, cov_p, mean_q, cov_q, epsilon=1.0)
        assert called == [1]  # strict: re-whitened, as before
        both = pair_profiles_unchecked(mean_p, cov_p, mean_q, cov_q, 1.0, 1e-7)
        assert called == [1]  # at the search's accuracy: the double whitening is kept
    finally:
        wh._decompose_extended = orig
    ref = _reference_profile(mean_p, cov_p, mean_q, cov_q, 1.0)
    ref_back = _reference_profile(mean_q, cov_q, mean_p, cov_p, 1.0)
    assert 1e-3 < ref.estimate < 0.99
    for got, want in ((prof, ref), (both[0], ref), (both[1], ref_back)):
        assert got.method == "characteristic function"
        assert got.delta >= want.estimate - want.error_bound
        assert abs(got.estimate - want.estimate) <= got.error_bound + want.error_bound
    # The search's answer is within its accuracy of the reference.
    assert abs(both[0].delta - ref.delta) < 1e-6
    assert abs(both[1].delta - ref_back.delta) < 1e-6


def test_rewhitening_still_triggers_when_ill_conditioned():
    """The same construction with a shared ill-conditioned part (condition 1e9): the
    weighted error of the double whitening is not small, the test refuses it, the pair is
    re-whitened (extended precision, per-coordinate error bounds), and agrees with the
    80-digit reference."""
    from distpriv.accounting import _whitening as wh

    rng = np.random.default_rng(7)
    m = 6
    base = _random_pd(rng, m, 1e9)
    cov_p = base + 1e-9 * _wishart(rng, m)
    cov_q = base * 1.3 + 1e-9 * _wishart(rng, m)
    mean_p = rng.normal(size=m)
    mean_q = mean_p + 1e-4 * rng.normal(size=m)
    called = []
    orig = wh._decompose_extended
    wh._decompose_extended = lambda *a: called.append(1) or orig(*a)
    try:
        prof = gaussian_pair_profile(mean_p, cov_p, mean_q, cov_q, epsilon=1.0)
    finally:
        wh._decompose_extended = orig
    assert called, "the ill-conditioned pair must be re-whitened"
    ref = _reference_profile(mean_p, cov_p, mean_q, cov_q, 1.0)
    assert prof.delta >= ref.estimate - ref.error_bound
    assert abs(prof.estimate - ref.estimate) <= prof.error_bound + ref.error_bound + 1e-12
