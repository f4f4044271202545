"""The audit of mean, event and several-attribute secrets on Adult.

References are independent of the code under test: datasets drawn here by plain rejection
of random row sets of the table (numpy, no distpriv sampler), the table's own conditional
shares (pandas), and brute force over discrete pairs for the accuracy bound.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings

import numpy as np
import pytest

from distpriv import Noise, ParameterError, calibrate, model_query
from distpriv.attacks import (
    EventSampler,
    MeanSampler,
    SeveralAuditReport,
    accuracy_allowed,
    audit,
    audit_attributes,
)
from distpriv.attacks.audit_kinds import audit_target
from distpriv.datasets import paper_split
from distpriv.modeling import EventSecret, MeanSecret, ProportionSecret, Query, SeveralSecrets

STATS = Query(
    {
        "avg_education_years": "avg(education_num)",
        "n_never_married": "count_if(marital_status = 'Never-married')",
        "n_female": "count_if(sex = 'Female')",
        "avg_hours_per_week": "avg(hours_per_week)",
    }
)
N = 100
NEVER_MARRIED = "count_if(marital_status = 'Never-married')"


@pytest.fixture(scope="module")
def parts():
    return paper_split(rng=0)


def _quiet_audit(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit(subset_size=N, **kw)


def _best(m):
    return max(m.attacks, key=lambda a: a.accuracy)


# -- the guarantee on the accuracy scale -------------------------------------------------


def _hockey(p, q, eps):
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


def test_accuracy_allowed_brute_force():
    """(e^ε + δ)/(1 + e^ε) bounds the best test of every (ε, δ) pair and is attained."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        k = int(rng.integers(2, 6))
        p, q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        eps = float(rng.uniform(0.05, 3.0))
        delta = max(_hockey(p, q, eps), _hockey(q, p, eps))
        # The best test at equal priors: every subset S of outcomes as "say p".
        best = max(
            0.5 * (p[list(s)].sum() + 1.0 - q[list(s)].sum())
            for r in range(k + 1)
            for s in itertools.combinations(range(k), r)
        )
        assert best <= accuracy_allowed(eps, delta) + 1e-12
    # Attained by the four-outcome pair (δ, a, b, 0) vs (0, b, a, δ).
    eps, delta = 1.0, 0.01
    a, b = (1 - delta) * math.e / (1 + math.e), (1 - delta) / (1 + math.e)
    p, q = np.array([delta, a, b, 0.0]), np.array([0.0, b, a, delta])
    assert max(_hockey(p, q, eps), _hockey(q, p, eps)) == pytest.approx(delta)
    assert 0.5 * np.maximum(p, q).sum() == pytest.approx(accuracy_allowed(eps, delta))
    assert accuracy_allowed(math.inf, 0.0) == 1.0
    assert accuracy_allowed(1.0, 0.0) == pytest.approx(math.e / (1 + math.e))


# -- mean secrets ------------------------------------------------------------------------


def test_mean_sampler_is_rejection_of_real_subsets(parts):
    """The kept subsets' average age is in the window, and another statistic's law given
    the mean equals that of plain rejection sampling of the table's rows (reference)."""
    q = Query(
        {"avg_age": "avg(age)", "n_never_married": "count_if(marital_status = 'Never-married')"}
    )
    secret = MeanSecret("age", [37, 40])
    sampler = MeanSampler(parts["auxiliary"], q, secret, N, role="auxiliary data")
    rng = np.random.default_rng(0)
    got = sampler.draw(0, 3000, rng)
    assert np.all(np.abs(got[:, 0] - 37.0) <= sampler.h + 1e-9)
    # Reference: i.i.d. rows (the without-replacement correction is n/N = 1 %, far below
    # the Monte Carlo error here), kept when the average is in the same window.
    frame = parts["auxiliary"]
    age = frame["age"].to_numpy(float)
    nm = (frame["marital_status"] == "Never-married").to_numpy(float)
    ref = []
    while len(ref) < 3000:
        rows = rng.integers(0, age.size, size=(20000, N))
        keep = np.abs(age[rows].mean(axis=1) - 37.0) <= sampler.h
        ref.extend(nm[rows[keep]].sum(axis=1))
    ref = np.asarray(ref[:3000])
    se = math.sqrt(got[:, 1].var() / got.shape[0] + ref.var() / ref.size)
    assert abs(got[:, 1].mean() - ref.mean()) < 4 * se
    # Conditioning matters: the unconditioned share of never-married differs by far more.
    assert abs(ref.mean() - N * nm.mean()) > 8 * se


@pytest.fixture(scope="module")
def mean_setting(parts):
    secret = MeanSecret("age", [35, 42])  # a large gap: the undefended attack must see it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(parts["modeling"], STATS, secret, subset_size=N)
        good = calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
    return secret, model, good


