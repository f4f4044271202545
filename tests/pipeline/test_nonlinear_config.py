"""Non-linear statistics in a configuration: [model] bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_helpers import one_line_error, run
from distpriv.errors import ConfigError
from distpriv.pipeline.config import load_release_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "adult-quantiles.toml"


def test_example_releases_with_the_bootstrap_premise(tmp_path, capsys):
    status, out, err = run(["release", EXAMPLE, "--json", "--no-ledger"], capsys)
    assert status == 0, err
    report = json.loads(out)
    text = json.dumps(report)
    assert "bootstrap consistency" in text and "30 resamples" in text


@pytest.mark.parametrize("bad", ["10", "true", '"fifty"', "19"])
def test_bad_bootstrap_is_one_line(tmp_path, capsys, bad):
    cfg = tmp_path / "c.toml"
    cfg.write_text(EXAMPLE.read_text().replace("bootstrap = 30", f"bootstrap = {bad}"))
    with pytest.raises(ConfigError, match=r"\[model\] bootstrap must be an integer >= 20"):
        load_release_config(cfg)
    status, _, err = run(["release", cfg], capsys)
    one_line_error(status, err, "bootstrap")


def test_bootstrap_none_switches_the_layer_off(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(EXAMPLE.read_text().replace("bootstrap = 30", 'bootstrap = "none"'))
    assert load_release_config(cfg).plan.model.bootstrap is None
    assert load_release_config(EXAMPLE).plan.model.bootstrap == 30
