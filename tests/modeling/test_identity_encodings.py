"""Data identity across encodings: the same rows give one keyed fingerprint however read.

The same 100 rows (a yes/no column with NULLs, integers stored as floats, dates, text) as
a CSV file (whatever DuckDB's sniffer types), a Parquet file (booleans, nullable integers,
timestamps), a DuckDB table that holds every column as text, a pandas frame, an Arrow
table and a Spark frame: one data account. Changing one cell changes it.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from distpriv.modeling import MeanSecret, ProportionSecret
from distpriv.modeling.identity import multiset_fingerprint
from distpriv.modeling.secret_identity import secret_accounts
from distpriv.modeling.tables import as_table
from distpriv.pipeline.ledger.identity import data_account
from distpriv.pipeline.stages.data import open_table

KEY = bytes(range(1, 33))
N = 100


def _rows() -> dict[str, list]:
    rng = np.random.default_rng(5)
    smoker = [None if i % 17 == 0 else bool(b) for i, b in enumerate(rng.integers(0, 2, N))]
    weight = [None if i % 23 == 0 else int(w) for i, w in enumerate(rng.integers(45, 120, N))]
    visit = [dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 300, N)]
    town = [str(t) for t in rng.choice(["north", "south", "east"], N)]
    return {"smoker": smoker, "weight": weight, "visit": visit, "town": town}


def _csv(path) -> None:
    r = _rows()
    lines = ["smoker,weight,visit,town"]
    for s, w, v, t in zip(r["smoker"], r["weight"], r["visit"], r["town"], strict=True):
        yes = "" if s is None else ("yes" if s else "no")
        lines.append(f"{yes},{'' if w is None else f'{w}.0'},{v.isoformat()},{t}")
    path.write_text("\n".join(lines) + "\n")


def _pandas() -> pd.DataFrame:
    r = _rows()
    return pd.DataFrame(
        {
            "smoker": pd.array(r["smoker"], dtype="boolean"),
            "weight": pd.array(r["weight"], dtype="Int64"),
            "visit": pd.to_datetime(r["visit"]),
            "town": r["town"],
        }
    )


def _duckdb_text(path) -> None:
    """A DuckDB table whose every column is text (yes/no, '70.0', '2024-01-05')."""
    r = _rows()
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE visits (smoker VARCHAR, weight VARCHAR, visit VARCHAR, town VARCHAR)")
    rows = [
        (
            None if s is None else ("Yes" if s else "No"),
            None if w is None else f"{w}.0",
            v.isoformat(),
            t,
        )
        for s, w, v, t in zip(r["smoker"], r["weight"], r["visit"], r["town"], strict=True)
    ]
    con.executemany("INSERT INTO visits VALUES (?, ?, ?, ?)", rows)
    con.close()


def _account(table) -> str:
    return data_account(key=KEY, fingerprint=multiset_fingerprint(table, key=KEY))


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    folder = tmp_path_factory.mktemp("encodings")
    _csv(folder / "visits.csv")
    arrow = pa.Table.from_pandas(_pandas(), preserve_index=False)
    pq.write_table(arrow, folder / "visits.parquet")
    _duckdb_text(folder / "visits.duckdb")
    shuffled = _pandas().sample(frac=1.0, random_state=2).reset_index(drop=True)
    return {
        "csv": open_table(str(folder / "visits.csv")),
        "parquet": open_table(str(folder / "visits.parquet")),
        "duckdb": open_table(f"duckdb:{folder / 'visits.duckdb'}#visits"),
        "pandas": as_table(shuffled),
        "arrow": as_table(arrow),
    }


def test_the_encodings_really_differ(sources):
    types = {name: dict(t.engine.types) for name, t in sources.items()}
    assert types["duckdb"]["smoker"] == "VARCHAR" and types["parquet"]["smoker"] == "BOOLEAN"
    assert types["csv"]["weight"] == "DOUBLE" and types["parquet"]["weight"] == "BIGINT"
    assert types["duckdb"]["visit"] == "VARCHAR" and types["csv"]["visit"] == "DATE"
    assert types["parquet"]["visit"].startswith("TIMESTAMP")


def test_same_rows_one_data_id(sources):
    accounts = {name: _account(t) for name, t in sources.items()}
    assert len(set(accounts.values())) == 1, accounts


def test_the_first_version_told_them_apart(sources):
    # the fingerprint earlier ledgers were keyed with (kept to find their releases)
    old = {name: multiset_fingerprint(t, key=KEY, canonical=False) for name, t in sources.items()}
    assert len(set(old.values())) > 1


def test_one_changed_cell_is_other_data():
    frame = _pandas()
    base = _account(as_table(frame))
    changes = [
        ("smoker", not bool(frame.loc[1, "smoker"])),
        ("weight", int(frame.loc[1, "weight"]) + 1),
        ("town", "west"),
        ("visit", pd.Timestamp("2025-01-01")),
    ]
    for col, value in changes:
        changed = frame.copy()
        changed.loc[1, col] = value
        assert _account(as_table(changed)) != base, col
    moved = frame.copy()  # the same cells, two of them swapped between rows
    a, b = moved.loc[0, "town"], next(t for t in moved["town"] if t != moved.loc[0, "town"])
    j = int(np.argmax(moved["town"].to_numpy() == b))
    moved.loc[0, "town"], moved.loc[j, "town"] = b, a
    assert _account(as_table(moved)) != base


def test_spark_frame_is_the_same_data(spark, sources):
    frame = spark.createDataFrame(_pandas())
    assert _account(as_table(frame)) == _account(sources["csv"])
    # a secret's keyed meaning on these rows, computed by Spark, is the one DuckDB computes
    for secret in [ProportionSecret("town = 'north'", [0.3, 0.4]), MeanSecret("weight", [70, 80])]:
        meaning = secret_accounts(as_table(frame), secret, key=KEY)
        assert meaning == secret_accounts(sources["csv"], secret, key=KEY)
