"""APGM (Zhang, Ohrimenko & Cummings 2022, Alg. 1) and its Gaussian instantiation (§4.2).

Worked example: the §4.2 sensitivities, variances and errors. One implementation against
another: APGM vs EigM, the closed-form conditional law vs conditioning through the
precision matrix, the population moments of the hospital generator vs a large sample.
Privacy: the exact privacy profile of the output for every secret pair and every θ.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from distpriv import (
    MECHANISMS,
    AssumptionWarning,
    GaussianQueryModel,
    MechanismNotApplicableError,
    ParameterError,
    ParameterTypeError,
    calibrate,
    gaussian_constant,
    mechanism_info,
)
from distpriv.central import (
    AttributeNetworkModel,
    ColumnQuery,
    apgm_accuracy,
    apgm_noise_variance,
    attribute_query_model,
    gaussian_attribute_bounds,
    gaussian_attribute_model,
    gaussian_conditional,
    theta_grid,
)
from distpriv.datasets import school_network
from distpriv.datasets.hospital import (
    HOSPITAL_COLUMNS,
    PAPER_GENERATOR,
    HospitalParameters,
    generate_hospital,
    hospital_moments,
    hospital_theta,
)

# §4.2: (Δ, Var(F | s), published average absolute error)
PAPER_42 = {"weight": (6.125, 4.5, 18.90), "bp": (2.5, 2.0, 7.40), "temp": (0.075, 0.08, 0.0)}
SECRETS = (0.375, 0.625)  # |a − b| = 0.25 (see distpriv.experiments.zhang2022)


def paper_model(stat: str) -> GaussianQueryModel:
    sens, var, _ = PAPER_42[stat]
    return attribute_query_model([[0.0, sens]], var, secret_values=["below", "above"])


def classical(model, eps=1.0, delta=1e-3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        return calibrate("apgm", model, epsilon=eps, delta=delta, calibration="classical")


def exact_delta(epsilon: float, diff: float, var: float) -> float:
    """δ(ε) of N(0, var) vs N(diff, var), straight from Balle & Wang's formula."""
    if diff == 0.0:
        return 0.0
    if var <= 0.0:
        return 1.0
    d = abs(diff) / math.sqrt(var)
    return float(norm.cdf(d / 2 - epsilon / d) - math.exp(epsilon) * norm.cdf(-d / 2 - epsilon / d))


def assert_every_pair_and_theta(mech, model, epsilon, delta):
    """Each pair (same θ) compared under each of its two hypotheses' covariances."""
    sig2 = float(mech.noise_covariance[0, 0])
    for (i, j), diff in zip(model.pairs, model.mean_differences, strict=True):
        for t in (i, j):
            got = exact_delta(epsilon, float(diff[0]), float(model.covariances[t][0, 0]) + sig2)
            assert got <= delta, (model.labels[i], model.labels[j], got, delta)


