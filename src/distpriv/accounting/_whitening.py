"""Joint whitening of two Gaussians, and their privacy loss as a generalised chi-square.

P = N(μ_p, Σ_p) and Q = N(μ_q, Σ_q) are standardised per statistic (so nothing depends on
units) and whitened by the sum of their covariances; in the eigenbasis of the difference
both covariances are diagonal, diag(a) and diag(b) with a + b = 1, and the privacy loss
log dP/dQ under P is L = c + Σ_k (λ_k Z_k² + β_k Z_k), Z ~ N(0, I) (the generalised
chi-square variable of Imhof 1961 and Davies 1980). Shortcuts are detected here: identical
Gaussians, and different supports (a covariance vanishing where the other does not, means
differing where both vanish, an unresolvable condition number), where δ(ε) = 1.

Private: one step of :mod:`distpriv.accounting.pair_profile`, which turns the decomposition
into a profile.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import ParameterError

# Eigenvalues of the standardised covariance sum at rounding level (relative to the
# largest) are its null space: there both covariances vanish and only the means can
# differ. Nothing above rounding is dropped: a small eigenvalue is a real direction.
_NULL_RTOL = 64 * np.finfo(float).eps
# Beyond this condition number of the retained directions the whitening cannot resolve
# how the covariances differ: δ = 1 is reported (an upper bound), never a guess.
_MAX_CONDITION = 1e13
# A mean difference whose part in that null space is above this fraction of its norm is
# a real difference, not rounding: the supports are parallel affine spaces and δ = 1.
_NULL_DIFF_RTOL = 1e-10
# A whitened variance below this means one Gaussian is degenerate in a direction where
# the other is not (up to 1e-12 of the sum): the supports differ and δ = 1 is reported,
# which is an upper bound whatever the true tiny variance is.
_DEGENERATE_TOL = 1e-12
_U = float(np.finfo(float).eps)
# The double whitening's absolute rounding of the whitened variances is taken as
# _ETA_FACTOR·m·κ·u (κ: condition number of the standardised sum; the errors measured
# against an 80-digit reference are below 0.03 of that, checked in
# tests/test_pair_accountant_near_singular.py).
_ETA_FACTOR = 8.0
# Beyond this first-order rounding of δ (the coefficient errors of `sensitivity` at the
# double whitening's η, summed) it is redone: in long double, then in mpmath.
_EXTENDED_TRIGGER = 1e-10
# Digits of the extended-precision whitening: with κ ≤ _MAX_CONDITION its absolute errors
# in the whitened variances are below 1e-35.
_EXT_DPS = 50
# Beyond this many retained statistics the extended-precision whitening is not attempted;
# the double or long-double one is kept up to this first-order bound (its m² factors make
# 1e-10 out of reach at m = 100), which is added to the error bound; beyond it δ = 1.
_EXT_MAX_DIM = 24
_LARGE_TRIGGER = 1e-6
# Below this condition number of the standardised sum the long-double re-whitening is not
# tried where the double bound is already acceptable: it could gain less than this factor.
_REFINE_MIN_GAIN = 4.0


@dataclass(frozen=True)
class _Loss:
    """L = c + Σ_k (λ_k Z_k² + β_k Z_k), Z ~ N(0, I): the privacy loss under P."""

    lam: np.ndarray
    beta: np.ndarray
    const: float


@dataclass(frozen=True)
class _Decomposition:
    """P and Q in common whitened coordinates where both covariances are diagonal.

    P: y ~ N(shift, diag(a)), Q: y ~ N(0, diag(b)), a + b = 1 (up to rounding). ``kind``
    is ``"regular"`` or a shortcut: ``"different supports"`` or ``"identical"``.
    """

    kind: str
    a: np.ndarray
    b: np.ndarray
    shift: np.ndarray
    detail: str = ""
    condition: float = 1.0
    degenerate: str = ""  # "P" or "Q": which one is degenerate (kind "different supports")
    # Absolute bounds on the rounding of a, b and shift (first order): η = 8·m·κ·u for the
    # double whitening, a few ulps (relative) for the extended one.
    err_a: np.ndarray | float = 0.0
    err_b: np.ndarray | float = 0.0
    err_shift: np.ndarray | float = 0.0

    def swapped(self) -> _Decomposition:
        """Q against P in the same whitening: a and b exchanged, the shift negated.

        Exchanging P and Q leaves the standardised sum and its eigendecomposition as they
        are (floating-point addition commutes) and negates A − B, whose eigenvectors are
        the same: the whitening of (Q, P) is this one, up to the order, signs and rounding
        of its eigenvectors, none of which changes the privacy loss's distribution.
        """
        who = {"P": "Q", "Q": "P"}.get(self.degenerate, "")
        detail = _degenerate_detail(who) if who else self.detail
        return _Decomposition(
            self.kind, self.b, self.a, -self.shift, detail, self.condition, who,
            self.err_b, self.err_a, self.err_shift,
        )  # fmt: skip


def _degenerate_detail(who: str) -> str:
    return f"{who} is degenerate in a direction where the other is not"


def _finite(x: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(x)):
        raise ParameterError(
            f"{what} overflows double precision; rescale the statistics (the guarantee "
            "does not depend on their units)"
        )
    return x


def _decompose(
    mp: np.ndarray,
    sp: np.ndarray,
    mq: np.ndarray,
    sq: np.ndarray,
    accept: Callable[[_Decomposition], bool] | None = None,
) -> _Decomposition:
    """Whiten both Gaussians jointly; scale-free (standardised per statistic first).

    In double precision where that is accurate enough (the usual case). Where the double
    whitening's own rounding (about m·κ·u in the whitened variances, κ the condition
    number of the standardised sum) is not small against the smallest whitened variance
    it must resolve (near-singular covariances): again, on the pair transformed
    by the first whitening in long double (:func:`_refine`), and if that is not enough in
    extended precision (:func:`_decompose_extended`).

    ``accept`` (to save calibration time) is the cheap float64 test of whether that is
    needed: given the double decomposition whose first-order bound is at most
    ``_LARGE_TRIGGER`` (so the second-order term its doubling covers stays negligible),
    it says whether the error that bound adds to δ (weighted by the tail probability, as
    ``_inversion._whitening_error`` adds it) is already within the accuracy asked; then
    the double one is kept. Without it (None) only the unweighted bound decides.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        diff = _finite(mp - mq, "the mean difference mean_p - mean_q")
        total = _finite(sp + sq, "cov_p + cov_q")
    var = np.diagonal(total)
    zero = var == 0.0  # both variances exactly zero (PSD): the statistic is a constant
    if np.any(diff[zero] != 0.0):
        k = int(np.flatnonzero(zero & (diff != 0.0))[0])
        return _Decomposition(
            "different supports",
            *(np.zeros(0),) * 3,
            detail=f"statistic {k} is constant under both with different values",
        )
    keep = ~zero
    if not np.any(keep):
        return _Decomposition("identical", *(np.zeros(0),) * 3, detail="both are point masses")
    scale = 1.0 / np.sqrt(var[keep])
    sp_k, sq_k = sp[np.ix_(keep, keep)], sq[np.ix_(keep, keep)]
    diff_k, means = diff[keep], (mp[keep], mq[keep])
    with np.errstate(over="ignore", invalid="ignore"):
        d = _finite(diff_k * scale, "the standardised mean difference")
        ap = sp_k * np.outer(scale, scale)
        aq = sq_k * np.outer(scale, scale)
    w, u = np.linalg.eigh(ap + aq)
    null = w <= _NULL_RTOL * w.size * w[-1]
    if np.any(null):
        # Directions where the sum is at the rounding level of the entries. If the two
        # covariances are exactly singular on different subspaces (P on a line
        # that Q, positive definite up to 1e-15 of its size, gives probability zero), the
        # supports differ; otherwise both vanish there, up to the rounding of the entries.
        who = _literal_support_mismatch(sp_k, sq_k)
        if who:
            return _degenerate(who)
        proj = u[:, null].T @ d
        part = np.linalg.norm(proj)
        if part > _NULL_DIFF_RTOL * max(float(np.linalg.norm(d)), 1e-300) and part > 0:
            return _means_differ_in_null()
        # (proj != 0, not part > 0: the norm of a 1e-300 part underflows to 0.)
        if np.any(proj != 0.0) and _literal_mean_outside(sp_k, sq_k, *means):
            return _means_differ_in_null(literal=True)
        w, u = w[~null], u[:, ~null]
    cond = float(w[-1] / w.min())
    if cond > _MAX_CONDITION:
        return _unresolvable(cond)
    a, b, shift, eta, err_shift, white = _whiten(w, u, ap, aq, d, 0.0, 0.0)
    if float(np.min(np.minimum(a, b))) + eta <= _DEGENERATE_TOL:
        # Certainly at most the tolerance: δ = 1 is the upper bound reported.
        return _degenerate("P" if np.min(a) <= np.min(b) else "Q")
    # The dropped off-diagonal entries of the whitened covariances are at most η too; to
    # first order they move the loss by at most m times what diagonal errors η do
    # (Cauchy–Schwarz on Σ_ij |x_i| |x_j| / (b_i b_j)), so a and b are given m·η.
    # Beyond _EXT_MAX_DIM statistics mpmath is not an option: a looser bar is accepted.
    limit = _EXTENDED_TRIGGER if a.size <= _EXT_MAX_DIM else _LARGE_TRIGGER
    first = _first_order(a, b, shift, eta, err_shift)
    if first <= _EXTENDED_TRIGGER:
        return _finish(a, b, shift, cond, a.size * eta, a.size * eta, err_shift)
    if first <= _LARGE_TRIGGER:
        double = _finish(a, b, shift, cond, a.size * eta, a.size * eta, err_shift)
        if double.kind == "regular" and accept is not None and accept(double):
            return double
        if first <= limit and cond < _REFINE_MIN_GAIN:
            # The re-whitened pair's η is at least _ETA_FACTOR·m·u (its condition number is
            # ≥ 1): re-whitening could shrink this bound by κ < _REFINE_MIN_GAIN at most,
            # and the bound is already one the long-double step would be allowed to keep.
            return double
    # The double whitening cannot resolve the smallest variances (or the shift along
    # them) to the accuracy asked: its W, applied in long double, leaves an equivalent
    # pair whose sum is within κ·u of I, whitened again in double; else extended precision.
    if a.size > _EXT_MAX_DIM and first > limit and white.shape[0] == white.shape[1]:
        # The rounding measured instead of its a priori bound (m³·κ·u, which no pair of
        # hundreds of statistics meets, even after the long-double re-whitening):
        # _whitening_posterior.py. Tried first: it costs about what _refine does.
        from ._whitening_posterior import posterior_decomposition

        post = posterior_decomposition(white, means, sp_k, sq_k, scale)
        if post is not None:
            pa, pb, ps, ea, eb, es = post
            measured = max(
                c0 + c1 + 2.0 * c2
                for c0, c1, c2 in (
                    sensitivity(pa, pb, ps, ea, eb, es),
                    sensitivity(pb, pa, ps, eb, ea, es),
                )
            )
            if measured <= limit:
                return _finish(pa, pb, ps, cond, ea, eb, es)
    refined = _refine(white, means, sp_k, sq_k, scale, cond, limit, accept)
    if refined is not None:
        return refined
    if first <= limit:
        return _finish(a, b, shift, cond, a.size * eta, a.size * eta, err_shift)
    if a.size > _EXT_MAX_DIM:
        # mpmath's eigendecomposition grows like m³ at 50 digits (seconds beyond this):
        # δ = 1 is the upper bound reported, never the unresolved double value.
        return _Decomposition(
            "different supports",
            *(np.zeros(0),) * 3,
            detail=f"numerically unresolvable in double and long double precision, and "
            f"{a.size} statistics are beyond the extended-precision whitening's "
            f"{_EXT_MAX_DIM}; delta = 1 is the upper bound reported",
        )
    return _decompose_extended(means, sp_k, sq_k, scale)


