"""MeanSecret: the secret, its model, its checks, config and CLI.

References used here, independent of the tilting code:
* Gaussian records: the conditional law of the column means given the sensitive column's
  mean is Zhang et al. 2022 §4.2's closed form (``central.apgm_models.gaussian_conditional``,
  a separate implementation), exact for Gaussian records;
* a 0/1 column: conditioning its mean on v = k/n is exactly the stratified draw of k rows
  with the property and n − k without, i.e. ProportionSecret's i.i.d. model (another
  implementation, the engine's moments);
* the population layer: the slope estimate's spread over re-drawn modelling tables.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from adult_setup import release_toml
from cli_helpers import one_line_error, run
from distpriv.central.apgm_models import gaussian_conditional
from distpriv.errors import AssumptionWarning, ConfigError, ParameterError, ParameterTypeError
from distpriv.modeling import MeanSecret, ProportionSecret, Secret, model_query
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.report import secret_dict
from distpriv.pipeline.stages.steps import _secret
from distpriv.population.confidence import confidence_set


def gaussian_table(n_rows: int, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Gaussian records (s, a, b, c) with a known mean and covariance."""
    mu = np.array([10.0, 3.0, -1.0, 50.0])
    a = np.array([[2.0, 0.0, 0.0, 0.0], [0.8, 1.0, 0.0, 0.0], [-0.5, 0.3, 0.7, 0.0], [3, 0, 1, 5]])
    cov = a @ a.T
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal(mu, cov, size=n_rows)
    return pd.DataFrame(x, columns=["s", "a", "b", "c"]), mu, cov


STATS = {"avg_a": "avg(a)", "sum_b": "sum(b)", "n_c_high": "count_if(c > 50)"}


# -- the secret ------------------------------------------------------------------------


def test_secret_protocol_and_descriptions():
    s = MeanSecret("hours_per_week * 52", values=[2000, 2100, 2200], within=100)
    assert isinstance(s, Secret) and s.kind == "mean"
    assert s.pairs == ((2000.0, 2100.0), (2100.0, 2200.0))
    assert s.columns == frozenset({"hours_per_week"})
    assert s.describe() == "the average of hours_per_week * 52"
    assert s.ledger_key() == "mean:hours_per_week * 52"
    d = s.to_dict()
    assert d["type"] == "mean" and d["key"] == "mean:hours_per_week * 52"
    assert secret_dict(s)["description"] == "the average of hours_per_week * 52"
    # A proportion secret's ledger key is its predicate: the two kinds never collide.
    assert ProportionSecret("age > 3", values=[0.1, 0.2]).ledger_key() != s.ledger_key()
    assert MeanSecret("age", values=[37, 40], pairs=[[40, 37]]).pairs == ((40.0, 37.0),)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"expression": "age", "values": [37]}, ParameterError, "two distinct"),
        ({"expression": "age", "values": [37, 37]}, ParameterError, "two distinct"),
        ({"expression": "age", "values": [37, float("nan")]}, ParameterError, "finite"),
        ({"expression": "age", "values": "37"}, ParameterTypeError, "values"),
        ({"expression": "", "values": [1, 2]}, ParameterTypeError, "expression"),
        ({"expression": "avg(age)", "values": [1, 2]}, ParameterError, "secret expression"),
        ({"expression": "1; DROP TABLE x", "values": [1, 2]}, ParameterError, "expression"),
        ({"expression": "age", "values": [1, 2], "within": 0.5}, ParameterError, "within"),
        ({"expression": "age", "values": [1, 2], "pairs": [[1, 3]]}, ParameterError, "pairs"),
        (
            {"expression": "age", "values": [1, 2], "pairs": [[1, 2]], "within": 1},
            ParameterError,
            "either",
        ),
    ],
)
def test_secret_rejects_bad_input(kwargs, exc, match):
    expr = kwargs.pop("expression")
    with pytest.raises(exc, match=match):
        MeanSecret(expr, **kwargs)


# -- the model against independent references -------------------------------------------


