"""One call from a scenario and a mechanism name to a full report (the CLI's ``local evaluate``).

:func:`evaluate` builds the mechanism on the scenario's domain, then reports for one pair
(λ₀, λ₁): ε of (ε, δ)-DistP (exact for matrix and coupling mechanisms, Monte Carlo with a
confidence interval for the tupling mechanism), the divergences of KM 2019b, the expected
quality loss under each distribution, the Bayes attack, and the theoretical guarantee that
applies (Thm 1, 2 or 3 of KM 2019a, or Thm 3 of KM 2019b).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..guarantees import to_jsonable
from ..util.records import field_values
from ..util.validation import (
    RngLike,
    check_choice,
    check_delta,
    check_positive_int,
    check_real,
    check_rng,
)
from .bounds import tupling_bound
from .coupling import CouplingMechanism, coupling_guarantee, coupling_mechanism
from .domains import LocalScenario
from .mechanisms import (
    MatrixMechanism,
    check_radius,
    planar_gaussian,
    planar_laplace,
    randomized_response,
    restricted_laplace,
)
from .montecarlo import tupling_monte_carlo
from .profiles import distp_profile, theorem1_guarantee, theorem2_guarantee
from .tupling import TuplingMechanism, tupling_mechanism
from .utility import bayes_attack

# Monte Carlo work of the tupling mechanism: 2 · n_samples · k dummy draws at most.
_MAX_DUMMY_DRAWS = 2e9

__all__ = ["DEFAULTS", "MECHANISM_NAMES", "LocalEvaluation", "build_mechanism", "evaluate"]

#: Mechanisms :func:`build_mechanism` knows, with the parameters each accepts.
MECHANISM_NAMES: tuple[str, ...] = ("rr", "pl", "pg", "rl", "tupling", "coupling", "coupling-winf")
_ACCEPTS: dict[str, tuple[str, ...]] = {
    "rr": ("epsilon",),
    "pl": ("epsilon",),
    "pg": ("sigma",),
    "rl": ("epsilon", "radius"),
    "tupling": ("epsilon", "radius", "k"),
    "coupling": (),
    "coupling-winf": (),
}
#: Parameter defaults (distances in the scenario's units: km for the city, tens of years /
#: tens of hours for Adult).
DEFAULTS: dict[str, dict[str, float]] = {
    "rr": {"epsilon": 1.0},
    "pl": {"epsilon": 1.0},
    "pg": {"sigma": 1.0},
    "rl": {"epsilon": 1.0, "radius": 2.0},
    "tupling": {"epsilon": 1.0, "radius": 2.0, "k": 10},
    "coupling": {},
    "coupling-winf": {},
}


def _params(name: str, given: dict[str, Any]) -> dict[str, Any]:
    extra = [p for p, v in given.items() if v is not None and p not in _ACCEPTS[name]]
    if extra:
        accepts = ", ".join(_ACCEPTS[name]) or "no parameters"
        raise ParameterError(
            f"{', '.join(extra)} does not apply to mechanism {name!r} (it takes {accepts})"
        )
    out = dict(DEFAULTS[name])
    out.update({p: v for p, v in given.items() if v is not None})
    return out


def build_mechanism(
    name: str,
    scenario: LocalScenario,
    *,
    epsilon: float | None = None,
    sigma: float | None = None,
    radius: float | None = None,
    k: int | None = None,
    pair: int | tuple[str, str] = 0,
) -> MatrixMechanism | TuplingMechanism | CouplingMechanism:
    """Build mechanism ``name`` on the scenario's domain.

    Parameters
    ----------
    name : {"rr", "pl", "pg", "rl", "tupling", "coupling", "coupling-winf"}
        Randomized response (ε), planar Laplace (ε), planar Gaussian (σ), restricted
        Laplace (ε_A = ``epsilon``, r = ``radius``), the tupling mechanism over a restricted
        Laplace (k, ε_A, r), and the coupling mechanism (utility-optimal, or minimising the
        worst-case move) from the scenario's estimates of the pair's distributions.
    scenario : LocalScenario
    epsilon, sigma, radius, k : optional
        Parameters; a parameter the mechanism does not take is an error. Defaults in
        :data:`DEFAULTS`.
    pair : int or (str, str)
        For the coupling mechanism: whose estimates to couple.
    """
    if not isinstance(scenario, LocalScenario):
        raise ParameterTypeError(f"scenario must be a LocalScenario, got {type(scenario).__name__}")
    mech = check_choice(name, "mechanism", MECHANISM_NAMES)
    p = _params(mech, {"epsilon": epsilon, "sigma": sigma, "radius": radius, "k": k})
    dom = scenario.domain
    if mech == "rr":
        return randomized_response(dom, epsilon=p["epsilon"])
    if mech == "pl":
        return planar_laplace(dom, epsilon=p["epsilon"])
    if mech == "pg":
        return planar_gaussian(dom, sigma=p["sigma"])
    if mech == "rl":
        return restricted_laplace(dom, epsilon=p["epsilon"], radius=check_radius(p["radius"]))
    if mech == "tupling":
        base = restricted_laplace(dom, epsilon=p["epsilon"], radius=check_radius(p["radius"]))
        return tupling_mechanism(base, k=check_positive_int(p["k"], "k", minimum=1))
    names = scenario.pair(pair)
    source = (
        scenario.estimates
        if all(t in scenario.estimates for t in names)
        else scenario.distributions
    )
    est = np.stack([source[t] for t in names])
    return coupling_mechanism(
        dom, est, method="winf" if mech == "coupling-winf" else "emd", labels=names
    )


@dataclass(frozen=True)
class LocalEvaluation:
    """What :func:`evaluate` measured for one mechanism and one pair."""

    scenario: str
    #: The names of λ₀ and λ₁.
    pair: tuple[str, str]
    mechanism: str
    params: dict[str, Any]
    delta: float
    #: ε of (ε, δ)-DistP and its confidence interval (equal to ε when exact).
    epsilon: float
    epsilon_low: float
    epsilon_high: float
    #: ``"exact"`` or ``"monte-carlo"``.
    method: str
    confidence: float | None
    #: Tuples per direction (Monte Carlo).
    n_samples: int | None
    #: :meth:`Divergences.to_dict` (pure D∞, KL, TV, χ², Hellinger, both directions).
    divergences: dict[str, Any]
    #: Per distribution name, and ``"mean"`` (equal weights).
    expected_loss: dict[str, float]
    #: :meth:`AttackResult.to_dict`.
    attack: dict[str, Any]
    #: The theoretical guarantee that applies.
    guarantee: dict[str, Any] | None
    notes: tuple[str, ...] = ()
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                "scenario": self.scenario,
                "pair": list(self.pair),
                **field_values(self, "mechanism params delta epsilon"),
                "epsilon_interval": [self.epsilon_low, self.epsilon_high],
                **field_values(
                    self, "method confidence n_samples divergences expected_loss attack guarantee"
                ),
                "notes": list(self.notes),
                "seed": self.seed,
            }
        )


def evaluate(
    scenario: LocalScenario,
    mechanism: str,
    *,
    pair: int | tuple[str, str] = 0,
    delta: float = 1e-3,
    epsilon: float | None = None,
    sigma: float | None = None,
    radius: float | None = None,
    k: int | None = None,
    n_samples: int = 200_000,
    confidence: float = 0.95,
    rng: RngLike = None,
) -> LocalEvaluation:
    """Evaluate a local mechanism on a scenario's pair (λ₀, λ₁).

    Parameters
    ----------
    scenario : LocalScenario
    mechanism : str
        One of :data:`MECHANISM_NAMES` (see :func:`build_mechanism`).
    pair : int or (str, str)
        Which pair of the scenario (index or names).
    delta : float
        δ of the reported (ε, δ)-DistP, in [0, 1).
    epsilon, sigma, radius, k : optional
        Mechanism parameters (see :func:`build_mechanism`).
    n_samples : int
        Tuples per direction for the tupling mechanism's Monte Carlo.
    confidence : float
        Coverage of the Monte Carlo interval.
    rng : int, Generator or None
        Randomness of the Monte Carlo (an int seed is recorded in the result).

    Returns
    -------
    LocalEvaluation
    """
    if not isinstance(scenario, LocalScenario):
        raise ParameterTypeError(f"scenario must be a LocalScenario, got {type(scenario).__name__}")
    dlt = check_delta(delta)
    names = scenario.pair(pair)
    lam0, lam1 = (scenario.distributions[t] for t in names)
    mech = build_mechanism(
        mechanism, scenario, epsilon=epsilon, sigma=sigma, radius=radius, k=k, pair=names
    )
    params = _params(mechanism, {"epsilon": epsilon, "sigma": sigma, "radius": radius, "k": k})
    seed = int(rng) if isinstance(rng, int | np.integer) and not isinstance(rng, bool) else None
    notes: list[str] = []
    if isinstance(mech, TuplingMechanism):
        n = check_positive_int(n_samples, "n_samples", minimum=2)
        if 2.0 * n * mech.k > _MAX_DUMMY_DRAWS:  # refuse before hours of work
            raise ParameterError(
                f"k={mech.k} with n_samples={n} would draw {2.0 * n * mech.k:.3g} dummies "
                f"(limit {_MAX_DUMMY_DRAWS:.0e}): use a smaller k or fewer samples"
            )
        conf = check_real(
            confidence, "confidence", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
        )
        mc = tupling_monte_carlo(mech, lam0, lam1, n_samples=n, confidence=conf, rng=check_rng(rng))
        est = mc.epsilon(dlt)
        div = mc.divergences()
        att = mc.attack()
        losses = [mech.expected_loss(lam0), mech.expected_loss(lam1)]
        guarantee = None
        if dlt > 0:
            bound = tupling_bound(mech, lam0, lam1, delta=dlt)
            guarantee = {
                **bound.guarantee(labels=names).to_dict(),
                "beta": bound.beta,
                "alpha": bound.alpha,
            }
        notes.append(
            f"epsilon by Monte Carlo over {n} tuples per distribution; interval at joint "
            f"confidence {conf:g} (Chernoff-Hoeffding bound inverted through the profile); "
            "epsilon at delta = 0 is exact"
        )
        eps, eps_low, eps_high = est.epsilon, est.low, est.high
        method, conf_used, n_used = est.method, est.confidence, n
    else:
        prof = distp_profile(mech, lam0, lam1)
        eps = float(prof.epsilon(dlt))
        div = prof.divergences(0.0)
        att = bayes_attack(prof.mu0, prof.mu1)
        if isinstance(mech, CouplingMechanism):
            losses = [mech.expected_loss(lam0, 0), mech.expected_loss(lam1, 1)]
            guar = coupling_guarantee(mech.estimates, np.stack([lam0, lam1]))
            guarantee = guar.to_dict()
            if not math.isfinite(guar.closeness):
                notes.append(
                    "an estimate and its actual distribution have different supports: "
                    "D-infinity between them is infinite and KM 2019b Thm 3 gives no bound"
                )
            if not any(t in scenario.estimates for t in names):
                notes.append(
                    "the scenario has no estimates for this pair: exact knowledge (epsilon = 0)"
                )
            if mech.winf is not None:
                notes.append(
                    "worst-case move W-infinity(estimate, target) per state: "
                    + ", ".join(f"{w:.4g}" for w in mech.winf)
                )
        else:
            losses = [mech.expected_loss(lam0), mech.expected_loss(lam1)]
            guarantee = None
            if mech.name == "rr":
                guarantee = theorem1_guarantee(mech, labels=names).to_dict()
            elif mech.name in ("pl", "pg"):
                guarantee = theorem2_guarantee(mech, lam0, lam1, labels=names).to_dict()
            else:
                notes.append(
                    "restricted Laplace is not DP (zeros outside the radius, KM 2019a §6.4)"
                )
        if not math.isfinite(eps):
            notes.append(
                "epsilon is infinite: one output distribution puts more than delta mass where "
                "the other has none"
            )
        eps_low = eps_high = eps
        method, conf_used, n_used = "exact", None, None
    return LocalEvaluation(
        scenario=scenario.name,
        pair=names,
        mechanism=mech.name,
        params=params,
        delta=dlt,
        epsilon=eps,
        epsilon_low=eps_low,
        epsilon_high=eps_high,
        method=method,
        confidence=conf_used,
        n_samples=n_used,
        divergences=div.to_dict(),
        expected_loss={names[0]: losses[0], names[1]: losses[1], "mean": float(np.mean(losses))},
        attack=att.to_dict(),
        guarantee=guarantee,
        notes=tuple(notes),
        seed=seed,
    )
