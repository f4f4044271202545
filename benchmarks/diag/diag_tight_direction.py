"""Why the tight set under-covered on Adult: the gap's direction (issue 25, round 8).

For the modelling tables of ``benchmarks/bench_price.py`` (same seeds and draws), the oracle's
shape (daum-floor's fitted calibration, ``beta=None``) is scaled to the least factor that
passes the table's tight set (``diag_tight_split.set_factor``: what the calibration does).
For every table whose population δ(1) then exceeds the claim, in claims (δ / 1e-3):

* ``true``: the population's model;
* ``member``: the set's worst member (at most 1 by construction);
* ``pop means``: the population's means with the fitted covariances;
* ``true dir at D``: the member's covariances with the *population's* gap direction,
  scaled to the member's output distance D;
* ``d_pop / D``: the population's gap distance over the member's, in the member's metric;
* ``pop covs``: the member's means with the population's covariances.

Run: ``python -m benchmarks.diag.diag_tight_direction adult 1000 [TABLES]`` (about 2 s of
CPU per table).

Round 8, before the δ-distance statement (main 56256e5, 100 tables per size): on Adult the
population's gap was *nearer* than the member on most violating tables (d_pop / D
0.914-0.985 on 6 of 9 at 1,000 rows and 0.979-0.998 on 5 of 7 at 4,000), yet its direction
at the member's distance gave δ above the claim on all 16 (1,000 rows: 2.25, 1.11, 1.13,
1.41, 1.70, 1.23, 2.23, 1.34, 1.74; 4,000 rows: 1.14, 1.34, 1.31, 1.01, 1.30, 1.14, 1.25);
the population's covariances with the member's means gave 0.81-1.11 (above 1 on 4 of 16).
The member of largest distance is not the member
of largest δ when the pair's covariances differ (the income share changes the count
statistics' variances): the tight set's distance statement missed what δ depends on.
The statement in δ's own distance (population/_direction.py) replaced it: on the same
tables the tight set's factor on daum-floor's shape violates on 4 and 3 of 100 (was 9
and 7), ``diag_tight_inflation.py``.
"""

from __future__ import annotations

import sys

import numpy as np

from distpriv.population.confidence import population_model, population_set

from .. import bench_price as bp
from .diag_tight_coverage import claims
from .diag_tight_split import fitted_tables, set_factor, setting


def main() -> None:
    st = setting(sys.argv)
    pm, pc = np.asarray(st.pop.means), np.asarray(st.pop.covariances)
    (i, j) = st.pop.pairs[0]
    if (i, j) != (0, 1):  # claims() reads the pair (0, 1)
        raise SystemExit("this diagnosis reads one pair (0, 1)")
    n = violating = 0
    with population_set("tight"):
        for t, model, shape in fitted_tables(st):
            n += 1
            noise = set_factor(model, shape) * shape
            true = bp.true_delta(st.pop, noise) / bp.DELTA
            if true <= 1.0:
                continue
            violating += 1
            mem = population_model(model, beta=0.05, noise_cov=noise, epsilon=bp.EPS)
            fc = np.asarray(model.covariances)
            mm, mc = np.asarray(mem.means), np.asarray(mem.covariances)
            metric = np.linalg.inv(np.linalg.cholesky((mc[0] + mc[1]) / 2 + noise))
            dist = float(np.linalg.norm(metric @ (mm[0] - mm[1])))
            pop_gap = pm[0] - pm[1]
            pop_dist = float(np.linalg.norm(metric @ pop_gap))
            at_d = np.stack([mm[1] + pop_gap * dist / pop_dist, mm[1]])
            print(
                f"table {t}: true {true:.3f} | member {claims(mm, mc, noise):.3f} | pop means "
                f"{claims(pm, fc, noise):.3f} | true dir at D {claims(at_d, mc, noise):.3f} | "
                f"d_pop / D {pop_dist / dist:.3f} | pop covs {claims(mm, pc, noise):.3f}",
                flush=True,
            )
    print(f"{st.which} {st.size}: {violating} of {n} tables violate")


if __name__ == "__main__":
    main()
