"""Parameter validation: every bad input raises the documented error naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distpriv import (
    DistPrivError,
    GaussianQueryModel,
    ParameterError,
    ParameterTypeError,
    SampledQueryModel,
)
from distpriv.util.validation import (
    check_array,
    check_covariance,
    check_delta,
    check_epsilon,
    check_rng,
)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_epsilon_accepts_exactly_finite_positive(x):
    if np.isfinite(x) and x > 0:
        assert check_epsilon(x) == x
    else:
        with pytest.raises(ParameterError, match="epsilon"):
            check_epsilon(x)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_delta_accepts_exactly_unit_interval(x):
    if np.isfinite(x) and 0 <= x < 1:
        assert check_delta(x) == x
    else:
        with pytest.raises(ParameterError, match="delta"):
            check_delta(x)


@pytest.mark.parametrize("bad", ["0.1", None, [0.1], True, 1j])
def test_wrong_types(bad):
    with pytest.raises(ParameterTypeError, match="epsilon"):
        check_epsilon(bad)
    with pytest.raises(TypeError):
        check_delta(bad)


def test_array_checks():
    with pytest.raises(ParameterError, match=r"x must be finite.*nan"):
        check_array([1.0, np.nan], "x")
    with pytest.raises(ParameterError, match=r"x must be finite.*inf"):
        check_array([1.0, np.inf], "x")
    with pytest.raises(ParameterError, match=r"x must have shape \(\*, 3\)"):
        check_array(np.zeros((2, 2)), "x", shape=(None, 3))
    with pytest.raises(ParameterTypeError, match="x must be an array"):
        check_array("abc", "x")
    with pytest.raises(ParameterTypeError, match="x must be an array"):
        check_array([[1, 2], [3]], "x")
    with pytest.raises(ParameterError, match="non-negative"):
        check_array([1.0, -2.0], "x", nonnegative=True)


def test_covariance_checks():
    with pytest.raises(ParameterError, match="symmetric"):
        check_covariance([[1.0, 0.5], [0.0, 1.0]])
    with pytest.raises(ParameterError, match="positive semi-definite"):
        check_covariance([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ParameterError, match="square"):
        check_covariance(np.zeros((2, 3)))
    with pytest.raises(ParameterError, match=r"covariances\[1\]"):
        check_covariance(np.stack([np.eye(2), -np.eye(2)]), "covariances")
    # PSD up to rounding is accepted (sample covariances of rank-deficient data)
    v = np.array([[1.0], [2.0]])
    check_covariance(v @ v.T)


def test_rng():
    assert isinstance(check_rng(3), np.random.Generator)
    g = np.random.default_rng(0)
    assert check_rng(g) is g
    with pytest.raises(ParameterTypeError, match="rng"):
        check_rng("seed")
    with pytest.raises(ParameterError, match="rng"):
        check_rng(-1)


class TestGaussianQueryModel:
    def test_shared_covariance_broadcast_and_labels(self, paper_model):
        assert paper_model.covariances.shape == (2, 2, 2)
        assert paper_model.pair_labels == (("theta1", "theta2"),)
        np.testing.assert_array_equal(paper_model.mean_differences, [[1.0, -1.0]])
        with pytest.raises(ValueError):
            paper_model.means[0, 0] = 3.0  # read-only

    def test_pairs_by_label_index_and_default(self):
        means = np.arange(6.0).reshape(3, 2)
        m = GaussianQueryModel(means, np.eye(2), labels=[0.4, 0.5, 0.6])
        assert m.pairs == ((0, 1), (0, 2), (1, 2))
        m2 = GaussianQueryModel(means, np.eye(2), [(0.4, 0.6), (0.6, 0.4)], labels=[0.4, 0.5, 0.6])
        assert m2.pairs == ((0, 2),)  # unordered, deduplicated
        m3 = GaussianQueryModel(means, np.eye(2), [(0, 1)])
        assert m3.pairs == ((0, 1),)

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            (([1.0, 2.0], np.eye(2)), {}, "means must have 2 dimension"),
            (([[1.0, 2.0]], np.eye(2)), {}, "at least two rows"),
            (([[1.0, 2.0], [1.0, np.nan]], np.eye(2)), {}, "means must be finite"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(3)), {}, "3x3|2x2"),
            (([[1.0, 2.0], [1.0, 3.0]], np.zeros((3, 2, 2))), {}, "covariances must have shape"),
            (([[1.0, 2.0], [1.0, 3.0]], [[1.0, 0.0], [0.0, np.inf]]), {}, "covariances"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(2), [("a", "b")]), {}, "neither a label"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(2), [(0, 0)]), {}, "itself"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(2), [(0, 5)]), {}, "index"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(2), []), {}, "at least one pair"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(2)), {"labels": ["a"]}, "one entry per theta"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(2)), {"labels": ["a", "a"]}, "distinct"),
            (([[1.0, 2.0], [1.0, 3.0]], np.eye(2)), {"statistics": ["x"]}, "statistics"),
        ],
    )
    def test_bad_models(self, args, kwargs, match):
        with pytest.raises(DistPrivError, match=match):
            GaussianQueryModel(*args, **kwargs)


class TestSampledQueryModel:
    def test_to_gaussian_matches_numpy(self, rng):
        a = rng.normal(size=(500, 3))
        b = rng.normal(loc=1.0, size=(400, 3))
        sm = SampledQueryModel([a, b], labels=["lo", "hi"])
        gm = sm.to_gaussian()
        np.testing.assert_allclose(gm.means[1], b.mean(axis=0))
        np.testing.assert_allclose(gm.covariances[0], np.cov(a, rowvar=False))
        assert gm.pair_labels == (("lo", "hi"),)

    def test_one_dimensional_samples(self, rng):
        sm = SampledQueryModel([rng.normal(size=10), rng.normal(size=12)])
        assert sm.dim == 1

    def test_bad(self):
        with pytest.raises(ParameterError, match="at least two thetas"):
            SampledQueryModel([np.zeros((3, 2))])
        with pytest.raises(ParameterError, match=r"samples\[1\] has 3 statistics"):
            SampledQueryModel([np.zeros((3, 2)), np.zeros((3, 3))])
        with pytest.raises(ParameterError, match=r"samples\[0\] must be finite"):
            SampledQueryModel([[np.nan, 1.0], [1.0, 2.0]])
        with pytest.raises(ParameterTypeError, match="samples"):
            SampledQueryModel("abc")
        with pytest.raises(ParameterError, match="at least 2"):
            SampledQueryModel([np.zeros((1, 2)), np.zeros((3, 2))]).to_gaussian()
