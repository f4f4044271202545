"""Reproductions of Zhang, Ohrimenko & Cummings 2022 (FAccT): §4.2 (APGM) and Example 1 (APMQM).

``zhang2022-apgm`` releases the average weight, blood pressure and temperature of 50
synthetic patients while hiding whether the share of female patients is below or above
50 % (ε = 1, δ = 1e-3, 100 runs, average absolute error). It calibrates APGM three ways:
from the sensitivities and variances the paper states, from the §4.2 closed forms over the
paper's Θ (a grid of its parameter ranges), and from the generated hospital data.

How |a − b| = 0.25 is read: the secret pair is s_a = "the share is in (0.25, 0.5)" versus
s_b = "it is in (0.5, 0.75)". The paper's sensitivities (6.125 = 3.5 · 7 · 0.25,
2.5 = 10 · 0.25, 0.075 = 0.3 · 0.25) use max |a − b| = 0.25, which is the distance between
the centres of the two ranges, a = 0.375 and b = 0.625 (equivalently, the width of one
range). We use those two values as the secrets. Taking a and b anywhere in the ranges
would give sup |a − b| = 0.5 and double every sensitivity; the "strict reading" rows show
what that costs.

``zhang2022-apmqm`` runs Alg. 2 on the school of Example 1
(:func:`distpriv.datasets.school_network`): every Markov quilt of family income with its
max-influence and noise, for the count of students taller than 66 in, the count of those
also scoring above 1300, and the pair of counts.
"""

from __future__ import annotations

from ._zhang2022_common import (
    DELTA,  # noqa: F401 (re-exported, not in __all__)
    EPSILON,  # noqa: F401 (re-exported, not in __all__)
    N_PATIENTS,  # noqa: F401 (re-exported, not in __all__)
    PAPER,
    RUNS,  # noqa: F401 (re-exported, not in __all__)
)
from .base import Experiment
from .zhang2022_apgm import (
    CALS,  # noqa: F401 (re-exported, not in __all__)
    CLASSICAL_NOTE,  # noqa: F401 (re-exported, not in __all__)
    PAPER_42,  # noqa: F401 (re-exported, not in __all__)
    SECRET_LABELS,  # noqa: F401 (re-exported, not in __all__)
    SECRETS,  # noqa: F401 (re-exported, not in __all__)
    STATS,  # noqa: F401 (re-exported, not in __all__)
    apgm_experiment,
)
from .zhang2022_apmqm import (
    STUDENTS,  # noqa: F401 (re-exported, not in __all__)
    apmqm_experiment,
)

__all__ = ["EXPERIMENTS"]

EXPERIMENTS = {
    e.name: e
    for e in (
        Experiment(
            "zhang2022-apgm",
            "APGM: average weight, blood pressure, temperature hiding the female share",
            f"{PAPER}, §4.2",
            apgm_experiment,
        ),
        Experiment(
            "zhang2022-apmqm",
            "APMQM on the school network, protecting the income distribution",
            f"{PAPER}, Example 1",
            apmqm_experiment,
        ),
    )
}