class TestPaperSection42:
    """The numbers of §4.2 with the paper's sensitivities and variances (classical)."""

    c = gaussian_constant(1e-3)

    @pytest.mark.parametrize("stat", ["weight", "bp", "temp"])
    def test_noise_variance_is_alg1(self, stat):
        sens, var, _ = PAPER_42[stat]
        mech = classical(paper_model(stat))
        want = (self.c * sens / 1.0) ** 2 - var
        assert mech.noise_covariance[0, 0] == pytest.approx(want, rel=1e-9)
        assert mech.diagnostics["noise_variance"] == pytest.approx(want, rel=1e-9)
        assert apgm_noise_variance(
            sens, var, epsilon=1.0, delta=1e-3, calibration="classical"
        ) == pytest.approx(want, rel=1e-12)

    def test_average_absolute_errors(self):
        errs = {
            s: math.sqrt(classical(paper_model(s)).mse()) * math.sqrt(2 / math.pi) for s in PAPER_42
        }
        assert errs["weight"] == pytest.approx(18.9, abs=0.6)  # 18.38; paper 18.90 (100 runs)
        assert errs["bp"] == pytest.approx(7.4, abs=0.1)  # 7.45; paper 7.40
        sd_temp = math.sqrt(classical(paper_model("temp")).mse())
        assert 0.0 < sd_temp < 0.02  # (c·0.075)² = 0.0802 just above Var = 0.08
        assert errs["weight"] > errs["bp"] > errs["temp"]

    def test_hundred_runs(self):
        # The paper's metric, seeded; |Z| has sd σ√(1 − 2/π), so 100 runs are within 4 se.
        rng = np.random.default_rng(7)
        for stat in ("weight", "bp"):
            mech = classical(paper_model(stat))
            sd = math.sqrt(mech.mse())
            runs = np.abs(mech.release(np.zeros((100, 1)), rng=rng).value[:, 0])
            se = sd * math.sqrt(1 - 2 / math.pi) / 10
            assert abs(runs.mean() - sd * math.sqrt(2 / math.pi)) < 4 * se

    def test_analytic_temperature_needs_no_noise(self):
        mech = calibrate("apgm", paper_model("temp"), epsilon=1.0, delta=1e-3)
        assert mech.noise.is_zero and mech.guarantee.holds is True

    def test_closed_forms_over_theta_reproduce_the_sensitivities(self):
        mu, cov = hospital_moments(hospital_theta())
        got = {
            name: gaussian_attribute_bounds(
                mu, cov, sensitive=0, queried=HOSPITAL_COLUMNS.index(col), n=50, diameter=0.25
            )
            for name, col in (
                ("weight", "weight"),
                ("bp", "blood_pressure"),
                ("temp", "temperature"),
            )
        }
        for name, b in got.items():
            assert b.sensitivity == pytest.approx(PAPER_42[name][0], rel=1e-12)
        assert got["bp"].min_variance == pytest.approx(2.0, rel=1e-12)
        assert got["temp"].min_variance == pytest.approx(0.08, rel=1e-12)
        # The paper's 4.5 = 15²/50 leaves out k₁² Var(height | gender); the closed form keeps it.
        assert got["weight"].min_variance == pytest.approx((9 * (0.75 * 9 + 0.25 * 64) + 225) / 50)

    def test_generated_data_show_the_same_ordering(self):
        data = generate_hospital(50, rng=3)
        x = data[list(HOSPITAL_COLUMNS)].to_numpy()
        mu, cov = x.mean(axis=0), np.cov(x, rowvar=False)
        sds = []
        for col in ("weight", "blood_pressure", "temperature"):
            model = gaussian_attribute_model(
                mu,
                cov,
                sensitive=0,
                queried=HOSPITAL_COLUMNS.index(col),
                n=50,
                secret_values=SECRETS,
            )
            sds.append(math.sqrt(classical(model).mse()))
        assert sds[0] > sds[1] > sds[2]


class TestAgainstEigm:
    @settings(max_examples=40)
    @given(
        seed=st.integers(0, 2**32 - 1),
        eps=st.floats(0.05, 8.0),
        cal=st.sampled_from(["analytic", "classical"]),
    )
    def test_one_dimensional_apgm_is_eigm(self, seed, eps, cal):
        rng = np.random.default_rng(seed)
        k, s = int(rng.integers(1, 4)), int(rng.integers(2, 4))
        model = attribute_query_model(
            rng.normal(size=(k, s)) * rng.choice([0.1, 1.0, 10.0]),
            rng.uniform(0.0, 3.0, size=k),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AssumptionWarning)
            a = calibrate("apgm", model, epsilon=eps, delta=1e-4, calibration=cal)
            e = calibrate("eigm", model, epsilon=eps, delta=1e-4, calibration=cal)
        np.testing.assert_array_equal(a.noise_covariance, e.noise_covariance)
        # Alg. 1's closed form: σ² = max(0, (Δ/D*)² − min Var) (D* with the 1e-12 margin).
        sens = float(np.abs(model.mean_differences).max())
        want = apgm_noise_variance(
            sens, float(model.covariances.min()), epsilon=eps, delta=1e-4, calibration=cal
        )
        assert a.noise_covariance[0, 0] == pytest.approx(want, rel=1e-9, abs=1e-12 * sens**2)

    def test_vector_query_is_eigm(self):
        mu = [[[0.0, 0.0], [1.0, 0.5]]]
        cov = [[2.0, 0.3], [0.3, 1.0]]
        model = attribute_query_model(mu, cov)
        a = calibrate("apgm", model, epsilon=0.5, delta=1e-3)
        e = calibrate("eigm", model, epsilon=0.5, delta=1e-3)
        np.testing.assert_allclose(a.noise_covariance, e.noise_covariance, rtol=0, atol=0)
        assert any("vector query" in n for n in a.guarantee.notes)


