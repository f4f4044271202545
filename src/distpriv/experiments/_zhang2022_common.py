"""The paper and the privacy setting shared by the Zhang, Ohrimenko & Cummings 2022
reproductions (``zhang2022-apgm``, ``zhang2022-apmqm``)."""

from __future__ import annotations

PAPER = "Zhang, Ohrimenko & Cummings 2022"
EPSILON, DELTA, N_PATIENTS, RUNS = 1.0, 1e-3, 50, 100
