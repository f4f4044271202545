"""Several secrets at once on real tables, against Monte Carlo of real subsets.

The reference is built here, independently of the library's samplers and SQL: for each
attribute and each of its values p, datasets of n = 100 rows of which round(p·n) are drawn
(i.i.d.) from the table's rows with the attribute's property and the rest from the rows
without — every other attribute left as it falls — and their statistics summed in numpy.
Against it:

* the model (each attribute's block) has the Monte Carlo means and covariances, within
  Monte Carlo error;
* the released noise's true δ(ε) over every pair of every attribute — the exact accountant
  on the Monte Carlo moments (the statistics are Gaussian enough at n = 100: a mean of 100
  rows), with a bootstrap standard error — is at most the claimed δ beyond Monte Carlo
  error, and the check is not vacuous (a quarter of the noise violates it);
* the data-level check (:func:`distpriv.attacks.verify_on_data`, no Gaussian assumption)
  on the same subsets finds no violation.

Tables: Adult (share of women and share of high earners) and the RAND health insurance
experiment (statsmodels' ``randhie``: share with an individual deductible and share in good
health).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from scipy.stats import chi2, norm

import distpriv as dp
from distpriv import ProportionSecret, SeveralSecrets, model_query
from distpriv.accounting import gaussian_pair_delta
from distpriv.attacks import verify_on_data
from distpriv.datasets.adult import load_adult
from distpriv.population.confidence import confidence_set, population_set
from distpriv.querymodel import SampledQueryModel
from support import quiet, worst_pair_delta

EPS, DELTA, N = 1.0, 1e-3, 100
DRAWS = 20_000  # datasets per value
BOOT = 20


def adult_case():
    frame = load_adult()
    stats = {
        "avg_age": "avg(age)",
        "avg_education_years": "avg(education_num)",
        "n_never_married": "count_if(marital_status = 'Never-married')",
        "avg_hours_per_week": "avg(hours_per_week)",
        "n_husband": "count_if(relationship = 'Husband')",
    }
    # Per-row features (mean statistics divided by n), computed in pandas, not SQL.
    feats = np.column_stack(
        [
            frame["age"].to_numpy(float) / N,
            frame["education_num"].to_numpy(float) / N,
            (frame["marital_status"] == "Never-married").to_numpy(float),
            frame["hours_per_week"].to_numpy(float) / N,
            (frame["relationship"] == "Husband").to_numpy(float),
        ]
    )
    masks = [(frame["sex"] == "Female").to_numpy(), (frame["income"] == ">50K").to_numpy()]
    secret = SeveralSecrets(
        [
            ProportionSecret("sex = 'Female'", [0.3, 0.4]),
            ProportionSecret("income = '>50K'", [0.2, 0.3]),
        ]
    )
    return frame, stats, feats, masks, secret


def randhie_case():
    randhie = pytest.importorskip("statsmodels.datasets.randhie")
    frame = randhie.load_pandas().data
    stats = {
        "avg_visits": "avg(mdvis)",
        "avg_disease": "avg(disea)",
        "n_poor_health": "count_if(hlthp = 1)",
        "n_limitation": "count_if(physlm > 0)",
        "n_free_care": "count_if(lncoins = 0)",
        "n_fair_health": "count_if(hlthf = 1)",
    }
    feats = np.column_stack(
        [
            frame["mdvis"].to_numpy(float) / N,
            frame["disea"].to_numpy(float) / N,
            (frame["hlthp"] == 1).to_numpy(float),
            (frame["physlm"] > 0).to_numpy(float),
            (frame["lncoins"] == 0).to_numpy(float),
            (frame["hlthf"] == 1).to_numpy(float),
        ]
    )
    masks = [(frame["idp"] == 1).to_numpy(), (frame["hlthg"] == 1).to_numpy()]
    secret = SeveralSecrets(
        [ProportionSecret("idp = 1", [0.2, 0.3]), ProportionSecret("hlthg = 1", [0.3, 0.4])]
    )
    return frame, stats, feats, masks, secret


def real_subsets(feats, masks, secret, seed):
    """Statistics of DRAWS real subsets per (attribute, value), shape (DRAWS, m) each."""
    rng = np.random.default_rng(seed)
    out = []
    for mask, attr in zip(masks, secret.attributes, strict=True):
        with_rows, without_rows = np.flatnonzero(mask), np.flatnonzero(~mask)
        for p in attr.values:
            k = round(p * N)
            ia = with_rows[rng.integers(0, with_rows.size, size=(DRAWS, k))]
            ib = without_rows[rng.integers(0, without_rows.size, size=(DRAWS, N - k))]
            out.append(feats[ia].sum(axis=1) + feats[ib].sum(axis=1))
    return out


def true_delta(draws, pairs, noise):
    """Largest exact δ(ε) over pairs and directions, on the draws' moments."""
    mus = [d.mean(axis=0) for d in draws]
    covs = [np.cov(d, rowvar=False) for d in draws]
    out = 0.0
    for i, j in pairs:
        for a, b in ((i, j), (j, i)):
            out = max(
                out,
                gaussian_pair_delta(mus[a], covs[a] + noise, mus[b], covs[b] + noise, epsilon=EPS),
            )
    return out