class TestPrivacyProfile:
    """δ(ε) of the output N(E[F | s, θ], Var(F | s, θ) + σ²) for every pair and θ."""

    @pytest.mark.parametrize(
        ("cal", "eps"),
        [("analytic", 0.3), ("analytic", 1.0), ("analytic", 4.0), ("classical", 0.5)],
    )
    @pytest.mark.parametrize("col", ["weight", "blood_pressure", "temperature"])
    def test_hospital_theta(self, cal, eps, col):
        mu, cov = hospital_moments(hospital_theta())
        model = gaussian_attribute_model(
            mu,
            cov,
            sensitive=0,
            queried=HOSPITAL_COLUMNS.index(col),
            n=50,
            secret_values=[0.25, 0.375, 0.625, 0.75],
        )
        assert len(model.pairs) == 6 * len(hospital_theta())
        mech = calibrate("apgm", model, epsilon=eps, delta=1e-3, calibration=cal)
        assert_every_pair_and_theta(mech, model, eps, 1e-3)

    @settings(max_examples=60)
    @given(
        seed=st.integers(0, 2**32 - 1),
        eps=st.floats(0.02, 10.0),
        logdelta=st.floats(math.log(1e-9), math.log(0.2)),
    )
    def test_random_attribute_models(self, seed, eps, logdelta):
        delta = math.exp(logdelta)
        rng = np.random.default_rng(seed)
        k, s = int(rng.integers(1, 5)), int(rng.integers(2, 5))
        scale = rng.choice([0.01, 1.0, 50.0])
        model = attribute_query_model(
            rng.normal(size=(k, s)) * scale, rng.uniform(0.0, 2.0, size=k) * scale**2
        )
        mech = calibrate("apgm", model, epsilon=eps, delta=delta)
        assert_every_pair_and_theta(mech, model, eps, delta)
        if eps < 1:
            mech = calibrate("apgm", model, epsilon=eps, delta=delta, calibration="classical")
            assert_every_pair_and_theta(mech, model, eps, delta)


class TestClosedForms:
    def test_conditional_against_precision_matrix(self, rng):
        # Conditioning a Gaussian through its precision Λ: Cov(F | g) = Λ_FF⁻¹ and
        # E[F | g = a] = μ_F − Λ_FF⁻¹ Λ_Fg (a − μ_g), for (g, F) ~ N(μ, V/n).
        p, n = 5, 40
        a_mat = rng.normal(size=(p, p))
        v = a_mat @ a_mat.T + 0.5 * np.eye(p)
        mu = rng.normal(size=p)
        i, js = 2, [0, 3, 4]
        values = np.array([-1.0, 0.3, 2.0])
        cm, cc = gaussian_conditional(mu, v, sensitive=i, queried=js, values=values, n=n)
        order = [i, *js]
        lam = np.linalg.inv(v[np.ix_(order, order)] / n)
        cov_f = np.linalg.inv(lam[1:, 1:])
        np.testing.assert_allclose(cc[0], cov_f, rtol=1e-10)
        for s, a in enumerate(values):
            want = mu[js] - cov_f @ lam[1:, 0] * (a - mu[i])
            np.testing.assert_allclose(cm[0, s], want, rtol=1e-10, atol=1e-12)

    def test_paper_formulas(self):
        v = np.array([[0.24, -4.32], [-4.32, 419.4]])
        cm, cc = gaussian_conditional([0.6, 151.2], v, sensitive=0, queried=1, values=SECRETS, n=50)
        slope = -4.32 / 0.24
        np.testing.assert_allclose(cm[0, :, 0], 151.2 + slope * (np.array(SECRETS) - 0.6))
        assert cc[0, 0, 0] == pytest.approx((419.4 - 4.32**2 / 0.24) / 50)
        b = gaussian_attribute_bounds([0.6, 151.2], v, sensitive=0, queried=1, n=50, diameter=0.25)
        assert b.sensitivity == pytest.approx(abs(slope) * 0.25)
        model = gaussian_attribute_model(
            [0.6, 151.2], v, sensitive=0, queried=1, n=50, secret_values=SECRETS
        )
        assert float(np.abs(model.mean_differences).max()) == pytest.approx(b.sensitivity)

    def test_hospital_moments_against_a_large_sample(self):
        n = 200_000
        x = generate_hospital(n, rng=11)[list(HOSPITAL_COLUMNS)].to_numpy()
        mu, cov = PAPER_GENERATOR.moments()
        sd = np.sqrt(np.diag(cov))
        # Sample means: 5 standard errors.
        assert np.all(np.abs(x.mean(axis=0) - mu) < 5 * sd / math.sqrt(n))
        # Sample covariances: the se of a covariance is at most ~2 sd_i sd_j / √n here.
        assert np.all(np.abs(np.cov(x, rowvar=False) - cov) < 10 * np.outer(sd, sd) / math.sqrt(n))

    def test_generator_is_seeded(self):
        a = generate_hospital(50, rng=5)
        b = generate_hospital(50, rng=5)
        assert a.equals(b) and not a.equals(generate_hospital(50, rng=6))
        assert set(a.gender) <= {"female", "other"} and (a.female == (a.gender == "female")).all()

    def test_theta_grid(self):
        grid = theta_grid({"k1": (3.0, 3.5), "p": [0.25, 0.5, 0.75], "sd": 15.0}, points=3)
        assert len(grid) == 9 and grid[0] == {"k1": 3.0, "p": 0.25, "sd": 15.0}
        assert {g["k1"] for g in grid} == {3.0, 3.25, 3.5}
        assert len(hospital_theta()) == 2**7 and len(hospital_theta(points=3)) == 3**7


