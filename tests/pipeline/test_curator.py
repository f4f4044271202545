"""A curator's day: ranges, the dry run, API parity, the audited choice.

- a declared range clamps a released value and the report says so;
- ``distpriv verify`` draws no noise and writes nothing but its report;
- ``dp.release(..., mechanism="auto")`` works as in a config;
- displaying an outcome (repr, notebook HTML) never shows its private part;
- the audit of ``mechanism = "auto"`` audits the mechanism the release chooses;
- refusals suggest only mechanisms that the same model accepts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from distpriv import cli
from distpriv.central import CalibratedMechanism
from distpriv.errors import MechanismNotApplicableError, UtilityWarning
from distpriv.pipeline import run_audit, run_release, run_verify
from distpriv.pipeline.config import load_release_config
from support import quiet

ROOT = Path(__file__).resolve().parents[2]
HOSPITAL = ROOT / "examples" / "hospital"


@pytest.fixture
def hospital(tmp_path: Path) -> Path:
    """The hospital example copied to a fresh folder (nothing is written into examples/)."""
    for f in HOSPITAL.iterdir():
        if f.suffix in (".csv", ".toml"):
            shutil.copy(f, tmp_path / f.name)
    return tmp_path / "hospital.toml"


def _with(config: Path, text: str) -> Path:
    config.write_text(config.read_text() + "\n" + text)
    return config


# -- ranges ----------------------------------------------------------------------------


def test_declared_range_clamps_the_released_value_and_says_so(hospital):
    # The average height of 50 patients is far above 1, so a range [0, 1] must clamp it.
    cfg = _with(hospital, "[ranges]\navg_height = [0.0, 1.0]\navg_weight = [0, 1000]\n")
    with pytest.warns(UtilityWarning, match="avg_height"):  # noise sd > range width 1
        out = run_release(cfg, insecure_seed=3, ledger=None)
    stats = {s["name"]: s for s in out.public["statistics"]}
    h = stats["avg_height"]
    assert h["value"] == 1.0 and h["clamped"] is True and h["range"] == [0.0, 1.0]
    lo, hi = h["interval95"]
    assert 0.0 <= lo <= hi <= 1.0
    w = stats["avg_weight"]
    assert w["clamped"] is False and 0 < w["value"] < 1000
    assert "range" not in stats["avg_blood_pressure"]
    assert "avg_height" in out.public["ranges_note"]
    assert "post-processing" in out.public["ranges_note"]
    # The curator sees each statistic's noise relative to its spread.
    ratio = out.private["noise_to_spread"]
    assert len(ratio) == 3 and all(r > 0 for r in ratio)


def test_range_config_errors_name_the_key(hospital):
    bad = _with(hospital, "[ranges]\navg_height = [5, 1]\n")
    with pytest.raises(dp.ConfigError, match=r"\[ranges\] avg_height"):
        load_release_config(bad)
    with pytest.raises(dp.ParameterError, match="ranges: 'nope'"):
        dp.Query({"a": "avg(x)"}, ranges={"nope": (0, 1)})
    with pytest.raises(dp.ParameterError, match="low < high"):
        dp.Query({"a": "avg(x)"}, ranges={"a": (1, float("nan"))})


def test_query_clamp_is_the_projection_on_the_box():
    q = dp.Query({"a": "avg(x)", "b": "count(*)"}, ranges={"b": (0, float("inf"))})
    v, changed = q.clamp(np.array([[-3.0, -2.0], [4.0, 7.0]]))
    assert v.tolist() == [[-3.0, 0.0], [4.0, 7.0]]
    assert changed.tolist() == [[False, True], [False, False]]


# -- verify: a dry run ---------------------------------------------------------------


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """One `distpriv verify` of the hospital example (a dry run of ~10 s), shared by the two
    tests below: it runs with noise drawing made to fail, and the outcome of the
    run_verify call the command makes is kept for the library-level assertions."""
    folder = tmp_path_factory.mktemp("verify")
    for f in HOSPITAL.iterdir():
        if f.suffix in (".csv", ".toml"):
            shutil.copy(f, folder / f.name)
    config = folder / "hospital.toml"

    def no_noise(*args, **kwargs):
        raise AssertionError("verify drew noise")

    import distpriv.pipeline as pipeline

    outcomes = []

    def spy(*args, **kwargs):
        outcomes.append(run_verify(*args, **kwargs))
        return outcomes[-1]

    import distpriv.pipeline.commands.verify as verify_command

    with pytest.MonkeyPatch.context() as mp:
        # two looks of the sequential check (3,000 then 6,000 datasets per value)
        mp.setattr(verify_command, "VERIFY_SAMPLES", 3000)
        mp.setattr(verify_command, "VERIFY_MAX_SAMPLES", 6000)
        mp.setattr(CalibratedMechanism, "release", no_noise)
        mp.setattr(dp.noise, "secure_sample", no_noise)
        mp.setattr(pipeline, "run_verify", spy)  # the command imports it from here
        before = sorted(p.name for p in folder.iterdir())
        out = folder / "check.json"
        status = cli.main(["verify", str(config), "--out", str(out), "--quiet"])
        after = sorted(p.name for p in folder.iterdir())
    (outcome,) = outcomes
    return {"status": status, "before": before, "after": after, "out": out, "outcome": outcome}


def test_verify_draws_no_noise_and_writes_only_its_report(verified):
    assert verified["status"] in (0, 1)
    # no ledger, no other file
    assert verified["after"] == sorted([*verified["before"], "check.json"])
    report = json.loads(verified["out"].read_text())
    assert report["kind"] == "verification" and report["noise_drawn"] is False
    assert report["verification"]["target_delta"] == pytest.approx(1e-3)
    ver = report["verification"]
    assert ver["max_looks"] == 2 and 1 <= ver["looks"] <= 2
    assert ver["n_samples"] == (3000, 6000)[ver["looks"] - 1]
    assert ver["stopped"] in (
        "certified",
        "below the target",
        "first look clear",  # the early stop: only after one clean look
        "sample budget",
        "time budget",
    )
    if ver["stopped"] == "first look clear":
        assert ver["looks"] == 1 and ver["verdict"] == "no evidence"
    from distpriv.report.text import _verification_line

    line = _verification_line(ver)
    assert f"{ver['n_samples']} resampled datasets per value" in line
    assert f"stopped: {ver['stopped']}" in line
    assert "released" not in json.dumps(report["statistics"])


def test_run_verify_uses_the_release_mechanism(verified):
    out = verified["outcome"]  # run_verify(<the hospital config>), as the command calls it
    assert out.public["mechanism"]["name"] == "expm-g"
    assert out.public["guarantee"]["epsilon"] == pytest.approx(1.0)


# -- the Python API ------------------------------------------------------------------


def test_library_release_accepts_auto():
    model = pd.read_csv(HOSPITAL / "model.csv")
    data = pd.read_csv(HOSPITAL / "release.csv")
    secret = dp.ProportionSecret("gender = 'female'", [0.5, 0.6])
    rep = quiet(
        dp.release,
        data,
        {"avg_height": "avg(height)", "avg_weight": "avg(weight)"},
        secret,
        model_data=model,
        mechanism="auto",
        epsilon=1.0,
        delta=1e-3,
        rng=5,
    )
    assert rep.choice is not None and rep.mechanism.name == rep.choice.name
    ok = [c for c in rep.choice.candidates if c.verified]
    # The criterion (default objective): Σ Var(Z_k)/v_k, v_k the sampling variances.
    v = np.mean([np.diag(c) for c in rep.model.covariances], axis=0)
    relative = float(np.sum(np.diag(rep.mechanism.noise_covariance) / v))
    assert relative == pytest.approx(min(c.mse for c in ok), rel=1e-9)
    assert rep.mechanism.noise_rank == 2  # full rank unless allow_partial_noise


def test_outcome_display_never_shows_the_private_part(hospital):
    out = quiet(run_release, hospital, insecure_seed=1, include_true=True, ledger=None)
    assert out.private  # there is something to hide
    private_markers = ["PRIVATE curator diagnostics", "true_values", "stratum_sizes"]
    salt = [str(v) for k, v in out.private.items() if "salt" in k]
    for shown in (repr(out), out._repr_html_()):
        for marker in [*private_markers, *salt]:
            assert marker not in shown
    assert "avg_height" in out._repr_html_()
    view = out.private_view()
    assert "PRIVATE" in repr(view) and "true_values" in view._repr_html_()
    # The in-memory report's repr and HTML leave out the true values and the model.
    report = out.report
    truth = f"{report.true_value[0]:.6g}"
    assert truth not in repr(report) and "true_value" not in repr(report)
    assert "<table" in report._repr_html_() and truth not in report._repr_html_()
    # Models and audit outcomes display as HTML too.
    assert "hypothesis" in report.model._repr_html_()


def test_audit_outcome_displays_as_html(hospital):
    out = quiet(run_audit, hospital, repetitions=1, seed=0)
    html = out._repr_html_()
    assert html.startswith("<div") and "audit" in html


# -- audit and refusals --------------------------------------------------------------


def test_audit_of_auto_audits_the_released_choice(hospital):
    cfg = hospital.read_text().replace('name = "expm-g"', 'name = "auto"')
    hospital.write_text(cfg)
    chosen = quiet(run_release, hospital, insecure_seed=2, ledger=None).public["mechanism"]
    audited = quiet(run_audit, hospital, repetitions=1, seed=0).public
    names = [m["mechanism"] for m in audited["mechanisms"] if m["mechanism"] != "none"]
    assert names == [chosen["name"]]
    assert any("auto: audited" in n for n in audited["notes"])


def test_noiseless_refusal_suggests_only_accepted_mechanisms():
    model = dp.GaussianQueryModel(
        means=[[0.0, 0.0], [3.0, 0.5]], covariances=[[1.0, 0.2], [0.2, 1.0]]
    )
    with pytest.raises(MechanismNotApplicableError) as err:
        dp.calibrate("noiseless", model, epsilon=1.0, delta=1e-3)
    suggested = [s for s in dp.MECHANISMS if f"'{s}'" in str(err.value)]
    assert suggested and "daum" not in suggested
    for name in suggested:
        mech = dp.calibrate(name, model, epsilon=1.0, delta=1e-3)
        assert mech.noise_rank == model.dim  # what auto accepts by default


def test_public_report_states_no_stratum_size_in_words(hospital):
    # Premises and notes are text: a data-derived count inside a sentence is still a leak.
    import re

    out = quiet(run_release, hospital, insecure_seed=5, ledger=False)
    sizes = out.private["model"]["stratum_sizes"]
    text = json.dumps(out.public)
    for n in sizes:
        assert not re.search(rf"(?<![\d.]){n}(?![\d.])", text), n
    assert "population" in text  # the premise is stated, without the counts