def test_mean_audit_undefended_defended_and_broken(parts, mean_setting):
    secret, model, good = mean_setting
    sd = float(np.sqrt(np.max(np.diag(good.noise_covariance))))
    broken = dataclasses.replace(
        good, name="expm-g (noise / 20)", noise=Noise.isotropic("gaussian", good.dim, sd / 20)
    )
    rep = _quiet_audit(
        auxiliary=parts["auxiliary"],
        test=parts["test"],
        query=STATS,
        secret=secret,
        mechanisms=["none", good, broken],
        model=model,
        repetitions=4,
        rng=5,
    )
    assert rep.pair == (35.0, 42.0)
    assert rep.labels == ("mean age = 35", "mean age = 42")
    none = _best(rep.get("none"))
    # The sampler really conditions on the mean: a 7-year gap in average age is visible.
    assert none.interval[0] > 0.8
    allowed = accuracy_allowed(1.0, 1e-3)
    defended = rep.get("expm-g")
    assert defended.verdict == "consistent"
    for a in defended.attacks:
        assert a.interval[0] <= allowed, a
    bad = rep.get("expm-g (noise / 20)")
    assert bad.verdict == "violated" and _best(bad).interval[0] > allowed
    assert rep.to_dict()["mechanisms"][1]["accuracy_allowed"] == pytest.approx(allowed)
    assert any("real 100-row subsets" in n for n in rep.notes)


def test_mean_value_too_rare_for_the_audit(parts):
    secret = MeanSecret("age", [20, 38])  # 20 is about 14 standard errors below the mean
    with pytest.raises(ParameterError, match="too rare to audit"):
        _quiet_audit(
            auxiliary=parts["auxiliary"],
            test=parts["test"],
            query=STATS,
            secret=secret,
            mechanisms=["none"],
            repetitions=1,
            n_shadow=10,
            n_test=10,
            rng=0,
        )
    with pytest.raises(ParameterError, match="outside the range"):
        MeanSampler(parts["test"], STATS, MeanSecret("age", [10, 38]), N, role="test data")


# -- event secrets -----------------------------------------------------------------------

RICH = "income = '>50K'"


def test_event_sampler_is_rejection_of_real_subsets(parts):
    """Event datasets: their share's law is the table's law of a random subset's share
    restricted to the event (reference: rejection of random row sets)."""
    q = Query({"n_rich": f"count_if({RICH})", "avg_age": "avg(age)"})
    secret = EventSecret(RICH, events=[(0.15, 0.22), (0.27, 0.33)])
    target, pair = audit_target(secret, None)
    assert pair == (0.0, 1.0)
    shadow, _ = target.samplers(parts["auxiliary"], parts["test"], q, N)
    assert isinstance(shadow, EventSampler)
    rng = np.random.default_rng(1)
    rich = (parts["auxiliary"]["income"] == ">50K").to_numpy()
    for e, (lo, hi) in enumerate(secret.events):
        got = np.rint(shadow.draw(e, 4000, rng)[:, 0]).astype(int)
        first, last = math.ceil(lo * N - 1e-9), math.floor(hi * N + 1e-9)
        assert got.min() >= first and got.max() <= last
        ref = []
        while len(ref) < 4000:
            k = np.array(  # subsets of N distinct rows
                [rich[rng.choice(rich.size, N, replace=False)].sum() for _ in range(2000)]
            )
            ref.extend(k[(k >= first) & (k <= last)])
        ref = np.asarray(ref[:4000])
        bins = np.arange(first, last + 2) - 0.5
        h1, _ = np.histogram(got, bins)
        h2, _ = np.histogram(ref, bins)
        # Two-sample chi-square over the event's counts (cells with few draws pooled away).
        ok = (h1 + h2) >= 10
        chi2 = float(np.sum((h1[ok] - h2[ok]) ** 2 / (h1[ok] + h2[ok])))
        from scipy.stats import chi2 as chi2_law

        assert chi2_law.sf(chi2, int(ok.sum()) - 1) > 1e-3, (e, h1, h2)


