"""The config pipeline in the engine.

* the same rows in another order hit the same ledger account;
* no public output (JSON, HTML, terminal) carries an unkeyed hash of the released or the
  modelling table, hashed here several independent ways;
* a config naming a Spark table, or a DuckDB database file and table, releases the same
  values as the same data read from CSV by DuckDB (insecure seed);
* the config path never materialises a table above the row limit in pandas
  (``.df()``/``fetchdf``/``toPandas`` guarded).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from distpriv.modeling import tables
from distpriv.pipeline import run_release
from distpriv.pipeline.ledger import Ledger
from distpriv.pipeline.stages.data import fingerprint
from distpriv.report.html import render_html
from distpriv.report.text import render_release

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning")

ROOT = Path(__file__).resolve().parents[2]
HOSPITAL = ROOT / "examples" / "hospital"


def _hospital(tmp_path: Path, **data: str) -> Path:
    """A copy of the hospital example; ``data`` overrides keys of its [data] table."""
    dest = tmp_path / "hospital"
    shutil.copytree(HOSPITAL, dest)
    config = dest / "hospital.toml"
    text = config.read_text()
    for key, value in data.items():
        lines = [
            f'{key} = "{value}"' if line.startswith(f"{key} = ") else line
            for line in text.splitlines()
        ]
        text = "\n".join(lines) + "\n"
    config.write_text(text)
    return config


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_release(*args, **kwargs)


def _keyed_ledger(path: Path) -> Ledger:
    led = Ledger(path)
    if getattr(led, "identity_key", None) is None:  # until the ledger keeps its own key
        led.identity_key = os.urandom(32)
    return led


def test_same_rows_in_another_order_hit_the_same_ledger_account(tmp_path):
    config = _hospital(tmp_path)
    led = _keyed_ledger(tmp_path / "curator.ledger")
    first = quiet(config, ledger=led, insecure_seed=1)
    reversed_rows = pd.read_csv(config.parent / "release.csv").iloc[::-1]
    shuffled = tmp_path / "reversed.csv"
    reversed_rows.to_csv(shuffled, index=False)
    second = quiet(config, ledger=led, data=shuffled, insecure_seed=2)
    a, b = first.public["ledger"], second.public["ledger"]
    assert a["account"] and b["account"] == a["account"]  # keyed account, not a table hash
    assert (a["n_releases"], b["n_releases"]) == (1, 2)  # composed with the first
    # The same values (another order) give the same statistics, so a third of other rows
    # opens another account.
    other = tmp_path / "other.csv"
    pd.read_csv(config.parent / "test.csv").iloc[:50].to_csv(other, index=False)
    third = quiet(config, ledger=led, data=other, insecure_seed=3)
    assert third.public["ledger"]["account"] != a["account"]
    assert third.public["ledger"]["n_releases"] == 1


def _digests(blob: bytes) -> list[str]:
    return [hashlib.sha256(blob).hexdigest(), hashlib.md5(blob).hexdigest()]


def _unkeyed_hashes(frame: pd.DataFrame, path: Path) -> set[str]:
    """Hashes anyone could compute from a guess of the table, several independent ways."""
    out: set[str] = set()
    out.update(_digests(path.read_bytes()))
    for index in (False, True):
        for term in ("\n", "\r\n"):
            out.update(_digests(frame.to_csv(index=index, lineterminator=term).encode()))
        buf = io.BytesIO()
        frame.to_parquet(buf, index=index)
        out.update(_digests(buf.getvalue()))
    out.add(fingerprint(frame))  # the previous data identity (sha256 of to_csv)
    rows = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    out.add(str(int(rows.astype(np.uint64).sum(dtype=np.uint64))))
    out.update(_digests(rows.tobytes()))
    con = duckdb.connect()
    con.register("t", frame)
    cols = ", ".join(f'"{c}"' for c in frame.columns)
    (total,) = con.execute(f"SELECT sum(hash({cols})) FROM t").fetchone()
    out.update({str(int(total)), format(int(total) % 2**64, "x")})
    return out


def test_no_public_output_holds_an_unkeyed_hash_of_the_tables(tmp_path, capsys):
    from distpriv.cli import main

    config = _hospital(tmp_path)
    folder = config.parent
    secrets = set()
    for name in ("release.csv", "model.csv"):
        secrets |= _unkeyed_hashes(pd.read_csv(folder / name), folder / name)
    led = _keyed_ledger(tmp_path / "curator.ledger")
    outcome = quiet(config, ledger=led, include_true=True)
    public_json = json.dumps(outcome.public)
    outputs = {
        "json": public_json,
        "html": render_html(outcome.public),
        "terminal": render_release(outcome.public, outcome.private),
    }
    # And the CLI itself (no ledger): its terminal output and its public JSON file.
    out_file = tmp_path / "public.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["release", str(config), "--out", str(out_file)]) == 0
        assert main(["release", str(config), "--json"]) == 0
    outputs["cli"] = capsys.readouterr().out
    outputs["cli-json"] = out_file.read_text()
    assert "hmac-sha256:" in public_json and outcome.public["ledger"] is not None
    for where, text in outputs.items():
        low = text.lower()
        for h in secrets:
            # Full hashes and the 16-character prefixes the terminal shows.
            probe = h if not all(c in "0123456789abcdef" for c in h) else h[:16]
            assert probe.lower() not in low, (where, h)
    # The key of the fingerprints is private: only the PRIVATE diagnostics hold it (no
    # ledger key) and never the public report.
    plain = quiet(config, ledger=False)
    assert plain.private["identity_key"] not in json.dumps(plain.public)
    assert outcome.private["identity_key"] is None  # the ledger keeps its key


def _values(outcome) -> np.ndarray:
    return np.array([s["value"] for s in outcome.public["statistics"]])


def test_duckdb_database_table_releases_the_same_values(tmp_path):
    config = _hospital(tmp_path)
    folder = config.parent
    db = folder / "hospital.duckdb"
    con = duckdb.connect(str(db))
    for name in ("model", "release"):
        con.register("f", pd.read_csv(folder / f"{name}.csv"))
        con.execute(f"CREATE TABLE {name}_rows AS SELECT * FROM f")
        con.unregister("f")
    con.close()
    via_db = _hospital(
        tmp_path / "db", model=f"duckdb:{db}#model_rows", release="duckdb:hospital.duckdb#x"
    )
    shutil.copy(db, via_db.parent / "hospital.duckdb")
    text = via_db.read_text().replace(
        "duckdb:hospital.duckdb#x", "duckdb:hospital.duckdb#release_rows"
    )
    via_db.write_text(text)
    a, b = quiet(config, insecure_seed=5), quiet(via_db, insecure_seed=5)
    np.testing.assert_allclose(_values(b), _values(a), rtol=1e-9)
    assert b.private["model"]["stratum_sizes"] == a.private["model"]["stratum_sizes"]
    # A table that is not there is a one-line error naming the source.
    bad = via_db.read_text().replace("#model_rows", "#nope")
    via_db.write_text(bad)
    with pytest.raises(Exception, match=r"\[data\] model: cannot read table 'nope'"):
        quiet(via_db, insecure_seed=5)


def _guard_duckdb(monkeypatch, limit: int, seen: list[int]) -> None:
    """Make every DuckDB connection's pandas/numpy fetch raise above ``limit`` rows."""
    real_connect = duckdb.connect

    def check(n: int, how: str) -> None:
        seen.append(n)
        if n > limit:
            raise AssertionError(f"{how} fetched {n} rows into Python (limit {limit})")

    class Rel:
        def __init__(self, rel):
            self._rel = rel

        def __getattr__(self, name):
            return getattr(self._rel, name)

        def _frame(self, how):
            frame = self._rel.df()
            check(len(frame), how)
            return frame

        def df(self, *a, **k):
            return self._frame(".df()")

        fetchdf = to_df = fetch_df = df

        def fetchnumpy(self):
            out = self._rel.fetchnumpy()
            check(max((len(v) for v in out.values()), default=0), "fetchnumpy")
            return out

    class Conn:
        def __init__(self, conn):
            self._conn = conn

        def __getattr__(self, name):
            return getattr(self._conn, name)

        def sql(self, *a, **k):
            return Rel(self._conn.sql(*a, **k))

        query = sql

        def execute(self, *a, **k):
            self._conn.execute(*a, **k)
            return self

        def df(self, *a, **k):
            frame = self._conn.df()
            check(len(frame), "execute().df()")
            return frame

        fetchdf = fetch_df = df

    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: Conn(real_connect(*a, **k)))


