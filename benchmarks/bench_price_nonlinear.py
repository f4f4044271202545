"""Benchmark: the population layer's price and coverage on non-linear statistics.

The non-linear cells of the price panel (``bench_price_panel.py``'s definitions, reused
as they are): Monte Carlo models (``model_query(..., method="montecarlo")``, the library's
defaults: 1,000 datasets per value, ``--n-samples``, and the bootstrap layer with B = 50)
of

* ``quantiles``: a median, a 0.75-quantile and a variance (``var_samp``) — Adult:
  median(age), quantile_cont(hours_per_week, 0.75), var_samp(age); RAND HIE: median(lpi),
  quantile_cont(disea, 0.75), var_samp(lpi);
* ``logistic``: the four coefficients of a released logistic regression — Adult:
  sex = 'Female' ~ age + education_num + hours_per_week; RAND HIE: mdvis > 0 ~ disea +
  physlm + hlthg;

on the panel's Adult (income share 0.45 vs 0.55) and RAND HIE (individual deductible 0.2
vs 0.3) with 100-row releases, ε = 1, δ = 1e-3, β = 0.05, modelling tables of ``--sizes``
rows (default 1,000) drawn without replacement (table t of a size is the t-th draw of
``default_rng([seed, size])``, as in the panel). Per table:

* ``auto`` as a release runs it (``bench_price.auto_choice``), its E‖Z‖² and its
  *relative* error Σ_k Var(Z_k)/v_k (v_k statistic k's sampling variance on the
  population's model: one yardstick for every noise), the true δ(1) of its noise on the
  population's own model and whether it exceeds the claim (a violation), its CPU;
* the oracle's parts (``bench_price.oracle_factor``): per Gaussian mechanism, the fitted
  calibration without the layer and the least factor on it that meets the claim on the
  population.

The population's own model ("population-known") is a Monte Carlo model of the whole
population (``population=True``, ``--pop-draws`` datasets per value, default 10,000), on
which ``auto`` is run once; the true δ of every noise is the exact accountant on its
moments (its own Monte Carlo error is that of 10,000 draws).

The report gives, per cell, violations with a 95 % Clopper-Pearson interval, the median,
95th percentile (``method="higher"``: the 29th of 30) and worst over tables of ``auto`` /
population-known (E‖Z‖² and relative) and of ``auto`` / the oracle (median fitted E‖Z‖²
times the 95 % quantile of the covering factor, least over mechanisms), and the CPU per
table (model with its bootstrap, and ``auto``).

Run: ``python -m benchmarks.bench_price_nonlinear [--tables 30] [--cells
adult:quantiles,...] --out FILE.jsonl``, then ``python -m benchmarks.bench_price_nonlinear
--report --out FILE.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np
from scipy.stats import norm

from distpriv import GaussianQueryModel, calibrate
from distpriv.errors import DistPrivError
from distpriv.modeling import model_query
from distpriv.modeling.regression import logistic_regression_query

from . import bench_price as bp
from ._panel_populations import PANEL
from .bench_price_panel import BETA, _fmt, _q, clopper_pearson

QUERIES: dict[str, dict[str, Any]] = {
    "adult": {
        "quantiles": {
            "median_age": "median(age)",
            "q75_hours_per_week": "quantile_cont(hours_per_week, 0.75)",
            "var_age": "var_samp(age)",
        },
        "logistic": ("sex = 'Female'", ["age", "education_num", "hours_per_week"]),
    },
    "randhie": {
        "quantiles": {
            "median_lpi": "median(lpi)",
            "q75_disease": "quantile_cont(disea, 0.75)",
            "var_lpi": "var_samp(lpi)",
        },
        "logistic": ("mdvis > 0", ["disea", "physlm", "hlthg"]),
    },
}
CELLS = ("adult:quantiles", "adult:logistic", "randhie:quantiles", "randhie:logistic")
# The bound on the 95th percentile of auto / population-known at 1,000 rows.
P95_BOUND = 3.0


def query_of(pname: str, kind: str) -> Any:
    q = QUERIES[pname][kind]
    return logistic_regression_query(*q) if kind == "logistic" else q


def relative(noise: np.ndarray, pop: Any) -> float:
    """Σ_k Var(Z_k)/v_k, v_k the population model's sampling variance (mean over θ)."""
    v = np.mean(np.diagonal(pop.covariances, axis1=1, axis2=2), axis=0)
    return float(np.sum(np.diag(noise) / v))


