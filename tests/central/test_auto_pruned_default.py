"""``auto`` prunes by default (to save calibration time): the same choice, honest rows.

References: ``choose_mechanism(..., prune=False)`` (every candidate calibrated) for the
choice and its noise, bit for bit; :func:`distpriv.calibrate` of each skipped candidate
(calibrated anyway here) for "it could not have been chosen" and for the lower bound its
row states; :func:`~distpriv.population.exact.pair_deltas` for the early-stopping check
(:func:`~distpriv.central.auto_pruning.failing_pair`).
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from central.test_auto_pruning import FLOORED, _choose, _lattice
from central.test_calibration_sharing import wishart_model
from distpriv import GaussianQueryModel, calibrate
from distpriv.central.auto_pruning import failing_pair
from distpriv.errors import ConfigError, DistPrivError
from distpriv.pipeline.stages.calibrate import choose_for_table
from distpriv.population.confidence import DEFAULT_BETA, population_model
from distpriv.population.exact import pair_deltas, search_tolerance

EPS, DELTA = 1.0, 1e-3


@pytest.mark.parametrize(("m", "k", "seed"), [(6, 2, 10), (7, 3, 11), (9, 3, 12)])
def test_default_is_pruned_and_chooses_what_the_full_search_chooses(
    m: int, k: int, seed: int
) -> None:
    model = wishart_model(m, k, seed)
    default = _choose(model)
    full = _choose(model, prune=False)
    assert default.name == full.name
    assert np.array_equal(default.mechanism.noise_covariance, full.mechanism.noise_covariance)
    pairs = zip(default.mechanism.noise.components, full.mechanism.noise.components, strict=True)
    for a, b in pairs:  # the published noise's parts, bit for bit
        assert a.kind == b.kind
        assert np.array_equal(a.basis, b.basis) and np.array_equal(a.scales, b.scales)
    assert default.pruned and not full.pruned
    assert [c.mechanism for c in default.candidates] == [c.mechanism for c in full.candidates]
    chosen = next(c.mse for c in full.candidates if c.mechanism == full.name)
    rows = {c.mechanism: c for c in full.candidates}
    for c in default.candidates:
        if not c.pruned:
            assert c.mse == rows[c.mechanism].mse or (
                math.isnan(c.mse) and math.isnan(rows[c.mechanism].mse)
            )
            continue
        assert c.calibrated is None and not c.verified and math.isnan(c.mse)
        assert c.reason.startswith("not calibrated: cannot be chosen (")
        # Calibrated anyway: never a verified noise cheaper than the choice, and above the
        # bound the row states.
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                opts = {"lattice": _lattice(m)} if c.mechanism in FLOORED else {}
                mech = calibrate(c.mechanism, model, epsilon=EPS, delta=DELTA, **opts)
        except DistPrivError:
            continue  # refused outright: not a candidate either
        if c.mse_above is not None:
            assert c.mse_above >= chosen
            assert mech.mse() > c.mse_above
        else:  # pruned for its rank: noise on fewer than m directions
            assert "directions whatever its scale" in c.reason
            assert mech.noise_rank < m
        assert mech.mse() > chosen or mech.noise_rank < m


def test_pruned_rows_are_json_safe_and_say_so() -> None:
    choice = _choose(wishart_model(6, 2, 10))
    out = choice.to_dict()
    text = json.dumps(out, allow_nan=False)  # no NaN anywhere in the report's table
    assert "NaN" not in text
    assert out["pruned"] == list(choice.pruned) and out["pruned"]
    for row in out["rows"]:
        if row["pruned"]:
            assert row["mse"] is None and row["calibrated"] is False
            assert row["reason"].startswith("not calibrated")
            assert row["vs_rank_one"] is None
    # daum was not calibrated: no rank-one optimum to price against (prune=False has one
    # when daum verifies but for its rank).
    assert choice.rank_one_optimum is None


def test_failing_pair_agrees_with_pair_deltas() -> None:
    model = wishart_model(8, 3, 13)
    base = calibrate("expm-g", model, epsilon=EPS, delta=DELTA).noise_covariance
    rng = np.random.default_rng(0)
    seen = set()
    for factor in (0.3, 0.8, 0.95, 1.0, 1.2, 3.0):
        a = rng.normal(size=(8, 8))
        cov = factor * (base + 0.05 * base[0, 0] * (a @ a.T) / 8)
        target = population_model(model, beta=DEFAULT_BETA, noise_cov=cov, epsilon=EPS)
        for members in (target, GaussianQueryModel(model.means, model.covariances)):
            ref = pair_deltas(members, cov, epsilon=EPS, tol=search_tolerance(DELTA), screen=DELTA)
            got = failing_pair(members, cov, epsilon=EPS, delta=DELTA)
            assert (got > DELTA) == (ref.worst > DELTA)
            if got > DELTA:
                assert np.any(np.isclose(ref.deltas, got, rtol=0, atol=0))
            else:
                assert got == 0.0
            seen.add(got > DELTA)
    assert seen == {True, False}  # both verdicts exercised


@pytest.mark.filterwarnings("ignore")
def test_config_prune_option() -> None:
    model = wishart_model(5, 2, 14)
    with pytest.raises(ConfigError, match="prune must be true or false"):
        choose_for_table(model, epsilon=EPS, delta=DELTA, options={"prune": "no"})
    full = choose_for_table(model, epsilon=EPS, delta=DELTA, options={"prune": False})
    default = choose_for_table(model, epsilon=EPS, delta=DELTA)
    assert not full.pruned and default.pruned
    assert default.name == full.name
    assert np.array_equal(default.mechanism.noise_covariance, full.mechanism.noise_covariance)
