"""Scenarios for local distribution obfuscation: a synthetic city and the Adult data.

* :func:`synthetic_city` — the setting of Kawamoto & Murakami 2019a §7.1 without the
  Foursquare check-ins, which cannot be shipped: an 11 km × 10 km area of 1 km regions,
  re-divided by density into quadrants (≈ 285 regions, Y; the paper has 276), with X the
  regions inside the central 10 km × 9 km area (≈ 247; the paper has 228). Check-ins of
  two synthetic user groups (``"male"``, ``"female"``, named after the paper's running
  attribute) are drawn, seeded, from the documented hotspot mixtures
  :data:`CITY_HOTSPOTS`; λ_t is the empirical distribution of group t over X, and λ̂_t
  (for the coupling mechanism) comes from an independent, smaller sample. Distances are
  Euclidean between region centres, in km.
* :func:`adult_scenario` — real data: X = Y = the cells (age band, hours-per-week band) of
  the bundled UCI Adult data (:func:`distpriv.datasets.load_adult`); λ are the
  distributions of men and women, and of the two income classes, over the cells.

:func:`load_scenario` builds one by name (:data:`SCENARIOS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..local.domains import Domain, Grid, LocalScenario, build_grid
from ..util.validation import check_choice, check_positive_int, check_real, check_rng
from .adult import ADULT_ATTRIBUTION, load_adult

__all__ = [
    "ADULT_AGE_BANDS",
    "ADULT_HOURS_BANDS",
    "CITY_HOTSPOTS",
    "SCENARIOS",
    "Hotspot",
    "adult_scenario",
    "city_points",
    "load_scenario",
    "synthetic_city",
]


@dataclass(frozen=True)
class Hotspot:
    """One component of the city's check-in mixture: an isotropic Gaussian blob."""

    name: str
    #: Position in km, in the 11 km × 10 km area.
    center: tuple[float, float]
    #: Standard deviation per coordinate, km.
    sd: float
    #: Mixture weight for the ``"male"`` and the ``"female"`` group.
    weights: tuple[float, float]


#: The check-in mixtures of the two groups; the rest of each group's mass
#: (:data:`CITY_BACKGROUND`) is uniform over the whole area. The groups differ mildly
#: (offices and the stadium versus shopping and residential areas), like male/female in
#: KM 2019a Figs. 7e–7f; the blobs are wide enough that density-split regions end up with
#: roughly similar populations, as in the paper's Manhattan grid.
CITY_HOTSPOTS: tuple[Hotspot, ...] = (
    Hotspot("financial district", (3.0, 2.0), 1.2, (0.127, 0.080)),
    Hotspot("midtown offices", (5.5, 6.0), 1.6, (0.159, 0.127)),
    Hotspot("university", (8.0, 7.5), 1.0, (0.064, 0.080)),
    Hotspot("shopping street", (6.5, 3.5), 1.4, (0.080, 0.143)),
    Hotspot("stadium", (2.0, 6.5), 0.8, (0.064, 0.024)),
    Hotspot("residential north", (4.0, 8.3), 2.0, (0.111, 0.127)),
    Hotspot("residential east", (9.0, 2.8), 2.0, (0.095, 0.119)),
)
CITY_BACKGROUND = 0.30
CITY_GROUPS: tuple[str, str] = ("male", "female")
CITY_EXTENT = (0.0, 11.0, 0.0, 10.0)
# The central 10 km × 9 km area: X is the regions whose centre lies strictly inside it.
CITY_CENTRAL = (0.5, 10.5, 0.5, 9.5)


