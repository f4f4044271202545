"""The report of a release with earlier releases of the same data leads with the truth.

Text, JSON and HTML open with the composed guarantee of every account of the data (each
secret recorded for it, this release's included), then this release's own guarantee.
"""

from __future__ import annotations

import json

import pytest
from markupsafe import escape

from cli_helpers import run
from distpriv.pipeline.stages.data import load_frame

CONFIG = """
title = "lead test"
[data]
model = "model.csv"
release = "released.csv"
[query]
avg_age = "avg(age)"
avg_hours = "avg(hours_per_week)"
[secret]
predicate = "{predicate}"
values = [0.3, 0.4]
[model]
subset_size = 100
method = "analytic"
[mechanism]
name = "daum"
epsilon = 1.0
delta = 1e-3
"""


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    base = tmp_path_factory.mktemp("ledger-lead")
    model = load_frame("adult:modeling", split_seed=0, what="model")
    test = load_frame("adult:test", split_seed=0, what="test")
    model.iloc[:3000].to_csv(base / "model.csv", index=False)
    test.sample(100, random_state=3).to_csv(base / "released.csv", index=False)
    (base / "women.toml").write_text(CONFIG.format(predicate="sex = 'Female'"))
    (base / "married.toml").write_text(
        CONFIG.format(predicate="marital_status = 'Married-civ-spouse'")
    )
    return base


def test_second_release_leads_with_every_account(setting, tmp_path, capsys, short_utility_grid):
    led = tmp_path / "l.db"
    common = ["--ledger", led, "--insecure-seed", "1"]
    status, out1, err = run(["release", setting / "women.toml", *common], capsys)
    assert status == 0, err
    assert "composed over" not in out1  # a first release has only its own guarantee
    html = tmp_path / "r.html"
    status, out, err = run(
        ["release", setting / "married.toml", *common, "--out", tmp_path / "r.json",
         "--html", html],
        capsys,
    )  # fmt: skip
    assert status == 0, err
    public = json.loads((tmp_path / "r.json").read_text())
    # JSON: the composed guarantees come first, this release's own after them
    keys = list(public)
    assert keys.index("composed") < keys.index("guarantee") and keys.index("composed") <= 2
    accounts = public["composed"]["accounts"]
    assert [a["secret"] for a in accounts] == ["marital_status = 'Married-civ-spouse'",
                                               "sex = 'Female'"]  # fmt: skip
    assert all(a["n_releases"] == 2 for a in accounts)
    own = public["ledger"]["composed"]["epsilon"]
    assert accounts[0]["epsilon"] == own > public["guarantee"]["epsilon"]
    # text: the composed lines before the statistics and the single release's guarantee
    lines = out.splitlines()
    lead = next(i for i, line in enumerate(lines) if "composed over the 2 releases" in line)
    table = next(i for i, line in enumerate(lines) if "statistic" in line)
    assert lead < table and "sex = 'Female'" in out[: out.index("statistic")]
    # HTML: the composed card before the release's own words
    page = html.read_text()
    assert page.index('id="composed"') < page.index("learns very little")
    # As Jinja2's autoescape writes it (the quote as a numeric entity).
    assert page.index(str(escape("sex = 'Female'"))) < page.index("learns very little")
