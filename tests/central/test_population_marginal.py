"""The model of a subset of the statistics keeps the secret's pairs, whatever its labels.

A mean secret's labels are numbers (its values), so index pairs handed back to the model
would be read as labels: a wrong pair, or a pair of a θ with itself. The composition's
"this release alone" guarantee and the price table both take sub-models this way.
"""

from __future__ import annotations

import numpy as np
import pytest

from distpriv.population.confidence import marginal
from distpriv.querymodel import GaussianQueryModel


def _model(labels, pairs):
    rng = np.random.default_rng(3)
    k, m = len(labels), 4
    means = rng.normal(size=(k, m))
    covs = np.stack([np.eye(m) + 0.1 * (a := rng.normal(size=(m, m))) @ a.T for _ in labels])
    return GaussianQueryModel(means, covs, pairs, labels=labels)


@pytest.mark.parametrize(
    ("labels", "pairs"),
    [
        ((1.0, 2.0, 3.0), [(2.0, 3.0), (1.0, 3.0)]),  # index pairs read as labels: wrong pair
        ((2.0, 3.0, 4.0), [(2.0, 4.0), (3.0, 4.0)]),  # … or dropped silently
        ((0.3, 0.5, 0.7), [(0.3, 0.7)]),
        (("a", "b", "c"), [("a", "c"), ("b", "c")]),
    ],
)
def test_marginal_keeps_the_pairs_by_label(labels, pairs):
    model = _model(labels, pairs)
    keep = np.array([0, 2])
    sub = marginal(model, keep)
    assert sub.labels == model.labels
    assert sub.pairs == model.pairs  # the same hypotheses, by position
    named = [(sub.labels[i], sub.labels[j]) for i, j in sub.pairs]
    assert named == [tuple(p) for p in pairs]
    np.testing.assert_array_equal(sub.means, model.means[:, keep])
    np.testing.assert_array_equal(sub.covariances, model.covariances[:, keep][:, :, keep])
