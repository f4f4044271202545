"""A ledger that notices: deleted rows, truncated history, dropped
or altered triggers and a deleted history record are refused with the file unchanged; a
schema-2 ledger is read, and upgraded by its first write; a lazily opened ledger that
another process creates first is continued on.

The ledgers here are written through the store with stand-in compositions and draws (the
checks are about the file, not the mechanism); tests/pipeline/test_ledger*.py release
through the real pipeline. The row checksums of the schema-2 fixture are computed here
independently (plain HMAC-SHA256 of the row's JSON), not with the library's helpers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
from dataclasses import dataclass
from typing import Any

import pytest

from distpriv.cli import main
from distpriv.errors import CompositionError, LedgerError
from distpriv.pipeline.ledger import Budget, Ledger, NewRelease
from distpriv.pipeline.ledger.store import LedgerCreatedElsewhere

ACCOUNT = "hmac-sha256:" + "ab" * 32


@dataclass(frozen=True)
class _Composed:
    """A stand-in composed guarantee (the store only reads these fields)."""

    epsilon: float = 1.0
    delta: float = 1e-3

    @property
    def alone(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta}

    def within(self, budget: Budget) -> bool:
        return self.epsilon <= budget.epsilon and self.delta <= budget.delta

    def describe(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})"

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "n_releases": 1}


@dataclass(frozen=True)
class _Drawn:
    value: tuple[float, ...]


def _new(predicate: str = "p") -> NewRelease:
    return NewRelease(
        data_account=ACCOUNT,
        secret={"predicate": predicate, "values": [0.4, 0.6], "pairs": [[0.4, 0.6]]},
        statistics=(("s", "avg(x)"),),
        model={"subset_size": 10},
        mechanism="daum",
        noise={"covariance": [[1.0]]},
        guarantee={"epsilon": 1.0, "delta": 1e-3},
    )


def _record(led: Ledger, value: float, predicate: str = "p") -> None:
    led.guarded_release(
        _new(predicate),
        compose=lambda earlier, b: _Composed(),
        draw=lambda: _Drawn((value,)),
        compose_account=lambda earlier, b, row: _Composed(),
    )


@pytest.fixture
def ledger(tmp_path):
    """A ledger with 3 budgets and 4 releases, written by the current code."""
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    for i in range(4):
        _record(led, float(i))
        if i < 3:
            led.set_budget(ACCOUNT, f"q{i}", Budget(2.0 + i, 1e-3))
    assert len(Ledger(path)) == 4
    return path


def _tamper(path, *sql: str, args: tuple[Any, ...] = ()) -> bytes:
    """Run SQL as another SQLite client would (the last statement with ``args``)."""
    con = sqlite3.connect(path, isolation_level=None)
    for i, statement in enumerate(sql):
        con.execute(statement, args if i == len(sql) - 1 else ())
    con.close()
    return path.read_bytes()


def _drop_triggers() -> list[str]:
    return [
        f"DROP TRIGGER {t}_no_{op}"
        for t in ("meta", "budgets", "releases")
        for op in ("update", "delete")
    ]


def _triggers(path) -> list[str]:
    """The CREATE TRIGGER statements of a ledger, to put them back after a deletion."""
    con = sqlite3.connect(path)
    try:
        return [r[0] for r in con.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")]
    finally:
        con.close()


def _refused(path, capsys, *words: str) -> None:
    """Refused at open, by ``ledger show`` (one line) and by a write; the file unchanged."""
    before = path.read_bytes()
    with pytest.raises(LedgerError) as info:
        Ledger(path)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert path.read_bytes() == before
    status = main(["ledger", "show", str(path)])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("distpriv: error: ledger ") and words[0] in err, err
    assert path.read_bytes() == before


CASES = {
    "last release": (["DELETE FROM releases WHERE id = 4"], ["the last 1 were deleted"]),
    "last two budgets": (["DELETE FROM budgets WHERE id >= 2"], ["the last 2 were deleted"]),
    "middle release": (["DELETE FROM releases WHERE id = 2"], ["row(s) 2..2 were deleted"]),
    "first release": (["DELETE FROM releases WHERE id = 1"], ["row(s) 1..1 were deleted"]),
    "all releases": (["DELETE FROM releases"], ["the last 4 were deleted"]),
    "all rows": (["DELETE FROM releases", "DELETE FROM budgets"], ["were deleted"]),
    "history record": (["DELETE FROM meta WHERE key = 'chain'"], ["history record", "deleted"]),
    "history record edited": (
        ["UPDATE meta SET value = replace(value, '[4,', '[3,') WHERE key = 'chain'"],
        ["history record", "fails its checksum"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_deleted_rows_and_history_are_refused_unchanged(ledger, capsys, case):
    sql, words = CASES[case]
    # the triggers stop this while they are there ...
    if not sql[0].startswith("UPDATE"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            _tamper(ledger, sql[0])
    # ... so they are dropped first, and put back exactly, so only the rows tell
    _tamper(ledger, *_drop_triggers(), *sql, *_triggers(ledger))
    _refused(ledger, capsys, "tampered with", *words)


def test_a_write_on_an_open_ledger_rechecks_the_history(ledger):
    """Rows deleted after the ledger was opened: the next write is refused, nothing added."""
    led = Ledger(ledger)
    before = _tamper(
        ledger, *_drop_triggers(), "DELETE FROM releases WHERE id = 4", *_triggers(ledger)
    )
    with pytest.raises(LedgerError, match="the last 1 were deleted"):
        _record(led, 9.0)
    with pytest.raises(LedgerError, match="the last 1 were deleted"):
        led.set_budget(ACCOUNT, "z", Budget(1.0, 0.0))
    assert ledger.read_bytes() == before


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        (["DROP TRIGGER releases_no_delete"], ["trigger releases_no_delete is missing"]),
        (_drop_triggers(), ["trigger budgets_no_update is missing", "meta_no_delete"]),
        (
            [
                "DROP TRIGGER releases_no_delete",
                "CREATE TRIGGER releases_no_delete BEFORE DELETE ON releases WHEN 0 "
                "BEGIN SELECT 1; END",
            ],
            ["trigger releases_no_delete is altered"],
        ),
        (
            ["CREATE TRIGGER sneaky AFTER INSERT ON releases BEGIN SELECT 1; END"],
            ["unexpected trigger sneaky"],
        ),
        (["DROP INDEX releases_group"], ["index releases_group is missing"]),
    ],
    ids=["one-dropped", "all-dropped", "altered", "extra", "index-dropped"],
)
def test_dropped_or_altered_triggers_alone_are_refused(ledger, capsys, sql, words):
    _tamper(ledger, *sql)
    _refused(ledger, capsys, "tampered with", *words)


def test_renumbered_rows_fail_their_checksum(ledger, capsys):
    triggers = _triggers(ledger)
    _tamper(ledger, *_drop_triggers(), "DELETE FROM releases WHERE id = 4")
    _tamper(ledger, "UPDATE releases SET id = id + 10 WHERE id = 3", *triggers)
    with pytest.raises(LedgerError, match="row 13 fails its checksum"):
        Ledger(ledger)


def test_a_legitimate_ledger_keeps_working_and_its_chain_moves(ledger):
    led = Ledger(ledger)
    chain = dict(sqlite3.connect(ledger).execute("SELECT key, value FROM meta").fetchall())
    old = json.loads(chain["chain"])
    assert old["releases"][0] == 4 and old["budgets"][0] == 3
    _record(led, 5.0, predicate="other")
    new = json.loads(
        sqlite3.connect(ledger).execute("SELECT value FROM meta WHERE key = 'chain'").fetchone()[0]
    )
    assert new["releases"][0] == 5 and new["releases"][1] != old["releases"][1]
    assert new["budgets"] == old["budgets"] and new["mac"] != old["mac"]
    assert [e.released for e in Ledger(ledger).releases()] == [[0.0], [1.0], [2.0], [3.0], [5.0]]


def test_the_chain_record_cannot_be_rolled_to_another_ledgers(tmp_path, ledger):
    """A history record copied from another ledger (another key) fails its checksum."""
    other = tmp_path / "other.sqlite"
    _record(Ledger(other), 1.0)
    foreign = (
        sqlite3.connect(other).execute("SELECT value FROM meta WHERE key = 'chain'").fetchone()[0]
    )
    _tamper(ledger, "UPDATE meta SET value = ? WHERE key = 'chain'", args=(foreign,))
    with pytest.raises(LedgerError, match=r"history record .* fails its checksum"):
        Ledger(ledger)


# -- schema 2: read as is, upgraded by the first write -----------------------------------

_V2_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE budgets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    data_account TEXT NOT NULL,
    secret_key TEXT NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
    row_mac TEXT NOT NULL
);
CREATE TABLE releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    version TEXT NOT NULL,
    data_account TEXT NOT NULL,
    secret_key TEXT NOT NULL,
    secret_json TEXT NOT NULL,
    statistics_json TEXT NOT NULL,
    model_json TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    noise_json TEXT NOT NULL,
    guarantee_json TEXT NOT NULL,
    alone_epsilon REAL NOT NULL,
    alone_delta REAL NOT NULL,
    composed_json TEXT NOT NULL,
    composed_epsilon REAL NOT NULL,
    composed_delta REAL NOT NULL,
    released_json TEXT NOT NULL,
    row_mac TEXT NOT NULL
);
CREATE INDEX releases_group ON releases (data_account, secret_key, id);
CREATE INDEX budgets_group ON budgets (data_account, secret_key, id);
"""


