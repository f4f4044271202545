"""What is left to take out of the tight set (issue 25, round 8): five levers, one table.

Round 7 (``diag_tight_inflation.py``) showed that a uniform widening of the tight set
cannot meet both of #25's must-shows at once. Before calling the price target out of
reach, this script measures every lever left in the set's construction that is not a
change of premise, on the oracle's own shape (daum-floor's fitted calibration,
``beta=None``; ``auto`` publishes it or the same price at 1,000 and 4,000 rows). Per
modelling table of ``benchmarks/bench_price.py`` (same seeds and draws) and per variant,
``c_set`` is the least factor on that shape whose noise passes every member of the
table's tight set for that very noise (``diag_tight_split.set_factor``), ``c_pop`` the
least factor that meets the claim on the population (``bench_price.least_factor``):

* ``tight``: the library's set as it is;
* ``no margin``: the gap's quantile at Φ(z) itself, without the three binomial sds the
  fixed design of 8,192 points adds (what an exact quantile of the generalised
  non-central χ² law would give);
* ``kappa 1``: every stratum's variance known exactly (kurtosis 1, no variance
  statement): a bound on what any variance statement could still save;
* ``fpc``: the gap's and the variances' laws with the finite-population correction
  1 − n/N_pop, the curator stating how many rows the population has (the benchmark draws
  its tables without replacement from 45,222 and 20,190 rows; the set assumes i.i.d.);
* ``rotation``: an adaptation-aware gap statement. The tight set bootstraps the distance
  ‖M(Δ̂ − V^(1/2)η)‖ with the metric M fixed; a fitted shape follows the gap instead. In
  the error's whitened coordinates (t = V^(−1/2)Δ) the shape is taken to turn with the
  estimate: in the bootstrap world (truth t̂, estimate t* = t̂ + η), the metric fitted on
  t* is M's turned by the rotation taking t̂'s direction u to t*'s direction w, so the
  true distance over the fitted one is the pivot
  ‖t̂‖/‖t*‖ · √(u'ᵀGu' / uᵀGu), u' = 2(u·w)u − w, G = BᵀB (B = MV^(1/2)),
  and the bound is d̂ times its Φ(z) quantile (the design's level, as ``tight``), never
  below d̂; the member moves along the tight set's own direction to that distance.

Printed per variant: violations (c_pop > c_set), median E‖Z‖² over the round-6 oracle,
and c_set / c_pop at its minimum, 5 % quantile and median (a set calibrated to exactly β
has a 5 % quantile of 1).

Run: ``python -m benchmarks.diag.diag_tight_levers randhie 4000 [TABLES]`` (about 10 s
of CPU per table).

Round 8, on the tight set's distance statement (main 56256e5), 60 tables of 1,000 rows per
population (this script); at 4,000 rows some variants from one-off runs of 30 tables
(each against ``tight`` on the same tables; "-": not run). Violations, E‖Z‖² / oracle, and
the 5 % quantile of c_set / c_pop:

==========  ==================  ==================  ==================  ==================
variant     Adult 1000          RAND 1000           Adult 4000 (30)     RAND 4000 (30)
==========  ==================  ==================  ==================  ==================
tight       6, 0.900, 0.935     1, 1.010, 1.180     3, 0.973, 0.987     0, 1.044, 1.100
no margin   7, 0.881, 0.918     1, 0.991, 1.157     4, 0.969            0, 1.036
kappa 1     7, 0.888, 0.933     1, 0.997, 1.163     -                   0, 1.034
fpc         7, 0.891, 0.926     1, 0.990, 1.156     5, 0.966, 0.979     0, 1.016, 1.068
rotation    4, 0.918, 0.953     1, 1.042, 1.215     -                   0, 1.044
==========  ==================  ==================  ==================  ==================

Each lever moves the price by 0.5-3 %: the design's margin 0.5-2 %, the variance statement
(kurtosis 1: no statement at all) 1-1.5 %, the finite-population correction 1-3 % (20 % of
RAND HIE's rows at 4,000), the rotation pivot nothing at 4,000 rows and +2-3 % (with fewer
violations on Adult) at 1,000. None reaches #25's target on every cell, and the margin and
the finite-population correction loosen Adult's coverage further. The cause of Adult's
violations is elsewhere: ``diag_tight_direction.py``.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.special import ndtr

from distpriv.population import _tight as _robust_tight
from distpriv.population import sets as _robust_joint
from distpriv.population.confidence import population_set

from .. import bench_price as bp
from .diag_tight_split import fitted_tables, set_factor, setting

VARIANTS = ("tight", "no margin", "kappa 1", "fpc", "rotation")


def rotation_target(
    gap: np.ndarray, metric: np.ndarray, spread: np.ndarray, z: float
) -> np.ndarray:
    """The ``rotation`` variant's bound on each member's distance (module docstring).

    Shapes: gap (B, m), metric and spread (B, m, m); returns (B,)."""
    design = _robust_tight._design(gap.shape[-1])
    level = _robust_tight.quantile_level(z)
    a = np.einsum("bij,bj->bi", metric, gap)
    b = metric @ spread
    t = np.einsum("bij,bj->bi", np.linalg.pinv(spread), gap)
    g = np.swapaxes(b, -1, -2) @ b
    tn = np.linalg.norm(t, axis=-1)
    u = t / tn[:, None]
    ugu = np.einsum("bi,bij,bj->b", u, g, u)
    out = np.empty(gap.shape[0])
    for k in range(gap.shape[0]):
        ts = t[k] + design
        tsn = np.linalg.norm(ts, axis=-1)
        w = ts / tsn[:, None]
        up = 2.0 * (w @ u[k])[:, None] * u[k] - w
        pivot2 = (tn[k] / tsn) ** 2 * np.einsum("ki,ij,kj->k", up, g[k], up) / ugu[k]
        out[k] = np.sqrt(np.quantile(pivot2, level, method="higher"))
    d = np.linalg.norm(a, axis=-1)
    return np.maximum(d * out, d)


def rotation_shift(gap: np.ndarray, metric: np.ndarray, spread: np.ndarray, z: float) -> Any:
    """The tight set's shift, rescaled along its own direction to :func:`rotation_target`."""
    shift = _robust_tight.quantile_shift_stack(gap, metric, spread, z)
    if z <= 0.0:
        return shift
    gap = np.broadcast_to(gap, metric.shape[:-1])
    target = rotation_target(gap, metric, spread, z)
    norm = np.linalg.norm(shift, axis=-1, keepdims=True)
    if np.any(norm == 0.0):  # no shift: the widest direction of the error, as the set's ascent
        widest = np.einsum("bij,bj->bi", spread, np.linalg.svd(metric @ spread)[2][:, 0, :])
        shift = np.where(norm > 0.0, shift, widest)
        norm = np.linalg.norm(shift, axis=-1, keepdims=True)
    return _robust_tight.step_to_distance(gap, metric, shift / norm, target)


