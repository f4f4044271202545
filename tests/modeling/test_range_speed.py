"""The shortcuts behind a range secret's calibration change the work, not the guarantee:
implied constraints of optimal-g's program, the active set of the
population set's members, the once-per-pair input checks and the vectorised covariance
checks, each against the computation without it."""

from __future__ import annotations

import numpy as np
import pytest

import distpriv as dp
from distpriv.accounting import gaussian_pair_profile
from distpriv.central import exact_calibration, floored
from distpriv.central import optimal as optimal_mod
from distpriv.central.optimal import calibrate_optimal
from distpriv.errors import ParameterError
from distpriv.population import exact as exact_mod
from distpriv.population import member_search as _member_search
from distpriv.population import pair_pruning
from distpriv.population.confidence import population_model
from distpriv.population.exact import pair_deltas
from distpriv.population.pair_pruning import implied_constraints
from distpriv.querymodel import GaussianQueryModel
from distpriv.util.validation import check_covariance
from support import quiet

EPS, DELTA, BETA = 1.0, 1e-3, 0.05


def _spd(rng, m):
    a = rng.normal(size=(m, m))
    return a @ a.T / m + 0.2 * np.eye(m)


# -- optimal-g's program: constraints implied by a longer parallel one ------------------


def test_dropped_constraints_are_implied_for_every_noise():
    rng = np.random.default_rng(3)
    m = 4
    covs = [_spd(rng, m) for _ in range(3)]
    v = rng.normal(size=m)
    cons = []
    for c in covs:
        for t in (0.5, -1.0, 2.0, -0.25):  # parallel multiples: only |t| = 2 must stay
            cons.append((c, t * v))
        cons.append((c, rng.normal(size=m)))  # not parallel: kept
    kept = implied_constraints(cons)
    assert len(kept) == 3 * 2
    kept_ids = {id(d) for _, d in kept}
    for _ in range(50):  # every dropped one is at most a kept one of its covariance
        b = rng.normal(size=(m, m))
        s = b @ b.T * rng.uniform(0.01, 3.0)
        for c, d in cons:
            if id(d) in kept_ids:
                continue
            q = d @ np.linalg.solve(c + s, d)
            best = max(x @ np.linalg.solve(c + s, x) for cc, x in kept if cc is c)
            assert q <= best * (1 + 1e-12)


def _range_like(k=9, m=3, seed=1):
    """Hypotheses on a grid of shares: means linear in the share, covariances moving
    with it (as a proportion secret's), pairs up to three steps apart."""
    rng = np.random.default_rng(seed)
    base, slope = rng.normal(size=m) * 5, rng.normal(size=m)
    ca, cb = _spd(rng, m), _spd(rng, m)
    shares = np.linspace(0.2, 0.6, k)
    means = np.array([base + 10 * p * slope for p in shares])
    covs = np.array([p * ca + (1 - p) * cb for p in shares])
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k) if j - i <= 3]
    return GaussianQueryModel(means, covs, pairs, labels=[f"{p:.2f}" for p in shares])


def test_program_without_implied_constraints_has_the_same_optimum(monkeypatch):
    model = _range_like()
    w = np.diag([1.0, 2.0, 0.5])
    fast = quiet(calibrate_optimal, model, epsilon=EPS, delta=DELTA, weights=w)
    monkeypatch.setattr(optimal_mod, "implied_constraints", lambda c: list(c))
    full = quiet(calibrate_optimal, model, epsilon=EPS, delta=DELTA, weights=w)
    obj = [float(np.trace(w @ x.noise_covariance)) for x in (fast, full)]
    assert obj[0] == pytest.approx(obj[1], rel=1e-5)
    # Cor. A.1's condition on every pair and both covariances, for the reduced program's
    # noise: every constraint of the full list holds.
    dist = dp.max_mahalanobis_distance(epsilon=EPS, delta=DELTA)
    noise = fast.noise_covariance
    for i, j in model.pairs:
        d = model.means[i] - model.means[j]
        for t in (i, j):
            assert d @ np.linalg.solve(model.covariances[t] + noise, d) <= dist**2 * (1 + 1e-9)


# -- strict pair checks: the public accountant's numbers ---------------------------------


def test_strict_pair_check_is_the_public_accountant_bit_for_bit():
    rng = np.random.default_rng(11)
    m, k = 4, 5
    means = rng.normal(size=(k, m))
    covs = np.array([_spd(rng, m) for _ in range(k)])
    model = GaussianQueryModel(means, covs)
    noise = _spd(rng, m)
    check = pair_deltas(model, noise, epsilon=0.7)
    for (i, j), (fwd, bwd) in zip(model.pairs, check.profiles, strict=True):
        ci, cj = covs[i] + noise, covs[j] + noise
        assert fwd == gaussian_pair_profile(means[i], ci, means[j], cj, epsilon=0.7)
        assert bwd == gaussian_pair_profile(means[j], cj, means[i], ci, epsilon=0.7)