class TestModelAndGuarantee:
    def test_hypotheses_and_pairs_within_theta(self):
        model = attribute_query_model(
            np.zeros((2, 3)), [1.0, 2.0], secret_values=[0.1, 0.2, 0.3], theta_labels=["A", "B"]
        )
        assert model.labels == ("A: 0.1", "A: 0.2", "A: 0.3", "B: 0.1", "B: 0.2", "B: 0.3")
        assert model.pairs == ((0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (4, 5))
        np.testing.assert_allclose(model.covariances[:, 0, 0], [1, 1, 1, 2, 2, 2])
        m2 = attribute_query_model(
            np.zeros((1, 3)), 1.0, secret_values=[0.1, 0.2, 0.3], secret_pairs=[(0.1, 0.3)]
        )
        assert m2.pair_labels == (("0.1", "0.3"),)

    def test_guarantee(self):
        mech = calibrate(
            "apgm", paper_model("weight"), epsilon=0.5, delta=1e-3, calibration="analytic"
        )
        g = mech.guarantee
        assert g.notion == "dataset attribute privacy" and g.mechanism == "apgm"
        assert g.theorem == "Zhang, Ohrimenko & Cummings 2022, Alg. 1 / Thm 1"
        assert {a.name for a in g.assumptions} == {"gaussian", "equal-covariance", "exact-profile"}
        assert g.holds is True and g.calibration == "analytic" and g.fallback is None
        sd = math.sqrt(mech.mse())
        assert mech.diagnostics["accuracy_alpha"] == pytest.approx(sd * norm.ppf(0.975))
        assert apgm_accuracy(mech, 0.01) == pytest.approx(sd * norm.ppf(0.995))
        assert mech.diagnostics["sensitivity"] == 6.125
        assert mech.diagnostics["min_conditional_variance"] == 4.5

    def test_classical_above_one_warns(self):
        with pytest.warns(AssumptionWarning, match="apgm: assumption 'classical-epsilon'"):
            mech = calibrate(
                "apgm", paper_model("bp"), epsilon=1.0, delta=1e-3, calibration="classical"
            )
        assert mech.guarantee.holds is False

    def test_unequal_variances_within_a_pair_get_the_fallback(self):
        model = attribute_query_model([[0.0, 1.0]], [[1.0, 1.5]])
        with pytest.warns(AssumptionWarning, match="equal-covariance"):
            mech = calibrate("apgm", model, epsilon=1.0, delta=1e-3, calibration="analytic")
        assert mech.guarantee.fallback is not None
        assert mech.guarantee.fallback.epsilon > 1.0

    def test_release(self):
        mech = classical(paper_model("weight"))
        rel = mech.release([161.33], rng=0)
        assert rel.value.shape == (1,) and rel.guarantee is mech.guarantee
        assert rel.value[0] != 161.33

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"means": [[0.0]], "covariances": 1.0}, "at least two secret"),
            ({"means": [[0.0, 1.0]], "covariances": 1.0, "secret_values": [1]}, "2 entries"),
            ({"means": [[0.0, 1.0]], "covariances": 1.0, "secret_values": [1, 1]}, "distinct"),
            ({"means": [[0.0, 1.0]], "covariances": 1.0, "secret_pairs": [(0, 5)]}, "not a secret"),
            ({"means": [[0.0, 1.0]], "covariances": 1.0, "secret_pairs": [(1, 1)]}, "itself"),
            ({"means": [[0.0, 1.0]], "covariances": [1.0, 2.0]}, "length 1"),
            ({"means": [[0.0, 1.0]], "covariances": -1.0}, "positive semi-definite"),
            ({"means": [[0.0, np.nan]], "covariances": 1.0}, "finite"),
            ({"means": np.zeros((1, 2, 2)), "covariances": np.eye(3)}, "shape"),
        ],
    )
    def test_bad_model_input(self, kwargs, match):
        with pytest.raises(ParameterError, match=match):
            attribute_query_model(**kwargs)

    def test_bad_closed_form_input(self):
        v = np.eye(3)
        with pytest.raises(ParameterError, match="sensitive must be a column index"):
            gaussian_conditional(np.zeros(3), v, sensitive=3, queried=0, values=[0.0], n=5)
        with pytest.raises(ParameterError, match="queried must hold column indices"):
            gaussian_conditional(np.zeros(3), v, sensitive=0, queried=[1, 7], values=[0.0], n=5)
        with pytest.raises(ParameterTypeError, match="queried"):
            gaussian_conditional(np.zeros(3), v, sensitive=0, queried=[1.5], values=[0.0], n=5)
        with pytest.raises(ParameterError, match="positive variance"):
            gaussian_conditional(
                np.zeros(3), np.diag([0.0, 1, 1]), sensitive=0, queried=1, values=[0.0], n=5
            )
        with pytest.raises(ParameterError, match="n must be >= 1"):
            gaussian_conditional(np.zeros(3), v, sensitive=0, queried=1, values=[0.0], n=0)
        with pytest.raises(ParameterError, match="disagree"):
            gaussian_conditional(
                np.zeros((2, 3)), np.stack([v] * 3), sensitive=0, queried=1, values=[0.0], n=5
            )
        with pytest.raises(ParameterError, match="diameter"):
            gaussian_attribute_bounds(np.zeros(3), v, sensitive=0, queried=1, n=5, diameter=-1)
        with pytest.raises(ParameterError, match="low <= high"):
            theta_grid({"a": (2.0, 1.0)})
        with pytest.raises(ParameterError, match="unknown parameter"):
            hospital_theta({"height": (1.0, 2.0)})
        with pytest.raises(ParameterError, match="p_female"):
            HospitalParameters(p_female=1.5)
        with pytest.raises(ParameterTypeError, match="params"):
            generate_hospital(10, params={"p_female": 0.5})


class TestRegistry:
    def test_registered(self):
        assert "apgm" in MECHANISMS and "apmqm" in MECHANISMS
        spec = mechanism_info("apgm")
        assert spec.gaussian and spec.uses_model_covariance and spec.options == ("calibration",)
        assert not mechanism_info("apmqm").gaussian

    def test_model_types(self, paper_model):
        net_model = AttributeNetworkModel(
            school_network(), "income", ColumnQuery.count("height", n=10)
        )
        with pytest.raises(MechanismNotApplicableError, match="AttributeNetworkModel"):
            calibrate("apmqm", paper_model, epsilon=1.0)
        with pytest.raises(MechanismNotApplicableError, match="GaussianQueryModel"):
            calibrate("eigm", net_model, epsilon=1.0, delta=1e-3)
        with pytest.raises(ParameterTypeError, match="model must be"):
            calibrate("apgm", {"means": [0.0]}, epsilon=1.0, delta=1e-3)
        with pytest.raises(ParameterError, match="needs delta > 0"):
            calibrate("apgm", paper_model, epsilon=1.0)
        with pytest.raises(ParameterError, match="unknown option"):
            calibrate("apmqm", net_model, epsilon=1.0, calibration="analytic")
