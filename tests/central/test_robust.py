"""The population layer: a guarantee that holds on the population
from which the modelling table was drawn, with confidence 1 − β.

The reference is exact: the "population" is all of Adult (45,222 rows), declared as such
(``population=True``, finite-population correction against it), and the true δ(1) of a
calibrated noise is computed on its model with the exact accountant, both directions.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import distpriv as dp
from adult_setup import ADULT_STATS, INCOME
from distpriv.accounting import gaussian_pair_delta
from distpriv.datasets.adult import load_adult
from distpriv.errors import ConfigError, DistPrivError
from distpriv.modeling import ProportionSecret, model_query
from distpriv.moment_uncertainty import MomentUncertainty
from distpriv.population.confidence import confidence_set, gap_bound, population_set
from distpriv.querymodel import GaussianQueryModel

EPS, DELTA, BETA = 1.0, 1e-3, 0.05
TABLES = 20  # modelling tables per size
SIZES = (300, 1000)
# The measurement is exact (the accountant's stated error is below 1e-9 of δ here), so
# "within the claim" allows only that: δ_true <= δ (1 + 1e-6).
ALLOWANCE = 1e-6


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.AssumptionWarning)
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return load_adult()


@pytest.fixture(scope="module")
def population(adult):
    """The model of all of Adult, declared the population (computed once per module)."""
    return _quiet(
        model_query, adult, ADULT_STATS, INCOME, subset_size=100, method="analytic", population=True
    )


def true_delta(pop: GaussianQueryModel, noise: np.ndarray) -> float:
    (m0, m1), (c0, c1) = pop.means, pop.covariances
    return max(
        gaussian_pair_delta(m0, c0 + noise, m1, c1 + noise, epsilon=EPS),
        gaussian_pair_delta(m1, c1 + noise, m0, c0 + noise, epsilon=EPS),
    )


def fpc_model(model) -> GaussianQueryModel:
    """Today's model before this change: the same moments with the finite-population
    correction against the modelling table, Σ_θ = Σ_s w(N − w)/N Ĉ_s (Ĉ_s unbiased)."""
    unc = model.uncertainty
    sizes = np.asarray(unc.stratum_sizes, dtype=float)
    covs = np.einsum(
        "ts,sab->tab", unc.weights * (sizes - unc.weights) / sizes, unc.row_covariances
    )
    return GaussianQueryModel(model.means, covs, model.pairs, labels=model.labels)


# optimal-g on 40 tables is ~90 % of this module's time (its search against the population
# set): its coverage runs in the slow stage of .ci/run (DISTPRIV_SLOW=1), which also checks
# optimal-g's coverage on these populations and sizes as auto's candidate
# (tests/central/test_population_coverage.py). The suite keeps expm-g's coverage here on
# the same tables, and optimal-g's "never weaker" on the set's members
# (test_population_coverage.py::test_never_weaker_...): with the set's coverage, that is
# the claim on the population.
slow = pytest.mark.skipif(
    not os.environ.get("DISTPRIV_SLOW"),
    reason="slow (optimal-g against the set on 40 tables; a stage of its own in .ci/run): "
    "set DISTPRIV_SLOW=1",
)


def modelling_tables(adult):
    """Per size, the ``TABLES`` seeded modelling tables and their models (always the same
    tables: one generator, drawn in order)."""
    rng = np.random.default_rng(20261123)
    for size in SIZES:
        for t in range(TABLES):
            sample = adult.iloc[rng.choice(len(adult), size, replace=False)]
            model = _quiet(
                model_query, sample, ADULT_STATS, INCOME, subset_size=100, method="analytic"
            )
            yield size, t, sample, model


@pytest.fixture(scope="module")
def draws(adult, population):
    """Per size: the true δ(1) of robust expm-g, and of today's expm-g."""
    out = {size: [] for size in SIZES}
    for size, t, sample, model in modelling_tables(adult):
        if t == 0:
            # The FPC reference above is today's population=True model of the table.
            old = _quiet(
                model_query,
                sample,
                ADULT_STATS,
                INCOME,
                subset_size=100,
                method="analytic",
                population=True,
            )
            np.testing.assert_allclose(
                fpc_model(model).covariances, old.covariances, rtol=1e-9, atol=1e-12
            )
        row = {}
        mech = dp.calibrate("expm-g", model, epsilon=EPS, delta=DELTA)
        assert mech.guarantee.premises[-1].name == "population"
        row["expm-g"] = (true_delta(population, mech.noise_covariance), mech.mse())
        plain = dp.calibrate("expm-g", fpc_model(model), epsilon=EPS, delta=DELTA)
        row["old expm-g"] = (true_delta(population, plain.noise_covariance), plain.mse())
        out[size].append(row)
    return out


