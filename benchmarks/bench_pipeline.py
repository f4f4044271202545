"""Benchmark: group-DP default options computed once per table vs once per calibration.

The previous ``distpriv audit`` recomputed the group-DP sensitivities for each group-DP
mechanism it audited, resolving the Adult split and computing the per-row features of the
modelling table every time (``previous`` below, copied from the old CLI). The pipeline
computes the table's facts once (:func:`distpriv.pipeline.table_facts`) and every
calibration reads its defaults from the registry (:func:`distpriv.central.default_options`).
Both paths give the same sensitivities (checked); the ratio is printed for 2 calibrations
(an audit of groupdp-l and groupdp-g) and for 20 (a sweep over ε).

Run: ``python -m benchmarks.bench_pipeline [--repeat N]``.
"""

from __future__ import annotations

import argparse

import numpy as np

from distpriv.central import default_options
from distpriv.datasets import paper_split
from distpriv.modeling import Query
from distpriv.modeling.tables import as_table
from distpriv.pipeline import ADULT_STATISTICS, table_facts

from ._common import best_of

N = 100


def previous(statistics: dict[str, str], n: int) -> np.ndarray:
    """The old CLI path: resolve the split, load the table, per-row features, per call."""
    frame = paper_split(rng=0)["modeling"]
    q = Query(statistics)
    feats = q.row_features(as_table(frame))
    out = []
    for j, stat in enumerate(q.statistics):
        span = float(feats[:, j].max() - feats[:, j].min())
        out.append(span / n if stat.scale == "mean" else max(span, 1.0))
    return np.array(out)


def ours(calibrations: int) -> list[np.ndarray]:
    frame = paper_split(rng=0)["modeling"]
    facts = table_facts(frame, Query(ADULT_STATISTICS), N)  # once per table
    return [default_options("groupdp-g", facts)["sensitivities"] for _ in range(calibrations)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    np.testing.assert_allclose(previous(ADULT_STATISTICS, N), ours(1)[0])
    print(
        "group-DP default options on the Adult modelling split (25,222 rows), best of", args.repeat
    )
    for k in (2, 20):
        old, _ = best_of(lambda k=k: [previous(ADULT_STATISTICS, N) for _ in range(k)], args.repeat)
        new, _ = best_of(lambda k=k: ours(k), args.repeat)
        print(
            f"  {k:>2} calibrations: previous {old * 1e3:8.1f} ms, ours {new * 1e3:7.1f} ms, "
            f"ratio {old / new:5.1f}x"
        )


if __name__ == "__main__":
    main()
