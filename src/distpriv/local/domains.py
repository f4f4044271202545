"""Finite input/output domains with coordinates, the lifting A#(λ), grids and scenarios.

A local mechanism A: X → D(Y) maps each input point x (a location, a record) to a random
output y. Both sets are finite and carry coordinates, so that a metric d (Euclidean by
default) gives the utility loss d(x, y) and the XDP / W∞ geometry (Kawamoto & Murakami
2019a, §2). Distributions are probability vectors over X; the lifting of A is the matrix
product A#(λ) = λA (2019a, §2.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.distance import cdist

from ..divergences import check_distribution, check_stochastic_matrix
from ..errors import ParameterError, ParameterTypeError
from ..guarantees import to_jsonable
from ..util.records import field_values
from ..util.validation import check_array, check_choice, check_positive_int, check_real, readonly

__all__ = ["METRICS", "Domain", "Grid", "LocalScenario", "build_grid", "lift"]

#: Metrics on coordinates: Euclidean (default), Manhattan, Chebyshev.
METRICS: tuple[str, ...] = ("l2", "l1", "linf")
_CDIST: dict[str, Literal["cityblock", "euclidean", "chebyshev"]] = {
    "l1": "cityblock",
    "l2": "euclidean",
    "linf": "chebyshev",
}


def _points(value: object, name: str) -> np.ndarray:
    arr = check_array(value, name, ndim=(1, 2))
    return arr.reshape(-1, 1) if arr.ndim == 1 else arr


def _labels(value: object, name: str, n: int) -> tuple[str, ...]:
    if value is None:
        return tuple(str(i) for i in range(n))
    if isinstance(value, str) or not hasattr(value, "__len__"):
        raise ParameterTypeError(f"{name} must be a sequence of {n} strings, got {value!r}")
    # Anything with a length is accepted (lists, tuples, arrays, pandas indexes).
    labels = tuple(str(v) for v in cast("Iterable[object]", value))
    if len(labels) != n:
        raise ParameterError(f"{name} must have {n} entries (one per point), got {len(labels)}")
    return labels


@dataclass(frozen=True, eq=False)
class Domain:
    """Finite input set X and output set Y with coordinates and a metric.

    Parameters
    ----------
    inputs : array_like, shape (n_x, m) or (n_x,)
        Coordinates of the input points X (e.g. region centres in km).
    outputs : array_like, shape (n_y, m) or (n_y,), optional
        Coordinates of the output points Y; ``None`` means Y = X.
    metric : {"l2", "l1", "linf"}
        Metric d on the coordinates; Euclidean by default (KM 2019a, §7.1).
    input_labels, output_labels : sequence of str, optional
        Names of the points (default: their indices).

    Attributes
    ----------
    input_distances : ndarray, shape (n_x, n_x)
        d(x, x'), the metric of XDP and of W∞,d on D(X) (KM 2019a, Def. 4, Def. 6).
    """

    inputs: np.ndarray
    outputs: np.ndarray | None = None
    metric: str = "l2"
    input_labels: tuple[str, ...] | None = None
    output_labels: tuple[str, ...] | None = None
    #: ndarray, shape (n_x, n_y)
    #: d(x, y), the quality loss of reporting y for x (KM 2019a §6.3, 2019b Def. 17).
    distances: np.ndarray = field(init=False, repr=False)
    #: ndarray of int, shape (n_x,)
    #: The output closest to each input (the "true" answer of randomized response).
    nearest_output: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        x = _points(self.inputs, "inputs")
        y = x if self.outputs is None else _points(self.outputs, "outputs")
        if x.shape[1] != y.shape[1]:
            raise ParameterError(
                f"inputs and outputs must have the same number of coordinates; inputs have "
                f"{x.shape[1]}, outputs {y.shape[1]}"
            )
        metric = check_choice(self.metric, "metric", METRICS)
        dist = cdist(x, y, metric=_CDIST[metric])
        set_ = object.__setattr__
        set_(self, "inputs", readonly(x, dtype=None))
        set_(self, "outputs", readonly(y, dtype=None))
        set_(self, "input_labels", _labels(self.input_labels, "input_labels", x.shape[0]))
        out_labels = self.output_labels
        if out_labels is None and self.outputs is None:
            out_labels = self.input_labels
        set_(self, "output_labels", _labels(out_labels, "output_labels", y.shape[0]))
        set_(self, "distances", readonly(dist, dtype=None))
        set_(self, "nearest_output", readonly(np.argmin(dist, axis=1), dtype=None))

    @cached_property
    def input_distances(self) -> np.ndarray:
        """d(x, x'), shape (n_x, n_x): the metric of XDP and of W∞,d (computed on first use)."""
        return readonly(cdist(self.inputs, self.inputs, metric=_CDIST[self.metric]), dtype=None)

    @property
    def n_inputs(self) -> int:
        """|X|."""
        return int(self.inputs.shape[0])

    @property
    def n_outputs(self) -> int:
        """|Y|."""
        return int(self.outputs.shape[0])  # type: ignore[union-attr]

    def check_distribution(self, value: ArrayLike, name: str = "lam") -> np.ndarray:
        """Validate a distribution over X (shape ``(n_x,)`` or ``(batch, n_x)``)."""
        return check_distribution(value, name, size=self.n_inputs, ndim=(1, 2))

    def embed(self, lam: ArrayLike, name: str = "lam") -> np.ndarray:
        """Move a distribution over X onto Y, each input to its nearest output.

        Returns
        -------
        ndarray, shape (n_y,)
        """
        p = check_distribution(lam, name, size=self.n_inputs)
        out = np.zeros(self.n_outputs)
        np.add.at(out, self.nearest_output, p)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (sizes and metric, not the coordinates)."""
        return {
            "n_inputs": self.n_inputs,
            "n_outputs": self.n_outputs,
            "dimension": int(self.inputs.shape[1]),
            "metric": self.metric,
        }


def lift(matrix: ArrayLike, lam: ArrayLike) -> np.ndarray:
    """The lifting A#(λ) = λA: the distribution of A's output when x ~ λ (KM 2019a, §2.1).

    Parameters
    ----------
    matrix : array_like, shape (n_x, n_y)
        Row-stochastic matrix of A.
    lam : array_like, shape (n_x,) or (batch, n_x)
        Input distribution(s).

    Returns
    -------
    ndarray, shape (n_y,) or (batch, n_y)
    """
    a = check_stochastic_matrix(matrix, "matrix")
    p = check_distribution(lam, "lam", size=a.shape[0], ndim=(1, 2))
    return p @ a


# --------------------------------------------------------------------------------------------
# Grids of regions over a city area (KM 2019a, §7.1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Grid:
    """Rectangular regions tiling an area: a base grid, some cells split into quadrants."""

    #: ndarray, shape (n, 4)
    #: ``(x0, y0, x1, y1)`` of each region (e.g. in km).
    bounds: np.ndarray
    #: ndarray of int, shape (n,)
    #: 0 for a base cell, d for a cell split d times.
    depth: np.ndarray
    #: ``(x0, x1, y0, y1)`` of the whole area.
    extent: tuple[float, float, float, float]
    #: Side of a base cell.
    cell: float
    #: Largest depth allowed when the grid was built.
    max_depth: int
    _raster: np.ndarray = field(repr=False)

    @property
    def centers(self) -> np.ndarray:
        """Centre of each region, shape (n, 2)."""
        b = self.bounds
        return np.column_stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2])

    @property
    def sizes(self) -> np.ndarray:
        """Side length of each (square) region, shape (n,)."""
        return self.bounds[:, 2] - self.bounds[:, 0]

    def __len__(self) -> int:
        return int(self.bounds.shape[0])

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary: extent, cell size and the number of regions per depth."""
        return to_jsonable(
            {
                **field_values(self, "extent cell max_depth"),
                "n_regions": len(self),
                "regions_per_depth": np.bincount(self.depth, minlength=self.max_depth + 1),
            }
        )

    def locate(self, points: ArrayLike) -> np.ndarray:
        """Index of the region containing each point, or −1 outside the area.

        Parameters
        ----------
        points : array_like, shape (N, 2)

        Returns
        -------
        ndarray of int, shape (N,)
        """
        pts = check_array(points, "points", ndim=2, min_size=0)
        if pts.shape[1] != 2:
            raise ParameterError(f"points must have shape (N, 2), got {pts.shape}")
        x0, x1, y0, y1 = self.extent
        fine = self.cell / 2**self.max_depth
        nx, ny = self._raster.shape
        ix = np.floor((pts[:, 0] - x0) / fine).astype(np.int64)
        iy = np.floor((pts[:, 1] - y0) / fine).astype(np.int64)
        # The far edges belong to the last row/column of cells.
        ix = np.where(pts[:, 0] == x1, nx - 1, ix)
        iy = np.where(pts[:, 1] == y1, ny - 1, iy)
        inside = (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
        out = np.full(pts.shape[0], -1, dtype=np.int64)
        out[inside] = self._raster[ix[inside], iy[inside]]
        return out


def build_grid(
    extent: tuple[float, float, float, float],
    cell: float,
    *,
    points: ArrayLike | None = None,
    max_points: int | None = None,
    max_depth: int = 2,
) -> Grid:
    """Regions of fixed size over an area, optionally split recursively by density.

    The area is cut into square base cells of side ``cell``. With ``points`` (e.g. check-in
    locations) and ``max_points``, every region holding more than ``max_points`` points is
    split into four quadrants, recursively, at most ``max_depth`` times — the construction
    of KM 2019a, §7.1 (Manhattan: 11 × 10 regions of 1 km re-divided into 276 regions of
    roughly similar population), which keeps β = max_y A#(λ)[y] of Thm 3 small.

    Parameters
    ----------
    extent : (x0, x1, y0, y1)
        The area; its sides must be whole multiples of ``cell``.
    cell : float
        Side of the base cells (> 0).
    points : array_like, shape (N, 2), optional
        Points whose density drives the splitting.
    max_points : int, optional
        Split regions with more points than this (required with ``points``).
    max_depth : int
        Largest number of successive splits (≥ 0).

    Returns
    -------
    Grid
        Regions ordered by base cell (x, then y), quadrants in order (SW, NW, SE, NE).
    """
    if not isinstance(extent, tuple | list) or len(extent) != 4:
        raise ParameterTypeError(f"extent must be (x0, x1, y0, y1), got {extent!r}")
    x0, x1, y0, y1 = (check_real(v, "extent") for v in extent)
    c = check_real(cell, "cell", low=0.0, low_inclusive=False)
    depth_max = check_positive_int(max_depth, "max_depth", minimum=0)
    nx_f, ny_f = (x1 - x0) / c, (y1 - y0) / c
    nx, ny = round(nx_f), round(ny_f)
    if nx < 1 or ny < 1 or abs(nx - nx_f) > 1e-9 or abs(ny - ny_f) > 1e-9:
        raise ParameterError(
            f"extent {extent!r} must span a whole, positive number of cells of side {c:g}"
        )
    pts = None
    limit = 0
    if points is not None:
        pts = check_array(points, "points", ndim=2, min_size=0)
        if pts.shape[1] != 2:
            raise ParameterError(f"points must have shape (N, 2), got {pts.shape}")
        if max_points is None:
            raise ParameterError("max_points is required when points are given")
        limit = check_positive_int(max_points, "max_points", minimum=1)
        inside = (pts[:, 0] >= x0) & (pts[:, 0] <= x1) & (pts[:, 1] >= y0) & (pts[:, 1] <= y1)
        pts = pts[inside]
    elif max_points is not None:
        raise ParameterError("max_points needs points to count")

    # Raster of the finest cells; each holds the index of the region it belongs to.
    scale = 2**depth_max
    fine = c / scale
    rx, ry = nx * scale, ny * scale
    if pts is not None and pts.shape[0]:
        fx = np.clip(np.floor((pts[:, 0] - x0) / fine).astype(np.int64), 0, rx - 1)
        fy = np.clip(np.floor((pts[:, 1] - y0) / fine).astype(np.int64), 0, ry - 1)
        counts = np.zeros((rx, ry), dtype=np.int64)
        np.add.at(counts, (fx, fy), 1)
    else:
        counts = np.zeros((rx, ry), dtype=np.int64)

    regions: list[tuple[int, int, int]] = []  # (fine x index, fine y index, depth)

    def visit(ix: int, iy: int, d: int) -> None:
        span = scale >> d
        n = int(counts[ix : ix + span, iy : iy + span].sum())
        if pts is not None and d < depth_max and n > limit:
            half = span // 2
            for dx, dy in ((0, 0), (0, half), (half, 0), (half, half)):
                visit(ix + dx, iy + dy, d + 1)
        else:
            regions.append((ix, iy, d))

    for i in range(nx):
        for j in range(ny):
            visit(i * scale, j * scale, 0)

    raster = np.empty((rx, ry), dtype=np.int64)
    bounds = np.empty((len(regions), 4))
    depth = np.empty(len(regions), dtype=np.int64)
    for r, (ix, iy, d) in enumerate(regions):
        span = scale >> d
        raster[ix : ix + span, iy : iy + span] = r
        bounds[r] = (
            x0 + ix * fine,
            y0 + iy * fine,
            x0 + (ix + span) * fine,
            y0 + (iy + span) * fine,
        )
        depth[r] = d
    return Grid(
        bounds=readonly(bounds, dtype=None),
        depth=readonly(depth, dtype=None),
        extent=(x0, x1, y0, y1),
        cell=c,
        max_depth=depth_max,
        _raster=readonly(raster, dtype=None),
    )


# --------------------------------------------------------------------------------------------
# Scenarios: a domain, named distributions over X and the pairs to protect
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LocalScenario:
    """A domain with attribute-conditioned input distributions λ_t and the pairs to hide."""

    #: Registry name and a one-line description.
    name: str
    title: str
    #: X, Y and the metric.
    domain: Domain
    #: mapping of str to ndarray, shape (n_x,)
    #: λ_t for each attribute value t (e.g. ``"male"``, ``"female"``): what the attacker
    #: knows (KM 2019a §7.1).
    distributions: Mapping[str, np.ndarray]
    #: The pairs (λ₀, λ₁) to make indistinguishable.
    pairs: tuple[tuple[str, str], ...]
    #: mapping of str to ndarray, shape (n_x,)
    #: Approximate distributions λ̂_t from independent data, for the coupling mechanism
    #: (KM 2019b §VI); may be empty.
    estimates: Mapping[str, np.ndarray] = field(default_factory=dict)
    #: How the scenario was built (sources, seeds, hotspots).
    description: str = ""
    #: The parameters it was built with (seed, sizes).
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        dists = {
            str(k): readonly(self.domain.check_distribution(v, f"distributions[{k!r}]"), dtype=None)
            for k, v in self.distributions.items()
        }
        ests = {
            str(k): readonly(self.domain.check_distribution(v, f"estimates[{k!r}]"), dtype=None)
            for k, v in self.estimates.items()
        }
        for a, b in self.pairs:
            for t in (a, b):
                if t not in dists:
                    raise ParameterError(
                        f"pair ({a!r}, {b!r}) names {t!r}, which is not one of the "
                        f"distributions {sorted(dists)}"
                    )
        if not self.pairs:
            raise ParameterError("a scenario needs at least one pair of distributions")
        object.__setattr__(self, "distributions", MappingProxyType(dists))
        object.__setattr__(self, "estimates", MappingProxyType(ests))
        object.__setattr__(self, "pairs", tuple((str(a), str(b)) for a, b in self.pairs))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def pair(self, which: int | tuple[str, str] = 0) -> tuple[str, str]:
        """The pair ``which`` (an index into :attr:`pairs` or two names), validated."""
        if isinstance(which, tuple | list):
            if len(which) != 2 or any(t not in self.distributions for t in which):
                raise ParameterError(
                    f"pair must name two of {sorted(self.distributions)}, got {which!r}"
                )
            return str(which[0]), str(which[1])
        if isinstance(which, bool) or not isinstance(which, int | np.integer):
            raise ParameterTypeError(f"pair must be an index or two names, got {which!r}")
        if not 0 <= int(which) < len(self.pairs):
            raise ParameterError(
                f"pair index must be in [0, {len(self.pairs) - 1}], got {int(which)}"
            )
        return self.pairs[int(which)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary."""
        return to_jsonable(
            {
                "name": self.name,
                "title": self.title,
                "domain": self.domain.to_dict(),
                "distributions": sorted(self.distributions),
                "pairs": [list(p) for p in self.pairs],
                "estimates": sorted(self.estimates),
                "description": self.description,
                "params": dict(self.params),
            }
        )