def _whiten(
    w: np.ndarray,
    u: np.ndarray,
    ap: np.ndarray,
    aq: np.ndarray,
    d: np.ndarray,
    entry_err: float,
    d_err: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float, np.ndarray]:
    """Whiten by the sum's eigendecomposition (w, u); (a, b, shift, η, shift error, W).

    Absolute rounding of the whitened variances: the computed W whitens the sum only up
    to I + F, ‖F‖ ≲ m·κ·u (backward-stable eigendecomposition: an error u·‖S‖ in the sum
    becomes κ·u once whitened), which the normalisation a + b = 1 moves into a and b; it
    moves the shift by as much relative to its size, and the products Wᵀd add u·‖W‖·‖d‖
    (as does the rounding of μ_p − μ_q and of the standardisation). ``entry_err`` and
    ``d_err`` are absolute errors the inputs already carry (amplified by ‖W‖²  and ‖W‖).
    """
    cond = float(w[-1] / w.min())
    white = u / np.sqrt(w)
    a_mat = white.T @ ap @ white
    b_mat = white.T @ aq @ white
    a_mat, b_mat = (a_mat + a_mat.T) / 2, (b_mat + b_mat.T) / 2
    _, v = np.linalg.eigh(a_mat - b_mat)
    # vₖᵀ A vₖ by a BLAS product (its rounding, like einsum's, is within m·u·‖A‖ ≤ η):
    # the unblocked three-operand einsum took 1.1 s per matrix at m = 1,000, this 0.05 s.
    a = np.sum(v * (a_mat @ v), axis=0)
    b = np.sum(v * (b_mat @ v), axis=0)
    tot = a + b
    a, b = a / tot, b / tot
    shift = v.T @ (white.T @ d)
    eta = _ETA_FACTOR * a.size * cond * _U + entry_err / float(w.min())
    err_shift = eta * float(np.linalg.norm(shift)) + (
        _ETA_FACTOR * a.size * _U * float(np.linalg.norm(d)) + d_err
    ) / math.sqrt(float(w.min()))
    return a, b, shift, eta, err_shift, white


