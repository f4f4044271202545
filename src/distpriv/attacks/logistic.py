"""The paper's meta-classifier in numpy: standardised, L2-penalised logistic regression.

Chen & Ohrimenko 2023 §5.3 attack released statistics with scikit-learn's
``make_pipeline(StandardScaler(), LogisticRegression())``: features centred and divided by
their (population) standard deviation, then the maximiser of the penalised likelihood

    β̂ = argmin_{w, b}  C · Σᵢ log(1 + exp(−sᵢ (w·zᵢ + b))) + ½ ‖w‖²,   sᵢ = ±1,  C = 1,

(the intercept b is not penalised), predicting θ₁ where w·z + b > 0. The objective is
strictly convex, so its minimiser is unique: this module standardises the features and
finds it with the Newton solver of the released-model statistic
(:func:`distpriv.modeling.regression.fit_logistic`, the same objective). It is the
same estimator as scikit-learn's (``tests/attacks/test_logistic.py`` compares coefficients
and predictions with it) without importing scikit-learn, scipy.stats and joblib, which cost
about 0.8 s of CPU on a cold start for a fit that takes a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..modeling.regression import fit_logistic as _fit_coefficients

__all__ = ["LogisticFit", "fit_logistic"]


@dataclass(frozen=True)
class LogisticFit:
    """A fitted standardised logistic regression."""

    #: ndarray, shape (d,)
    #: The standardisation (``StandardScaler``: mean and population standard deviation,
    #: 1 for a constant feature).
    mean: np.ndarray
    scale: np.ndarray
    #: ndarray, shape (d,)
    #: w, on the standardised features.
    coef: np.ndarray
    #: b.
    intercept: float

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """w·z + b for each row of x (shape (k, d)), shape (k,)."""
        z = (np.asarray(x, dtype=np.float64) - self.mean) / self.scale
        return z @ self.coef + self.intercept

    def predict(self, x: np.ndarray) -> np.ndarray:
        """0/1 decisions (1 = θ₁ where the decision function is positive), shape (k,)."""
        return (self.decision_function(x) > 0).astype(np.int8)


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale as ``StandardScaler`` computes them (near-constant features: scale 1)."""
    n = x.shape[0]
    mean = x.mean(axis=0)
    var = x.var(axis=0)
    eps = np.finfo(np.float64).eps
    # scikit-learn's bound on the rounding error of the two-pass variance (Chan, Golub &
    # LeVeque 1983): below it a feature is constant and left unscaled.
    constant = var <= n * eps * var + (n * mean * eps) ** 2
    scale = np.where(constant, 1.0, np.sqrt(var))
    return mean, scale


def fit_logistic(x: np.ndarray, y: np.ndarray, *, c: float = 1.0) -> LogisticFit:
    """Fit the standardised L2-penalised logistic regression (scikit-learn's, C = ``c``).

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Training features (e.g. shadow datasets' statistics).
    y : ndarray, shape (n,)
        0/1 labels, both present.
    c : float
        Inverse penalty strength (scikit-learn's ``C``; the paper's default 1).

    Returns
    -------
    LogisticFit

    Raises
    ------
    ParameterError
        Labels other than 0/1, a single class, non-finite features, or mismatched shapes.
    """
    x = np.asarray(x, dtype=np.float64)
    yv = np.asarray(y)
    if x.ndim != 2 or yv.shape != (x.shape[0],):
        raise ParameterError(f"x must be (n, d) and y (n,); got {x.shape} and {yv.shape}")
    if not np.all(np.isin(yv, (0, 1))):
        raise ParameterError("y must hold 0/1 labels")
    if yv.min() == yv.max():
        raise ParameterError("y must hold both labels (0 and 1) to train a classifier")
    if not np.all(np.isfinite(x)):
        raise ParameterError("x must be finite")
    if not (c > 0 and np.isfinite(c)):
        raise ParameterError(f"c must be positive and finite, got {c}")
    mean, scale = _standardise(x)
    # The solver of the released-model statistic (one dataset of the batch): the same
    # objective, Newton steps with backtracking to a relative step of 1e-10.
    beta = _fit_coefficients(
        ((x - mean) / scale)[None], yv.astype(np.float64)[None], c=c, what="classifier"
    )[0]
    d = x.shape[1]
    return LogisticFit(mean, scale, beta[:d].copy(), float(beta[d]))
