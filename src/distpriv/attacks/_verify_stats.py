"""Private statistics of the data-level check (:mod:`distpriv.attacks.verify`):
the known noise's frame, candidate sets and their thresholds, Clopper–Pearson counts, the
estimate of δ on the evaluation split, the null control and :func:`detectable_delta`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..central import CalibratedMechanism
from ..errors import MechanismNotApplicableError, ParameterError
from ..util.distributions import beta_ppf, binom_sf
from ..util.threads import one_blas_thread
from .bounds import clopper_pearson
from .likelihood import GaussianLikelihoodRatio
from .verify_results import POWER

__all__ = ["detectable_delta"]


# Mixture density evaluations per chunk (kept around 32 MB of float64).
_CHUNK_ELEMENTS = 4_000_000


# Centres of the kernel (mixture-density) classifier: more costs time and adds little.
_MAX_CENTRES = 2000


# A noise variance below this fraction of the largest is treated as no noise.
_RANK_TOL = 1e-12


# Threshold selection on the train split: maximise a one-sided CP bound at this level
# (about one standard error), which favours sets whose value is not a fluke of few draws.
_SELECT_CONF = 0.84


_N_THRESHOLDS = 120


@dataclass(frozen=True)
class _NoiseFrame:
    """Z in whitened coordinates: w = T y; the density of Z is a product in w."""

    kind: str
    transform: np.ndarray  # (r, m): rows span the noise range, scaled to unit noise
    basis: np.ndarray  # (m, r) unit directions of the range
    scales: np.ndarray  # (r,) noise scale along each direction (sd or Laplace b)

    @property
    def rank(self) -> int:
        return int(self.transform.shape[0])

    def log_kernel(self, w: np.ndarray, centers: np.ndarray) -> np.ndarray:
        """log φ(w − c) up to a constant shared by all hypotheses, shape (len(w), len(c))."""
        if self.kind == "gaussian":
            sq = (
                np.sum(w * w, axis=1)[:, None]
                + np.sum(centers * centers, axis=1)[None, :]
                - 2.0 * (w @ centers.T)
            )
            return -0.5 * np.maximum(sq, 0.0)
        return -np.sum(np.abs(w[:, None, :] - centers[None, :, :]), axis=2)


def _noise_frame(mechanism: CalibratedMechanism) -> _NoiseFrame:
    comps = [c for c in mechanism.noise.components if np.any(c.scales > 0)]
    kinds = {c.kind for c in comps}
    m = mechanism.dim
    if not comps:
        return _NoiseFrame("gaussian", np.zeros((0, m)), np.zeros((m, 0)), np.zeros(0))
    if kinds == {"gaussian"}:
        # A sum of independent Gaussians is Gaussian with the summed covariance.
        vals, vecs = np.linalg.eigh(mechanism.noise_covariance)
        keep = vals > _RANK_TOL * max(float(vals.max()), 0.0)
        sd = np.sqrt(vals[keep])
        return _NoiseFrame("gaussian", (vecs[:, keep] / sd).T, vecs[:, keep], sd)
    if kinds == {"laplace"} and len(comps) == 1:
        c = comps[0]
        keep = c.scales > 0
        b = c.scales[keep]
        return _NoiseFrame("laplace", (c.basis[:, keep] / b).T, c.basis[:, keep], b)
    raise MechanismNotApplicableError(
        f"verify_on_data: mechanism {mechanism.name!r} adds "
        f"{' + '.join(c.kind for c in comps)} noise; the data-level check needs Gaussian "
        "noise or one Laplace component (no closed-form density for the sum)"
    )


def _log_mixture(frame: _NoiseFrame, w: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """log of the mixture density (1/N) Σ_c φ(w − c) at each row of w, in chunks.

    Gaussian kernel (the dominant cost of the data-level check):
    log φ(w − c) = −½‖w‖² + w·c − ½‖c‖², after moving the origin to the centres' mean (the
    kernel sees only w − c), which keeps the values small enough for float32 products and
    log-sum-exp; BLAS on one thread, whose idle threads would otherwise spin. The
    log-sum-exp is shifted by a bound known before the product (:func:`_shifted_rows`), so
    one float32 product gives w·c − ½‖c‖² − shift and the block is exponentiated and summed
    in place; rows far from every centre, where that bound could underflow, take the
    exact per-row maximum instead (:func:`_max_shifted_rows`). The score stays a fixed
    function of the release, chosen before the evaluation draws, so the held-out bounds
    hold whatever its rounding (tests/attacks/test_verify_mixture.py: within 1e-4 of a
    float64 log-sum-exp).
    """
    n_c = centers.shape[0]
    out = np.empty(w.shape[0])
    if frame.kind == "gaussian":
        origin = centers.mean(axis=0)
        c, x = centers - origin, w - origin
        rad = np.sqrt(np.sum(c * c, axis=1))
        norm = np.sqrt(np.sum(x * x, axis=1))
        r_max, r_min = float(rad.max()), float(rad.min())
        # max_c w·c − ½‖c‖² ≤ max over r ≤ r_max of ‖w‖r − ½r² (Cauchy–Schwarz), and is at
        # least −‖w‖ r_min − ½ r_min² (the centre nearest the origin): the shift is above
        # the row's largest term by at most ``gap``.
        upper = np.where(norm >= r_max, norm * r_max - 0.5 * r_max * r_max, 0.5 * norm * norm)
        gap = norm * (r_max + r_min) + 0.5 * r_min * r_min
        near = gap <= _SHIFT_GAP
        with one_blas_thread():
            if np.all(near):
                out[:] = _shifted_rows(x, c, rad, upper)
            else:
                out[near] = _shifted_rows(x[near], c, rad, upper[near])
                out[~near] = _max_shifted_rows(x[~near], c)
        return out - 0.5 * norm * norm - math.log(n_c)
    step = max(1, _CHUNK_ELEMENTS // (n_c * max(frame.rank, 1)))
    for start in range(0, w.shape[0], step):
        block = frame.log_kernel(w[start : start + step], centers)
        top = block.max(axis=1)
        np.exp(block - top[:, None], out=block)
        out[start : start + step] = top + np.log(block.sum(axis=1)) - math.log(n_c)
    return out


# A shifted log-sum-exp term is at least e^(−_SHIFT_GAP): far above float32's smallest
# normal number (about e^(−87)), so the sum keeps float32's relative precision.
_SHIFT_GAP = 40.0


def _shifted_rows(x: np.ndarray, c: np.ndarray, rad: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """log Σ_c exp(x·c − ½‖c‖²) per row of x, with each row's exponent lowered by ``shift``
    (an upper bound of its largest term) inside one float32 product: [x, 1, −shift] ·
    [c; −½‖c‖²; 1]. Then the block is exponentiated and summed in place (3 passes over it
    instead of 6 with a per-row maximum)."""
    m, n_c = c.shape[1], c.shape[0]
    c_aug = np.empty((m + 2, n_c), dtype=np.float32)
    c_aug[:m] = c.T
    c_aug[m] = -0.5 * rad * rad
    c_aug[m + 1] = 1.0
    x_aug = np.empty((x.shape[0], m + 2), dtype=np.float32)
    x_aug[:, :m] = x
    x_aug[:, m] = 1.0
    x_aug[:, m + 1] = -shift
    out = np.empty(x.shape[0])
    ones = np.ones(n_c, dtype=np.float32)
    step = max(1, (1 << 18) // n_c)  # 1 MB float32 blocks: the passes stay in cache
    for start in range(0, x.shape[0], step):
        block = x_aug[start : start + step] @ c_aug
        np.exp(block, out=block)
        # The row sums as one BLAS product: a third of numpy's pairwise sum's time (issue
        # 28 item 4), within 3e-7 of a float64 sum (float32 accumulation in blocks).
        out[start : start + step] = np.log(block @ ones)
    return out + shift


def _max_shifted_rows(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """log Σ_c exp(x·c − ½‖c‖²) per row of x, shifted by each row's own maximum."""
    n_c = c.shape[0]
    c32 = np.ascontiguousarray(c.T, dtype=np.float32)
    bias = (-0.5 * np.sum(c * c, axis=1)).astype(np.float32)
    x32 = x.astype(np.float32)
    out = np.empty(x.shape[0])
    step = max(1, (1 << 18) // n_c)
    for start in range(0, x.shape[0], step):
        block = x32[start : start + step] @ c32
        block += bias
        top = block.max(axis=1)
        block -= top[:, None]
        np.exp(block, out=block)
        out[start : start + step] = top + np.log(block.sum(axis=1))
    return out


def _cp(k: np.ndarray, n: int, conf: float, side: str) -> np.ndarray:
    """Vectorised one-sided Clopper–Pearson bound (see :func:`bounds.clopper_pearson`)."""
    k = np.asarray(k, dtype=np.float64)
    a = 1.0 - conf
    with np.errstate(all="ignore"):
        if side == "lower":
            return np.where(k == 0, 0.0, beta_ppf(a, k, n - k + 1))
        return np.where(k == n, 1.0, beta_ppf(1 - a, k + 1, n - k))


def _counts(score: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#{score > t} for each threshold (NaN scores never count)."""
    s = np.sort(score[~np.isnan(score)])
    return s.size - np.searchsorted(s, thresholds, side="right")


def _choose(sp: np.ndarray, sq: np.ndarray, eps: float, fixed: float) -> tuple[float, float]:
    """(threshold, criterion): the set {score > t} with the best CP value on the train split."""
    finite = sp[np.isfinite(sp)]
    levels = np.linspace(0.0, 1.0, _N_THRESHOLDS, endpoint=False)
    ts = np.quantile(finite, levels) if finite.size else np.zeros(0)
    ts = np.unique(np.concatenate([ts, [fixed]]))
    kp, kq = _counts(sp, ts), _counts(sq, ts)
    crit = _cp(kp, sp.size, _SELECT_CONF, "lower") - math.exp(eps) * _cp(
        kq, sq.size, _SELECT_CONF, "upper"
    )
    best = int(np.argmax(crit))
    return float(ts[best]), float(crit[best])


def _evaluate(
    kp: int, np_: int, kq: int, nq: int, eps: float, alpha: float
) -> tuple[float, tuple[float, float]]:
    """Estimate and two-sided interval (each side at 1 − α/2) of P(S) − e^ε Q(S) from the
    counts kp of np_ draws of P and kq of nq draws of Q in S."""
    e = math.exp(eps)
    est = kp / np_ - e * kq / nq
    lo = clopper_pearson(kp, np_, 1 - alpha / 2, "lower") - e * clopper_pearson(
        kq, nq, 1 - alpha / 2, "upper"
    )
    hi = clopper_pearson(kp, np_, 1 - alpha / 2, "upper") - e * clopper_pearson(
        kq, nq, 1 - alpha / 2, "lower"
    )
    return est, (max(0.0, lo), max(0.0, hi))


def detectable_delta(
    q: float,
    n_p: int,
    n_q: int,
    *,
    epsilon: float,
    target: float,
    alpha: float,
    power: float = POWER,
) -> float:
    """Smallest δ = P(S) − e^ε Q(S) certified above ``target`` with probability ``power``.

    Q(S) is held at ``q`` and its upper bound at its Clopper–Pearson value for ⌈q·n_q⌉
    hits; the count of P-draws in S is binomial(n_p, P(S)), so the power is an exact
    binomial tail, solved for P(S) by bisection.

    Returns
    -------
    float
        In (target, 1]; 1.0 when no δ is detectable at these sizes.
    """
    e = math.exp(epsilon)
    kq = min(n_q, math.ceil(q * n_q))
    q_hi = clopper_pearson(kq, n_q, 1 - alpha / 2, "upper")

    def certified(k: int) -> bool:
        return float(_cp(np.array([k]), n_p, 1 - alpha / 2, "lower")[0]) - e * q_hi > target

    # The lower bound grows with k: the least certifying count by bisection
    # (evaluating every k of a large look cost more than the look's statistics).
    if not certified(n_p):
        return 1.0
    a_k, b_k = -1, n_p  # certified(b_k); not certified(a_k) (k = -1 by convention)
    while b_k - a_k > 1:
        mid_k = (a_k + b_k) // 2
        if certified(mid_k):
            b_k = mid_k
        else:
            a_k = mid_k
    k_star = b_k
    a, b = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (a + b)
        if binom_sf(k_star - 1, n_p, mid) >= power:
            b = mid
        else:
            a = mid
    return float(min(1.0, max(target, b - e * q)))


@dataclass(frozen=True)
class _Split:
    fit: list[np.ndarray]
    train: list[np.ndarray]  # releases
    ev: list[np.ndarray]  # releases
    ev_truth: list[np.ndarray]  # statistics behind ev (for the recovery rate)
    train_truth: list[np.ndarray] | None = None  # statistics behind train


def _split(
    samples: list[np.ndarray],
    labels: list[str],
    n_eval: int,
    mechanism: CalibratedMechanism,
    gen: np.random.Generator,
) -> _Split:
    fit, train, ev, truth, tr_truth = [], [], [], [], []
    for lab, s in zip(labels, samples, strict=True):
        if s.shape[0] < 6:
            raise ParameterError(
                f"samples for {lab!r} has {s.shape[0]} draws; the data-level check needs "
                "at least 6 (it uses three independent splits), preferably thousands"
            )
        perm = gen.permutation(s.shape[0])
        k = min(n_eval, s.shape[0] // 2)
        rest = perm[k:]
        h = rest.size // 2
        e = s[perm[:k]]
        truth.append(e)
        ev.append(e + mechanism.noise.sample(e.shape[0], gen))
        tr = s[rest[:h]]
        tr_truth.append(tr)
        train.append(tr + mechanism.noise.sample(tr.shape[0], gen))
        fit.append(s[rest[h:]])
    return _Split(fit, train, ev, truth, tr_truth)


class _ScaledRatio:
    """Gaussian log-ratio in standardised coordinates.

    scipy's singular-covariance cut-off is relative to the largest eigenvalue, so
    statistics on spreads 1e-3 and 1e3 would lose the small one; dividing every
    coordinate by its pooled standard deviation first keeps each direction.
    """

    def __init__(self, lr: GaussianLikelihoodRatio, scale: np.ndarray) -> None:
        self.lr, self.scale = lr, scale

    def log_ratio(self, y: np.ndarray) -> np.ndarray:
        return self.lr.log_ratio(y / self.scale)


def _fit_gaussian(fit_i: np.ndarray, fit_j: np.ndarray, noise_cov: np.ndarray) -> _ScaledRatio:
    """The Gaussian likelihood ratio of the fit split's moments (log p_i − log p_j)."""
    m = fit_i.shape[1]
    means = np.stack([fit_j.mean(axis=0), fit_i.mean(axis=0)])
    covs = np.stack([np.cov(fit_j, rowvar=False), np.cov(fit_i, rowvar=False)]).reshape(2, m, m)
    var = np.diag(covs[0] + covs[1]) / 2.0 + np.diag(noise_cov)
    scale = np.sqrt(np.where(var > 0, var, 1.0))
    outer = np.outer(scale, scale)
    return _ScaledRatio(
        GaussianLikelihoodRatio(means / scale, covs / outer, noise_cov / outer), scale
    )


def _lattice_keys(x: np.ndarray, decoder: Any) -> np.ndarray:
    """Integer coordinates of lattice points, shape (n, m) (rows with NaN are all −1)."""
    z = (x - decoder.origin) / decoder.steps
    bad = ~np.all(np.isfinite(z), axis=1)
    keys = np.rint(np.where(bad[:, None], 0.0, z)).astype(np.int64)
    keys[bad] = -1
    return keys


def _marginal_ratio(fit_i: np.ndarray, fit_j: np.ndarray, decoder: Any) -> Any:
    """Σ_k log p̂_i(x_k) − log p̂_j(x_k): per-statistic lattice histograms (add-½).

    The joint histogram of several statistics is sparse at a few thousand draws; the
    per-statistic ones are not, and see a difference of supports in one statistic (e.g.
    even against odd counts) that a Gaussian test misses.
    """
    ki, kj = _lattice_keys(fit_i, decoder), _lattice_keys(fit_j, decoder)
    n_i, n_j = ki.shape[0], kj.shape[0]

    def score(x: np.ndarray) -> np.ndarray:
        kx = _lattice_keys(x, decoder)
        out = np.zeros(x.shape[0])
        for c in range(x.shape[1]):
            _, inv = np.unique(np.concatenate([ki[:, c], kj[:, c], kx[:, c]]), return_inverse=True)
            n_u = int(inv.max()) + 1
            ci = np.bincount(inv[:n_i], minlength=n_u)
            cj = np.bincount(inv[n_i : n_i + n_j], minlength=n_u)
            q = inv[n_i + n_j :]
            out += np.log((ci[q] + 0.5) / n_i) - np.log((cj[q] + 0.5) / n_j)
        out[~np.all(np.isfinite(x), axis=1)] = np.nan
        return out

    return score


def _point_ratio(fit_i: np.ndarray, fit_j: np.ndarray, decoder: Any) -> Any:
    """log p̂_i(x) − log p̂_j(x) per lattice point x, from the fit split's statistics.

    The histograms are add-½ smoothed counts of the noise-free statistics of the fit split
    (which the lattice decoder's output is compared with): on a decoded release this is
    the plug-in of the likelihood ratio of f itself, with no Gaussian assumption.
    A point seen under neither value scores 0 (log of the sizes' ratio).
    """
    ki, kj = _lattice_keys(fit_i, decoder), _lattice_keys(fit_j, decoder)
    n_i, n_j = ki.shape[0], kj.shape[0]

    def score(x: np.ndarray) -> np.ndarray:
        kx = _lattice_keys(x, decoder)
        allk = np.vstack([ki, kj, kx])
        _, inv = np.unique(allk, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        n_u = int(inv.max()) + 1
        ci = np.bincount(inv[:n_i], minlength=n_u)
        cj = np.bincount(inv[n_i : n_i + n_j], minlength=n_u)
        q = inv[n_i + n_j :]
        out = np.log((ci[q] + 0.5) / n_i) - np.log((cj[q] + 0.5) / n_j)
        out[~np.all(np.isfinite(x), axis=1)] = np.nan
        return out

    return score


def _exact_on_train(sp: _Split, decoder: Any) -> bool:
    """The decoder recovered every training release (never looks at the evaluation split)."""
    if decoder is None or sp.train_truth is None:
        return False
    return all(
        bool(np.all(np.abs(decoder.decode(y) - t) < 0.5 * decoder.steps))
        for y, t in zip(sp.train, sp.train_truth, strict=True)
    )


def _scores(
    sp: _Split, i: int, j: int, mechanism: CalibratedMechanism, frame: _NoiseFrame, decoder: Any
) -> dict[str, tuple[dict[int, np.ndarray], Callable[[np.ndarray], np.ndarray]]]:
    """Per candidate set: its scores (log p_i − log p_j style) on the train releases and the
    score function of a release array (fixed by the fit and train splits only), with which
    the evaluation releases are scored — all at once or batch by batch, and only for the
    chosen sets."""
    out: dict[str, tuple[dict[int, np.ndarray], Callable[[np.ndarray], np.ndarray]]] = {}
    lr = _fit_gaussian(sp.fit[i], sp.fit[j], mechanism.noise_covariance)
    out["gaussian likelihood ratio"] = (
        {h: lr.log_ratio(sp.train[h]) for h in (i, j)},
        lr.log_ratio,
    )
    # When the decoder recovers the statistics exactly, the release is f plus noise that
    # does not depend on θ (f and the noise are read back from y), so f is sufficient
    # and the sets of f values below are as strong as any set of releases: the mixture
    # density (the check's dominant cost) adds nothing and is skipped.
    exact = _exact_on_train(sp, decoder)
    if frame.rank and not exact:
        t = frame.transform
        cents = []
        for h in (i, j):
            c = sp.fit[h]
            step = max(1, c.shape[0] // _MAX_CENTRES)
            cents.append(c[::step][:_MAX_CENTRES] @ t.T)

        def mix(y: np.ndarray) -> np.ndarray:
            w = y @ t.T
            return _log_mixture(frame, w, cents[0]) - _log_mixture(frame, w, cents[1])

        out["mixture density"] = ({h: mix(sp.train[h]) for h in (i, j)}, mix)
    if decoder is not None:
        lr0 = _fit_gaussian(sp.fit[i], sp.fit[j], np.zeros((mechanism.dim, mechanism.dim)))
        dec_tr = {h: decoder.decode(sp.train[h]) for h in (i, j)}
        out["lattice decoding"] = (
            {h: lr0.log_ratio(dec_tr[h]) for h in (i, j)},
            lambda y: lr0.log_ratio(decoder.decode(y)),
        )
        # Sets of lattice points A (points more likely under θ_i than e^ε× under θ_j,
        # by the fit split's histograms); as a set of releases {y : decode(y) ∈ A} it is
        # fixed before the evaluation draws, so its held-out bound stays certified
        # whether or not a given release is decoded exactly.
        pts = _point_ratio(sp.fit[i], sp.fit[j], decoder)
        out["lattice points"] = (
            {h: pts(dec_tr[h]) for h in (i, j)},
            lambda y: pts(decoder.decode(y)),
        )
        marg = _marginal_ratio(sp.fit[i], sp.fit[j], decoder)
        out["lattice points (per statistic)"] = (
            {h: marg(dec_tr[h]) for h in (i, j)},
            lambda y: marg(decoder.decode(y)),
        )
    return out
