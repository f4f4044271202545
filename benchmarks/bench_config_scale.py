"""Benchmark: ``distpriv release CONFIG`` with a large Parquet modelling table.

Usage::

    python -m benchmarks.bench_config_scale [--rows 10000000[,100000000]] [--small 10000]
                                            [--no-spark] [--workdir /tmp] [--keep]

Setting: the Adult example (examples/adult-income.toml: five linear statistics of a 100-row
dataset, secret ``income = '>50K'`` at 0.45 vs 0.55, ExpM (G), analytic model) with
``[data] model`` a Parquet file made by replicating the bundled Adult data (all 15 columns)
with DuckDB ``COPY … TO``, and ``[data] release`` a 100-row CSV from the Adult test split.

Measured, each release in a fresh subprocess (wall time of ``run_release`` after the
imports; peak resident memory of the process, ``VmHWM``, imports included):

* the release with the ``--small``-row table (default 10⁴) and with each ``--rows`` table,
  each into a fresh ledger (the ledger is on by default: the first release of its data);
  the *marginal* time is the difference. Then the same release again into that ledger
  ("2nd": composed with the first on the joint model of both, one aggregate more);
* the baseline: ONE hand-written DuckDB aggregate of every sum the analytic model needs (per
  stratum: count, Σx, Σx², Σx³, Σx⁴ of each statistic's row feature and Σxᵢxⱼ of each
  pair), on the same file, best of 3, in the same run;
* the same release through Spark local mode (``[data] model = "spark:<view>"`` over the
  same Parquet file, one session for the small and the large table), beside a Spark
  aggregate of the same sums. The JVM's memory is not in ``ru_maxrss`` (another process).

Target: marginal time within 3× of the DuckDB aggregate (+ a few seconds), peak
memory < 1 GiB. The script prints the ratios; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._common import ROOT, peak_mib, src_env

FEATURES = (
    "CAST(age AS DOUBLE)",
    "CAST(education_num AS DOUBLE)",
    "CAST((marital_status = 'Never-married') AS DOUBLE)",
    "CAST((sex = 'Female') AS DOUBLE)",
    "CAST(hours_per_week AS DOUBLE)",
)

CONFIG = """title = "bench"
[data]
model = "{model}"
release = "{release}"
[query]
avg_age = "avg(age)"
avg_education_years = "avg(education_num)"
n_never_married = "count_if(marital_status = 'Never-married')"
n_female = "count_if(sex = 'Female')"
avg_hours_per_week = "avg(hours_per_week)"
[secret]
predicate = "income = '>50K'"
values = [0.45, 0.55]
[model]
subset_size = 100
method = "analytic"
[mechanism]
name = "expm-g"
epsilon = 1.0
delta = 1e-3
"""


def aggregate_sql(relation: str) -> str:
    """Every sum of the analytic model in one grouped query (valid DuckDB and Spark SQL)."""
    f = [f"({x})" for x in FEATURES]
    items = ["count(*)"]
    for x in f:
        items += [f"sum({x})", f"sum({x} * {x})", f"sum({x} * {x} * {x})"]
        items += [f"sum({x} * {x} * {x} * {x})"]
    items += [f"sum({f[i]} * {f[j]})" for i in range(len(f)) for j in range(i + 1, len(f))]
    return f"SELECT {', '.join(items)} FROM {relation} GROUP BY coalesce(income = '>50K', false)"


def generate(path: Path, rows: int) -> float:
    """Replicate the Adult rows to ``rows`` rows (all columns) with DuckDB ``COPY``, streamed
    from a Parquet copy of Adult (bounded memory)."""
    import duckdb

    from distpriv.datasets import load_adult

    adult = load_adult()
    seed_file = path.with_suffix(".adult.parquet")
    partial = path.with_suffix(".partial.parquet")
    adult.to_parquet(seed_file, index=False)
    copies = -(-rows // len(adult))
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    start = time.perf_counter()
    con.execute(
        f"COPY (SELECT a.* FROM range({copies}) AS r, read_parquet('{seed_file}') AS a "
        f"LIMIT {int(rows)}) TO '{partial}' (FORMAT parquet)"
    )
    con.close()
    seed_file.unlink()
    partial.rename(path)  # an interrupted run leaves no truncated table behind
    return time.perf_counter() - start


def fresh_ledger(config: str | Path, tag: str) -> Path:
    """A new, empty ledger file for one release: every measured release is the first of
    its data (a second release adds the joint model's aggregate; measured separately)."""
    path = Path(config).with_name(f"ledger-{tag}-{os.getpid()}.sqlite")
    path.unlink(missing_ok=True)
    return path


def child_duckdb(config: str, ledger: str) -> None:
    import warnings

    from distpriv.pipeline import run_release

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        outcome = run_release(config, ledger=ledger)
        took = time.perf_counter() - start
    rss = peak_mib()
    values = [s["value"] for s in outcome.public["statistics"]]
    print(json.dumps({"seconds": took, "rss_mib": rss, "values": values}))


def child_spark(configs: list[str], paths: list[str]) -> None:
    import warnings

    from pyspark.sql import SparkSession

    from distpriv.pipeline import run_release

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("distpriv-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out = []
    for k, (config, path) in enumerate(zip(configs, paths, strict=True)):
        spark.read.parquet(path).createOrReplaceTempView(f"bench_model_{k}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ledger = fresh_ledger(config, f"spark{k}")
            start = time.perf_counter()
            run_release(config, ledger=ledger)
            took = time.perf_counter() - start
            ledger.unlink(missing_ok=True)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            spark.sql(aggregate_sql(f"bench_model_{k}")).collect()
            best = min(best, time.perf_counter() - start)
        out.append({"seconds": took, "aggregate": best})
    rss = peak_mib()
    spark.stop()
    print(json.dumps({"runs": out, "rss_mib": rss}))


def run_child(args: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", __spec__.name, *args],
        capture_output=True,
        text=True,
        env=src_env(),
        cwd=ROOT,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child {args[:2]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def duckdb_aggregate(path: Path) -> float:
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        con.execute(aggregate_sql(f"read_parquet('{path}')")).fetchall()
        best = min(best, time.perf_counter() - start)
    con.close()
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="10000000", help="comma-separated table sizes")
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, *rest = args.child
        if mode == "generate":
            print(json.dumps({"seconds": generate(Path(rest[0]), int(rest[1]))}))
        elif mode == "duckdb":
            child_duckdb(rest[0], rest[1])
        else:
            half = len(rest) // 2
            child_spark(rest[:half], rest[half:])
        return 0

    from distpriv.datasets import paper_split

    work = Path(args.workdir) / "distpriv_bench_config"
    work.mkdir(parents=True, exist_ok=True)
    release = work / "release.csv"
    paper_split(rng=0)["test"].iloc[:100].to_csv(release, index=False)
    sizes = [args.small, *(int(r) for r in args.rows.split(","))]
    files, configs, spark_configs = {}, {}, {}
    for n in sizes:
        path = work / f"adult_{n}.parquet"
        if not path.exists():  # in a subprocess: the parent stays small for the measurements
            took = run_child(["--child", "generate", str(path), str(n)])["seconds"]
            print(
                f"generated {n:>11,} rows in {took:.1f} s ({path.stat().st_size / 2**20:.0f} MiB)"
            )
        files[n] = path
        configs[n] = work / f"release_{n}.toml"
        configs[n].write_text(CONFIG.format(model=path, release=release))
        spark_configs[n] = work / f"release_{n}_spark.toml"
        k = sizes.index(n)
        spark_configs[n].write_text(CONFIG.format(model=f"spark:bench_model_{k}", release=release))

    print(
        "\nDuckDB (each release in a fresh process and a fresh ledger: the first release of "
        "its data; '2nd' = the same release again into that ledger, composed on the joint "
        "model of both)"
    )
    print(
        f"{'rows':>12} {'release s':>10} {'marginal s':>11} {'1 aggregate s':>14} "
        f"{'ratio':>6} {'peak MiB':>9} {'2nd s':>7} {'2nd marg.':>9}"
    )

    def duck(n: int) -> tuple[dict, dict]:
        ledger = fresh_ledger(configs[n], str(n))
        first = run_child(["--child", "duckdb", str(configs[n]), str(ledger)])
        second = run_child(["--child", "duckdb", str(configs[n]), str(ledger)])
        ledger.unlink(missing_ok=True)
        return first, second

    base, base2 = duck(args.small)
    print(
        f"{args.small:>12,} {base['seconds']:>10.2f} {'':>11} {'':>14} {'':>6} "
        f"{base['rss_mib']:>9.0f} {base2['seconds']:>7.2f}"
    )
    ok = True
    for n in sizes[1:]:
        res, res2 = duck(n)
        agg = duckdb_aggregate(files[n])
        marginal = res["seconds"] - base["seconds"]
        ratio = marginal / agg
        print(
            f"{n:>12,} {res['seconds']:>10.2f} {marginal:>11.2f} {agg:>14.3f} "
            f"{ratio:>6.1f} {res['rss_mib']:>9.0f} {res2['seconds']:>7.2f} "
            f"{res2['seconds'] - base2['seconds']:>9.2f}"
        )
        ok = ok and res["rss_mib"] < 1024 and marginal <= 3 * agg + 5.0
    if not args.no_spark:
        print("\nSpark local[2] (one driver process for all sizes; JVM memory not included)")
        res = run_child(
            [
                "--child",
                "spark",
                *(str(spark_configs[n]) for n in sizes),
                *(str(files[n]) for n in sizes),
            ]
        )
        small = res["runs"][0]["seconds"]
        print(
            f"{'rows':>12} {'release s':>10} {'marginal s':>11} {'1 aggregate s':>14} {'ratio':>6}"
        )
        for n, run in zip(sizes, res["runs"], strict=True):
            marg = run["seconds"] - small
            ratio = "" if n == args.small else f"{marg / run['aggregate']:>6.1f}"
            print(
                f"{n:>12,} {run['seconds']:>10.2f} {marg:>11.2f} {run['aggregate']:>14.3f} "
                f"{ratio:>6}"
            )
        print(f"driver peak RSS {res['rss_mib']:.0f} MiB")
    print(
        "\ntarget: marginal <= 3 x aggregate + 5 s and peak < 1 GiB (DuckDB): "
        + ("met" if ok else "NOT met")
    )
    if not args.keep:
        for path in files.values():
            path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