def _first_order(
    a: np.ndarray, b: np.ndarray, shift: np.ndarray, eta: float, err_shift: float
) -> float:
    """The first-order error bound on δ for errors m·η in a, b (inf if a variance is
    within η of 0), the larger of the two directions (P against Q and Q against P, so that
    the choice of method does not depend on the order of the pair)."""
    if float(np.min(np.minimum(a, b))) - eta <= 0.0:
        return math.inf
    err = a.size * eta
    return max(
        c0 + c1 + 2.0 * c2
        for c0, c1, c2 in (
            sensitivity(x, y, shift, err, err, err_shift) for x, y in ((a, b), (b, a))
        )
    )


def _refine(
    white: np.ndarray,
    means: tuple[np.ndarray, np.ndarray],
    sp: np.ndarray,
    sq: np.ndarray,
    scale: np.ndarray,
    cond: float,
    limit: float,
    accept: Callable[[_Decomposition], bool] | None = None,
) -> _Decomposition | None:
    """Second whitening, of the pair transformed by the first W in long double.

    Any invertible W is an exact change of coordinates: (Wᵀ A_p W, Wᵀ A_q W, Wᵀ d) has the
    same δ. Computed in long double (u_ld = 1.1e-19 on x86) its entries carry 4·m·u_ld·κ,
    and its sum is within m·κ·u of I, so the double whitening of it is well conditioned.
    None where long double is no wider than double, or where this is still not enough.
    """
    u_ld = float(np.finfo(np.longdouble).eps)
    if u_ld > _U * 1e-2:
        return None
    ld = np.longdouble
    m = sp.shape[0]
    sc = scale.astype(ld)
    ap = sp.astype(ld) * np.outer(sc, sc)
    aq = sq.astype(ld) * np.outer(sc, sc)
    ap, aq = (ap + ap.T) / 2, (aq + aq.T) / 2
    d = (means[0].astype(ld) - means[1].astype(ld)) * sc
    w1 = white.astype(ld)
    # np.dot: matmul's sums in matmul's order for long double, 1.7x faster (no BLAS).
    a1 = np.dot(np.dot(w1.T, ap), w1)
    b1 = np.dot(np.dot(w1.T, aq), w1)
    a1, b1 = ((a1 + a1.T) / 2).astype(float), ((b1 + b1.T) / 2).astype(float)
    d1 = np.dot(w1.T, d).astype(float)
    entry_err = 4.0 * m * u_ld * cond
    d_err = 4.0 * m * u_ld * float(np.linalg.norm(d.astype(float))) * math.sqrt(cond)
    w, u = np.linalg.eigh(a1 + b1)
    if not float(w[0]) > 0.5:  # the first whitening left I + F with ‖F‖ ≥ 1/2: give up
        return None
    a, b, shift, eta, err_shift, _ = _whiten(w, u, a1, b1, d1, entry_err, d_err)
    if float(np.min(np.minimum(a, b))) + eta <= _DEGENERATE_TOL:
        return _degenerate("P" if np.min(a) <= np.min(b) else "Q")
    first = _first_order(a, b, shift, eta, err_shift)
    if first <= limit:
        return _finish(a, b, shift, cond, a.size * eta, a.size * eta, err_shift)
    if first <= _LARGE_TRIGGER and accept is not None:
        done = _finish(a, b, shift, cond, a.size * eta, a.size * eta, err_shift)
        if done.kind == "regular" and accept(done):
            return done  # what `accept` asks of the double whitening, met here
    return None


