"""Both directions of a pair from one joint whitening (``pair_profiles_unchecked``).

The reused whitening (:meth:`distpriv.accounting._whitening._Decomposition.swapped`) must give what
two independent calls give, with P and Q exchanged in the second: the same method and
detail, δ equal to rounding (1e-12 absolute), and certified intervals that overlap.
Checked on a seeded grid of ill-conditioned, badly scaled pairs (condition numbers up to
1e9, statistics in units from 1e-6 to 1e6), on each shortcut of the accountant (equal
covariances, one statistic, one differing direction, different supports either way,
P far wider than Q, the Rényi bound), and by Hypothesis.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distpriv.accounting.pair_profile import pair_profile_unchecked, pair_profiles_unchecked
from distpriv.population.exact import pair_deltas
from distpriv.querymodel import GaussianQueryModel

TOL = 1e-12


def _spd(rng, m, cond):
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return (q * np.geomspace(1.0, cond, m)) @ q.T


def _random_pair(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 9))
    units = 10.0 ** rng.uniform(-6, 6, m)
    base = _spd(rng, m, 10.0 ** rng.uniform(0, 9))
    e = rng.normal(size=(m, m)) * rng.uniform(0.01, 1.0)
    sp = base + e @ e.T / m * rng.uniform(0, 3)
    sq = _spd(rng, m, 10.0 ** rng.uniform(0, 9)) * rng.uniform(0.2, 5.0)
    mp = rng.normal(size=m) * rng.uniform(0, 5)
    mq = rng.normal(size=m)
    eps = float(rng.uniform(0, 3))
    scale = np.outer(units, units)
    return mp * units, sp * scale, mq * units, sq * scale, eps


def _assert_same(mp, sp, mq, sq, eps):
    both = pair_profiles_unchecked(mp, sp, mq, sq, eps)
    alone = (
        pair_profile_unchecked(mp, sp, mq, sq, eps),
        pair_profile_unchecked(mq, sq, mp, sp, eps),
    )
    for new, old in zip(both, alone, strict=True):
        assert new.method == old.method
        assert new.detail == old.detail
        assert new.dim == old.dim
        assert abs(new.delta - old.delta) <= TOL, (new, old)
        # Both are certified: their intervals [estimate ± error] contain the same value.
        assert abs(new.estimate - old.estimate) <= new.error_bound + old.error_bound
    return both


@pytest.mark.parametrize("seed", range(60))
def test_seeded_ill_conditioned_pairs(seed):
    _assert_same(*_random_pair(seed))


def _shortcut_cases():
    rng = np.random.default_rng(7)
    s = _spd(rng, 4, 1e6) * 1e4
    m0, m1 = np.zeros(4), rng.normal(size=4) * 50
    one_dir = s.copy()
    one_dir[0, 0] *= 3.0  # one statistic's variance differs: one whitened direction
    singular = s.copy()
    singular[:, 0] = singular[0, :] = 0.0  # statistic 0 constant under P only
    wide = s * 1e3  # P 1000 times wider in every direction (lambda > 50)
    mixed = s.copy()
    mixed[0, 0] *= 300.0
    mixed[1, 1] /= 300.0  # wider and narrower: neither direction well conditioned
    return {
        "equal": (m1, s, m0, s, 1.0),
        "one statistic": (m1[:1], s[:1, :1], m0[:1], 2.0 * s[:1, :1], 0.5),
        "one direction": (m1, one_dir, m0, s, 1.0),
        "degenerate P": (m0, singular, m1, s, 1.0),
        "degenerate Q": (m1, s, m0, singular, 1.0),
        "constant, different values": (np.r_[1.0, m1[1:]], singular, m0, singular * 2, 1.0),
        "P far wider": (m1, wide, m0, s, 1.0),
        "mixed": (m1, mixed, m0, s, 2.0),
        "identical": (m1, s, m1, s, 0.0),
    }


@pytest.mark.parametrize("case", list(_shortcut_cases()))
def test_every_shortcut_both_directions(case):
    fwd, rev = _assert_same(*_shortcut_cases()[case])
    if case == "degenerate P":
        assert fwd.detail.startswith("P is degenerate") and rev.detail.startswith("Q is")
    if case == "degenerate Q":
        assert fwd.detail.startswith("Q is degenerate") and rev.detail.startswith("P is")


def test_the_grid_reaches_every_method():
    """The cases above exercise every branch of the accountant (or the test is weak)."""
    methods = set()
    for case in _shortcut_cases().values():
        methods.update(p.method for p in pair_profiles_unchecked(*case))
    for seed in range(60):
        methods.update(p.method for p in pair_profiles_unchecked(*_random_pair(seed)))
    assert methods >= {
        "closed form",
        "quadratic region",
        "different supports",
        "characteristic function",
        "Renyi bound",
    }


_HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_HYP
@given(
    seed=st.integers(0, 2**32 - 1),
    log_cond=st.floats(0.0, 9.0),
    log_unit=st.floats(-6.0, 6.0),
    ratio=st.floats(0.01, 100.0),
    eps=st.floats(0.0, 4.0),
)
def test_hypothesis_badly_scaled(seed, log_cond, log_unit, ratio, eps):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 6))
    units = 10.0 ** (log_unit + rng.uniform(-2, 2, m))
    sp = _spd(rng, m, 10.0**log_cond)
    sq = sp * ratio + _spd(rng, m, 10.0) * rng.uniform(0, 1)
    scale = np.outer(units, units)
    mp, mq = rng.normal(size=m) * units, rng.normal(size=m) * units * 3
    _assert_same(mp, sp * scale, mq, sq * scale, eps)


def test_pair_deltas_matches_independent_calls():
    """The calibration's check: every pair, both directions, as the uncached calls give."""
    rng = np.random.default_rng(3)
    m = 6
    covs = np.stack([_spd(rng, m, 1e4) * 10.0 ** rng.uniform(-3, 3) for _ in range(3)])
    means = rng.normal(size=(3, m)) * 10
    model = GaussianQueryModel(means, covs, labels=["a", "b", "c"])
    noise = _spd(rng, m, 1e3) * 0.5
    check = pair_deltas(model, noise, epsilon=1.0)
    for k, (i, j) in enumerate(model.pairs):
        ci, cj = covs[i] + noise, covs[j] + noise
        old = (
            pair_profile_unchecked(means[i], ci, means[j], cj, 1.0),
            pair_profile_unchecked(means[j], cj, means[i], ci, 1.0),
        )
        assert np.allclose(check.deltas[k], [p.delta for p in old], rtol=0, atol=TOL)