def one_table(
    frame: Any, query: Any, secret: Any, pop: Any, size: int, rng: Any, draws: int
) -> dict:
    sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
    c0 = time.process_time()
    model = bp.quiet(
        model_query,
        sample,
        query,
        secret,
        subset_size=100,
        method="montecarlo",
        n_samples=draws,
        rng=rng,
    )
    cpu_model = time.process_time() - c0
    c0 = time.process_time()
    choice = bp.auto_choice(model)
    unc = model.uncertainty
    rec: dict[str, Any] = {
        "size": size,
        "cpu_model": cpu_model,
        "cpu_auto": time.process_time() - c0,
        # The estimator's standard errors (the bootstrap's), for the two-point bound.
        "gap_sd": np.sqrt(np.diag(unc.gap_covariances[0])).tolist(),
        "level_sd": unc.log_variance_sd[0, 0].tolist(),
        "ratio_sd": unc.log_variance_sd[0, 1].tolist(),
    }
    if choice is None:
        rec.update(chosen=None, mse=None, rel=None, delta=None, viol=None)
    else:
        noise = choice.mechanism.noise_covariance
        d = bp.true_delta(pop, noise)
        rec.update(
            chosen=choice.name,
            method=choice.mechanism.diagnostics.get("calibration_method"),
            mse=choice.mechanism.mse(),
            rel=relative(noise, pop),
            delta=d,
            viol=bool(d > bp.DELTA * 1.000001),
            noise_sd=np.sqrt(np.clip(np.diag(noise), 0, None)).tolist(),
        )
    c0 = time.process_time()
    for name in bp.GAUSSIAN:
        fit, f = bp.oracle_factor(model, pop, name)
        rec[name] = {"fit": fit if np.isfinite(fit) else None, "f": f if np.isfinite(f) else None}
    rec["cpu_oracle"] = time.process_time() - c0
    return rec


