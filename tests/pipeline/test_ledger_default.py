"""The always-on ledger: default ledger, opting out, budgets, damage, keyed order-blind identity.

A ledger that is always on, with integrity, and a keyed, order-blind data identity (no
unkeyed table hash in any public output).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

from adult_setup import copy_release_tables, small_release_toml
from cli_helpers import run
from distpriv.errors import LedgerError
from distpriv.pipeline import release_with_ledger
from distpriv.pipeline.ledger import (
    DEFAULT_LEDGER_NAME,
    NOT_RECORDED,
    Budget,
    Ledger,
    data_account,
    migrate_ledger,
    public_account,
)
from distpriv.pipeline.stages.data import fingerprint, load_frame

CONFIG = small_release_toml(title="default ledger test", insecure_seed=5)


@pytest.fixture(scope="module")
def tables(tmp_path_factory, adult_release_tables):
    """A 3000-row modelling table and 100 released rows (and the same rows reversed)."""
    base = copy_release_tables(adult_release_tables, tmp_path_factory.mktemp("tables"))
    model = load_frame(str(base / "model.csv"), what="model")
    released = load_frame(str(base / "released.csv"), what="release")
    released.iloc[::-1].to_csv(base / "reversed.csv", index=False)
    return base, model, released


@pytest.fixture
def setting(tables, tmp_path):
    """A fresh directory holding the config and its tables (its own default ledger)."""
    copy_release_tables(tables[0], tmp_path, ("reversed.csv",))
    (tmp_path / "release.toml").write_text(CONFIG)
    return tmp_path


def _test_fingerprint(frame, key: bytes) -> str:
    """Independent order-blind keyed fingerprint (tests only): HMAC of the sorted row HMACs."""
    rows = sorted(
        hmac.new(key, json.dumps([str(v) for v in row]).encode(), hashlib.sha256).digest()
        for row in frame.itertuples(index=False)
    )
    return "test-multiset:" + hmac.new(key, b"".join(rows), hashlib.sha256).hexdigest()


# -- always on -----------------------------------------------------------------------------


def test_release_without_ledger_flag_is_recorded_in_the_default_ledger(
    setting, capsys, monkeypatch
):
    monkeypatch.delenv("DISTPRIV_LEDGER_DIR")
    cfg = setting / "release.toml"
    status, out, err = run(["release", cfg, "--json"], capsys)
    assert status == 0, err
    block = json.loads(out)["ledger"]
    assert block["recorded"] is True and block["n_releases"] == 1
    default = setting / DEFAULT_LEDGER_NAME
    assert default.is_file()
    (entry,) = Ledger(default).releases()
    assert block["account"] == public_account(entry.data_account)
    # The same rows in reverse order hit the same account: the second release composes.
    status, out, err = run(["release", cfg, "--data", setting / "reversed.csv", "--json"], capsys)
    assert status == 0, err
    again = json.loads(out)["ledger"]
    assert again["account"] == block["account"] and again["n_releases"] == 2
    assert again["composed"]["epsilon"] > again["alone"]["epsilon"]
    # ledger show leads with the composed guarantee of each data and secret
    status, out, err = run(["ledger", "show", default, "--json"], capsys)
    assert status == 0, err
    (group,) = json.loads(out)["groups"]
    assert next(iter(group)) == "composed"
    assert group["composed"]["epsilon"] == pytest.approx(again["composed"]["epsilon"])
    status, out, err = run(["ledger", "show", default], capsys)
    assert status == 0, err
    first = next(line for line in out.splitlines()[1:] if line.strip())
    assert first.startswith("composed (") and "over 2 release(s)" in first


def test_no_ledger_is_stated_in_the_report(setting, capsys, monkeypatch, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("would-be-default")
    monkeypatch.setenv("DISTPRIV_LEDGER_DIR", str(elsewhere))
    cfg = setting / "release.toml"
    status, out, err = run(["release", cfg, "--no-ledger", "--json"], capsys)
    assert status == 0, err
    block = json.loads(out)["ledger"]
    assert block == {"recorded": False, "note": NOT_RECORDED, "opted_out_by": "--no-ledger"}
    status, out, err = run(["release", cfg, "--no-ledger"], capsys)
    assert status == 0, err
    assert "not recorded in any ledger; releases of this data are not composed" in out
    # the config key opts out too, and says which
    (setting / "off.toml").write_text(CONFIG + "[ledger]\nenabled = false\n")
    status, out, err = run(["release", setting / "off.toml", "--json"], capsys)
    assert status == 0, err
    assert json.loads(out)["ledger"]["opted_out_by"] == "[ledger] enabled = false"
    assert list(elsewhere.iterdir()) == [] and not (setting / DEFAULT_LEDGER_NAME).exists()
    (setting / "bad.toml").write_text(CONFIG + "[ledger]\nenabled = 0\n")
    status, out, err = run(["release", setting / "bad.toml"], capsys)
    assert status == 2 and "[ledger] enabled must be true or false" in err


def test_a_budget_different_from_the_recorded_one_is_an_error_naming_both(setting, capsys):
    cfg, led = setting / "release.toml", setting / "b.ledger"
    status, out, err = run(["release", cfg, "--ledger", led, "--budget", "5,1e-3"], capsys)
    assert status == 0, err
    before = led.read_bytes()
    for looser in ("6,1e-3", "5,2e-3", "4,1e-3"):
        status, out, err = run(["release", cfg, "--ledger", led, "--budget", looser], capsys)
        assert status == 2 and out == "" and err.count("\n") == 1, err
        eps, dlt = (float(x) for x in looser.split(","))
        assert f"({eps:g}, {dlt:g})" in err and "(5, 0.001)" in err, err
        assert led.read_bytes() == before
    # --budget and [ledger] budget that differ: refused before any work, both named
    (setting / "cb.toml").write_text(CONFIG + "[ledger]\nbudget = [3.0, 1e-3]\n")
    status, out, err = run(["release", setting / "cb.toml", "--budget", "2,1e-3"], capsys)
    assert status == 2 and "(2, 0.001)" in err and "(3, 0.001)" in err, err


# -- integrity ---------------------------------------------------------------------------


def test_ledger_with_1000_bytes_near_its_end_overwritten_is_refused_unchanged(setting, capsys):
    cfg, led = setting / "release.toml", setting / "d.ledger"
    for _ in range(2):
        assert run(["release", cfg, "--ledger", led, "--quiet"], capsys)[0] == 0
    full = led.read_bytes()
    rng = np.random.default_rng(20)
    bad = bytearray(full)
    bad[-1000:] = rng.integers(0, 256, 1000, dtype=np.uint8).tobytes()
    led.write_bytes(bytes(bad))
    for argv in (["release", cfg, "--ledger", led], ["ledger", "show", led]):
        status, out, err = run(argv, capsys)
        assert status == 2 and out == "" and err.count("\n") == 1, err
        assert "corrupt" in err and str(led) in err
        assert led.read_bytes() == bytes(bad)
    # Every 1000-byte window of the last 3 pages that held any data, overwritten, is refused
    # (SQLite's integrity check sees the b-trees, the keyed row checksums the payloads).
    # A window of bytes SQLite does not use changes nothing the ledger says.
    probe = setting / "probe.ledger"
    tried = 0
    for start in range(len(full) - 1000, len(full) - 3 * 4096, -250):
        if not any(full[start : start + 1000]):
            continue
        tried += 1
        raw = bytearray(full)
        raw[start : start + 1000] = rng.integers(0, 256, 1000, dtype=np.uint8).tobytes()
        probe.write_bytes(bytes(raw))
        with pytest.raises(LedgerError, match=r"corrupt|truncated"):
            Ledger(probe, create=False).releases()
        assert probe.read_bytes() == bytes(raw)
    assert tried >= 10


def test_payload_damage_invisible_to_sqlite_is_caught_by_the_row_checksum(tmp_path):
    path = tmp_path / "l.db"
    led = Ledger(path)
    led.set_budget("hmac-sha256:" + "ab" * 32, "p", Budget(2.5, 1e-3))
    raw = path.read_bytes()
    two_and_a_half = struct.pack(">d", 2.5)
    assert raw.count(two_and_a_half) == 1
    # ε 2.5 -> 2.75 in the record: a valid record of an unindexed column
    damaged = raw.replace(two_and_a_half, struct.pack(">d", 2.75))
    path.write_bytes(damaged)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # SQLite sees nothing
    con.close()
    with pytest.raises(LedgerError, match="budgets row 1 fails its checksum"):
        Ledger(path)
    assert path.read_bytes() == damaged


# -- keyed, order-blind identity ---------------------------------------------------------


def test_identity_key_is_secret_random_and_kept(tmp_path):
    a, b = Ledger(tmp_path / "a.db"), Ledger(tmp_path / "b.db")
    assert isinstance(a.identity_key, bytes) and len(a.identity_key) == 32
    assert a.identity_key != b.identity_key
    assert Ledger(tmp_path / "a.db").identity_key == a.identity_key


def test_same_rows_in_another_order_hit_the_same_account(tables, tmp_path):
    _, model, released = tables
    from distpriv.experiments.paper import INCOME_SECRET

    path = tmp_path / "l.db"
    key = Ledger(path).identity_key
    stats = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"}
    outs = []
    shuffled = released.sample(frac=1.0, random_state=1)
    for frame in (released, released.iloc[::-1], shuffled):
        frame = frame.reset_index(drop=True).copy()  # DuckDB cannot register reversed views
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = release_with_ledger(
                frame, stats, INCOME_SECRET, model_data=model, mechanism="daum",
                epsilon=1.0, delta=1e-3, ledger=path, rng=0,
                data_fingerprint=_test_fingerprint(frame, key),
            )  # fmt: skip
        outs.append(out)
    accounts = {o.entry.data_account for o in outs}
    assert accounts == {data_account(key=key, fingerprint=_test_fingerprint(released, key))}
    assert [o.composed.n_releases for o in outs] == [1, 2, 3]
    # a different table (one row less) is another account
    other = _test_fingerprint(released.iloc[1:], key)
    assert data_account(key=key, fingerprint=other) not in accounts


def _hashes(frame, path: Path) -> set[str]:
    """Unkeyed hashes of a table, several ways (hex, and their 16-digit prefixes)."""
    texts = [
        frame.to_csv(index=False).encode(),
        frame.to_csv().encode(),
        frame.iloc[::-1].to_csv(index=False).encode(),
        path.read_bytes(),
        frame.to_json().encode(),
    ]
    out = {fingerprint(frame)}
    for t in texts:
        for algo in ("sha256", "sha1", "md5", "blake2b"):
            out.add(hashlib.new(algo, t).hexdigest())
    return out | {h[:16] for h in out}


def test_public_outputs_contain_no_unkeyed_hash_of_the_released_table(
    setting, capsys, monkeypatch, short_utility_grid
):
    # short_utility_grid (tests/conftest.py): the --html page's figure on two epsilons, not
    # seven; the hashes that must not appear come from the table, not from the figure.
    monkeypatch.delenv("DISTPRIV_LEDGER_DIR")
    cfg = setting / "release.toml"
    released = load_frame(str(setting / "released.csv"), what="data")  # as the release sees it
    outputs = []
    page, report = setting / "r.html", setting / "r.json"
    status, out, err = run(["release", cfg, "--json", "--out", report, "--html", page], capsys)
    assert status == 0, err
    outputs += [out, report.read_text(), page.read_text(encoding="utf-8")]
    status, out, err = run(["release", cfg], capsys)
    assert status == 0, err
    outputs.append(out)
    default = setting / DEFAULT_LEDGER_NAME
    for argv in (["ledger", "show", default], ["ledger", "show", default, "--json"]):
        status, out, err = run(argv, capsys)
        assert status == 0, err
        outputs.append(out)
    assert "hmac-sha256:" in outputs[0] and "data account hmac-sha256:" in outputs[-2]
    secrets_ = _hashes(released, setting / "released.csv")
    for text in outputs:
        low = text.lower()
        assert not [h for h in secrets_ if h in low]
    # nor is there one inside the ledger file itself (only keyed accounts)
    raw = default.read_bytes().decode("latin-1").lower()
    model = load_frame(str(setting / "model.csv"), what="model")
    leaked = _hashes(released, setting / "released.csv") | _hashes(model, setting / "model.csv")
    assert not [h for h in leaked if h in raw]


# -- old ledgers -------------------------------------------------------------------------


_V1 = """
PRAGMA application_id = 1685090934;
PRAGMA user_version = 1;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE budgets (id INTEGER PRIMARY KEY AUTOINCREMENT, time_utc TEXT NOT NULL,
    data_fingerprint TEXT NOT NULL, secret_key TEXT NOT NULL, epsilon REAL NOT NULL,
    delta REAL NOT NULL);
