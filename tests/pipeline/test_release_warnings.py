"""The library's release report states its warnings as the CLI's public report does.

``dp.release`` and ``dp.release_with_ledger`` record each warning raised while the release
is made; the publishable ``to_dict()`` holds the public ones in public words (facts about the
released rows stay private), ``diagnostics()`` all of them, and they still reach the caller
as Python warnings, once each.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd

import distpriv as dp

QUERY = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')", "avg_hours": "avg(hours)"}
WIDE = dp.ProportionSecret("rich", values=[0.1, 0.9])  # the mechanism must add noise


def synthetic(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "hours": rng.integers(10, 60, n),
            "sex": rng.choice(["Female", "Male"], n),
            "rich": rng.random(n) < 0.4,
        }
    )


OVERLAP = "released rows also appear in the modelling table"
TOO_FEW = "the model rests on too few rows"


def _recorded(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [str(w.message) for w in log]


def _check(report, raised):
    # Still raised for the caller, each once.
    assert sum(OVERLAP in m for m in raised) == 1 and sum(TOO_FEW in m for m in raised) == 1
    public = report.to_dict()
    kinds = [w["kind"] for w in public["warnings"]]
    assert kinds == ["too-few-rows"]  # the overlap is a fact about the released rows
    assert OVERLAP not in json.dumps(public) and "41 without" not in json.dumps(public)
    assert public["warnings"][0]["qualifies_guarantee"] is True
    private = report.diagnostics()["warnings"]
    assert any(OVERLAP in t for t in private) and any(TOO_FEW in t for t in private)
    assert "1 warning" in report._repr_html_()


def test_release_report_states_its_warnings():
    model = synthetic(60)
    rep, raised = _recorded(
        dp.release, model.iloc[:20], QUERY, WIDE, model_data=model, mechanism="expm-g",
        epsilon=1.0, delta=1e-3, rng=1,
    )  # fmt: skip
    _check(rep, raised)


def test_a_clean_release_states_none():
    data, model = synthetic(20, seed=1), synthetic(4000)
    rep, raised = _recorded(
        dp.release, data, QUERY, WIDE, model_data=model, mechanism="expm-g", epsilon=1.0,
        delta=1e-3, rng=1,
    )  # fmt: skip
    assert rep.to_dict()["warnings"] == [] and rep.diagnostics()["warnings"] == list(
        dict.fromkeys(" ".join(m.split()) for m in raised)
    )


def test_ledgered_release_report_states_its_warnings(tmp_path):
    model = synthetic(60)
    out, raised = _recorded(
        dp.release_with_ledger, model.iloc[:20], QUERY, WIDE, model_data=model,
        mechanism="expm-g", epsilon=1.0, delta=1e-3, rng=1, ledger=tmp_path / "l.sqlite",
    )  # fmt: skip
    _check(out.report, raised)
