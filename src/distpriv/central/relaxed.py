"""Guarantees under relaxed assumptions (Chen & Ohrimenko 2023, §4.4, App. B.4–B.5).

A mechanism calibrated on approximations f̃_θ of the true f_θ keeps a weaker guarantee:
Thm 4.6 bounds it through the η-approximate max-divergence between f̃_θ and f_θ;
Thm 4.7 restores it with a little extra Laplace noise scaled to W∞(f_θ, f̃_θ).
"""

from __future__ import annotations

import dataclasses
import math

from ..guarantees import PrivacyGuarantee
from ..noise import Noise
from ..util.validation import check_delta, check_epsilon, check_real
from .base import CalibratedMechanism

__all__ = ["relax_max_divergence", "relax_wasserstein", "relaxed_parameters"]


def relaxed_parameters(
    epsilon: float, delta: float, *, lam: float, eta: float = 0.0
) -> tuple[float, float]:
    """(ε', δ') of Chen & Ohrimenko 2023, Thm 4.6.

    ε' = ε + 2λ and δ' = (1 + e^(ε+λ)) η + e^λ δ, for approximations with
    max(D∞^η(f̃_θ‖f_θ), D∞^η(f_θ‖f̃_θ)) ≤ λ for every θ. With η = 0 this is also the
    (ε', δ') of Thm 4.7 (there λ is the privacy cost of the extra Laplace noise).
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    lm = check_real(lam, "lam", low=0.0)
    et = check_real(eta, "eta", low=0.0, high=1.0)
    return eps + 2.0 * lm, (1.0 + math.exp(eps + lm)) * et + math.exp(lm) * dlt


def relax_max_divergence(
    guarantee: PrivacyGuarantee | CalibratedMechanism, *, lam: float, eta: float = 0.0
) -> PrivacyGuarantee:
    """The guarantee that remains when the model is off by (λ, η) in max-divergence.

    Chen & Ohrimenko 2023, Thm 4.6. Needs M(Data) | F(Data) independent of Data, which
    holds for every additive-noise mechanism here.

    Parameters
    ----------
    guarantee : PrivacyGuarantee or CalibratedMechanism
        The guarantee computed on the approximate model f̃_θ.
    lam : float
        λ ≥ 0, bound on D∞^η(f̃_θ‖f_θ) and D∞^η(f_θ‖f̃_θ) for every θ.
    eta : float
        η in [0, 1].

    Returns
    -------
    PrivacyGuarantee
        (ε + 2λ, (1 + e^(ε+λ))η + e^λ δ) with the same pairs and a note on its origin.
    """
    g = guarantee.guarantee if isinstance(guarantee, CalibratedMechanism) else guarantee
    eps, dlt = relaxed_parameters(g.epsilon, g.delta, lam=lam, eta=eta)
    return dataclasses.replace(
        g,
        epsilon=eps,
        delta=min(dlt, 1.0),
        theorem=g.theorem + "; relaxed by Chen & Ohrimenko 2023, Thm 4.6",
        notes=(*g.notes, f"model error: approximate max-divergence <= {lam:g} at eta = {eta:g}"),
    )


def relax_wasserstein(
    mechanism: CalibratedMechanism, *, wasserstein: float, lam: float
) -> CalibratedMechanism:
    """Add Laplace noise W/λ per coordinate to cover a model error W (Chen & Ohrimenko, Thm 4.7).

    If the mechanism is (ε, δ)-private on the approximations f̃_θ and
    W ≥ sup_θ W∞(f_θ, f̃_θ) (L1 ground metric), adding independent Lap(W/λ) noise to each
    coordinate gives (ε + 2λ, e^λ δ) on the true f_θ.

    Parameters
    ----------
    mechanism : CalibratedMechanism
        Calibrated on the approximate model.
    wasserstein : float
        W ≥ 0, the largest ∞-Wasserstein distance between a true f_θ and its model.
    lam : float
        λ > 0, the privacy spent on the model error.

    Returns
    -------
    CalibratedMechanism
        The same mechanism with the extra Laplace noise and the relaxed guarantee.
    """
    w = check_real(wasserstein, "wasserstein", low=0.0)
    lm = check_real(lam, "lam", low=0.0, low_inclusive=False)
    g = mechanism.guarantee
    eps, dlt = relaxed_parameters(g.epsilon, g.delta, lam=lm)
    extra = Noise.isotropic("laplace", mechanism.dim, w / lm)
    guarantee = dataclasses.replace(
        g,
        epsilon=eps,
        delta=min(dlt, 1.0),
        theorem=g.theorem + "; relaxed by Chen & Ohrimenko 2023, Thm 4.7",
        notes=(
            *g.notes,
            f"extra Laplace noise of scale W/lambda = {w / lm:.6g} covers a model error W = {w:g}",
        ),
    )
    diag = {**mechanism.diagnostics, "model_error_winf": w, "extra_laplace_scale": w / lm}
    return CalibratedMechanism(
        mechanism.name, mechanism.noise.plus(extra), guarantee, mechanism.statistics, diag
    )