def test_gaussian_records_match_the_closed_form():
    """Zhang et al. §4.2's closed form (exact for Gaussian records) on the table's own
    moments; the tilt of a Gaussian sample is its linear conditioning up to sampling
    error, so the agreement is within a few standard errors of the slope."""
    frame, _, _ = gaussian_table(200_000, seed=1)
    n, vals = 50, [9.5, 10.0, 10.8]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        model = model_query(
            frame, {"avg_a": "avg(a)", "avg_b": "avg(b)"}, MeanSecret("s", vals), subset_size=n
        )
    x = frame[["s", "a", "b"]].to_numpy()
    mu, cov = x.mean(axis=0), np.cov(x, rowvar=False)
    ref_mean, ref_cov = gaussian_conditional(mu, cov, sensitive=0, queried=[1, 2], values=vals, n=n)
    # Slope error sd ≈ sd(e)/(sd(s)√N) per unit of v; the gap is at most 1.3 units.
    assert np.allclose(model.means, ref_mean[0], atol=5 * 1.3 * 1.0 / (2 * np.sqrt(2e5)) + 1e-3)
    for c in model.covariances:
        assert np.allclose(c, ref_cov[0], rtol=0.02, atol=1e-4)
    assert model.fitted.startswith("conditional limit law")


def test_binary_column_is_the_stratified_model():
    """The mean of a 0/1 column at v = k/n: exactly k rows with the property (i.i.d. from
    its stratum) and n − k without — ProportionSecret's i.i.d. model, computed by the
    engine's per-stratum moments (a separate implementation)."""
    frame, _, _ = gaussian_table(5_000, seed=2)
    frame["flag"] = (frame["a"] > 3.2).astype(int)
    vals = [0.3, 0.4, 0.5]
    mean = model_query(frame, STATS, MeanSecret("flag", vals), subset_size=100)
    prop = model_query(frame, STATS, ProportionSecret("flag = 1", vals), subset_size=100)
    assert np.allclose(mean.means, prop.means, rtol=1e-9, atol=1e-9)
    # Covariances agree up to the divisor convention: the tilt weighs a stratum's rows
    # 1/N_s (divisor N_s), the engine's i.i.d. moments divide by N_s − 1.
    smallest = min(int(frame["flag"].sum()), int((1 - frame["flag"]).sum()))
    assert np.allclose(mean.covariances, prop.covariances, rtol=1.01 / (smallest - 1), atol=0)
    assert not np.allclose(mean.covariances, prop.covariances, rtol=0.1 / smallest, atol=0)


def test_population_flag_applies_the_finite_population_correction():
    frame, _, _ = gaussian_table(2_000, seed=3)
    secret = MeanSecret("s", [9.5, 10.5])
    iid = model_query(frame, STATS, secret, subset_size=100)
    pop = model_query(frame, STATS, secret, subset_size=100, population=True)
    assert pop.uncertainty is None and iid.uncertainty is not None
    assert np.allclose(pop.covariances, iid.covariances * (2000 - 100) / 1999)
    assert np.allclose(pop.means, iid.means)


def test_uncertainty_covers_the_slope_spread():
    """The encoded set's gap spread is at least the real spread of the estimated gaps over
    modelling tables re-drawn from a known population (200 tables)."""
    big, _, _ = gaussian_table(400_000, seed=4)
    big["c2"] = big["c"] + 3 * np.abs(big["s"] - 10) * big["b"]  # heteroscedastic column
    stats = {"avg_a": "avg(a)", "avg_c2": "avg(c2)"}
    secret = MeanSecret("s", [9.0, 11.0])
    rng = np.random.default_rng(5)
    gaps, spreads = [], []
    for _ in range(200):
        sample = big.iloc[rng.choice(len(big), 1500, replace=False)]
        m = model_query(sample, stats, secret, subset_size=50)
        gaps.append(m.means[1] - m.means[0])
        u = m.uncertainty
        dw = u.weights[1] - u.weights[0]
        spreads.append(
            np.einsum("s,sab->ab", dw**2 / np.asarray(u.stratum_sizes), u.row_covariances)
        )
    observed = np.cov(np.array(gaps), rowvar=False)
    claimed = np.mean(spreads, axis=0)
    # claimed ⪰ observed (up to the 200-table estimate's error, ~10 % in each direction).
    w = np.linalg.eigvalsh(claimed - 0.8 * observed)
    assert w.min() > 0, (claimed, observed)
    # ... and not vacuous: within a factor 3 of it.
    assert np.linalg.eigvalsh(3 * observed - claimed).min() > 0
    cs = confidence_set(m, beta=0.05)
    assert cs.pairs == 1 and np.all(cs.variance_factors[..., 1] > 1)


