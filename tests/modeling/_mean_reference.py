"""An independent reference for mean secrets: real subsets whose mean falls at each value.

Datasets of n rows are drawn i.i.d. from a real table (the population); those whose mean of
the sensitive column lies in a narrow window [v − h, v + h] around a secret value v are kept,
thousands per value (rejection sampling). Their statistics are computed here with numpy from
features built in pandas by the test (not through distpriv's SQL path). The released
noise's true δ on these datasets is then measured two ways:

* the exact accountant (:func:`distpriv.accounting.gaussian_pair_delta`) on the Monte Carlo
  moments of the kept datasets plus the noise — the Gaussian shape of the statistics is
  assumed, the moments are the real subsets' — with a bootstrap of the kept datasets for
  its Monte Carlo error;
* :func:`distpriv.verify_on_data` on the kept datasets themselves (no Gaussian shape:
  DP-Sniper sets evaluated on fresh releases of real subsets), which can refute a claim.
"""

from __future__ import annotations

import numpy as np

from distpriv.accounting import gaussian_pair_delta

__all__ = ["conditioned_subsets", "reference_delta"]


def conditioned_subsets(
    x: np.ndarray,
    s: np.ndarray,
    *,
    n: int,
    values: tuple[float, ...],
    half_width: float,
    per_value: int,
    rng: np.random.Generator,
    chunk: int = 20_000,
    max_datasets: int = 5_000_000,
) -> list[np.ndarray]:
    """Statistics (sums of the rows' features; shape (per_value, m) per value) of n-row
    datasets drawn i.i.d. from the rows, kept when their mean of ``s`` is within
    ``half_width`` of the value."""
    big_n = s.shape[0]
    kept: list[list[np.ndarray]] = [[] for _ in values]
    have = np.zeros(len(values), dtype=int)
    drawn = 0
    while np.any(have < per_value):
        if drawn >= max_datasets:
            raise RuntimeError(f"only {have} datasets kept after {drawn} draws")
        idx = rng.integers(0, big_n, size=(chunk, n))
        means = s[idx].mean(axis=1)
        drawn += chunk
        for t, v in enumerate(values):
            if have[t] >= per_value:
                continue
            hit = np.flatnonzero(np.abs(means - v) <= half_width)[: per_value - have[t]]
            if hit.size:
                kept[t].append(x[idx[hit]].sum(axis=1))
                have[t] += hit.size
    return [np.concatenate(k) for k in kept]


def _delta(
    means: list[np.ndarray],
    covs: list[np.ndarray],
    pairs: list[tuple[int, int]],
    noise: np.ndarray,
    epsilon: float,
) -> float:
    out = 0.0
    for i, j in pairs:
        for a, b in ((i, j), (j, i)):
            out = max(
                out,
                gaussian_pair_delta(
                    means[a], covs[a] + noise, means[b], covs[b] + noise, epsilon=epsilon
                ),
            )
    return out


def reference_delta(
    samples: list[np.ndarray],
    pairs: list[tuple[int, int]],
    noise: np.ndarray,
    *,
    epsilon: float,
    rng: np.random.Generator,
    n_boot: int = 200,
) -> tuple[float, np.ndarray]:
    """δ(ε) of N(mean, cov + noise) of the kept datasets (largest over pairs and
    directions), and its bootstrap replicates (datasets resampled per value)."""
    point = _delta(
        [x.mean(axis=0) for x in samples],
        [np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1]) for x in samples],
        pairs,
        noise,
        epsilon,
    )
    boot = np.empty(n_boot)
    for r in range(n_boot):
        res = [x[rng.integers(0, x.shape[0], x.shape[0])] for x in samples]
        boot[r] = _delta(
            [x.mean(axis=0) for x in res],
            [np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1]) for x in res],
            pairs,
            noise,
            epsilon,
        )
    return point, boot