def _means_differ_in_null(literal: bool = False) -> _Decomposition:
    why = " (exactly, in the covariances and means as given)" if literal else ""
    detail = "the means differ in a direction where both covariances vanish" + why
    return _Decomposition("different supports", *(np.zeros(0),) * 3, detail=detail)


def _literal_mean_outside(
    sp: np.ndarray, sq: np.ndarray, mean_p: np.ndarray, mean_q: np.ndarray
) -> bool:
    """Whether, all taken as exact, μ_p − μ_q is outside the range of Σ_p + Σ_q: then the
    Gaussians are mutually singular and δ = 1 at every ε, however small that part is
    (exact rational arithmetic, as :func:`_literal_support_mismatch`)."""
    fs = [[Fraction(float(x)) + Fraction(float(y)) for x, y in zip(a, b, strict=True)]
          for a, b in zip(sp, sq, strict=True)]  # fmt: skip
    rank = _exact_rank(fs)
    if rank == len(fs):
        return False
    diff = [Fraction(float(x)) - Fraction(float(y)) for x, y in zip(mean_p, mean_q, strict=True)]
    return _exact_rank([[*row, dk] for row, dk in zip(fs, diff, strict=True)]) > rank


def _exact_rank(rows: list[list[Fraction]]) -> int:
    """Rank of a rational matrix (Gaussian elimination in exact arithmetic)."""
    rows = [list(row) for row in rows]
    rank = 0
    n_cols = len(rows[0]) if rows else 0
    for col in range(n_cols):
        piv = next((r for r in range(rank, len(rows)) if rows[r][col] != 0), None)
        if piv is None:
            continue
        rows[rank], rows[piv] = rows[piv], rows[rank]
        top = rows[rank]
        for r in range(rank + 1, len(rows)):
            f = rows[r][col] / top[col]
            if f:
                rows[r] = [x - f * y for x, y in zip(rows[r], top, strict=True)]
        rank += 1
    return rank