@pytest.mark.parametrize(
    ("mechanism", "missing"), [("expm-g", "error"), ("auto", "drop"), ("eigm", "drop")]
)
def test_config_path_never_loads_a_table_above_the_row_limit(
    tmp_path, monkeypatch, mechanism, missing
):
    config = _hospital(tmp_path, model="model.parquet", missing=missing)
    folder = config.parent
    model = pd.read_csv(folder / "model.csv")
    if missing == "drop":
        model.loc[[3, 7], "weight"] = np.nan
    model.to_parquet(folder / "model.parquet", index=False)
    config.write_text(config.read_text().replace('name = "expm-g"', f'name = "{mechanism}"'))
    limit = 200  # the model table has 3,000 rows, the released one 50
    monkeypatch.setattr(tables, "MAX_IN_MEMORY_ROWS", limit)
    seen: list[int] = []
    _guard_duckdb(monkeypatch, limit, seen)
    outcome = quiet(config, insecure_seed=1, ledger=_keyed_ledger(tmp_path / "l.ledger"))
    assert len(outcome.public["statistics"]) == 3
    assert max(seen, default=0) <= 50  # at most the released rows ever left the engine
    if missing == "drop":
        assert outcome.private["model"]["diagnostics"]["missing"]["rows_dropped"] == 2


