"""Diagnosis: the box set's δ plateau along isotropic noise, and members built for another noise.

For one modelling table of ``benchmarks/bench_price_panel.py`` (same seeds and draws), with
isotropic noise v·I (expm-g's shape, which ``auto``'s noise has on the blown-up tables):

* the worst δ(1) over the box members built *for that noise* (the set's own statement at
  v), and over the box members with the variance corners restricted to the same end, and
  the population's own δ, on a grid of v;
* a matrix: rows v (the noise released), columns v₂ (the noise the members were built
  for: each member's gap sits at its bound in the metric of v₂), entry the worst δ over
  those members at v, over the claim. The calibration's active set keeps members built for
  earlier rounds' noises (``central/exact_calibration._calibrate_robust``: "keeping the
  earlier ones (conservative)"), so a column other than the diagonal is what a stale
  member costs;
* the trace of expm-g's default calibration on the box set (``calibrate("expm-g", model)``):
  each noise the calibration builds members for, each scale search on its active set and
  where it lands, and the final noise, beside the least isotropic noise that the members
  built for that very noise accept.

Run: ``python -m benchmarks.diag.diag_panel_plateau POPULATION SIZE TABLE`` (one table;
about a minute of CPU for five statistics).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from distpriv import calibrate
from distpriv.central import exact_calibration as ec
from distpriv.modeling import model_query

from .. import bench_price as bp
from .._panel_populations import PANEL
from . import diag_panel_blowup as dpb

population_model = dpb.population_model
BETA, EPS, DELTA = 0.05, 1.0, 1e-3


def main() -> None:
    pname, size, table = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    warnings.simplefilter("ignore")
    p = PANEL[pname]
    frame = p.load()
    kw = {"subset_size": 100, "method": "analytic"}
    pop = bp.quiet(model_query, frame, p.stats, p.secret, population=True, **kw)
    rng = np.random.default_rng([2025, size])
    for _ in range(table):
        rng.choice(len(frame), size, replace=False)
    sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
    model = bp.quiet(model_query, sample, p.stats, p.secret, **kw)
    sd = np.sqrt(np.mean([np.diag(c) for c in model.covariances], axis=0))
    print(f"{pname} {size} rows, table {table}; sampling sd per statistic {sd.round(4).tolist()}")
    eye = np.eye(model.dim)
    print("variance v  | box (own members) | same-end corners | population   (worst δ / claim)")
    for v in np.logspace(-2, 9, 23):
        box = dpb.set_max_delta(model, v * eye, "box") / DELTA
        same = dpb.set_max_delta(model, v * eye, "same_end") / DELTA
        own = bp.true_delta(pop, v * eye) / DELTA
        print(f"{v:10.1e}  | {box:17.3g} | {same:16.3g} | {own:10.3g}")
    grid = np.logspace(-2, 8, 11)
    members = {
        v2: population_model(model, beta=BETA, noise_cov=v2 * eye, epsilon=EPS) for v2 in grid
    }
    print("\nrows: noise variance v released; columns: members built for variance v2")
    print("v \\ v2   " + " ".join(f"{v2:7.0e}" for v2 in grid))
    for v in grid:
        row = [max(dpb.member_deltas(members[v2], v * eye)) / DELTA for v2 in grid]
        print(f"{v:8.0e} " + " ".join(f"{x:7.3g}" for x in row))
    print("\nexpm-g's default calibration on the box set, traced:")
    trace_expm_g(model)


def trace_expm_g(model: object) -> None:
    """Print the noises expm-g's robust calibration builds members for and its searches."""
    orig_pm, orig_cal = ec.population_model, ec._calibrate_on

    def members_for(gm: object, **kw: object) -> object:
        print(f"  members built for noise variance {np.asarray(kw['noise_cov'])[0, 0]:.4g}")
        return orig_pm(gm, **kw)

    def search(name: str, target: object, *a: object, **kw: object) -> object:
        out = orig_cal(name, target, *a, **kw)
        n = len(target.pairs)  # type: ignore[attr-defined]
        print(f"  scale search on {n} active member pair(s) -> variance {out[0][0, 0]:.4g}")
        return out

    ec.population_model, ec._calibrate_on = members_for, search
    try:
        mech = bp.quiet(calibrate, "expm-g", model, epsilon=EPS, delta=DELTA)
    finally:
        ec.population_model, ec._calibrate_on = orig_pm, orig_cal
    noise = np.asarray(mech.noise_covariance)
    least = dpb.least_factor(lambda n: dpb.set_max_delta(model, n, "box"), noise)
    print(
        f"  final variance {noise[0, 0]:.4g}; least isotropic variance the members for their "
        f"own noise accept {least * noise[0, 0]:.4g} ({1 / least:.3g}x less)"
    )


if __name__ == "__main__":
    main()
