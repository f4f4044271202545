"""``kawamoto2019-bounds``: Kawamoto & Murakami 2019a, Table 2 (App. A.4).

Thm 3's bound on the tupling mechanism's ε (as stated and in its sound form) against the
empirical Monte Carlo ε, over several seeded synthetic cities.
"""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..datasets.scenarios import synthetic_city
from ..local import (
    restricted_laplace,
    theorem3_bound,
    tupling_bound,
    tupling_mechanism,
    tupling_monte_carlo,
)
from ._kawamoto2019_common import EPS_A_LOW, PAPER, PAPER_TABLE2, RADIUS
from .base import (
    Comparison,
    ExperimentResult,
    RunInfo,
    make_result,
    save_figure,
    single_run_interval,
)

# --------------------------------------------------------------------------------------------
# Table 2: theoretical (Thm 3) vs empirical ε
# --------------------------------------------------------------------------------------------


_BOUND_DELTAS = (0.001, 0.01, 0.1)
# One row per (city, δ): Thm 3 as stated (ε, β, η), Thm 3 sound (ε, β), empirical ε and its
# 95 % interval.
_BOUND_COLUMNS = [
    "city_seed",
    "delta",
    "thm3_as_stated",
    "beta_as_stated",
    "eta_as_stated",
    "thm3_sound",
    "beta_sound",
    "empirical",
    "emp_low",
    "emp_high",
]


def _bounds_city(s: int, n: int) -> tuple[list[tuple[Any, ...]], int]:
    """The rows of one synthetic city (seed ``s``), and its number of outputs |Y|."""
    scn = synthetic_city(seed=s)
    lam0, lam1 = (scn.distributions[t] for t in scn.pairs[0])
    tm = tupling_mechanism(restricted_laplace(scn.domain, epsilon=EPS_A_LOW, radius=RADIUS), k=10)
    mc = tupling_monte_carlo(tm, lam0, lam1, n_samples=n, rng=np.random.default_rng(s))
    rows = []
    for d in _BOUND_DELTAS:
        sound = tupling_bound(tm, lam0, lam1, delta=d)
        stated = tupling_bound(tm, lam0, lam1, delta=d, allow_eta=True)
        est = mc.epsilon(d)
        thm3 = (stated.epsilon, stated.beta, stated.eta, sound.epsilon, sound.beta)
        rows.append((s, d, *thm3, est.epsilon, est.low, est.high))
    return rows, tm.n_outputs


def _column(rows: list[tuple[Any, ...]], d: float, k: int) -> list[float]:
    return [r[k] for r in rows if r[1] == d]


def _over_cities(vals: list[float]) -> tuple[float, float, float]:
    """Prediction interval over cities, clamped at 0 (ε ≥ 0); open above if some is inf."""
    arr = np.array(vals, dtype=float)
    if not np.all(np.isfinite(arr)):
        fin = arr[np.isfinite(arr)]
        mean = float(np.mean(fin)) if fin.size else math.inf
        return mean, float(fin.min()) if fin.size else math.inf, math.inf
    mean, lo, hi = single_run_interval(arr)
    return mean, max(lo, 0.0), hi


def _bounds_comparisons(rows: list[tuple[Any, ...]]) -> list[Comparison]:
    comps = []
    for d in _BOUND_DELTAS:
        mean, lo, hi = _over_cities(_column(rows, d, 2))
        paper = PAPER_TABLE2["theoretical"][d]
        comps.append(Comparison(f"Thm 3 bound (as stated), delta={d:g}", paper, mean, lo, hi))
    for d in _BOUND_DELTAS:
        mean, lo, hi = _over_cities(_column(rows, d, 7))
        lo, hi = min(lo, min(_column(rows, d, 8))), max(hi, max(_column(rows, d, 9)))
        comps.append(
            Comparison(f"empirical eps, delta={d:g}", PAPER_TABLE2["empirical"][d], mean, lo, hi)
        )
    return comps


def _bounds_checks(rows: list[tuple[Any, ...]]) -> dict[str, bool]:
    """The paper's claims: the (sound) bound holds and is loose; ε falls as δ grows."""
    checks = {}
    for d in _BOUND_DELTAS:
        sound, high = _column(rows, d, 5), _column(rows, d, 9)
        checks[f"sound Thm 3 bound >= empirical upper end, delta={d:g}"] = all(
            b >= e for b, e in zip(sound, high, strict=True)
        )
    for d in _BOUND_DELTAS:
        sound, emp = _column(rows, d, 5), _column(rows, d, 7)
        checks[f"bound loose: more than 10x the empirical eps, delta={d:g}"] = all(
            b > 10 * e for b, e in zip(sound, emp, strict=True)
        )
    checks["empirical eps falls as delta grows"] = all(
        np.mean(_column(rows, a, 7)) > np.mean(_column(rows, b, 7))
        for a, b in itertools.pairwise(_BOUND_DELTAS)
    )
    return {k: bool(v) for k, v in checks.items()}


def _paper_beta() -> tuple[float, dict[float, float]]:
    """The β that gives the paper's 2.170 at δ = 0.001 (η = 0) for |Y| = 276, and Thm 3 at
    every δ with that β (a check of the formula, not of our cities)."""
    from scipy.optimize import brentq

    def thm3(beta: float, d: float) -> float:
        alpha = beta * math.sqrt(10 * math.log(2 / d) / 2)
        return theorem3_bound(k=10, n_outputs=276, beta=beta, eta=0.0, alpha=alpha)[0]

    target = PAPER_TABLE2["theoretical"][0.001]
    beta_fit = brentq(lambda b: thm3(b, 0.001) - target, 1e-6, 10 / 276 / 6.2)
    return beta_fit, {d: thm3(beta_fit, d) for d in _BOUND_DELTAS}


