"""Benchmark: the analytic query model from a 10⁸-row Parquet table, pushed down to DuckDB.

Usage::

    python -m benchmarks.bench_scale [--rows 100000000] [--baseline-rows 10000000]
                                     [--workdir /tmp] [--keep]

Setting: the income model of Chen & Ohrimenko 2023, §5.1 (five linear
statistics of 100-row datasets, secret ``income = '>50K'`` at 0.45 vs 0.55) built with
``model_query(..., method="analytic")`` from Parquet files made by resampling the rows of
the bundled Adult data (uniformly with replacement, a hash of the row number picking the
Adult row), written by DuckDB ``COPY … TO`` in row groups (streamed, bounded memory), with
only the columns the model needs.

Each measurement runs in a fresh subprocess and reports its wall time and peak resident
memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``):

1. ours at ``--rows`` (default 10⁸): one aggregate query over the Parquet file;
2. ours and the previous implementation at ``--baseline-rows`` (default 10⁷), printed as
   ratios. The previous implementation (kept here as the baseline) materialised the whole
   file as a pandas DataFrame, evaluated each statistic's row expression with one
   ``ORDER BY rowid`` query, and computed ``stratum_moments`` per secret value.

Checks (exit status 1 if any fails): at ``--rows``, the model's means and covariances equal
those recomputed from an independent plain DuckDB aggregate on the same file (built-in
``avg`` and ``covar_pop`` per stratum), to 1e-9 relative; at ``--baseline-rows``, ours
equals the baseline to 1e-9 relative. The generated files are deleted at the end unless
``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ._common import ROOT

SUBSET_SIZE = 100
PREDICATE = "income = '>50K'"
VALUES = (0.45, 0.55)
STATISTICS = {
    "avg_age": "avg(age)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}
COLUMNS = ("age", "education_num", "marital_status", "sex", "hours_per_week", "income")
TOL = 1e-9


def generate(path: Path, rows: int) -> float:
    """Write ``rows`` resampled Adult rows to ``path`` (Parquet); returns seconds taken."""
    import duckdb

    from distpriv.datasets import load_adult

    adult = load_adult()[list(COLUMNS)].reset_index(drop=True)
    adult["idx"] = np.arange(len(adult), dtype=np.int64)
    start = time.perf_counter()
    conn = duckdb.connect()
    conn.execute("SET memory_limit = '1GB'")
    conn.execute("SET preserve_insertion_order = false")
    conn.register("adult", adult)
    cols = ", ".join(f"a.{c}" for c in COLUMNS)
    conn.execute(
        f"COPY (SELECT {cols} FROM range({int(rows)}) AS r(i) "
        f"JOIN adult AS a ON a.idx = hash(r.i + 20231) % {len(adult)}) "
        f"TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)"
    )
    conn.close()
    return time.perf_counter() - start


def child(mode: str, path: str) -> None:
    """Run one measurement in this (fresh) process and print a JSON line."""
    warnings.simplefilter("ignore")
    # Imports are outside the timing (the same for both paths); their memory is not.
    import duckdb  # noqa: F401

    from distpriv.modeling import ProportionSecret, model_query

    import_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if mode == "ours":
        model = model_query(
            path,
            STATISTICS,
            ProportionSecret(PREDICATE, values=list(VALUES)),
            subset_size=SUBSET_SIZE,
            method="analytic",
        )
        means, covs = model.means, model.covariances
    else:
        means, covs = baseline(path)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mib": peak_kib / 1024,
                "import_mib": import_kib / 1024,
                "means": means.tolist(),
                "covs": covs.tolist(),
            }
        )
    )


def baseline(path: str) -> tuple[np.ndarray, np.ndarray]:
    """The previous implementation: whole table in pandas, per-statistic ORDER BY queries."""
    import duckdb

    from distpriv.modeling import stratum_moments

    frame = duckdb.connect().execute("SELECT * FROM read_parquet(?)", [path]).df()
    conn = duckdb.connect()
    conn.register("data", frame.assign(__rowid=np.arange(len(frame), dtype=np.int64)))
    rows = [
        "age",
        "education_num",
        "coalesce(CAST((marital_status = 'Never-married') AS BOOLEAN), false)",
        "coalesce(CAST((sex = 'Female') AS BOOLEAN), false)",
        "hours_per_week",
    ]
    feats = np.stack(
        [
            conn.sql(f"SELECT CAST(({r}) AS DOUBLE) AS v FROM data ORDER BY __rowid").fetchnumpy()[
                "v"
            ]
            for r in rows
        ],
        axis=1,
    )
    mask = conn.sql(
        f"SELECT coalesce(CAST(({PREDICATE}) AS BOOLEAN), false) AS v FROM data ORDER BY __rowid"
    ).fetchnumpy()["v"]
    mask = np.asarray(mask, dtype=bool)
    scale = np.array([1 / SUBSET_SIZE, 1 / SUBSET_SIZE, 1.0, 1.0, 1 / SUBSET_SIZE])
    means, covs = [], []
    for p in VALUES:
        k = int(np.floor(p * SUBSET_SIZE + 0.5 + 1e-9))
        ma, ca = stratum_moments(feats[mask], k)
        mb, cb = stratum_moments(feats[~mask], SUBSET_SIZE - k)
        means.append((ma + mb) * scale)
        covs.append((ca + cb) * np.outer(scale, scale))
    return np.stack(means), np.stack(covs)


def independent(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The model's moments from DuckDB's own avg/covar_pop per stratum (a different algorithm)."""
    import duckdb

    feats = [
        "CAST(age AS DOUBLE)",
        "CAST(education_num AS DOUBLE)",
        "CAST(marital_status = 'Never-married' AS DOUBLE)",
        "CAST(sex = 'Female' AS DOUBLE)",
        "CAST(hours_per_week AS DOUBLE)",
    ]
    m = len(feats)
    select = ["count(*)"] + [f"avg(f{j})" for j in range(m)]
    select += [f"covar_pop(f{i}, f{j})" for i in range(m) for j in range(m)]
    inner = ", ".join(f"{f} AS f{j}" for j, f in enumerate(feats))
    sql = (
        f"SELECT s, {', '.join(select)} FROM (SELECT {PREDICATE} AS s, {inner} "
        f"FROM read_parquet('{path}')) GROUP BY s"
    )
    got = {bool(r[0]): r[1:] for r in duckdb.connect().execute(sql).fetchall()}
    scale = np.array([1 / SUBSET_SIZE, 1 / SUBSET_SIZE, 1.0, 1.0, 1 / SUBSET_SIZE])
    means, covs = [], []
    for p in VALUES:
        k = int(np.floor(p * SUBSET_SIZE + 0.5 + 1e-9))
        mean, cov = np.zeros(m), np.zeros((m, m))
        for stratum, take in ((True, k), (False, SUBSET_SIZE - k)):
            row = got[stratum]
            big_n = row[0]
            mu = np.array(row[1 : 1 + m])
            sigma = np.array(row[1 + m :]).reshape(m, m)
            mean += take * mu
            cov += take * (big_n - take) / (big_n - 1) * sigma
        means.append(mean * scale)
        covs.append(cov * np.outer(scale, scale))
    return np.stack(means), np.stack(covs)


