"""Per-mechanism tests: the paper's worked example, closed forms, structure, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from distpriv import (
    MECHANISMS,
    AssumptionWarning,
    GaussianQueryModel,
    MechanismNotApplicableError,
    ParameterError,
    ParameterTypeError,
    SampledQueryModel,
    calibrate,
    gaussian_constant,
    max_mahalanobis_distance,
    winf_distance,
)
from distpriv.central import daum_variance

V1 = np.array([1.0, 2.0]) / math.sqrt(5)
V2 = np.array([2.0, -1.0]) / math.sqrt(5)


class TestPaperExample:
    """Chen & Ohrimenko 2023, example after Thm 4.5 (ε = 1, δ = 1e-3, classical)."""

    def test_eigm_variances(self, paper_model):
        with pytest.warns(AssumptionWarning, match="classical-epsilon"):
            mech = calibrate("eigm", paper_model, epsilon=1.0, delta=1e-3, calibration="classical")
        cov = mech.noise_covariance
        assert V1 @ cov @ V1 == pytest.approx(18.52, abs=0.005)
        assert V2 @ cov @ V2 == pytest.approx(3.52, abs=0.005)
        assert V1 @ cov @ V2 == pytest.approx(0.0, abs=1e-9)
        # (cΔ_E,2/ε)² = 28.52 and the eigenvalues 10 and 25 of Σ
        assert mech.diagnostics["target_variance"] == pytest.approx(28.52, abs=0.005)
        np.testing.assert_allclose(sorted(mech.diagnostics["model_eigenvalues"][0]), [10, 25])

    def test_without_adversarial_uncertainty(self, paper_model):
        with pytest.warns(AssumptionWarning):
            mech = calibrate(
                "expm-g", paper_model, epsilon=1.0, delta=1e-3, calibration="classical"
            )
        np.testing.assert_allclose(mech.noise_covariance, 28.52 * np.eye(2), atol=0.005)
        assert (2 * gaussian_constant(1e-3) ** 2) == pytest.approx(28.52, abs=0.005)

    def test_guarantee_records_assumptions(self, paper_model):
        mech = calibrate("eigm", paper_model, epsilon=0.5, delta=1e-3, calibration="analytic")
        g = mech.guarantee
        assert g.holds is True and g.calibration == "analytic"
        assert {a.name for a in g.assumptions} == {
            "gaussian",
            "equal-covariance",
            "shared-eigenvectors",
            "exact-profile",  # the headline, checked under the exact profile
        }
        assert "Thm 4.5" in g.theorem
        d = mech.to_dict()
        assert d["guarantee"]["pairs"] == [["theta1", "theta2"]]
        import json

        json.dumps(d, allow_nan=False)


class TestDauM:
    def test_closed_form_agrees_with_bisection(self, rng):
        # Alg. 1 line 7: the smallest σ² with Σ + (σ² − (α/D)²) vvᵀ ≻ 0, found by bisection
        # on the positive-definiteness condition, equals the Sherman–Morrison closed form.
        for _ in range(25):
            m = int(rng.integers(1, 6))
            a = rng.normal(size=(m, m))
            cov = a @ a.T + 0.1 * np.eye(m)
            v = rng.normal(size=m)
            v /= np.linalg.norm(v)
            alpha = float(rng.uniform(0.5, 20.0))
            dist = float(rng.uniform(0.05, 2.0))
            closed = daum_variance(cov, alpha * v, v, dist)

            def pd(s2, cov=cov, v=v, alpha=alpha, dist=dist):
                return np.linalg.eigvalsh(cov + (s2 - (alpha / dist) ** 2) * np.outer(v, v))[0] > 0

            lo, hi = 0.0, (alpha / dist) ** 2
            if pd(lo):
                bisect = 0.0
            else:
                for _ in range(200):
                    mid = (lo + hi) / 2
                    lo, hi = (lo, mid) if pd(mid) else (mid, hi)
                bisect = hi
            assert closed == pytest.approx(bisect, rel=1e-8, abs=1e-10)

    def test_less_noise_than_directional_expm(self, paper_model):
        mech = calibrate("daum", paper_model, epsilon=0.2, delta=1e-3, calibration="analytic")
        dirm = calibrate("dirm-g", paper_model, epsilon=0.2, delta=1e-3, calibration="analytic")
        assert 0 < mech.mse() < dirm.mse()
        noise_dir = np.linalg.eigh(mech.noise_covariance)[1][:, -1]
        d = paper_model.mean_differences[0]
        assert abs(noise_dir @ d) / np.linalg.norm(d) == pytest.approx(1.0)

    def test_non_parallel_pairs_noted_and_still_private(self):
        model = GaussianQueryModel([[0.0, 0.0], [1.0, 0.0], [1.0, 0.3]], np.eye(2))
        mech = calibrate("daum", model, epsilon=1.0, delta=1e-3, calibration="analytic")
        assert any("not all parallel" in n for n in mech.guarantee.notes)
        assert np.all(
            mech.diagnostics["pair_distances"] <= max_mahalanobis_distance(epsilon=1.0, delta=1e-3)
        )

    def test_impossible_direction(self):
        model = GaussianQueryModel([[0.0, 0.0], [0.0, 5.0]], np.eye(2) * 0.01)
        with pytest.raises(MechanismNotApplicableError, match="cannot hide pair"):
            calibrate("daum", model, epsilon=1.0, delta=1e-3, direction=[1.0, 0.0])

    def test_singular_covariance_refused(self):
        # stat1 has zero variance under both hypotheses and different means: named.
        model = GaussianQueryModel([[0.0, 0.0], [1.0, 1.0]], [[1.0, 0.0], [0.0, 0.0]])
        with pytest.raises(
            MechanismNotApplicableError, match="stat1 has zero variance under every hypothesis"
        ):
            calibrate("daum", model, epsilon=1.0, delta=1e-3)
        # Singular under one hypothesis only (not a constant direction): still refused.
        one = GaussianQueryModel([[0.0, 0.0], [1.0, 1.0]], [[[1.0, 0.0], [0.0, 0.0]], np.eye(2)])
        with pytest.raises(MechanismNotApplicableError, match="singular"):
            calibrate("daum", one, epsilon=1.0, delta=1e-3, calibration="analytic")
        # EigM handles it (the noise fills the null space).
        mech = calibrate("eigm", model, epsilon=1.0, delta=1e-3)
        assert np.linalg.eigvalsh(mech.noise_covariance)[0] > 0


class TestStructure:
    def test_dirm_noise_only_along_difference(self, paper_model):
        mech = calibrate("dirm-l", paper_model, epsilon=1.0)
        basis = mech.laplace_basis
        assert basis.shape == (2, 1)
        d = paper_model.mean_differences[0]
        assert abs(basis[:, 0] @ d) == pytest.approx(np.linalg.norm(d))
        assert mech.laplace_scales[0] == pytest.approx(np.linalg.norm(d) / 1.0)

    def test_dirm_non_parallel_uses_span(self):
        model = GaussianQueryModel([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.eye(3))
        mech = calibrate("dirm-l", model, epsilon=2.0)
        assert mech.diagnostics["rank"] == 2
        # L1 sensitivity of the projected differences: the (1,0,0)–(0,1,0) pair, √2 in any
        # orthonormal basis of the xy-plane at most; at least ‖·‖₂ = √2.
        assert mech.laplace_scales[0] >= math.sqrt(2) / 2.0
        cov = mech.noise_covariance
        assert cov[2, 2] == pytest.approx(0.0, abs=1e-12)

    def test_expm_scales(self, paper_model):
        lap = calibrate("expm-l", paper_model, epsilon=0.5)
        np.testing.assert_allclose(lap.laplace_scales, [4.0, 4.0])  # ‖(1,−1)‖₁/ε
        assert lap.guarantee.delta == 0.0
        gau = calibrate("expm-g", paper_model, epsilon=0.5, delta=1e-5, calibration="analytic")
        sigma = math.sqrt(2) / max_mahalanobis_distance(epsilon=0.5, delta=1e-5)
        np.testing.assert_allclose(np.diag(gau.noise_covariance), sigma**2, rtol=1e-9)
        assert gau.expected_l2_error() == pytest.approx(sigma * math.sqrt(math.pi / 2))

    def test_pure_mechanism_given_delta_reports_zero(self, paper_model):
        mech = calibrate("expm-l", paper_model, epsilon=1.0, delta=1e-3)
        assert mech.guarantee.delta == 0.0
        assert any("delta = 0" in n for n in mech.guarantee.notes)

    def test_noiseless(self, paper_model):
        # Mahalanobis distance √(23/250) ≈ 0.303: hidden at ε = 1 (D* = 0.388), not at 0.5.
        mech = calibrate("noiseless", paper_model, epsilon=1.0, delta=1e-3)
        assert mech.noise.is_zero and mech.expected_l2_error() == 0.0
        out = mech.release([100.0, 101.0], rng=0)
        np.testing.assert_array_equal(out.value, [100.0, 101.0])
        with pytest.raises(MechanismNotApplicableError, match=r"0\.3033 > D\*"):
            calibrate("noiseless", paper_model, epsilon=0.5, delta=1e-3, calibration="analytic")

    def test_groupdp(self, paper_model):
        sens = [0.5, 1.0]
        lap = calibrate("groupdp-l", paper_model, epsilon=2.0, group_size=10, sensitivities=sens)
        np.testing.assert_allclose(lap.laplace_scales, 10 * 1.5 / 2.0)
        gau = calibrate(
            "groupdp-g", paper_model, epsilon=2.0, delta=1e-3, group_size=10, sensitivities=sens
        )
        sigma = 10 * math.hypot(0.5, 1.0) / max_mahalanobis_distance(epsilon=2.0, delta=1e-3)
        np.testing.assert_allclose(np.diag(gau.noise_covariance), sigma**2, rtol=1e-9)
        assert gau.guarantee.notion == "group differential privacy"
        assert gau.guarantee.holds is None  # the group coupling cannot be checked
        with pytest.raises(ParameterError, match="group_size"):
            calibrate("groupdp-l", paper_model, epsilon=1.0, sensitivities=sens)
        with pytest.raises(ParameterError, match="sensitivities"):
            calibrate("groupdp-l", paper_model, epsilon=1.0, group_size=3, sensitivities=[1.0])
        with pytest.raises(ParameterError, match="group_size must be >= 1"):
            calibrate("groupdp-l", paper_model, epsilon=1.0, group_size=0, sensitivities=sens)


class TestWasserstein:
    def test_gaussian_equal_covariance_is_l1_of_difference(self, paper_model):
        mech = calibrate("wasserstein", paper_model, epsilon=0.5)
        np.testing.assert_allclose(mech.laplace_scales, 2.0 / 0.5)

    def test_unequal_covariances_refused(self):
        model = GaussianQueryModel([[0.0], [1.0]], [[[1.0]], [[2.0]]])
        with pytest.raises(MechanismNotApplicableError, match="approx-wasserstein"):
            calibrate("wasserstein", model, epsilon=1.0)
        mech = calibrate("approx-wasserstein", model, epsilon=1.0, delta=1e-3)
        assert math.isfinite(mech.laplace_scales[0])

    def test_sampled_model_uses_exact_winf(self, rng):
        a = rng.normal(size=(200, 2))
        b = rng.normal(size=(200, 2)) + 0.5
        model = SampledQueryModel([a, b])
        mech = calibrate("wasserstein", model, epsilon=1.0)
        assert mech.laplace_scales[0] == pytest.approx(winf_distance(a, b))
        approx = calibrate("approx-wasserstein", model, epsilon=1.0, delta=0.1)
        bound = calibrate("approx-wasserstein", model, epsilon=1.0, delta=0.1, method="bound")
        assert approx.laplace_scales[0] <= mech.laplace_scales[0]
        assert approx.laplace_scales[0] <= bound.laplace_scales[0]

    def test_gaussian_tail_bound_is_valid(self, rng):
        # Thm 3.3 radius: P(‖X − EX‖₁ > c) ≤ δ/2, checked by simulation.
        from distpriv.central.wasserstein import gaussian_l1_tail

        a = rng.normal(size=(3, 3))
        cov = a @ a.T + np.eye(3)
        c = gaussian_l1_tail(cov, 0.01)
        x = rng.multivariate_normal(np.zeros(3), cov, size=200_000)
        frac = np.mean(np.abs(x).sum(axis=1) > c)
        assert frac <= 0.01

    def test_approx_needs_delta_for_gaussian(self, paper_model):
        with pytest.raises(MechanismNotApplicableError, match="delta > 0"):
            calibrate("approx-wasserstein", paper_model, epsilon=1.0)


class TestAssumptions:
    def test_unequal_covariances_warn_and_are_recorded(self):
        model = GaussianQueryModel([[0.0, 0.0], [1.0, 1.0]], np.stack([np.eye(2), 1.2 * np.eye(2)]))
        with pytest.warns(AssumptionWarning, match="equal-covariance"):
            mech = calibrate("eigm", model, epsilon=1.0, delta=1e-3, calibration="analytic")
        assert mech.guarantee.holds is False
        assert [a.name for a in mech.guarantee.failed] == ["equal-covariance"]
        assert any("Thm 4.6" in n for n in mech.guarantee.notes)

    def test_sampled_model_gaussian_fit_is_unverified(self, rng):
        model = SampledQueryModel([rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mech = calibrate("eigm", model, epsilon=1.0, delta=1e-3)
        # Exact calibration: the Gaussian fit is the premise the guarantee rests on.
        gauss = next(a for a in mech.guarantee.premises if a.name == "gaussian")
        assert gauss.holds is None and "approximation" in gauss.detail
        assert mech.guarantee.holds is True and mech.guarantee.calibration == "exact"

    def test_classical_warns_at_epsilon_one_and_above_only(self, paper_model):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            calibrate("expm-g", paper_model, epsilon=0.99, delta=1e-3, calibration="classical")
        with pytest.warns(AssumptionWarning, match="ABOVE"):
            # At ε = 10 the classical noise really is too small (docs/architecture.md §4).
            calibrate("expm-g", paper_model, epsilon=10.0, delta=1e-3, calibration="classical")


class TestRelease:
    def test_batch_noise_covariance(self, paper_model):
        mech = calibrate("eigm", paper_model, epsilon=0.5, delta=1e-3, calibration="analytic")
        n = 200_000
        out = mech.release(np.tile([100.0, 101.0], (n, 1)), rng=7)
        z = out.value - [100.0, 101.0]
        cov = mech.noise_covariance
        emp = np.cov(z, rowvar=False)
        # se of a sample covariance entry for Gaussian data: √((σᵢᵢσⱼⱼ + σᵢⱼ²)/n)
        se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
        assert np.all(np.abs(emp - cov) < 5 * se)
        assert np.all(np.abs(z.mean(axis=0)) < 5 * np.sqrt(np.diag(cov) / n))

    def test_laplace_scale_statistical(self, paper_model):
        mech = calibrate("dirm-l", paper_model, epsilon=0.5)
        n = 200_000
        z = mech.release(np.zeros((n, 2)), rng=3).value
        y = z @ mech.laplace_basis[:, 0]
        b = mech.laplace_scales[0]
        # |Y| ~ Exp(b): mean b, sd b.
        assert abs(np.mean(np.abs(y)) - b) < 5 * b / math.sqrt(n)

    def test_release_reproducible_and_shapes(self, paper_model):
        mech = calibrate("expm-g", paper_model, epsilon=1.0, delta=1e-3)
        a = mech.release([1.0, 2.0], rng=42)
        b = mech.release([1.0, 2.0], rng=np.random.default_rng(42))
        np.testing.assert_array_equal(a.value, b.value)
        assert a.value.shape == (2,)
        assert a.guarantee is mech.guarantee
        assert a.to_dict()["statistics"] == ["x1", "x2"]

    @pytest.mark.parametrize(
        ("value", "match"),
        [
            ([1.0, 2.0, 3.0], "2 statistics"),
            ([1.0, np.nan], "finite"),
            (np.zeros((2, 2, 2)), "dimension"),
            ("12", "array"),
        ],
    )
    def test_release_bad_value(self, paper_model, value, match):
        mech = calibrate("expm-g", paper_model, epsilon=1.0, delta=1e-3)
        with pytest.raises((ParameterError, ParameterTypeError), match=match):
            mech.release(value, rng=0)


class TestCalibrateErrors:
    @pytest.mark.parametrize("name", MECHANISMS)
    def test_every_mechanism_rejects_bad_epsilon(self, paper_model, name):
        for eps in (0.0, -1.0, float("nan"), float("inf")):
            with pytest.raises(ParameterError, match="epsilon"):
                calibrate(name, paper_model, epsilon=eps, delta=1e-3)

    @pytest.mark.parametrize("name", MECHANISMS)
    def test_every_mechanism_rejects_bad_delta(self, paper_model, name):
        for dlt in (1.0, -0.1, float("nan")):
            with pytest.raises(ParameterError, match="delta"):
                calibrate(name, paper_model, epsilon=1.0, delta=dlt)

    def test_gaussian_needs_positive_delta(self, paper_model):
        with pytest.raises(ParameterError, match="needs delta > 0"):
            calibrate("eigm", paper_model, epsilon=1.0)

    def test_unknown_mechanism_option_model(self, paper_model):
        with pytest.raises(ParameterError, match="mechanism must be one of"):
            calibrate("laplace", paper_model, epsilon=1.0)
        with pytest.raises(ParameterError, match=r"unknown option.*'sigma'"):
            calibrate("eigm", paper_model, epsilon=1.0, delta=1e-3, sigma=2.0)
        with pytest.raises(ParameterError, match="calibration must be one of"):
            calibrate("eigm", paper_model, epsilon=1.0, delta=1e-3, calibration="bogus")
        with pytest.raises(ParameterTypeError, match="model must be"):
            calibrate("eigm", {"means": [1]}, epsilon=1.0, delta=1e-3)
        with pytest.raises(ParameterError, match="method must be one of"):
            calibrate(
                "approx-wasserstein",
                SampledQueryModel([[0.0, 1.0], [1.0, 2.0]]),
                epsilon=1.0,
                delta=0.1,
                method="lp",
            )
        with pytest.raises(ParameterError, match="direction must have shape"):
            calibrate("daum", paper_model, epsilon=1.0, delta=1e-3, direction=[1.0])
        with pytest.raises(ParameterError, match="non-zero"):
            calibrate("daum", paper_model, epsilon=1.0, delta=1e-3, direction=[0.0, 0.0])
