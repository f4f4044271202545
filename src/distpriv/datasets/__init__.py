"""Data sets bundled with distpriv (compressed, with their attribution; nothing downloads).

- :func:`load_adult`: the cleaned UCI Adult (Census Income) data, 45,222 rows
  (Becker & Kohavi 1996, https://doi.org/10.24432/C5XW20, CC BY 4.0).
- :func:`split` / :func:`paper_split`: seeded random partitions of a table, e.g. the
  auxiliary / test / modelling split of Chen & Ohrimenko 2023, §5.1.
- :func:`generate_hospital`: the synthetic hospital records of Zhang, Ohrimenko & Cummings
  2022, §4.2 (gender, height, weight, blood pressure, temperature), seeded.
- :func:`load_scenario` (``"city"``, ``"adult"``): local-obfuscation scenarios of Kawamoto &
  Murakami 2019 — a synthetic 10 km × 9 km city with two location distributions, and Adult
  (age band × hours band) cells for men/women and the two income classes.
- :func:`school_network`: the parameter network of the school of Zhang, Ohrimenko & Cummings
  2022, Example 1 (worked example for APMQM).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    from .adult import ADULT_ATTRIBUTION, ADULT_COLUMNS, PAPER_SPLIT, load_adult, paper_split, split
    from .hospital import (
        HOSPITAL_COLUMNS,
        HospitalParameters,
        generate_hospital,
        hospital_moments,
        hospital_theta,
    )
    from .networks import school_network
    from .scenarios import SCENARIOS, adult_scenario, load_scenario, synthetic_city

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
