"""Diagnosis of ``auto``'s excess over the oracle (issue 25, the price).

For seeded modelling tables (the same tables as ``benchmarks/bench_price.py``: table t of a
size is the t-th draw of ``default_rng([2025, size])``), the *oracle's* noise shape (the
fitted daum-floor noise, calibrated on the fitted moments with no population layer) is
scaled by the least factor c that meets δ = 1e-3 at ε = 1 on:

* ``c_true``: the population's own model (what the oracle takes the 95 % quantile of);
* ``c_joint``: the worst member of the joint set (width (a) of the decomposition);
* ``c_gap_only``: the joint set with every variance exact (kurtosis 1): the gap's share;
* ``c_own_kurt``: the joint set with each stratum's own kurtosis instead of the largest;
* ``c_fit``: the fitted model itself (1 by construction: a check);
* ``c_tight`` / ``c_tight_gap_only``: the same for the tight set (population/_tight.py);
* ``c_z_strata`` / ``c_z_indep``: the joint set at the z that its linearised sum of sds
  would have if the sds were combined in quadrature across strata (valid: strata are
  independent) or across every part (valid only if the parts were uncorrelated) — the
  level's and the "sum of sds"' share (c).

and the linearisation of the pair's δ at the joint set's noise: the gap's part of the sum of
sds (with the widest sd ‖B‖₂ and with the sd along the gap ‖Bᵀû‖) and each variance's.

Run: ``python -m benchmarks.diag.diag_price POPULATION TABLES [SIZE]`` (one JSON line per
table; about 10 s per table on an idle core).
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from distpriv import calibrate
from distpriv.accounting.pair_profile import pair_profiles_unchecked
from distpriv.modeling import model_query
from distpriv.population import sets as rj
from distpriv.population.confidence import confidence_set, population_set

from .. import bench_price as bp

EPS, DELTA, BETA = 1.0, 1e-3, 0.05


def set_delta(
    model: Any, kurt: np.ndarray, noise: np.ndarray, z: float | None = None, kind: str = "joint"
) -> float:
    """δ of the set's worst member for ``noise`` (``z``: the joint set at that level)."""
    with population_set(kind):
        old = rj.joint_z
        if z is not None:
            rj.joint_z = lambda beta, pairs: z
        try:
            mem = rj.joint_members(model, kurt, beta=BETA, noise_cov=noise, epsilon=EPS)
        finally:
            rj.joint_z = old
    return bp.true_delta(mem, noise)


def least(fn: Callable[[np.ndarray], float], noise: np.ndarray) -> float:
    """The least factor c (relative accuracy 2e-3) with fn(c · noise) ≤ δ."""
    lo, hi = 0.0, 1.0
    while fn(noise * hi) > DELTA:
        lo, hi = hi, hi * 2
        if hi > 1e4:
            return np.inf
    if lo == 0.0:
        lo = hi / 2
        while fn(noise * lo) <= DELTA and lo > 1e-4:
            hi, lo = lo, lo / 2
    while hi - lo > 2e-3 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fn(noise * mid) > DELTA else (lo, mid)
    return hi


def h_pair(model: Any, noise: np.ndarray, t: float, eta: np.ndarray) -> float:
    """δ of the first pair with the gap's output distance moved by t along its direction
    and each stratum's variances multiplied by exp(η) (shape (S, m))."""
    unc = model.uncertainty
    i, j = model.pairs[0]
    ci, cj = model.covariances[i].copy(), model.covariances[j].copy()
    for s in range(len(unc.stratum_sizes)):
        lam = np.exp(eta[s] / 2)
        moved = lam[:, None] * unc.row_covariances[s] * lam[None] - unc.row_covariances[s]
        ci += unc.weights[i, s] * moved
        cj += unc.weights[j, s] * moved
    gap = model.means[i] - model.means[j]
    metric = rj._inv_sqrt_stack(((ci + cj) / 2 + noise)[None])[0]
    gap2 = gap * (1 + t / np.linalg.norm(metric @ gap))
    f, b = pair_profiles_unchecked(
        model.means[j] + gap2, ci + noise, model.means[j], cj + noise, EPS, 1e-10
    )
    return max(f.delta, b.delta)


