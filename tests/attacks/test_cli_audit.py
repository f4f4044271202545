"""`distpriv audit` on the example configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import run

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "adult-income.toml"


def test_audit_json(tmp_path, capsys):
    out_file = tmp_path / "audit.json"
    status, out, _ = run(
        [
            "audit",
            CONFIG,
            "--mechanism",
            "daum",
            "--mechanism",
            "expm-g",
            "--repetitions",
            "3",
            "--json",
            "--out",
            out_file,
        ],
        capsys,
    )
    assert status == 0
    report = json.loads(out)
    names = [m["mechanism"] for m in report["mechanisms"]]
    assert names == ["none", "daum", "expm-g"]
    for m in report["mechanisms"][1:]:
        assert m["verdict"] == "consistent"
        assert {a["attack"] for a in m["attacks"]} == {
            "logistic",
            "logistic (mechanism-aware)",
            "likelihood-ratio",
        }
    assert json.loads(out_file.read_text()) == report


def test_audit_all_mechanisms_table(capsys):
    status, out, _ = run(["audit", CONFIG, "--mechanism", "all", "--repetitions", "1"], capsys)
    assert status == 0
    for name in ("wasserstein", "optimal-g", "groupdp-g", "noiseless"):
        assert name in out or name == "noiseless"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--repetitions", "0"], "repetitions must be >= 1"),
        (["--classifier", "svm"], "unknown classifier 'svm'"),
        (["--confidence", "1.5"], "confidence"),
        (["--mechanism", "laplace"], "mechanism must be one of"),
    ],
)
def test_audit_bad_input(args, match, tmp_path, capsys):
    out_file = tmp_path / "a.json"
    status, _, err = run(["audit", CONFIG, *args, "--out", out_file], capsys)
    assert status == 2 and match in err
    assert len([ln for ln in err.splitlines() if "error" in ln]) == 1
    assert not out_file.exists()
