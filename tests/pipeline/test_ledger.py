"""The SQLite ledger: schema, validation of foreign/corrupt files, append-only, budgets."""

from __future__ import annotations

import sqlite3
import warnings
from functools import lru_cache

import numpy as np
import pytest

from adult_setup import ADULT_STATS
from distpriv.errors import BudgetExceededError, CompositionError, LedgerError, ParameterError
from distpriv.pipeline import release_with_ledger
from distpriv.pipeline.ledger import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    Budget,
    Ledger,
    NewRelease,
    parse_budget,
    secret_key,
)
from distpriv.pipeline.ledger.identity import data_account


@lru_cache(maxsize=1)
def adult():
    from distpriv.experiments.paper import INCOME_SECRET, resolve_source

    model_data = resolve_source("adult:modeling", split_seed=0)
    release_data = resolve_source(
        "adult:test", split_seed=0, sample_rows=100, rng=np.random.default_rng(7)
    )
    return model_data, release_data, INCOME_SECRET


def _release(path, *, budget=None, stats=ADULT_STATS, seed=0, data_name=None, mechanism="daum"):
    model_data, data, secret = adult()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release_with_ledger(
            data,
            stats,
            secret,
            model_data=model_data,
            mechanism=mechanism,
            epsilon=1.0,
            delta=1e-3,
            ledger=path,
            budget=budget,
            data_name=data_name,
            rng=seed,
        )


def _bytes(path):
    return path.read_bytes()


# -- the file ---------------------------------------------------------------------------


def test_new_ledger_has_versioned_schema(tmp_path):
    path = tmp_path / "curator.ledger"
    led = Ledger(path)
    assert len(led) == 0 and led.groups() == ()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    con.close()
    # no temporary file is left next to it
    assert [p.name for p in tmp_path.iterdir()] == ["curator.ledger"]


def test_missing_ledger_without_create(tmp_path):
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger(tmp_path / "nope.ledger", create=False)
    assert not (tmp_path / "nope.ledger").exists()