# -- checks on the data -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "secret", "match"),
    [
        (
            pd.DataFrame({"s": [1.0, 2, 3, 4], "a": [1.0, 2, 3, 4]}),
            MeanSecret("s", [2, 5]),
            "5 is outside the range of s",
        ),
        (
            pd.DataFrame({"s": [1.0, 2, 3, 4], "a": [1.0, 2, 3, 4]}),
            MeanSecret("s", [1, 3]),
            "1 is outside the range",
        ),
        (
            pd.DataFrame({"s": [2.0] * 5, "a": [1.0, 2, 3, 4, 5]}),
            MeanSecret("s", [1, 3]),
            "constant",
        ),
        (
            pd.DataFrame({"s": ["x", "y", "z"], "a": [1.0, 2, 3]}),
            MeanSecret("s", [1, 3]),
            "secret expression",
        ),
        (pd.DataFrame({"s": [1.0, 2, 3, 4], "a": [1.0, 2, 3, 4]}), MeanSecret("t", [2, 3]), "t"),
        (pd.DataFrame({"s": [1.0, 3], "a": [1.0, 2]}), MeanSecret("s", [2, 2.5]), ">= 3"),
    ],
)
def test_model_rejects_impossible_secrets(frame, secret, match):
    with pytest.raises(ParameterError, match=match):
        model_query(frame, {"avg_a": "avg(a)"}, secret, subset_size=2)


def test_model_rejects_nonlinear_statistics():
    frame, _, _ = gaussian_table(500, seed=6)
    secret = MeanSecret("s", [9.5, 10.5])
    with pytest.raises(ParameterError, match="linear"):
        model_query(frame, {"med": "median(a)"}, secret, subset_size=10)
    with pytest.raises(ParameterError, match="linear"):
        model_query(frame, {"med": "median(a)"}, secret, subset_size=10, method="montecarlo")


def test_montecarlo_real_subsets_agree_with_the_analytic_model():
    """method='montecarlo' keeps real subsets whose average is in a narrow window (no
    tilting): on Gaussian records its moments match the exact conditional law within
    Monte Carlo error."""
    frame, _, _ = gaussian_table(100_000, seed=9)
    secret = MeanSecret("s", [9.6, 10.4])
    stats = {"avg_a": "avg(a)", "avg_b": "avg(b)"}
    ana = model_query(frame, stats, secret, subset_size=50)
    mc = model_query(
        frame, stats, secret, subset_size=50, method="montecarlo", n_samples=4000, rng=3
    )
    assert mc.samples is not None and mc.samples[0].shape == (4000, 2)
    assert mc.uncertainty is not None and mc.method == "montecarlo"
    se = np.sqrt(np.diagonal(ana.covariances, axis1=1, axis2=2) / 4000)
    assert np.all(np.abs(mc.means - ana.means) < 5 * se + 0.05 * np.abs(np.diff(ana.means, axis=0)))
    assert np.allclose(
        np.diagonal(mc.covariances, axis1=1, axis2=2),
        np.diagonal(ana.covariances, axis1=1, axis2=2),
        rtol=5 * np.sqrt(2 / 4000),
    )
    assert mc.to_sampled().samples[1].shape == (4000, 2)


def test_montecarlo_refuses_a_value_too_rare():
    frame, _, _ = gaussian_table(20_000, seed=10)
    with pytest.raises(ParameterError, match="too rare"), warnings.catch_warnings():
        warnings.simplefilter("ignore", AssumptionWarning)
        model_query(
            frame,
            STATS,
            MeanSecret("s", [10.0, 12.0]),
            subset_size=100,
            method="montecarlo",
            n_samples=50,
            rng=1,
        )


def test_rare_value_warns():
    frame, _, _ = gaussian_table(20_000, seed=7)
    with pytest.warns(AssumptionWarning, match="standard errors"):
        model_query(frame, STATS, MeanSecret("s", [10.0, 13.0]), subset_size=100)


# -- config and CLI ---------------------------------------------------------------------


