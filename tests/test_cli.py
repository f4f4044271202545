"""The command line: output, JSON, atomic files, and one-line errors on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import run
from distpriv.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "eigm-example.toml"


def test_example_json_reproduces_paper(capsys):
    status, out, err = run(
        [
            "calibrate",
            str(EXAMPLE),
            "--mechanism",
            "eigm",
            "--epsilon",
            "1",
            "--delta",
            "1e-3",
            "--calibration",
            "classical",
            "--json",
        ],
        capsys,
    )
    assert status == 0
    report = json.loads(out)
    assert report["mechanism"] == "eigm"
    variances = sorted(report["diagnostics"]["noise_variances"])
    assert variances == pytest.approx([3.52, 18.52], abs=0.005)
    assert report["guarantee"]["calibration"] == "classical"
    # classical at ε = 1 is outside Thm 4.2: one warning line on stderr
    assert "warning" in err and "classical-epsilon" in err


def test_human_output(capsys):
    status, out, _ = run(
        ["calibrate", str(EXAMPLE), "--mechanism", "daum", "--epsilon", "0.5", "--delta", "1e-3"],
        capsys,
    )
    assert status == 0
    assert "expected L2 error" in out and "guarantee" in out and "Assumptions" in out


def test_out_file_written_atomically(tmp_path, capsys):
    target = tmp_path / "report.json"
    status, _, _ = run(
        [
            "calibrate",
            str(EXAMPLE),
            "--mechanism",
            "expm-g",
            "--epsilon",
            "0.5",
            "--delta",
            "1e-3",
            "--out",
            str(target),
        ],
        capsys,
    )
    assert status == 0
    assert json.loads(target.read_text())["mechanism"] == "expm-g"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_group_options_from_config(capsys):
    status, out, _ = run(
        ["calibrate", str(EXAMPLE), "--mechanism", "groupdp-l", "--epsilon", "1", "--json"],
        capsys,
    )
    assert status == 0
    assert json.loads(out)["diagnostics"]["group_size"] == 1


BAD_TOML = {
    "unknown key": "[model]\nmeans = [[0.0], [1.0]]\ncovariance = [[1.0]]\nmean = 3\n",
    "invalid TOML": "[model\nmeans = 1",
    "non-PSD covariance": "[model]\nmeans = [[0.0, 0.0], [1.0, 1.0]]\n"
    "covariance = [[1.0, 2.0], [2.0, 1.0]]\n",
    "NaN mean": "[model]\nmeans = [[0.0], [nan]]\ncovariance = [[1.0]]\n",
    "missing covariance": "[model]\nmeans = [[0.0], [1.0]]\n",
    "unknown mechanism options": "[model]\nmeans = [[0.0], [1.0]]\ncovariance = [[1.0]]\n"
    "[options.foo]\nx = 1\n",
    "bad pair": "[model]\nmeans = [[0.0], [1.0]]\ncovariance = [[1.0]]\npairs = [['a', 'b']]\n",
}


@pytest.mark.parametrize("case", sorted(BAD_TOML))
def test_bad_model_files(case, tmp_path, capsys):
    path = tmp_path / "model.toml"
    path.write_text(BAD_TOML[case])
    out_file = tmp_path / "out.json"
    status, _out, err = run(
        [
            "calibrate",
            str(path),
            "--mechanism",
            "eigm",
            "--epsilon",
            "1",
            "--delta",
            "1e-3",
            "--out",
            str(out_file),
        ],
        capsys,
    )
    assert status == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("distpriv: error:")
    assert "Traceback" not in err
    assert not out_file.exists()


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--epsilon", "nan", "--delta", "1e-3"], "epsilon must be finite"),
        (["--epsilon", "inf", "--delta", "1e-3"], "epsilon must be finite"),
        (["--epsilon", "-1", "--delta", "1e-3"], "epsilon must be > 0"),
        (["--epsilon", "1", "--delta", "1"], "delta must be < 1"),
        (["--epsilon", "1", "--delta", "-0.5"], "delta must be >= 0"),
        (["--epsilon", "1"], "needs delta > 0"),
        (["--epsilon", "abc", "--delta", "1e-3"], "not a number"),
    ],
)
def test_bad_parameters(args, match, tmp_path, capsys):
    out_file = tmp_path / "out.json"
    status, _, err = run(
        ["calibrate", str(EXAMPLE), "--mechanism", "eigm", *args, "--out", str(out_file)],
        capsys,
    )
    assert status == 2
    assert match in err
    assert len(err.strip().splitlines()) == 1
    assert not out_file.exists()


def test_missing_file_and_unknown_mechanism(capsys):
    status, _, err = run(
        ["calibrate", "nope.toml", "--mechanism", "eigm", "--epsilon", "1"], capsys
    )
    assert status == 2 and "cannot read model file" in err
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", str(EXAMPLE), "--mechanism", "foo", "--epsilon", "1"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_refusal_is_one_line(capsys):
    status, _, err = run(
        [
            "calibrate",
            str(EXAMPLE),
            "--mechanism",
            "noiseless",
            "--epsilon",
            "0.1",
            "--delta",
            "1e-3",
        ],
        capsys,
    )
    assert status == 2 and "not (0.1, 0.001)-private" in err
    assert len(err.strip().splitlines()) == 1


def test_console_script_subprocess():
    # The installed entry point: non-zero exit and no traceback on bad input.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "distpriv.cli",
            "calibrate",
            str(EXAMPLE),
            "--mechanism",
            "eigm",
            "--epsilon",
            "0",
            "--delta",
            "1e-3",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "epsilon must be > 0" in proc.stderr


def test_mechanisms_listing(capsys):
    status, out, _ = run(["mechanisms", "--json"], capsys)
    assert status == 0
    names = [r["name"] for r in json.loads(out)]
    assert "daum" in names and "noiseless" in names
