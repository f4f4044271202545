"""The library release report: its warnings (as the CLI public report states them) and ledger retry.

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


def test_ledger_created_elsewhere_meanwhile_is_retried_under_its_key(tmp_path):
    """A lazily opened ledger another process created first: one retry, accounts re-keyed.

    The fingerprint the caller computed under the lazy ledger's key names nothing under the
    other process's key: the release is recorded once, under the account of the released
    rows computed with the key of the ledger that exists.
    """
    from distpriv.pipeline.ledger import Ledger
    from distpriv.pipeline.ledger.identity import data_account, table_fingerprint

    path = tmp_path / "l.sqlite"
    model = synthetic(4000)
    data = synthetic(20, seed=1)
    mine = Ledger(path, lazy=True)
    given = table_fingerprint(data, key=mine.identity_key)
    theirs = Ledger(path)  # another process creates the file first
    assert theirs.identity_key != mine.identity_key
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = dp.release_with_ledger(
            data, QUERY, WIDE, model_data=model, mechanism="expm-g", epsilon=1.0,
            delta=1e-3, rng=1, ledger=mine, data_fingerprint=given,
        )  # fmt: skip
    (entry,) = Ledger(path).releases()
    expected = data_account(
        key=theirs.identity_key, fingerprint=table_fingerprint(data, key=theirs.identity_key)
    )
    assert entry.data_account == expected == out.entry.data_account
    assert entry.data_account != data_account(key=theirs.identity_key, fingerprint=given)
