"""The coupling mechanism (KM 2019b, Def. 16): transport each λ̂_s onto one target μ.

With auxiliary input s (e.g. the user's own attribute) and an approximate input
distribution λ̂_s, the mechanism uses a coupling γ_s ∈ cp(λ̂_s, μ) and outputs y with
probability C(s, x)[y] = γ_s[x, y] / λ̂_s[x]. If λ̂_s = λ_s every output follows μ, whatever s:
no information about s leaks (0-DistP for every divergence). With D∞(λ̂_s ‖ λ_s) ≤ ε and
D∞(λ_s ‖ λ̂_s) ≤ ε, Thm 3 of KM 2019b bounds the leak (:func:`coupling_guarantee`).

Couplings:

* ``"emd"`` — utility-optimal (Def. 18): a W1-optimal coupling from POT's exact network
  simplex (``ot.emd``), so the expected loss is W1,d(λ̂_s, μ) (Prop. 2);
* ``"nwc"`` — the north-west corner rule on sorted points, optimal on a line (1-D domains);
* ``"winf"`` — minimises the worst-case move: among couplings supported on pairs at
  distance ≤ W∞,d(λ̂_s, μ) (:func:`distpriv.distances.winf_distance`), the one of least
  expected loss (a linear program over the allowed pairs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from ..distances import winf_distance
from ..divergences import check_distribution, max_divergence
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import to_jsonable
from ..util.records import field_values
from ..util.validation import RngLike, check_choice, readonly
from .domains import Domain
from .mechanisms import MatrixMechanism, _distances

__all__ = [
    "COUPLING_METHODS",
    "CouplingGuarantee",
    "CouplingMechanism",
    "coupling_guarantee",
    "coupling_mechanism",
    "north_west_corner",
    "optimal_coupling",
    "winf_coupling",
]

COUPLING_METHODS: tuple[str, ...] = ("auto", "emd", "nwc", "winf")
# A pair at distance t·(1 + 1e-9) still counts as "within t" for the W∞ coupling.
_WINF_RTOL = 1e-9


# --------------------------------------------------------------------------------------------
# Couplings
# --------------------------------------------------------------------------------------------


def north_west_corner(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """The north-west corner coupling of a and b in the given order (KM 2019b §II-G).

    Fills the coupling matrix greedily from the top-left corner: the comonotone coupling,
    optimal for every convex cost of x − y when both supports are sorted on a line.
    Vectorised: the mass interval (t_{m−1}, t_m] between consecutive merged cumulative
    sums goes to the row and column whose intervals contain it.

    Parameters
    ----------
    a : array_like, shape (n,)
    b : array_like, shape (m,)
        Probability vectors.

    Returns
    -------
    ndarray, shape (n, m)
        γ with row sums a and column sums b.
    """
    p = check_distribution(a, "a")
    q = check_distribution(b, "b")
    ca, cb = np.cumsum(p), np.cumsum(q)
    ca[-1] = cb[-1] = 1.0
    t = np.union1d(ca, cb)
    prev = np.concatenate([[0.0], t[:-1]])
    mass = t - prev
    keep = mass > 0
    mid = (t[keep] + prev[keep]) / 2
    rows = np.minimum(np.searchsorted(ca, mid, side="left"), p.size - 1)
    cols = np.minimum(np.searchsorted(cb, mid, side="left"), q.size - 1)
    gamma = np.zeros((p.size, q.size))
    np.add.at(gamma, (rows, cols), mass[keep])
    return gamma


def optimal_coupling(a: ArrayLike, b: ArrayLike, cost: ArrayLike) -> np.ndarray:
    """A W1-optimal coupling of a and b for the cost matrix (POT's exact solver, ``ot.emd``).

    Parameters
    ----------
    a : array_like, shape (n,)
    b : array_like, shape (m,)
    cost : array_like, shape (n, m)
        d(x, y) ≥ 0.

    Returns
    -------
    ndarray, shape (n, m)
    """
    import ot  # lazy: POT is slow to import

    p = check_distribution(a, "a")
    q = check_distribution(b, "b")
    m = np.ascontiguousarray(np.asarray(cost, dtype=np.float64))
    if m.shape != (p.size, q.size):
        raise ParameterError(f"cost must have shape ({p.size}, {q.size}), got {m.shape}")
    q = q * (p.sum() / q.sum())  # equal total masses, to the last ulp
    gamma = ot.emd(p, q, m, numItermax=10_000_000)
    return np.asarray(gamma, dtype=np.float64)


def winf_coupling(
    a: ArrayLike, b: ArrayLike, x_points: ArrayLike, y_points: ArrayLike, *, metric: str = "l2"
) -> tuple[np.ndarray, float]:
    """A coupling minimising the largest move, then the expected move (KM 2019b §VI-D).

    Parameters
    ----------
    a : array_like, shape (n,)
        Distribution over the points ``x_points``.
    b : array_like, shape (m,)
        Distribution over ``y_points``.
    x_points : array_like, shape (n, dim)
    y_points : array_like, shape (m, dim)
    metric : {"l2", "l1", "linf"}

    Returns
    -------
    gamma : ndarray, shape (n, m)
        Supported on pairs at distance ≤ W∞ (up to a relative 1e-9).
    winf : float
        W∞,d(a, b) (exact, from :func:`distpriv.distances.winf_distance`).
    """
    from scipy.spatial.distance import cdist

    p = check_distribution(a, "a")
    q = check_distribution(b, "b")
    xs = np.asarray(x_points, dtype=np.float64).reshape(p.size, -1)
    ys = np.asarray(y_points, dtype=np.float64).reshape(q.size, -1)
    w = winf_distance(xs, ys, u_weights=p, v_weights=q, metric=metric)
    names: dict[str, Literal["cityblock", "euclidean", "chebyshev"]] = {
        "l1": "cityblock",
        "l2": "euclidean",
        "linf": "chebyshev",
    }
    dist = cdist(xs, ys, metric=names[metric])
    levels = np.unique(dist[dist >= w * (1 - _WINF_RTOL)])
    for t in levels:
        gamma = _min_cost_on(dist <= t * (1 + _WINF_RTOL) + 1e-15, dist, p, q)
        if gamma is not None:
            return gamma, float(w)
    raise RuntimeError("no feasible coupling found")  # pragma: no cover - t = max is feasible


def _min_cost_on(
    allowed: np.ndarray, dist: np.ndarray, p: np.ndarray, q: np.ndarray
) -> np.ndarray | None:
    rows, cols = np.nonzero(allowed)
    n, m = allowed.shape
    e = rows.size
    a_eq = coo_matrix(
        (np.ones(2 * e), (np.concatenate([rows, n + cols]), np.concatenate([np.arange(e)] * 2))),
        shape=(n + m, e),
    ).tocsr()
    # scipy-stubs types A_ub/A_eq as dense only; HiGHS takes the sparse matrix as is.
    res = linprog(  # type: ignore[call-overload]
        dist[rows, cols],
        A_eq=a_eq,
        b_eq=np.concatenate([p, q]),
        bounds=(0.0, None),
        method="highs",
    )
    if res.status != 0:
        return None
    gamma = np.zeros((n, m))
    gamma[rows, cols] = np.maximum(res.x, 0.0)
    return gamma


# --------------------------------------------------------------------------------------------
# The mechanism
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CouplingMechanism:
    """C: S × X → D(Y) built from couplings γ_s ∈ cp(λ̂_s, μ) (KM 2019b, Def. 16)."""

    #: ndarray, shape (S, n_x)
    #: The approximate input distributions λ̂_s.
    estimates: np.ndarray
    #: ndarray, shape (n_y,)
    #: μ.
    target: np.ndarray
    #: ndarray, shape (S, n_x, n_y)
    #: γ_s.
    couplings: np.ndarray
    #: ndarray, shape (S, n_x, n_y)
    #: C(s, x)[y] = γ_s[x, y] / λ̂_s[x]; rows with λ̂_s[x] = 0 (inputs the estimate deems
    #: impossible) output μ independently of x.
    matrices: np.ndarray
    #: How the couplings were chosen (``"emd"``, ``"nwc"`` or ``"winf"``).
    method: str
    #: Names of the states s.
    labels: tuple[str, ...]
    domain: Domain | None = None
    #: W∞,d(λ̂_s, μ) per state for the ``"winf"`` method (the worst-case loss).
    winf: tuple[float, ...] | None = None
    #: ``"coupling"``, or ``"coupling-winf"`` for the ``"winf"`` method.
    name: str = "coupling"
    _mechs: tuple[MatrixMechanism, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        mechs = tuple(
            MatrixMechanism(f"{self.name}[{lab}]", m, {"state": lab}, self.domain)
            for lab, m in zip(self.labels, self.matrices, strict=True)
        )
        for attr in ("estimates", "target", "couplings", "matrices"):
            object.__setattr__(self, attr, readonly(getattr(self, attr)))
        object.__setattr__(self, "_mechs", mechs)

    @property
    def n_states(self) -> int:
        """|S|."""
        return int(self.estimates.shape[0])

    @property
    def n_inputs(self) -> int:
        """|X|."""
        return int(self.estimates.shape[1])

    @property
    def n_outputs(self) -> int:
        """|Y|."""
        return int(self.target.size)

    def _state(self, state: int | str) -> int:
        if isinstance(state, str):
            if state not in self.labels:
                raise ParameterError(f"state must be one of {list(self.labels)}, got {state!r}")
            return self.labels.index(state)
        if isinstance(state, bool) or not isinstance(state, int | np.integer):
            raise ParameterTypeError(f"state must be an index or a label, got {state!r}")
        if not 0 <= int(state) < self.n_states:
            raise ParameterError(f"state must be in [0, {self.n_states - 1}], got {int(state)}")
        return int(state)

    def mechanism(self, state: int | str) -> MatrixMechanism:
        """C(s, ·) as a matrix mechanism."""
        return self._mechs[self._state(state)]

    def lift(self, lam: ArrayLike, state: int | str) -> np.ndarray:
        """C#(s, λ) = λ C(s, ·), the output distribution when x ~ λ and the state is s."""
        return self.mechanism(state).lift(lam)

    def sample(self, state: int | str, x: ArrayLike, rng: RngLike = None) -> np.ndarray:
        """Vectorised draw of C(s, x) for a batch of input indices (shape (batch,))."""
        return self.mechanism(state).sample(x, rng)

    def expected_loss(
        self, lam: ArrayLike, state: int | str, distances: ArrayLike | None = None
    ) -> float:
        """Expected loss of C(s, ·) under λ (KM 2019b, Def. 17).

        With λ = λ̂_s and an ``"emd"`` coupling this is W1,d(λ̂_s, μ) (Prop. 2).
        """
        mech = self.mechanism(state)
        return mech.expected_loss(lam, _distances(mech, distances))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description."""
        return to_jsonable(
            {
                "name": self.name,
                "kind": "coupling",
                "method": self.method,
                "states": list(self.labels),
                **field_values(self, "n_inputs n_outputs winf"),
            }
        )


def coupling_mechanism(
    domain: Domain,
    estimates: ArrayLike,
    target: ArrayLike | None = None,
    *,
    method: str = "auto",
    labels: Sequence[str] | None = None,
) -> CouplingMechanism:
    """Build the coupling mechanism from approximate input distributions and a target.

    Parameters
    ----------
    domain : Domain
        X, Y and the metric d (the transport cost).
    estimates : array_like, shape (S, n_x)
        λ̂_s for each state s (e.g. the two attribute values).
    target : array_like, shape (n_y,), optional
        μ. Default: the mixture of the estimates moved onto Y (each input to its nearest
        output) — for two states the W1 barycentre, so the average loss is
        ½ W1(λ̂₀, λ̂₁) when Y contains X.
    method : {"auto", "emd", "nwc", "winf"}
        ``"auto"``: north-west corner on a line (1-D coordinates), POT's exact solver
        otherwise.
    labels : sequence of str, optional
        Names of the states.

    Returns
    -------
    CouplingMechanism
    """
    if not isinstance(domain, Domain):
        raise ParameterTypeError(f"domain must be a Domain, got {type(domain).__name__}")
    est = check_distribution(estimates, "estimates", size=domain.n_inputs, ndim=(1, 2))
    est = est.reshape(-1, domain.n_inputs)
    if target is None:
        mu = domain.embed(est.mean(axis=0), "estimates")
    else:
        mu = check_distribution(target, "target", size=domain.n_outputs)
    meth = check_choice(method, "method", COUPLING_METHODS)
    one_d = domain.inputs.shape[1] == 1
    if meth == "auto":
        meth = "nwc" if one_d else "emd"
    if meth == "nwc" and not one_d:
        raise ParameterError(
            "method='nwc' (north-west corner) is optimal only on a line: the domain must be 1-D"
        )
    labs = tuple(str(i) for i in range(est.shape[0])) if labels is None else tuple(map(str, labels))
    if len(labs) != est.shape[0]:
        raise ParameterError(f"labels must have {est.shape[0]} entries, got {len(labs)}")
    # Domain.__post_init__ sets outputs to the inputs when none were given.
    outs = domain.inputs if domain.outputs is None else domain.outputs
    couplings, winfs = [], []
    for lam_hat in est:
        if meth == "emd":
            gamma = optimal_coupling(lam_hat, mu, domain.distances)
        elif meth == "nwc":
            ox = np.argsort(domain.inputs[:, 0], kind="stable")
            oy = np.argsort(outs[:, 0], kind="stable")
            sorted_gamma = north_west_corner(lam_hat[ox], mu[oy])
            gamma = np.empty_like(sorted_gamma)
            gamma[np.ix_(ox, oy)] = sorted_gamma
        else:
            gamma, w = winf_coupling(lam_hat, mu, domain.inputs, outs, metric=domain.metric)
            winfs.append(w)
        couplings.append(gamma)
    gammas = np.stack(couplings)
    mats = np.empty_like(gammas)
    for s, lam_hat in enumerate(est):
        rows = gammas[s] / np.where(lam_hat > 0, lam_hat, 1.0)[:, None]
        rows = np.where((lam_hat > 0)[:, None], rows, mu[None, :])
        mats[s] = rows / rows.sum(axis=1, keepdims=True)
    return CouplingMechanism(
        estimates=est,
        target=mu,
        couplings=gammas,
        matrices=mats,
        method=meth,
        labels=labs,
        domain=domain,
        winf=tuple(winfs) if winfs else None,
        name="coupling-winf" if meth == "winf" else "coupling",
    )


# --------------------------------------------------------------------------------------------
# Theorem 3 of KM 2019b
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CouplingGuarantee:
    """Divergence DistP of a coupling mechanism from the accuracy of its estimates.

    KM 2019b, Thm 3: if D∞(λ̂_s ‖ λ_s) ≤ ε and D∞(λ_s ‖ λ̂_s) ≤ ε for every state, the
    coupling mechanism is (2ε, D∞)-, (2ε e^ε, D_KL)- and (e^ε f(e^{2ε}), D_f)-DistP.
    """

    #: ε = max over states and both directions of D∞ between λ̂_s and λ_s (``inf`` when
    #: the supports differ).
    closeness: float
    #: The same per state.
    per_state: tuple[float, ...]
    #: ``dinf`` 2ε; ``kl`` 2εe^ε; ``tv`` e^ε·½(e^{2ε} − 1); ``chi2`` e^ε(e^{2ε} − 1)²;
    #: ``hellinger`` e^ε·½(e^ε − 1)² (f of KM 2019b, Table I, at t = e^{2ε}).
    bounds: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                "theorem": "Kawamoto & Murakami 2019b, Thm 3",
                **field_values(self, "closeness per_state bounds"),
            }
        )


def _bounds(eps: float) -> dict[str, float]:
    if not math.isfinite(eps):
        return dict.fromkeys(("dinf", "kl", "tv", "chi2", "hellinger"), math.inf)
    with np.errstate(over="ignore"):
        e1, e2 = math.exp(min(eps, 700.0)), math.exp(min(2 * eps, 700.0))
    return {
        "dinf": 2 * eps,
        "kl": 2 * eps * e1,
        "tv": e1 * 0.5 * (e2 - 1),
        "chi2": e1 * (e2 - 1) ** 2,
        "hellinger": e1 * 0.5 * (e1 - 1) ** 2,
    }


def coupling_guarantee(estimates: ArrayLike, actual: ArrayLike) -> CouplingGuarantee:
    """KM 2019b, Thm 3 for the states whose estimates and actual distributions are given.

    Parameters
    ----------
    estimates : array_like, shape (S, n_x)
        λ̂_s (what the mechanism was built from).
    actual : array_like, shape (S, n_x)
        λ_s (what the inputs really follow).
    """
    est = check_distribution(estimates, "estimates", ndim=(1, 2))
    act = check_distribution(actual, "actual", ndim=(1, 2))
    est, act = est.reshape(-1, est.shape[-1]), act.reshape(-1, act.shape[-1])
    if est.shape != act.shape:
        raise ParameterError(
            f"estimates and actual must have the same shape, got {est.shape} and {act.shape}"
        )
    per = tuple(
        max(float(max_divergence(h, a)), float(max_divergence(a, h)), 0.0)
        for h, a in zip(est, act, strict=True)
    )
    eps = max(per)
    return CouplingGuarantee(eps, per, _bounds(eps))
