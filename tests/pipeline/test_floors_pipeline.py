"""Floored mechanisms in the curator's pipeline: warnings, report, auto's table."""

from __future__ import annotations

import warnings
from pathlib import Path

import distpriv as dp
from distpriv.pipeline import run_release
from distpriv.report.html import render_html

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "examples" / "adult-income.toml"
AUTO = ROOT / "examples" / "adult-auto.toml"


def _with_mechanism(tmp_path, name):
    text = ADULT.read_text(encoding="utf-8").replace('name = "expm-g"', f'name = "{name}"')
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _leaks(caught):
    return [w for w in caught if issubclass(w.category, dp.PrivacyLeakWarning)]


def test_rank_one_release_warns_and_floored_does_not(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_release(_with_mechanism(tmp_path, "daum"))
    assert any("covers 1 of 5 directions" in str(w.message) for w in _leaks(caught))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run_release(_with_mechanism(tmp_path, "daum-floor"))
    assert not _leaks(caught)
    assert out.report.mechanism.noise_rank == 5
    floor = out.public["mechanism"]["floor"]
    assert floor["grid_steps"] == 1.0
    assert floor["lattice_steps"] == [0.01, 0.01, 1.0, 1.0, 0.01]
    assert "grid" in floor["why"] and "every direction" in floor["why"]
    assert floor["why"] in render_html(out.public)


def test_auto_in_the_pipeline_prices_the_floor(tmp_path):
    # prune = false: every row calibrated, daum's (the rank-one optimum) included.
    text = AUTO.read_text(encoding="utf-8").replace('name = "auto"', 'name = "auto"\nprune = false')
    assert "prune = false" in text
    path = tmp_path / "auto-full.toml"
    path.write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run_release(path)
    rows = {r["mechanism"]: r for r in out.public["choice"]}
    chosen = out.public["mechanism"]["name"]
    assert rows[chosen]["verified"] and rows[chosen]["noise_rank"] == 5
    assert chosen in ("daum-floor", "dirm-g-floor", "optimal-g-full")
    assert 1.0 <= rows[chosen]["vs_rank_one"] < 1.05
    assert rows["daum"]["vs_rank_one"] >= 1.0 and not rows["daum"]["verified"]
    assert "rank-one optimum" in render_html(out.public)


def test_python_release_detects_the_lattice():
    import numpy as np

    from distpriv.datasets import paper_split
    from distpriv.experiments import ADULT_STATISTICS, INCOME_SECRET

    parts = paper_split(rng=0)
    rng = np.random.default_rng(3)
    data = parts["test"].iloc[rng.choice(len(parts["test"]), 100, replace=False)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = dp.release(
            data,
            ADULT_STATISTICS,
            INCOME_SECRET,
            model_data=parts["modeling"],
            mechanism="daum-floor",
            epsilon=1.0,
            delta=1e-3,
        )
    rel = rep.release
    assert rel.secure and rel.guarantee.mechanism == "daum-floor"
    assert rel.guarantee.epsilon == 1.0 and rel.guarantee.delta == 1e-3
    assert rep.mechanism.noise_rank == 5
    assert list(rep.mechanism.diagnostics["lattice_steps"]) == [0.01, 0.01, 1.0, 1.0, 0.01]
    assert not _leaks(caught)


def test_auto_in_the_pipeline_prunes_by_default_and_says_so():
    # The default comparison skips what provably cannot be chosen; the public table and the
    # HTML page say "not calibrated" and why, with no NaN; the choice is the full one's.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run_release(AUTO)
    rows = out.public["choice"]
    pruned = [r for r in rows if r["pruned"]]
    assert pruned, "nothing was pruned on Adult"
    for r in pruned:
        assert r["mse"] is None and r["calibrated"] is False and r["vs_rank_one"] is None
        assert r["reason"].startswith("not calibrated: cannot be chosen")
    import json

    assert "NaN" not in json.dumps(out.public, default=str)
    page = render_html(out.public)
    assert "not calibrated" in page and "prune = false" in page
    assert ">nan<" not in page.lower()
    chosen = out.public["mechanism"]["name"]
    assert chosen in ("daum-floor", "dirm-g-floor", "optimal-g-full")
