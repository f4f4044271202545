"""Data sets bundled with distpriv (compressed, with their attribution; nothing downloads).

- :func:`load_adult`: the cleaned UCI Adult (Census Income) data, 45,222 rows
  (Becker & Kohavi 1996, https://doi.org/10.24432/C5XW20, CC BY 4.0).
- :func:`split` / :func:`paper_split`: seeded random partitions of a table, e.g. the
  auxiliary / test / modelling split of Chen & Ohrimenko 2023, §5.1.
- :func:`generate_hospital`: the synthetic hospital records of Zhang, Ohrimenko & Cummings
  2022, §4.2 (gender, height, weight, blood pressure, temperature), seeded.
"""

from __future__ import annotations

from .adult import (
    ADULT_ATTRIBUTION,
    ADULT_COLUMNS,
    PAPER_SPLIT,
    load_adult,
    paper_split,
    split,
)
from .hospital import (
    HOSPITAL_COLUMNS,
    HospitalParameters,
    generate_hospital,
    hospital_moments,
    hospital_theta,
)

__all__ = [
    "ADULT_ATTRIBUTION",
    "ADULT_COLUMNS",
    "HOSPITAL_COLUMNS",
    "PAPER_SPLIT",
    "HospitalParameters",
    "generate_hospital",
    "hospital_moments",
    "hospital_theta",
    "load_adult",
    "paper_split",
    "split",
]
