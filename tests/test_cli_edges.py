"""The CLI at the edges a curator's trials reached: each refusal is one line, and comes
before anything is recorded or computed."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from cli_helpers import one_line_error, run

HOSPITAL = Path(__file__).resolve().parents[1] / "examples" / "hospital"


@pytest.fixture
def hospital(tmp_path):
    """A copy of the hospital example (its ledger would land next to the config)."""
    shutil.copytree(HOSPITAL, tmp_path / "hospital")
    return tmp_path / "hospital"


def _recorded(ledger: Path) -> int:
    """Releases in a ledger file, read with sqlite3 itself (0 when there is no file)."""
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger) as con:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        if "releases" not in tables:
            return 0
        return con.execute("select count(*) from releases").fetchone()[0]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a /proc folder")
def test_unwritable_out_is_refused_before_the_ledger_records(hospital, capsys):
    # /proc passes a permission check for root, yet no file can be created in it.
    ledger = hospital / "led.sqlite"
    status, _, err = run(
        ["release", hospital / "hospital.toml", "--ledger", ledger, "--out", "/proc/x.json"],
        capsys,
    )
    one_line_error(status, err, "--out", "/proc/x.json")
    assert "recorded" not in err
    assert _recorded(ledger) == 0