def _bounds_notes(
    rows: list[tuple[Any, ...]], outputs: dict[int, int], seeds: list[int], n: int
) -> tuple[Any, ...]:
    betas = [(r[6], outputs[r[0]]) for r in rows]
    beta_fit, fit = _paper_beta()
    return (
        "Synthetic cities (seeds " + ", ".join(map(str, seeds)) + "), not Manhattan: the "
        "published values need not fall in our intervals; the checks are the paper's claims "
        "(the bound holds and is loose).",
        f"beta = max_y A#(lambda)[y] on our cities: {min(b for b, _ in betas):.5g}-"
        f"{max(b for b, _ in betas):.5g} (beta*|Y| = "
        f"{min(b * y for b, y in betas):.2f}-{max(b * y for b, y in betas):.2f}); "
        "the paper's 2.170 at delta = 0.001 "
        f"implies beta = {beta_fit:.5g} for |Y| = 276 (beta*|Y| = {beta_fit * 276:.2f}): its "
        "A#(lambda) was closer to uniform.",
        f"Formula check: with that beta and eta = 0, Thm 3 gives {fit[0.01]:.4g} at delta = "
        f"0.01 and {fit[0.1]:.4g} at 0.1 (paper: 1.625 and 1.140), consistent with the paper "
        "re-choosing (beta, eta) per delta.",
        "'as stated' minimises over (beta, eta) as Thm 3 is written; the proof covers only "
        "eta = 0 ('sound' column), and for eta > 0 the statement can fail (see "
        "distpriv.local.tupling_bound). At delta = 0.001 eta must be 0 (1/|Y| > delta), so "
        "both agree there.",
        f"Empirical eps: Monte Carlo over {n} tuples per distribution per city, 95% "
        "Chernoff-Hoeffding intervals.",
    )


def _draw_bounds(plt: Any, rows: list[tuple[Any, ...]]) -> Any:
    deltas = _BOUND_DELTAS
    emp = {d: _column(rows, d, 7) for d in deltas}
    low = {d: [e - lo for e, lo in zip(emp[d], _column(rows, d, 8), strict=True)] for d in deltas}
    high = {d: [hi - e for e, hi in zip(emp[d], _column(rows, d, 9), strict=True)] for d in deltas}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = np.arange(len(deltas))
    w = 0.2
    bars = (  # offset, heights, colour, alpha, label
        (-1.5, [PAPER_TABLE2["theoretical"][d] for d in deltas], "C0", 0.5, "paper: Thm 3"),
        (
            -0.5,
            [np.mean(_column(rows, d, 2)) for d in deltas],
            "C0",
            1.0,
            "ours: Thm 3 (as stated)",
        ),
        (0.5, [PAPER_TABLE2["empirical"][d] for d in deltas], "C1", 0.5, "paper: empirical"),
    )
    for off, heights, color, alpha, label in bars:
        ax.bar(xs + off * w, heights, w, color=color, alpha=alpha, label=label)
    ax.bar(
        xs + 1.5 * w,
        [np.mean(emp[d]) for d in deltas],
        w,
        color="C1",
        yerr=np.array([[np.mean(low[d]) for d in deltas], [np.mean(high[d]) for d in deltas]]),
        label="ours: empirical (Monte Carlo)",
    )
    for x, d in zip(xs, deltas, strict=True):
        if np.mean(emp[d]) == 0.0:
            ax.annotate(
                "ours: 0",
                (x + 1.5 * w, 0.0),
                xytext=(x + 1.5 * w, 0.03),
                ha="center",
                fontsize=8,
                color="C1",
            )
    ax.set(
        xticks=xs,
        xticklabels=[f"delta = {d:g}" for d in deltas],
        yscale="log",
        ylabel="eps of (eps, delta)-DistP",
        title=f"{PAPER}, Table 2 analogue: k = 10, eps_A = 0.1/km, r = 2 km",
    )
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def bounds(*, quick: bool = False, seed: int = 0, out_dir: Path | None = None) -> ExperimentResult:
    """Table 2: Thm 3's ε against the empirical ε, k = 10, ε_A = 10 (0.1/km), r = 0.020 (2 km)."""
    t0 = time.perf_counter()
    n = 100_000 if quick else 1_000_000
    seeds = [seed + i for i in range(2 if quick else 5)]
    rows: list[tuple[Any, ...]] = []
    outputs: dict[int, int] = {}
    for s in seeds:  # one synthetic city per seed
        city_rows, outputs[s] = _bounds_city(s, n)
        rows += city_rows
    figs = save_figure(out_dir, "kawamoto2019-bounds", lambda plt: _draw_bounds(plt, rows))
    params = {
        "k": 10,
        "eps_A_per_km": EPS_A_LOW,
        "radius_km": RADIUS,
        "n_samples_per_direction": n,
        "city_seeds": seeds,
    }
    return make_result(
        "kawamoto2019-bounds",
        "Table 2: theoretical (Thm 3) vs empirical eps of the tupling mechanism",
        _BOUND_COLUMNS,
        rows,
        _bounds_comparisons(rows),
        figs,
        params,
        RunInfo(seed, quick, t0),
        _bounds_checks(rows),
        _bounds_notes(rows, outputs, seeds, n),
    )
