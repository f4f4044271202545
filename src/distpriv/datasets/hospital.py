"""The synthetic hospital of Zhang, Ohrimenko & Cummings 2022, §4.2 (a seeded generator).

Patients have a gender (1 = female, 0 = any other gender), a height, a weight that depends
linearly on the height, a blood pressure that depends on the gender, and a temperature.
The paper's generator (§4.2, "Experiments"):

- gender ~ Bernoulli(0.6);
- height ~ N(65, 3) if female, N(70, 3) otherwise;
- weight ~ N(3.6 · height − 90, 15);
- blood pressure ~ N(100, 3) if female, N(106, 3) otherwise;
- temperature ~ N(98.6, 0.5).

The second argument of N(·, ·) is read as a standard deviation: that is the reading under
which the conditional variances the paper reports for Θ (Var(F₂ | s) = 10²/50 = 2,
Var(F₃ | s) = 2²/50 = 0.08) follow from its stated distributions.

Θ, the distributions the hospital wants to be private under, is given in the paper as
ranges of the same parameters (:data:`PAPER_THETA_RANGES`, :func:`hospital_theta`). Each
parameter set has exact population moments (μ, V) of the record
(female, height, weight, blood pressure, temperature) (:meth:`HospitalParameters.moments`),
which feed the Gaussian closed forms of §4.2
(:func:`distpriv.central.gaussian_attribute_model`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..central.apgm import theta_grid
from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_positive_int, check_real, check_rng

__all__ = [
    "HOSPITAL_COLUMNS",
    "PAPER_GENERATOR",
    "PAPER_THETA_RANGES",
    "HospitalParameters",
    "generate_hospital",
    "hospital_moments",
    "hospital_theta",
]

HOSPITAL_COLUMNS = ("female", "height", "weight", "blood_pressure", "temperature")


@dataclass(frozen=True)
class HospitalParameters:
    """One distribution θ of a patient record (Zhang et al. 2022, §4.2).

    Heights in inches, weights in pounds, blood pressure in mmHg, temperatures in °F;
    every ``*_sd`` is a standard deviation.
    """

    #: P(female), in [0, 1].
    p_female: float = 0.6
    #: Height ~ N(mean, sd²) given the gender.
    height_mean_female: float = 65.0
    height_mean_other: float = 70.0
    height_sd_female: float = 3.0
    height_sd_other: float = 3.0
    #: Weight ~ N(slope · height + intercept, sd²) (the paper's N(k₁x − k₂, 15)).
    weight_slope: float = 3.6
    weight_intercept: float = -90.0
    weight_sd: float = 15.0
    #: Blood pressure ~ N(mean, sd²) given the gender.
    bp_mean_female: float = 100.0
    bp_mean_other: float = 106.0
    bp_sd: float = 3.0
    #: Temperature ~ N(mean, sd²) given the gender.
    temp_mean_female: float = 98.6
    temp_mean_other: float = 98.6
    temp_sd: float = 0.5

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "p_female":
                check_real(v, f.name, low=0.0, high=1.0)
            elif f.name.endswith("_sd"):
                check_real(v, f.name, low=0.0)
            else:
                check_real(v, f.name)

    def _conditional(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean (2, 5) and covariance (2, 5, 5) of a record given gender (other, female)."""
        k = self.weight_slope
        means = np.empty((2, 5))
        covs = np.zeros((2, 5, 5))
        per_gender = (  # (height mean, height sd, bp mean, temp mean): other, female
            (
                self.height_mean_other,
                self.height_sd_other,
                self.bp_mean_other,
                self.temp_mean_other,
            ),
            (
                self.height_mean_female,
                self.height_sd_female,
                self.bp_mean_female,
                self.temp_mean_female,
            ),
        )
        for g, (hm, hs, bm, tm) in enumerate(per_gender):
            means[g] = (g, hm, k * hm + self.weight_intercept, bm, tm)
            hv = hs**2
            covs[g, 1, 1] = hv
            covs[g, 1, 2] = covs[g, 2, 1] = k * hv
            covs[g, 2, 2] = k * k * hv + self.weight_sd**2
            covs[g, 3, 3] = self.bp_sd**2
            covs[g, 4, 4] = self.temp_sd**2
        return means, covs

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean μ (5,) and covariance V (5, 5) of (female, height, weight, bp, temp).

        By the laws of total expectation and covariance over the gender: μ = E[m(G)],
        V = E[C(G)] + Cov(m(G)), with m, C the moments given the gender.
        """
        means, covs = self._conditional()
        p = self.p_female
        w = np.array([1.0 - p, p])
        mu = w @ means
        d = means[1] - means[0]
        cov = w[0] * covs[0] + w[1] * covs[1] + p * (1.0 - p) * np.outer(d, d)
        return mu, cov

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> pd.DataFrame:
        """Draw n records; see :func:`generate_hospital`."""
        return generate_hospital(n, params=self, rng=rng)


PAPER_GENERATOR = HospitalParameters()
"""The generator of §4.2 (the defaults of :class:`HospitalParameters`)."""

PAPER_THETA_RANGES: Mapping[str, float | tuple[float, float]] = {
    "p_female": (0.25, 0.75),
    "height_mean_female": (64.0, 66.0),
    "height_mean_other": (69.0, 71.0),
    "height_sd_female": 3.0,
    "height_sd_other": 8.0,
    "weight_slope": (3.0, 3.5),
    "weight_intercept": (-90.0, -80.0),
    "weight_sd": 15.0,
    "bp_mean_female": (106.0, 110.0),
    "bp_mean_other": 100.0,
    "bp_sd": 10.0,
    "temp_mean_female": (98.6, 98.9),
    "temp_mean_other": 98.6,
    "temp_sd": 2.0,
}
"""Θ of §4.2: k₁ ∈ (3, 3.5), k₂ ∈ (80, 90), μ_F ∈ (64, 66) with sd 3, μ_O ∈ (69, 71) with
sd 8, b_F − b_O ∈ [6, 10] with sd 10, t_F − t_O ∈ [0, 0.3] with sd 2, p ∈ (0.25, 0.75).
Only the differences b_F − b_O and t_F − t_O matter, so b_O = 100 and t_O = 98.6 are fixed.
The paper's generator is not inside this Θ (it has female blood pressure below the
others', and smaller standard deviations); the sensitivities of §4.2 are computed over Θ."""