def test_ledger_is_append_only(tmp_path):
    path = tmp_path / "l.db"
    _release(path, budget=Budget(5.0, 1e-3))
    con = sqlite3.connect(path)
    for sql in (
        "UPDATE releases SET composed_epsilon = 0",
        "DELETE FROM releases",
        "UPDATE meta SET value = 'x'",
        "DELETE FROM budgets",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            con.execute(sql)
    con.close()
    assert len(Ledger(path)) == 1
    assert not hasattr(Ledger, "delete") and not hasattr(Ledger, "update")


@pytest.mark.parametrize(
    "content",
    [b"", b"hello, this is a CSV file\n1,2,3\n", b"SQLite format 3\x00" + b"\x00" * 20],
    ids=["empty", "text", "short-header"],
)
def test_non_ledger_files_are_refused_untouched(tmp_path, content):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(LedgerError, match=r"not a distpriv ledger|truncated|empty"):
        Ledger(path)
    assert _bytes(path) == content


def test_foreign_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE releases (x)")
    con.commit()
    con.close()
    before = _bytes(path)
    with pytest.raises(LedgerError, match=r"not a distpriv ledger.*application_id"):
        Ledger(path)
    assert _bytes(path) == before


def test_newer_schema_version_is_refused(tmp_path):
    path = tmp_path / "l.db"
    Ledger(path)
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    before = _bytes(path)
    with pytest.raises(LedgerError, match="newer distpriv"):
        Ledger(path)
    assert _bytes(path) == before


def test_truncated_ledger_is_refused_untouched(tmp_path):
    path = tmp_path / "l.db"
    _release(path)
    _release(path, stats={"avg_age": "avg(age)"})
    full = _bytes(path)
    assert len(full) >= 4 * 4096
    for cut in (len(full) // 2, len(full) - 4096, 4096 + 100):
        path.write_bytes(full[:cut])
        with pytest.raises(LedgerError, match=r"truncated|corrupt"):
            Ledger(path)
        assert _bytes(path) == full[:cut]


def test_corrupt_page_is_refused(tmp_path):
    path = tmp_path / "l.db"
    _release(path)
    raw = bytearray(_bytes(path))
    raw[2 * 4096 : 3 * 4096] = b"\xff" * 4096  # garbage over a b-tree page
    path.write_bytes(bytes(raw))
    with pytest.raises(LedgerError, match="corrupt"):
        Ledger(path).releases()
    assert _bytes(path) == bytes(raw)


# -- budgets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["1", "a,b", "1,2,3", "0,1e-3", "1,1.5", "nan,1e-3", "inf,0", "-1,0"]
)
def test_parse_budget_rejects_bad_text(text):
    with pytest.raises(ParameterError, match="--budget"):
        parse_budget(text)


def test_parse_budget():
    assert parse_budget("2,1e-3") == Budget(2.0, 1e-3)
    assert Budget(2, 1e-3).tighter(Budget(3, 1e-4)) == Budget(2, 1e-4)


def test_secret_key_normalises_whitespace():
    assert secret_key("income  = '>50K'\n") == "income = '>50K'"


# -- releases through the ledger ------------------------------------------------------------


def test_release_records_everything(tmp_path):
    path = tmp_path / "l.db"
    out = _release(path, seed=3)
    (entry,) = Ledger(path).releases()
    assert entry == out.entry
    # the data are named by a keyed account (HMAC-SHA256 under the ledger's key), never a hash
    assert entry.data_account.startswith("hmac-sha256:") and len(entry.data_account) == 76
    # the secret's account is its keyed meaning on the released rows, never its spelling
    assert entry.secret_key.startswith("meaning-hmac-sha256:") and len(entry.secret_key) == 84
    assert entry.secret["predicate"] == "income = '>50K'"
    assert Ledger(path).releases(secret="income='>50K'") == (entry,)
    assert entry.secret["values"] == [0.45, 0.55] and entry.secret["pairs"] == [[0.45, 0.55]]
    assert dict(entry.statistics) == ADULT_STATS
    assert entry.mechanism == "daum"
    cov = np.asarray(entry.noise["covariance"])
    np.testing.assert_allclose(cov, out.report.mechanism.noise_covariance)
    assert entry.noise["components"][0]["kind"] == "gaussian"
    assert entry.guarantee["epsilon"] == 1.0 and entry.guarantee["theorem"]
    np.testing.assert_allclose(entry.released, out.report.release.value)
    assert entry.composed["n_releases"] == 1
    # one release: composed = alone
    assert entry.composed["epsilon"] == pytest.approx(entry.alone["epsilon"])
    assert entry.time_utc.endswith("+00:00") and entry.version
    assert out.ledger_summary()["composed"]["epsilon"] == entry.composed["epsilon"]


def test_data_name_replaces_fingerprint(tmp_path):
    path = tmp_path / "l.db"
    out = _release(path, data_name="adult-test-sample-7")
    key = Ledger(path).identity_key
    assert out.entry.data_account == data_account(key=key, data_name="adult-test-sample-7")
    assert out.entry.data_account != data_account(key=key, fingerprint="adult-test-sample-7")


def test_budget_refuses_before_drawing(tmp_path):
    """A budget that admits one release and not two: the second is refused, nothing kept."""
    path = tmp_path / "l.db"
    first = _release(path, budget=Budget(1.3, 1e-3))
    assert first.composed.epsilon <= 1.3
    before = _bytes(path)
    with pytest.raises(BudgetExceededError, match=r"refused.*1 earlier release.*budget"):
        _release(path, seed=1)  # the recorded budget applies without --budget too
    assert _bytes(path) == before
    assert len(Ledger(path)) == 1
    # and the draw is never called when the check fails
    led, e = Ledger(path), first.entry
    calls = []

    class _Over:
        epsilon, delta, alone = 9.0, 1e-3, {"epsilon": 9.0, "delta": 1e-3}

        def within(self, budget):
            return False

        def describe(self):
            return "(9, 0.001)"

    with pytest.raises(BudgetExceededError):
        led.guarded_release(
            NewRelease(
                e.data_account,
                e.secret,
                e.statistics,
                e.model,
                e.mechanism,
                e.noise,
                e.guarantee,
            ),
            compose=lambda earlier, b: _Over(),
            draw=lambda: calls.append(1),
        )
    assert calls == [] and _bytes(path) == before


def test_laplace_releases_compose_and_a_mixed_history_is_refused(tmp_path):
    path = tmp_path / "l.db"
    model_data, data, secret = adult()
    stats = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"}

    def go(mechanism, delta):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return release_with_ledger(
                data, stats, secret, model_data=model_data, mechanism=mechanism,
                epsilon=1.0, delta=delta, ledger=path, n_samples=100, rng=4,
            )  # fmt: skip

    first = go("wasserstein", 0.0)
    second = go("wasserstein", 0.0)
    assert first.composed.family == second.composed.family == "laplace"
    assert second.composed.delta == 0.0 and second.composed.n_releases == 2
    # the same statistics twice with Laplace noise: exactly twice the cost (Thm 3.1)
    assert second.composed.epsilon == pytest.approx(2 * second.composed.alone["epsilon"])
    before = _bytes(path)
    with pytest.raises(CompositionError, match="noise families differ"):
        go("daum", 1e-3)
    assert _bytes(path) == before and len(Ledger(path)) == 2


def test_transaction_killed_midway_is_rolled_back(tmp_path):
    """A process killed inside a transaction leaves a hot journal: the next open recovers."""
    import subprocess
    import sys

    path = tmp_path / "l.db"
    Ledger(path).set_budget("name:x", "p", Budget(1.0, 1e-3))
    script = (
        "import os, sqlite3, sys\n"
        "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "con.execute('PRAGMA cache_size=1')\n"
        "con.execute('BEGIN IMMEDIATE')\n"
        "for i in range(2000):\n"
        "    con.execute('INSERT INTO meta VALUES (?, ?)', (f'k{i}', 'x' * 500))\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)
    journal = tmp_path / "l.db-journal"
    assert journal.exists() and journal.stat().st_size > 0
    led = Ledger(path)
    assert led.budget("name:x", "p") == Budget(1.0, 1e-3)
    con = sqlite3.connect(path)
    # the 5 made with it: created_utc, created_by, the key, its check, the chain record
    assert con.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 5
    con.close()
