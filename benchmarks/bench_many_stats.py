"""Benchmark: the strata's moments for hundreds of statistics, against one DuckDB scan.

Usage::

    python -m benchmarks.bench_many_stats [--rows 1000000] [--m 100,200,500,1000]
                                          [--sample-statements 6] [--out FILE]
    python -m benchmarks.bench_many_stats --release [--release-rows 1000000,10000000]
                                          [--m …] [--kinds histogram,shares,averages]

``--release`` measures the commands end to end instead (``release`` and ``verify`` on a
resampled Adult Parquet table, against one DuckDB pass of the statistics and their second
moments): :mod:`benchmarks._many_release` describes that setting.

Setting. A synthetic Parquet table of ``--rows`` rows (numpy seed 0, written to a temporary
directory): ``x`` continuous (normal), ``a`` an integer in 0..999, ``g`` the secret's flag
(``g = 1`` for about 30 % of the rows). Two kinds of m statistics:

* ``histogram``: the cells of a histogram of ``x`` (m equal-width bins over [−4, 4]) as
  indicator averages, ``avg(CASE WHEN x >= lo AND x < hi THEN 1 ELSE 0 END)``;
* ``averages``: m conditional averages, ``avg(CASE WHEN a >= t_j THEN x ELSE 0 END)``
  (dense row features).

Measured, each in a fresh subprocess (CPU time of the process, DuckDB's threads included;
peak resident memory ``ru_maxrss``):

1. **ours**: :func:`distpriv.modeling.moments.table_moments` on the Parquet file (the
   analytic model's data path: the per-stratum counts, means, m × m cross products and the
   third and fourth power sums);
2. **scan**: ONE DuckDB pass computing the statistics per stratum::

       SELECT g = 1 AS s, count(*), sum(f_1), …, sum(f_m)
       FROM read_parquet(file) GROUP BY s

3. **moments**: one DuckDB pass computing the statistics and their per-stratum second
   moments::

       SELECT g = 1 AS s, count(*), sum(f_i) (i ≤ m), sum(f_i * f_j) (i ≤ j ≤ m)
       FROM read_parquet(file) GROUP BY s

   That is m + m(m + 1)/2 aggregates; DuckDB 2.0 dies (SIGFPE) past about 16,384 in one
   statement (m ≥ 180), so this baseline itself is split into statements of at most 2,048
   aggregates (each a scan). Above ``--sample-statements`` statements only that many are
   run (evenly spaced) and the CPU is extrapolated by the statement count — said in the
   output.

Printed: CPU seconds, ratios ours / scan and ours / moments, peak memory. A correctness
check (exit status 1 if it fails): at the smallest m, ours' per-stratum means and cross
products equal the moments baseline's to 1e-9 (relative to the diagonal).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MAX_AGGREGATES = 2048
KINDS = ("histogram", "averages")


def statistics(kind: str, m: int) -> list[str]:
    """The m row features (SQL) whose averages are the statistics."""
    if kind == "histogram":
        edges = np.linspace(-4.0, 4.0, m + 1)
        return [
            f"CASE WHEN x >= {float(lo)!r} AND x < {float(hi)!r} THEN 1 ELSE 0 END"
            for lo, hi in itertools.pairwise(edges)
        ]
    return [f"CASE WHEN a >= {int(t)} THEN x ELSE 0 END" for t in np.linspace(0, 990, m)]


def make_table(path: Path, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    table = pa.table(
        {
            "x": rng.normal(size=rows),
            "a": rng.integers(0, 1000, rows),
            "g": (rng.random(rows) < 0.3).astype(np.int64),
        }
    )
    pq.write_table(table, path, row_group_size=122_880)


def _usage() -> tuple[float, float, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return time.process_time(), time.perf_counter(), ru.ru_maxrss / 1024.0


def child_ours(path: str, kind: str, m: int) -> dict:
    from distpriv.modeling.expressions import parse_expression
    from distpriv.modeling.moments import table_moments
    from distpriv.modeling.tables import Table

    sql = statistics(kind, m)
    feats = [parse_expression(f, what=f"f{j}", kind="scalar") for j, f in enumerate(sql)]
    pred = parse_expression("g = 1", what="secret", kind="scalar")
    _, _, rss0 = _usage()
    cpu0, wall0, _ = _usage()
    tm = table_moments(Table(path), feats, pred, names=[f"s{j}" for j in range(m)])
    cpu1, wall1, rss1 = _usage()
    out = {"cpu": cpu1 - cpu0, "wall": wall1 - wall0, "rss_mb": rss1, "rss_start_mb": rss0}
    out["how"] = tm.how
    out["means"] = [tm.a.mean.tolist(), tm.b.mean.tolist()]
    out["cross_diag"] = [np.diag(tm.a.cross).tolist(), np.diag(tm.b.cross).tolist()]
    if m <= 200:
        out["cross"] = [tm.a.cross.tolist(), tm.b.cross.tolist()]
    return out


def _baseline_statements(kind: str, m: int, moments: bool) -> list[list[str]]:
    """Aggregates over the columns d0 … d{m-1} of the features, in statements of at most
    MAX_AGGREGATES."""
    aggs = [f"sum(d{j})" for j in range(m)]
    if moments:
        aggs += [f"sum(d{i} * d{j})" for i in range(m) for j in range(i, m)]
    return [aggs[i : i + MAX_AGGREGATES] for i in range(0, len(aggs), MAX_AGGREGATES)]


def child_baseline(path: str, kind: str, m: int, moments: bool, sample: int) -> dict:
    from distpriv.modeling.engines import locked_connection

    conn = locked_connection([str(Path(path).resolve())])
    chunks = _baseline_statements(kind, m, moments)
    picked = list(range(len(chunks)))
    if len(chunks) > sample:
        picked = sorted({round(float(i)) for i in np.linspace(0, len(chunks) - 1, sample)})
    literal = "'" + str(Path(path).resolve()).replace("'", "''") + "'"
    cpu0, wall0, _ = _usage()
    results = {}
    feats = statistics(kind, m)
    for i in picked:
        # The features once per row (a CTE), only those the statement's aggregates read.
        used = sorted({int(t) for a in chunks[i] for t in re.findall(r"d(\d+)", a)})
        cols = ", ".join(f"{feats[j]} AS d{j}" for j in used)
        sql = (
            f"WITH f AS (SELECT CAST(g = 1 AS INTEGER) AS s, {cols} FROM read_parquet({literal})) "
            f"SELECT s, count(*), {', '.join(chunks[i])} FROM f GROUP BY s ORDER BY s"
        )
        results[i] = conn.execute(sql).fetchall()
    cpu1, wall1, rss1 = _usage()
    scale = len(chunks) / len(picked)
    out = {
        "cpu": (cpu1 - cpu0) * scale,
        "wall": (wall1 - wall0) * scale,
        "rss_mb": rss1,
        "statements": len(chunks),
        "run": len(picked),
    }
    if moments and len(picked) == len(chunks):
        # Per-stratum means and centred cross products, for the correctness check.
        flat = {s: [] for s in (0, 1)}
        counts = {}
        for i in picked:
            for row in results[i]:
                flat[int(row[0])] += [float(v) for v in row[2:]]
                counts[int(row[0])] = int(row[1])
        strata = []
        for s in (1, 0):
            v, n = np.array(flat[s]), counts[s]
            s1, pairs = v[:m], v[m:]
            raw = np.zeros((m, m))
            raw[np.triu_indices(m)] = pairs
            raw = raw + np.triu(raw, 1).T
            strata.append(
                {"mean": (s1 / n).tolist(), "cross": (raw - np.outer(s1, s1) / n).tolist()}
            )
        out["strata"] = strata
    return out


def run_child(args: list[str]) -> dict:
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--m", default="100,200,500,1000")
    parser.add_argument("--sample-statements", type=int, default=6)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--out", default=None, help="also write the printed lines here")
    parser.add_argument("--release", action="store_true", help="end to end (release, verify)")
    parser.add_argument("--release-rows", default="1000000,10000000")
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--calibration", default="", help="[mechanism] calibration (--release)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="wall s per command")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.child[0] in ("command", "pass", "pass1"):
        from benchmarks import _many_release as e2e

        if args.child[0] == "command":
            res = e2e.child_command(json.loads(args.child[1]))
        else:
            path, kind, m, sample = args.child[1:5]
            res = e2e.child_pass(path, kind, int(m), int(sample), moments=args.child[0] == "pass")
        print(json.dumps(res))
        return 0
    if args.child:
        what, path, kind, m = args.child[:4]
        if what == "ours":
            res = child_ours(path, kind, int(m))
        else:
            res = child_baseline(path, kind, int(m), what == "moments", int(args.child[4]))
        print(json.dumps(res))
        return 0

    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    ms = [int(v) for v in args.m.split(",")]
    if args.release:
        import duckdb

        from benchmarks import _many_release as e2e

        say(
            f"bench_many_stats --release: resampled Adult Parquet, duckdb {duckdb.__version__}, "
            f"{os.cpu_count()} cpus; CPU s of each process (DuckDB threads included), peak RSS MB"
        )
        kinds = args.kinds.split(",") if args.kinds != ",".join(KINDS) else list(e2e.KINDS)
        e2e.CALIBRATION["value"], e2e.TIMEOUT["value"] = args.calibration, args.timeout
        say(f"calibration: {args.calibration or 'default (exact)'}; expm-g, eps 1, delta 1e-3")
        rows = [int(v) for v in args.release_rows.split(",")]
        ok = e2e.run(rows, ms, kinds, args.sample_statements, say, not args.no_verify)
        if args.out:
            Path(args.out).write_text("\n".join(lines) + "\n")
        return 0 if ok else 1
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "many.parquet"
        make_table(path, args.rows)
        import duckdb

        say(
            f"bench_many_stats: {args.rows:,} rows (Parquet, seed 0), duckdb {duckdb.__version__}, "
            f"{os.cpu_count()} cpus; CPU s of the process (DuckDB threads included)"
        )
        say(
            f"{'kind':>9} {'m':>5} | {'ours':>7} {'scan':>6} {'moments':>8} | "
            f"{'ours/scan':>9} {'ours/mom':>8} | {'ours MB':>7} {'scan MB':>7} | how"
        )
        for kind in args.kinds.split(","):
            for m in ms:
                ours = run_child(["ours", str(path), kind, str(m)])
                scan = run_child(["scan", str(path), kind, str(m), "1000000"])
                mom = run_child(["moments", str(path), kind, str(m), str(args.sample_statements)])
                if any("error" in r for r in (ours, scan, mom)):
                    say(
                        f"{kind:>9} {m:>5} | ERROR "
                        f"{ours.get('error')} {scan.get('error')} {mom.get('error')}"
                    )
                    ok = False
                    continue
                extrap = (
                    f" (moments: {mom['run']} of {mom['statements']} statements, extrapolated)"
                    if mom["run"] < mom["statements"]
                    else f" (moments: {mom['statements']} statements)"
                )
                say(
                    f"{kind:>9} {m:>5} | {ours['cpu']:7.2f} {scan['cpu']:6.2f} {mom['cpu']:8.2f} | "
                    f"{ours['cpu'] / scan['cpu']:9.2f} {ours['cpu'] / mom['cpu']:8.3f} | "
                    f"{ours['rss_mb']:7.0f} {scan['rss_mb']:7.0f} | {ours['how']}{extrap}"
                )
                if "strata" in mom and "cross" in ours:
                    for got_mean, got_cross, ref in zip(
                        ours["means"], ours["cross"], mom["strata"], strict=True
                    ):
                        c_ref, c_got = np.array(ref["cross"]), np.array(got_cross)
                        d = np.sqrt(np.outer(np.diag(c_ref), np.diag(c_ref))) + 1e-300
                        err_c = float(np.max(np.abs(c_got - c_ref) / d))
                        err_m = float(np.max(np.abs(np.array(got_mean) - np.array(ref["mean"]))))
                        if not (err_c < 1e-9 and err_m < 1e-12):
                            ok = False
                            say(f"  CHECK FAILED: cross rel err {err_c:.2e}, mean err {err_m:.2e}")
                    say(f"  check: moments equal the baseline's (m = {m}, both strata)")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
