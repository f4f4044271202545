"""End to end at m = 100 … 1,000 statistics: ``distpriv release`` and ``distpriv verify`` on a
resampled Adult Parquet table, against one DuckDB pass in the same run.

Used by ``python -m benchmarks.bench_many_stats --release`` (see that module's docstring).

Setting. The bundled Adult table (45,222 rows) resampled with replacement (numpy seed 0) to
``rows`` rows, written as Parquet in a temporary directory (never committed); the released
table is 1,000 rows of Adult (pandas ``sample``, seed 1), ``subset_size = 1000``; the secret
is the share of incomes above $50K, 0.45 against 0.55; ε = 1, δ = 1e-3; ``expm-g`` (the
``calib`` work decides how every other mechanism scales). Three kinds of m statistics:

* ``histogram``: ``[query] histogram = {column = "fnlwgt", bins = m − 2, range = [13492,
  500000]}`` — m − 2 bins and the two outer cells (m disjoint counts);
* ``shares``: m cumulative shares ``count_if(fnlwgt <= t_j)``, t_j the Adult quantiles;
* ``averages``: m conditional averages ``avg(CASE WHEN fnlwgt >= t_j THEN hours_per_week
  ELSE 0 END)``.

Measured, each in a fresh subprocess (CPU of the process, DuckDB's threads included; peak
resident memory ``ru_maxrss``): ``release --no-ledger`` and ``verify`` of the configuration
(default budget; if that is refused for memory, again with the largest ``--max-samples`` the
refusal accepts, said in the output); the baseline, ONE DuckDB pass over the Parquet file
computing the m statistics per stratum and their per-stratum second moments::

    SELECT income = '>50K' AS s, count(*), sum(f_1), …, sum(f_m)            -- histogram
    SELECT s, count(*), sum(f_i), sum(f_i * f_j) (i ≤ j)                    -- the others

For the histogram's disjoint 0/1 cells Σ f_i f_j = δ_ij Σ f_i: the counts ARE the second
moments, and the first statement is the whole pass. For dense features the pass holds
m + m(m + 1)/2 aggregates, which DuckDB 2.0 cannot run as one statement past about 16,384
(m ≥ 180): it is split into statements of at most 2,048 aggregates, of which at most
``sample`` are run and the CPU extrapolated by the statement count (said in the output), and
the ratio is also given against the scan of the statistics alone (a lower bound on any pass).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

KINDS = ("histogram", "shares", "averages")
LO, HI = 13492, 500000
MAX_AGGREGATES = 2048


def make_adult(directory: Path, rows: int) -> tuple[Path, Path]:
    """The resampled modelling table and the 1,000-row released table (Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from distpriv.datasets.adult import load_adult

    adult = load_adult()
    rng = np.random.default_rng(0)
    model = directory / f"adult_{rows}.parquet"
    if not model.exists():
        idx = rng.integers(0, len(adult), rows)
        frame = adult.iloc[idx].reset_index(drop=True)
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), model)
    released = directory / "released.parquet"
    if not released.exists():
        sample = adult.sample(1000, random_state=1).reset_index(drop=True)
        pq.write_table(pa.Table.from_pandas(sample, preserve_index=False), released)
    return model, released


def _thresholds(m: int) -> list[int]:
    from distpriv.datasets.adult import load_adult

    values = load_adult()["fnlwgt"].to_numpy()
    return [int(v) for v in np.quantile(values, np.linspace(0.001, 0.999, m))]


def statistics(kind: str, m: int) -> dict[str, str]:
    """The [query] table of a kind (the histogram as its expanded cells)."""
    if kind == "histogram":
        from distpriv.modeling.cells import histogram_cells

        return histogram_cells("fnlwgt", bins=m - 2, range=[LO, HI]).query()
    ts = _thresholds(m)
    if kind == "shares":
        return {f"le{j}": f"count_if(fnlwgt <= {t})" for j, t in enumerate(ts)}
    avg = "avg(CASE WHEN fnlwgt >= {} THEN hours_per_week ELSE 0 END)"
    return {f"avg{j}": avg.format(t) for j, t in enumerate(ts)}


def row_features(kind: str, m: int) -> list[str]:
    """The per-row features whose sums the statistics are (for the baseline)."""
    from distpriv.modeling.queries import Query

    return [s.row_expression or "" for s in Query(statistics(kind, m)).statistics]


#: [mechanism] calibration of the configurations ("" for the default, exact), set by the
#: command line (``--calibration``).
CALIBRATION = {"value": ""}
#: Wall seconds a command may take before it is stopped and reported as such.
TIMEOUT = {"value": 3600.0}


def write_config(directory: Path, kind: str, m: int, model: Path, released: Path) -> Path:
    if kind == "histogram":
        query = f'histogram = {{ column = "fnlwgt", bins = {m - 2}, range = [{LO}, {HI}] }}\n'
    else:
        query = "".join(f'{k} = "{v}"\n' for k, v in statistics(kind, m).items())
    path = directory / f"{kind}_{m}_{model.stem}.toml"
    path.write_text(
        f'title = "bench {kind} m={m}"\n[data]\nmodel = "{model}"\nrelease = "{released}"\n'
        f"allow_overlap = true\n[query]\n{query}"
        "[secret]\npredicate = \"income = '>50K'\"\nvalues = [0.45, 0.55]\n"
        "[model]\nsubset_size = 1000\n"
        '[mechanism]\nname = "expm-g"\nepsilon = 1.0\ndelta = 1e-3\n'
        + (f'calibration = "{CALIBRATION["value"]}"\n' if CALIBRATION["value"] else "")
    )
    return path


