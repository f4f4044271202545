"""The group-DP baselines' sensitivities come from the declared ranges, not from the
modelling table's spans: what is published about them (the noise, the options) is then a
function of public declarations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli_helpers import run
from distpriv.modeling import Query
from distpriv.modeling.facts import engine_table_facts
from distpriv.modeling.tables import Table

HOSPITAL = Path(__file__).resolve().parents[2] / "examples" / "hospital"
STATS = {"avg_height": "avg(height)", "n_tall": "count_if(height > 70)"}


def test_facts_take_the_declared_width():
    frame = pd.read_csv(HOSPITAL / "model.csv")
    plain = engine_table_facts(Table(frame), Query(STATS), 50)
    declared = engine_table_facts(Table(frame), Query(STATS, ranges={"avg_height": (40, 90)}), 50)
    # pandas' spans of the per-row features (the reference).
    table_span = float(frame["height"].max() - frame["height"].min())
    assert plain.spans == pytest.approx((table_span, 1.0))
    assert declared.spans == pytest.approx((50.0, 1.0))  # 90 - 40; the count undeclared


def _release(folder: Path, capsys) -> dict:
    args = ["release", folder / "hospital.toml", "--no-ledger", "--insecure-seed", "1"]
    status, out, err = run([*args, "--json"], capsys)
    assert status == 0, err
    return json.loads(out)


def test_published_group_dp_noise_ignores_the_modelling_table_spans(tmp_path, capsys):
    runs = []
    for extreme in (None, 250.0):
        folder = tmp_path / f"h{extreme}"
        shutil.copytree(HOSPITAL, folder)
        if extreme is not None:  # one modelling row far outside: the table's span grows
            model = pd.read_csv(folder / "model.csv")
            row = model.iloc[[0]].assign(height=extreme)
            pd.concat([model, row]).to_csv(folder / "model.csv", index=False)
        text = (folder / "hospital.toml").read_text().replace('"expm-g"', '"groupdp-g"')
        text += "\n[ranges]\navg_height = [40, 90]\navg_weight = [50, 400]\n"
        text += "avg_blood_pressure = [50, 250]\n"
        (folder / "hospital.toml").write_text(text)
        runs.append(_release(folder, capsys))
    a, b = (np.asarray(r["mechanism"]["noise_covariance"]) for r in runs)
    np.testing.assert_allclose(a, b, rtol=1e-12)
