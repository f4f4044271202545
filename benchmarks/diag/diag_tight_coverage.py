"""Diagnosis of the tight set's violations on Adult (issue 25, round 6: 24 of 300 tables).

For seeded modelling tables of ``benchmarks/bench_price.py`` (table t of a size is the t-th
draw of ``default_rng([2025, size])``), ``auto`` on the tight set as the benchmark runs it,
and the population's δ(1) of its noise, in claims (δ / 1e-3), split into what the means and
what the covariances contribute:

* ``true``: the population's own model (means and covariances);
* ``fit``: the fitted model;
* ``true_means``: the population's means with the fitted covariances;
* ``true_covs``: the fitted means with the population's covariances;
* ``members``: the worst member of the tight set for the published noise (the calibration's
  claim is on these: at most 1 up to the search's accuracy);

and the pair's gap distance ‖MΔ‖ in the published noise's output metric
M = ((Σ₀ + Σ₁)/2 + Σ_Z)^(−1/2) (the population's covariances) for the population, the fit
and the member. Round 6 (five violating Adult 1,000-row tables, 14, 16, 27, 38, 48): true
1.0-1.8, true_means 0.84-1.79, true_covs 0.13-0.18, members 0.88-0.96; the population's
gap distance 0.345-0.397 against the member's 0.357-0.375.

Run: ``python -m benchmarks.diag.diag_tight_coverage SIZE TABLES`` (TABLES comma-separated,
e.g. ``1000 14,16,27,38,48``; about 5 s per table on an idle core).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from distpriv.accounting import gaussian_pair_delta
from distpriv.population.confidence import population_model, population_set

from .. import bench_price as bp


def claims(means: np.ndarray, covs: np.ndarray, noise: np.ndarray) -> float:
    """δ(1) of the pair (0, 1), both directions, in units of the claim 1e-3."""
    out = 0.0
    for a, b in ((0, 1), (1, 0)):
        ca, cb = covs[a] + noise, covs[b] + noise
        out = max(out, gaussian_pair_delta(means[a], ca, means[b], cb, epsilon=bp.EPS))
    return out / bp.DELTA


def main() -> None:
    size, want = int(sys.argv[1]), {int(t) for t in sys.argv[2].split(",")}
    warnings.simplefilter("ignore")
    frame = bp.load("adult")
    stats, secret = bp.POPULATIONS["adult"]
    pop = bp.model_query(frame, stats, secret, subset_size=100, method="analytic", population=True)
    pm, pc = np.asarray(pop.means), np.asarray(pop.covariances)
    rng = np.random.default_rng([2025, size])
    for t in range(max(want) + 1):
        sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
        if t not in want:
            continue
        model = bp.model_query(sample, stats, secret, subset_size=100, method="analytic")
        with population_set("tight"):
            choice = bp.auto_choice(model)
            noise = choice.mechanism.noise_covariance
            mem = population_model(model, beta=0.05, noise_cov=noise, epsilon=bp.EPS)
        fm, fc = np.asarray(model.means), np.asarray(model.covariances)
        mm = np.asarray(mem.means)
        worst = bp.true_delta(mem, noise) / bp.DELTA  # every pair of the set, both ways
        metric = np.linalg.inv(np.linalg.cholesky((pc[0] + pc[1]) / 2 + noise))
        dist = [float(np.linalg.norm(metric @ (x[1] - x[0]))) for x in (pm, fm)]
        members = [float(np.linalg.norm(metric @ (mm[j] - mm[i]))) for i, j in mem.pairs]
        print(
            f"table {t} ({choice.name}): true {bp.true_delta(pop, noise) / bp.DELTA:.3f}, fit "
            f"{claims(fm, fc, noise):.3f}, true_means {claims(pm, fc, noise):.3f}, "
            f"true_covs {claims(fm, pc, noise):.3f}, members {worst:.3f}; gap distance "
            f"population {dist[0]:.3f}, fit {dist[1]:.3f}, member(s) "
            + ", ".join(f"{d:.3f}" for d in members),
            flush=True,
        )


if __name__ == "__main__":
    main()
