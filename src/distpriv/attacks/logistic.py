"""The paper's meta-classifier in numpy: standardised, L2-penalised logistic regression.

Chen & Ohrimenko 2023 §5.3 attack released statistics with scikit-learn's
``make_pipeline(StandardScaler(), LogisticRegression())``: features centred and divided by
their (population) standard deviation, then the maximiser of the penalised likelihood

    β̂ = argmin_{w, b}  C · Σᵢ log(1 + exp(−sᵢ (w·zᵢ + b))) + ½ ‖w‖²,   sᵢ = ±1,  C = 1,

(the intercept b is not penalised), predicting θ₁ where w·z + b > 0. The objective is
strictly convex, so its minimiser is unique: this module finds it by Newton's method with
a backtracking line search, to machine precision, on the few features of a query. It is the
same estimator as scikit-learn's (``tests/attacks/test_logistic.py`` compares coefficients
and predictions with it) without importing scikit-learn, scipy.stats and joblib, which cost
about 0.8 s of CPU on a cold start (issue 28 item 4) for a fit that takes a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

__all__ = ["LogisticFit", "fit_logistic"]

# Newton converges quadratically near the optimum: 50 steps are far more than a
# well-posed fit needs (typically 6-8); the loop stops when a step no longer moves β.
_MAX_NEWTON_STEPS = 50
_STEP_TOL = 1e-12


@dataclass(frozen=True)
class LogisticFit:
    """A fitted standardised logistic regression.

    Attributes
    ----------
    mean, scale : ndarray, shape (d,)
        The standardisation (``StandardScaler``: mean and population standard deviation,
        1 for a constant feature).
    coef : ndarray, shape (d,)
        w, on the standardised features.
    intercept : float
        b.
    iterations : int
        Newton steps taken.
    """

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    iterations: int

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


def _objective(a: np.ndarray, y: np.ndarray, beta: np.ndarray, lam: np.ndarray) -> float:
    eta = a @ beta
    return float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * np.sum(lam * beta**2))


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
    n, d = x.shape
    a = np.hstack([(x - mean) / scale, np.ones((n, 1))])
    yf = yv.astype(np.float64)
    lam = np.append(np.full(d, 1.0 / c), 0.0)  # ½‖w‖²/C: the intercept is not penalised
    beta = np.zeros(d + 1)
    f = _objective(a, yf, beta, lam)
    steps = 0
    while steps < _MAX_NEWTON_STEPS:
        steps += 1
        eta = a @ beta
        p = 0.5 * (1.0 + np.tanh(0.5 * eta))  # the logistic function, without overflow
        grad = a.T @ (p - yf) + lam * beta
        hess = (a * (p * (1.0 - p))[:, None]).T @ a + np.diag(lam)
        # Positive definite: λ > 0 on w, and Σ p(1 − p) > 0 on b for finite η.
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while True:  # backtracking (Armijo): a Newton step can overshoot far from β̂
            cand = beta - t * step
            f_new = _objective(a, yf, cand, lam)
            if f_new <= f - 1e-4 * t * float(grad @ step) or t < 1e-10:
                break
            t *= 0.5
        beta, f = cand, min(f, f_new)
        if np.max(np.abs(t * step)) <= _STEP_TOL * (1.0 + np.max(np.abs(beta))):
            break
    return LogisticFit(mean, scale, beta[:d].copy(), float(beta[d]), steps)
