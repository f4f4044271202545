"""optimal-g's cutting-plane rounds reuse the last round's scales (central/_round_memo.py).

References: the scale search on every member at once
(:func:`~distpriv.population.exact.smallest_scale`) for :func:`grown_scale`; the full
check :func:`~distpriv.population.exact.pair_deltas` for the pruning check that stops at the
first failing member (:func:`~distpriv.population.pair_pruning.first_failing`); optimal-g's
calibration with the memo switched off, and the exact accountant on the population set's
members for the published noise, for the calibration as a whole.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from central.test_calibration_sharing import wishart_model
from distpriv import GaussianQueryModel, calibrate
from distpriv.central._round_memo import RoundMemo, grown_scale, member_keys
from distpriv.population.confidence import DEFAULT_BETA, population_model
from distpriv.population.exact import pair_deltas, search_tolerance, smallest_scale
from distpriv.population.member_search import member_moments, moments_model
from distpriv.population.pair_pruning import first_failing

EPS, DELTA = 1.0, 1e-3


def _members(m: int, k: int, seed: int, noise: np.ndarray) -> GaussianQueryModel:
    """The population set's worst members of a Wishart model for ``noise`` (many pairs)."""
    model = wishart_model(m, k, seed)
    return population_model(model, beta=DEFAULT_BETA, noise_cov=noise, epsilon=EPS)


@pytest.mark.parametrize(("m", "k", "seed", "split"), [(5, 3, 1, 2), (6, 3, 2, 4), (4, 2, 3, 1)])
def test_grown_scale_is_the_search_on_every_member(m: int, k: int, seed: int, split: int) -> None:
    model = wishart_model(m, k, seed)
    every = _members(m, k, seed, np.eye(m) * float(np.trace(model.covariances[0])) / m)
    count = len(every.pairs)
    assert count > split
    fam = lambda s: s * s * np.diag(np.linspace(1.0, 3.0, m))  # noqa: E731
    old = moments_model(every, member_moments(every, range(split)))
    s_old, _ = smallest_scale(old, fam, epsilon=EPS, delta=DELTA, start=1.0, name="t")
    # The members in another order (added ones first, as the cutting planes add them).
    order = [*range(split, count), *range(split)]
    grown = moments_model(every, member_moments(every, order))
    memo = RoundMemo()
    memo.remember("shape", fam, s_old, member_keys(old))
    prior = memo.prior("shape", fam, member_keys(grown))
    assert prior is not None and prior[0] == s_old
    assert sorted(prior[1]) == list(range(count - split))  # the added ones, where they are
    s, check = grown_scale(grown, fam, prior, EPS, DELTA, "t")
    ref, _ = smallest_scale(grown, fam, epsilon=EPS, delta=DELTA, start=1.0, name="t")
    # Both are the least scale to the search's accuracy (final bracket 1e-5, verified upward).
    assert s == pytest.approx(ref, rel=1e-4)
    assert s >= s_old
    assert check.worst <= DELTA
    assert pair_deltas(grown, fam(s), epsilon=EPS).worst <= DELTA  # every member, no screen


def test_memo_refuses_other_families_and_fewer_members() -> None:
    m = 4
    every = _members(m, 3, 5, np.eye(m))
    fam = lambda s: s * s * np.eye(m)  # noqa: E731
    other = lambda s: s * s * 2.0 * np.eye(m)  # noqa: E731
    memo = RoundMemo()
    memo.remember("shape", fam, 1.5, member_keys(every))
    assert memo.prior("shape", other, member_keys(every)) is None  # not the same family
    fewer = moments_model(every, member_moments(every, [0]))
    assert memo.prior("shape", fam, member_keys(fewer)) is None  # members were dropped
    assert memo.prior("other", fam, member_keys(every)) is None
    assert memo.prior("shape", fam, member_keys(every)) == (1.5, [])


@pytest.mark.parametrize("seed", [0, 1])
def test_first_failing_gives_pair_deltas_verdict_in_any_order(seed: int) -> None:
    model = wishart_model(6, 3, seed)
    base = calibrate("expm-g", model, epsilon=EPS, delta=DELTA).noise_covariance
    rng = np.random.default_rng(seed)
    seen = set()
    tol = search_tolerance(DELTA)
    for factor in (0.5, 0.9, 1.0, 1.1, 2.0):
        cov = factor * base
        members = population_model(model, beta=DEFAULT_BETA, noise_cov=cov, epsilon=EPS)
        ref = pair_deltas(members, cov, epsilon=EPS, tol=tol, screen=DELTA)
        for first in ([], list(rng.permutation(len(members.pairs))[:3])):
            k, got = first_failing(members, cov, epsilon=EPS, delta=DELTA, tol=tol, first=first)
            assert (k >= 0) == (ref.worst > DELTA)
            if k >= 0:
                assert got > DELTA
                assert got == pytest.approx(float(ref.deltas[k].max()), rel=0, abs=0)
            seen.add(k >= 0)
    assert seen == {True, False}


def test_optimal_g_with_and_without_the_memo(monkeypatch) -> None:
    """The same shape and, to the search's accuracy, the same noise; each verified by the
    exact accountant on the members of the set for its published noise."""
    import distpriv.central.exact_calibration as ec

    model = wishart_model(8, 3, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = calibrate("optimal-g", model, epsilon=EPS, delta=DELTA)
        with monkeypatch.context() as mp:
            mp.setattr(ec, "RoundMemo", lambda: None)
            slow = calibrate("optimal-g", model, epsilon=EPS, delta=DELTA)
    assert fast.diagnostics["calibration_method"] == slow.diagnostics["calibration_method"]
    assert fast.mse() == pytest.approx(slow.mse(), rel=1e-4)
    for mech in (fast, slow):
        cov = mech.noise_covariance
        members = population_model(model, beta=DEFAULT_BETA, noise_cov=cov, epsilon=EPS)
        assert pair_deltas(members, cov, epsilon=EPS).worst <= DELTA
        assert mech.guarantee.holds is not False
