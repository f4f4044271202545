"""One account per property of the data: respellings, complements, other units, other secrets.

A property's budget is kept whatever the secret's spelling (the account is the keyed
meaning of the secret on the released rows), and every release of the data counts in
every account of it (an adversary after one property sees every release). The composed
guarantee of another secret's account is checked against an independent composition:
the stacked statistics of both releases modelled here with ``model_query`` and the exact
Gaussian accountant per pair and direction.
"""

from __future__ import annotations

import shutil
import warnings
from functools import lru_cache

import numpy as np
import pytest
from scipy.linalg import block_diag

from distpriv.accounting import gaussian_pair_epsilon
from distpriv.errors import BudgetExceededError, ParameterError
from distpriv.modeling import MeanSecret, ProportionSecret, Query, SeveralSecrets, model_query
from distpriv.pipeline import release_with_ledger
from distpriv.pipeline.ledger import Budget, Ledger

STATS = {
    "avg_hours": "avg(hours_per_week)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
}
FEMALE = "sex = 'Female'"
RESPELLED = ["'Female' = sex", "lower(sex) = 'female'", "(sex = 'Female')"]
COMPLEMENT = "sex <> 'Female'"


@lru_cache(maxsize=1)
def adult():
    from distpriv.experiments.paper import resolve_source

    model_data = resolve_source("adult:modeling", split_seed=0)
    release_data = resolve_source(
        "adult:test", split_seed=0, sample_rows=100, rng=np.random.default_rng(7)
    )
    return model_data, release_data


def _release(path, secret, *, budget=None, seed=0, beta=0.05):
    model_data, data = adult()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release_with_ledger(
            data,
            STATS,
            secret,
            model_data=model_data,
            mechanism="daum",
            epsilon=1.0,
            delta=1e-3,
            ledger=path,
            budget=budget,
            rng=seed,
            beta=beta,
        )


def _share(predicate):
    return ProportionSecret(predicate, [0.3, 0.4])


def test_respellings_and_complement_land_in_the_first_account(tmp_path):
    path = tmp_path / "l.db"
    first = _release(path, _share(FEMALE))
    second = _release(path, _share("sex='Female'"), seed=1)
    assert second.entry.secret_key == first.entry.secret_key
    assert second.composed.n_releases == 2
    # A budget that the two releases meet and a third cannot.
    led = Ledger(path)
    led.set_budget(first.entry.data_account, FEMALE, Budget(second.composed.epsilon * 1.001, 1e-3))
    before = path.read_bytes()
    for k, text in enumerate([*RESPELLED, COMPLEMENT]):
        with pytest.raises(BudgetExceededError, match="beyond the budget"):
            _release(path, _share(text), seed=2 + k)
        assert path.read_bytes() == before, text  # nothing drawn or recorded


def test_a_mean_in_other_units_is_the_same_account(tmp_path):
    path = tmp_path / "l.db"
    years = _release(path, MeanSecret("age", values=[38, 40]))
    led = Ledger(path)
    led.set_budget(
        years.entry.data_account, "mean:age", Budget(years.composed.epsilon * 1.001, 1e-3)
    )
    with pytest.raises(BudgetExceededError, match="beyond the budget"):
        _release(path, MeanSecret("age * 12", values=[456, 480]), seed=1)
    assert len(Ledger(path)) == 1


def test_several_refuses_complementary_attributes(tmp_path):
    both = SeveralSecrets([_share(FEMALE), ProportionSecret("sex = 'Male'", [0.6, 0.7])])
    with pytest.raises(ParameterError, match="one property"):
        _release(tmp_path / "l.db", both)
    assert not (tmp_path / "l.db").exists()
    # without a ledger too, before any modelling
    import distpriv

    model_data, data = adult()
    with pytest.raises(ParameterError, match="one property"):
        distpriv.release(data, STATS, both, model_data=model_data, mechanism="daum", epsilon=1.0,
                         delta=1e-3, rng=0)  # fmt: skip


