"""The Zhang et al. 2022 reproductions run with --quick, write their files and show their effect."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from distpriv.experiments.zhang2022 import EXPERIMENTS


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("zhang2022")
    res = {}
    for name, exp in EXPERIMENTS.items():
        r = exp.run(quick=True, seed=0, out_dir=out)
        r.write(out)  # as distpriv.experiments.run_experiment does
        res[name] = r
    return out, res


def test_registered_names():
    assert set(EXPERIMENTS) == {"zhang2022-apgm", "zhang2022-apmqm"}
    assert all(e.paper.startswith("Zhang, Ohrimenko & Cummings 2022") for e in EXPERIMENTS.values())


def test_files_written(results):
    out, res = results
    for name, r in res.items():
        data = json.loads((out / f"{name}.json").read_text())
        assert data["seed"] == 0 and data["quick"] is True
        assert len(pd.read_csv(out / f"{name}.csv")) == len(r.rows) > 0
        assert r.figures == (f"{name}.png",)
        assert (out / r.figures[0]).stat().st_size > 10_000
        assert r.comparisons and all(r.checks.values()), r.checks


def test_apgm_numbers(results):
    r = results[1]["zhang2022-apgm"]
    comps = {c.quantity: c for c in r.comparisons}
    weight = comps["average absolute error, weight (paper's Delta and Var, classical)"]
    bp = comps["average absolute error, blood_pressure (paper's Delta and Var, classical)"]
    assert weight.within and 17.0 < weight.ours < 20.5
    assert bp.within and 6.8 < bp.ours < 8.0
    temp = comps["average absolute error, temperature (paper's Delta and Var, classical)"]
    assert temp.paper == 0.0 and 0.0 < temp.ours < 0.02
    for stat in ("weight", "blood_pressure", "temperature"):
        assert comps[f"sensitivity of {stat} over Theta"].within
    df = pd.DataFrame(list(r.rows), columns=list(r.columns))
    gen = df[df.source == "closed forms, generated data (plug-in)"]
    sd = gen[gen.calibration == "classical"].set_index("statistic")["noise_sd"]
    assert sd["weight"] > sd["blood_pressure"] > sd["temperature"]
    assert any("|a - b| = 0.25" in n for n in r.notes)


def test_apmqm_example(results):
    r = results[1]["zhang2022-apmqm"]
    comps = {c.quantity.split(":")[0]: c for c in r.comparisons}
    assert comps["Example 1, count(height > 66)"].ours == 0.0
    sat = comps["Example 1, count(height > 66 and SAT > 1300)"]
    assert sat.within and sat.ours > 100.0
    df = pd.DataFrame(list(r.rows), columns=list(r.columns))
    quilts = df[(df["kind"] == "quilt") & (df["query"] == "count(height > 66)")]
    chosen = quilts[quilts["chosen"]]
    assert chosen.quilt.tolist() == ["{gender}"] and chosen.remote.tolist() == ["{height, weight}"]
