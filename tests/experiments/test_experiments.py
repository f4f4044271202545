"""Every registered experiment runs with --quick, writes its files, and shows its main effect."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from distpriv import ParameterError
from distpriv.cli import main
from distpriv.experiments import EXPERIMENTS, reproduction_markdown, run_experiment
from distpriv.experiments.base import single_run_interval


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp")
    return out, {
        name: run_experiment(name, quick=True, seed=0, out_dir=out) for name in EXPERIMENTS
    }


def test_files_written(results):
    out, res = results
    for name, r in res.items():
        assert (out / f"{name}.csv").exists() and (out / f"{name}.json").exists()
        data = json.loads((out / f"{name}.json").read_text())
        assert data["seed"] == 0 and data["quick"] is True and data["version"]
        assert len(pd.read_csv(out / f"{name}.csv")) == len(r.rows) > 0
        for fig in r.figures:
            assert (out / fig).stat().st_size > 10_000  # a real PNG, not an empty file


def frame(r):
    return pd.DataFrame(list(r.rows), columns=list(r.columns))


def test_table2_direction(results):
    df = frame(results[1]["chen2023-table2"])
    for eps in (0.2, 1.0, 5.0):
        at = df[df.epsilon == eps].set_index("mechanism")["ours (classical)"]
        # Group DP needs an order of magnitude more noise; DauM the least.
        assert at["GroupDP (G)"] > 10 * at["ExpM (G)"]
        assert at["DauM (G)"] < at["EigM (G)"] <= at["ExpM (G)"] * 1.05
    # Error falls as epsilon grows, and the exact calibration never adds more noise at eps < 1.
    exp = df[df.mechanism == "ExpM (G)"].sort_values("epsilon")
    assert np.all(np.diff(exp["ours (classical)"]) < 0)
    assert exp["ours (analytic)"].iloc[0] < exp["ours (classical)"].iloc[0]
    assert set(df.note[df.epsilon >= 1]) == {"classical constant at eps >= 1: outside Thm 4.2"}


def test_table3_direction(results):
    df = frame(results[1]["chen2023-table3"])
    daum = df[(df.mechanism == "DauM (G)") & (df.delta == 1e-3)].set_index("epsilon")
    assert daum.loc[5.0, "ours (classical)"] > daum.loc[0.2, "ours (classical)"] + 0.1
    assert abs(daum.loc[0.2, "ours (classical)"] - 0.5) < 0.06


def test_figures_trends(results):
    res = results[1]
    assert all(res["chen2023-fig2"].checks.values())
    assert all(res["chen2023-fig4"].checks.values())
    fig3 = {c.quantity: c.ours for c in res["chen2023-fig3"].comparisons}
    # DauM beats DP only for small delta p, and for a wider range on work class.
    inc = fig3["largest dp where DauM beats DP (income)"]
    wc = fig3["largest dp where DauM beats DP (workclass)"]
    assert 0.02 < inc < wc < 0.4


def test_reproduction_markdown(results):
    text = reproduction_markdown(list(results[1].values()), "distpriv experiment run all")
    assert "| ExpM (G), eps=0.2 | 177.3 |" in text
    assert all(f"## {name}:" in text for name in EXPERIMENTS)


def test_interval():
    mean, lo, hi = single_run_interval(np.array([1.0, 2.0, 3.0]))
    assert mean == 2.0 and lo < 1.0 and hi > 3.0
    assert single_run_interval(np.array([4.0])) == (4.0, 4.0, 4.0)


def test_cli_list_and_errors(tmp_path, capsys):
    assert main(["experiment", "list"]) == 0
    assert "chen2023-table2" in capsys.readouterr().out
    assert main(["experiment", "run", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert main(["experiment", "run", "--out", str(tmp_path)]) == 2
    with pytest.raises(ParameterError, match="experiment must be one of"):
        run_experiment("nope")


def test_cli_run_json(tmp_path, capsys):
    # The CLI plumbing (--quick, --out, --json, --doc) is the same for every experiment, so
    # this uses the cheapest one (about 1 s, not 8 s for chen2023-fig2); every experiment's
    # results and files are checked through run_experiment in the fixture above.
    doc = tmp_path / "docs" / "repro.md"
    status = main(
        [
            "experiment",
            "run",
            "kawamoto2019-bounds",
            "--quick",
            "--out",
            str(tmp_path / "o"),
            "--json",
            "--doc",
            str(doc),
        ]
    )
    assert status == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload[0]["name"] == "kawamoto2019-bounds" and payload[0]["elapsed_seconds"] > 0
    assert doc.exists() and "kawamoto2019-bounds" in doc.read_text()
