"""Sample splitting against the tight set's adaptation (issue 25, round 7).

The tight set covers at about β for a noise fixed in advance (``diag_tight_fixed_noise.py``:
Adult isotropic 14 of 300) but ``auto``'s noise, shaped from the same table, violates on
8 % of Adult tables (``bench_price.py``, round 6). Splitting the table makes the shape
fixed in advance for the set: the shape is fitted on one random half A, its scale set on
the tight set of the other half B (disjoint rows, so A's shape is independent of B's
errors). The price: a set from half the rows, a shape from the other half.

Per modelling table of ``bench_price.py`` (the same seeds and draws) and per shape
shape (the fitted calibration of daum-floor, ``beta=None``, the oracle's shape at 1,000 and
4,000 rows; or ``auto``'s noise on the tight set of the half it is fitted on):

* ``full``: shape fitted on the whole table, scale = the least factor c whose noise
  c·shape passes every member of the table's own tight set for that very noise (what
  the calibration does; adaptive);
* ``split``: shape fitted on A, the least factor on B's tight set (β = 0.05 as in
  ``auto``).

Printed per population and size: median E‖Z‖², its ratio to the round-6 oracle (from
``benchmarks/results/bench_price_r6_*.jsonl``) and the tables whose population δ(1)
exceeds the claim.

Run: ``python -m benchmarks.diag.diag_tight_split adult 1000 [TABLES]`` (about 20 s of CPU
per table at 1,000 rows).

Round 7 (main bfb4be0), the first 30 tables of 1,000 rows, idle machine, one process per
population:

=======  ===================  =========  ====================  ==========
pop      plan, shape          E‖Z‖²      / round-6 oracle      violations
=======  ===================  =========  ====================  ==========
Adult    full, daum-floor       195.0    0.88 (222.5)          3/30
Adult    full, auto             191.5    0.86                  3/30
Adult    split, daum-floor    44052.4    198                   0/30
Adult    split, auto            552.5    2.48                  0/30
RAND     full, daum-floor       117.5    1.03 (113.9)          0/30
RAND     full, auto             117.3    1.03                  0/30
RAND     split, daum-floor     5954.5    52                    0/30
RAND     split, auto            453.3    3.98                  0/30
=======  ===================  =========  ====================  ==========

("full, auto" reproduces ``auto``'s own noise: its least factor on its own set is about 1.)
Splitting is valid by construction and priced out: a shape fitted on A puts little noise
across A's gap, and B's gap has a component there (daum-floor's floor must grow 50-200×);
``auto``'s shape on A's set covers A's uncertainty but not B's, and B's set is that of half
the rows (2.5-4×). The tight set's low price comes from aligning the noise with the very
gap its set is centred on, which is also where its coverage is lost on Adult.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distpriv import calibrate
from distpriv.errors import DistPrivError
from distpriv.population.confidence import population_model, population_set

from .. import bench_price as bp

# The shapes: a fitted calibration (beta=None), or "auto" on the tight set of the half it
# is fitted on (noise shaped for that half's set: across the gap too, not only along it).
SHAPES = ("daum-floor", "auto")
RESULTS = Path(__file__).resolve().parents[1] / "results"


def fitted_shape(model: object, name: str) -> np.ndarray | None:
    """The fitted calibration's noise (no population layer), or ``auto``'s on the tight set;
    None when not full rank."""
    if name == "auto":
        choice = bp.auto_choice(model)
        return None if choice is None else choice.mechanism.noise_covariance
    try:
        mech = bp.quiet(calibrate, name, model, epsilon=bp.EPS, delta=bp.DELTA, beta=None)
    except (DistPrivError, ArithmeticError, np.linalg.LinAlgError):
        return None
    return mech.noise_covariance if mech.noise_rank == model.dim else None


def set_factor(model: object, shape: np.ndarray) -> float:
    """The least c (bisection to 0.1 %) with every tight-set member of ``model`` for the
    noise c·shape at δ(1) ≤ δ (members recomputed at each c, as the calibration does)."""

    def ok(c: float) -> bool:
        noise = shape * c
        mem = population_model(model, beta=0.05, noise_cov=noise, epsilon=bp.EPS)
        return bp.true_delta(mem, noise) <= bp.DELTA

    lo, hi = 0.0, 1.0
    while not ok(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            return np.inf
    while hi - lo > 1e-3 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if not ok(mid) else (lo, mid)
    return hi


@dataclass(frozen=True)
class Setting:
    """A diag run's population and size (``argv``: population, rows, [tables])."""

    which: str
    size: int
    tables: int
    frame: Any
    stats: Any
    secret: Any
    pop: Any  # the population's own model (the reference δ)
    oracle: float  # the round-6 oracle of this population and size
    rng: np.random.Generator  # bench_price's draws of this size's modelling tables