def run(args: Any) -> None:
    sizes = [int(x) for x in args.sizes.split(",")]
    for cell in args.cells.split(","):
        pname, kind = cell.split(":")
        p = PANEL[pname]
        frame = p.load()
        query = query_of(pname, kind)
        pop = _population(p, query, args)
        own_choice = bp.auto_choice(pop)
        own = None if own_choice is None else own_choice.mechanism
        own_mse = None if own is None else own.mse()
        own_rel = None if own is None else relative(own.noise_covariance, pop)
        sd = np.sqrt(np.mean(np.diagonal(pop.covariances, axis1=1, axis2=2), axis=0))
        print(f"{cell}: own {own_mse} (relative {own_rel}), sampling sd {sd}", flush=True)
        rngs = {size: np.random.default_rng([args.seed, size]) for size in sizes}
        t0 = time.perf_counter()
        for t in range(args.tables):
            for size in sizes:
                rec = one_table(frame, query, p.secret, pop, size, rngs[size], args.n_samples)
                rec.update(
                    cell=cell,
                    n_samples=args.n_samples,
                    table=t,
                    own=own_mse,
                    own_rel=own_rel,
                    own_chosen=None if own_choice is None else own_choice.name,
                    sampling_sd=sd.tolist(),
                )
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
            print(f"  {cell} table {t + 1}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)


# Mahalanobis distance at which two laws of the table have total variation 0.90: below
# it, a method whose 95th percentile at P is K x known(P) and that covers every population
# with 1 - beta = 0.95 cannot exist if some P' that close needs more than K x known(P).
TWO_POINT_DISTANCE = 2 * float(norm.ppf(0.95))


def _known(gm: Any, w: np.ndarray) -> float:
    """Least relative cost (weights ``w``) of optimal-g, expm-g and eigm calibrated
    exactly on the Gaussian model ``gm`` (no population layer)."""
    best = np.inf
    for name in ("optimal-g", "expm-g", "eigm"):
        opts = {"weights": w} if name == "optimal-g" else {}
        try:
            mech = bp.quiet(calibrate, name, gm, epsilon=bp.EPS, delta=bp.DELTA, **opts)
        except DistPrivError:
            continue
        best = min(best, float(np.sum(np.diag(mech.noise_covariance) * w)))
    return best


def _moved(pop: Any, kind: str, c: int, x: float) -> Any:
    """The population's Gaussian model with one functional of statistic ``c`` moved by
    ``x``: the gap (θ₀'s mean), the log ratio of the two variances, or their level."""
    means = np.array(pop.means, dtype=float)
    covs = np.array(pop.covariances, dtype=float)
    if kind == "gap":
        means[0, c] += x
    else:
        logs = (x / 2, -x / 2) if kind == "ratio" else (x, x)
        for t, lg in enumerate(logs):
            f = np.ones(covs.shape[1])
            f[c] = np.exp(lg / 2)
            covs[t] = f[:, None] * covs[t] * f[None, :]
    return GaussianQueryModel(means, covs, pop.pairs, labels=pop.labels)


def two_point(args: Any) -> None:
    """The two-point (Le Cam) bound of each cell: known(P') / known(P) for the populations
    P' whose one functional (a statistic's gap, log variance ratio or log variance level)
    is moved by TWO_POINT_DISTANCE of the estimator's standard errors (the median over the
    cell's tables of the bootstrap's), the worst direction; relative cost with the
    population's sampling variances as weights."""
    with open(args.out) as fh:
        recs = list(map(json.loads, fh))
    print(f"two-point distance {TWO_POINT_DISTANCE:.3f} standard errors (TV 0.90)\n")
    print("| cell | rows | known(P) relative | worst P' | known(P')/known(P) |")
    print("|---|---|---|---|---|")
    for cell in dict.fromkeys(r["cell"] for r in recs):
        pname, kind = cell.split(":")
        p = PANEL[pname]
        pop = _population(p, query_of(pname, kind), args)
        plain = GaussianQueryModel(pop.means, pop.covariances, pop.pairs, labels=pop.labels)
        w = 1.0 / np.mean(np.diagonal(pop.covariances, axis1=1, axis2=2), axis=0)
        base = _known(plain, np.diag(w))
        for size in sorted({r["size"] for r in recs if r["cell"] == cell}):
            rows = [r for r in recs if r["cell"] == cell and r["size"] == size]
            worst, where = 0.0, ""
            gap = np.asarray(pop.mean_differences[0])
            for fn in ("gap", "ratio", "level"):
                sd = np.median([r[f"{fn}_sd"] for r in rows], axis=0)
                for c in range(len(sd)):
                    signs = (np.sign(gap[c]) or 1.0,) if fn == "gap" else (1.0, -1.0)
                    if fn == "level":
                        signs = (-1.0,)  # smaller variances hide less
                    for sg in signs:
                        x = sg * TWO_POINT_DISTANCE * sd[c]
                        # No noise needed at P: the worst P' in absolute terms (relative
                        # cost), any ratio to known(P) = 0 being unbounded.
                        k = _known(_moved(pop, fn, c, x), np.diag(w)) / (base or 1.0)
                        if k > worst:
                            worst, where = k, f"{fn} of statistic {c} by {x:+.3g}"
            ratio = f"{worst:.3g}" if base > 0 else f"inf (known(P') = {worst:.3g})"
            print(f"| {cell} | {size} | {base:.3g} | {where} | {ratio} |", flush=True)


def _population(p: Any, query: Any, args: Any) -> Any:
    """The population's own Monte Carlo model (seeded: the run's and the bound's)."""
    return bp.quiet(
        model_query,
        p.load(),
        query,
        p.secret,
        subset_size=100,
        method="montecarlo",
        n_samples=args.pop_draws,
        rng=np.random.default_rng([args.seed, 7]),
        population=True,
    )


def report(args: Any) -> None:
    with open(args.out) as fh:
        recs = list(map(json.loads, fh))
    head = (
        "| cell | rows | tables | violations (95 % CP) | auto/known E‖Z‖² median, p95, worst "
        "| auto/known relative median, p95, worst | auto/oracle median, p95, worst "
        "| oracle (mech) | known E‖Z‖² (relative) | auto chose | CPU s/table model, auto |"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    checks = []
    for cell in dict.fromkeys(r["cell"] for r in recs):
        for size in sorted({r["size"] for r in recs if r["cell"] == cell}):
            rows = [r for r in recs if r["cell"] == cell and r["size"] == size]
            n = len(rows)
            viol = [r["viol"] for r in rows if r["viol"] is not None]
            k = int(sum(viol))
            lo, hi = clopper_pearson(k, len(viol)) if viol else (np.nan, np.nan)
            mse = np.array([np.inf if r["mse"] is None else r["mse"] for r in rows])
            rel = np.array([np.inf if r["rel"] is None else r["rel"] for r in rows])
            own, own_rel = rows[0]["own"], rows[0]["own_rel"]
            r_mse = _q(mse / own) if own else (np.inf,) * 3
            r_rel = _q(rel / own_rel) if own_rel else (np.inf,) * 3
            orc = bp.oracles(rows)
            best = min(orc, key=lambda m: orc[m])
            known_oracle = np.isfinite(orc[best]) and orc[best] > 0
            r_orc = _q(mse / orc[best]) if known_oracle else (np.nan,) * 3
            chosen: dict[str, int] = {}
            for r in rows:
                chosen[str(r["chosen"])] = chosen.get(str(r["chosen"]), 0) + 1
            chose = ", ".join(f"{m} {c}" for m, c in sorted(chosen.items(), key=lambda x: -x[1]))
            cpu_m = float(np.median([r["cpu_model"] for r in rows]))
            cpu_a = float(np.median([r["cpu_auto"] for r in rows]))
            print(
                f"| {cell} | {size} | {n} | {k}/{len(viol)} ({lo:.1%}-{hi:.1%}) | "
                + ", ".join(map(_fmt, r_mse))
                + " | "
                + ", ".join(map(_fmt, r_rel))
                + " | "
                + ", ".join(map(_fmt, r_orc))
                + f" | {_fmt(orc[best])} ({best}) | {_fmt(own)} ({_fmt(own_rel)}) | {chose} | "
                f"{cpu_m:.1f}, {cpu_a:.1f} |"
            )
            cov_ok = "yes" if not viol or lo <= BETA else "no"
            checks.append(
                f"| {cell} | {size} | {_fmt(r_mse[1])} <= {P95_BOUND:g}: "
                f"{'yes' if r_mse[1] <= P95_BOUND else 'no'} | {_fmt(r_rel[1])} <= "
                f"{P95_BOUND:g}: {'yes' if r_rel[1] <= P95_BOUND else 'no'} | {cov_ok} |"
            )
    print(f"\nrecords: {len(recs)}\n")
    print(
        "| cell | rows | p95 auto/known E‖Z‖² within 3× | p95 auto/known relative within 3× "
        "| coverage (CP lower <= beta) |"
    )
    print("|---|---|---|---|---|")
    print("\n".join(checks))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--tables", type=int, default=30)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--sizes", default="1000")
    ap.add_argument("--pop-draws", type=int, default=10_000)
    ap.add_argument(
        "--n-samples", type=int, default=1000, help="datasets per value of each table's model"
    )
    ap.add_argument("--seed", type=int, default=2025)
    ap.add_argument("--out", required=True, help="JSONL records (appended; read by --report)")
    ap.add_argument("--report", action="store_true", help="summarise the records of --out")
    ap.add_argument("--bound", action="store_true", help="the two-point bound of --out's cells")
    args = ap.parse_args()
    if args.bound:
        two_point(args)
    elif args.report:
        report(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
