"""The tupling mechanism (KM 2019a, Alg. 1): the obfuscated input hidden among k dummies.

Q^tp_{k,ν,A}(x) draws s ~ A(x), k dummies r₁…r_k ~ ν and a uniform position, and outputs the
(k+1)-tuple. With dummies from ν (uniform in the paper) its output distribution under an
input distribution λ is (proof of Props. 10–11)

    Q(λ)[ȳ] = (1/(k+1)) Σ_i A#(λ)[y_i] Π_{j≠i} ν[y_j] = (Π_j ν[y_j]) · S_λ(ȳ) / (k+1),

with S_λ(ȳ) = Σ_i w_λ[y_i] and w_λ = A#(λ)/ν. So the likelihood ratio of a tuple is
S_λ₀(ȳ)/S_λ₁(ȳ) — for uniform ν, Σ_i A#(λ₀)[y_i] / Σ_i A#(λ₁)[y_i] (docs/architecture.md §4) — and
DistP can be evaluated

* by vectorised Monte Carlo over tuples, with confidence intervals from a Chernoff bound
  (:mod:`distpriv.local.montecarlo`);
* exactly by enumerating Y^{k+1} when it is small (:func:`tupling_exact`, here);
* in theory by Thm 3 (:mod:`distpriv.local.bounds`).

The pure ε (δ = 0) is exact in closed form: a ratio of sums is at most the largest ratio
of its terms, attained by the tuple repeating one point, so ε(0) = D∞ between A#(λ₀) and
A#(λ₁) (both directions) — dummies help only for δ > 0 (cf. Prop. 10).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..divergences import check_distribution
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import to_jsonable
from ..util.validation import RngLike, check_positive_int, check_rng, readonly
from .mechanisms import MatrixMechanism, _check_indices, _distances
from .profiles import DistPProfile

__all__ = ["MAX_EXACT_TUPLES", "TuplingMechanism", "tupling_exact", "tupling_mechanism"]

#: Largest |Y|^(k+1) that :func:`tupling_exact` enumerates (two float64 arrays of it).
MAX_EXACT_TUPLES = 1 << 22
_UNIFORM_RTOL = 1e-12


@dataclass(frozen=True, eq=False)
class TuplingMechanism:
    """Q^tp_{k,ν,A}: one output of A hidden among k dummies drawn from ν (KM 2019a, Alg. 1)."""

    #: Number of dummies (≥ 1).
    k: int
    #: The point mechanism A (e.g. the restricted Laplace of Def. 12).
    base: MatrixMechanism
    #: ndarray, shape (n_y,)
    #: ν, the distribution of the dummies; it must give every output positive mass.
    dummy: np.ndarray
    #: ``"tupling"``.
    name: str = "tupling"
    _dummy_cdf: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.base, MatrixMechanism):
            raise ParameterTypeError(
                f"base must be a MatrixMechanism, got {type(self.base).__name__}"
            )
        k = check_positive_int(self.k, "k", minimum=1)
        nu = check_distribution(self.dummy, "dummy", size=self.base.n_outputs)
        if np.any(nu <= 0):
            raise ParameterError(
                "dummy must give every output positive probability (the likelihood ratio "
                f"divides by it); {int(np.sum(nu <= 0))} output(s) have 0"
            )
        cdf = np.cumsum(nu)
        cdf[-1] = 1.0
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "dummy", readonly(nu, dtype=None))
        object.__setattr__(self, "_dummy_cdf", readonly(cdf, dtype=None))

    @property
    def n_outputs(self) -> int:
        """|Y| (each tuple has k + 1 entries of Y)."""
        return self.base.n_outputs

    @property
    def n_inputs(self) -> int:
        """|X|."""
        return self.base.n_inputs

    @property
    def uniform_dummies(self) -> bool:
        """Whether ν is uniform (Thm 3 assumes it)."""
        nu = self.dummy
        return bool(np.allclose(nu, 1.0 / nu.size, rtol=_UNIFORM_RTOL, atol=0.0))

    @property
    def domain(self) -> Any:
        """The base mechanism's domain."""
        return self.base.domain

    def draw_dummies(self, gen: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Dummy output indices i.i.d. from ν, of the given shape (int32)."""
        if self.uniform_dummies:
            return gen.integers(0, self.n_outputs, size=shape, dtype=np.int32)
        return np.searchsorted(self._dummy_cdf, gen.random(shape), side="right").astype(np.int32)

    def sample(self, x: ArrayLike, rng: RngLike = None) -> np.ndarray:
        """Alg. 1 for a batch of inputs: each row is a (k+1)-tuple of output indices.

        The obfuscated value s ~ A(x) sits at a uniform position; the dummies fill the
        other positions (their order is immaterial: they are i.i.d.).

        Parameters
        ----------
        x : array_like of int, shape (batch,)
        rng : int, Generator or None

        Returns
        -------
        ndarray of int64, shape (batch, k + 1)
        """
        idx = _check_indices(x, "x", self.n_inputs)
        gen = check_rng(rng)
        s = self.base.sample(idx, gen)
        out = np.empty((idx.size, self.k + 1), dtype=np.int64)
        out[:, : self.k] = self.draw_dummies(gen, (idx.size, self.k))
        pos = gen.integers(0, self.k + 1, size=idx.size)
        rows = np.arange(idx.size)
        out[:, self.k] = out[rows, pos]
        out[rows, pos] = s
        return out

    def likelihood_ratio(self, tuples: ArrayLike, lam0: ArrayLike, lam1: ArrayLike) -> np.ndarray:
        """Q(λ₀)[ȳ] / Q(λ₁)[ȳ] = Σ_i w₀[y_i] / Σ_i w₁[y_i] for each tuple (w_b = A#(λ_b)/ν).

        Parameters
        ----------
        tuples : array_like of int, shape (batch, k + 1)
        lam0, lam1 : array_like, shape (n_x,)

        Returns
        -------
        ndarray, shape (batch,)
            ``inf`` for tuples impossible under λ₁, ``nan`` for tuples impossible under both.
        """
        t = _check_indices(tuples, "tuples", self.n_outputs)
        if t.ndim != 2 or t.shape[1] != self.k + 1:
            raise ParameterError(f"tuples must have shape (batch, {self.k + 1}), got {t.shape}")
        w0 = self.base.lift(lam0) / self.dummy
        w1 = self.base.lift(lam1) / self.dummy
        with np.errstate(divide="ignore", invalid="ignore"):
            return w0[t].sum(axis=1) / w1[t].sum(axis=1)

    def expected_loss(self, lam: ArrayLike, distances: ArrayLike | None = None) -> float:
        """Expected quality loss Σ_x λ[x] E[min_i d(x, y_i)] (KM 2019a, Def. 11), exactly.

        The loss of a tuple is the distance to its closest entry. With D the distance to
        the nearest of k i.i.d. dummies, Pr[D > t] = (1 − ν[{y : d(x, y) ≤ t}])^k, so
        E[min(c, D)] = ∫₀^c Pr[D > t] dt is a cumulative sum over the sorted distances;
        the loss of x averages it over c = d(x, s), s ~ A(x). Cost O(n_x n_y log n_y).

        Parameters
        ----------
        lam : array_like, shape (n_x,)
        distances : array_like, shape (n_x, n_y), optional
            d(x, y); the domain's by default.
        """
        p = check_distribution(lam, "lam", size=self.n_inputs)
        return float(p @ self._loss_per_input(_distances(self.base, distances)))

    def _loss_per_input(self, d: np.ndarray) -> np.ndarray:
        order = np.argsort(d, axis=1, kind="stable")
        u = np.take_along_axis(d, order, axis=1)
        nu_sorted = self.dummy[order]
        mass_before = np.cumsum(nu_sorted, axis=1) - nu_sorted
        survive = np.clip(1.0 - mass_before, 0.0, 1.0) ** self.k
        gaps = np.diff(u, axis=1, prepend=0.0)
        integral = np.cumsum(survive * gaps, axis=1)  # E[min(u_j, D)] at sorted position j
        a_sorted = np.take_along_axis(self.base.matrix, order, axis=1)
        return (a_sorted * integral).sum(axis=1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        return to_jsonable(
            {
                "name": self.name,
                "kind": "tupling",
                "k": self.k,
                "uniform_dummies": self.uniform_dummies,
                "base": self.base.to_dict(),
            }
        )


def tupling_mechanism(
    base: MatrixMechanism, *, k: int, dummy: ArrayLike | None = None
) -> TuplingMechanism:
    """Build Q^tp_{k,ν,A} (KM 2019a, Alg. 1); ν uniform over Y unless ``dummy`` is given.

    Raises
    ------
    ParameterError
        If k < 1, or ``dummy`` is not a probability vector with full support.
    """
    if not isinstance(base, MatrixMechanism):
        raise ParameterTypeError(f"base must be a MatrixMechanism, got {type(base).__name__}")
    nu = np.full(base.n_outputs, 1.0 / base.n_outputs) if dummy is None else dummy
    return TuplingMechanism(k, base, np.asarray(nu, dtype=np.float64))


def _weights(mech: TuplingMechanism, lam0: ArrayLike, lam1: ArrayLike) -> tuple[np.ndarray, ...]:
    if not isinstance(mech, TuplingMechanism):
        raise ParameterTypeError(f"mechanism must be a TuplingMechanism, got {type(mech).__name__}")
    a0 = mech.base.lift(check_distribution(lam0, "lam0", size=mech.n_inputs))
    a1 = mech.base.lift(check_distribution(lam1, "lam1", size=mech.n_inputs))
    return a0, a1, a0 / mech.dummy, a1 / mech.dummy


def _pure_epsilon(a0: np.ndarray, a1: np.ndarray) -> float:
    """max over y (and both directions) of ln A#(λ₀)[y]/A#(λ₁)[y]: the exact ε at δ = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        l0, l1 = np.log(a0), np.log(a1)
        fwd = np.where(a0 > 0, l0 - l1, -np.inf).max()
        bwd = np.where(a1 > 0, l1 - l0, -np.inf).max()
    return float(max(fwd, bwd, 0.0))


# --------------------------------------------------------------------------------------------
# Exact enumeration
# --------------------------------------------------------------------------------------------


def tupling_exact(
    mechanism: TuplingMechanism,
    lam0: ArrayLike,
    lam1: ArrayLike,
    *,
    max_tuples: int = MAX_EXACT_TUPLES,
) -> DistPProfile:
    """The exact output distributions Q(λ₀), Q(λ₁) over all |Y|^(k+1) ordered tuples.

    Q(λ)[ȳ] = (Π_j ν[y_j]) · Σ_i w_λ[y_i] / (k + 1), built by broadcasting one position at
    a time. Tuple (y₁, …, y_{k+1}) has the flat index Σ_j y_j |Y|^(k+1−j).

    Parameters
    ----------
    mechanism : TuplingMechanism
    lam0, lam1 : array_like, shape (n_x,)
    max_tuples : int
        Refuse larger enumerations (memory: 16 bytes per tuple).

    Returns
    -------
    DistPProfile
        Exact δ(ε), ε(δ) and divergences of the tuple distributions.
    """
    _, _, w0, w1 = _weights(mechanism, lam0, lam1)
    limit = check_positive_int(max_tuples, "max_tuples")
    n_y, k = mechanism.n_outputs, mechanism.k
    total = n_y ** (k + 1)
    if total > limit:
        raise ParameterError(
            f"exact enumeration needs |Y|^(k+1) = {n_y}^{k + 1} = {total:,} tuples, more than "
            f"max_tuples = {limit:,}; use tupling_monte_carlo"
        )
    nu = mechanism.dummy
    prod, s0, s1 = nu.copy(), w0.copy(), w1.copy()
    for _ in range(k):
        prod = (prod[:, None] * nu[None, :]).ravel()
        s0 = (s0[:, None] + w0[None, :]).ravel()
        s1 = (s1[:, None] + w1[None, :]).ravel()
    q0 = prod * s0 / (k + 1)
    q1 = prod * s1 / (k + 1)
    # Rounding of ~|Y|^(k+1) products: renormalise within the validation tolerance.
    return DistPProfile(q0 / q0.sum(), q1 / q1.sum())
