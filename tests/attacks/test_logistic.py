"""The numpy logistic regression against scikit-learn's (the paper's meta-classifier)."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from distpriv import ParameterError
from distpriv.attacks import make_classifier
from distpriv.attacks.classifiers import fit_predict
from distpriv.attacks.logistic import fit_logistic


def reference(x: np.ndarray, y: np.ndarray, c: float = 1.0):
    """scikit-learn's pipeline solved far beyond its default tolerance (the exact optimum)."""
    return make_pipeline(StandardScaler(), LogisticRegression(C=c, tol=1e-12, max_iter=100_000))


def problem(rng: np.random.Generator, n: int = 200, d: int = 5):
    # Features on very different scales and offsets, as query statistics are (an average
    # age near 38, a count near 50, hours near 40...), labels from a noisy linear rule.
    x = rng.normal(size=(n, d)) * rng.uniform(0.1, 50, size=d) + rng.normal(size=d) * 100
    w = rng.normal(size=d) / x.std(axis=0)
    y = ((x - x.mean(axis=0)) @ w + rng.logistic(size=n) > 0).astype(int)
    return x, y


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("c", [1.0, 0.05])
def test_coefficients_equal_sklearns_optimum(seed, c):
    rng = np.random.default_rng(seed)
    x, y = problem(rng)
    fit = fit_logistic(x, y, c=c)
    ref = reference(x, y, c).fit(x, y)
    scaler, lr = ref[0], ref[-1]
    np.testing.assert_allclose(fit.mean, scaler.mean_, rtol=1e-12)
    np.testing.assert_allclose(fit.scale, scaler.scale_, rtol=1e-12)
    # lbfgs at tol 1e-12 is itself accurate to ~1e-8.
    np.testing.assert_allclose(fit.coef, lr.coef_[0], atol=1e-6)
    assert fit.intercept == pytest.approx(lr.intercept_[0], abs=1e-6)
    xt = rng.normal(size=(5000, x.shape[1])) * x.std(axis=0) + x.mean(axis=0)
    np.testing.assert_allclose(fit.decision_function(xt), ref.decision_function(xt), atol=1e-5)


def test_predictions_equal_the_pipeline_the_audit_used_before():
    # The audit's classifier was make_classifier("logistic") (newton-cholesky, default
    # tolerance); on the paper's setting its decisions are the numpy fit's, row for row.
    from distpriv.datasets import paper_split
    from distpriv.experiments import ADULT_STATISTICS, INCOME_SECRET
    from distpriv.modeling import Query
    from distpriv.modeling.strata import StratifiedSampler

    parts = paper_split(rng=0)
    q = Query(ADULT_STATISTICS)
    gen = np.random.default_rng(11)
    aux = StratifiedSampler(parts["auxiliary"], q, INCOME_SECRET, 100)
    tst = StratifiedSampler(parts["test"], q, INCOME_SECRET, 100)
    for _ in range(3):
        x_sh = np.vstack([aux.draw(0, 100, gen), aux.draw(1, 100, gen)])
        x_te = np.vstack([tst.draw(0, 2000, gen), tst.draw(1, 2000, gen)])
        x_te = np.vstack([x_te, x_te + gen.normal(0, 3.0, x_te.shape)])
        y_sh = np.repeat([0, 1], 100)
        pipe = make_classifier("logistic", 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pipe.fit(x_sh, y_sh)
        (ours,) = fit_predict("logistic", x_sh, y_sh, [x_te], 0)
        assert ours.dtype == np.int8
        np.testing.assert_array_equal(ours, pipe.predict(x_te))


def test_separable_data_and_constant_feature():
    # A penalised fit has a finite optimum even on separable data; a constant feature is
    # left unscaled (scale 1) and gets no weight, as StandardScaler does.
    rng = np.random.default_rng(3)
    x = np.vstack([rng.normal(-5, 1, (100, 3)), rng.normal(5, 1, (100, 3))])
    x[:, 1] = 3.0
    y = np.repeat([0, 1], 100)
    fit = fit_logistic(x, y)
    ref = reference(x, y).fit(x, y)
    assert fit.scale[1] == 1.0 and fit.coef[1] == 0.0
    np.testing.assert_allclose(fit.coef, ref[-1].coef_[0], atol=1e-6)
    np.testing.assert_array_equal(fit.predict(x), y)


def test_bad_input():
    x = np.zeros((4, 2))
    with pytest.raises(ParameterError, match="both labels"):
        fit_logistic(x, np.zeros(4, dtype=int))
    with pytest.raises(ParameterError, match="0/1 labels"):
        fit_logistic(x, np.array([0, 1, 2, 1]))
    with pytest.raises(ParameterError, match=r"x must be \(n, d\)"):
        fit_logistic(x, np.array([0, 1, 1]))
    with pytest.raises(ParameterError, match="finite"):
        fit_logistic(np.array([[0.0], [np.nan]]), np.array([0, 1]))
    with pytest.raises(ParameterError, match="c must be positive"):
        fit_logistic(x, np.array([0, 1, 0, 1]), c=0.0)


def test_cli_audit_with_the_papers_classifier_does_not_import_sklearn(tmp_path):
    # The audit needs scikit-learn only for the alternative classifiers.
    code = (
        "import sys\n"
        "from distpriv.cli import main\n"
        "main(['audit', 'examples/adult-income.toml', '--repetitions', '1', '--seed', '0',"
        f" '--json', '--out', {str(tmp_path / 'a.json')!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn')[:3])\n"
    )
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "a.json").stat().st_size > 0
