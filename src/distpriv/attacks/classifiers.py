"""The attacker's meta-classifiers, standardised features first.

The paper's ``"logistic"`` (Chen & Ohrimenko 2023 §5.3) is fitted in numpy by
:func:`distpriv.attacks.logistic.fit_logistic` (scikit-learn's estimator, the same
optimum); the alternatives are scikit-learn's and import it only when asked for, so an
audit with the paper's classifier never imports scikit-learn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..util.validation import check_choice
from .logistic import fit_logistic

__all__ = ["CLASSIFIERS", "make_classifier"]

CLASSIFIERS = ("logistic", "lda", "gradient-boosting", "mlp")


def make_classifier(name: str, seed: int) -> Any:
    """A fresh scikit-learn pipeline: StandardScaler + the named classifier.

    (The audit fits ``"logistic"`` with :func:`~distpriv.attacks.logistic.fit_logistic`
    instead, which finds the same optimum; this pipeline is scikit-learn's for users.)

    ``"logistic"`` is the paper's (Chen & Ohrimenko 2023 §5.3); ``"lda"``,
    ``"gradient-boosting"`` and ``"mlp"`` (one hidden layer of 32 units) are alternatives.
    """
    # Each scikit-learn module is imported only when its classifier is asked for:
    # sklearn.ensemble and sklearn.neural_network alone take about 0.3 s to import.
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    check_choice(name, "classifier", CLASSIFIERS)
    if name == "logistic":
        from sklearn.linear_model import LogisticRegression

        # Newton–Cholesky: the same L2-penalised optimum as lbfgs, about twice as fast
        # for the few features of a query.
        clf = LogisticRegression(max_iter=1000, solver="newton-cholesky")
    elif name == "lda":
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        clf = LinearDiscriminantAnalysis()
    elif name == "gradient-boosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        clf = HistGradientBoostingClassifier(max_iter=100, random_state=seed)
    else:
        from sklearn.neural_network import MLPClassifier

        clf = MLPClassifier(hidden_layer_sizes=(32,), max_iter=500, random_state=seed)
    return make_pipeline(StandardScaler(), clf)


def fit_predict(
    name: str, x_train: np.ndarray, y_train: np.ndarray, x_tests: list[np.ndarray], seed: int
) -> list[np.ndarray]:
    """Train once, predict 0/1 on each test array (callers batch arrays into one).

    ``"logistic"``: :func:`~distpriv.attacks.logistic.fit_logistic` (the optimum
    :func:`make_classifier`'s pipeline converges to, without scikit-learn); the others:
    :func:`make_classifier`'s pipeline (``seed`` seeds the randomised ones).
    """
    check_choice(name, "classifier", CLASSIFIERS)
    if name == "logistic":
        fit = fit_logistic(x_train, y_train)
        return [fit.predict(x) for x in x_tests]
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    model = make_classifier(name, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train, y_train)
    return [model.predict(x).astype(np.int8) for x in x_tests]
