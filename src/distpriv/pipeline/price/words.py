"""The price table in plain language (:mod:`distpriv.pipeline.price.table`).

Lines a curator reads before releasing: which statistics will be dominated by noise (noise
sd at least the statistic's own spread across datasets; the line says which other
yardsticks it exceeds: the gap the secret makes, the typical value), which stay informative
though their noise exceeds the gap the secret makes, which reveal the secret outright, which
are nearly collinear, what the population premise costs, what dropping a statistic would
save, and whether the weights can move the noise — from the weight probe's
re-calibrations, not presumed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...central import CalibratedMechanism, mechanism_info
from .rows import StatisticPrice

__all__ = ["MOVES", "WEIGHT_PROBE", "price_lines", "weights_line"]

# The weight probe: one statistic's weight multiplied by this factor, the others kept.
WEIGHT_PROBE = 10.0
# Above this premise factor (E||Z||^2 with the population layer / without) a price table
# on the box or joint set says what the tight set would buy.
TIGHT_HINT_FACTOR = 1.2
# The weight probe "moves" a statistic's noise when its sd falls by at least this share.
MOVES = 0.05


def _g(x: float) -> str:
    return f"{x:.4g}"


def _dominated(r: StatisticPrice) -> str:
    """The line of a statistic whose noise sd is at least its spread across datasets."""
    if r.reveals_secret:
        return (
            f"{r.name}: the noise (sd {_g(r.noise_sd)}) must hide the secret itself: the "
            "statistic does not vary between datasets that share the secret's value (sd 0), "
            f"yet its mean moves by {_g(r.gap)} between the secret's values, so it is a "
            "function of the secret; the released value will be dominated by noise (drop it: "
            "any release of it is a noisy release of the secret)"
        )
    if r.spread == 0:
        return (
            f"{r.name}: the noise (sd {_g(r.noise_sd)}) is added to a statistic that is the "
            "same in every dataset under the model (sd 0): the released value will be "
            "dominated by noise"
        )
    which = [
        f"{r.noise_to_spread:.3g} times the statistic's own spread across datasets "
        f"(sd {_g(r.spread)})"
    ]
    if r.gap > 0 and r.noise_sd >= r.gap:
        which.append(
            f"{r.noise_to_gap:.3g} times its spread across the secret's values (gap {_g(r.gap)})"
        )
    elif r.gap > 0:
        which.append(f"below its spread across the secret's values (gap {_g(r.gap)})")
    if r.swamps_value:
        which.append(f"{r.noise_sd / abs(r.value):.3g} times its typical value ({_g(r.value)})")
    tail = ""
    if r.swamps_value:  # P(released value on the other side of 0) ≥ Φ(−1) ≈ 16 %
        big = r.noise_sd >= 10 * abs(r.value)
        tail = ", so even its order of magnitude is lost" if big else ", so even its sign may flip"
    return (
        f"{r.name}: the noise (sd {_g(r.noise_sd)}) is "
        + ", ".join(which[:-1])
        + (" and " if len(which) > 1 else "")
        + which[-1]
        + tail
        + ": the released value will be dominated by noise"
    )


def price_lines(
    rows: Sequence[StatisticPrice],
    mse: float,
    mse_fitted: float | None,
    population_set: str | None = None,
) -> list[str]:
    """Plain-language findings of a price table (module docstring). ``population_set``:
    the confidence set the mechanism was calibrated on, when the tight set would apply to
    the model instead (then a line says what choosing it buys, when the premise costs)."""
    out = [_dominated(r) for r in rows if r.dominated]
    for r in rows:
        if not r.dominated and r.gap > 0 and r.noise_sd >= r.gap:
            out.append(
                f"{r.name} stays informative: its noise (sd {_g(r.noise_sd)}) is "
                f"{r.noise_to_gap:.3g} times its spread across the secret's values (gap "
                f"{_g(r.gap)}) but {r.noise_to_spread:.3g} times its own spread across "
                f"datasets (sd {_g(r.spread)}): the released value still shows how the data "
                "vary, while what it would tell about the secret is covered by noise"
            )
    for r in rows:
        if r.collinear:
            save = (
                f"; dropping it would cut the others' noise by {100 * r.drop_saving:.0f} %"
                if r.drop_saving is not None and r.drop_saving >= 0.01
                else ""
            )
            out.append(
                f"{r.name} is nearly collinear with the other statistics (R^2 = "
                f"{r.r_squared:.3f}): it adds little information{save}"
            )
    if mse_fitted is not None and mse_fitted > 0:
        factors = [f for r in rows if (f := r.premise_factor) is not None]
        span = f"{min(factors):.3g}-{max(factors):.3g}" if factors else ""
        premise = (
            "the population premise (the guarantee holds on the population, not only on "
            "the fitted moments)"
        )
        ratio = mse / mse_fitted
        if ratio >= 1.0:
            single = f", the noise sd of single statistics by {span}x" if factors else ""
            out.append(
                f"{premise} multiplies E||Z||^2 by {ratio:.3g} ({mse:.4g} against "
                f"{mse_fitted:.4g}){single}"
            )
        else:  # less noise than the fitted moments need: not a cost
            single = f"; single statistics' noise sd is {span} times theirs" if factors else ""
            out.append(
                f"{premise} costs no noise here: its calibration needs E||Z||^2 = {mse:.4g}, "
                f"{ratio:.3g} times the {mse_fitted:.4g} of the fitted moments alone{single}"
            )
    costly = mse_fitted is None or mse > TIGHT_HINT_FACTOR * mse_fitted
    if population_set is not None and population_set != "tight" and costly:
        out.append(
            f"the population set is {population_set!r}: [mechanism] population_set = "
            "'tight' (distpriv.population_set in Python) states the same confidence with a "
            "set tight to what delta depends on, for about ten times the calibration time; "
            "on Adult and RAND HIE modelling tables of 300-4,000 rows it cut auto's "
            "E||Z||^2 by 1.4-3.5x, at a measured coverage of 95.0 % (Adult) and 99.0 % "
            "(RAND HIE) against the stated 95 % (docs/guarantees.md, 'Choosing the set')"
        )
    dropped = [r for r in rows if r.drop_saving is not None]
    best = max(dropped, key=lambda r: r.drop_saving or 0.0, default=None)
    if best is not None and (best.drop_saving or 0.0) >= 0.25:
        out.append(
            f"dropping {best.name} would cut the other statistics' E||Z||^2 by "
            f"{100 * (best.drop_saving or 0.0):.0f} %"
        )
    return out


def weights_line(
    mech: CalibratedMechanism, rows: Sequence[StatisticPrice], isotropic_share: float
) -> str:
    """Whether the weights move ``mech``'s noise, measured by the weight probe, and why
    not when they cannot."""
    spec = mechanism_info(mech.name)
    if "weights" not in spec.options:
        return (
            f"weights cannot move the noise of {mech.name}: its shape is fixed by its theorem "
            f"({spec.summary}); only optimal-g and optimal-g-full choose the shape by the "
            "weights (with mechanism = 'auto', weights only change which mechanism wins)"
        )
    how = (
        f"weights move the noise of {mech.name}: it minimises sum_k w_k Var(Z_k) over the "
        "noise that meets the guarantee, so a statistic with a larger weight gets less noise "
        "as far as the differences between the hypotheses in its direction allow"
    )
    probed = [r for r in rows if r.weight_effect is not None]
    if not probed:
        return how + " (not measured here)"
    best = max(probed, key=lambda r: r.weight_effect or 0.0)
    effect = best.weight_effect or 0.0
    if effect >= MOVES:
        return (
            how + f"; measured: a weight {WEIGHT_PROBE:g} times larger on {best.name} alone "
            f"cuts its noise sd by {100 * effect:.0f} % ({_g(best.noise_sd)} to "
            f"{_g(best.noise_sd_weighted or 0.0)})"
        )
    most = max(abs(r.weight_effect or 0.0) for r in probed)
    line = (
        f"weights do not move the noise of {mech.name} here: a weight {WEIGHT_PROBE:g} times "
        f"larger on any one statistic changes its noise sd by at most {100 * most:.1f} %"
    )
    if isotropic_share >= 0.5:
        cov = np.asarray(mech.noise_covariance, dtype=float)
        least = float(np.linalg.eigvalsh((cov + cov.T) / 2)[0])
        worst = max(rows, key=lambda r: r.variance_ratio)
        ratio = worst.variance_ratio
        differ = (
            f" (largest variance ratio between two values of the secret: {worst.name}, "
            + ("one variance 0" if math.isinf(ratio) else f"{ratio:.3g}x")
            + ")"
            if ratio > 1
            else ""
        )
        return (
            line + f": {100 * isotropic_share:.0f} % of E||Z||^2 is noise of the same variance "
            f"in every direction (sd {_g(math.sqrt(max(least, 0.0)))}): the cheapest noise "
            "the exact calibration verified among its candidate shapes adds it to cover the "
            f"hypotheses' unequal covariances{differ}; the weights only trade noise between "
            "statistics within the convex program's part (Cor. A.1 assumes equal "
            "covariances), not this one. Dropping the statistic that needs it (see 'drop "
            "saves others') is what moves it"
        )
    return line + (
        ": the guarantee binds in the directions that carry the noise, so the cheapest "
        "verified noise is the same whatever the weights"
    )