def measure(mode: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", __spec__.name, "--child", mode, "--path", str(path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def max_rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--baseline-rows", type=int, default=10_000_000)
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--child", choices=["ours", "baseline"], help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.path)
        return 0
    if args.rows < 1000 or args.baseline_rows < 1000:
        parser.error("--rows and --baseline-rows must be at least 1000")
    work = Path(args.workdir)
    big = work / f"distpriv_scale_{args.rows}_{os.getpid()}.parquet"
    small = work / f"distpriv_scale_{args.baseline_rows}_{os.getpid()}.parquet"
    ok = True
    try:
        secs = generate(big, args.rows)
        size = big.stat().st_size / 2**20
        print(f"generated {args.rows:,} rows ({size:,.0f} MiB Parquet) in {secs:.1f} s")
        ours = measure("ours", big)
        print(
            f"ours, {args.rows:,} rows: {ours['seconds']:.1f} s, "
            f"peak memory {ours['peak_mib']:,.0f} MiB (after imports: "
            f"{ours['import_mib']:,.0f} MiB)"
        )
        ind_means, ind_covs = independent(big)
        err_m, err_c = max_rel(ours["means"], ind_means), max_rel(ours["covs"], ind_covs)
        good = err_m <= TOL and err_c <= TOL
        ok &= good
        print(
            f"  vs independent DuckDB avg/covar_pop: means rel. diff {err_m:.1e}, "
            f"covariances {err_c:.1e} ({'ok' if good else 'FAIL'}, tolerance {TOL:g})"
        )
        if not args.keep:
            big.unlink()

        secs = generate(small, args.baseline_rows)
        print(f"generated {args.baseline_rows:,} rows in {secs:.1f} s")
        new = measure("ours", small)
        old = measure("baseline", small)
        err_m, err_c = max_rel(new["means"], old["means"]), max_rel(new["covs"], old["covs"])
        good = err_m <= TOL and err_c <= TOL
        ok &= good
        print(f"{args.baseline_rows:,} rows:        time     peak memory")
        for label, r in (("previous (pandas)", old), ("ours (pushdown)", new)):
            print(
                f"  {label:18} {r['seconds']:8.1f} s  {r['peak_mib']:10,.0f} MiB "
                f"(imports {r['import_mib']:,.0f} MiB)"
            )
        print(
            f"  ratio previous/ours: time {old['seconds'] / new['seconds']:.1f}x, "
            f"memory {old['peak_mib'] / new['peak_mib']:.1f}x; moments rel. diff "
            f"{max(err_m, err_c):.1e} ({'ok' if good else 'FAIL'})"
        )
    finally:
        if not args.keep:
            for f in (big, small):
                f.unlink(missing_ok=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