def linearise(model: Any, kurt: np.ndarray, noise: np.ndarray) -> dict[str, Any]:
    """Gradient of the pair's δ in the gap's distance and the log-variances, and the sds."""
    unc = model.uncertainty
    i, j = model.pairs[0]
    n_strata, m = unc.row_covariances.shape[:2]
    sizes = np.asarray(unc.stratum_sizes, float)[:, None]
    tau = np.sqrt(np.clip(kurt - 1, 0, None) / sizes)
    zero = np.zeros((n_strata, m))
    gap = model.means[i] - model.means[j]
    metric = rj._inv_sqrt_stack(((model.covariances[i] + model.covariances[j]) / 2 + noise)[None])[
        0
    ]
    u = metric @ gap / np.linalg.norm(metric @ gap)
    dw2 = (unc.weights[i] - unc.weights[j]) ** 2 / sizes[:, 0]
    parts = [
        metric @ rj._sqrt_psd_stack((dw2[s] * unc.row_covariances[s])[None])[0]
        for s in range(n_strata)
    ]
    total = metric @ rj._sqrt_psd_stack(np.einsum("s,sab->ab", dw2, unc.row_covariances)[None])[0]
    step = 1e-3 * np.linalg.norm(metric @ gap)
    a = (h_pair(model, noise, step, zero) - h_pair(model, noise, -step, zero)) / (2 * step)
    b = np.zeros((n_strata, m))
    for s in range(n_strata):
        for c in range(m):
            if tau[s, c] == 0:
                continue
            e = zero.copy()
            e[s, c] = 1e-3
            up = h_pair(model, noise, 0.0, e)
            e[s, c] = -1e-3
            b[s, c] = (up - h_pair(model, noise, 0.0, e)) / 2e-3
    var = np.abs(b) * tau
    gap_own = [abs(a) * float(np.linalg.norm(p.T @ u)) for p in parts]
    sum_sds = abs(a) * float(np.linalg.norm(total, 2)) + float(var.sum())
    return {
        "h0": h_pair(model, noise, 0.0, zero),
        "gap_part_widest": abs(a) * float(np.linalg.norm(total, 2)),
        "gap_part_along": abs(a) * float(np.linalg.norm(total.T @ u)),
        "var_parts": var.tolist(),
        "sum_sds": sum_sds,
        "strata_rss": float(
            np.sqrt(sum((gap_own[s] + var[s].sum()) ** 2 for s in range(n_strata)))
        ),
        "full_rss": float(np.sqrt((abs(a) * np.linalg.norm(total.T @ u)) ** 2 + np.sum(var**2))),
        "b_signs": np.sign(b).astype(int).tolist(),
    }


def one_table(model: Any, pop: Any) -> dict[str, Any]:
    """The factors and the linearisation of one table (module docstring)."""
    n0 = bp.quiet(calibrate, "daum-floor", model, epsilon=EPS, delta=DELTA, beta=None)
    shape = n0.noise_covariance
    with population_set("joint"):
        cs = confidence_set(model, beta=BETA)
    kurt, unc = cs.kurtosis, model.uncertainty
    ones = np.ones_like(kurt)
    r: dict[str, Any] = {"mse_fit": n0.mse(), "z": cs.z, "sizes": list(unc.stratum_sizes)}
    r["c_true"] = least(lambda n: bp.true_delta(pop, n), shape)
    r["c_joint"] = least(lambda n: set_delta(model, kurt, n), shape)
    r["c_gap_only"] = least(lambda n: set_delta(model, ones, n), shape)
    r["c_fit"] = least(lambda n: set_delta(model, ones, n, z=0.0), shape)
    r["c_own_kurt"] = least(lambda n: set_delta(model, unc.kurtosis, n), shape)
    r["c_tight"] = least(lambda n: set_delta(model, kurt, n, kind="tight"), shape)
    r["c_tight_gap_only"] = least(lambda n: set_delta(model, ones, n, kind="tight"), shape)
    lin = linearise(model, kurt, shape * r["c_joint"])
    r.update(lin)
    for name in ("strata", "indep"):
        zeff = cs.z * lin[f"{name}_rss" if name == "strata" else "full_rss"] / lin["sum_sds"]
        r["c_z_" + name] = least(lambda n, zz=zeff: set_delta(model, kurt, n, z=zz), shape)
    return r


def main(pname: str, tables: int, size: int = 1000) -> None:
    stats, secret = bp.POPULATIONS[pname]
    frame = bp.load(pname)
    pop = bp.quiet(
        model_query, frame, stats, secret, subset_size=100, method="analytic", population=True
    )
    rng = np.random.default_rng([2025, size])
    for t in range(tables):
        sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
        model = bp.quiet(model_query, sample, stats, secret, subset_size=100, method="analytic")
        rec = {"pop": pname, "size": size, "table": t, **one_table(model, pop)}
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1000)
