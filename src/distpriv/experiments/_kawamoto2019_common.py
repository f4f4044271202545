"""Settings and helpers shared by the Kawamoto & Murakami 2019a reproductions.

The published figures (Table 2, Table 3), our reading of the paper's units (1° ≈ 100 km),
and the tupling mechanism's Monte Carlo ε and mean expected loss used by several experiments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..local import (
    restricted_laplace,
    tupling_mechanism,
    tupling_monte_carlo,
)

PAPER = "Kawamoto & Murakami 2019a"
#: Table 2: theoretical (Thm 3) and empirical ε of the tupling mechanism, k = 10,
#: ε_A = 10, r = 0.020, Manhattan male/female, for δ = 0.001, 0.01, 0.1.
PAPER_TABLE2 = {
    "theoretical": {0.001: 2.170, 0.01: 1.625, 0.1: 1.140},
    "empirical": {0.001: 0.04450, 0.01: 0.03534, 0.1: 0.02295},
}
#: Table 3: k needed for (0.25, 0.001)-DistP of male/female in Manhattan (ε_A = 100, r = 0.020).
PAPER_TABLE3_K = 2
DELTA = 1e-3
KM = 100.0  # km per degree, our reading of the paper's units
RADIUS = 0.020 * KM  # 2 km
EPS_A_LOW, EPS_A_HIGH = 10 / KM, 100 / KM  # 0.1 and 1 per km


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _tm_eps(
    scn: Any, pair: tuple[str, str], k: int, eps_a: float, r: float, n: int, rng: Any
) -> tuple[Any, float, float, float]:
    """(mechanism, ε̂, low, high) of the tupling mechanism over an (ε_A, r)-RL at δ = 0.001."""
    lam0, lam1 = (scn.distributions[t] for t in pair)
    tm = tupling_mechanism(restricted_laplace(scn.domain, epsilon=eps_a, radius=r), k=k)
    est = tupling_monte_carlo(tm, lam0, lam1, n_samples=n, rng=rng).epsilon(DELTA)
    return tm, est.epsilon, est.low, est.high


def _mean_loss(mech: Any, scn: Any, pair: tuple[str, str]) -> float:
    return float(np.mean([mech.expected_loss(scn.distributions[t]) for t in pair]))
