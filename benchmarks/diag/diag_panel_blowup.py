"""Diagnosis of the default (box) set's blow-up on the panel: which member, which direction.

For seeded modelling tables of ``benchmarks/bench_price_panel.py`` (same populations,
seeds and draws: table t of a size is the t-th draw of ``default_rng([2025, size])``), with
``auto``'s noise N on the default set (β = 0.05, ε = 1, δ = 1e-3), one JSON line per table:

* ``auto``: the chosen mechanism, E‖Z‖² and its ratio to the population-known price;
  per statistic, the noise sd over the statistic's own sampling sd (the fitted model's,
  averaged over θ);
* ``binding``: the box member (pair × stratum-variance corner, gap at its bound) with the
  largest δ(1) at N, its label, δ, and δ of the same member with the *fitted* gap (its
  covariances alone) and of the fitted covariances with the member's gap (its gap alone);
* ``direction``: the generalised eigenvector of the binding member's two output
  covariances (Σᵢ + N, Σⱼ + N) with the most extreme eigenvalue ratio, written per
  statistic in units of its sampling sd, and that ratio (1 = no covariance gap); and each
  statistic's ratio of the member's two variances;
* ``variance``: per statistic the kurtosis the box uses (largest over the strata, from the
  modelling table), the population's own largest stratum kurtosis, and the box's factor
  range exp(±z√((κ−1)/N_s)) in the smallest stratum;
* ``factor``: the least factor c on N's shape meeting δ on: the box (``box``, ≈ 1); the box
  with only the corners whose strata are all at the same end (``same_end``: no member
  whose two hypotheses' covariances are pulled apart); the box with every kurtosis 3
  (``kurt3``: normal-theory variance uncertainty); the box with the population's own
  stratum kurtosis (``kurt_pop``); the box with the fitted gap (``no_gap``: variances
  only); the population itself (``pop``). These are measurements of where the price
  comes from on a fixed noise shape, not mechanisms;
* ``unit_free``: the least factor c on the shape diag(sampling variances) (each statistic's
  noise its own sampling spread) on the box, the population and the box with the fitted
  gap, and that noise's E‖Z‖² over the population-known price.

Run: ``python -m benchmarks.diag.diag_panel_blowup POPULATION SIZE TABLES [FIRST]``.
"""

from __future__ import annotations

import copy
import itertools
import json
import sys
import warnings
from typing import Any

import numpy as np
from scipy.linalg import eigh

import distpriv.population.confidence as robust
from distpriv.accounting import gaussian_pair_delta
from distpriv.modeling import model_query
from distpriv.moment_uncertainty import MomentUncertainty

from .. import bench_price as bp
from .._panel_populations import PANEL

confidence_set, population_model = robust.confidence_set, robust.population_model

EPS, DELTA, BETA = 1.0, 1e-3, 0.05


def pair_delta(mi: Any, ci: Any, mj: Any, cj: Any, noise: np.ndarray) -> float:
    """δ(ε) of a pair both ways with ``noise`` added."""
    a = gaussian_pair_delta(mi, ci + noise, mj, cj + noise, epsilon=EPS)
    b = gaussian_pair_delta(mj, cj + noise, mi, ci + noise, epsilon=EPS)
    return max(a, b)


def member_deltas(mem: Any, noise: np.ndarray) -> list[float]:
    return [
        pair_delta(mem.means[i], mem.covariances[i], mem.means[j], mem.covariances[j], noise)
        for i, j in mem.pairs
    ]


def with_kurtosis(model: Any, kurt: np.ndarray) -> Any:
    """``model`` with its uncertainty's kurtosis replaced (the rest unchanged)."""
    unc = model.uncertainty
    new = MomentUncertainty(
        unc.stratum_sizes, unc.weights, unc.row_covariances, kurt, method=unc.method
    )
    out = copy.copy(model)
    object.__setattr__(out, "uncertainty", new)
    return out


def set_max_delta(model: Any, noise: np.ndarray, variant: str) -> float:
    """The largest member δ of a variant of the box set for ``noise``."""
    old_sc, old_ws = robust._support_corners, robust._worst_shift_stack
    if variant == "same_end":

        def same_end(n_strata: int, support: tuple[int, ...]) -> list[tuple[int, ...]]:
            return [c for c in old_sc(n_strata, support) if len({c[s] for s in support}) == 1]

        robust._support_corners = same_end
    if variant == "no_gap":
        robust._worst_shift_stack = lambda gap, metric, spread, z: np.zeros_like(gap)
    try:
        mem = population_model(model, beta=BETA, noise_cov=noise, epsilon=EPS)
    finally:
        robust._support_corners, robust._worst_shift_stack = old_sc, old_ws
    return max(member_deltas(mem, noise))


def least_factor(check: Any, noise: np.ndarray) -> float:
    """The least c with check(c·noise) ≤ δ (bisection to 1e-3 relative; inf above 1e7;
    0 below 1e-7)."""
    if check(noise * 1e-7) <= DELTA:
        return 0.0
    lo, hi = 1e-7, 1.0
    if check(noise) > DELTA:
        lo, hi = 1.0, 2.0
        while check(noise * hi) > DELTA:
            lo, hi = hi, 4 * hi
            if hi > 1e7:
                return float("inf")
    while hi - lo > 1e-3 * hi:
        mid = np.sqrt(lo * hi) if hi / lo > 4 else 0.5 * (lo + hi)
        lo, hi = (mid, hi) if check(noise * mid) > DELTA else (lo, mid)
    return float(hi)