def test_event_audit(parts):
    q = Query({"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')",
               "avg_hours_per_week": "avg(hours_per_week)"})  # fmt: skip
    secret = EventSecret(RICH, events=[(0.2, 0.3), (0.4, 0.5)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(parts["modeling"], q, secret, subset_size=N)
        good = calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
    rep = _quiet_audit(
        auxiliary=parts["auxiliary"],
        test=parts["test"],
        query=q,
        secret=secret,
        mechanisms=["none", good],
        model=model,
        repetitions=3,
        rng=2,
    )
    assert rep.labels[0].endswith("in [0.2, 0.3]") and rep.labels[1].endswith("in [0.4, 0.5]")
    assert {a.attack for a in rep.get("none").attacks} >= {"likelihood-ratio"}
    assert _best(rep.get("none")).interval[0] > 0.7
    defended = rep.get("expm-g")
    assert defended.verdict == "consistent"
    assert all(a.interval[0] <= accuracy_allowed(1.0, 1e-3) for a in defended.attacks)
    assert any("population's weights" in n and "any weights" in n for n in rep.notes)


class _MeanGrid(MeanSecret):
    """A mean secret offering what EventSecret asks of a value-indexed secret (as mean
    events will): a grid of means in a range, and itself at other values."""

    def event_grid(self, low: float, high: float, subset_size: int) -> tuple[float, ...]:
        return tuple(float(v) for v in np.arange(low, high + 1e-9, 0.5))

    def with_values(self, values, pairs):
        return MeanSecret(self.expression, values, pairs=pairs)


def test_event_audit_over_a_mean(parts):
    """The event path is generic: events of a mean secret draw datasets whose average falls
    on the event's grid values (the mean sampler), with the population's weights."""
    q = Query(
        {"avg_age": "avg(age)", "n_never_married": "count_if(marital_status = 'Never-married')"}
    )
    secret = EventSecret(_MeanGrid("age", [37, 40]), events=[(36.0, 37.0), (40.0, 41.0)])
    target, _ = audit_target(secret, None)
    shadow, _ = target.samplers(parts["auxiliary"], parts["test"], q, N)
    rng = np.random.default_rng(4)
    low = shadow.draw(0, 500, rng)[:, 0]
    h = shadow.inner.h
    assert np.all(np.min(np.abs(low[:, None] - np.array([36.0, 36.5, 37.0])), axis=1) <= h + 1e-9)
    # Weights: the values nearer the table's average (38.6) are the more likely.
    assert shadow.weights[0][-1] > shadow.weights[0][0]
    rep = _quiet_audit(
        auxiliary=parts["auxiliary"],
        test=parts["test"],
        query=q,
        secret=secret,
        mechanisms=["none"],
        repetitions=1,
        rng=3,
    )
    assert _best(rep.get("none")).accuracy > 0.95  # avg_age itself tells the events apart


# -- several attributes ------------------------------------------------------------------

FEMALE = "sex = 'Female'"


def test_attribute_datasets_fix_only_their_own_share(parts):
    secret = SeveralSecrets(
        [ProportionSecret(FEMALE, [0.3, 0.4]), ProportionSecret(RICH, [0.2, 0.3])]
    )
    q = Query({"n_female": f"count_if({FEMALE})", "n_rich": f"count_if({RICH})"})
    target, pair = audit_target(secret, None)
    assert pair == (0.3, 0.4) and target.attribute == 0
    shadow, _ = target.samplers(parts["auxiliary"], parts["test"], q, N)
    got = shadow.draw(0, 4000, np.random.default_rng(6))
    assert np.all(got[:, 0] == 30)
    # The other attribute as in the population given 30 women: 30 P(rich | F) + 70 P(rich | M).
    frame = parts["auxiliary"]
    fem, rich = frame["sex"] == "Female", frame["income"] == ">50K"
    expect = 30 * rich[fem].mean() + 70 * rich[~fem].mean()
    assert got[:, 1].std() > 2
    assert abs(got[:, 1].mean() - expect) < 4 * got[:, 1].std() / math.sqrt(got.shape[0])
    with pytest.raises(ParameterError, match="one attribute"):
        audit_target(secret, (secret.values[0], secret.values[2]))


def test_audit_attributes(parts):
    q = Query({"avg_age": "avg(age)", "n_never_married": NEVER_MARRIED,
               "avg_hours_per_week": "avg(hours_per_week)"})  # fmt: skip
    secret = SeveralSecrets(
        [ProportionSecret(FEMALE, [0.3, 0.4]), ProportionSecret(RICH, [0.2, 0.3])]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(parts["modeling"], q, secret, subset_size=N)
        good = calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
    ticks = []
    rep = audit_attributes(
        auxiliary=parts["auxiliary"],
        test=parts["test"],
        query=q,
        secret=secret,
        subset_size=N,
        mechanisms=["none", good],
        model=model,
        repetitions=2,
        rng=7,
        progress=lambda d, t: ticks.append((d, t)),
    )
    assert isinstance(rep, SeveralAuditReport)
    assert ticks[-1] == (4, 4)
    assert [r.pair for r in rep.reports] == [(0.3, 0.4), (0.2, 0.3)]
    # Bonferroni over the two attributes.
    assert all(r.confidence == pytest.approx(0.975) for r in rep.reports)
    for r in rep.reports:
        assert _best(r.get("none")).interval[0] > 0.55
        assert r.get("expm-g").verdict == "consistent"
    combined = rep.get("expm-g")
    assert combined.epsilon_lower == max(r.get("expm-g").epsilon_lower for r in rep.reports)
    assert len(combined.attacks) == sum(len(r.get("expm-g").attacks) for r in rep.reports)
    d = rep.to_dict()
    assert d["confidence"] == 0.95 and [a["predicate"] for a in d["attributes"]] == [FEMALE, RICH]
    assert d["attributes"][1]["pairs"][0]["labels"] == [
        "share[income = '>50K']=0.2",
        "share[income = '>50K']=0.3",
    ]
