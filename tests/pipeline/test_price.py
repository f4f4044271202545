"""The price per statistic before releasing (issue 25, item 5): pipeline.price and
``distpriv verify``. References: the library's calibration run by hand on hand-sliced
models, R² by regression (not the inverse-covariance formula the module uses)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import distpriv as dp
from distpriv import GaussianQueryModel, calibrate, cli
from distpriv.central import CalibratedMechanism
from distpriv.pipeline.price import price_report
from distpriv.querymodel import MomentUncertainty

EPS, DELTA = 1.0, 1e-3


def _model(rng, m=4, collinear=True, uncertainty=True):
    """Two hypotheses (one stratum each), statistic 1 nearly a copy of statistic 0."""
    a = rng.normal(size=(m + 30, m))
    if collinear:
        a[:, 1] = a[:, 0] + 0.05 * a[:, 1]
    row = a.T @ a / (m + 30)
    rows = np.array([row, row * 1.1])
    unc = MomentUncertainty([800, 800], 100 * np.eye(2), rows, np.full((2, m), 3.0))
    mu0 = rng.normal(size=m)
    d = rng.normal(size=m)
    covs = 100 * rows
    d *= 25.0 / np.sqrt(d @ np.linalg.solve(covs[0], d))
    return GaussianQueryModel(
        [mu0, mu0 + d],
        covs,
        statistics=[f"s{k}" for k in range(m)],
        uncertainty=unc if uncertainty else None,
    )


def quiet(name, model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate(name, model, epsilon=EPS, delta=DELTA, **kw)


def _r2_by_regression(cov, k):
    rest = [j for j in range(cov.shape[0]) if j != k]
    coef = np.linalg.solve(cov[np.ix_(rest, rest)], cov[rest, k])
    return float(cov[k, rest] @ coef / cov[k, k])


def test_price_rows_against_hand_calibrations():
    model = _model(np.random.default_rng(1))
    mech = quiet("expm-g", model)
    rep = price_report(model, mech)
    m = model.dim
    sd = np.sqrt(np.diag(mech.noise_covariance))
    spread = np.sqrt(np.mean([np.diag(c) for c in model.covariances], axis=0))
    plain = quiet("expm-g", model, beta=None)
    pooled = np.mean(model.covariances, axis=0)
    for k, row in enumerate(rep.rows):
        assert row.noise_sd == pytest.approx(sd[k], rel=1e-12)
        assert row.noise_to_spread == pytest.approx(sd[k] / spread[k], rel=1e-12)
        assert row.noise_sd_fitted == pytest.approx(np.sqrt(plain.noise_covariance[k, k]))
        assert row.r_squared == pytest.approx(_r2_by_regression(pooled, k), abs=1e-9)
        # Drop-one: the statistic removed by hand, moments and uncertainty sliced.
        keep = [j for j in range(m) if j != k]
        unc = model.uncertainty
        sub = GaussianQueryModel(
            model.means[:, keep],
            model.covariances[:, keep][:, :, keep],
            uncertainty=MomentUncertainty(
                unc.stratum_sizes,
                unc.weights,
                unc.row_covariances[:, keep][:, :, keep],
                unc.kurtosis[:, keep],
            ),
        )
        others = quiet("expm-g", sub)
        want = 1.0 - np.trace(others.noise_covariance) / np.sum(sd[keep] ** 2)
        assert row.drop_saving == pytest.approx(want, abs=1e-9)
    # The population premise costs something here, and the report says how much.
    assert rep.mse_fitted == pytest.approx(plain.mse())
    assert rep.mse > rep.mse_fitted
    assert any("population premise" in line for line in rep.lines)
    # Statistics 0 and 1 are nearly collinear, the others not.
    flags = [r.collinear for r in rep.rows]
    assert flags[:2] == [True, True] and not any(flags[2:])
    # Dominated statistics are named in plain words, exactly those with noise > spread.
    for r in rep.rows:
        named = any(line.startswith(f"{r.name}: the noise") for line in rep.lines)
        assert named == (r.noise_sd >= r.spread)
    assert "cannot move" in rep.weights


def test_weights_move_optimal_g_noise_and_the_report_says_so():
    from distpriv import max_mahalanobis_distance

    # Σ = I, gap c(1, 1, 0) with each coordinate alone within D* but not both: the noise
    # can go on s0 or s1. With W = I it splits evenly; a weight of 25 on s1 moves it to s0
    # (measured: Var(Z_1) falls 14-fold, from 0.31 to 0.022).
    c = 0.9 * max_mahalanobis_distance(epsilon=EPS, delta=DELTA)
    model = GaussianQueryModel([[0.0, 0.0, 0.0], [c, c, 0.0]], np.eye(3))
    flat = quiet("optimal-g", model)
    heavy = quiet("optimal-g", model, weights=[1.0, 25.0, 1.0])
    assert flat.noise_covariance[0, 0] == pytest.approx(flat.noise_covariance[1, 1], rel=1e-3)
    assert heavy.noise_covariance[1, 1] < 0.2 * flat.noise_covariance[1, 1]
    assert heavy.noise_covariance[0, 0] > flat.noise_covariance[0, 0]
    rep = price_report(model, heavy)
    assert rep.weights.startswith("weights move the noise of optimal-g")
    assert [r.noise_sd for r in rep.rows] == pytest.approx(
        np.sqrt(np.diag(heavy.noise_covariance)).tolist()
    )
    assert rep.notes and "premise costs nothing" in rep.notes[0]


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    """sklearn's breast-cancer table (569 rows): four correlated statistics of a 100-row
    cohort, hiding whether the malignant share is 0.30 or 0.45, mechanism auto."""
    from sklearn.datasets import load_breast_cancer

    folder = tmp_path_factory.mktemp("clinic")
    frame = load_breast_cancer(as_frame=True).frame
    table = frame[["mean radius", "mean texture", "mean perimeter", "mean area"]].copy()
    table.columns = ["radius", "texture", "perimeter", "area"]
    table["malignant"] = 1 - frame["target"]
    table.to_csv(folder / "clinic.csv", index=False)
    config = folder / "clinic.toml"
    config.write_text(
        'title = "Clinic"\n[data]\nmodel = "clinic.csv"\n'
        '[query]\navg_radius = "avg(radius)"\navg_perimeter = "avg(perimeter)"\n'
        'avg_texture = "avg(texture)"\nn_large = "count_if(area > 700)"\n'
        '[secret]\npredicate = "malignant = 1"\nvalues = [0.30, 0.45]\n'
        '[model]\nsubset_size = 100\nmethod = "analytic"\n'
        '[mechanism]\nname = "auto"\nepsilon = 1.0\ndelta = 1e-3\n'
    )
    return config


def test_verify_prints_the_price_table_before_any_noise(clinic, capsys):
    def no_noise(*args, **kwargs):
        raise AssertionError("verify drew noise")

    from distpriv.pipeline import run_verify

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CalibratedMechanism, "release", no_noise)
        mp.setattr(dp.noise, "secure_sample", no_noise)
        status = cli.main(["verify", str(clinic)])
        text = capsys.readouterr().out
        outcome = run_verify(clinic)
    assert status in (0, 1)
    # The table, one row per statistic, comes before the guarantee and the data check.
    head = text.index("price per statistic")
    assert head < text.index("guarantee:") < text.index("data-level check")
    for name in ("avg_radius", "avg_perimeter", "avg_texture", "n_large"):
        assert head < text.index(name, head) < text.index("guarantee:")
    assert "premise x" in text and "drop saves others" in text
    # The curator's report: noise sd from the mechanism's own covariance, ratio to the
    # spread. The spread is the modelling table's, so the price is private: never in the
    # public report that --out writes.
    report = outcome.public
    assert "price" not in report and "noise_to_spread" not in json.dumps(report)
    price = outcome.private["price"]
    cov = np.array(report["mechanism"]["noise_covariance"])
    assert [r["statistic"] for r in price["statistics"]] == report["statistics"]
    for k, r in enumerate(price["statistics"]):
        assert r["noise_sd"] == pytest.approx(np.sqrt(cov[k, k]), rel=1e-9)
        assert r["noise_to_spread"] == pytest.approx(r["noise_sd"] / r["spread"], rel=1e-9)
        assert r["noise_sd_without_population"] is not None
        if r["dominated_by_noise"]:
            assert any(line.startswith(r["statistic"] + ": the noise") for line in price["lines"])
    # radius and perimeter of the same tumours: nearly collinear, flagged.
    flagged = {r["statistic"] for r in price["statistics"] if r["nearly_collinear"]}
    assert {"avg_radius", "avg_perimeter"} <= flagged
    assert price["weights"]


def test_release_html_does_not_publish_the_price(tmp_path):
    # noise / spread is curator-private (pipeline.report.noise_to_spread): the public page
    # of a release carries no price table.
    import shutil
    from pathlib import Path

    from distpriv.pipeline import run_release
    from distpriv.pipeline.html import release_page

    src = Path(__file__).resolve().parents[2] / "examples" / "hospital"
    for f in src.iterdir():
        if f.suffix in (".csv", ".toml"):
            shutil.copy(f, tmp_path / f.name)
    outcome = run_release(tmp_path / "hospital.toml", insecure_seed=3, ledger=False)
    public, page = release_page(outcome, epsilons=(2.0,))
    assert "price" not in public
    assert '<section id="price">' not in page and "noise_to_spread" not in page
