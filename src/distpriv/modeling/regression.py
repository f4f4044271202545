"""A released model as the statistics: a logistic regression's coefficients.

Chen & Ohrimenko 2023 (§1–2) motivate distribution privacy by property inference on
*released models*: a model trained on a dataset leaks global properties of it (Ganju et al.
2018). Here the released statistics are the coefficients of an L2-penalised logistic
regression fitted to the released dataset — the objective of scikit-learn's
``LogisticRegression(C=C)`` (intercept unpenalised, the default of its lbfgs, newton-cg and
newton-cholesky solvers):

    minimise over (w, b):  Σᵢ log(1 + exp(−sᵢ (xᵢᵀw + b))) + ‖w‖² / (2C),   sᵢ = ±1.

The objective is strictly convex in w and, when both classes occur, in b, so its minimiser
is unique and the statistic is a deterministic function of the dataset, whatever the solver
(no random state anywhere). It is computed by damped Newton steps on every dataset of a
batch at once (a (s, d+1, d+1) solve per step), about a hundred times faster than one
scikit-learn fit per dataset; tests/modeling/test_regression.py checks it against
scikit-learn's ``newton-cholesky`` and ``lbfgs`` solvers.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..util.validation import check_real
from .expressions import parse_expression
from .queries import Query, Statistic
from .tables import Table, as_table

__all__ = ["LogisticRegressionQuery", "fit_logistic", "logistic_regression_query"]

# Newton's method converges quadratically near the optimum; from w = 0 a well-posed
# problem takes about 8 steps, so 100 means the problem is (numerically) not well posed.
_MAX_STEPS = 100
_TOL = 1e-10


def _loss(z: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Σ log(1 + exp(−s z)) per dataset, overflow-free."""
    return np.logaddexp(0.0, -s * z).sum(axis=-1)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, *, c: float = 1.0, what: str = "logistic regression"
) -> np.ndarray:
    """Coefficients of the penalised logistic regression on each dataset of a batch.

    Parameters
    ----------
    x : ndarray, shape (s, n, d)
        Features of s datasets of n rows.
    y : ndarray, shape (s, n)
        Targets in {0, 1}.
    c : float
        C, the inverse penalty (scikit-learn's).
    what : str
        Names the statistic in errors.

    Returns
    -------
    ndarray, shape (s, d + 1)
        (w₁, …, w_d, b) per dataset.

    Raises
    ------
    ParameterError
        A dataset whose target takes one value (the intercept is then infinite), a fit
        that does not converge, or non-finite coefficients — naming ``what``.
    """
    s_count, n, d = x.shape
    positives = y.sum(axis=1)
    if np.any((positives == 0) | (positives == n)):
        bad = int(np.flatnonzero((positives == 0) | (positives == n))[0])
        raise ParameterError(
            f"{what}: a dataset of {n} rows (number {bad}) has only one class of the target, "
            "so its intercept is infinite; use larger datasets or a target both classes of "
            "which occur in every dataset"
        )
    xa = np.concatenate([x, np.ones((s_count, n, 1))], axis=2)
    sign = 2.0 * y - 1.0
    pen = np.full(d + 1, 1.0 / c)
    pen[-1] = 0.0  # intercept unpenalised, as scikit-learn's
    w = np.zeros((s_count, d + 1))
    f = objective_sub(xa, sign, pen, w)
    active = np.ones(s_count, dtype=bool)
    for _ in range(_MAX_STEPS):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        xs, ws = xa[idx], w[idx]
        z = np.einsum("snd,sd->sn", xs, ws)
        p = 0.5 * (1.0 + np.tanh(0.5 * z))  # the logistic function, overflow-free
        grad = np.einsum("snd,sn->sd", xs, p - y[idx]) + pen * ws
        hess = np.einsum("snd,sn,sne->sde", xs, p * (1.0 - p), xs) + np.diag(pen)
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        # Backtracking: halve the step of a dataset until its objective does not grow.
        t = np.ones(idx.size)
        new_w = ws - step
        new_f = objective_sub(xa[idx], sign[idx], pen, new_w)
        for _ in range(30):
            worse = new_f > f[idx] + 1e-12 * np.abs(f[idx])
            if not np.any(worse):
                break
            t = np.where(worse, t / 2, t)
            new_w = ws - t[:, None] * step
            new_f = objective_sub(xa[idx], sign[idx], pen, new_w)
        w[idx], f[idx] = new_w, new_f
        done = np.max(np.abs(t[:, None] * step), axis=1) <= _TOL * (1.0 + np.max(np.abs(new_w), 1))
        active[idx[done]] = False
    if np.any(active) or not np.all(np.isfinite(w)):
        raise ParameterError(
            f"{what}: the fit did not converge to finite coefficients on some dataset "
            "(near-separable classes with a very large C?); use a smaller C"
        )
    return w


