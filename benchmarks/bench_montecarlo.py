"""Benchmark: chunked Monte Carlo query models against the baseline commit, in the same run.

Usage::

    python -m benchmarks.bench_montecarlo [--subsets 1000000] [--old-subsets 100000]
                                          [--cliff-rows 1000000] [--seed 0]

Part 1 — 10⁶ subsets per value of the secret on Adult (the paper's five statistics, income
secret 0.45/0.55, subsets of 100 rows). Each run is a fresh subprocess that reports its own
peak RSS (``ru_maxrss``): the current code at ``--subsets``, the current code and the
baseline (commit eb5e882, exported with ``git archive`` into a temporary directory) at
``--old-subsets``. The baseline builds the whole (subsets, n, m) array, about 5 GiB at 10⁶,
so it is run at 10⁵ and its time and its memory above the data-loaded baseline are scaled
linearly to 10⁶ (stated as "scaled" in the output). The moments of the two are compared
with their Monte Carlo standard errors.

Part 2 — the subset-size cliff: draws of subsets of 1000 and 2000 rows from a 10⁶-row table
(Adult rows resampled), current sampler against the baseline's (copied below, as it was),
time per subset and per drawn row, and the ratio 2000/1000.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ._common import SRC, export_src, src_env

BASELINE = "eb5e882"

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from distpriv.datasets import paper_split
from distpriv.modeling import ProportionSecret, Query, model_query
subsets, seed = int(sys.argv[1]), int(sys.argv[2])
q = Query({"avg_age": "avg(age)", "avg_education": "avg(education_num)",
           "n_never_married": "count_if(marital_status = 'Never-married')",
           "n_female": "count_if(sex = 'Female')", "avg_hours": "avg(hours_per_week)"})
secret = ProportionSecret("income = '>50K'", values=[0.45, 0.55])
data = paper_split(rng=0)["modeling"]
model_query(data, q, secret, subset_size=100, n_samples=2, rng=0)  # warm caches and imports
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
m = model_query(data, q, secret, subset_size=100, method="montecarlo", n_samples=subsets,
                rng=seed)
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "peak_kib": peak, "before_kib": before,
                  "means": np.asarray(m.means).tolist(),
                  "covariances": np.asarray(m.covariances).tolist()}))
"""


def run_child(src: Path, subsets: int, seed: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(subsets), str(seed)],
        check=True,
        capture_output=True,
        text=True,
        env=src_env(src),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def mib(kib: float) -> float:
    return kib / 1024.0


def part_memory(args: argparse.Namespace, baseline_src: Path) -> None:
    print(
        f"Part 1: Monte Carlo model on Adult, subset size 100, 2 values, 5 statistics "
        f"(seed {args.seed})"
    )
    new_big = run_child(SRC, args.subsets, args.seed)
    new_small = run_child(SRC, args.old_subsets, args.seed + 1)
    old_small = run_child(baseline_src, args.old_subsets, args.seed + 2)
    scale = args.subsets / args.old_subsets
    old_time = old_small["seconds"] * scale
    old_extra = (old_small["peak_kib"] - old_small["before_kib"]) * scale
    old_peak = old_small["before_kib"] + old_extra
    header = f"{'run':<40} {'subsets':>9} {'time (s)':>9} {'peak RSS (MiB)':>15}"
    print(header)
    print("-" * len(header))
    rows = [
        ("current", args.subsets, new_big["seconds"], mib(new_big["peak_kib"])),
        ("current", args.old_subsets, new_small["seconds"], mib(new_small["peak_kib"])),
        (
            f"baseline {BASELINE}",
            args.old_subsets,
            old_small["seconds"],
            mib(old_small["peak_kib"]),
        ),
        (f"baseline {BASELINE} (scaled linearly)", args.subsets, old_time, mib(old_peak)),
    ]
    for name, count, secs, peak in rows:
        print(f"{name:<40} {count:>9} {secs:>9.2f} {peak:>15.0f}")
    print(
        f"ratios at {args.old_subsets} subsets, baseline/current: time "
        f"{old_small['seconds'] / new_small['seconds']:.2f}x, peak RSS "
        f"{old_small['peak_kib'] / new_small['peak_kib']:.2f}x"
    )
    print(
        f"ratios at {args.subsets} subsets, baseline (scaled)/current: time "
        f"{old_time / new_big['seconds']:.2f}x, peak RSS {old_peak / new_big['peak_kib']:.2f}x; "
        f"current peak {mib(new_big['peak_kib']):.0f} MiB "
        f"({'under' if new_big['peak_kib'] < 1024**2 else 'OVER'} 1 GiB), of which "
        f"{mib(new_big['peak_kib'] - new_big['before_kib']):.0f} MiB above the loaded data"
    )
    # Same moments within Monte Carlo error: z-scores of the differences.
    mn, mo = np.array(new_big["means"]), np.array(old_small["means"])
    cn, co = np.array(new_big["covariances"]), np.array(old_small["covariances"])
    var = np.diagonal(cn, axis1=1, axis2=2)
    z_mean = np.abs(mn - mo) / np.sqrt(var / args.subsets + var / args.old_subsets)
    vo = np.diagonal(co, axis1=1, axis2=2)
    # Variance estimates: sd ≈ var·√(2/S) under near-Gaussianity.
    z_var = np.abs(var - vo) / (var * np.sqrt(2 / args.subsets + 2 / args.old_subsets))
    print(
        f"moments, current ({args.subsets}) vs baseline ({args.old_subsets}): largest |z| of "
        f"the means {z_mean.max():.2f}, of the variances {z_var.max():.2f} "
        f"({z_mean.size} + {z_var.size} comparisons)"
    )