def _v2_triggers() -> str:
    """The triggers of schema 2, as distpriv 2bc1eec wrote them."""
    out = []
    for table in ("meta", "budgets", "releases"):
        for op in ("UPDATE", "DELETE"):
            out.append(
                f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, 'the distpriv ledger is append-only: "
                f"{op} on {table} refused'); END;"
            )
    return "\n".join(out)


def _mac(key: bytes, table: str, values: list[Any]) -> str:
    msg = json.dumps([table, *values], separators=(",", ":"))
    return hmac.new(key, msg.encode(), hashlib.sha256).hexdigest()


def _v2_ledger(path, *, budgets: int = 2, gap: bool = False, triggers: bool = True) -> bytes:
    """A schema-2 ledger with ``budgets`` budget rows (ids 1, 2, … or with a gap)."""
    key = secrets.token_bytes(32)
    con = sqlite3.connect(path)
    con.executescript(
        "PRAGMA application_id = 1685090934; PRAGMA user_version = 2;"
        f"BEGIN; {_V2_SCHEMA} {_v2_triggers() if triggers else ''} COMMIT;"
    )
    check = hmac.new(key, b"distpriv ledger identity key check", hashlib.sha256).hexdigest()
    meta = [("created_utc", "2026-01-01"), ("created_by", "distpriv 2bc1eec")]
    meta += [("identity_key", key.hex()), ("identity_key_check", check)]
    con.executemany("INSERT INTO meta VALUES (?, ?)", meta)
    for i in range(budgets):
        row_id = i + 1 + (1 if gap and i > 0 else 0)
        values = [row_id, "2026-01-01T00:00:00+00:00", ACCOUNT, f"q{i}", 2.0 + i, 1e-3]
        row = (*values, _mac(key, "budgets", values))
        con.execute("INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?, ?)", row)
    con.commit()
    con.close()
    return path.read_bytes()


