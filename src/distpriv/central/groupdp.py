"""Group differential privacy baselines (Dwork & Roth 2014, §2.3; Chen & Ohrimenko 2023, §5).

If changing one record moves statistic k by at most sₖ, changing g records moves the
vector by at most g‖s‖₁ (L1) or g‖s‖₂ (L2). Noise calibrated to those group sensitivities
makes any two datasets that differ in at most g records (ε, δ)-indistinguishable; with g
equal to the dataset size n this covers every pair of datasets of size n, hence every Ψ.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..guarantees import Assumption
from ..noise import Noise
from ..util.validation import check_array, check_positive_int
from ._common import (
    QueryModel,
    calibration_assumptions,
    make_guarantee,
    pure_delta_note,
    target_distance,
)
from .base import CalibratedMechanism

__all__ = ["calibrate_groupdp"]


def calibrate_groupdp(
    model: QueryModel,
    *,
    epsilon: float,
    delta: float,
    kind: str,
    group_size: object = None,
    sensitivities: object = None,
    calibration: str = "analytic",
) -> CalibratedMechanism:
    """Laplace or Gaussian mechanism for group DP with group size g.

    Parameters
    ----------
    group_size : int
        g ≥ 1, the number of records in which two protected datasets may differ (the
        paper's baseline uses g = n, the dataset size).
    sensitivities : array_like, shape (m,)
        Per-record sensitivity of each statistic (e.g. range/n for a mean of a bounded
        column, 1 for a count).
    calibration : {"analytic", "classical"}
        Gaussian only.

    Notes
    -----
    Laplace: scale g‖s‖₁/ε per coordinate, (ε, 0). Gaussian: σ = g‖s‖₂ / D*(ε, δ).
    """
    if group_size is None:
        raise ParameterError("group_size is required for the group-DP baselines")
    if sensitivities is None:
        raise ParameterError("sensitivities (one per statistic) are required for group DP")
    g = check_positive_int(group_size, "group_size")
    sens = check_array(sensitivities, "sensitivities", shape=(model.dim,), nonnegative=True)
    if not np.any(sens > 0):
        raise ParameterError("sensitivities must not all be zero")
    assumptions = [
        Assumption(
            "group-coupling",
            f"datasets drawn under the two thetas of a pair differ in at most {g} records",
            None,
            "not checkable from the query model; always true when group_size equals the "
            "dataset size",
        )
    ]
    if kind == "laplace":
        l1 = g * float(sens.sum())
        noise = Noise.isotropic("laplace", model.dim, l1 / epsilon)
        name, out_delta, cal = "groupdp-l", 0.0, None
        theorem = "Dwork & Roth 2014, Thm 2.2 (group privacy) with the Laplace mechanism"
        notes = pure_delta_note(delta)
        diag = {"group_sensitivity_l1": l1}
    else:
        l2 = g * float(np.linalg.norm(sens))
        d_star, d_target = target_distance(epsilon, delta, calibration)
        noise = Noise.isotropic("gaussian", model.dim, l2 / d_target)
        assumptions += calibration_assumptions(epsilon, calibration, delta)
        name, out_delta, cal = "groupdp-g", delta, calibration
        theorem = (
            "Gaussian mechanism at group L2 sensitivity g*||s||_2 (Dwork & Roth 2014, "
            "Thm A.1; analytic: Balle & Wang 2018)"
        )
        notes = []
        diag = {"group_sensitivity_l2": l2, "allowed_distance": d_star}
    guarantee = make_guarantee(
        name,
        model,
        epsilon=epsilon,
        delta=out_delta,
        theorem=theorem,
        assumptions=assumptions,
        calibration=cal,
        notes=notes,
        notion="group differential privacy",
    )
    diag["group_size"] = g
    return CalibratedMechanism(name, noise, guarantee, model.statistics, diag)
