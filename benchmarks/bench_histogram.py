"""Benchmark: a histogram release (many statistics) end to end, ``auto`` against one mechanism.

Usage::

    python -m benchmarks.bench_histogram [--repeats 3] [--config examples/adult-histogram.toml]

Setting: ``examples/adult-histogram.toml`` — the 100 counts per year of age (17–66) and sex
of a 100-row Adult subset (a ``GROUP BY age, sex`` of counts as the statistics), hiding
whether 45 % or 55 % of the rows have income > $50K, (ε, δ) = (1, 1e-3), analytic model,
the default population calibration (β = 0.05), ``[mechanism] name = "auto"``.

Measured in one process after the imports (the Adult split is cached by the first run,
which is not counted): :func:`distpriv.pipeline.run_release` of the config as written
(``auto``: every candidate mechanism calibrated, the least-error verified one released),
and the same config with ``name = "expm-g"`` (one mechanism: the baseline, in the same
run), each without a ledger; the median wall and CPU seconds of ``--repeats`` runs, and
their ratio. The target of the issue is that ``auto`` on a 100-bin histogram finishes in
seconds; the script asserts nothing about time.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import warnings

from ._common import EXAMPLES, timed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--config", default=str(EXAMPLES / "adult-histogram.toml"))
    args = ap.parse_args()

    from distpriv.pipeline import run_release
    from distpriv.pipeline.config import load_release_config

    auto = load_release_config(args.config)
    one = dataclasses.replace(auto, mechanism="expm-g", options={})

    def run(cfg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_release(cfg, ledger=False)

    run(one)  # warm-up: the bundled data split and the engine, not measured
    rows = {}
    chosen = None
    for name, cfg in (("expm-g", one), ("auto", auto)):
        walls, cpus = [], []
        for _ in range(args.repeats):
            outcome, cpu, wall = timed(lambda c=cfg: run(c))
            walls.append(wall)
            cpus.append(cpu)
        rows[name] = (statistics.median(walls), statistics.median(cpus))
        if name == "auto":
            chosen = outcome.public["mechanism"]["name"]
    m = len(auto.query)
    print(f"histogram release: {m} statistics, n = 100, (eps, delta) = (1, 1e-3)")
    print(f"{'mechanism':>10} {'wall s':>8} {'CPU s':>8}")
    for name, (wall, cpu) in rows.items():
        print(f"{name:>10} {wall:>8.2f} {cpu:>8.2f}")
    (aw, ac), (ew, ec) = rows["auto"], rows["expm-g"]
    print(f"auto / expm-g: {aw / ew:.2f} (wall), {ac / ec:.2f} (CPU); auto chose {chosen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
