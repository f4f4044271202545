"""The secure sampler: OpenDP discrete noise on a grid, OS entropy.

Statistical tests draw 2·10⁴ secure releases in one batched call and compare their mean and
second moments with ``noise_covariance``: per-entry z-scores whose standard errors follow
from the noise's own fourth moments, with a Bonferroni threshold at family level 1e-6.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import distpriv as dp
from distpriv.noise import (
    GRID_EXPONENT,
    NUMPY_SAMPLER,
    _opendp_measurement,
    grid_rounding,
    sampler_description,
    secure_add,
    secure_sample,
)

N_DRAWS = 20_000
FAMILY_ALPHA = 1e-6
# Fourth cumulant of a unit-scale coordinate: Laplace(b) has variance 2b² and E Y⁴ = 24b⁴.
_KAPPA4 = {"gaussian": 0.0, "laplace": 12.0}


@pytest.fixture(scope="module")
def model3():
    """Three statistics, two hypotheses; the means differ along a direction of all axes."""
    return dp.GaussianQueryModel(
        [[100.0, 101.0, 5.0], [99.0, 102.0, 5.5]],
        [[22.0, -6.0, 1.0], [-6.0, 13.0, 0.5], [1.0, 0.5, 2.0]],
        labels=["a", "b"],
        statistics=["x", "y", "z"],
    )


@pytest.fixture(scope="module")
def model3x3():
    """Three hypotheses: EigM's noise is then full rank and correlated (rotated, unequal)."""
    return dp.GaussianQueryModel(
        [[100.0, 101.0, 5.0], [99.0, 102.0, 5.5], [99.5, 100.0, 6.0]],
        [[22.0, -6.0, 1.0], [-6.0, 13.0, 0.5], [1.0, 0.5, 2.0]],
        labels=["a", "b", "c"],
        statistics=["x", "y", "z"],
    )


def _calibrate(name, model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.AssumptionWarning)
        # The papers' calibration: these tests are about the sampler, with the noise shapes
        # (ranks) of Chen & Ohrimenko's mechanisms; exact calibration may drop directions.
        opts = {"calibration": "analytic"} if dp.mechanism_info(name).gaussian else {}
        return dp.calibrate(name, model, epsilon=1.0, delta=1e-3, **opts)


def _product_variance(noise: dp.Noise) -> np.ndarray:
    """Var(Z_i Z_j) for Z = Σ_p b_p Y_p with independent coordinates, shape (m, m).

    Var(Z_i Z_j) = Σ_ii Σ_jj + Σ_ij² + Σ_p B_ip² B_jp² κ₄(Y_p), κ₄ the fourth cumulant.
    """
    cov = noise.covariance
    out = np.outer(np.diag(cov), np.diag(cov)) + cov**2
    for comp in noise.components:
        k4 = _KAPPA4[comp.kind] * comp.scales**4
        b2 = comp.basis**2
        out += (b2 * k4) @ b2.T
    return out


def _assert_moments(noise: dp.Noise, value: np.ndarray, released: np.ndarray) -> None:
    """Mean and covariance of ``released − value`` match ``noise`` (Bonferroni z-scores)."""
    z = released - value
    n, m = z.shape
    cov = noise.covariance
    var_prod = _product_variance(noise)
    iu = np.triu_indices(m)
    n_tests = m + iu[0].size
    crit = stats.norm.isf(FAMILY_ALPHA / (2 * n_tests))
    # Entries of zero variance (no noise there) must be exact.
    sd_mean = np.sqrt(np.diag(cov) / n)
    sd_prod = np.sqrt(var_prod[iu] / n)
    mean = z.mean(axis=0)
    second = (z.T @ z / n)[iu]
    assert np.all(np.abs(mean[sd_mean == 0]) < 1e-9)
    assert np.all(np.abs(second[sd_prod == 0]) < 1e-9)
    z_mean = mean[sd_mean > 0] / sd_mean[sd_mean > 0]
    z_cov = (second - cov[iu])[sd_prod > 0] / sd_prod[sd_prod > 0]
    assert np.max(np.abs(z_mean)) < crit, (z_mean, crit)
    assert np.max(np.abs(z_cov)) < crit, (z_cov, crit)


