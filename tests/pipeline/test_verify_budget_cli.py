"""``distpriv verify --max-samples N`` and ``--no-early-stop``: the
check's sample budget and stopping rule from the command line, validated with one-line
errors before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import distpriv.pipeline.commands.verify as verify_command
from cli_helpers import one_line_error, run
from distpriv import ParameterError, ParameterTypeError
from distpriv.pipeline import run_verify

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "adult-income.toml"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("999", ["--max-samples", ">= 1000", "999"]),
        ("0", ["--max-samples", ">= 1000"]),
        ("-5", ["--max-samples", "non-negative"]),
        ("1e5", ["--max-samples", "1e5"]),
        ("abc", ["--max-samples", "abc"]),
    ],
)
def test_bad_max_samples_is_one_line(value, words, tmp_path, capsys):
    out = tmp_path / "report.json"
    status, stdout, err = run(["verify", CONFIG, "--max-samples", value, "--out", out], capsys)
    one_line_error(status, err, *words)
    assert stdout == "" and not out.exists()


def test_run_verify_validates_its_budget_arguments():
    with pytest.raises(ParameterError, match=r"max_samples \(--max-samples\) must be >= 1000"):
        run_verify(CONFIG, max_samples=10)
    with pytest.raises(ParameterTypeError, match="max_samples"):
        run_verify(CONFIG, max_samples=2.5e4)
    with pytest.raises(ParameterTypeError, match="early_stop"):
        run_verify(CONFIG, early_stop="yes")


def test_max_samples_sets_the_budget(capsys):
    # A budget below the first look's 20,000: one look of exactly that many datasets.
    status, out, err = run(["verify", CONFIG, "--max-samples", "2000", "--json"], capsys)
    assert status in (0, 1), err
    check = json.loads(out)["verification"]
    assert check["n_samples"] == 2000 and check["looks"] == 1 and check["max_looks"] == 1


def test_no_early_stop_spends_the_budget(monkeypatch, capsys):
    # First look 2000, budget 4000: without the early stop an undecided check takes both
    # looks whatever the first one shows (ExpM (G) on Adult is never decided at these
    # sizes: neither certified nor bounded below the claim).
    monkeypatch.setattr(verify_command, "VERIFY_SAMPLES", 2000)
    status, out, err = run(
        ["verify", CONFIG, "--max-samples", "4000", "--no-early-stop", "--json"], capsys
    )
    assert status == 0, err
    check = json.loads(out)["verification"]
    assert check["looks"] == 2 and check["max_looks"] == 2 and check["n_samples"] == 4000
    assert check["stopped"] == "sample budget"
    # With the early stop (the default), the first look ends it unless it is suspicious.
    status, out, err = run(["verify", CONFIG, "--max-samples", "4000", "--json"], capsys)
    check = json.loads(out)["verification"]
    assert check["max_looks"] == 2
    if check["stopped"] == "first look clear":
        assert check["looks"] == 1 and check["n_samples"] == 2000
        assert check["delta_estimate"] <= 2 * check["target_delta"]
        assert check["verdict"] == "no evidence"
    else:
        assert check["looks"] == 2
