"""``[mechanism] population_set`` and ``distpriv.population_set`` (the tighter
population sets are the curator's to choose, and one choice holds everywhere in a command —
calibration, ``auto``, the price, the ledger's composition and the guarantee's text)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import distpriv as dp
from cli_helpers import run
from distpriv.accounting import gaussian_pair_delta
from distpriv.pipeline.config import load_release_config
from distpriv.population.confidence import population_model, selected_set

from .test_release import csv, synthetic, write_config

QUERY = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')", "avg_hours": "avg(hours)"}


def _config(tmp_path, pset: str | None, name: str = "c"):
    model = csv(tmp_path / "model.csv", synthetic(400))
    data = csv(tmp_path / "data.csv", synthetic(20, seed=3))
    cfg = tmp_path / f"{name}.toml"
    write_config(cfg, model=model, query=QUERY)
    if pset is not None:
        cfg.write_text(cfg.read_text().replace("delta = 1e-3", f"delta = 1e-3\n{pset}"))
    return cfg, model, data


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("population_set = 'wide'", "'wide'"),
        ("population_set = 3", "3"),
        ("population_set = 'Tight'", "'Tight'"),
    ],
)
def test_a_bad_population_set_is_one_line_naming_the_key_and_value(tmp_path, capsys, line, shown):
    cfg, _, data = _config(tmp_path, line)
    out_file = tmp_path / "out.json"
    status, _, err = run(["release", cfg, "--data", data, "--out", out_file], capsys)
    assert status == 2, err
    errors = [ln for ln in err.splitlines() if ln.startswith("distpriv: error:")]
    assert len(errors) == 1 and "Traceback" not in err
    assert "[mechanism] population_set" in errors[0] and shown in errors[0], errors[0]
    assert "'box', 'joint', 'tight'" in errors[0] or "'joint', 'box', 'tight'" in errors[0]
    assert not out_file.exists()


def test_the_key_is_parsed_and_is_not_a_mechanism_option(tmp_path):
    cfg, _, _ = _config(tmp_path, "population_set = 'tight'")
    parsed = load_release_config(cfg)
    assert parsed.population_set == "tight" and "population_set" not in parsed.options
    plain, _, _ = _config(tmp_path, None, name="plain")
    assert load_release_config(plain).population_set == "box"


def test_the_python_context_names_a_bad_set():
    with (
        pytest.raises(dp.ParameterError, match=r"population_set .* got 'wide'"),
        dp.population_set("wide"),
    ):
        pass
    assert selected_set() == "box"
    with dp.population_set("tight"):
        assert selected_set() == "tight"
    assert selected_set() == "box"  # restored on leaving


def _release(tmp_path, capsys, pset: str):
    cfg, model, data = _config(tmp_path, f"population_set = '{pset}'", name=pset)
    led = tmp_path / f"{pset}.ledger"
    status, out, err = run(["release", cfg, "--data", data, "--json", "--ledger", led], capsys)
    assert status == 0, err
    return json.loads(out), model


def _members_delta(model_csv, noise: np.ndarray, pset: str) -> float:
    """δ(1) of ``noise`` on the worst members of the set ``pset`` (the accountant, both
    directions): what a ledger composing on that set would find."""
    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dp.model_query(
            pd.read_csv(model_csv),
            QUERY,
            dp.ProportionSecret("rich", values=[0.3, 0.5]),
            subset_size=20,
            method="analytic",
        )
        with dp.population_set(pset):
            members = population_model(model, beta=0.05, noise_cov=noise, epsilon=1.0)
    worst = 0.0
    for i, j in members.pairs:
        for a, b in ((i, j), (j, i)):
            ca, cb = members.covariances[a] + noise, members.covariances[b] + noise
            worst = max(
                worst,
                gaussian_pair_delta(members.means[a], ca, members.means[b], cb, epsilon=1.0),
            )
    return worst


def test_one_set_for_the_calibration_the_ledger_and_the_guarantee(tmp_path, capsys):
    """A tight-set release: less noise than the box's on the same table, its guarantee's
    premise is the tight set's, and the ledger composes on the same set (its ε for this
    one release meets the claim; composed on the box instead it would not)."""
    box, _ = _release(tmp_path, capsys, "box")
    tight, model_csv = _release(tmp_path, capsys, "tight")
    # Less noise at the same stated confidence.
    assert tight["mechanism"]["expected_l2_error"] < 0.9 * box["mechanism"]["expected_l2_error"]
    premise = {
        s: next(p for p in r["guarantee"]["premises"] if p["name"] == "population")
        for s, r in (("box", box), ("tight", tight))
    }
    assert "sampling law of delta's own distance psi" in premise["tight"]["detail"]
    assert "corners of their confidence box" in premise["box"]["statement"]
    assert "quantile" not in premise["box"]["detail"]
    # The ledger composed the release on the tight set: its ε meets the claim.
    assert tight["ledger"]["composed"]["epsilon"] <= 1.0 + 1e-9
    noise = np.array(tight["mechanism"]["noise_covariance"])
    assert _members_delta(model_csv, noise, "tight") <= 1e-3 * (1 + 1e-6)
    # Not vacuous: on the box's members the same noise does not meet (1, 1e-3), so a
    # ledger composing on the box would have reported ε > 1 for this release.
    assert _members_delta(model_csv, noise, "box") > 1.05e-3


def test_verify_uses_the_configured_set(tmp_path, capsys):
    """``distpriv verify`` calibrates on the configured set too: the same noise as the
    release's, and the tight premise (``distpriv audit`` enters the set the same way,
    pipeline/steps._population_set)."""
    tight, _ = _release(tmp_path, capsys, "tight")
    cfg = tmp_path / "tight.toml"
    status, out, err = run(["verify", cfg, "--json", "--max-samples", "1000"], capsys)
    assert status == 0, err
    checked = json.loads(out)
    np.testing.assert_allclose(
        checked["mechanism"]["noise_covariance"], tight["mechanism"]["noise_covariance"]
    )
    premise = next(p for p in checked["guarantee"]["premises"] if p["name"] == "population")
    assert "sampling law of delta's own distance psi" in premise["detail"]


@pytest.mark.parametrize("pset", ["box", "tight"])
def test_the_price_table_says_what_the_tight_set_buys_unless_it_is_used(tmp_path, pset):
    """The price (``verify``'s private table) is computed on the command's set: on the box,
    where the population premise costs here, a line names the tight set and what it buys;
    on the tight set, no such line (its re-calibrations are on the tight set)."""
    cfg, _, _ = _config(tmp_path, f"population_set = '{pset}'", name=pset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = dp.pipeline.run_verify(cfg, max_samples=1000)
    price = outcome.private["price"]
    hint = [ln for ln in price["lines"] if "population_set = 'tight'" in ln]
    assert len(hint) == (1 if pset == "box" else 0), price["lines"]
    if pset == "box":
        assert "the population set is 'box'" in hint[0]