def _assert_whitened_law(noise: dp.Noise, value: np.ndarray, released: np.ndarray) -> None:
    """Each whitened coordinate of a one-component noise has the unit law (KS test).

    The covariance test alone cannot tell Gaussian from Laplace noise of equal variance.
    """
    (comp,) = noise.components
    keep = comp.scales > 0
    y = (released - value) @ comp.basis[:, keep] / comp.scales[keep]
    law = stats.norm if comp.kind == "gaussian" else stats.laplace
    alpha = FAMILY_ALPHA / y.shape[1]
    for col in y.T:
        assert stats.kstest(col, law.cdf).pvalue > alpha


@pytest.mark.parametrize(
    ("name", "model", "kind", "rank"),
    [("eigm", "model3x3", "gaussian", 3), ("eigm", "model3", "gaussian", 2),
     ("dirm-g", "model3", "gaussian", 1), ("expm-l", "model3", "laplace", 3),
     ("dirm-l", "model3", "laplace", 1)],
)  # fmt: skip
def test_secure_release_moments(request, name, model, kind, rank):
    mech = _calibrate(name, request.getfixturevalue(model))
    assert {c.kind for c in mech.noise.components} == {kind}
    assert np.linalg.matrix_rank(mech.noise_covariance) == rank
    value = np.array([100.25, 101.5, 5.125])
    rel = mech.release(np.tile(value, (N_DRAWS, 1)))
    assert rel.secure and rel.value.shape == (N_DRAWS, 3)
    _assert_moments(mech.noise, value, rel.value)
    _assert_whitened_law(mech.noise, value, rel.value)


def test_full_rank_correlated_gaussian_with_unequal_scales(rng):
    # A general correlated Σ_Z = AAᵀ: rotated basis, scales over three orders of magnitude.
    basis, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    noise = dp.Noise.along("gaussian", basis, [0.01, 0.3, 2.0, 7.5])
    value = np.array([1e3, -2.5, 0.0, 42.0])
    released = secure_add(noise, np.tile(value, (5_000, 1)))
    _assert_moments(noise, value, released)
    _assert_whitened_law(noise, value, released)


def test_gaussian_plus_laplace_components_are_applied_in_turn(rng):
    # Relaxed mechanisms add isotropic Laplace noise to a Gaussian one (Chen Thm 4.7).
    basis, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    noise = dp.Noise.along("gaussian", basis[:, :2], [1.5, 0.4]).plus(
        dp.Noise.isotropic("laplace", 3, 0.7)
    )
    value = np.array([3.0, -1.0, 10.0])
    # Fewer draws suffice here (the tolerance follows from the sample size).
    _assert_moments(noise, value, secure_add(noise, np.tile(value, (5_000, 1))))


def test_component_outside_the_noise_span_is_released_as_computed(rng):
    basis, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    v = basis[:, :1]
    noise = dp.Noise.along("gaussian", v, [2.0])
    value = np.array([5.0, -3.0, 8.0])
    out = secure_add(noise, np.tile(value, (50, 1)))
    outside = np.eye(3) - v @ v.T
    np.testing.assert_allclose(out @ outside, np.tile(value @ outside, (50, 1)), atol=1e-12)
    # ... while the component along v is noisy.
    assert np.std(out @ v) > 0.5


def test_secure_noise_lies_on_the_grid():
    # Axis-aligned basis and power-of-two scales keep the map back exact in floats, so the
    # released coordinates divided by their scale are integer multiples of 2^GRID_EXPONENT.
    scales = np.array([0.5, 4.0, 2.0**-10])
    noise = dp.Noise.along("gaussian", np.eye(3), scales).plus(
        dp.Noise.isotropic("laplace", 3, 0.0)
    )
    out = secure_add(noise, np.tile([1.3, -7.77, 0.001], (200, 1)))
    grid_units = out / scales * 2.0**-GRID_EXPONENT
    assert np.all(grid_units == np.round(grid_units))
    lap = secure_sample(dp.Noise.isotropic("laplace", 2, 0.25), 200) / 0.25
    assert np.all(lap * 2.0**-GRID_EXPONENT == np.round(lap * 2.0**-GRID_EXPONENT))
    # The numpy simulation is not on the grid (a float sample almost never is).
    sim = noise.sample(200, np.random.default_rng(0)) / scales * 2.0**-GRID_EXPONENT
    assert np.mean(sim == np.round(sim)) < 0.05