def test_spark_table_config_releases_the_same_values_as_duckdb(spark, tmp_path, monkeypatch):
    config = _hospital(tmp_path)
    folder = config.parent
    spark.createDataFrame(pd.read_csv(folder / "model.csv")).createOrReplaceTempView(
        "hospital_model"
    )
    spark.createDataFrame(pd.read_csv(folder / "release.csv")).createOrReplaceTempView(
        "hospital_release"
    )
    via_spark = _hospital(
        tmp_path / "spark", model="spark:hospital_model", release="spark:hospital_release"
    )
    a = quiet(config, insecure_seed=11)
    # No table above the row limit reaches pandas through Spark either.
    from pyspark.sql import DataFrame

    real = DataFrame.toPandas
    seen: list[int] = []

    def guarded(self, *args, **kwargs):
        frame = real(self, *args, **kwargs)
        seen.append(len(frame))
        if len(frame) > 200:
            raise AssertionError(f"toPandas fetched {len(frame)} rows")
        return frame

    monkeypatch.setattr(DataFrame, "toPandas", guarded)
    monkeypatch.setattr(tables, "MAX_IN_MEMORY_ROWS", 200)
    b = quiet(via_spark, insecure_seed=11)
    np.testing.assert_allclose(_values(b), _values(a), rtol=1e-9)
    assert b.private["model"]["diagnostics"]["engine"] == "spark"
    assert b.private["model"]["stratum_sizes"] == a.private["model"]["stratum_sizes"]
    assert max(seen, default=0) <= 50
    # (The released table's identity through both engines: tests/modeling/test_identity.py.)


def test_unknown_spark_table_is_a_one_line_error(spark, tmp_path):
    config = _hospital(tmp_path, model="spark:no_such_table")
    with pytest.raises(Exception, match=r"\[data\] model: cannot read Spark table"):
        quiet(config, insecure_seed=1)
    config = _hospital(tmp_path / "b", model="spark:bad name; DROP")
    with pytest.raises(Exception, match="must be identifiers joined by dots"):
        quiet(config, insecure_seed=1)


def test_huge_values_are_never_spliced_into_sql(tmp_path):
    """A value of 1e308 used to end in 'Binder Error: Referenced column "inf"' (a number
    spliced into SQL text); now the shift is a typed literal and the error says what is
    wrong with the data."""
    config = _hospital(tmp_path)
    model = pd.read_csv(config.parent / "model.csv")
    model.loc[model.index[:100], "height"] = 1e308
    model.to_csv(config.parent / "model.csv", index=False)
    with pytest.raises(Exception) as info:
        quiet(config, insecure_seed=1)
    assert "Binder" not in str(info.value) and '"inf"' not in str(info.value)
    assert "finite" in str(info.value) or "double precision" in str(info.value)


