"""The population set's members built for every pair and corner at once
equal the members built one at a time with the single-member helpers."""

from __future__ import annotations

import warnings

import numpy as np

from distpriv.datasets.adult import load_adult
from distpriv.modeling import ProportionSecret, model_query
from distpriv.population import confidence as robust

STATS = {
    "avg_age": "avg(age)",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}


def _one_at_a_time(model, beta, noise_cov):
    unc = model.uncertainty
    cs = robust.confidence_set(model, beta=beta)
    c_hat = unc.row_covariances
    means, covs = [], []
    for i, j in model.pairs:
        gap = model.means[i] - model.means[j]
        for corner in robust._corners(c_hat.shape[0]):
            cov_i, cov_j = model.covariances[i].copy(), model.covariances[j].copy()
            scaled = np.empty_like(c_hat)
            for s in range(c_hat.shape[0]):
                lam = np.sqrt(cs.variance_factors[s, :, corner[s]])
                scaled[s] = lam[:, None] * c_hat[s] * lam[None, :]
                cov_i += unc.weights[i, s] * (scaled[s] - c_hat[s])
                cov_j += unc.weights[j, s] * (scaled[s] - c_hat[s])
            spread = robust.rs._sqrt_psd(robust._gap_covariance(unc, i, j, scaled))
            metric = robust._inv_sqrt((cov_i + cov_j) / 2 + noise_cov)
            shift = robust._worst_shift(gap, metric, spread, cs.gap_z)
            means += [model.means[i] + shift, model.means[j]]
            covs += [cov_i, cov_j]
    return np.stack(means), np.stack(covs)


def test_batched_members_equal_one_at_a_time():
    table = load_adult().sample(2000, random_state=3)
    secret = ProportionSecret("income = '>50K'", range=(0.2, 0.3), within=0.03)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(table, STATS, secret, subset_size=100)
    noise = np.diag([0.4, 9.0, 0.8])
    batched = robust.population_model(model, beta=0.05, noise_cov=noise)
    means, covs = _one_at_a_time(model, 0.05, noise)
    assert len(batched.pairs) == 4 * len(model.pairs)
    np.testing.assert_allclose(batched.means, means, rtol=1e-10, atol=1e-12)
    # the batched covariances are clipped to PSD (as the one-at-a-time add() did)
    np.testing.assert_allclose(batched.covariances, covs, rtol=1e-9, atol=1e-12)