@pytest.fixture(scope="module")
def optimal_draws(adult, population):
    """Per size, computed when first asked for (so that the two sizes' tests, spread over
    pytest-xdist workers, each compute only their own): the true δ(1) of robust optimal-g
    on the same tables as ``draws``."""
    out: dict[int, list[dict]] = {}

    def of_size(size: int) -> list[dict]:
        if size not in out:
            rows = []
            for s, _, _, model in modelling_tables(adult):  # the same seeded tables, in order
                if s != size:
                    continue
                mech = dp.calibrate("optimal-g", model, epsilon=EPS, delta=DELTA)
                assert mech.guarantee.premises[-1].name == "population"
                delta = true_delta(population, mech.noise_covariance)
                rows.append({"optimal-g": (delta, mech.mse())})
            out[size] = rows
        return out[size]

    return of_size


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["expm-g", pytest.param("optimal-g", marks=slow)])
def test_default_calibration_holds_on_the_population(request, name, size):
    if name == "expm-g":
        rows = request.getfixturevalue("draws")[size]
    else:
        rows = request.getfixturevalue("optimal_draws")(size)
    deltas = np.array([row[name][0] for row in rows])
    within = np.mean(deltas <= DELTA * (1 + ALLOWANCE))
    print(
        f"\n{name} tables of {size}: {within:.0%} within the claim, largest true "
        f"delta(1) {deltas.max():.3g} (claim {DELTA:g})"
    )
    assert within >= 1 - BETA


def test_without_the_correction_the_claim_fails_on_the_population(draws):
    """Today's behaviour (FPC against the table, fitted moments) violates far more often:
    the test above could fail."""
    old = np.array([row["old expm-g"][0] for size in SIZES for row in draws[size]])
    new = np.array([row["expm-g"][0] for size in SIZES for row in draws[size]])
    old_rate = np.mean(old > DELTA * (1 + ALLOWANCE))
    worst = old.max() / DELTA
    print(f"\nwithout the correction: {old_rate:.0%} of tables violate, up to {worst:.3g}x")
    assert old_rate > BETA + 0.15
    assert old_rate > np.mean(new > DELTA * (1 + ALLOWANCE))


def test_robust_noise_is_larger_and_shrinks_with_the_table(draws):
    # The price: more noise than today's, and less for larger modelling tables.
    med = {
        size: np.median([row["expm-g"][1] / row["old expm-g"][1] for row in draws[size]])
        for size in SIZES
    }
    assert med[300] > med[1000] > 1.0


# --- the model carries the uncertainty of its moments -----------------------------------


def small_table(n=400, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "s": rng.random(n) < 0.4,
            "x": rng.normal(10, 2, n),
            "y": rng.exponential(1.0, n),
        }
    )


SMALL_QUERY = {"mx": "avg(x)", "sy": "sum(y)"}
SMALL_SECRET = ProportionSecret("s", values=[0.4, 0.6])


def test_sample_model_has_no_fpc_and_carries_uncertainty():
    df = small_table()
    model = _quiet(model_query, df, SMALL_QUERY, SMALL_SECRET, subset_size=50, method="analytic")
    assert model.population is False and model.uncertainty is not None
    unc = model.uncertainty
    # Independent reference: numpy's unbiased covariance of each stratum's features, times
    # the rows drawn from it (i.i.d. from the population: no finite-population correction).
    feats = np.column_stack([df.x / 50, df.y])
    s = df.s.to_numpy()
    ca, cb = np.cov(feats[s], rowvar=False), np.cov(feats[~s], rowvar=False)
    assert unc.stratum_sizes == (int(s.sum()), int((~s).sum()))
    np.testing.assert_allclose(unc.row_covariances, np.stack([ca, cb]), rtol=1e-9)
    for t, k in enumerate(model.counts):
        np.testing.assert_allclose(model.covariances[t], k * ca + (50 - k) * cb, rtol=1e-9)
    # Kurtosis of a Gaussian feature ≈ 3, of an exponential one ≈ 9 (sample estimates).
    assert 2.0 < unc.kurtosis[0, 0] < 4.5 and unc.kurtosis[0, 1] > 4.5
    declared = _quiet(
        model_query,
        df,
        SMALL_QUERY,
        SMALL_SECRET,
        subset_size=50,
        method="analytic",
        population=True,
    )
    assert declared.uncertainty is None and declared.population is True
    # Without replacement from the table: strictly less variance than i.i.d. draws.
    assert np.all(np.diag(declared.covariances[1]) < np.diag(model.covariances[1]))