def hospital_theta(
    ranges: Mapping[str, float | tuple[float, float] | Sequence[float]] = PAPER_THETA_RANGES,
    *,
    points: int = 2,
    base: HospitalParameters = PAPER_GENERATOR,
) -> tuple[HospitalParameters, ...]:
    """Θ as a grid of parameter sets (the corners when ``points = 2``).

    Parameters
    ----------
    ranges : mapping
        Per :class:`HospitalParameters` field: a value, a (low, high) interval or a list of
        values (see :func:`distpriv.central.theta_grid`). Default: the paper's Θ.
    points : int
        Values per interval (≥ 2).
    base : HospitalParameters
        Values of the fields not in ``ranges``.

    Returns
    -------
    tuple of HospitalParameters
    """
    if not isinstance(base, HospitalParameters):
        raise ParameterTypeError(f"base must be HospitalParameters, got {type(base).__name__}")
    names = {f.name for f in dataclasses.fields(HospitalParameters)}
    unknown = sorted(set(ranges) - names)
    if unknown:
        raise ParameterError(
            f"ranges names unknown parameter {unknown[0]!r}; parameters: {sorted(names)}"
        )
    return tuple(dataclasses.replace(base, **combo) for combo in theta_grid(ranges, points=points))


def hospital_moments(
    thetas: HospitalParameters | Sequence[HospitalParameters],
) -> tuple[np.ndarray, np.ndarray]:
    """Stacked record moments: μ of shape (k, 5) and V of shape (k, 5, 5)."""
    seq = [thetas] if isinstance(thetas, HospitalParameters) else list(thetas)
    if not seq or not all(isinstance(t, HospitalParameters) for t in seq):
        raise ParameterTypeError("thetas must be HospitalParameters or a non-empty list of them")
    mus, covs = zip(*(t.moments() for t in seq), strict=True)
    return np.stack(mus), np.stack(covs)


def generate_hospital(
    n: int = 50,
    *,
    params: HospitalParameters = PAPER_GENERATOR,
    rng: np.random.Generator | int | None = None,
) -> pd.DataFrame:
    """n synthetic patient records (Zhang et al. 2022, §4.2; the paper uses n = 50).

    Parameters
    ----------
    n : int
        Number of records.
    params : HospitalParameters
        The distribution θ (default: the paper's generator).
    rng : int, numpy.random.Generator or None
        Source of randomness (an int seed for reproducible data).

    Returns
    -------
    pandas.DataFrame
        Columns ``gender`` ("female"/"other"), then :data:`HOSPITAL_COLUMNS`
        (``female`` as 0/1).

    Examples
    --------
    >>> df = generate_hospital(50, rng=0)
    >>> list(df.columns)
    ['gender', 'female', 'height', 'weight', 'blood_pressure', 'temperature']
    """
    nn = check_positive_int(n, "n")
    if not isinstance(params, HospitalParameters):
        raise ParameterTypeError(f"params must be HospitalParameters, got {type(params).__name__}")
    gen = check_rng(rng)
    p = params
    female = gen.random(nn) < p.p_female
    z = gen.standard_normal((4, nn))
    height = np.where(
        female,
        p.height_mean_female + p.height_sd_female * z[0],
        p.height_mean_other + p.height_sd_other * z[0],
    )
    weight = p.weight_slope * height + p.weight_intercept + p.weight_sd * z[1]
    bp = np.where(female, p.bp_mean_female, p.bp_mean_other) + p.bp_sd * z[2]
    temp = np.where(female, p.temp_mean_female, p.temp_mean_other) + p.temp_sd * z[3]
    return pd.DataFrame(
        {
            "gender": np.where(female, "female", "other"),
            "female": female.astype(np.int64),
            "height": height,
            "weight": weight,
            "blood_pressure": bp,
            "temperature": temp,
        }
    )