def setting(argv: list[str]) -> Setting:
    """Parse ``argv`` and load what every diag run of this folder needs."""
    which, size = argv[1], int(argv[2])
    warnings.simplefilter("ignore")
    frame = bp.load(which)
    stats, secret = bp.POPULATIONS[which]
    pop = bp.model_query(frame, stats, secret, subset_size=100, method="analytic", population=True)
    with open(RESULTS / f"bench_price_r6_{which}.jsonl") as fh:
        recs = [r for r in map(json.loads, fh) if r["size"] == size]
    return Setting(
        which,
        size,
        int(argv[3]) if len(argv) > 3 else 100,
        frame,
        stats,
        secret,
        pop,
        min(bp.oracles(recs).values()),
        np.random.default_rng([2025, size]),
    )


def fitted_tables(st: Setting, name: str = "daum-floor") -> Iterator[tuple[int, Any, np.ndarray]]:
    """(t, model, shape) for the tables of ``st`` in bench_price's draws, with ``name``'s
    fitted noise (:func:`fitted_shape`; tables where it is not of full rank are skipped, their
    draws made all the same); a progress line on stderr after each table."""
    for t in range(st.tables):
        sample = st.frame.iloc[st.rng.choice(len(st.frame), st.size, replace=False)]
        model = bp.quiet(
            bp.model_query, sample, st.stats, st.secret, subset_size=100, method="analytic"
        )
        shape = fitted_shape(model, name)
        if shape is not None:
            yield t, model, shape
        print(f"  table {t + 1}", file=sys.stderr, flush=True)


def main() -> None:
    st = setting(sys.argv)
    plans = {"full": ("table", "table"), "split": ("A", "B")}  # (shape fitted on, set of)
    out: dict[str, list[tuple[float, bool]]] = {f"{k} {s}": [] for k in plans for s in SHAPES}
    with population_set("tight"):
        for t in range(st.tables):
            rows = st.rng.choice(len(st.frame), st.size, replace=False)
            halves = np.random.default_rng([7, st.size, t]).permutation(st.size)
            parts = {
                "table": rows,
                "A": rows[halves[: st.size // 2]],
                "B": rows[halves[st.size // 2 :]],
            }
            models = {
                k: bp.quiet(
                    bp.model_query,
                    st.frame.iloc[r],
                    st.stats,
                    st.secret,
                    subset_size=100,
                    method="analytic",
                )
                for k, r in parts.items()
            }
            for s in SHAPES:
                for kind, (fit_on, set_on) in plans.items():
                    shape = fitted_shape(models[fit_on], s)
                    if shape is None:
                        continue
                    c = set_factor(models[set_on], shape)
                    if not np.isfinite(c):
                        continue
                    noise = shape * c
                    viol = bp.true_delta(st.pop, noise) > bp.DELTA * 1.000001
                    out[f"{kind} {s}"].append((float(np.trace(noise)), bool(viol)))
            print(f"  table {t + 1}", file=sys.stderr, flush=True)
    for key, vals in out.items():
        if not vals:
            print(f"{st.which} {st.size} {key:26s} no table verified")
            continue
        mse = np.median([v[0] for v in vals])
        viol = sum(v[1] for v in vals)
        print(
            f"{st.which} {st.size} {key:26s} median E||Z||^2 {mse:8.1f}  / oracle "
            f"{st.oracle:7.1f} = "
            f"{mse / st.oracle:5.2f}  violations {viol}/{len(vals)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