def test_montecarlo_sample_model_draws_iid():
    """population=False: Monte Carlo datasets are drawn with replacement, so their
    variance matches k S, not the finite-population-corrected k (N − k)/(N − 1) S."""
    df = small_table(n=90, seed=4)
    secret = ProportionSecret("s", values=[0.4, 0.5])
    model = _quiet(
        model_query,
        df,
        {"sy": "sum(y)"},
        secret,
        subset_size=40,
        method="montecarlo",
        n_samples=20_000,
        rng=3,
    )
    y, s = df.y.to_numpy(), df.s.to_numpy()
    k = model.counts[1]
    iid = k * np.var(y[s], ddof=0) + (40 - k) * np.var(y[~s], ddof=0)
    # Sample variance of 20,000 draws: relative standard error about sqrt(2/20000) = 1 %.
    assert abs(model.covariances[1][0, 0] / iid - 1) < 0.06
    assert model.uncertainty is not None


def test_uncertainty_serialises():
    model = _quiet(
        model_query, small_table(), SMALL_QUERY, SMALL_SECRET, subset_size=50, method="analytic"
    )
    data = json.loads(json.dumps(model.to_dict()))
    assert data["population"] is False
    back = MomentUncertainty.from_dict(data["uncertainty"])
    np.testing.assert_array_equal(back.row_covariances, model.uncertainty.row_covariances)
    assert back.stratum_sizes == model.uncertainty.stratum_sizes


def test_bad_uncertainty_and_beta_are_refused():
    with pytest.raises(DistPrivError, match="stratum_sizes"):
        MomentUncertainty([1, 5], [[1, 1]], np.ones((2, 1, 1)), np.ones((2, 1)))
    with pytest.raises(DistPrivError, match="uncertainty describes"):
        GaussianQueryModel(
            [[0.0], [1.0]],
            [[1.0]],
            uncertainty=MomentUncertainty([5, 5], [[1, 1]], np.ones((2, 1, 1)), np.ones((2, 1))),
        )
    model = GaussianQueryModel([[0.0], [1.0]], [[1.0]])
    for bad in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(DistPrivError, match="beta"):
            dp.calibrate("expm-g", model, epsilon=1.0, delta=1e-3, beta=bad)


def test_given_models_are_unchanged_and_premise_in_json_and_html():
    given = GaussianQueryModel([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.2], [0.2, 2.0]])
    a = dp.calibrate("expm-g", given, epsilon=1.0, delta=1e-3)
    b = dp.calibrate("expm-g", given, epsilon=1.0, delta=1e-3, beta=None)
    np.testing.assert_array_equal(a.noise_covariance, b.noise_covariance)
    assert [p.name for p in a.guarantee.premises] == ["gaussian"]
    model = _quiet(
        model_query, small_table(), SMALL_QUERY, SMALL_SECRET, subset_size=50, method="analytic"
    )
    robust = dp.calibrate("expm-g", model, epsilon=1.0, delta=1e-3)
    plain = dp.calibrate("expm-g", model, epsilon=1.0, delta=1e-3, beta=None)
    assert robust.mse() > plain.mse()
    premise = robust.guarantee.to_dict()["premises"][-1]
    assert premise["name"] == "population" and "at least 0.95" in premise["statement"]
    assert "probability at least 0.95" in robust.guarantee._repr_html_()
    assert "no stated confidence" in plain.guarantee.premises[-1].detail
    assert robust.diagnostics["population_confidence_set"]["beta"] == 0.05


def test_gap_bound_covers_the_true_distance_monte_carlo():
    """The upper confidence bound on ‖M Δ‖ from the estimate Δ̂ = Δ + spread·ξ fails with
    probability ≤ Φ(−z) (independent: seeded draws of Δ̂ around a known Δ), and is not
    vacuous: with the true gap along the widest error direction it fails close to Φ(−z)."""
    rng = np.random.default_rng(7)
    z = float(norm.ppf(1 - BETA))
    draws = 100_000
    margin = 3 * np.sqrt(BETA * (1 - BETA) / draws)
    rates = []
    for trial in range(6):
        m = 4
        metric = rng.normal(size=(m, m)) + 3 * np.eye(m)
        spread = 0.3 * rng.normal(size=(m, m))
        b = metric @ spread
        if trial % 2:  # the worst case of the bound: M Δ along B's top singular vector
            u = np.linalg.svd(b)[0][:, 0]
            gap = np.linalg.solve(metric, 5 * np.linalg.norm(b, 2) * u)
        else:
            gap = rng.normal(size=m)
        true = np.linalg.norm(metric @ gap)
        est = gap + rng.normal(size=(draws, m)) @ spread.T
        top = np.linalg.norm(b, 2)
        bounds = np.linalg.norm(est @ metric.T, axis=1) + z * top
        assert abs(gap_bound(est[0], metric, spread, z) - bounds[0]) <= 1e-12 * bounds[0]
        rate = float(np.mean(bounds < true))
        assert rate <= BETA + margin
        rates.append(rate)
    assert max(rates) >= BETA - 2 * margin  # attained: the bound is as tight as it claims


