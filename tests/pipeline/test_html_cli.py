"""--html on release/audit/demo, 'distpriv report', and mechanism = "auto" from a config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import run

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "adult-income.toml"


@pytest.fixture(scope="module")
def auto_config():
    """The Adult example with mechanism = "auto" (exact calibration, weights per statistic)."""
    return ROOT / "examples" / "adult-auto.toml"


def test_release_auto_html_and_report(auto_config, tmp_path, capsys, short_utility_grid):
    # short_utility_grid (tests/conftest.py): the privacy-utility figure on two epsilons,
    # not seven (most of this test's 40 s). Nothing asserted here depends on the grid: the
    # chosen mechanism is marked in the table and the legend, and the saved report
    # re-renders to the same page, whatever the grid.
    page, out = tmp_path / "r.html", tmp_path / "r.json"
    status, stdout, err = run(
        ["release", auto_config, "--html", page, "--out", out, "--insecure-seed", 1, "--json"],
        capsys,
    )
    assert status == 0, err
    public = json.loads(stdout)
    assert json.loads(out.read_text()) == public
    rows = {r["mechanism"]: r for r in public["choice"]}
    chosen = public["mechanism"]["name"]
    assert rows[chosen]["verified"]
    verified = {n: r["mse"] for n, r in rows.items() if r["verified"]}
    assert chosen == min(verified, key=verified.get)
    assert public["choice_weights"] == [1.0, 1.0, 1.0, 1.0, 2.0]
    assert public["utility"]["chosen"] == chosen
    html = page.read_text(encoding="utf-8")
    assert f"{chosen}</code> ← chosen" in html and f"{chosen} (chosen)" in html
    assert public["utility"]["epsilons"] == sorted({1.0, *short_utility_grid})
    # The saved report renders to the same page.
    again = tmp_path / "again.html"
    status, stdout, err = run(["report", out, "--html", again], capsys)
    assert status == 0, err
    assert again.read_text(encoding="utf-8") == html
    # A release's files are never overwritten: the run stops before any work.
    status, _, err = run(["release", auto_config, "--html", page, "--insecure-seed", 1], capsys)
    assert status == 2 and "--html" in err and "already exists" in err
    assert len(err.strip().splitlines()) == 1


def test_auto_refuses_unknown_option(auto_config, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        auto_config.read_text().replace("weights =", 'direction = "x"\nweights ='),
        encoding="utf-8",
    )
    status, _, err = run(["release", bad, "--insecure-seed", 1], capsys)
    assert status == 2 and "'direction'" in err and "auto" in err


def test_report_bad_input(tmp_path, capsys):
    page = tmp_path / "x.html"
    notjson = tmp_path / "r.json"
    notjson.write_text("{not json")
    status, _, err = run(["report", notjson, "--html", page], capsys)
    assert status == 2 and "is not a JSON report" in err and not page.exists()
    notjson.write_text(json.dumps({"kind": "calibration"}))
    status, _, err = run(["report", notjson, "--html", page], capsys)
    assert status == 2 and "report['kind']" in err and not page.exists()
    status, _, err = run(["report", tmp_path / "missing.json", "--html", page], capsys)
    assert status == 2 and "missing.json" in err and not page.exists()
    status, _, err = run(["report", notjson], capsys)
    assert status == 2 and "--html" in err


def test_audit_html(tmp_path, capsys):
    page = tmp_path / "audit.html"
    argv = ["audit", CONFIG, "--mechanism", "daum", "--repetitions", 1, "--html", page]
    status, stdout, err = run([*argv, "--quiet"], capsys)
    assert status == 0, err
    assert stdout == ""  # --quiet
    html = page.read_text(encoding="utf-8")
    assert "Verdicts" in html and "daum" in html and "consistent" in html


def test_demo_html(tmp_path, capsys, short_utility_grid):
    # short_utility_grid (tests/conftest.py): the figure on two epsilons, not seven. The claim
    # (every applicable mechanism is drawn or its absence explained, and W-infinity's reason
    # is stated) is checked at every epsilon of whatever grid the figure uses.
    page, out = tmp_path / "demo.html", tmp_path / "demo.json"
    argv = ["demo", "--n-samples", 50, "--attack-repetitions", 0, "--html", page, "--out", out]
    status, stdout, err = run([*argv, "--quiet"], capsys)
    assert status == 0, err
    assert stdout == ""
    public = json.loads(out.read_text())
    html = page.read_text(encoding="utf-8")
    assert "simulation" in html and html.count("<svg") == 1
    curves = {c["mechanism"] for c in public["utility"]["curves"]}
    skipped = {s["mechanism"]: s["reason"] for s in public["utility"]["skipped"]}
    for row in public["rows"]:
        assert row["mechanism"] in html
        if row["applicable"]:  # in the figure, or its absence explained
            assert row["mechanism"] in curves or skipped.get(row["mechanism"])
    # The figure uses the exact Gaussian model: W-infinity between Gaussians of unequal
    # covariances is infinite, which the caption says.
    assert "infinite" in skipped["wasserstein"] and "infinite" in html
