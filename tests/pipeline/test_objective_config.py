"""``[mechanism] objective`` and ``distpriv calibrate --objective``: what the shaped mechanisms
and ``auto`` minimise reaches them from a configuration and from the command line, a bad
value is one line naming the key and the value, and the report records which was used."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_helpers import run
from distpriv.errors import ConfigError
from distpriv.pipeline.config import load_release_config

from .test_release import csv, synthetic, write_config

QUERY = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')", "avg_hours": "avg(hours)"}


def _config(tmp_path, mechanism: str, line: str | None, name: str = "c"):
    model = csv(tmp_path / "model.csv", synthetic(400))
    data = csv(tmp_path / "data.csv", synthetic(20, seed=3))
    cfg = tmp_path / f"{name}.toml"
    write_config(cfg, model=model, query=QUERY)
    text = cfg.read_text().replace("name = 'eigm'", f"name = '{mechanism}'")
    if line is not None:
        text = text.replace("delta = 1e-3", f"delta = 1e-3\n{line}")
    cfg.write_text(text)
    return cfg, data


@pytest.mark.parametrize(
    ("line", "shown"),
    [("objective = 'cents'", "'cents'"), ("objective = 2", "2"), ("objective = 'L2'", "'L2'")],
)
def test_a_bad_objective_is_one_line_naming_the_key_and_value(tmp_path, capsys, line, shown):
    cfg, data = _config(tmp_path, "auto", line)
    out_file = tmp_path / "out.json"
    status, _, err = run(["release", cfg, "--data", data, "--out", out_file], capsys)
    assert status == 2, err
    errors = [ln for ln in err.splitlines() if ln.startswith("distpriv: error:")]
    assert len(errors) == 1 and "Traceback" not in err
    assert "[mechanism] objective" in errors[0] and shown in errors[0], errors[0]
    assert "'relative', 'l2'" in errors[0]
    assert not out_file.exists()


def test_objective_on_a_fixed_shape_mechanism_is_refused_with_its_name(tmp_path):
    cfg, _ = _config(tmp_path, "expm-g", "objective = 'l2'")
    with pytest.raises(ConfigError, match=r"objective does not apply to name = 'expm-g'"):
        load_release_config(cfg)


@pytest.mark.parametrize("mechanism", ["auto", "optimal-g", "optimal-g-full"])
def test_the_key_is_a_mechanism_option(tmp_path, mechanism):
    cfg, _ = _config(tmp_path, mechanism, "objective = 'l2'")
    assert load_release_config(cfg).options["objective"] == "l2"


def _release(tmp_path, capsys, line: str | None, name: str) -> dict:
    cfg, data = _config(tmp_path, "auto", line, name=name)
    status, out, err = run(
        ["release", cfg, "--data", data, "--json", "--no-ledger", "--insecure-seed", "1"], capsys
    )
    assert status == 0, err
    return json.loads(out)


def test_the_report_says_which_objective_auto_compared_by(tmp_path, capsys):
    default = _release(tmp_path, capsys, None, "default")
    l2 = _release(tmp_path, capsys, "objective = 'l2'", "l2")
    assert default["choice_objective"] == "relative" and l2["choice_objective"] == "l2"
    assert l2["choice_weights"] is None
    weights = np.asarray(default["choice_weights"])
    assert weights.shape == (3,) and np.all(weights > 0)


def test_cli_calibrate_takes_the_objective(tmp_path, capsys):
    model = tmp_path / "m.toml"
    model.write_text(
        "[model]\nmeans = [[100.0, 1.0], [99.0, 1.02]]\n"
        "covariance = [[2200.0, -0.6], [-0.6, 0.0013]]\n"
    )
    args = ["calibrate", model, "--mechanism", "optimal-g", "--epsilon", "1", "--delta", "1e-3"]
    runs = {}
    for objective in ("l2", "relative"):
        status, out, err = run([*args, "--objective", objective, "--json"], capsys)
        assert status == 0, err
        runs[objective] = json.loads(out)
    assert runs["l2"]["diagnostics"]["objective_kind"] == "l2"
    assert runs["relative"]["diagnostics"]["objective_kind"] == "relative"
    status, _, err = run(
        ["calibrate", model, "--mechanism", "expm-g", "--epsilon", "1", "--delta", "1e-3",
         "--objective", "l2"],
        capsys,
    )  # fmt: skip
    errors = [ln for ln in err.splitlines() if ln.startswith("distpriv: error:")]
    assert status != 0 and len(errors) == 1 and "--objective" in errors[0], err
