"""The data identity: order-blind, keyed, computed in the engine.

Independent references: the same rows shuffled, stored as Parquet, in a DuckDB database and
in Spark must give the same fingerprint; any change of the multiset (a row dropped, a cell
moved to another row, a value changed) and any other key must change it.
"""

from __future__ import annotations

import hashlib
import hmac

import duckdb
import numpy as np
import pandas as pd
import pytest

from distpriv.errors import ParameterError, ParameterTypeError
from distpriv.modeling.engines import DuckDBEngine
from distpriv.modeling.identity import multiset_fingerprint, new_identity_key
from distpriv.modeling.tables import Table

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning")

KEY = bytes(range(32))


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    n = 400
    return pd.DataFrame(
        {
            "age": rng.integers(17, 90, n),
            "sex": rng.choice(["Female", "Male"], n),
            "income": rng.choice(["<=50K", ">50K"], n),
            "hours": rng.integers(1, 99, n).astype(np.int64),
            "score": np.round(rng.normal(size=n), 3),
            "big": rng.integers(-(2**40), 2**40, n),
        }
    )


@pytest.mark.parametrize("portable", [True, False])
def test_same_rows_in_any_order_same_fingerprint(frame, portable):
    fp = multiset_fingerprint(frame, key=KEY, portable=portable)
    assert fp.startswith("hmac-sha256:") and len(fp) == len("hmac-sha256:") + 64
    for seed in range(3):
        shuffled = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        assert multiset_fingerprint(shuffled, key=KEY, portable=portable) == fp
    # Column order does not matter either (cells are read in column-name order).
    assert multiset_fingerprint(frame[frame.columns[::-1]], key=KEY, portable=portable) == fp


@pytest.mark.parametrize("portable", [True, False])
def test_any_change_of_the_multiset_or_key_changes_it(frame, portable):
    fp = multiset_fingerprint(frame, key=KEY, portable=portable)
    changed = []
    changed.append(frame.iloc[1:])  # a row dropped
    changed.append(pd.concat([frame, frame.iloc[:1]]))  # a row duplicated
    moved = frame.copy()  # a cell moved to another row: the column's multiset is unchanged
    i, j = 0, int(np.flatnonzero(frame["sex"] != frame["sex"].iloc[0])[0])
    moved.loc[[i, j], "sex"] = frame.loc[[j, i], "sex"].to_numpy()
    changed.append(moved)
    bumped = frame.copy()
    bumped.loc[3, "big"] += 2147483647  # the same residue mod Q, another value
    changed.append(bumped)
    fps = {multiset_fingerprint(c, key=KEY, portable=portable) for c in changed}
    assert fp not in fps and len(fps) == len(changed)
    assert multiset_fingerprint(frame, key=new_identity_key(), portable=portable) != fp


def test_file_database_and_frame_agree(frame, tmp_path):
    fp = multiset_fingerprint(frame, key=KEY)
    parquet = tmp_path / "t.parquet"
    frame.to_parquet(parquet, index=False)
    csv = tmp_path / "t.csv"
    frame.iloc[::-1].to_csv(csv, index=False)
    db = tmp_path / "t.duckdb"
    con = duckdb.connect(str(db))
    con.register("f", frame.sample(frac=1.0, random_state=9))
    con.execute("CREATE TABLE people AS SELECT * FROM f")
    con.close()
    assert multiset_fingerprint(parquet, key=KEY) == fp
    assert multiset_fingerprint(csv, key=KEY) == fp
    engine = DuckDBEngine.from_database(db, "people", "test")
    assert multiset_fingerprint(Table(engine), key=KEY) == fp


def test_integers_stored_as_floats_agree_and_nulls_count(frame):
    fp = multiset_fingerprint(frame, key=KEY)
    as_float = frame.assign(age=frame["age"].astype(float))
    assert multiset_fingerprint(as_float, key=KEY) == fp
    with_null = as_float.copy()
    with_null.loc[0, "age"] = np.nan
    other_null = as_float.copy()
    other_null.loc[1, "age"] = np.nan
    a = multiset_fingerprint(with_null, key=KEY)
    assert a != fp and a != multiset_fingerprint(other_null, key=KEY)


def test_output_is_the_hmac_of_the_sums_not_an_unkeyed_hash(frame):
    """The published value is HMAC(key, ...): recomputable only with the key."""
    from distpriv.modeling.identity import _VERSION, fingerprint_sums
    from distpriv.modeling.tables import as_table

    table = as_table(frame)
    cols = list(frame.columns)
    count, sums = fingerprint_sums(table, KEY, cols)
    assert count == len(frame)
    import json

    msg = b"".join(
        [
            _VERSION,
            json.dumps(sorted(cols)).encode(),
            count.to_bytes(16, "big"),
            *(s.to_bytes(8, "big") for s in sums),
        ]
    )
    expect = "hmac-sha256:" + hmac.new(KEY, msg, hashlib.sha256).hexdigest()
    assert multiset_fingerprint(frame, key=KEY) == expect


def test_bad_keys_are_refused(frame):
    with pytest.raises(ParameterTypeError, match="key must be bytes"):
        multiset_fingerprint(frame, key="secret")
    with pytest.raises(ParameterError, match="at least 16 bytes"):
        multiset_fingerprint(frame, key=b"short")
    with pytest.raises(ParameterError, match="unknown column"):
        multiset_fingerprint(frame, key=KEY, columns=["nope"])


def test_spark_and_duckdb_agree(spark, frame):
    sdf = spark.createDataFrame(frame.sample(frac=1.0, random_state=2))
    assert multiset_fingerprint(sdf, key=KEY) == multiset_fingerprint(frame, key=KEY)
    cols = ["age", "sex", "income"]
    assert multiset_fingerprint(sdf, key=KEY, columns=cols) == multiset_fingerprint(
        frame, key=KEY, columns=cols
    )
    # The native hash is per engine: Spark's is stable under reordering, and differs.
    native = multiset_fingerprint(sdf, key=KEY, portable=False)
    assert native == multiset_fingerprint(spark.createDataFrame(frame), key=KEY, portable=False)


def test_spark_native_sums_equal_the_python_sum_of_the_row_hashes(spark, frame):
    """The two 32-bit halves summed in Spark recombine to Σ xxhash64 mod 2⁶⁴ (summed here
    in Python over the collected per-row hashes, negative hashes included)."""
    from distpriv.modeling.identity import native_sums
    from distpriv.modeling.tables import Table

    sdf = spark.createDataFrame(frame)
    cols = ["age", "income", "sex"]
    count, sums = native_sums(Table(sdf), KEY, cols)
    assert count == len(frame)
    sdf.createOrReplaceTempView("identity_rows")
    for lane, total in enumerate(sums):
        seed = int.from_bytes(
            hmac.new(KEY, f"native|{lane}".encode(), hashlib.sha256).digest()[:7], "big"
        )
        rows = spark.sql(
            f"SELECT xxhash64({seed}, `age`, `income`, `sex`) AS h FROM identity_rows"
        ).collect()
        hashes = [r.h for r in rows]
        assert min(hashes) < 0 < max(hashes)
        assert total == sum(hashes) % 2**64