def _write(tmp_path, secret: str) -> tuple:
    frame, _, _ = gaussian_table(20_000, seed=8)
    frame.iloc[:5000].to_csv(tmp_path / "model.csv", index=False)
    frame.iloc[5000:5100].to_csv(tmp_path / "release.csv", index=False)
    path = tmp_path / "c.toml"
    path.write_text(
        release_toml(
            model=str(tmp_path / "model.csv"),
            release=str(tmp_path / "release.csv"),
            query={"avg_a": "avg(a)", "n_c_high": "count_if(c > 50)"},
            secret='kind = "mean"\n' + secret,
            extra="[ledger]\nenabled = false",
        )
    )
    return path


def test_config_builds_the_secret(tmp_path):
    cfg = load_release_config(_write(tmp_path, 'expression = "s"\nvalues = [9.5, 10.5]'))
    assert _secret(cfg) == MeanSecret("s", [9.5, 10.5])


@pytest.mark.parametrize(
    ("secret", "match"),
    [
        ("values = [9.5, 10.5]", "needs 'expression'"),
        ('expression = "s"\nvalues = [9.5, 10.5]\npredicate = "s > 1"', "'predicate'"),
    ],
)
def test_config_key_errors(tmp_path, secret, match):
    with pytest.raises(ConfigError, match=match):
        load_release_config(_write(tmp_path, secret))


def test_cli_release_and_report(tmp_path, capsys):
    path = _write(tmp_path, 'expression = "s"\nvalues = [9.5, 10.5]')
    status, out, err = run(["release", path, "--json"], capsys)
    assert status == 0, err
    import json

    data = json.loads(out)
    secret = data["secret"] if "secret" in data else data["report"]["secret"]
    assert secret["description"] == "the average of s" and secret["key"] == "mean:s"


@pytest.mark.parametrize(
    ("secret", "words"),
    [
        ('expression = "s"\nvalues = [9.5, 99]', ("99 is outside the range of s",)),
        ('expression = "s"\nvalues = [9.5]', ("two distinct",)),
        ('expression = "nope"\nvalues = [9.5, 10]', ("nope",)),
        ('expression = "s ; select 1"\nvalues = [9.5, 10]', ("secret expression",)),
    ],
)
def test_cli_one_line_errors(tmp_path, capsys, secret, words):
    path = _write(tmp_path, secret)
    status, _, err = run(["release", path, "--out", tmp_path / "out.json"], capsys)
    one_line_error(status, err, *words)
    assert not (tmp_path / "out.json").exists()


def test_ledger_composes_mean_releases_under_their_own_key(tmp_path, capsys, short_utility_grid):
    # The --html figure on a one-point grid: the assertions read the ledger and one phrase of
    # the page, not the figure (the default grid is tested in tests/pipeline/test_html.py).
    import json

    path = _write(tmp_path, 'expression = "s"\nvalues = [9.5, 10.5]')
    text = path.read_text().replace(
        "[ledger]\nenabled = false", '[ledger]\npath = "l.ledger"\nbudget = [5.0, 1e-2]'
    )
    path.write_text(text)
    prop = tmp_path / "p.toml"
    prop.write_text(
        text.replace(
            'kind = "mean"\nexpression = "s"\nvalues = [9.5, 10.5]',
            'predicate = "s > 10"\nvalues = [0.4, 0.6]',
        )
    )
    reports = []
    for i, cfg in enumerate((prop, path, path)):
        # --html on the last release only: its page is the one read below (the first two
        # pages were never read; the figure recalibrates every candidate, most of the time).
        html = ["--html", tmp_path / f"r{i}.html"] if i == 2 else []
        status, _, err = run(
            ["release", cfg, "--quiet", "--out", tmp_path / f"o{i}.json", *html], capsys
        )
        assert status == 0, err
        reports.append(json.loads((tmp_path / f"o{i}.json").read_text()))
    assert reports[0]["ledger"]["secret_key"] == "s > 10"
    # The mean secret is a separate account, in which every release of the data counts:
    # the proportion release too (an adversary after the mean sees it).
    first, second = reports[1]["ledger"], reports[2]["ledger"]
    assert first["secret_key"] == second["secret_key"] == "mean:s"
    assert first["n_releases"] == 2 and second["n_releases"] == 3
    assert [a["secret"] for a in second["accounts"]] == ["mean:s", "s > 10"]
    assert second["composed"]["epsilon"] > second["alone"]["epsilon"]
    assert "the average of s" in (tmp_path / "r2.html").read_text()