def objective_sub(xa: np.ndarray, sign: np.ndarray, pen: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The penalised objective of each dataset at w (shape (s,))."""
    return _loss(np.einsum("snd,sd->sn", xa, w), sign) + 0.5 * (pen * w * w).sum(axis=1)


class LogisticRegressionQuery(Query):
    """The coefficients of a logistic regression fitted to the released dataset.

    Built by :meth:`Query.logistic_regression`. The statistics are ``coef_<feature>`` for
    each feature and ``intercept`` (m = d + 1), the minimiser of the penalised objective of
    the module docstring (scikit-learn's ``LogisticRegression(C=C)``).

    Parameters
    ----------
    target : str
        A SQL row predicate or 0/1 expression, the class to predict (e.g.
        ``"sex = 'Female'"``).
    features : sequence of str
        SQL row expressions (e.g. ``["age", "education_num", "hours_per_week"]``).
    c : float
        C > 0, the inverse L2 penalty on the coefficients (default 1, scikit-learn's).
    names : sequence of str, optional
        Names of the d + 1 statistics (default ``coef_<feature>`` and ``intercept``).
    """

    def __init__(
        self,
        target: str,
        features: Sequence[str],
        *,
        c: float = 1.0,
        names: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(target, str) or not target.strip():
            raise ParameterTypeError(f"target must be a SQL expression, got {target!r}")
        if isinstance(features, str) or not isinstance(features, Sequence) or not features:
            raise ParameterTypeError(
                f"features must be a non-empty list of SQL expressions, got {features!r}"
            )
        self.c = check_real(c, "C", low=0.0, low_inclusive=False)
        if not np.isfinite(self.c):
            raise ParameterError(f"C must be finite (an unpenalised fit can diverge), got {c!r}")
        self.target = parse_expression(target, what="logistic regression target", kind="scalar")
        self.features = tuple(
            parse_expression(str(f), what=f"logistic regression feature {f!r}", kind="scalar")
            for f in features
        )
        default = [f"coef_{f.sql()}" for f in self.features] + ["intercept"]
        super().__init__(self._call_frame, names=list(default if names is None else names))
        self.expression = (
            f"logistic_regression({self.target.sql()} ~ "
            f"{' + '.join(f.sql() for f in self.features)}; C={self.c:g})"
        )
        self.statistics = tuple(
            Statistic(s.name, f"{self.expression}[{part}]", None, None)
            for s, part in zip(
                self.statistics, [f.sql() for f in self.features] + ["intercept"], strict=True
            )
        )
        self._rows: weakref.WeakKeyDictionary[Table, tuple[np.ndarray, np.ndarray]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def columns(self) -> frozenset[str]:
        """Columns the target and the features reference."""
        out = set(self.target.columns)
        for f in self.features:
            out |= f.columns
        return frozenset(out)

    def check_columns(self, table: Table) -> None:
        """Raise :class:`ParameterError` naming an expression with an unknown column."""
        for e in (self.target, *self.features):
            e.check_columns(table.columns)

    def _arrays(self, table: Table) -> tuple[np.ndarray, np.ndarray]:
        """(x (N, d), y (N,)) of a table, computed once per table."""
        have = self._rows.get(table)
        if have is not None:
            return have
        self.check_columns(table)
        exprs = [self.target.sql(), *(f.sql() for f in self.features)]
        what = [f"{self.expression}: target {exprs[0]}"] + [
            f"{self.expression}: feature {e}" for e in exprs[1:]
        ]
        values = table.row_values(exprs, what)
        y = values[:, 0]
        if not np.all((y == 0) | (y == 1)):
            raise ParameterError(
                f"{self.expression}: the target {exprs[0]} must be a predicate or 0/1, got "
                f"values such as {float(y[(y != 0) & (y != 1)][0])!r}"
            )
        out = (np.ascontiguousarray(values[:, 1:]), y)
        self._rows[table] = out
        return out

    def evaluate_subsets(self, table: Table, rows: np.ndarray) -> np.ndarray:
        """The coefficients on each row set ``rows[r]`` (shape (s, n)), in one batch."""
        x, y = self._arrays(table)
        return fit_logistic(x[rows], y[rows], c=self.c, what=self.expression)

    def _call_frame(self, frame: Any) -> np.ndarray:
        """The coefficients on one dataset given as a DataFrame (a release)."""
        table = as_table(frame)
        x, y = self._arrays(table)
        return fit_logistic(x[None], y[None], c=self.c, what=self.expression)[0]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (name → expression)."""
        return {s.name: s.expression for s in self.statistics}


def logistic_regression_query(
    target: str,
    features: Sequence[str],
    *,
    C: float = 1.0,
    names: Sequence[str] | None = None,
) -> Query:
    """The coefficients of a logistic regression fitted to the dataset, as the statistics.

    Chen & Ohrimenko 2023's motivating case (property inference on released models):
    scikit-learn's ``LogisticRegression(C=C)`` objective (intercept unpenalised), fitted
    deterministically by batched Newton steps
    (:class:`distpriv.modeling.regression.LogisticRegressionQuery`).

    Parameters
    ----------
    target : str
        A SQL row predicate (or 0/1 expression): the class to predict.
    features : sequence of str
        SQL row expressions.
    C : float
        Inverse L2 penalty on the coefficients (> 0, finite).
    names : sequence of str, optional
        Default ``coef_<feature>`` for each feature, then ``intercept``.

    Returns
    -------
    Query
        d + 1 statistics; not linear (model it with ``method="montecarlo"``).

    Examples
    --------
    >>> q = logistic_regression_query("sex = 'Female'", ["age", "hours_per_week"])
    >>> q.names
    ('coef_age', 'coef_hours_per_week', 'intercept')
    """
    return LogisticRegressionQuery(target, features, c=C, names=names)
