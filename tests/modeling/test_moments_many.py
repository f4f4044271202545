"""The strata's moments for hundreds of statistics: no statement grows as m².

References: the single aggregate statement (the path for few statistics, unchanged), and
numpy on the materialised table — exact integer arithmetic for integer-valued features (the
centred sums n·Σ(x − x̄)(x − x̄)ᵀ = n·Σxxᵀ − ΣxΣxᵀ in int64), two-pass float64 otherwise.
The data path at m = 200 (DuckDB crashed with SIGFPE past about 16,384 aggregates in one
query, m ≥ 177) runs in a subprocess, so a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distpriv
from distpriv.errors import ParameterError
from distpriv.modeling import moment_sums
from distpriv.modeling.expressions import parse_expression
from distpriv.modeling.moments import STREAM_FROM, streams, table_moments
from distpriv.modeling.tables import Table


def _frame(n: int, seed: int, *, nulls: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": rng.integers(0, 1000, n),
            "k": rng.integers(-50, 50, n),
            "y": rng.normal(3.0, 2.0, n),
            "g": rng.integers(0, 2, n),
        }
    )
    if nulls:
        frame["y"] = frame["y"].where(rng.random(n) > 0.01)
    return frame


def _integer_features(m: int) -> tuple[list[str], list]:
    """m integer-valued row features (cumulative shares, histogram cells, counts), as SQL
    and as numpy functions of the frame."""
    sql, fns = [], []
    for j in range(m):
        t = (j * 997) % 1000
        if j % 3 == 0:
            sql.append(f"CAST(x >= {t} AS INTEGER)")
            fns.append(lambda f, t=t: (f.x.to_numpy() >= t).astype(np.int64))
        elif j % 3 == 1:
            sql.append(f"CAST(x // 10 = {t // 10} AS INTEGER)")
            fns.append(lambda f, t=t: (f.x.to_numpy() // 10 == t // 10).astype(np.int64))
        else:
            sql.append(f"k * (x % {j % 7 + 2}) + {t}")
            fns.append(lambda f, j=j, t=t: f.k.to_numpy() * (f.x.to_numpy() % (j % 7 + 2)) + t)
    return sql, fns


def _float_features(m: int) -> tuple[list[str], list]:
    sql, fns = [], []
    for j in range(m):
        sql.append(f"CASE WHEN x % {m} = {j} THEN y ELSE 0 END + {j} * y")
        fns.append(lambda f, j=j: np.where(f.x.to_numpy() % m == j, f.y, 0.0) + j * f.y)
    return sql, fns


def _moments(frame: pd.DataFrame, sql: list[str], *, stream: bool, missing: str = "error"):
    feats = [parse_expression(s, what="f", kind="scalar") for s in sql]
    pred = parse_expression("g = 1", what="secret", kind="scalar")
    names = [f"s{j}" for j in range(len(sql))]
    return table_moments(Table(frame), feats, pred, names=names, missing=missing, stream=stream)


def _exact_reference(frame: pd.DataFrame, fns: list, rich: bool, *, powers: bool = True):
    """(mean, cross, p3, p4) of integer features, from exact int64/rational sums (p3, p4
    from Python integers, or two-pass float64 without ``powers``)."""
    rows = frame[frame.g.to_numpy() == (1 if rich else 0)]
    x = np.stack([fn(rows) for fn in fns], axis=1).astype(np.int64)
    n = x.shape[0]
    s1 = x.sum(axis=0)
    # Integer products summed in float64 BLAS are exact below 2^53 (checked); int64 matmul
    # has no BLAS and takes seconds at m = 800.
    assert n * float(np.max(np.abs(x))) ** 2 < 2.0**52
    gram = (x.astype(np.float64).T @ x.astype(np.float64)).astype(np.int64)
    cross = (n * gram - np.outer(s1, s1)) / n
    if not powers:
        c = x - s1 / n
        return s1 / n, cross, (c**3).sum(axis=0), (c**4).sum(axis=0)
    c = n * x - s1  # n·(x − x̄), exact
    p3 = np.array([sum(int(v) ** 3 for v in col) for col in c.T], dtype=float) / n**3
    p4 = np.array([sum(int(v) ** 4 for v in col) for col in c.T], dtype=float) / n**4
    return s1 / n, cross, p3, p4


def _float_reference(frame: pd.DataFrame, fns: list, rich: bool):
    rows = frame[frame.g.to_numpy() == (1 if rich else 0)]
    x = np.stack([fn(rows) for fn in fns], axis=1).astype(np.float64)
    mean = x.mean(axis=0)
    c = x - mean
    return mean, c.T @ c, (c**3).sum(axis=0), (c**4).sum(axis=0)


def _assert_same(got, ref, *, rtol: float) -> None:
    for stratum, want in zip((got.a, got.b), ref, strict=True):
        mean, cross, p3, p4 = want
        scale = np.sqrt(np.outer(np.diag(cross), np.diag(cross))) + 1e-300
        np.testing.assert_allclose(stratum.mean, mean, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(stratum.cross / scale, cross / scale, rtol=0, atol=rtol)
        np.testing.assert_allclose(stratum.p3, p3, rtol=rtol, atol=rtol * np.max(np.abs(p3)))
        np.testing.assert_allclose(stratum.p4, p4, rtol=rtol)


@pytest.mark.parametrize("m", [5, 30, 50])
def test_streamed_moments_are_the_single_statements_on_integer_features(m):
    """Identical to the one aggregate statement (the path for few statistics), bit for bit
    on integer-valued features, and equal to exact integer arithmetic."""
    frame = _frame(3000, m)
    sql, fns = _integer_features(m)
    one = _moments(frame, sql, stream=False)
    assert one.sql.count("GROUP BY") == 1  # one statement at m <= 50, as before
    streamed = _moments(frame, sql, stream=True)
    assert "GROUP BY" not in streamed.sql and "sum(" not in streamed.sql
    for got, want in ((streamed.a, one.a), (streamed.b, one.b)):
        assert got.count == want.count
        for field in ("mean", "cross", "p3", "p4", "cross3", "cross4"):
            a, b = getattr(got, field), getattr(want, field)
            if field.startswith("cross") and field != "cross":
                assert (a is None) == (b is None) == (m > 12)
            if a is not None:
                np.testing.assert_array_equal(a, b, err_msg=field)
    _assert_same(streamed, [_exact_reference(frame, fns, r) for r in (True, False)], rtol=1e-12)


@pytest.mark.parametrize("m", [5, 40])
def test_streamed_moments_on_float_features(m):
    frame = _frame(4000, 100 + m)
    sql, fns = _float_features(m)
    ref = [_float_reference(frame, fns, r) for r in (True, False)]
    for stream in (False, True):
        got = _moments(frame, sql, stream=stream)
        _assert_same(got, ref, rtol=1e-10)
    a, b = _moments(frame, sql, stream=True).a, _moments(frame, sql, stream=False).a
    if m <= 12:  # the third and fourth cross moments of the tight population set
        np.testing.assert_allclose(a.cross3, b.cross3, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(a.cross4, b.cross4, rtol=1e-9)


def test_aggregates_split_into_statements_of_bounded_size(monkeypatch):
    """The engine-side path (Spark's) never puts more than MAX_AGGREGATES in a statement,
    and its sums equal the single statement's."""
    frame = _frame(2000, 7)
    sql, _ = _integer_features(30)
    one = _moments(frame, sql, stream=False)
    monkeypatch.setattr(moment_sums, "MAX_AGGREGATES", 64)
    split = _moments(frame, sql, stream=False)
    statements = split.sql.split(";\n")
    assert len(statements) > 5
    assert all(s.count("sum(") <= 64 for s in statements)
    for got, want in ((split.a, one.a), (split.b, one.b)):
        np.testing.assert_array_equal(got.cross, want.cross)
        np.testing.assert_array_equal(got.p4, want.p4)


def test_thousand_statistics_against_numpy():
    m = 1000
    frame = _frame(1500, 3)
    isql, ifns = _integer_features(800)
    fsql, ffns = _float_features(200)
    table = Table(frame)
    assert streams(table, m) and not streams(table, STREAM_FROM - 1)
    got = _moments(frame, isql + fsql, stream=None)  # the default path at m = 1000: streamed
    assert got.how.startswith("one pass over the rows streamed")
    for stratum, rich in ((got.a, True), (got.b, False)):
        rows = frame[frame.g.to_numpy() == (1 if rich else 0)]
        assert stratum.count == len(rows)
        mean_i, cross_i, p3_i, p4_i = _exact_reference(frame, ifns, rich, powers=False)
        mean_f, cross_f, _, p4_f = _float_reference(frame, ffns, rich)
        np.testing.assert_allclose(stratum.mean, np.r_[mean_i, mean_f], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(stratum.cross[:800, :800], cross_i, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(stratum.cross[800:, 800:], cross_f, rtol=1e-10, atol=1e-8)
        x = np.stack([fn(rows) for fn in ifns + ffns], axis=1).astype(np.float64)
        c = x - x.mean(axis=0)
        np.testing.assert_allclose(stratum.cross, c.T @ c, rtol=1e-10, atol=1e-7)
        np.testing.assert_allclose(stratum.p4, np.r_[p4_i, p4_f], rtol=1e-10)
        np.testing.assert_allclose(stratum.p3[:800], p3_i, rtol=1e-10, atol=1e-6)
    # Only the per-feature probe reads the features as aggregates (m of them, not m²).
    assert "sum(" not in got.sql


@pytest.mark.parametrize("stream", [False, True])
def test_missing_values_and_refusals_are_the_same_on_both_paths(stream):
    frame = _frame(3000, 11, nulls=True)
    sql, _ = _float_features(30)
    with pytest.raises(ParameterError, match=r"column 'y' of the modelling data has \d+ missing"):
        _moments(frame, sql, stream=stream)
    dropped = _moments(frame, sql, stream=stream, missing="drop")
    kept = frame.dropna()
    assert dropped.missing.rows_dropped == len(frame) - len(kept)
    assert dropped.missing.counts == {"y": len(frame) - len(kept)}
    _, fns = _float_features(30)
    ref = [_float_reference(kept, fns, r) for r in (True, False)]
    _assert_same(dropped, ref, rtol=1e-10)
    # A statistic undefined on some complete row, named.
    bad = [*sql[:29], "1.0 / (x - 500)"]
    with pytest.raises(ParameterError, match=r"statistic 's29': \d+ row\(s\) give NULL, NaN or"):
        _moments(frame.dropna(), bad, stream=stream)
    with pytest.raises(ParameterError, match="satisfied by no row"):
        _moments(frame.assign(g=0), sql, stream=stream, missing="drop")


def test_release_and_verify_of_200_statistics_run_in_a_subprocess(tmp_path):
    """The CLI's data path at m = 200 (crashed with SIGFPE: exit 136, no message)."""
    rng = np.random.default_rng(1)

    def make(n: int) -> pd.DataFrame:
        return pd.DataFrame({"score": rng.integers(0, 200, n), "female": rng.integers(0, 2, n)})

    make(3000).to_csv(tmp_path / "model.csv", index=False)
    make(100).to_csv(tmp_path / "release.csv", index=False)
    lines = ['title = "200 cumulative shares"', "[data]", 'model = "model.csv"']
    lines += ['release = "release.csv"', "[query]"]
    lines += [f's{j:03d} = "avg(CASE WHEN score >= {j} THEN 1 ELSE 0 END)"' for j in range(200)]
    lines += ["[secret]", 'predicate = "female = 1"', "values = [0.4, 0.6]"]
    lines += ["[model]", "subset_size = 100", 'method = "analytic"']
    lines += ["[mechanism]", 'name = "expm-g"', "epsilon = 1.0", "delta = 1e-3"]
    config = tmp_path / "many.toml"
    config.write_text("\n".join(lines) + "\n")
    src = str(Path(distpriv.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = ["release", str(config), "--no-ledger", "--insecure-seed", "1", "--json"]
    proc = subprocess.run(
        [sys.executable, "-m", "distpriv", *argv],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    report = json.loads(proc.stdout)
    stats = report["statistics"]
    assert [s["name"] for s in stats] == [f"s{j:03d}" for j in range(200)]
    sds = np.array([s["noise_sd"] for s in stats])
    values = np.array([s["value"] for s in stats])
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(sds)) and np.all(sds > 0)
    # The same model and mechanism, then the data-level check (a small budget: the point is
    # that the process lives and reports).
    argv = ["verify", str(config), "--max-samples", "1000", "--json"]
    proc = subprocess.run(
        [sys.executable, "-m", "distpriv", *argv],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=600,
    )
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-2000:])
    check = json.loads(proc.stdout)["verification"]
    assert check["n_samples"] == 1000
    assert check["verdict"] in ("violation", "inconclusive", "no evidence")


def test_a_histograms_cells_take_the_sparse_product(monkeypatch):
    """One non-zero per row among 300 cells: XᵀX is taken sparse, and equals the dense
    product bit for bit and the exact integer sums."""
    frame = _frame(5000, 21)
    sql = [f"CAST(x // 3 = {j} AS INTEGER)" for j in range(300)]
    fns = [lambda f, j=j: (f.x.to_numpy() // 3 == j).astype(np.int64) for j in range(300)]
    from scipy import sparse

    made = []
    real = sparse.csr_array
    monkeypatch.setattr(sparse, "csr_array", lambda *a, **k: made.append(1) or real(*a, **k))
    got = _moments(frame, sql, stream=True)
    assert made  # the sparse product was used
    monkeypatch.setattr(moment_sums, "_SPARSE_SHARE", 0.0)
    made.clear()
    dense = _moments(frame, sql, stream=True)
    assert not made
    for a, b in ((got.a, dense.a), (got.b, dense.b)):
        np.testing.assert_array_equal(a.cross, b.cross)
    _assert_same(got, [_exact_reference(frame, fns, r) for r in (True, False)], rtol=1e-12)