CASES = {"adult": adult_case, "randhie": randhie_case}


@pytest.mark.parametrize("which", ["adult", "randhie"])
def test_released_noise_against_real_subsets(which):
    frame, stats, feats, masks, secret = CASES[which]()
    model = quiet(model_query, frame, stats, secret, subset_size=N)
    draws = real_subsets(feats, masks, secret, seed=27)

    # 1. Each block of the model is its attribute's own law (the other attribute as it
    #    falls): means and variances within Monte Carlo error of the real subsets.
    for t, d in enumerate(draws):
        mu, var = d.mean(axis=0), d.var(axis=0, ddof=1)
        se = np.sqrt(np.diag(model.covariances[t]) / DRAWS)
        assert np.all(np.abs(mu - model.means[t]) <= 5 * se), (which, t)
        kurt = np.mean((d - mu) ** 4, axis=0) / var**2
        rel_se = np.sqrt((kurt - 1) / DRAWS)
        rel = var / np.diag(model.covariances[t]) - 1
        assert np.all(np.abs(rel) <= 5 * rel_se), (which, t, rel)

    pairs = list(model.pairs)
    assert pairs == [(0, 1), (2, 3)]  # only within an attribute
    rng = np.random.default_rng(5)
    for name in ("expm-g", "eigm"):
        for beta in (None, 0.05):
            # beta = None: calibrated on the fitted moments, so the true delta should be
            # the claim itself (a sharp check of the model); beta = 0.05 (the default):
            # covering the population set, at most the claim.
            mech = quiet(dp.calibrate, name, model, epsilon=EPS, delta=DELTA, beta=beta)
            noise = mech.noise_covariance
            # 2. True δ of the released noise on the real subsets' moments, with its
            #    bootstrap standard error over the Monte Carlo datasets.
            got = true_delta(draws, pairs, noise)
            boot = [
                true_delta([d[rng.integers(0, DRAWS, DRAWS)] for d in draws], pairs, noise)
                for _ in range(BOOT)
            ]
            se = float(np.std(boot, ddof=1))
            print(
                f"\n{which} {name} beta={beta}: true delta {got:.3g} (MC se {se:.2g}) vs "
                f"claim {DELTA:g}"
            )
            assert got <= DELTA + 3 * se
            if beta is None:
                assert got >= DELTA - 3 * se - 0.2 * DELTA  # the claim is not loose either
                # Not vacuous: a quarter of the noise sd violates the claim on the same
                # subsets, beyond Monte Carlo error.
                assert true_delta(draws, pairs, noise / 16) > DELTA + 3 * se
        # Each attribute needs the noise: without it, each pair alone violates the claim.
        for p in pairs:
            assert true_delta(draws, [p], 0 * noise) > 10 * DELTA

    # 3. The data-level check, on the same real subsets (no Gaussian assumption).
    mech = quiet(dp.calibrate, "expm-g", model, epsilon=EPS, delta=DELTA)
    sampled = SampledQueryModel(draws, pairs, labels=model.labels, statistics=model.statistics)
    check = quiet(verify_on_data, sampled, mech, rng=3, n_eval=5000, null_control=False)
    print(f"{which} verify_on_data: {check.verdict}")
    assert check.verdict != "violation"


