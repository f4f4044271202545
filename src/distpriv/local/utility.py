"""Utility and attack: expected quality loss and the Bayes-optimal attribute inference.

* Expected quality loss Σ_x Σ_y λ[x] A(x)[y] d(x, y) (KM 2019b, Def. 17); for the
  tupling mechanism the loss of a tuple is its closest entry (KM 2019a, Def. 11).
* Attack success rate (KM 2019a §7.3): an attacker who knows λ₀ and λ₁ sees one output and
  applies the Bayes decision rule — guess λ₀ iff π₀ A#(λ₀)[y] > π₁ A#(λ₁)[y], ties by a
  fair coin (Duda et al. 2000). The success rate is Pr[guess λ₀ | the input came from λ₀]
  (0.5 when the attacker learns nothing); the accuracy averages both attributes with the
  priors, and equals ½ + ½ TV(A#(λ₀), A#(λ₁)) for π₀ = ½.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..divergences import check_distribution
from ..errors import ParameterTypeError
from ..guarantees import to_jsonable
from ..util.records import field_values
from ..util.validation import check_real

__all__ = ["AttackResult", "attack_success", "bayes_attack", "expected_loss"]

_TIE_RTOL = 1e-12


@dataclass(frozen=True)
class AttackResult:
    """Success of the Bayes decision rule at telling λ₀ from λ₁ from one output."""

    #: Pr[the attacker guesses λ₀ | the input was drawn from λ₀] (KM 2019a §7.3, "ASR").
    success_rate: float
    #: π₀ Pr[guess λ₀ | λ₀] + π₁ Pr[guess λ₁ | λ₁].
    accuracy: float
    #: π₀.
    prior: float
    #: 95 % intervals for Monte Carlo estimates; ``None`` when exact.
    success_interval: tuple[float, float] | None = None
    accuracy_interval: tuple[float, float] | None = None
    #: ``"exact"`` or ``"monte-carlo"``.
    method: str = "exact"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(field_values(self))


def _prior(prior: float) -> float:
    return check_real(prior, "prior", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


def bayes_attack(mu0: ArrayLike, mu1: ArrayLike, *, prior: float = 0.5) -> AttackResult:
    """Exact success of the Bayes decision rule between two output distributions.

    Parameters
    ----------
    mu0, mu1 : array_like, shape (n,)
        A#(λ₀) and A#(λ₁).
    prior : float
        π₀ in (0, 1).
    """
    a = check_distribution(mu0, "mu0")
    b = check_distribution(mu1, "mu1", size=a.size)
    pi0 = _prior(prior)
    s0, s1 = pi0 * a, (1 - pi0) * b
    tie = np.abs(s0 - s1) <= _TIE_RTOL * np.maximum(s0, s1)
    guess0 = np.where(tie, 0.5, (s0 > s1).astype(float))
    success0 = float(a @ guess0)
    success1 = float(b @ (1.0 - guess0))
    return AttackResult(success0, pi0 * success0 + (1 - pi0) * success1, pi0)


def attack_success(
    mechanism: Any, lam0: ArrayLike, lam1: ArrayLike, *, prior: float = 0.5
) -> AttackResult:
    """Exact Bayes attack against a matrix or coupling mechanism for the pair (λ₀, λ₁).

    For the tupling mechanism use :meth:`distpriv.local.TuplingMonteCarlo.attack`.
    """
    from .profiles import distp_profile

    prof = distp_profile(mechanism, lam0, lam1)
    return bayes_attack(prof.mu0, prof.mu1, prior=prior)


def expected_loss(
    mechanism: Any, lam: ArrayLike, *, state: int = 0, distances: ArrayLike | None = None
) -> float:
    """Expected quality loss of a mechanism under the input distribution λ.

    Parameters
    ----------
    mechanism : MatrixMechanism, TuplingMechanism or CouplingMechanism
        Matrix: KM 2019b Def. 17; tupling: the loss of the closest entry of the tuple
        (KM 2019a, Def. 11); coupling: Def. 17 for the mechanism C(state, ·).
    lam : array_like, shape (n_x,)
    state : int
        The auxiliary input s of a coupling mechanism.
    distances : array_like, shape (n_x, n_y), optional
        d(x, y); the domain's by default.
    """
    from .coupling import CouplingMechanism
    from .mechanisms import MatrixMechanism
    from .tupling import TuplingMechanism

    if isinstance(mechanism, CouplingMechanism):
        return mechanism.expected_loss(lam, state, distances=distances)
    if isinstance(mechanism, MatrixMechanism | TuplingMechanism):
        return mechanism.expected_loss(lam, distances)
    raise ParameterTypeError(f"mechanism must be a local mechanism, got {type(mechanism).__name__}")