def _independent_epsilon(entries, secret, *, delta):
    """The exact composition of ``entries`` under ``secret``, built here: the stacked
    statistics modelled from the modelling table, block-diagonal noise, the Gaussian
    accountant for every pair of Ψ in both directions."""
    model_data, _ = adult()
    stacked = {f"r{r}.{name}": expr for r, e in enumerate(entries) for name, expr in e.statistics}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(model_data, Query(stacked), secret, subset_size=100)
    noise = block_diag(*[np.asarray(e.noise["covariance"]) for e in entries])
    eps = 0.0
    for i, j in model.pairs:
        for a, b in ((i, j), (j, i)):
            eps = max(
                eps,
                float(
                    gaussian_pair_epsilon(
                        model.means[a],
                        model.covariances[a] + noise,
                        model.means[b],
                        model.covariances[b] + noise,
                        delta=delta,
                    )
                ),
            )
    return eps


def test_a_release_under_another_secret_counts_in_the_account(tmp_path):
    path = tmp_path / "l.db"
    mean = MeanSecret("age", values=[38, 40])
    share = _share(FEMALE)
    first = _release(path, mean, beta=None)
    scratch = tmp_path / "scratch.db"
    shutil.copyfile(path, scratch)
    second = _release(path, share, seed=1, beta=None)
    # the share account's guarantee includes the release under the mean secret
    assert second.composed.n_releases == 2
    entries = Ledger(path).releases()
    expected = _independent_epsilon(entries, share, delta=1e-3)
    assert second.composed.epsilon == pytest.approx(expected, rel=1e-6)
    assert second.composed.epsilon > second.composed.alone["epsilon"] * 1.01
    # the mean's account, after this release, is listed too (with both releases)
    accounts = second.ledger_summary()["accounts"]
    assert [a["this_release"] for a in accounts] == [True, False]
    assert accounts[1]["secret"] == "mean:age" and accounts[1]["n_releases"] == 2
    assert accounts[1]["epsilon"] == pytest.approx(
        _independent_epsilon(entries, mean, delta=1e-3), rel=1e-6
    )
    assert first.composed.n_releases == 1
    # --budget between the share release alone and both together: refused
    between = (second.composed.alone["epsilon"] + second.composed.epsilon) / 2
    with pytest.raises(BudgetExceededError, match="beyond the budget"):
        _release(scratch, share, seed=1, beta=None, budget=Budget(between, 1e-3))
    assert len(Ledger(scratch)) == 1


def test_a_budget_applies_to_every_account_a_release_touches(tmp_path):
    probe = tmp_path / "probe.db"
    share = _share(FEMALE)
    _release(probe, share, beta=None)
    both = _release(probe, MeanSecret("age", values=[38, 40]), seed=1, beta=None)
    (share_after,) = [a for a in both.ledger_summary()["accounts"] if not a["this_release"]]
    alone = Ledger(probe).releases()[0].composed["epsilon"]
    assert share_after["epsilon"] > alone * 1.01
    # The share's budget admits its own release, not the mean's on top of it.
    path = tmp_path / "l.db"
    _release(path, share, beta=None, budget=Budget((alone + share_after["epsilon"]) / 2, 1e-3))
    with pytest.raises(BudgetExceededError, match=r"account of the secret .sex = 'Female'."):
        _release(path, MeanSecret("age", values=[38, 40]), seed=1, beta=None)
    assert len(Ledger(path)) == 1


def test_releases_recorded_by_text_and_first_fingerprint_stay_in_the_account(tmp_path, monkeypatch):
    """A ledger written before accounts by meaning: its row carries the secret's text as
    typed and the first-version data fingerprint; a release now finds it, and its budget."""
    from distpriv.modeling.identity import multiset_fingerprint
    from distpriv.pipeline.commands import release_ledger
    from distpriv.pipeline.ledger import draw, records
    from distpriv.pipeline.ledger.identity import legacy_secret_key

    path = tmp_path / "l.db"
    with monkeypatch.context() as old:
        old.setattr(release_ledger, "release_identity", lambda *a, **k: ((), ()))
        old.setattr(
            draw,
            "table_fingerprint",
            lambda source, key: multiset_fingerprint(source, key=key, canonical=False),
        )
        old.setattr(records, "secret_key", legacy_secret_key)
        first = _release(path, _share("sex='Female'"), budget=Budget(1.01, 1e-3))
    assert first.entry.secret_key == "sex='Female'"
    assert first.composed.epsilon <= 1.01
    # the same property, respelled, on the same rows: the old budget refuses the second
    with pytest.raises(BudgetExceededError, match=r"1 earlier release"):
        _release(path, _share("(sex = 'Female')"), seed=1)
    assert len(Ledger(path)) == 1