def test_schema_2_ledger_is_read_unchanged_and_upgraded_by_its_first_write(tmp_path, capsys):
    path = tmp_path / "v2.sqlite"
    before = _v2_ledger(path)
    led = Ledger(path)
    assert led.budget(ACCOUNT, "q1") == Budget(3.0, 1e-3)
    assert main(["ledger", "show", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["groups"][1]["budget"]["epsilon"] == 3.0
    assert path.read_bytes() == before  # reading never upgrades
    # a refused write leaves it as it was (the upgrade is part of the write's transaction)
    with pytest.raises(Exception, match="refused"):
        led.guarded_release(
            _new("q0"), compose=lambda e, b: _Composed(epsilon=5.0), draw=lambda: _Drawn((1.0,))
        )
    assert path.read_bytes() == before
    _record(led, 7.0)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 4
    assert (
        json.loads(con.execute("SELECT value FROM meta WHERE key='chain'").fetchone()[0])[
            "budgets"
        ][0]
        == 2
    )
    con.close()
    assert Ledger(path).budget(ACCOUNT, "q0") == Budget(2.0, 1e-3)
    # from now on a deleted budget row is noticed
    _tamper(path, *_drop_triggers(), "DELETE FROM budgets WHERE id = 2", *_triggers(path))
    with pytest.raises(LedgerError, match="the last 1 were deleted"):
        Ledger(path)


@pytest.mark.parametrize(
    ("kind", "words"),
    [("gap", "row(s) 2..2 were deleted"), ("no-triggers", "trigger meta_no_delete is missing")],
)
def test_schema_2_ledger_with_traces_of_deletion_is_not_upgraded(tmp_path, kind, words):
    path = tmp_path / "v2.sqlite"
    before = _v2_ledger(path, budgets=3, gap=kind == "gap", triggers=kind == "gap")
    with pytest.raises(LedgerError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Ledger(path)
    assert path.read_bytes() == before


# -- lazily opened ledgers ------------------------------------------------------------------


def test_lazy_ledger_creates_nothing_until_a_row_is_recorded(tmp_path):
    path = tmp_path / "l.sqlite"
    led = Ledger(path, lazy=True)
    assert led.pending and len(led) == 0 and led.groups() == () and led.releases() == ()
    with pytest.raises(Exception, match="refused"):  # a refused first release: no file
        led.guarded_release(
            _new(),
            compose=lambda e, b: _Composed(epsilon=5.0),
            draw=lambda: _Drawn((1.0,)),
            budget=Budget(1.0, 1e-3),
        )
    assert list(tmp_path.iterdir()) == []
    key = led.identity_key
    _record(led, 3.0)
    assert not led.pending and [p.name for p in tmp_path.iterdir()] == ["l.sqlite"]
    again = Ledger(path)
    assert again.identity_key == key and [e.released for e in again.releases()] == [[3.0]]


def test_lazy_ledger_created_by_another_process_first_is_continued_on(tmp_path):
    path = tmp_path / "l.sqlite"
    mine = Ledger(path, lazy=True)
    theirs = Ledger(path)  # another process creates it and records
    _record(theirs, 1.0)
    draws = []
    with pytest.raises(LedgerCreatedElsewhere, match="created by another process"):
        mine.guarded_release(_new(), compose=lambda e, b: _Composed(), draw=lambda: draws.append(1))
    assert draws == [] and not mine.pending and mine.identity_key == theirs.identity_key
    _record(mine, 2.0)
    assert [e.released for e in Ledger(path).releases()] == [[1.0], [2.0]]


def test_lazy_ledger_losing_the_race_at_the_link_discards_its_draw(tmp_path, monkeypatch):
    """The file appears after the pre-draw check: the drawn value is recorded nowhere."""
    path = tmp_path / "l.sqlite"
    mine = Ledger(path, lazy=True)
    monkeypatch.setattr(Ledger, "_still_ours", lambda self: None)

    def draw():
        _record(Ledger(path), 1.0)  # another process wins meanwhile
        return _Drawn((42.0,))

    with pytest.raises(LedgerCreatedElsewhere):
        mine.guarded_release(_new(), compose=lambda e, b: _Composed(), draw=draw)
    assert [e.released for e in Ledger(path).releases()] == [[1.0]]
    assert [p.name for p in tmp_path.iterdir()] == ["l.sqlite"]  # no temporary file left


@pytest.mark.parametrize("name", [":memory:", "file:l.sqlite?mode=rwc", "file::memory:"])
def test_sqlite_special_names_are_refused_without_a_stray_file(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    for lazy in (False, True):
        with pytest.raises(LedgerError, match="not a file path"):
            Ledger(name, lazy=lazy)
    assert list(tmp_path.iterdir()) == []


def test_a_ledger_deleted_after_it_was_opened_is_not_recreated_empty(ledger):
    led = Ledger(ledger)
    ledger.unlink()
    with pytest.raises(LedgerError, match=r"cannot be used|cannot open"):
        _record(led, 1.0)
    with pytest.raises(LedgerError):
        led.releases()
    assert not ledger.exists()


def test_the_store_refuses_a_release_it_is_not_told_how_to_compose_into_other_accounts(
    tmp_path,
):
    """guarded_release without compose_account, on data with another account: the
    release would be left out of that account, so it is refused (nothing drawn)."""
    led = Ledger(tmp_path / "l.db")
    _record(led, 1.0, predicate="x > 0")
    drawn = []
    with pytest.raises(CompositionError, match=r"account\(s\) of 'x > 0'"):
        led.guarded_release(
            _new("x > 1"), compose=lambda e, b: _Composed(), draw=lambda: drawn.append(1)
        )
    assert drawn == [] and len(Ledger(tmp_path / "l.db")) == 1


# The schemas of distpriv versions that key accounts by text: they read these and refuse a
# newer one, so a ledger with rows keyed by meaning must never carry one of them.
TEXT_KEYED_SCHEMAS = (2, 3)


def _version(path) -> int:
    con = sqlite3.connect(path)
    try:
        return int(con.execute("PRAGMA user_version").fetchone()[0])
    finally:
        con.close()


def test_a_ledger_written_now_is_refused_by_text_keyed_versions(tmp_path, capsys):
    """Downgrade safety: a new ledger, and a schema-3 ledger after its first write by this
    version, carry a schema that distpriv versions keying accounts by text refuse (they
    would open fresh accounts beside the meaning-keyed rows); reading never upgrades."""
    fresh = tmp_path / "new.sqlite"
    _record(Ledger(fresh), 1.0)
    assert _version(fresh) not in TEXT_KEYED_SCHEMAS
    old = tmp_path / "v3.sqlite"
    _record(Ledger(old), 1.0)
    con = sqlite3.connect(old)
    con.execute("PRAGMA user_version = 3")  # the tables of 3 are those of 4
    con.close()
    before = old.read_bytes()
    assert main(["ledger", "show", str(old), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema_version"] == 3  # the file's
    assert old.read_bytes() == before  # read as it is
    _record(Ledger(old), 2.0)
    assert _version(old) not in TEXT_KEYED_SCHEMAS
    assert [e.released for e in Ledger(old).releases()] == [[1.0], [2.0]]


def test_a_newer_schema_is_refused_in_one_line_by_every_command(tmp_path, capsys):
    path = tmp_path / "l.sqlite"
    _record(Ledger(path), 1.0)
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {_version(path) + 1}")
    con.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError, match=r"schema version \d+ \(written by a newer distpriv\)"):
        Ledger(path)
    assert main(["ledger", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "newer distpriv" in err and str(path) in err
    assert path.read_bytes() == before


def test_a_row_stores_its_canonical_key_and_is_read_by_it_as_by_parsing(tmp_path):
    """The canonical key stored at record time is what parsing the text gives: a row is
    found in the same account whether its keys are read from the record or re-parsed."""
    from distpriv.pipeline.ledger.accounts import text_key
    from distpriv.pipeline.ledger.identity import secret_aliases, secret_key
    from distpriv.pipeline.ledger.records import account_keys

    led = Ledger(tmp_path / "l.db")
    spellings = ["(X>0)", "0 <  x", "lower(Name) IN ('b', 'a')"]
    for k, text in enumerate(spellings):
        _record(led, float(k), predicate=text)
    for text, row in zip(spellings, Ledger(tmp_path / "l.db").releases(), strict=True):
        assert row.secret["text_keys"] == [secret_key(text)]
        assert text_key(row) == secret_key(text)
        assert account_keys(row) == secret_aliases(text) | {row.secret_key}
    assert len(Ledger(tmp_path / "l.db").releases(ACCOUNT, "x > 0")) == 2


def test_ledger_show_names_releases_an_earlier_version_left_out_of_an_account(tmp_path, capsys):
    """Rows recorded without a guarantee for another account of their data (as earlier
    versions did: no composition into other secrets' accounts, or a note) are listed as
    not included in that account's guarantee until its next composition."""
    from distpriv.pipeline.ledger.report import ledger_report

    path = tmp_path / "l.db"
    led = Ledger(path)
    _record(led, 1.0, predicate="x > 0")
    _record(led, 2.0, predicate="y > 0")  # the stand-in records no "accounts"
    groups = {g["secret"]: g["composed"] for g in ledger_report(path)["groups"]}
    assert groups["x > 0"]["left_out"] == [2]
    assert "left_out" not in groups["y > 0"]
    assert main(["ledger", "show", str(path)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "release(s) 2 of this data were not composed" in shown
    _record(led, 3.0, predicate="x > 0")  # its own next release composes every earlier one
    groups = {g["secret"]: g["composed"] for g in ledger_report(path)["groups"]}
    assert "left_out" not in groups["x > 0"] and groups["y > 0"]["left_out"] == [3]
