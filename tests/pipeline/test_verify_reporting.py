"""The data-level check's verdict in the HTML report, the CLI text and release --verify."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from distpriv import GaussianQueryModel, SampledQueryModel, calibrate
from distpriv.attacks import verify_on_data
from distpriv.report.html import render_html
from distpriv.report.text import _verification_line

from .test_html import release_report


def _check(gap: float):
    # The model says the values differ by 1; the data by ``gap``.
    rng = np.random.default_rng(21)
    model = GaussianQueryModel(np.array([[0.0, 0.0], [1.0, 0.0]]), np.eye(2))
    mech = calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
    means = np.array([[0.0, 0.0], [gap, 0.0]])
    data = SampledQueryModel([rng.multivariate_normal(mu, np.eye(2), 3000) for mu in means])
    return mech, verify_on_data(data, mech, rng=21, n_eval=1500)


@pytest.fixture(scope="module")
def checks():
    return {"violation": _check(3.0), "fine": _check(1.0)}


def test_violation_and_no_evidence_in_html_and_text(checks):
    for key, (mech, check) in checks.items():
        rep = release_report(mech, [0.0, 0.0])
        rep["verification"] = json.loads(json.dumps(check.to_dict()))
        page = re.sub(r"<[^>]+>", " ", render_html(rep))
        line = _verification_line(check.to_dict())
        if key == "violation":
            assert check.verdict == "violation"
            assert "certified at confidence" in page and "VIOLATION" in line
            assert 'badge bad">violation' in render_html(rep)
        else:
            assert check.verdict in ("no evidence", "inconclusive")
            assert "certified at confidence" not in page
            if check.verdict == "no evidence":
                assert "80 % power" in page and "would have detected" in line
        # the badge never says "consistent" next to the check
        assert 'badge ok">consistent' not in render_html(rep).split("Null control")[0][-600:]


def test_inconclusive_wording_says_what_to_do(checks):
    _, check = checks["fine"]
    forced = dataclasses.replace(check, verdict="inconclusive", delta_estimate=0.01)
    assert "re-run the check with more resampled datasets" in forced.advice
    assert "INCONCLUSIVE" in _verification_line(forced.to_dict())


def test_release_verify_refuses_a_violation(tmp_path, monkeypatch, capsys):
    # DauM on Adult: every release is decoded on the lattice, so --verify must refuse with
    # one line, a non-zero exit, and no file written.
    from pathlib import Path

    import distpriv.pipeline.commands.verify as run_mod
    from distpriv.cli import main

    monkeypatch.setattr(run_mod, "VERIFY_SAMPLES", 3000)  # the fast version of the check
    root = Path(__file__).resolve().parents[2]
    text = (root / "examples" / "adult-income.toml").read_text()
    cfg = tmp_path / "daum.toml"
    cfg.write_text(text.replace('name = "expm-g"', 'name = "daum"'))
    out, priv = tmp_path / "pub.json", tmp_path / "priv.json"
    status = main(["release", str(cfg), "--verify", "--out", str(out), "--private-out", str(priv)])
    _, err = capsys.readouterr()
    assert status != 0
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and "refused by --verify" in lines[0] and "violation" in lines[0]
    assert not out.exists() and not priv.exists()