def test_ledger_show_gives_each_account_its_guarantee_after_the_newest_release(tmp_path):
    from distpriv.pipeline.ledger.report import ledger_report

    path = tmp_path / "l.db"
    share = _release(path, _share(FEMALE), beta=None)
    mean = _release(path, MeanSecret("age", values=[38, 40]), seed=1, beta=None)
    report = ledger_report(path)
    groups = {g["secret"]: g for g in report["groups"]}
    (after,) = [a for a in mean.ledger_summary()["accounts"] if not a["this_release"]]
    # the share's account leads with its guarantee after the mean's release, not its own
    assert groups[FEMALE]["composed"]["epsilon"] == after["epsilon"]
    assert groups[FEMALE]["composed"]["n_releases"] == 2
    assert groups[FEMALE]["composed"]["after_release"] == mean.entry.id
    assert after["epsilon"] > share.composed.epsilon * 1.01
    assert groups["mean:age"]["composed"]["epsilon"] == mean.composed.epsilon


def test_an_event_secrets_account_is_composed_with_a_later_release(tmp_path):
    """An event secret's account counts the release of another secret too: composed for
    the event's value secret (every grid value, the cross pairs: the certificate its own
    calibration rests on), checked against the stacked statistics modelled here under the
    event secret itself, and its budget refuses what would exceed it. The event is given
    as events, not as its grid: the ledger materialises it on the released rows."""
    from distpriv.modeling.secret_events import EventSecret

    path = tmp_path / "l.db"
    event = EventSecret(FEMALE, [[0.30, 0.32], [0.40, 0.42]])
    first = _release(path, event, beta=None)
    assert first.entry.secret["values"] == [0.3, 0.31, 0.32, 0.4, 0.41, 0.42]
    scratch = tmp_path / "scratch.db"
    shutil.copyfile(path, scratch)
    second = _release(path, _share("income = '>50K'"), seed=1, beta=None)
    (after,) = [a for a in second.ledger_summary()["accounts"] if not a["this_release"]]
    assert after["secret"] == FEMALE and after["n_releases"] == 2
    expected = _independent_epsilon(Ledger(path).releases(), event.grid(100), delta=1e-3)
    assert after["epsilon"] == pytest.approx(expected, rel=1e-6)
    assert after["epsilon"] > first.composed.epsilon * 1.01
    # the event's budget between its release alone and both: the second is refused
    account = first.entry.data_account
    between = Budget((first.composed.epsilon + after["epsilon"]) / 2, 1e-3)
    Ledger(scratch).set_budget(account, first.entry.secret_key, between)
    with pytest.raises(BudgetExceededError, match=r"account of the secret .sex = 'Female'."):
        _release(scratch, _share("income = '>50K'"), seed=1, beta=None)
    assert len(Ledger(scratch)) == 1


def test_an_account_the_release_cannot_be_composed_into_refuses_it(tmp_path):
    """Without a budget too: a release that cannot be composed into another account of
    its data (that secret's column is not in this release's modelling table) is refused
    with one line naming the account and why, rather than left out of it."""
    from distpriv.errors import CompositionError

    path = tmp_path / "l.db"
    _release(path, _share(FEMALE), beta=None)
    before = path.read_bytes()
    model_data, data = adult()
    no_sex = model_data.drop(columns=["sex"])
    with pytest.raises(CompositionError) as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release_with_ledger(
            data,
            STATS,
            _share("income = '>50K'"),
            model_data=no_sex,
            mechanism="daum",
            epsilon=1.0,
            delta=1e-3,
            ledger=path,
            rng=1,
            beta=None,
        )
    msg = str(caught.value)
    assert "\n" not in msg and "account of the secret \"sex = 'Female'\"" in msg
    assert "cannot be modelled" in msg and "sex" in msg
    assert path.read_bytes() == before  # nothing drawn or recorded