def test_a_first_release_models_the_table_once_a_second_builds_the_joint_model(
    tmp_path, monkeypatch
):
    """The ledger composes a first release on the model it was calibrated on (no second
    aggregate over the modelling table); a later release needs the joint model (one more)."""
    from distpriv.modeling import model as model_module

    calls = []
    real = model_module.table_moments

    def counted(table, features, *args, **kwargs):
        calls.append(len(features))
        return real(table, features, *args, **kwargs)

    monkeypatch.setattr(model_module, "table_moments", counted)
    config = _hospital(tmp_path)
    first = quiet(config, insecure_seed=1)  # the default ledger next to the config
    assert first.public["ledger"]["n_releases"] == 1
    m = len(first.public["statistics"])
    assert calls == [m]
    second = quiet(config, insecure_seed=2)
    assert second.public["ledger"]["n_releases"] == 2
    assert calls == [m, m, 2 * m]  # its own model, then the joint model of both releases


@pytest.mark.parametrize("n_rows", [50_000, 1_200_000])
def test_overlap_and_duplicate_rate_in_one_scan_match_pandas(tmp_path, n_rows):
    """k (released rows found in the modelling table) is exact; the duplicate rate is exact
    below 400,000 rows and a hash-partition sample estimate above, checked against pandas'
    exact count (the released table has fewer columns: rows are compared on shared ones)."""
    from distpriv.modeling.tables import Table
    from distpriv.pipeline.stages.data import _hash_mask, table_overlap

    rng = np.random.default_rng(5)
    base = rng.integers(0, 10**9, size=n_rows)
    dup = rng.random(n_rows) < 0.3  # about 30 % of rows copy an earlier row's key
    base[dup] = base[rng.integers(0, n_rows, size=n_rows)[dup]]
    model = pd.DataFrame({"a": base, "b": base % 7, "extra": rng.random(n_rows)})
    released = pd.concat(
        [model[["a", "b"]].iloc[:30], pd.DataFrame({"a": [-1, -2], "b": [0, 1]})]
    ).reset_index(drop=True)
    path = tmp_path / "model.parquet"
    model.to_parquet(path, index=False)
    k, rate = table_overlap(Table(path), Table(released))
    assert k == 30
    exact = model.duplicated(["a", "b"], keep=False).mean()
    assert _hash_mask(n_rows) == (0 if n_rows < 400_000 else 3)  # 1.2M rows: a quarter
    if _hash_mask(n_rows) == 0:
        assert rate == pytest.approx(exact, abs=1e-12)
    else:
        share = 1 / (_hash_mask(n_rows) + 1)  # rows sampled, by the hash
        se = np.sqrt(exact * (1 - exact) / (n_rows * share))
        assert abs(rate - exact) < 5 * se + 0.01, (rate, exact)


def test_overlap_through_spark_equals_duckdb(spark):
    from distpriv.modeling.tables import Table
    from distpriv.pipeline.stages.data import table_overlap

    rng = np.random.default_rng(6)
    a = rng.integers(0, 300, size=2_000)  # many chance duplicates
    model = pd.DataFrame({"a": a, "b": (a % 5).astype(float), "s": [f"x{v % 3}" for v in a]})
    released = pd.concat([model.iloc[:7], pd.DataFrame({"a": [-1], "b": [0.0], "s": ["y"]})])
    through_duckdb = table_overlap(Table(model), Table(released.reset_index(drop=True)))
    through_spark = table_overlap(
        Table(spark.createDataFrame(model)), Table(spark.createDataFrame(released))
    )
    assert through_duckdb[0] == through_spark[0] == 7
    exact = model.duplicated(keep=False).mean()
    assert through_duckdb[1] == pytest.approx(exact, abs=1e-12)
    assert through_spark[1] == pytest.approx(exact, abs=1e-12)
