"""The kawamoto2019-* experiments run with quick=True, write their files and show their effects."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from distpriv.experiments.kawamoto2019 import EXPERIMENTS, PAPER_TABLE2


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("km2019")
    res = {}
    for name, exp in EXPERIMENTS.items():
        r = exp.run(quick=True, seed=0, out_dir=out)
        r.write(out)
        res[name] = r
    return out, res


def frame(r):
    return pd.DataFrame(list(r.rows), columns=list(r.columns))


def test_registered_names_and_files(results):
    out, res = results
    assert set(res) == {"kawamoto2019-dummies", "kawamoto2019-compare", "kawamoto2019-bounds"}
    for name, r in res.items():
        assert r.name == name and r.quick and r.seed == 0
        data = json.loads((out / f"{name}.json").read_text())
        assert data["checks"] == r.checks and len(data["rows"]) == len(r.rows) > 0
        assert len(pd.read_csv(out / f"{name}.csv")) == len(r.rows)
        assert r.figures, name
        for fig in r.figures:
            assert (out / fig).stat().st_size > 10_000
        assert r.checks and r.notes


def test_dummies_main_effects(results):
    r = results[1]["kawamoto2019-dummies"]
    assert all(r.checks.values()), r.checks
    df = frame(r)
    a = df[df.panel == "a: eps vs k"].sort_values("k")
    assert a.epsilon.iloc[-1] < a.epsilon.iloc[0]
    (comp,) = r.comparisons
    assert comp.paper == 2 and comp.low <= comp.ours <= comp.high


def test_compare_tupling_wins_on_the_city(results):
    r = results[1]["kawamoto2019-compare"]
    city = {k: v for k, v in r.checks.items() if k.startswith("city")}
    assert len(city) == 3 and all(city.values()), city
    df = frame(r)
    assert {"RR", "PL", "PG", "coupling (estimates)", "coupling (exact)"} <= set(df.mechanism)
    assert any(m.startswith("TM") for m in df.mechanism)
    # Exact knowledge: the coupling mechanism leaks nothing.
    exact = df[df.mechanism == "coupling (exact)"]
    assert (exact.epsilon.abs() < 1e-9).all()
    # Where the claim fails, a note says so.
    failed = [k for k, v in r.checks.items() if not v]
    for key in failed:
        case = key.split(": TM")[0]
        assert any(n.startswith(case) and "does NOT win" in n for n in r.notes)


def test_bounds_table2(results):
    r = results[1]["kawamoto2019-bounds"]
    assert len(r.comparisons) == 6
    papers = sorted(c.paper for c in r.comparisons)
    assert papers == sorted(
        [*PAPER_TABLE2["theoretical"].values(), *PAPER_TABLE2["empirical"].values()]
    )
    for c in r.comparisons:
        assert c.low <= c.ours <= c.high
    assert all(r.checks.values()), r.checks
    df = frame(r)
    assert (df.thm3_sound >= df.emp_high).all()