def test_grid_accounting_matches_opendp_privacy_maps():
    # Our stated cost of the rounding is OpenDP's own: ρ(Δ) = (Δ + γ√r)²/2, ε(Δ) = Δ + γd.
    r = 5
    g = grid_rounding(dp.Noise.isotropic("gaussian", r, 3.0))
    rho = _opendp_measurement("gaussian", r).map(1.0)
    assert rho - 0.5 == pytest.approx((1.0 + g.l2_sensitivity) ** 2 / 2 - 0.5, rel=1e-3)
    assert g.delta == pytest.approx(g.l2_sensitivity / math.sqrt(2 * math.pi))
    assert g.l1_sensitivity == 0.0
    lap = grid_rounding(dp.Noise.along("laplace", np.eye(4)[:, :3], [1.0, 2.0, 3.0]))
    eps = _opendp_measurement("laplace", 3).map(1.0)
    assert eps - 1.0 == pytest.approx(lap.l1_sensitivity, rel=1e-3)
    assert lap.epsilon == lap.l1_sensitivity == 3 * 2.0**GRID_EXPONENT
    assert set(lap.to_dict()) >= {"grid_exponent", "l2_sensitivity", "delta", "epsilon"}


def test_two_secure_releases_differ_and_say_how_they_were_drawn(model3):
    mech = _calibrate("eigm", model3)
    a = mech.release([100.0, 101.0, 5.0])
    b = mech.release([100.0, 101.0, 5.0])
    assert not np.array_equal(a.value, b.value)
    assert a.secure and b.secure
    assert "OpenDP" in a.sampler and "OS entropy" in a.sampler and "grid 2^-40" in a.sampler
    assert a.sampler == sampler_description(mech.noise, secure=True)
    d = a.to_dict()
    assert d["secure"] is True and d["sampler"] == a.sampler
    assert a.value.shape == (3,) and not a.value.flags.writeable


def test_seeded_releases_are_reproducible_and_not_secure(model3):
    mech = _calibrate("dirm-l", model3)
    a = mech.release([100.0, 101.0, 5.0], rng=11)
    b = mech.release([100.0, 101.0, 5.0], rng=np.random.default_rng(11))
    np.testing.assert_array_equal(a.value, b.value)
    assert not a.secure and a.sampler == NUMPY_SAMPLER and "NOT private" in a.sampler
    assert a.to_dict()["secure"] is False


def test_laplace_sampler_description(model3):
    desc = _calibrate("expm-l", model3).release([1.0, 2.0, 3.0]).sampler
    assert "discrete Laplace" in desc and "Gaussian" not in desc


def test_noiseless_release(model3):
    mech = dataclasses.replace(_calibrate("eigm", model3), noise=dp.Noise.none(3))
    value = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    rel = mech.release(value)
    np.testing.assert_array_equal(rel.value, value)
    assert rel.secure and rel.sampler.startswith("none")
    seeded = mech.release(value, rng=0)
    np.testing.assert_array_equal(seeded.value, value)
    assert not seeded.secure
    assert secure_sample(dp.Noise.none(3), 4).tolist() == [[0.0] * 3] * 4
    zero_scale = dp.Noise.isotropic("laplace", 2, 0.0)
    assert secure_sample(zero_scale, 2).tolist() == [[0.0, 0.0]] * 2