def test_confidence_set_shrinks_with_the_table(adult):
    sets = []
    for size in (500, 5000):
        sample = adult.sample(size, random_state=0)
        model = _quiet(model_query, sample, ADULT_STATS, INCOME, subset_size=100, method="analytic")
        sets.append(confidence_set(model, beta=BETA).variance_factors)
    assert np.all(sets[1][..., 1] <= sets[0][..., 1]) and np.all(sets[1][..., 0] >= sets[0][..., 0])


def test_release_config_keys(tmp_path):
    from distpriv.pipeline.config import load_release_config

    base = """
[data]
model = "adult:modeling"
[query]
a = "avg(age)"
[secret]
predicate = "income = '>50K'"
values = [0.45, 0.55]
[model]
subset_size = 100
{model}
[mechanism]
name = "expm-g"
epsilon = 1.0
delta = 1e-3
{mech}
"""
    path = tmp_path / "c.toml"
    path.write_text(base.format(model="population = true", mech="beta = 0.1"))
    cfg = load_release_config(path)
    assert cfg.model["population"] is True and cfg.options["beta"] == 0.1
    path.write_text(base.format(model="", mech='beta = "none"'))
    assert load_release_config(path).options["beta"] is None
    for model, mech in (("population = 1", ""), ("", "beta = 1.5"), ("", 'beta = "x"')):
        path.write_text(base.format(model=model, mech=mech))
        with pytest.raises(ConfigError, match=r"population|beta"):
            load_release_config(path)


def test_gap_bounds_cover_every_pair_of_psi_at_once():
    """With three secret values the gap bounds of the three pairs hold simultaneously with
    probability ≥ 1 − β/2 (Monte Carlo over the shared estimation error)."""
    rng = np.random.default_rng(11)
    m, k = 3, 3
    row_cov = np.stack([np.eye(m), 2 * np.eye(m)])
    unc = MomentUncertainty(
        (60, 240), [(30, 70), (40, 60), (50, 50)], row_cov, np.full((2, m), 3.0)
    )
    means = rng.normal(size=(k, m))
    covs = np.stack([w[0] * row_cov[0] + w[1] * row_cov[1] for w in unc.weights])
    model = GaussianQueryModel(means, covs, uncertainty=unc)
    with population_set("box"):  # the box's gap statement (β/2; the joint set's: below)
        cs = confidence_set(model, beta=BETA)
    assert cs.pairs == 3 and cs.gap_z == pytest.approx(norm.ppf(1 - BETA / 6))
    # The joint set spends all of β on one one-sided statement per pair.
    with population_set("joint"):
        joint = confidence_set(model, beta=BETA)
    assert joint.method == "joint" and joint.gap_z == pytest.approx(norm.ppf(1 - BETA / 3))
    # The per-row mean gap between the strata, and its estimate's error law.
    d = rng.normal(size=m) * 0.3
    err_cov = row_cov[0] / 60 + row_cov[1] / 240
    draws = 40_000
    est = d + rng.multivariate_normal(np.zeros(m), err_cov, size=draws)
    fail_all = np.zeros(draws, bool)
    fail_joint = np.zeros(draws, bool)
    for i, j in model.pairs:
        dw = unc.weights[i, 0] - unc.weights[j, 0]
        metric = np.linalg.inv(np.linalg.cholesky((covs[i] + covs[j]) / 2 + 0.5 * np.eye(m)))
        spread = abs(dw) * np.linalg.cholesky(err_cov)
        true = np.linalg.norm(metric @ (dw * d))
        top = np.linalg.norm(metric @ spread, 2)
        seen = np.linalg.norm((dw * est) @ metric.T, axis=1)
        assert gap_bound(dw * est[0], metric, spread, cs.gap_z) == pytest.approx(
            seen[0] + cs.gap_z * top
        )
        fail_all |= seen + cs.gap_z * top < true
        fail_joint |= seen + joint.gap_z * top < true
    margin = 3 * np.sqrt(BETA / 2 / draws)
    assert fail_all.mean() <= BETA / 2 + margin
    assert fail_joint.mean() <= BETA + 3 * np.sqrt(BETA / draws)