def _usage() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return time.process_time(), ru.ru_maxrss / 1024.0


def child_command(args: list[str]) -> dict:
    """Run one distpriv command in this process; CPU, peak RSS, exit status, last line."""
    import contextlib
    import io

    from distpriv.cli import main

    cpu0, _ = _usage()
    err = io.StringIO()
    out = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    cpu1, rss = _usage()
    lines = [ln for ln in (out.getvalue() + err.getvalue()).splitlines() if ln.strip()]
    return {"cpu": cpu1 - cpu0, "rss_mb": rss, "rc": rc, "last": lines[-1][:300] if lines else ""}


def child_pass(path: str, kind: str, m: int, sample: int, *, moments: bool = True) -> dict:
    """The baseline: one DuckDB pass of the statistics (and their second moments)."""
    from distpriv.modeling.engines import locked_connection

    conn = locked_connection([str(Path(path).resolve())])
    feats = row_features(kind, m)
    aggs = [f"sum(d{j})" for j in range(m)]
    if moments and kind != "histogram":  # disjoint 0/1 cells: counts are the second moments
        aggs += [f"sum(d{i} * d{j})" for i in range(m) for j in range(i, m)]
    chunks = [aggs[i : i + MAX_AGGREGATES] for i in range(0, len(aggs), MAX_AGGREGATES)]
    picked = list(range(len(chunks)))
    if len(chunks) > sample:
        picked = sorted({round(float(i)) for i in np.linspace(0, len(chunks) - 1, sample)})
    literal = "'" + str(Path(path).resolve()).replace("'", "''") + "'"
    cpu0, _ = _usage()
    for i in picked:
        used = sorted({int(t) for a in chunks[i] for t in re.findall(r"d(\d+)", a)})
        cols = ", ".join(f"{feats[j]} AS d{j}" for j in used)
        conn.execute(
            f"WITH f AS (SELECT CAST(income = '>50K' AS INTEGER) AS s, {cols} "
            f"FROM read_parquet({literal})) "
            f"SELECT s, count(*), {', '.join(chunks[i])} FROM f GROUP BY s"
        ).fetchall()
    cpu1, rss = _usage()
    scale = len(chunks) / len(picked)
    return {
        "cpu": (cpu1 - cpu0) * scale,
        "rss_mb": rss,
        "statements": len(chunks),
        "run": len(picked),
    }


def _run(args: list[str]) -> dict:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_many_stats", "--child", *args],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            check=False,
            timeout=TIMEOUT["value"],
        )
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {TIMEOUT['value']:.0f} s wall (a loaded machine)"}
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


_SKIPPED = {"cpu": float("nan"), "rss_mb": float("nan"), "rc": 0, "last": "not run"}


def _one(rows: int, kind: str, m: int, paths: tuple[Path, Path, Path], sample: int, verify: bool):
    directory, model, released = paths
    cfg = write_config(directory, kind, m, model, released)
    # The command line travels as one JSON argument (argparse would read its flags).
    rel = _run(["command", json.dumps(["release", str(cfg), "--no-ledger", "--quiet"])])
    ver = _run(["command", json.dumps(["verify", str(cfg)])]) if verify else _SKIPPED
    fits = re.search(r"--max-samples (\d+) or less", ver.get("last", ""))
    if fits:  # refused for memory at the default budget: the largest budget it accepts
        budget = fits.group(1)
        ver = _run(["command", json.dumps(["verify", str(cfg), "--max-samples", budget])])
        ver["last"] = f"(--max-samples {budget}) " + ver.get("last", "")
    base = _run(["pass", str(model), kind, str(m), str(sample)])
    scan = base if kind == "histogram" else _run(["pass1", str(model), kind, str(m), "1"])
    bad = [r["error"] for r in (rel, ver, base, scan) if "error" in r]
    if bad:
        return False, f"{rows:>9,} {kind:>9} {m:>5} | CRASH {bad}"
    extra = (
        f" (pass: {base['run']} of {base['statements']} statements, extrapolated)"
        if base["run"] < base["statements"]
        else ""
    )
    if rel["rc"] != 0:
        extra += f" RELEASE rc {rel['rc']}: {rel['last']}"
    line = (
        f"{rows:>9,} {kind:>9} {m:>5} | {rel['cpu']:8.1f} {rel['rss_mb']:5.0f} | "
        f"{ver['cpu']:8.1f} {ver['rss_mb']:5.0f} | {base['cpu']:7.2f} "
        f"{scan['cpu']:6.2f} | {rel['cpu'] / base['cpu']:8.2f} "
        f"{rel['cpu'] / scan['cpu']:8.2f} | rc {ver['rc']}: {ver['last'][:160]}{extra}"
    )
    return rel["rc"] == 0, line


def run(rows_list: list[int], ms: list[int], kinds: list[str], sample: int, say, verify: bool):
    """The end-to-end table; False if a command crashed or a release failed."""
    import tempfile

    ok = True
    say(
        f"{'rows':>9} {'kind':>9} {'m':>5} | {'release':>8} {'MB':>5} | {'verify':>8} {'MB':>5} | "
        f"{'pass':>7} {'scan':>6} | {'rel/pass':>8} {'rel/scan':>8} | verify outcome"
    )
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for rows in rows_list:
            model, released = make_adult(directory, rows)
            for kind in kinds:
                for m in ms:
                    good, line = _one(rows, kind, m, (directory, model, released), sample, verify)
                    ok = ok and good
                    say(line)
    return ok
