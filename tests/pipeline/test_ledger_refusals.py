"""A refused release leaves no ledger file; an interrupted one says what the ledger holds.

A ledger that notices: every refusal after the ledger was opened (bad ε, unknown option, missing
table, bad ``--budget``) used to create an empty ``distpriv-ledger.sqlite``; Ctrl-C while
the HTML report rendered recorded the release but printed "nothing was written".
"""

from __future__ import annotations

import sqlite3

import pytest

from adult_setup import copy_release_tables, small_release_toml
from cli_helpers import run
from distpriv.pipeline.ledger import DEFAULT_LEDGER_NAME, Ledger


def _config(folder, adult_release_tables, *, release="released.csv", epsilon="1.0", extra=""):
    copy_release_tables(adult_release_tables, folder)
    cfg = folder / "release.toml"
    cfg.write_text(
        small_release_toml(
            title="refusal test", insecure_seed=3, release=release, epsilon=epsilon, extra=extra
        )
    )
    return cfg


REFUSALS = {
    "bad-epsilon": ({"epsilon": "-1.0"}, [], "epsilon"),
    "zero-epsilon": ({"epsilon": "0"}, [], "epsilon"),
    "unknown-option": ({"extra": "frobnicate = 2"}, [], "frobnicate"),
    "missing-table": ({"release": "nope.csv"}, [], "nope.csv"),
    "bad-budget": ({}, ["--budget", "1"], "--budget"),
    "budget-too-small": ({}, ["--budget", "0.01,1e-3"], "budget"),
}


@pytest.mark.parametrize("where", ["default", "--ledger"])
@pytest.mark.parametrize("kind", list(REFUSALS))
def test_a_refused_release_leaves_no_ledger_file(
    adult_release_tables, tmp_path, capsys, monkeypatch, kind, where
):
    fields, flags, word = REFUSALS[kind]
    work, ledgers = tmp_path / "work", tmp_path / "ledgers"
    work.mkdir()
    ledgers.mkdir()
    monkeypatch.setenv("DISTPRIV_LEDGER_DIR", str(ledgers))
    cfg = _config(work, adult_release_tables, **fields)
    before = sorted(p.name for p in work.iterdir())
    argv = ["release", cfg, *flags]
    if where == "--ledger":
        argv += ["--ledger", work / "curator.sqlite"]
    status, out, err = run(argv, capsys)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("distpriv: error: ") and word in err, err
    # no ledger, no temporary file, in the default folder or next to the config
    assert list(ledgers.iterdir()) == []
    assert sorted(p.name for p in work.iterdir()) == before


def test_the_first_successful_release_creates_the_ledger(
    adult_release_tables, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("DISTPRIV_LEDGER_DIR", str(tmp_path))
    cfg = _config(tmp_path, adult_release_tables)
    status, _, err = run(["release", cfg, "--quiet"], capsys)
    assert status == 0, err
    assert len(Ledger(tmp_path / DEFAULT_LEDGER_NAME).releases()) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_ctrl_c_during_the_html_stage_says_the_release_was_recorded(
    adult_release_tables, tmp_path, capsys, monkeypatch
):
    import distpriv.report.html

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(distpriv.report.html, "release_page", interrupted)
    cfg = _config(tmp_path, adult_release_tables)
    led, out_json, page = tmp_path / "l.sqlite", tmp_path / "r.json", tmp_path / "r.html"
    argv = ["release", cfg, "--ledger", led, "--out", out_json, "--html", page]
    status, out, err = run(argv, capsys)
    assert status == 130 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        f"distpriv: interrupted after the release was recorded in the ledger "
        f"(release 1 of {str(led.resolve())!r})"
    ), err
    assert "nothing was written" not in err
    assert (
        f"outputs not written: --out {str(out_json)!r}, --html {str(page)!r}, the report on "
        "stdout" in err
    ), err
    assert not out_json.exists() and not page.exists()
    (entry,) = Ledger(led).releases()  # what the message says is what the ledger holds
    assert entry.id == 1 and len(entry.released) == 2


def test_ctrl_c_before_the_record_leaves_the_ledger_unchanged(
    adult_release_tables, tmp_path, capsys, monkeypatch
):
    """Interrupted while the noise is drawn (inside the ledger's transaction): rolled back."""
    from distpriv.central import CalibratedMechanism

    cfg = _config(tmp_path, adult_release_tables)
    led = tmp_path / "l.sqlite"
    assert run(["release", cfg, "--ledger", led, "--quiet"], capsys)[0] == 0
    before = led.read_bytes()

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(CalibratedMechanism, "release", interrupted)
    status, out, err = run(["release", cfg, "--ledger", led, "--out", tmp_path / "r.json"], capsys)
    assert status == 130 and out == ""
    assert err == "distpriv: interrupted; nothing was written\n"
    assert led.read_bytes() == before and not (tmp_path / "r.json").exists()
    # and into a ledger that did not exist: no file at all
    fresh = tmp_path / "fresh.sqlite"
    status, out, err = run(["release", cfg, "--ledger", fresh], capsys)
    assert status == 130 and err == "distpriv: interrupted; nothing was written\n"
    assert not fresh.exists() and not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_a_failed_write_after_the_record_says_the_release_was_recorded(
    adult_release_tables, tmp_path, capsys, monkeypatch
):
    import distpriv.cli
    from distpriv.report.output import OutputError

    def full(files, **kwargs):
        raise OutputError(f"--out {str(files[0][0])!r}: No space left on device")

    monkeypatch.setattr(distpriv.cli, "write_files", full)
    cfg = _config(tmp_path, adult_release_tables)
    led, out_json = tmp_path / "l.sqlite", tmp_path / "r.json"
    status, out, err = run(["release", cfg, "--ledger", led, "--out", out_json], capsys)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert "No space left on device; but the release was recorded in the ledger" in err, err
    assert f"outputs not written: --out {str(out_json)!r}" in err
    con = sqlite3.connect(led)
    assert con.execute("SELECT COUNT(*) FROM releases").fetchone()[0] == 1
    con.close()


def test_a_new_ledger_created_by_another_process_during_a_release_is_joined(
    adult_release_tables, tmp_path, monkeypatch
):
    """Another process creates the (lazily opened) ledger while this release models: the
    release continues on that file, with the data's account under *its* key, so the next
    release of the same data composes with it."""
    import warnings

    from distpriv.pipeline import run_release
    from distpriv.pipeline.ledger import Budget, LedgerSession

    cfg = _config(tmp_path, adult_release_tables)
    led = tmp_path / "l.sqlite"
    real = LedgerSession.draw
    raced = []

    def draw(self, *args, **kwargs):
        if not raced:  # the other process wins the creation, with its own key and a budget
            raced.append(Ledger(led))
            raced[0].set_budget("hmac-sha256:" + "0" * 64, "other secret", Budget(1.0, 0.0))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LedgerSession, "draw", draw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = run_release(cfg, ledger=led)
        second = run_release(cfg, ledger=led)
    key = raced[0].identity_key
    assert Ledger(led).identity_key == key
    rows = Ledger(led).releases()
    assert len(rows) == 2 and rows[0].data_account == rows[1].data_account
    assert [r.composed["n_releases"] for r in rows] == [1, 2]
    assert first.public["ledger"]["account"] == second.public["ledger"]["account"]
    # the public fingerprints are those under the ledger's key, not the discarded one
    assert first.public["provenance"]["data_sha256"] == second.public["provenance"]["data_sha256"]
    assert first.private["identity_key"] is None
