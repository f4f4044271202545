"""Query models: the distribution f_θ of the released statistics under each θ, and Ψ.

Chen & Ohrimenko 2023 §3 and App. C.1: mechanisms are calibrated from f_θ, given either as
samples (the Wasserstein family) or as a Gaussian N(μ_θ, Σ_θ) (the Expected Value family).
Later layers (``distpriv.modeling``) build these objects from data; here they are plain,
validated, immutable containers.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ParameterError, ParameterTypeError
from .moment_uncertainty import BootstrapUncertainty, MomentUncertainty
from .util.validation import check_array, check_covariance, readonly

__all__ = ["GaussianQueryModel", "SampledQueryModel"]


def _resolve_labels(labels: Sequence[Hashable] | None, k: int) -> tuple[Hashable, ...]:
    if labels is None:
        return tuple(range(k))
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise ParameterTypeError(f"labels must be a sequence, got {type(labels).__name__}")
    labels = tuple(labels)
    if len(labels) != k:
        raise ParameterError(f"labels must have one entry per theta ({k}), got {len(labels)}")
    if len(set(labels)) != k:
        raise ParameterError(f"labels must be distinct, got {labels!r}")
    return labels


def _resolve_pairs(
    pairs: Sequence[Sequence[Hashable]] | None, labels: tuple[Hashable, ...]
) -> tuple[tuple[int, int], ...]:
    """Pairs as index pairs; labels take precedence over positions; unordered, deduplicated."""
    k = len(labels)
    if pairs is None:
        return tuple((i, j) for i in range(k) for j in range(i + 1, k))
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise ParameterTypeError(f"pairs must be a sequence of pairs, got {pairs!r}")
    where = {lab: i for i, lab in enumerate(labels)}
    out: list[tuple[int, int]] = []
    seen: set[frozenset[int]] = set()
    for pair in pairs:
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ParameterError(f"each entry of pairs must be a pair (a, b), got {pair!r}")
        idx = []
        for item in pair:
            if isinstance(item, Hashable) and item in where:
                idx.append(where[item])
            elif (
                isinstance(item, int | np.integer)
                and not isinstance(item, bool)
                and (0 <= int(item) < k)
            ):
                idx.append(int(item))
            else:
                raise ParameterError(
                    f"pairs entry {pair!r}: {item!r} is neither a label {list(labels)!r} "
                    f"nor an index in [0, {k})"
                )
        if idx[0] == idx[1]:
            raise ParameterError(f"pairs entry {pair!r} pairs a theta with itself")
        key = frozenset(idx)
        if key not in seen:
            seen.add(key)
            out.append((idx[0], idx[1]))
    if not out:
        raise ParameterError("pairs must contain at least one pair")
    return tuple(out)


def _resolve_statistics(statistics: Sequence[str] | None, m: int) -> tuple[str, ...]:
    if statistics is None:
        return tuple(f"stat{i}" for i in range(m))
    if isinstance(statistics, str) or not isinstance(statistics, Sequence):
        raise ParameterTypeError(f"statistics must be a sequence of names, got {statistics!r}")
    names = tuple(str(s) for s in statistics)
    if len(names) != m:
        raise ParameterError(f"statistics must name each of the {m} statistics, got {len(names)}")
    return names


class _PairsMixin:
    labels: tuple[Hashable, ...]
    pairs: tuple[tuple[int, int], ...]

    if TYPE_CHECKING:
        # Every model that mixes this in defines it; declared for the type checker only.
        def to_dict(self) -> dict[str, Any]: ...

    def _repr_html_(self) -> str:
        """Compact HTML summary for Jupyter: labels, statistics and means per hypothesis."""
        from .util.templates import repr_model

        return repr_model(self.to_dict())

    @property
    def n_thetas(self) -> int:
        """Number of hypotheses θ."""
        return len(self.labels)

    @property
    def pair_labels(self) -> tuple[tuple[str, str], ...]:
        """Ψ as pairs of label strings."""
        return tuple((str(self.labels[i]), str(self.labels[j])) for i, j in self.pairs)

    @property
    def pair_index(self) -> np.ndarray:
        """Ψ as an int array of shape (p, 2)."""
        return np.asarray(self.pairs, dtype=np.intp).reshape(-1, 2)


@dataclass(frozen=True, init=False)
class GaussianQueryModel(_PairsMixin):
    """f_θ = N(μ_θ, Σ_θ) for each θ, and the pairs Ψ to protect.

    Parameters
    ----------
    means : array_like, shape (k, m)
        μ_θ for each of the k hypotheses.
    covariances : array_like, shape (m, m) or (k, m, m)
        Σ_θ (one shared matrix, or one per θ); symmetric positive semi-definite.
    pairs : sequence of pairs, optional
        Ψ, as label pairs or index pairs (labels take precedence). Each pair is protected
        in both directions. Default: every pair of distinct θ.
    labels : sequence of hashable, optional
        Names of the θ (e.g. the secret values 0.45, 0.55). Default: 0..k-1.
    statistics : sequence of str, optional
        Names of the m statistics.
    fitted : str, optional
        How the Gaussian was fitted, when it approximates f_θ rather than being given
        (e.g. "sample mean and covariance of 1000 subsets"). Mechanisms then report the
        Gaussian assumption as unverified, with this text.
    uncertainty : MomentUncertainty or BootstrapUncertainty, optional
        The sampling uncertainty of the moments when they are estimated from a modelling
        table that is a sample of the population (set by :func:`distpriv.model_query`:
        central-limit laws for linear statistics, a bootstrap for the others).
        The default (exact) calibration then holds on the population with confidence
        1 − β (:mod:`distpriv.population.confidence`). ``None``: the moments are taken as exact.

    Examples
    --------
    Chen & Ohrimenko 2023, example after Thm 4.5:

    >>> model = GaussianQueryModel([[100, 101], [99, 102]], [[22, -6], [-6, 13]])
    >>> model.mean_differences
    array([[ 1., -1.]])
    """

    means: np.ndarray
    covariances: np.ndarray
    pairs: tuple[tuple[int, int], ...]
    labels: tuple[Hashable, ...]
    statistics: tuple[str, ...]
    fitted: str | None
    uncertainty: MomentUncertainty | BootstrapUncertainty | None

    def __init__(
        self,
        means: Any,
        covariances: Any,
        pairs: Sequence[Sequence[Hashable]] | None = None,
        *,
        labels: Sequence[Hashable] | None = None,
        statistics: Sequence[str] | None = None,
        fitted: str | None = None,
        uncertainty: MomentUncertainty | BootstrapUncertainty | None = None,
    ) -> None:
        mu = check_array(means, "means", ndim=2)
        k, m = mu.shape
        if k < 2:
            raise ParameterError(f"means must have at least two rows (thetas), got {k}")
        cov = check_covariance(covariances, "covariances", dim=m)
        if cov.ndim == 2:
            cov = np.broadcast_to(cov, (k, m, m))
        elif cov.shape[0] != k:
            raise ParameterError(
                f"covariances must have shape ({m}, {m}) or ({k}, {m}, {m}), got {cov.shape}"
            )
        labs = _resolve_labels(labels, k)
        object.__setattr__(self, "means", readonly(mu))
        object.__setattr__(self, "covariances", readonly(cov))
        object.__setattr__(self, "labels", labs)
        object.__setattr__(self, "pairs", _resolve_pairs(pairs, labs))
        object.__setattr__(self, "statistics", _resolve_statistics(statistics, m))
        if fitted is not None and not isinstance(fitted, str):
            raise ParameterTypeError(f"fitted must be a string or None, got {fitted!r}")
        object.__setattr__(self, "fitted", fitted)
        if isinstance(uncertainty, BootstrapUncertainty):
            n_pairs = len(self.pairs)
            if uncertainty.dim != m or uncertainty.gap_covariances.shape[0] != n_pairs:
                raise ParameterError(
                    f"uncertainty describes {uncertainty.gap_covariances.shape[0]} pairs and "
                    f"{uncertainty.dim} statistics; the model has {n_pairs} and {m}"
                )
        elif uncertainty is not None:
            if not isinstance(uncertainty, MomentUncertainty):
                raise ParameterTypeError(
                    f"uncertainty must be a MomentUncertainty, a BootstrapUncertainty or None, "
                    f"got {type(uncertainty).__name__}"
                )
            if uncertainty.weights.shape[0] != k or uncertainty.dim != m:
                raise ParameterError(
                    f"uncertainty describes {uncertainty.weights.shape[0]} thetas and "
                    f"{uncertainty.dim} statistics; the model has {k} and {m}"
                )
        object.__setattr__(self, "uncertainty", uncertainty)

    @property
    def dim(self) -> int:
        """Number m of statistics."""
        return int(self.means.shape[1])

    @property
    def mean_differences(self) -> np.ndarray:
        """μ_i − μ_j for each pair, shape (p, m)."""
        idx = self.pair_index
        return self.means[idx[:, 0]] - self.means[idx[:, 1]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            "type": "gaussian",
            "labels": [str(x) for x in self.labels],
            "statistics": list(self.statistics),
            "means": self.means.tolist(),
            "covariances": self.covariances.tolist(),
            "pairs": [list(p) for p in self.pair_labels],
            "fitted": self.fitted,
            "uncertainty": None if self.uncertainty is None else self.uncertainty.to_dict(),
        }


@dataclass(frozen=True, init=False)
class SampledQueryModel(_PairsMixin):
    """f_θ given by samples (an empirical distribution per θ), and the pairs Ψ.

    Parameters
    ----------
    samples : sequence of array_like, each shape (n_θ, m), or array of shape (k, n, m)
        Draws of F(Data) for Data ~ θ. 1-D arrays are read as m = 1.
    pairs, labels, statistics
        As for :class:`GaussianQueryModel`.
    """

    samples: tuple[np.ndarray, ...]
    pairs: tuple[tuple[int, int], ...]
    labels: tuple[Hashable, ...]
    statistics: tuple[str, ...]

    def __init__(
        self,
        samples: Any,
        pairs: Sequence[Sequence[Hashable]] | None = None,
        *,
        labels: Sequence[Hashable] | None = None,
        statistics: Sequence[str] | None = None,
    ) -> None:
        if isinstance(samples, np.ndarray) or (
            isinstance(samples, Sequence) and not isinstance(samples, str)
        ):
            seq = list(samples)
        else:
            raise ParameterTypeError(
                f"samples must be a sequence of (n, m) arrays, got {type(samples).__name__}"
            )
        if len(seq) < 2:
            raise ParameterError(f"samples must hold at least two thetas, got {len(seq)}")
        arrays = []
        for i, s in enumerate(seq):
            a = check_array(s, f"samples[{i}]", ndim=(1, 2))
            arrays.append(a.reshape(-1, 1) if a.ndim == 1 else a)
        m = arrays[0].shape[1]
        for i, a in enumerate(arrays):
            if a.shape[1] != m:
                raise ParameterError(
                    f"samples[{i}] has {a.shape[1]} statistics, samples[0] has {m}"
                )
        labs = _resolve_labels(labels, len(arrays))
        object.__setattr__(self, "samples", tuple(readonly(a) for a in arrays))
        object.__setattr__(self, "labels", labs)
        object.__setattr__(self, "pairs", _resolve_pairs(pairs, labs))
        object.__setattr__(self, "statistics", _resolve_statistics(statistics, m))

    @property
    def dim(self) -> int:
        """Number m of statistics."""
        return int(self.samples[0].shape[1])

    @property
    def means(self) -> np.ndarray:
        """Sample means, shape (k, m)."""
        return np.stack([s.mean(axis=0) for s in self.samples])

    @property
    def mean_differences(self) -> np.ndarray:
        """Differences of sample means for each pair, shape (p, m)."""
        mu = self.means
        idx = self.pair_index
        return mu[idx[:, 0]] - mu[idx[:, 1]]

    def to_gaussian(self) -> GaussianQueryModel:
        """Gaussian fit N(sample mean, sample covariance) per θ (Chen & Ohrimenko App. C.1)."""
        for i, s in enumerate(self.samples):
            if s.shape[0] < 2:
                raise ParameterError(
                    f"samples[{i}] has {s.shape[0]} draw(s); a Gaussian fit needs at least 2"
                )
        covs = np.stack([np.atleast_2d(np.cov(s, rowvar=False, ddof=1)) for s in self.samples])
        sizes = ", ".join(str(s.shape[0]) for s in self.samples)
        return GaussianQueryModel(
            self.means,
            covs,
            self.pairs,
            labels=self.labels,
            statistics=self.statistics,
            fitted=f"sample mean and covariance of samples of sizes {sizes} "
            "(Chen & Ohrimenko 2023, App. C.1)",
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (sizes and means, not the samples)."""
        return {
            "type": "sampled",
            "labels": [str(x) for x in self.labels],
            "statistics": list(self.statistics),
            "sizes": [int(s.shape[0]) for s in self.samples],
            "means": self.means.tolist(),
            "pairs": [list(p) for p in self.pair_labels],
        }