def one(pname: str, frame: Any, pop: Any, pop_unc: Any, own: float, size: int, rng: Any) -> dict:
    p = PANEL[pname]
    sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
    model = bp.quiet(model_query, sample, p.stats, p.secret, subset_size=100, method="analytic")
    choice = bp.auto_choice(model)
    if choice is None:
        return {"size": size, "auto": None}
    noise = np.asarray(choice.mechanism.noise_covariance)
    sd_stat = np.sqrt(np.mean([np.diag(c) for c in model.covariances], axis=0))
    rec: dict[str, Any] = {
        "size": size,
        "auto": choice.name,
        "mse": choice.mechanism.mse(),
        "mse_over_known": choice.mechanism.mse() / own,
        "noise_over_sampling_sd": (np.sqrt(np.diag(noise)) / sd_stat).round(3).tolist(),
        "noise_eigenvalue_ratio": float(np.min(np.linalg.eigvalsh(noise)))
        / float(np.max(np.linalg.eigvalsh(noise))),
    }
    mem = bp.quiet(population_model, model, beta=BETA, noise_cov=noise, epsilon=EPS)
    ds = member_deltas(mem, noise)
    k = int(np.argmax(ds))
    i, j = mem.pairs[k]
    # The member's parts: pair (i, j) of the augmented model is (pair of Ψ, corner).
    pi, pj = model.pairs[k // (len(mem.pairs) // len(model.pairs))]
    fit_i, fit_j = model.covariances[pi], model.covariances[pj]
    ci, cj = mem.covariances[i], mem.covariances[j]
    rec["binding"] = {
        "label": f"{mem.labels[i]} vs {mem.labels[j]}",
        "delta": ds[k],
        "covariances_only": pair_delta(model.means[pi], ci, model.means[pj], cj, noise),
        "gap_only": pair_delta(mem.means[i], fit_i, mem.means[j], fit_j, noise),
        "fitted": pair_delta(model.means[pi], fit_i, model.means[pj], fit_j, noise),
    }
    vals, vecs = eigh(ci + noise, cj + noise)
    t = int(np.argmax(np.abs(np.log(vals))))
    v = vecs[:, t] * sd_stat
    rec["direction"] = {
        "ratio": float(vals[t]),
        "loading_per_sd": (v / np.max(np.abs(v))).round(3).tolist(),
        "variance_ratio_per_stat": (np.diag(ci) / np.diag(cj)).round(3).tolist(),
        "no_noise_ratio": float(
            max(abs(np.log(eigh(ci + 1e-12 * np.eye(len(ci)), cj + 1e-12 * np.eye(len(cj)))[0])))
        ),
    }
    cs = confidence_set(model, beta=BETA)
    smallest = int(np.argmin(model.uncertainty.stratum_sizes))
    rec["variance"] = {
        "strata_rows": list(model.uncertainty.stratum_sizes),
        "kurtosis_box": cs.kurtosis.max(axis=0).round(2).tolist(),
        "kurtosis_table_by_stratum": model.uncertainty.kurtosis.round(2).tolist(),
        "kurtosis_population": pop_unc.kurtosis.max(axis=0).round(2).tolist(),
        "factor_hi_smallest_stratum": cs.variance_factors[smallest, :, 1].round(2).tolist(),
        "z": cs.z,
    }
    kurt3 = np.where(model.uncertainty.kurtosis > 0, 3.0, 0.0)
    kpop = np.broadcast_to(pop_unc.kurtosis.max(axis=0), model.uncertainty.kurtosis.shape)
    checks = {
        "box": lambda n: set_max_delta(model, n, "box"),
        "same_end": lambda n: set_max_delta(model, n, "same_end"),
        "kurt3": lambda n: set_max_delta(with_kurtosis(model, kurt3), n, "box"),
        "kurt_pop": lambda n: set_max_delta(with_kurtosis(model, np.array(kpop)), n, "box"),
        "no_gap": lambda n: set_max_delta(model, n, "no_gap"),
        "pop": lambda n: bp.true_delta(pop, n),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec["factor"] = {name: least_factor(fn, noise) for name, fn in checks.items()}
        # A unit-free shape: each statistic's noise variance its own sampling variance.
        unit_free = np.diag(sd_stat**2)
        rec["unit_free"] = {
            name: least_factor(checks[name], unit_free) for name in ("box", "pop", "no_gap")
        }
        rec["unit_free"]["mse_box_over_known"] = (
            rec["unit_free"]["box"] * float(np.sum(sd_stat**2)) / own
        )
    return rec


def main() -> None:
    pname, size, tables = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    p = PANEL[pname]
    frame = p.load()
    kw = {"subset_size": 100, "method": "analytic"}
    pop = bp.quiet(model_query, frame, p.stats, p.secret, population=True, **kw)
    # The population's own stratum kurtosis: the whole frame as a (huge) modelling sample.
    pop_unc = bp.quiet(model_query, frame, p.stats, p.secret, **kw).uncertainty
    own = bp.auto_choice(pop).mechanism.mse()
    rng = np.random.default_rng([2025, size])
    for t in itertools.count():
        if t >= first + tables:
            break
        if t < first:
            rng.choice(len(frame), size, replace=False)
            continue
        rec = one(pname, frame, pop, pop_unc, own, size, rng)
        rec.update(population=pname, table=t, statistics=list(p.stats))
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
