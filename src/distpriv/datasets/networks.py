"""Worked-example parameter networks (Bayesian networks over attribute parameters).

:func:`school_network` builds the school of Zhang, Ohrimenko & Cummings 2022, Example 1, on
which :func:`distpriv.central.calibrate_apmqm`'s quilt search is shown (``zhang2022-apmqm``).
"""

from __future__ import annotations

import numpy as np

from ..central.bayesnet import ParameterNetwork

__all__ = ["school_network"]


# ---------------------------------------------------------------------------- Example 1
def school_network() -> ParameterNetwork:
    """The school of Zhang et al. 2022, Example 1, as a parameter network.

    Attributes (φ = a school-level parameter of each column) and the DAG of Fig. 1 as we
    read it: income → SAT, income → gender, gender → height, gender → weight,
    height → weight.

    - ``income``: share of high-income families, {0.2, 0.5, 0.8}, prior (0.3, 0.4, 0.3).
    - ``gender``: share of female students, {0.3, 0.5, 0.7}; mildly dependent on income
      (e_Θ(X_gender | X_income) = log 1.6 ≈ 0.47).
    - ``sat``: share of SAT scores above 1300, {0.1, 0.3, 0.5}; strongly dependent on
      income (e_Θ = log 7 ≈ 1.95).
    - ``height``: share taller than 66 in = 0.2·φ_gender + 0.6·(1 − φ_gender) (per-gender
      shares 0.2 and 0.6), i.e. {0.32, 0.40, 0.48}.
    - ``weight``: mean weight in lb = 130·φ_gender + 160·(1 − φ_gender), {139, 145, 151}.

    Height and weight parameters are functions of the gender mix because the per-gender
    height and weight distributions are population facts; their CPTs are therefore 0/1.

    Returns
    -------
    ParameterNetwork
        {gender} is a Markov quilt of income with N = {income, sat} and
        R = {height, weight}.
    """
    gender = (0.3, 0.5, 0.7)
    height = tuple(round(0.2 * g + 0.6 * (1 - g), 10) for g in gender)
    weight = tuple(round(130 * g + 160 * (1 - g), 10) for g in gender)
    h_sorted, w_sorted = sorted(height), sorted(weight)
    h_cpt = np.zeros((3, 3))
    for gi, h in enumerate(height):
        h_cpt[gi, h_sorted.index(h)] = 1.0
    w_cpt = np.zeros((3, 3, 3))  # (gender, height, weight): weight follows gender
    for gi, w in enumerate(weight):
        w_cpt[gi, :, w_sorted.index(w)] = 1.0
    return ParameterNetwork(
        {
            "income": [0.2, 0.5, 0.8],
            "sat": [0.1, 0.3, 0.5],
            "gender": list(gender),
            "height": h_sorted,
            "weight": w_sorted,
        },
        {
            "income": [0.3, 0.4, 0.3],
            "sat": [[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.2, 0.7]],
            "gender": [[0.40, 0.35, 0.25], [0.30, 0.40, 0.30], [0.25, 0.35, 0.40]],
            "height": h_cpt,
            "weight": w_cpt,
        },
        parents={
            "sat": ["income"],
            "gender": ["income"],
            "height": ["gender"],
            "weight": ["gender", "height"],
        },
    )
