"""Figures of the attack audit for mean, event and several-attribute secrets.

Runs ``distpriv audit`` (:func:`distpriv.pipeline.run_audit`) on the example configurations
and prints, per audited pair, the best attack's accuracy with its 95 % Clopper–Pearson
interval on the undefended statistics and on the defended release, the accuracy the
guarantee allows ((e^ε + δ)/(1 + e^ε)), the ε lower bound and the verdict:

* ``examples/adult-mean.toml`` — the average age of 100 Adult rows, 37 vs 40 (expm-g);
* ``examples/adult-events.toml`` — the share of high earners in [0.2, 0.3] vs [0.4, 0.5]
  (expm-g; datasets drawn with the population's weights over each event's shares);
* ``examples/adult-two-secrets.toml`` — the share of women (0.3 vs 0.4) and of high
  earners (0.2 vs 0.3) at once (the mechanism ``auto`` chooses, and expm-g), one audit per
  attribute.

Baseline in the same run: the proportion audit of ``examples/adult-income.toml`` (0.45 vs
0.55, expm-g) with the same repetitions; the CPU-time ratio says what a kind's datasets
cost (rejection sampling for a mean, a value draw per dataset for an event, one audit per
attribute for several).

Run: ``python -m benchmarks.bench_audit_kinds [--repetitions 10] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

from distpriv.pipeline import run_audit

from ._common import EXAMPLES

CASES = (
    ("proportion (baseline)", "adult-income.toml", ["expm-g"]),
    ("mean", "adult-mean.toml", ["expm-g"]),
    ("event", "adult-events.toml", ["expm-g"]),
    ("several", "adult-two-secrets.toml", ["auto", "expm-g"]),
)


def _rows(report: dict) -> list[tuple[str, str, dict]]:
    """(pair in words, mechanism, its dict) for every audited pair and mechanism."""
    blocks = report.get("attributes") or [report]
    out = []
    for b in blocks:
        labels = b.get("labels") or [f"p = {v:g}" for v in b["pair"]]
        for m in b["mechanisms"]:
            out.append((f"{labels[0]} vs {labels[1]}", m["mechanism"], m))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    base = None
    for kind, name, mechs in CASES:
        t0 = time.process_time()
        out = run_audit(
            EXAMPLES / name, mechanisms=mechs, repetitions=args.repetitions, seed=args.seed
        )
        cpu = time.process_time() - t0
        base = cpu if base is None else base
        rep = out.public
        print(
            f"\n## {kind}: {name} ({args.repetitions} x {rep['n_shadow']} shadow / "
            f"{rep['n_test']} test datasets; CPU {cpu:.1f} s, x{cpu / base:.2f} the baseline)"
        )
        print(
            "| pair | mechanism | best attack | accuracy [95 % CI] | allowed | eps LB | verdict |"
        )
        print("|---|---|---|---|---|---|---|")
        for pair, mech, m in _rows(rep):
            best = max(m["attacks"], key=lambda a: a["accuracy"])
            lo, hi = best["interval"]
            claim = "" if mech == "none" else f" ({m['claimed_epsilon']:g}, {m['claimed_delta']:g})"
            print(
                f"| {pair} | {mech}{claim} | {best['attack']} | {best['accuracy']:.3f} "
                f"[{lo:.3f}, {hi:.3f}] | {m['accuracy_allowed']:.3f} | "
                f"{m['epsilon_lower_bound']:.3f} | {m['verdict']} |"
            )
        for note in rep["notes"]:
            if "guarantees" in note or note.startswith("auto"):
                print(f"- {note}")


if __name__ == "__main__":
    main()