@contextmanager
def patched(module: Any, name: str, value: Callable[..., Any]) -> Any:
    """Replace ``module.name`` for the block (the library is not changed on disk)."""
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


def with_uncertainty(model: Any, **changes: Any) -> Any:
    """A shallow copy of ``model`` whose moment uncertainty has ``changes``."""
    out = copy.copy(model)
    object.__setattr__(out, "uncertainty", replace(model.uncertainty, **changes))
    return out


def variant_factor(name: str, model: Any, shape: np.ndarray, fraction: float) -> float:
    """``c_set`` of ``model`` for ``shape`` under the variant ``name``."""
    if name == "tight":
        return set_factor(model, shape)
    if name == "no margin":
        with patched(_robust_tight, "quantile_level", lambda z: float(ndtr(z))):
            return set_factor(model, shape)
    if name == "kappa 1":
        unc = model.uncertainty
        return set_factor(with_uncertainty(model, kurtosis=np.ones_like(unc.kurtosis)), shape)
    if name == "fpc":
        sizes = tuple(float(n) / (1.0 - fraction) for n in model.uncertainty.stratum_sizes)
        return set_factor(with_uncertainty(model, stratum_sizes=sizes), shape)
    if name == "rotation":
        with patched(_robust_joint, "quantile_shift_stack", rotation_shift):
            return set_factor(model, shape)
    raise ValueError(name)


def main() -> None:
    st = setting(sys.argv)
    fraction = st.size / len(st.frame)
    rows: list[tuple[float, float, list[float]]] = []  # (trace, c_pop, c_set per variant)
    with population_set("tight"):
        for _t, model, shape in fitted_tables(st):
            c_set = [variant_factor(v, model, shape, fraction) for v in VARIANTS]
            rows.append((float(np.trace(shape)), bp.least_factor(st.pop, shape), c_set))
    tr = np.array([r[0] for r in rows])
    c_pop = np.array([r[1] for r in rows])
    print(f"{st.which} {st.size}: {len(rows)} tables, oracle {st.oracle:.1f}, n/N {fraction:.3f}")
    for k, name in enumerate(VARIANTS):
        c = np.array([r[2][k] for r in rows])
        viol = int(np.sum(c_pop > c * 1.000001))
        price = float(np.median(c * tr)) / st.oracle
        q = np.quantile(c / c_pop, [0.0, 0.05, 0.5])
        print(
            f"  {name:10s} violations {viol:3d}/{len(rows)}  E||Z||^2 / oracle {price:5.3f}"
            f"  c_set/c_pop min {q[0]:.3f} q05 {q[1]:.3f} median {q[2]:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