# -- covariance checks on stacks ----------------------------------------------------------


def _loop_reference(stack):
    """The former per-matrix check: the first offending matrix, symmetry before PSD."""
    for idx, mat in enumerate(stack):
        scale = max(float(np.max(np.abs(mat))), 1e-300)
        if float(np.max(np.abs(mat - mat.T))) > 1e-10 * scale:
            return f"cov[{idx}] must be symmetric"
        if float(np.linalg.eigvalsh(mat / 2 + mat.T / 2)[0]) < -1e-10 * scale * mat.shape[0]:
            return f"cov[{idx}] must be positive semi-definite"
    return None


@pytest.mark.parametrize("bad", [(), (3,), (1, 3), (4, 0)])
def test_stacked_covariance_check_names_the_first_bad_matrix(bad):
    rng = np.random.default_rng(5)
    stack = np.array([_spd(rng, 3) for _ in range(5)])
    for t, idx in enumerate(bad):
        if t == 0:
            stack[idx] = -stack[idx]  # not PSD
        else:
            stack[idx, 0, 1] += 1.0  # not symmetric
    want = _loop_reference(stack)
    if want is None:
        got = check_covariance(stack, "cov")
        np.testing.assert_array_equal(got, stack / 2 + np.swapaxes(stack, -1, -2) / 2)
        return
    with pytest.raises(ParameterError, match=want.replace("[", r"\[").replace("]", r"\]")):
        check_covariance(stack, "cov")


# -- the population set's members on an active set ----------------------------------------


@pytest.fixture(scope="module")
def small_range():
    """A range secret on Adult small enough for the search on every member: [0.3, 0.4]
    within 0.03 of 100 rows (11 values, 27 pairs, 108 members of the set)."""
    from distpriv.datasets.adult import load_adult
    from distpriv.modeling import ProportionSecret, model_query

    from ._real_subsets import PREDICATE, STATS

    table = load_adult().sample(5000, random_state=1)
    secret = ProportionSecret(PREDICATE, range=(0.3, 0.4), within=0.03)
    return quiet(model_query, table, STATS, secret, subset_size=100)


def _slow_paths(monkeypatch):
    """Every shortcut off: no active set of members, the robust search started by a full
    check, no screen, no domination, no active set of pairs."""

    def full_worst(every, noise, *, epsilon, delta):
        check = pair_deltas(every, noise, epsilon=epsilon)
        worst = check.deltas.max(axis=1)
        k = int(np.argmax(worst))
        return _member_search.member_moments(every, [k]), float(worst[k])

    monkeypatch.setattr(floored, "smallest_scale_on_set", lambda *a, **k: None)
    monkeypatch.setattr(exact_calibration, "smallest_scale_on_set", lambda *a, **k: None)
    monkeypatch.setattr(exact_calibration, "worst_member_delta", full_worst)
    monkeypatch.setattr(exact_mod, "_ACTIVE_MIN", 10**9)
    monkeypatch.setattr(pair_pruning, "screened_profiles", lambda *a, **k: {})
    monkeypatch.setattr(pair_pruning, "dominating_pairs", lambda m: np.arange(len(m.pairs)))


@pytest.mark.parametrize("name", ["expm-g", "daum-floor"])
def test_member_active_set_gives_the_full_search_answer(small_range, monkeypatch, name):
    fast = quiet(dp.calibrate, name, small_range, epsilon=EPS, delta=DELTA, beta=BETA)
    _slow_paths(monkeypatch)
    slow = quiet(dp.calibrate, name, small_range, epsilon=EPS, delta=DELTA, beta=BETA)
    # The full search keeps the members built for earlier, larger noises (a member sits on
    # the boundary of the statement for the noise it was built for), so it can stop above
    # the least scale; the active set rebuilds them for every noise it tries: never more
    # noise than the full search, and no less than the members of its own noise allow.
    assert fast.noise.mse() <= slow.noise.mse() * (1 + 1e-4)
    lower = 0.98**2 * fast.noise_covariance
    below = population_model(small_range, beta=BETA, noise_cov=lower)
    assert pair_deltas(below, lower, epsilon=EPS).worst > DELTA
    # The same guarantee, verified by the exact accountant on every member of the set for
    # the published noise (no screen, no domination), both directions.
    cov = fast.noise_covariance
    members = population_model(small_range, beta=BETA, noise_cov=cov)
    assert len(members.pairs) == 4 * len(small_range.pairs)
    assert pair_deltas(members, cov, epsilon=EPS).worst <= DELTA
