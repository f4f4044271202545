"""Benchmark: building the query model of Chen & Ohrimenko 2023 §5.1, against a pandas loop.

Usage::

    python -m benchmarks.bench_model [--seed N]

Setting (§5.1): the Adult modelling split (``paper_split(rng=seed)["modeling"]``, 25,222
rows), the five statistics ``avg(age)``, ``avg(education_num)``,
``count_if(marital_status = 'Never-married')``, ``count_if(sex = 'Female')``,
``avg(hours_per_week)``, the secret ``ProportionSecret("income = '>50K'", values=[0.45,
0.55])``, datasets of 100 rows and 1,000 of them per value (2 x 1,000 subsets).

Times, in the same run:

1. ours, ``model_query(..., method="montecarlo", n_samples=1000)``: index arrays for all
   subsets at once, statistics summed from per-row features (best of 3);
2. ours, ``model_query(..., method="analytic")``: exact moments; it still draws up to 2,000
   diagnostic datasets per value (best of 3);
3. naive: the paper notebook's per-subset loop, ``DataFrame.sample`` from each stratum,
   ``pd.concat``, the five statistics in pandas, then ``np.mean`` / ``np.cov`` (timed once).

Checks (exit status 1 if any fails): per statistic and value, the naive and Monte Carlo
means agree within 5 combined Monte Carlo standard errors (sd / sqrt(1000) of each, in
quadrature); the analytic means agree with the naive ones within 5 of the naive standard
errors (the analytic means have none) and the naive sample variances within 5 standard
errors of the exact (analytic) variances, se = var·sqrt((2 + kurtosis)/(n − 1)) with the
excess kurtosis from the analytic model's diagnostic draws. Also prints ||mu_0.45 - mu_0.55||_2
from each (paper: about 4.2-4.4).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from distpriv.datasets import paper_split
from distpriv.modeling import ProportionSecret, model_query

from ._common import best_of

SUBSET_SIZE = 100
N_SUBSETS = 1000
VALUES = (0.45, 0.55)
PREDICATE = "income = '>50K'"
STATISTICS = {
    "avg(age)": "avg(age)",
    "avg(education_num)": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg(hours_per_week)": "avg(hours_per_week)",
}
MEAN_SE_TOL = 5.0


def naive_model(data: pd.DataFrame, seed: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The notebook way: one pandas sample + concat + statistics per subset."""
    rng = np.random.default_rng(seed)
    pos = data[data["income"] == ">50K"]
    neg = data[data["income"] != ">50K"]
    means, covs, draws = [], [], []
    for p in VALUES:
        k = round(p * SUBSET_SIZE)
        rows = []
        for _ in range(N_SUBSETS):
            subset = pd.concat(
                [
                    pos.sample(n=k, random_state=rng),
                    neg.sample(n=SUBSET_SIZE - k, random_state=rng),
                ]
            )
            rows.append(
                [
                    subset["age"].mean(),
                    subset["education_num"].mean(),
                    (subset["marital_status"] == "Never-married").sum(),
                    (subset["sex"] == "Female").sum(),
                    subset["hours_per_week"].mean(),
                ]
            )
        vectors = np.asarray(rows, dtype=np.float64)
        draws.append(vectors)
        means.append(np.mean(vectors, axis=0))
        covs.append(np.cov(vectors, rowvar=False))
    return np.stack(means), np.stack(covs), draws


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the draws")
    args = parser.parse_args(argv)
    seed = args.seed

    data = paper_split(rng=seed)["modeling"]
    secret = ProportionSecret(PREDICATE, values=list(VALUES))

    def ours(method: str):
        return model_query(
            data,
            STATISTICS,
            secret,
            subset_size=SUBSET_SIZE,
            method=method,
            n_samples=N_SUBSETS,
            rng=seed,
        )

    t_mc, mc = best_of(lambda: ours("montecarlo"), 3)
    t_an, an = best_of(lambda: ours("analytic"), 3)
    t_naive, (nv_means, nv_covs, _) = best_of(lambda: naive_model(data, seed), 1)

    print(f"seed = {seed}")
    print(
        f"Adult modelling split: {len(data)} rows; {len(STATISTICS)} statistics; secret "
        f"{PREDICATE} in {list(VALUES)}; {len(VALUES)} x {N_SUBSETS} subsets of {SUBSET_SIZE}"
    )
    header = f"{'case':<40} {'ours (s)':>10} {'naive (s)':>10} {'ratio':>9}"
    print(header)
    print("-" * len(header))
    for name, t_ours in (
        ("model_query montecarlo (n_samples=1000)", t_mc),
        ("model_query analytic (+diag. draws)", t_an),
    ):
        print(f"{name:<40} {t_ours:>10.4f} {t_naive:>10.4f} {t_naive / t_ours:>8.1f}x")
    print("(ours: best of 3; naive pandas loop: timed once)")

    # Agreement checks.
    mc_means, mc_covs = np.asarray(mc.means), np.asarray(mc.covariances)
    an_means, an_covs = np.asarray(an.means), np.asarray(an.covariances)
    nv_var = np.diagonal(nv_covs, axis1=1, axis2=2)
    mc_var = np.diagonal(mc_covs, axis1=1, axis2=2)
    an_var = np.diagonal(an_covs, axis1=1, axis2=2)
    se_nv = np.sqrt(nv_var / N_SUBSETS)
    se_mc = np.sqrt(mc_var / N_SUBSETS)
    se_comb = np.sqrt(se_nv**2 + se_mc**2)
    z_mc = np.abs(mc_means - nv_means) / se_comb
    z_an = np.abs(an_means - nv_means) / se_nv
    # Relative to the exact variance (the reference without Monte Carlo error); the
    # standard error of a sample variance is var·sqrt((2 + excess kurtosis)/(n − 1)).
    rel_var = np.abs(nv_var - an_var) / an_var
    kurt = np.maximum(np.asarray(an.diagnostics["excess_kurtosis"]), 0.0)
    z_var = rel_var / np.sqrt((2.0 + kurt) / (N_SUBSETS - 1))

    print()
    names = list(STATISTICS)
    head2 = (
        f"{'p':>5} {'statistic':<20} {'naive mean':>11} {'MC mean':>10} {'exact mean':>11} "
        f"{'|MC-nv|/SE':>10} {'|ex-nv|/SE':>10} {'var nv':>9} {'var ex':>9} {'rel':>6}"
    )
    print(head2)
    print("-" * len(head2))
    for i, p in enumerate(VALUES):
        for j, name in enumerate(names):
            print(
                f"{p:>5.2f} {name:<20} {nv_means[i, j]:>11.4f} {mc_means[i, j]:>10.4f} "
                f"{an_means[i, j]:>11.4f} {z_mc[i, j]:>10.2f} {z_an[i, j]:>10.2f} "
                f"{nv_var[i, j]:>9.4f} {an_var[i, j]:>9.4f} {rel_var[i, j]:>6.1%}"
            )

    print()
    for label, means in (("naive", nv_means), ("montecarlo", mc_means), ("analytic", an_means)):
        print(f"||mu_0.45 - mu_0.55||_2 ({label:<10}) = {np.linalg.norm(means[0] - means[1]):.4f}")
    print("(paper: about 4.2-4.4)")

    failures = []
    if np.any(z_mc > MEAN_SE_TOL):
        failures.append(f"naive vs Monte Carlo means differ by up to {z_mc.max():.2f} SE")
    if np.any(z_an > MEAN_SE_TOL):
        failures.append(f"naive vs analytic means differ by up to {z_an.max():.2f} SE")
    if np.any(z_var > MEAN_SE_TOL):
        failures.append(f"naive vs analytic variances differ by up to {z_var.max():.2f} SE")
    if failures:
        for msg in failures:
            print(f"error: {msg}", file=sys.stderr)
        return 1
    print(
        f"agreement: OK (means within {MEAN_SE_TOL:g} SE, max {max(z_mc.max(), z_an.max()):.2f}; "
        f"variances within {MEAN_SE_TOL:g} SE, max {z_var.max():.2f} SE)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
