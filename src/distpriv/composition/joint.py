"""The joint query model of stacked releases: what the accountant is evaluated on.

Releases of the same data are correlated through the data, so their composition is the
guarantee of one mechanism on the stacked query F = (F₁, …, F_R) (Chen & Ohrimenko 2023,
Thm 4.5 / Cor. A.1 and Thm 3.1 applied to it). Its query model must hold the
cross-covariances between the releases' statistics, so it is one model of all of them from
the same datasets — built here from a :class:`JointModelling`: the modelling table and how
to model it, or the caller's own builder (the pipeline passes its one builder of query
models, so the joint model is built like the release's own).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .events import ReleaseSpec

__all__ = ["JointModelling", "joint_model"]


@dataclass(frozen=True)
class JointModelling:
    """How the joint model of the stacked releases is built from their modelling table."""

    #: The modelling data of the newest release.
    model_data: Any
    #: n, rows of the released dataset.
    subset_size: int
    #: {"analytic", "montecarlo"}
    #: Exact moments (linear statistics only) or Monte Carlo datasets; statistics that
    #: are not linear are always modelled by Monte Carlo, and the Laplace family always
    #: uses ``n_samples`` Monte Carlo datasets.
    method: str = "analytic"
    #: Monte Carlo datasets per value of the secret.
    n_samples: int = 1000
    #: Randomness of the modelling (never of any published noise).
    rng: np.random.Generator | int | None = None
    #: The modelling table is the whole population (finite-population correction), as
    #: for :func:`distpriv.model_query`.
    population: bool = False
    #: ``build(query, secret, method)``: the caller's builder of the joint model (the
    #: pipeline's one builder, with the release's own model specification: method, Monte
    #: Carlo datasets, seed, population, missing-value rule, bootstrap, row pool);
    #: without one, :func:`distpriv.model_query` with the fields above.
    build: Callable[[Any, Any, str], Any] | None = None

    def model(self, query: Any, secret: Any, method: str) -> Any:
        """The query model of ``query`` under ``secret`` by ``method``."""
        if self.build is not None:
            return self.build(query, secret, method)
        from ..modeling import model_query

        return model_query(
            self.model_data,
            query,
            secret,
            subset_size=self.subset_size,
            method=method,
            n_samples=self.n_samples,
            rng=self.rng,
            population=self.population,
        )


def _stacked_query(specs: Sequence[ReleaseSpec]) -> dict[str, str]:
    return {f"r{r}.{name}": expr for r, s in enumerate(specs) for name, expr in s.statistics}


def joint_model(
    specs: Sequence[ReleaseSpec], *, secret: Any, modelling: JointModelling, method: str
) -> tuple[Any, tuple[str, ...]]:
    """The query model of every release's statistics stacked, from one table.

    A :class:`~distpriv.modeling.Query` with the statistics of all the releases (renamed
    ``r<k>.<name>``, so a statistic released twice appears twice) modelled as
    ``modelling`` says, by ``method`` (Monte Carlo when a statistic is not linear): the
    cross-covariances between releases come from the same datasets. Warnings of the
    modelling (non-Gaussian shape) are returned as notes.

    Returns
    -------
    (DataQueryModel, tuple of str)
    """
    from ..modeling import Query

    query = Query(_stacked_query(specs))
    meth = method if (method == "montecarlo" or query.is_linear) else "montecarlo"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = modelling.model(query, secret, meth)
    notes = tuple(dict.fromkeys(str(w.message) for w in caught))
    return model, notes