def test_confidence_set_splits_the_scheffe_radius_over_attributes():
    frame, stats, _, _, secret = adult_case()
    sample = frame.sample(3000, random_state=1)
    both = quiet(model_query, sample, stats, secret, subset_size=N)
    one = quiet(model_query, sample, stats, secret.attributes[1], subset_size=N)
    beta, m = 0.05, len(stats)
    # The box set's gap statement (the joint set has one statement per pair instead).
    with population_set("box"):
        cs1 = confidence_set(one, beta=beta)
        cs2 = confidence_set(both, beta=beta)
    # One proportion secret: unchanged (one direction).
    assert cs1.directions == 1
    want1 = min(norm.ppf(1 - beta / 2), np.sqrt(chi2.ppf(1 - beta / 2, m)))
    assert cs1.gap_z == pytest.approx(want1)
    # Two attributes: one gap direction each, the radius at level beta / 4.
    assert cs2.directions == 2
    want2 = min(norm.ppf(1 - beta / 4), np.sqrt(chi2.ppf(1 - beta / 4, m)))
    assert cs2.gap_z == pytest.approx(want2)
    # The uncertainty: each attribute's strata side by side, weights only on its own.
    unc = both.uncertainty
    assert unc.weights.tolist() == [
        [30, 70, 0, 0],
        [40, 60, 0, 0],
        [0, 0, 20, 80],
        [0, 0, 30, 70],
    ]
    n_female = int((sample["sex"] == "Female").sum())
    n_rich = int((sample["income"] == ">50K").sum())
    assert unc.stratum_sizes == (n_female, 3000 - n_female, n_rich, 3000 - n_rich)
    # Each block equals the attribute's own model.
    for a, (lo, hi) in zip(secret.attributes, ((0, 2), (2, 4)), strict=True):
        own = quiet(model_query, sample, stats, a, subset_size=N)
        np.testing.assert_allclose(both.means[lo:hi], own.means, rtol=1e-12)
        np.testing.assert_allclose(both.covariances[lo:hi], own.covariances, rtol=1e-12)


def test_monte_carlo_model_matches_analytic():
    frame, stats, _, _, secret = adult_case()
    mc = quiet(
        model_query,
        frame,
        stats,
        secret,
        subset_size=N,
        method="montecarlo",
        n_samples=4000,
        rng=1,
    )
    an = quiet(model_query, frame, stats, secret, subset_size=N)
    assert mc.samples is not None and len(mc.samples) == 4
    se = np.sqrt(np.diagonal(an.covariances, axis1=1, axis2=2) / 4000)
    assert np.all(np.abs(mc.means - an.means) <= 5 * se)
    assert mc.to_sampled().pairs == an.pairs
    assert isinstance(mc.uncertainty, dp.MomentUncertainty)
    assert mc.uncertainty.weights.shape == (4, 4)


def test_population_coverage_of_several_secrets():
    """The calibration on a modelling sample covers the population's own model for every
    pair of both attributes at once, in at least 1 − β of the tables (up to binomial
    error), as the single-secret coverage test checks for one attribute."""
    from scipy.stats import binom

    frame, stats, _, _, secret = adult_case()
    pop = quiet(model_query, frame, stats, secret, subset_size=N, population=True)
    rng = np.random.default_rng(31)
    ratios = []
    for size in (300, 1000):
        for _ in range(12):
            sample = frame.iloc[rng.choice(len(frame), size, replace=False)]
            model = quiet(model_query, sample, stats, secret, subset_size=N)
            mech = quiet(dp.calibrate, "expm-g", model, epsilon=EPS, delta=DELTA)
            ratios.append(true_delta_model(pop, mech.noise_covariance) / DELTA)
    r = np.array(ratios)
    bad = int(np.sum(r > 1 + 1e-6))
    print(f"\nseveral secrets coverage: {bad}/{r.size} violate; largest true/claim {r.max():.3g}")
    assert bad <= int(binom.ppf(0.999, r.size, 0.05))
    assert r.max() > 0.05  # not vacuous


true_delta_model = partial(worst_pair_delta, epsilon=EPS)


def test_hiding_both_costs_little_more_than_the_harder_one():
    """Each attribute's confidence set is its own (kurtosis over its own strata, corners
    over its own strata), Bonferroni aside: on Adult the noise hiding both shares is close
    to the larger of the two attributes' own (a set pooling every stratum's kurtosis —
    husbands are nearly all men, kurtosis 1.5e4 in the women's stratum — cost 1.65x)."""
    frame, stats, _, _, secret = adult_case()
    mse = []
    for s in (*secret.attributes, secret):
        model = quiet(model_query, frame, stats, s, subset_size=N)
        mse.append(quiet(dp.calibrate, "expm-g", model, epsilon=EPS, delta=DELTA).mse())
    print(f"\nE||Z||^2: alone {mse[0]:.1f}, {mse[1]:.1f}; both {mse[2]:.1f}")
    assert max(mse[:2]) <= mse[2] <= 1.05 * max(mse[:2])