def city_points(group: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` check-ins of group 0 (``"male"``) or 1 (``"female"``), shape (n, 2), in km.

    Points that fall outside the area are redrawn.
    """
    weights = np.array([h.weights[group] for h in CITY_HOTSPOTS] + [CITY_BACKGROUND])
    weights = weights / weights.sum()
    centers = np.array([h.center for h in CITY_HOTSPOTS])
    sds = np.array([h.sd for h in CITY_HOTSPOTS])
    x0, x1, y0, y1 = CITY_EXTENT
    out = np.empty((0, 2))
    while out.shape[0] < n:
        m = 2 * (n - out.shape[0]) + 16
        comp = rng.choice(weights.size, size=m, p=weights)
        pts = np.column_stack([rng.uniform(x0, x1, m), rng.uniform(y0, y1, m)])
        blob = comp < len(CITY_HOTSPOTS)
        pts[blob] = (
            centers[comp[blob]] + rng.normal(size=(int(blob.sum()), 2)) * sds[comp[blob], None]
        )
        ok = (pts[:, 0] >= x0) & (pts[:, 0] < x1) & (pts[:, 1] >= y0) & (pts[:, 1] < y1)
        out = np.vstack([out, pts[ok]])
    return out[:n]


def _histogram(grid: Grid, points: np.ndarray, regions: np.ndarray, smoothing: float) -> np.ndarray:
    idx = grid.locate(points)
    counts = np.bincount(idx[idx >= 0], minlength=len(grid)).astype(float)[regions]
    counts += smoothing
    return counts / counts.sum()


def synthetic_city(
    *,
    seed: int = 0,
    n_points: int = 20_000,
    n_estimate: int = 4_000,
    max_points: int = 320,
    max_depth: int = 2,
) -> LocalScenario:
    """A synthetic city in the setting of KM 2019a §7.1 (seeded).

    Parameters
    ----------
    seed : int
        Seeds the check-ins (the grid, the λ's and the estimates all follow from it).
    n_points : int
        Check-ins per group for λ (the attacker's knowledge) and the grid.
    n_estimate : int
        Check-ins per group, drawn independently, for the estimates λ̂ (add-½ smoothing, so
        λ̂ has full support).
    max_points : int
        A region with more pooled check-ins than this is split into quadrants.
    max_depth : int
        At most this many splits (regions down to 250 m with the default 2).

    Returns
    -------
    LocalScenario
        ``name="city"``, distributions ``"male"`` and ``"female"`` over X, the pair
        (male, female), estimates of both, and ``params`` with the grid sizes.
    """
    n = check_positive_int(n_points, "n_points")
    n_est = check_positive_int(n_estimate, "n_estimate")
    gen = check_rng(check_positive_int(seed, "seed", minimum=0))
    pts = [city_points(g, n, gen) for g in (0, 1)]
    est_pts = [city_points(g, n_est, gen) for g in (0, 1)]
    grid = build_grid(
        CITY_EXTENT, 1.0, points=np.vstack(pts), max_points=max_points, max_depth=max_depth
    )
    centers = grid.centers
    cx0, cx1, cy0, cy1 = CITY_CENTRAL
    inner = np.flatnonzero(
        (centers[:, 0] > cx0)
        & (centers[:, 0] < cx1)
        & (centers[:, 1] > cy0)
        & (centers[:, 1] < cy1)
    )
    labels = [f"({c[0]:.3g},{c[1]:.3g})" for c in centers]
    domain = Domain(
        centers[inner],
        centers,
        metric="l2",
        input_labels=tuple(labels[i] for i in inner),
        output_labels=tuple(labels),
    )
    dists = {t: _histogram(grid, p, inner, 0.0) for t, p in zip(CITY_GROUPS, pts, strict=True)}
    ests = {t: _histogram(grid, p, inner, 0.5) for t, p in zip(CITY_GROUPS, est_pts, strict=True)}
    description = (
        f"Synthetic city (seed {seed}): {len(grid)} regions over 11 km x 10 km (1 km cells "
        f"split into quadrants while holding > {max_points} of the {2 * n} check-ins, at "
        f"most {max_depth} times); X = the {inner.size} regions inside the central 10 km x "
        f"9 km. Check-ins of two synthetic groups from the hotspot mixtures CITY_HOTSPOTS "
        f"plus {CITY_BACKGROUND:g} uniform background; estimates from {n_est} independent "
        "check-ins per group with add-1/2 smoothing. Distances in km between region centres."
    )
    return LocalScenario(
        name="city",
        title="Synthetic city: male vs female check-ins (KM 2019a §7.1 setting)",
        domain=domain,
        distributions=dists,
        pairs=(CITY_GROUPS,),
        estimates=ests,
        description=description,
        params={
            "seed": seed,
            "n_points": n,
            "n_estimate": n_est,
            "max_points": max_points,
            "max_depth": max_depth,
            "n_regions": len(grid),
            "n_inputs": int(inner.size),
        },
    )


#: Age bands [lo, hi) of the Adult scenario (ages run 17–90).
ADULT_AGE_BANDS: tuple[tuple[int, int], ...] = (
    (17, 25),
    (25, 35),
    (35, 45),
    (45, 55),
    (55, 65),
    (65, 91),
)
#: Hours-per-week bands [lo, hi) (hours run 1–99).
ADULT_HOURS_BANDS: tuple[tuple[int, int], ...] = (
    (1, 10), (10, 20), (20, 30), (30, 40), (40, 50), (50, 60), (60, 70), (70, 100),
)  # fmt: skip


def adult_scenario(*, seed: int = 0, estimate_fraction: float = 0.2) -> LocalScenario:
    """The Adult data as a local-obfuscation scenario over (age band, hours band) cells.

    X = Y = the 6 × 8 cells of :data:`ADULT_AGE_BANDS` × :data:`ADULT_HOURS_BANDS`; a cell's
    coordinates are its two band indices, so distances count bands (Euclidean). Each person
    would obfuscate their own cell.

    Parameters
    ----------
    seed : int
        Seeds the subsample behind the estimates.
    estimate_fraction : float
        Fraction of the rows (drawn at random) from which the estimates λ̂ are computed, with
        add-½ smoothing.

    Returns
    -------
    LocalScenario
        ``name="adult"``: distributions ``"male"``, ``"female"``, ``"<=50K"`` and
        ``">50K"`` over the 48 cells (all 45,222 clean rows), the pairs (male, female) and
        (<=50K, >50K), and estimates of all four.
    """
    frac = check_real(
        estimate_fraction, "estimate_fraction", low=0.0, high=1.0, low_inclusive=False
    )
    gen = check_rng(check_positive_int(seed, "seed", minimum=0))
    df = load_adult()
    age_edges = [b[0] for b in ADULT_AGE_BANDS] + [ADULT_AGE_BANDS[-1][1]]
    hour_edges = [b[0] for b in ADULT_HOURS_BANDS] + [ADULT_HOURS_BANDS[-1][1]]
    ia = np.searchsorted(age_edges, df["age"].to_numpy(), side="right") - 1
    ih = np.searchsorted(hour_edges, df["hours_per_week"].to_numpy(), side="right") - 1
    n_a, n_h = len(ADULT_AGE_BANDS), len(ADULT_HOURS_BANDS)
    cell = np.clip(ia, 0, n_a - 1) * n_h + np.clip(ih, 0, n_h - 1)
    coords = np.array([(a, h) for a in range(n_a) for h in range(n_h)], dtype=float)
    labels = [
        f"age {a0}-{a1 - 1}, {h0}-{h1 - 1} h"
        for a0, a1 in ADULT_AGE_BANDS
        for h0, h1 in ADULT_HOURS_BANDS
    ]
    domain = Domain(coords, metric="l2", input_labels=tuple(labels))
    groups = {
        "male": (df["sex"] == "Male").to_numpy(),
        "female": (df["sex"] == "Female").to_numpy(),
        "<=50K": (df["income"] == "<=50K").to_numpy(),
        ">50K": (df["income"] == ">50K").to_numpy(),
    }
    sub = gen.random(len(df)) < frac

    def hist(mask: np.ndarray, smoothing: float) -> np.ndarray:
        counts = np.bincount(cell[mask], minlength=n_a * n_h).astype(float) + smoothing
        return counts / counts.sum()

    dists = {t: hist(m, 0.0) for t, m in groups.items()}
    ests = {t: hist(m & sub, 0.5) for t, m in groups.items()}
    return LocalScenario(
        name="adult",
        title="Adult: (age band, hours-per-week band) of men vs women, and of the income classes",
        domain=domain,
        distributions=dists,
        pairs=(("male", "female"), ("<=50K", ">50K")),
        estimates=ests,
        description=(
            f"UCI Adult, {len(df)} clean rows; X = Y = {n_a} age bands x {n_h} hours-per-week "
            "bands, coordinates = band indices (Euclidean distance in bands). Estimates from a "
            f"random {frac:g} of the rows (seed {seed}) with add-1/2 smoothing. "
            + ADULT_ATTRIBUTION
        ),
        params={"seed": seed, "estimate_fraction": frac, "n_rows": len(df)},
    )


#: Scenario builders by name; each takes keyword ``seed``.
SCENARIOS: dict[str, Callable[..., LocalScenario]] = {
    "city": synthetic_city,
    "adult": adult_scenario,
}


def load_scenario(name: str, *, seed: int = 0) -> LocalScenario:
    """Build the scenario ``name`` (one of :data:`SCENARIOS`) with ``seed``."""
    check_choice(name, "scenario", tuple(SCENARIOS))
    return SCENARIOS[name](seed=seed)
