"""Event secrets: the certified bound on the mixture against Monte Carlo
of real Adult subsets whose share falls in each event, drawn with the population weights."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import binom

import distpriv as dp
from distpriv.errors import ParameterError
from distpriv.modeling import EventSecret, event_weights, model_query
from distpriv.population.exact import pair_deltas

from ._real_subsets import PREDICATE, STATS, adult_features, mc_delta, subsets

EVENTS = [(0.2, 0.3), (0.4, 0.5)]


def test_values_and_cross_pairs():
    s = EventSecret("x > 0", events=[*EVENTS, (0.7, 0.72)], pairs=[(0, 1), (1, 2)]).grid(100)
    low = [k / 100 for k in range(20, 31)]
    mid = [k / 100 for k in range(40, 51)]
    high = [0.7, 0.71, 0.72]
    assert list(s.values) == low + mid + high
    want = {(a, b) for a in low for b in mid} | {(a, b) for a in mid for b in high}
    assert set(s.pairs) == want and len(s.pairs) == len(want)
    assert s.to_dict()["type"] == "event" and s.ledger_key() == "x > 0"
    assert "in [0.2, 0.3] vs in [0.4, 0.5]" in s.describe()


@pytest.mark.parametrize(
    ("events", "pairs", "match"),
    [
        ([(0.2, 0.3)], None, "at least two"),
        ([(0.2, 0.3), (0.3, 0.5)], None, "overlap"),
        ([(0.2, 0.3), (0.401, 0.405)], None, "no value of the grid"),
        ([(0.2, 0.3), (0.5, 0.4)], None, "low < high"),
        (EVENTS, [(0, 2)], "event indices"),
        (EVENTS, [(1, 1)], "event indices"),
    ],
)
def test_event_errors(events, pairs, match):
    with pytest.raises(ParameterError, match=match):
        EventSecret("x > 0", events=events, pairs=pairs).grid(100)


def test_weights_are_the_restricted_binomial():
    s = EventSecret("x > 0", events=EVENTS)
    w = event_weights(s, 100, 0.25)
    ref = binom.pmf(np.arange(40, 51), 100, 0.25)
    np.testing.assert_allclose(w[1], ref / ref.sum(), rtol=1e-10)
    assert all(abs(x.sum() - 1) < 1e-12 for x in w)


def test_certified_bound_covers_the_mixture_on_real_subsets():
    """The population is the whole Adult table (declared: population = true), its base
    rate π the weights' premise. The noise is calibrated (expm-g, exact) on the cross pairs;
    the certified bound is the largest δ of a cross pair (joint convexity). The mixture's
    true δ is estimated from real subsets whose count is drawn from the restricted
    binomial, then rows drawn from the strata: it must not exceed the bound beyond Monte
    Carlo error; the bound's looseness is reported."""
    from distpriv.datasets.adult import load_adult

    table = load_adult()
    secret = EventSecret(PREDICATE, events=EVENTS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(table, STATS, secret, subset_size=100, population=True)
        mech = dp.calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
    assert len(model.pairs) == 121
    bound = pair_deltas(model, mech.noise_covariance, epsilon=1.0).worst
    assert bound <= 1e-3
    x, rows_a, rows_b = adult_features()
    base_rate = rows_a.size / x.shape[0]
    weights = event_weights(secret, 100, base_rate)
    per = secret.event_values(100)
    rng = np.random.default_rng(27)

    def draw(e: int, size: int) -> np.ndarray:
        counts = rng.choice(np.rint(np.array(per[e]) * 100).astype(int), size=size, p=weights[e])
        return subsets(x, rows_a, rows_b, counts, rng)

    dens = [draw(0, 3000), draw(1, 3000)]
    # At the calibrated noise, and at a tenth of its variance (where the mixture's δ is
    # large enough to measure): the max over cross pairs (any weights) and the weighted
    # sum Σ wᵢvⱼ δ(Pᵢ‖Qⱼ) (the premise's weights; joint convexity's first inequality).
    w0, w1 = weights
    joint = np.outer(w0, w1).ravel()  # the pairs are every value of 0 against every of 1
    for scale in (1.0, 0.1):
        noise = mech.noise_covariance * scale
        check = pair_deltas(model, noise, epsilon=1.0)
        weighted = (float(joint @ check.deltas[:, 0]), float(joint @ check.deltas[:, 1]))
        for p, q in ((0, 1), (1, 0)):
            est, se = mc_delta(dens[p], dens[q], draw(p, 20000), noise, 1.0, rng)
            assert est <= weighted[p] + 4 * se + 1e-5, (scale, p, est, se, weighted)
            assert weighted[p] <= check.worst
            print(
                f"noise x{scale:g}, event {p} vs {q}: mixture delta (MC) {est:.3g} +- "
                f"{se:.2g}; weighted bound {weighted[p]:.3g}; max bound {check.worst:.3g}"
            )


def test_generic_over_a_value_indexed_secret():
    """Any secret with ``event_grid`` and ``with_values`` (e.g. a mean secret) gets the same
    events: its own grid per event, and the cross pairs handed back to it."""

    class Means:
        predicate = "avg(income)"
        parsed = None
        columns = frozenset({"income"})

        def __init__(self, values=(), pairs=()):
            self.values, self.pairs = tuple(values), tuple(pairs)

        def event_grid(self, low, high, n):
            return [v for v in (30e3, 40e3, 50e3, 60e3, 70e3) if low <= v <= high]

        def with_values(self, values, pairs):
            return Means(values, pairs)

        def describe(self):
            return "the average income"

        def ledger_key(self):
            return "mean:income"

    s = EventSecret(Means(), events=[(0, 49_999), (50_000, 1e9)]).grid(100)
    assert s.values == (30e3, 40e3, 50e3, 60e3, 70e3)
    assert s.value_secret().pairs == tuple((a, b) for a in (30e3, 40e3) for b in (50e3, 60e3, 70e3))
    assert s.ledger_key() == "mean:income"