def test_secure_sample_shape_and_empty_batch():
    noise = dp.Noise.isotropic("gaussian", 3, 1.0)
    assert secure_sample(noise, 7).shape == (7, 3)
    assert secure_sample(noise, 0).shape == (0, 3)
    assert dp.secure_sample is secure_sample


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([1.0, np.nan, 3.0], "value must be finite"),
        ([1.0, np.inf, 3.0], "value must be finite"),
        ([1.0, 2.0], "3 statistics in its last axis"),
        (np.zeros((2, 4)), "3 statistics in its last axis"),
        (np.zeros((2, 2, 3)), "value must have 1 or 2 dimension"),
    ],
)
def test_release_rejects_bad_values(model3, value, match):
    mech = _calibrate("eigm", model3)
    with pytest.raises(dp.ParameterError, match=match):
        mech.release(value)
    with pytest.raises(dp.ParameterError, match=match):
        mech.release(value, rng=0)


def test_bad_arguments_give_clear_errors(model3):
    mech = _calibrate("eigm", model3)
    noise = mech.noise
    with pytest.raises(dp.ParameterTypeError, match="value must be an array"):
        mech.release("1,2,3")
    with pytest.raises(dp.ParameterError, match="rng seed must be non-negative"):
        mech.release([1.0, 2.0, 3.0], rng=-1)
    with pytest.raises(dp.ParameterTypeError, match="rng must be None"):
        mech.release([1.0, 2.0, 3.0], rng="secure")
    with pytest.raises(dp.ParameterError, match="size must be >= 0, got -1"):
        secure_sample(noise, -1)
    with pytest.raises(dp.ParameterTypeError, match="size must be an integer"):
        secure_sample(noise, 2.5)
    with pytest.raises(dp.ParameterTypeError, match=r"noise must be a distpriv\.Noise"):
        secure_sample(noise.covariance, 3)
    with pytest.raises(dp.ParameterError, match=r"values must have shape \(batch, 3\)"):
        secure_add(noise, np.zeros((2, 2)))
    with pytest.raises(dp.ParameterError, match="values must have 2 dimension"):
        secure_add(noise, np.zeros(3))
    with pytest.raises(dp.ParameterError, match="values must be finite"):
        secure_add(noise, [[1.0, 2.0, -np.inf]])
    tiny = dp.Noise.isotropic("gaussian", 2, 1e-20)
    with pytest.raises(dp.ParameterError, match="too large for the noise scale"):
        secure_add(tiny, [[1e300, 1.0]])


@given(
    dim=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    log_scale=st.floats(-6, 6),
    offset=st.floats(-1e6, 1e6),
)
def test_noise_stays_in_the_span_of_its_basis(dim, seed, log_scale, offset):
    # Whatever the scale and offset, the released change lies along the noisy directions.
    gen = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(gen.normal(size=(dim + 1, dim + 1)))
    b = basis[:, :dim]
    noise = dp.Noise.along("gaussian", b, 10.0**log_scale * gen.uniform(0.5, 2.0, dim))
    value = offset + gen.normal(size=(3, dim + 1))
    delta = secure_add(noise, value) - value
    resid = delta - (delta @ b) @ b.T
    assert np.max(np.abs(resid)) <= 1e-9 * (1 + abs(offset) + np.max(np.abs(delta)))


def test_data_release_without_rng_is_secure():
    gen = np.random.default_rng(0)

    def table(n):
        # Age depends on the secret column, so the hypotheses differ and noise is needed.
        rich = gen.random(n) < 0.4
        return pd.DataFrame({"age": gen.integers(18, 60, n) + 20 * rich, "rich": rich})

    secret = dp.ProportionSecret("rich", values=[0.3, 0.5])
    kwargs = {"model_data": table(400), "mechanism": "expm-g", "epsilon": 1.0, "delta": 1e-3}
    data = table(20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.AssumptionWarning)
        secure = dp.release(data, {"avg_age": "avg(age)"}, secret, **kwargs)
        seeded = dp.release(data, {"avg_age": "avg(age)"}, secret, rng=3, **kwargs)
    assert secure.release.secure and "OpenDP" in secure.release.sampler
    assert not seeded.release.secure
    assert secure.to_dict()["secure_noise"] is True and seeded.to_dict()["secure_noise"] is False
    assert "NOT private" in seeded.to_dict()["provenance"]["sampler"]
