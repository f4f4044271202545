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
import pytest

import distpriv as dp

QUERY = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')", "avg_hours": "avg(hours)"}
WIDE = dp.ProportionSecret("rich", values=[0.1, 0.9])  # the mechanism must add noise


def synthetic(n, seed=0, age_gap=0):
    """A table whose statistics depend on the secret ``rich`` only through ``age_gap``
    (years added to a rich row's age): with 0 the secret is independent of them."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "hours": rng.integers(10, 60, n),
            "sex": rng.choice(["Female", "Male"], n),
            "rich": rng.random(n) < 0.4,
        }
    )
    frame["age"] += age_gap * frame["rich"]
    return frame


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
    # The secret moves the mean age (10 years), so expm-g must add noise in every
    # direction: nothing to warn about. (With the secret independent of the statistics the
    # population's confidence set shows that the model alone hides it, and no noise is
    # added: test_a_release_that_needs_no_noise_says_so.)
    data, model = synthetic(20, seed=1, age_gap=10), synthetic(4000, age_gap=10)
    rep, raised = _recorded(
        dp.release, data, QUERY, WIDE, model_data=model, mechanism="expm-g", epsilon=1.0,
        delta=1e-3, rng=1,
    )  # fmt: skip
    assert np.linalg.matrix_rank(np.asarray(rep.to_dict()["mechanism"]["noise_covariance"])) == 3
    assert rep.to_dict()["warnings"] == [] and rep.diagnostics()["warnings"] == list(
        dict.fromkeys(" ".join(m.split()) for m in raised)
    )


def _mc_delta(mean_p, cov_p, mean_q, cov_q, epsilon, n, rng):
    """Monte Carlo δ(ε) of N(mean_p, cov_p) against N(mean_q, cov_q) (scipy's densities,
    nothing of the library), with its standard error."""
    from scipy.stats import multivariate_normal

    x = rng.multivariate_normal(mean_p, cov_p, size=n)
    loss = multivariate_normal(mean_p, cov_p).logpdf(x) - multivariate_normal(mean_q, cov_q).logpdf(
        x
    )
    g = np.maximum(0.0, -np.expm1(epsilon - loss))
    return g.mean(), g.std(ddof=1) / np.sqrt(n)


@pytest.fixture
def joint_set():
    """The joint population set (opt-in; the box is the default): the behaviour tested
    here is the joint set's (its members depend on the noise and on ε)."""
    from distpriv.population.confidence import population_set

    with population_set("joint"):
        yield


def test_a_release_that_needs_no_noise_says_so(joint_set):
    """The secret is independent of the statistics and the modelling table has 4,000 rows:
    the population's confidence set shows that the 20-row datasets' own variation hides it
    (δ(1) ≤ 1e-3 with no noise on the set's worst member, confirmed by Monte Carlo), so
    expm-g's least noise is none. A careful curator must see that nothing was added and
    what exact values can reveal: one public warning, of its own kind, which says so and
    points to the mechanisms that keep noise at the lattice floor; ``auto`` (the default
    mechanism) releases full-rank noise at the floor, with no warning."""
    from distpriv.population.confidence import population_model

    data, model = synthetic(20, seed=1), synthetic(4000)
    rep, raised = _recorded(
        dp.release, data, QUERY, WIDE, model_data=model, mechanism="expm-g", epsilon=1.0,
        delta=1e-3, rng=1,
    )  # fmt: skip
    public = rep.to_dict()
    assert public["mechanism"]["expected_l2_error"] == 0.0
    assert not np.any(np.asarray(public["mechanism"]["noise_covariance"]))
    # Published exactly: the statistics of the 20 rows themselves.
    exact = [data["age"].mean(), float((data["sex"] == "Female").sum()), data["hours"].mean()]
    released = [st["value"] for st in public["statistics"]]
    np.testing.assert_allclose(released, exact, rtol=1e-12)
    (warning,) = public["warnings"]
    assert warning["kind"] == "no-noise" and warning["qualifies_guarantee"] is True
    assert "published exactly" in warning["text"] and "lattice floor" in warning["text"]
    assert sum("no noise is added" in m for m in raised) == 1
    assert not any("covers 0 of" in m for m in raised)  # not the partial-noise wording
    # No noise is enough on the set's worst member (the accountant's claim), by Monte Carlo.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = dp.model_query(model, QUERY, WIDE, subset_size=20, rng=0)
    members = population_model(gm, beta=0.05, noise_cov=np.zeros((3, 3)), epsilon=1.0)
    rng = np.random.default_rng(5)
    for i, j in members.pairs:
        for a, b in ((i, j), (j, i)):
            est, se = _mc_delta(
                members.means[a], members.covariances[a], members.means[b],
                members.covariances[b], 1.0, 400_000, rng,
            )  # fmt: skip
            assert est - 4 * se <= 1e-3
    # auto: noise in every direction (at the lattice floor), nothing to warn about.
    auto, raised = _recorded(
        dp.release, data, QUERY, WIDE, model_data=model, mechanism="auto", epsilon=1.0,
        delta=1e-3, rng=1,
    )  # fmt: skip
    cov = np.asarray(auto.to_dict()["mechanism"]["noise_covariance"])
    assert np.linalg.matrix_rank(cov) == 3 and auto.to_dict()["warnings"] == []


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
