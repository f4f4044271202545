"""Domains, the lifting A#(λ) = λA, density-split grids and scenarios."""

from __future__ import annotations

import numpy as np
import pytest

from distpriv.errors import ParameterError, ParameterTypeError
from distpriv.local import Domain, LocalScenario, build_grid, lift


def test_domain_distances_and_nearest_output():
    dom = Domain([[0, 0], [3, 4]], [[0, 0], [3, 0], [3, 4]])
    assert dom.distances.tolist() == [[0, 3, 5], [5, 4, 0]]
    assert dom.input_distances.tolist() == [[0, 5], [5, 0]]
    assert dom.nearest_output.tolist() == [0, 2]
    assert Domain([[0, 0], [3, 4]], metric="l1").input_distances[0, 1] == 7
    np.testing.assert_allclose(dom.embed([0.25, 0.75]), [0.25, 0, 0.75])
    with pytest.raises(ValueError):
        dom.distances[0, 0] = 1.0  # read-only


def test_domain_validation():
    with pytest.raises(ParameterError, match="same number of coordinates"):
        Domain([[0, 0]], [[0, 0, 0]])
    with pytest.raises(ParameterError, match="metric must be one of"):
        Domain([[0, 0]], metric="cosine")
    with pytest.raises(ParameterError, match="input_labels must have 2"):
        Domain([[0, 0], [1, 1]], input_labels=["a"])
    with pytest.raises(ParameterError, match="finite"):
        Domain([[0, np.nan]])


def test_lift_is_the_matrix_product():
    a = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    lam = np.array([0.5, 0.25, 0.25])
    np.testing.assert_allclose(lift(a, lam), lam @ a)
    assert lift(a, np.eye(3)).shape == (3, 2)  # a batch of point masses gives the rows
    with pytest.raises(ParameterError, match="lam must sum to 1"):
        lift(a, [0.5, 0.5, 0.5])
    with pytest.raises(ParameterError, match="row-stochastic: row 0"):
        lift([[0.5, 0.6], [1.0, 0.0]], [0.5, 0.5])


def test_grid_splits_dense_cells_and_tiles_the_area():
    rng = np.random.default_rng(1)
    dense = rng.uniform(1.0, 1.5, size=(400, 2))  # inside base cell (1, 1)
    sparse = rng.uniform(0.0, 3.0, size=(30, 2))
    pts = np.vstack([dense, sparse])
    grid = build_grid((0.0, 3.0, 0.0, 3.0), 1.0, points=pts, max_points=100, max_depth=2)
    # The dense cell is split twice around the cluster; the others are not split at all.
    assert len(grid) > 9 and grid.depth.max() == 2
    areas = (grid.bounds[:, 2] - grid.bounds[:, 0]) * (grid.bounds[:, 3] - grid.bounds[:, 1])
    assert areas.sum() == pytest.approx(9.0)
    idx = grid.locate(pts)
    assert np.all(idx >= 0)
    b = grid.bounds[idx]
    assert np.all((pts[:, 0] >= b[:, 0]) & (pts[:, 0] <= b[:, 2]))
    assert np.all((pts[:, 1] >= b[:, 1]) & (pts[:, 1] <= b[:, 3]))
    counts = np.bincount(idx, minlength=len(grid))
    # Every region still above the threshold is at the depth limit.
    assert np.all(grid.depth[counts > 100] == 2)
    assert grid.locate([[3.0, 3.0], [-0.1, 1.0]]).tolist()[1] == -1
    assert grid.locate([[3.0, 3.0]])[0] >= 0  # the far edge belongs to the grid
    plain = build_grid((0.0, 2.0, 0.0, 1.0), 0.5)
    assert len(plain) == 8 and np.allclose(plain.sizes, 0.5)
    summary = grid.to_dict()
    assert summary["n_regions"] == len(grid) and sum(summary["regions_per_depth"]) == len(grid)


def test_grid_validation():
    with pytest.raises(ParameterError, match="whole, positive number of cells"):
        build_grid((0.0, 2.5, 0.0, 1.0), 1.0)
    with pytest.raises(ParameterError, match="max_points is required"):
        build_grid((0.0, 1.0, 0.0, 1.0), 1.0, points=[[0.5, 0.5]])
    with pytest.raises(ParameterTypeError):
        build_grid([0.0, 1.0], 1.0)
    with pytest.raises(ParameterError, match="cell"):
        build_grid((0.0, 1.0, 0.0, 1.0), 0.0)


def test_scenario_validation():
    dom = Domain([[0.0], [1.0]])
    scn = LocalScenario("s", "t", dom, {"a": [0.5, 0.5], "b": [1.0, 0.0]}, (("a", "b"),))
    assert scn.pair(0) == ("a", "b") and scn.pair(("b", "a")) == ("b", "a")
    assert scn.to_dict()["pairs"] == [["a", "b"]]
    with pytest.raises(ParameterError, match="not one of the distributions"):
        LocalScenario("s", "t", dom, {"a": [0.5, 0.5]}, (("a", "c"),))
    with pytest.raises(ParameterError, match=r"distributions\['a'\] must sum to 1"):
        LocalScenario("s", "t", dom, {"a": [0.5, 0.6]}, (("a", "a"),))
    with pytest.raises(ParameterError, match="pair index"):
        scn.pair(3)