CREATE TABLE releases (id INTEGER PRIMARY KEY AUTOINCREMENT, time_utc TEXT NOT NULL,
    version TEXT NOT NULL, data_fingerprint TEXT NOT NULL, secret_key TEXT NOT NULL,
    secret_json TEXT NOT NULL, statistics_json TEXT NOT NULL, model_json TEXT NOT NULL,
    mechanism TEXT NOT NULL, noise_json TEXT NOT NULL, guarantee_json TEXT NOT NULL,
    alone_epsilon REAL NOT NULL, alone_delta REAL NOT NULL, composed_json TEXT NOT NULL,
    composed_epsilon REAL NOT NULL, composed_delta REAL NOT NULL, released_json TEXT NOT NULL);
INSERT INTO budgets VALUES (1, '2026-01-01T00:00:00+00:00', 'name:survey', 'p', 2.0, 0.001);
INSERT INTO budgets VALUES (2, '2026-01-01T00:00:00+00:00', 'sha256:{h}', 'p', 3.0, 0.001);
"""


def test_schema_1_ledger_is_refused_then_migrated(tmp_path):
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    con = sqlite3.connect(old)
    con.executescript(_V1.replace("{h}", "0" * 64))
    con.close()
    before = old.read_bytes()
    with pytest.raises(LedgerError, match=r"schema version 1.*migrate_ledger"):
        Ledger(old)
    assert old.read_bytes() == before
    led = migrate_ledger(old, new)
    key = led.identity_key
    assert led.budget(data_account(key=key, data_name="survey"), "p") == Budget(2.0, 1e-3)
    assert len(led.groups()) == 2 and old.read_bytes() == before
    assert b"0" * 64 not in new.read_bytes()  # the unkeyed fingerprint is not carried over
    with pytest.raises(LedgerError, match="exists"):
        migrate_ledger(old, new)


# -- lightness ---------------------------------------------------------------------------


def test_ledger_modules_of_ledger_show_import_neither_pandas_nor_scipy(tmp_path):
    """The modules behind ``ledger show`` import pandas/scipy lazily, if at all.

    The package ``__init__`` files are bypassed (empty stand-ins with the real ``__path__``),
    so this checks the ledger modules themselves, whatever the package roots import.
    """
    import subprocess
    import sys

    Ledger(tmp_path / "l.db").set_budget("hmac-sha256:" + "0" * 64, "p", Budget(1.0, 1e-3))
    src = Path(__file__).resolve().parents[2] / "src" / "distpriv"
    script = f"""
import sys, types
for name, path in (("distpriv", {str(src)!r}), ("distpriv.pipeline", {str(src / "pipeline")!r})):
    mod = types.ModuleType(name)
    mod.__path__ = [path]
    sys.modules[name] = mod
from distpriv.pipeline.ledger import ledger_report
report = ledger_report(sys.argv[1])
assert report["groups"][0]["budget"] == {{"epsilon": 1.0, "delta": 0.001}}, report
heavy = sorted(m for m in ("pandas", "scipy", "sklearn", "duckdb") if m in sys.modules)
print(",".join(heavy))
"""
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "l.db")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", done.stdout