_PRIME = 2**31 - 1  # products of two residues fit in int64


def _rank_mod_p(mat: np.ndarray) -> int:
    """Rank modulo the prime 2^31 − 1 of a double matrix scaled to integers (≤ its rank).

    Every double is a dyadic rational; multiplied by the largest denominator the matrix
    is an integer one, exactly. Row reduction of its residues is vectorised (int64).
    """
    ratios = [float(x).as_integer_ratio() for x in mat.ravel()]
    den = max(d for _, d in ratios)
    n_rows, n_cols = int(mat.shape[0]), int(mat.shape[1])
    res = np.array([(n * (den // d)) % _PRIME for n, d in ratios], dtype=np.int64)
    res = res.reshape(n_rows, n_cols)
    rank = 0
    for col in range(n_cols):
        rows = np.flatnonzero(res[rank:, col]) + rank
        if rows.size == 0:
            continue
        res[[rank, rows[0]]] = res[[rows[0], rank]]
        inv = pow(int(res[rank, col]), _PRIME - 2, _PRIME)
        pivot = (res[rank] * inv) % _PRIME
        below = res[rank + 1 :, col].copy()
        # (a − f·b) mod p, one multiplication at a time so nothing exceeds int64.
        res[rank + 1 :] = (res[rank + 1 :] - (below[:, None] * pivot[None, :]) % _PRIME) % _PRIME
        rank += 1
        if rank == n_rows:
            break
    return rank


def _literal_support_mismatch(sp: np.ndarray, sq: np.ndarray) -> str:
    """ "P" or "Q" if the covariances, taken as exact, span different subspaces, else "".

    For positive semi-definite matrices the range of Σ_p is inside that of Σ_p + Σ_q, with
    equality iff their ranks agree: the supports (as linear spaces) coincide iff
    rank Σ_p = rank Σ_q = rank(Σ_p + Σ_q). Exact rational arithmetic: a rank deficiency
    here is literal, never rounding (a covariance computed in floating point is almost
    never exactly singular; one given as exactly singular is taken at its word).
    """
    full = sp.shape[0]
    if _rank_mod_p(sp) == full and _rank_mod_p(sq) == full:
        # Full rank modulo a prime implies full rank (a nonzero determinant mod p is a
        # nonzero determinant), and so does the sum's (PSD): the usual case, covariances
        # computed in floating point. Exact rational elimination settles the rest.
        return ""
    fp = [[Fraction(float(x)) for x in row] for row in sp]
    fq = [[Fraction(float(x)) for x in row] for row in sq]
    fs = [[x + y for x, y in zip(a, b, strict=True)] for a, b in zip(fp, fq, strict=True)]
    rank_p, rank_q = _exact_rank(fp), _exact_rank(fq)
    if rank_p != rank_q:
        return "P" if rank_p < rank_q else "Q"
    rank_s = _exact_rank(fs)
    return "" if rank_s == rank_p else "P"


def _unresolvable(cond: float) -> _Decomposition:
    return _Decomposition(
        "different supports",
        *(np.zeros(0),) * 3,
        detail=f"numerically unresolvable: the standardised covariance sum has condition "
        f"number {cond:.2g} > {_MAX_CONDITION:.0e}; delta = 1 is the upper bound reported",
    )


def _degenerate(who: str) -> _Decomposition:
    return _Decomposition(
        "different supports",
        *(np.zeros(0),) * 3,
        detail=_degenerate_detail(who),
        degenerate=who,
    )


def _finish(
    a: np.ndarray,
    b: np.ndarray,
    shift: np.ndarray,
    cond: float,
    err_a: np.ndarray | float,
    err_b: np.ndarray | float,
    err_shift: np.ndarray | float,
) -> _Decomposition:
    """The decomposition, after the degeneracy and far-apart shortcuts."""
    if np.min(a) <= _DEGENERATE_TOL or np.min(b) <= _DEGENERATE_TOL:
        return _degenerate("P" if np.min(a) <= np.min(b) else "Q")
    if float(np.max(np.abs(shift))) > 1e50:
        # The means are more than 1e50 standard deviations apart: δ = 1 to double
        # precision (and 1 is always an upper bound); the squares would overflow.
        return _Decomposition(
            "different supports",
            *(np.zeros(0),) * 3,
            detail="the means are more than 1e50 standard deviations apart",
        )
    return _Decomposition(
        "regular", a, b, shift, condition=cond, err_a=err_a, err_b=err_b, err_shift=err_shift
    )


def sensitivity(
    a: np.ndarray,
    b: np.ndarray,
    shift: np.ndarray,
    err_a: np.ndarray | float,
    err_b: np.ndarray | float,
    err_shift: np.ndarray | float,
) -> tuple[float, float, float]:
    """First-order bounds on the errors of the loss's coefficients, from those of a, b, shift.

    L = c + Σ_k λ_k Z_k² + β_k Z_k with c = Σ ½ log(b/a) + s²/(2b), λ = (a − b)/(2b) and
    β = s√a/b (:func:`_loss`). Returns (|Δc|, Σ|Δβ_k|, Σ|Δλ_k|). They grow like
    1/min(a, b): the near-degenerate directions are where the whitening's absolute
    rounding matters.
    """
    s = np.abs(shift)
    ra = np.sqrt(a)
    dc = 0.5 * err_a / a + 0.5 * err_b / b + s * err_shift / b + s * s * err_b / (2.0 * b * b)
    dlam = 0.5 * err_a / b + a * err_b / (2.0 * b * b)
    dbeta = err_shift * ra / b + s * (0.5 * err_a / (ra * b) + ra * err_b / (b * b))
    return float(np.sum(dc)), float(np.sum(dbeta)), float(np.sum(dlam))


def _decompose_extended(
    means: tuple[np.ndarray, np.ndarray], sp: np.ndarray, sq: np.ndarray, scale: np.ndarray
) -> _Decomposition:
    """The joint whitening in extended precision (``_EXT_DPS`` digits, mpmath).

    The double inputs (means and covariances) are taken as exact, and so are the double
    ``scale`` factors (any per-statistic scaling is an exact change of units). Every step
    then carries an absolute error of about m·κ·10^(−``_EXT_DPS``) in the whitened
    variances, far below the degeneracy tolerance and the double rounding of the results,
    which are then relatively accurate to a few ulps: the rounding left is that of a
    perfectly conditioned problem. Directions where the standardised sum is at the
    rounding level of double entries (``_NULL_RTOL``) are the common null space, unless
    the covariances, taken as exact, span different subspaces
    (:func:`_literal_support_mismatch`): then δ = 1.
    """
    import mpmath  # imported here: only near-singular pairs need it

    mean_p, mean_q = means
    m = mean_p.size
    # Symmetrised as the public functions' input check does (an identity on symmetric
    # input), so internal callers passing C with rounding asymmetry get the same answer.
    sp, sq = sp / 2 + sp.T / 2, sq / 2 + sq.T / 2
    mpf = mpmath.mpf
    with mpmath.workdps(_EXT_DPS):
        sc = [mpf(float(x)) for x in scale]
        ap = mpmath.matrix(m, m)
        aq = mpmath.matrix(m, m)
        for i in range(m):
            for j in range(m):
                ap[i, j] = mpf(float(sp[i, j])) * sc[i] * sc[j]
                aq[i, j] = mpf(float(sq[i, j])) * sc[i] * sc[j]
        # The mean difference too is exact here (its double rounding, u·|μ| per statistic,
        # is amplified by √κ once whitened).
        d = mpmath.matrix([(mpf(float(mean_p[i])) - mean_q[i]) * sc[i] for i in range(m)])
        w, u = mpmath.eigsy(ap + aq)
        w_max = max(w)
        null = [i for i in range(m) if w[i] <= _NULL_RTOL * m * w_max]
        rest = [i for i in range(m) if w[i] > _NULL_RTOL * m * w_max]
        if null:
            who = _literal_support_mismatch(sp, sq)
            if who:
                return _degenerate(who)
            part = mpmath.sqrt(sum((u[:, i].T * d)[0] ** 2 for i in null))
            if part > _NULL_DIFF_RTOL * mpmath.norm(d) and part > 0:
                return _means_differ_in_null()
            if part > 0 and _literal_mean_outside(sp, sq, mean_p, mean_q):
                return _means_differ_in_null(literal=True)
        cond = float(w_max / min(w[i] for i in rest))
        if cond > _MAX_CONDITION:
            return _unresolvable(cond)
        k = len(rest)
        white = mpmath.matrix(m, k)
        for c, i in enumerate(rest):
            inv = 1 / mpmath.sqrt(w[i])
            for r in range(m):
                white[r, c] = u[r, i] * inv
        a_mat = white.T * ap * white
        b_mat = white.T * aq * white
        _, v = mpmath.eigsy(a_mat - b_mat)
        proj = v.T * a_mat * v
        a = [proj[i, i] for i in range(k)]
        proj = v.T * b_mat * v
        b = [proj[i, i] for i in range(k)]
        shift = v.T * (white.T * d)
        a_out = np.array([float(a[i] / (a[i] + b[i])) for i in range(k)])
        b_out = np.array([float(b[i] / (a[i] + b[i])) for i in range(k)])
        s_out = np.array([float(shift[i]) for i in range(k)])
    # Rounded to double: relative errors of a few ulps, as for a perfectly conditioned sum
    # (plus the extended arithmetic's own absolute error, m·κ·10^-50 at most).
    tiny = m * cond * 10.0 ** (-_EXT_DPS + 5)
    err_s = 4.0 * _U * np.abs(s_out) + tiny * (1.0 + float(np.linalg.norm(s_out)))
    err_a, err_b = 4.0 * _U * a_out + tiny, 4.0 * _U * b_out + tiny
    return _finish(a_out, b_out, s_out, 1.0, err_a, err_b, err_s)


def _loss(dec: _Decomposition) -> _Loss:
    """Coefficients of the privacy loss log p/q (y) with y ~ P, as a quadratic form in Z."""
    a, b, m = dec.a, dec.b, dec.shift
    lam = (a - b) / (2.0 * b)
    beta = m * np.sqrt(a) / b
    const = float(np.sum(0.5 * np.log(b / a) + m * m / (2.0 * b)))
    return _Loss(lam, beta, const)