# ---------------------------------------------------------------------------------------------
# Part 2: the subset-size cliff
# ---------------------------------------------------------------------------------------------


def baseline_sample_subsets(population, size, count, rng):
    """sample_subsets as in eb5e882 (rejection when k² ≤ N, else N random keys per subset)."""
    if size == 0:
        return np.zeros((count, 0), dtype=np.int64)
    if size * size <= population:
        out = rng.integers(0, population, size=(count, size), dtype=np.int64)
        todo = np.arange(count)
        while todo.size:
            srt = np.sort(out[todo], axis=1)
            dup = np.any(srt[:, 1:] == srt[:, :-1], axis=1)
            todo = todo[dup]
            out[todo] = rng.integers(0, population, size=(todo.size, size), dtype=np.int64)
        return out
    out = np.empty((count, size), dtype=np.int64)
    step = max(1, 8_000_000 // population)
    for start in range(0, count, step):
        stop = min(count, start + step)
        keys = rng.random((stop - start, population))
        part = np.argpartition(keys, size - 1, axis=1)[:, :size]
        out[start:stop] = rng.permuted(part, axis=1)
    return out


def baseline_draw(sampler, index, count, rng):
    """StratifiedSampler.draw as in eb5e882: all (count, n, m) features at once."""
    k = sampler.counts[index]
    pick = np.concatenate(
        [
            sampler.rows_a[baseline_sample_subsets(sampler.rows_a.size, k, count, rng)],
            sampler.rows_b[baseline_sample_subsets(sampler.rows_b.size, sampler.n - k, count, rng)],
        ],
        axis=1,
    )
    return sampler.features[pick].sum(axis=1) * sampler.scale


def part_cliff(args: argparse.Namespace) -> None:
    from distpriv.datasets import paper_split
    from distpriv.modeling import ProportionSecret, Query
    from distpriv.modeling.strata import StratifiedSampler

    rng = np.random.default_rng(args.seed)
    adult = paper_split(rng=0)["modeling"]
    big = adult.iloc[rng.integers(0, len(adult), size=args.cliff_rows)].reset_index(drop=True)
    q = Query({"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"})
    secret = ProportionSecret("income = '>50K'", values=[0.45, 0.55])
    print(
        f"\nPart 2: subsets of 1000 and 2000 rows from {args.cliff_rows} rows "
        f"(strata sizes after resampling Adult), value p = 0.55"
    )
    header = (
        f"{'sampler':<22} {'k':>5} {'subsets':>8} {'time (s)':>9} {'us/subset':>10} {'ns/row':>8}"
    )
    print(header)
    print("-" * len(header))
    per = {}
    for k in (1000, 2000):
        sampler = StratifiedSampler(big, q, secret, k)
        for name, func, count in (
            ("current", lambda s, c: s.draw(1, c, rng), args.cliff_subsets),
            (f"baseline {BASELINE}", lambda s, c: baseline_draw(s, 1, c, rng), args.old_cliff),
        ):
            func(sampler, 2)  # warm-up
            start = time.perf_counter()
            func(sampler, count)
            secs = time.perf_counter() - start
            per[(name, k)] = secs / count
            print(
                f"{name:<22} {k:>5} {count:>8} {secs:>9.3f} {1e6 * secs / count:>10.1f} "
                f"{1e9 * secs / count / k:>8.1f}"
            )
    for name in ("current", f"baseline {BASELINE}"):
        r = per[(name, 2000)] / per[(name, 1000)]
        print(
            f"{name}: time per subset, k=2000 / k=1000 = {r:.2f} (per drawn row {r / 2:.2f}; "
            "the work — k gathers per statistic — is linear in k, so 2.0 per subset is no cliff)"
        )
    for k in (1000, 2000):
        print(
            f"speed-up at k={k}, baseline/current per subset: "
            f"{per[(f'baseline {BASELINE}', k)] / per[('current', k)]:.1f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subsets", type=int, default=1_000_000)
    parser.add_argument("--old-subsets", type=int, default=100_000)
    parser.add_argument("--cliff-rows", type=int, default=1_000_000)
    parser.add_argument("--cliff-subsets", type=int, default=2000)
    parser.add_argument("--old-cliff", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-cliff", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_memory:
            part_memory(args, export_src(BASELINE, Path(tmp)))
    if not args.skip_cliff:
        part_cliff(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
