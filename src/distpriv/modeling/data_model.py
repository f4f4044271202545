"""The query model a table gives: :class:`DataQueryModel` and what every kind of secret's
model builder shares (the builders of the secret kinds — model.py's proportions,
model_mean.py, model_several.py — import it without importing the dispatcher
:func:`~distpriv.modeling.model.model_query`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..moment_uncertainty import BootstrapUncertainty, MomentUncertainty
from ..querymodel import GaussianQueryModel, SampledQueryModel
from .queries import Query
from .resampling import Resampling
from .secrets import ProportionSecret

__all__ = ["DataQueryModel", "ModelDesign"]


@dataclass(frozen=True)
class ModelDesign:
    """How a model's datasets are drawn from its modelling table (Chen & Ohrimenko 2023,
    App. C.1): n rows, the rows with the property under each θ, the strata they come from,
    how the moments were computed, and whether the table is the whole population.

    Attributes
    ----------
    method : {"montecarlo", "analytic"}
    subset_size : int
        n, the size of the protected dataset.
    counts : tuple of int
        Rows satisfying the predicate under each θ.
    stratum_sizes : tuple of int
        (N_A, N_B), rows satisfying / not satisfying the predicate in the table.
    population : bool
        The table was declared the whole population (finite-population correction).
    sampling : Resampling or None
        How the Monte Carlo datasets were drawn (``"full"`` strata or a ``"pool"``).
    """

    method: str
    subset_size: int
    counts: tuple[int, ...]
    stratum_sizes: tuple[int, ...]
    population: bool = True
    sampling: Resampling | None = None


@dataclass(frozen=True, init=False)
class DataQueryModel(GaussianQueryModel):
    """A Gaussian query model estimated from a table, with its samples and diagnostics.

    A :class:`GaussianQueryModel` (so it goes straight into :func:`distpriv.calibrate`)
    whose ``fitted`` text says how it was estimated. ``method``, ``subset_size``, ``counts``,
    ``stratum_sizes``, ``sampling`` and ``population`` say how its datasets are drawn from the
    table (:class:`ModelDesign`, given to the constructor as ``design``). Extra attributes:

    Attributes
    ----------
    facts : TableFacts or None
        Public facts about the modelling table (computed on first use) that mechanisms'
        default options come from (:func:`distpriv.modeling.facts.engine_table_facts`):
        the per-row span of each statistic (group-DP baselines) and the lattice step of
        each statistic (the floored mechanisms, :mod:`distpriv.modeling.lattice`).
        :func:`distpriv.calibrate` and ``auto`` fill options the caller does not set from
        them, so the library, the configuration path and ``auto`` calibrate the same
        mechanism the same way. ``None`` for statistics that are not linear.
    """

    #: tuple of ndarray or None
    #: Monte Carlo draws of F per θ, shape (n_samples, m) each (``None`` for analytic).
    samples: tuple[np.ndarray, ...] | None
    #: ``covariance_gap`` (relative Frobenius difference per pair), ``variance_ratio``
    #: (largest/smallest variance of each statistic across a pair), ``skewness`` and
    #: ``excess_kurtosis`` (per θ and statistic), ``gaussian_se`` (their standard errors
    #: under Gaussianity), ``parallel_residual`` (largest relative part of a mean
    #: difference outside the first difference's direction), ``mean_difference_l2``.
    diagnostics: dict[str, Any]
    #: ``"montecarlo"`` or ``"analytic"``.
    method: str
    #: n, the size of the protected dataset.
    subset_size: int
    #: Rows satisfying the predicate under each θ.
    counts: tuple[int, ...]
    #: (N_A, N_B), rows satisfying / not satisfying the predicate in the table.
    stratum_sizes: tuple[int, int]
    secret: ProportionSecret
    query: Query
    #: How the Monte Carlo datasets were drawn (``"full"`` strata or a ``"pool"``);
    #: ``None`` for analytic moments.
    sampling: Resampling | None
    #: ``True`` when the modelling table was declared to be the whole population (the
    #: finite-population correction is taken against it, and the moments are exact);
    #: ``False`` (the default of :func:`model_query`) when it is a sample of the
    #: population: then ``uncertainty`` says how well the moments are known.
    population: bool

    def __init__(
        self,
        means: Any,
        covariances: Any,
        *,
        secret: ProportionSecret,
        query: Query,
        design: ModelDesign,
        samples: tuple[np.ndarray, ...] | None,
        diagnostics: dict[str, Any],
        fitted: str,
        uncertainty: MomentUncertainty | BootstrapUncertainty | None = None,
        facts: Any = None,
    ) -> None:
        super().__init__(
            means,
            covariances,
            secret.pairs,
            labels=secret.values,
            statistics=query.names,
            fitted=fitted,
            uncertainty=uncertainty,
        )
        # The design's fields are the model's own attributes (model.subset_size, ...).
        for name, value in (
            ("samples", samples),
            ("diagnostics", diagnostics),
            ("method", design.method),
            ("subset_size", design.subset_size),
            ("counts", design.counts),
            ("stratum_sizes", design.stratum_sizes),
            ("secret", secret),
            ("query", query),
            ("sampling", design.sampling),
            ("population", bool(design.population)),
        ):
            object.__setattr__(self, name, value)
        # Computed on first use (only mechanisms with default options need them), so that
        # building a model costs the engine no more round trips than its moments.
        pending = facts if callable(facts) else None
        object.__setattr__(self, "_facts", None if pending is not None else facts)
        object.__setattr__(self, "_facts_pending", pending)

    @property
    def facts(self) -> Any:
        """The modelling table's facts (``TableFacts`` or ``None``), computed once on first use."""
        pending = self.__dict__.get("_facts_pending")
        if pending is not None:
            object.__setattr__(self, "_facts", pending())
            object.__setattr__(self, "_facts_pending", None)
        return self.__dict__.get("_facts")

    def to_sampled(self) -> SampledQueryModel:
        """The Monte Carlo draws as a :class:`SampledQueryModel` (for the Wasserstein family)."""
        if self.samples is None:
            raise ParameterError(
                "this model was computed with method='analytic' and has no samples; use "
                "method='montecarlo' for the Wasserstein mechanisms"
            )
        return SampledQueryModel(
            self.samples, self.pairs, labels=self.labels, statistics=self.statistics
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (without the samples)."""
        from ..guarantees import to_jsonable

        out = super().to_dict()
        out.update(
            {
                "type": "data",
                "method": self.method,
                "subset_size": self.subset_size,
                "counts": list(self.counts),
                "stratum_sizes": list(self.stratum_sizes),
                "n_samples": None if self.samples is None else int(self.samples[0].shape[0]),
                "secret": self.secret.to_dict(),
                "query": self.query.to_dict(),
                "diagnostics": to_jsonable(self.diagnostics),
                "sampling": None if self.sampling is None else self.sampling.to_dict(),
                "population": self.population,
            }
        )
        return out


def _as_query(query: Any) -> Query:
    if isinstance(query, Query):
        return query
    if isinstance(query, Mapping | Sequence) and not isinstance(query, str):
        return Query(query)
    raise ParameterTypeError(
        f"query must be a Query or a mapping of SQL aggregates, got {type(query).__name__}"
    )


def _facts_thunk(table: Any, q: Query, n: int, missing: str) -> Any:
    """What computes the table's facts for default options (spans, lattices) on first use:
    ``None`` when the statistics are not linear or a span is not finite (a mechanism that
    needs them then says so when it is calibrated)."""
    if not q.is_linear:
        return None

    def compute() -> Any:
        from .facts import engine_table_facts

        try:
            return engine_table_facts(table, q, n, missing=missing)
        except ParameterError:
            return None

    return compute
