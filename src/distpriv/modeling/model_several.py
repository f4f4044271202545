"""The query model of several secrets at once: each attribute's model, stacked.

Zhang, Ohrimenko & Cummings 2022, §3 (a set C of sensitive attributes); Chen & Ohrimenko
2023, §2 and App. C.1. Under the hypothesis "attribute i's share is p" a dataset has
round(p·n) rows satisfying i's predicate and the rest not, and is otherwise drawn as the
population falls — the other attributes are not conditioned on. So attribute i's block of
the model is exactly :func:`~distpriv.modeling.model.model_query` of its own
:class:`~distpriv.modeling.secrets.ProportionSecret`, and the several-attribute model is
the blocks stacked, with pairs only within a block.

The population layer (:class:`~distpriv.moment_uncertainty.MomentUncertainty`) expresses this
directly: its strata are each attribute's two strata (rows with / without the attribute's
property; the strata of different attributes overlap, those of one attribute are
disjoint), and a hypothesis of attribute i weighs only i's two strata. A pair's mean gap
then involves only its attribute's two (independent) strata, as for one proportion
secret; the confidence set covers every attribute's pairs at once
(:func:`distpriv.population.confidence.confidence_set` counts the independent gap directions,
one per attribute, and takes its Scheffé radius at level β/(2·directions), Bonferroni over
attributes; the variance factors are Bonferroni over all 2·|C|·m strata and statistics).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..moment_uncertainty import MomentUncertainty
from ..util.validation import check_choice
from .data_model import DataQueryModel, ModelDesign, _as_query, _facts_thunk
from .model_diagnostics import _diagnostics
from .secret_several import SeveralSecrets
from .tables import as_table, check_missing_policy

__all__ = ["SeveralQueryModel", "several_model"]


@dataclass(frozen=True, init=False)
class SeveralQueryModel(DataQueryModel):
    """A :class:`~distpriv.modeling.model.DataQueryModel` of several secrets at once.

    Its labels are the :class:`~distpriv.modeling.secret_several.AttributeValue`'s of the
    secret, its pairs the union of each attribute's pairs. ``counts`` are the rows with
    each value's own attribute, ``stratum_sizes`` the (with, without) rows of each
    attribute in turn (length 2·|C|).
    """

    #: Each attribute's own model (stratified on its predicate only), in order.
    parts: tuple[DataQueryModel, ...]

    def __init__(self, parts: tuple[DataQueryModel, ...], *, secret: SeveralSecrets, **kw: Any):
        super().__init__(secret=cast(Any, secret), **kw)
        object.__setattr__(self, "parts", parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (without the samples), with each attribute's model."""
        out = super().to_dict()
        out["type"] = "several"
        out["attributes"] = [
            {
                "predicate": p.secret.predicate,
                "counts": list(p.counts),
                "stratum_sizes": list(p.stratum_sizes),
            }
            for p in self.parts
        ]
        return out


def _joint_uncertainty(parts: tuple[DataQueryModel, ...]) -> MomentUncertainty | None:
    """Each attribute's strata side by side; a hypothesis weighs only its own attribute's."""
    uncs = [p.uncertainty for p in parts]
    if any(u is None for u in uncs):
        return None
    us = cast(list[MomentUncertainty], uncs)
    n_theta = sum(u.weights.shape[0] for u in us)
    n_strata = sum(len(u.stratum_sizes) for u in us)
    weights = np.zeros((n_theta, n_strata))
    r = c = 0
    for u in us:
        k, s = u.weights.shape
        weights[r : r + k, c : c + s] = u.weights
        r, c = r + k, c + s
    return MomentUncertainty(
        [n for u in us for n in u.stratum_sizes],
        weights,
        np.concatenate([u.row_covariances for u in us]),
        np.concatenate([u.kurtosis for u in us]),
        method=us[0].method + ", per attribute (each attribute's two strata)",
    )


def several_model(
    data: Any,
    query: Any,
    secret: SeveralSecrets,
    *,
    build: Callable[..., DataQueryModel],
    method: str = "analytic",
    missing: str = "error",
    population: bool = False,
) -> SeveralQueryModel:
    """:func:`~distpriv.modeling.model.model_query` for a :class:`SeveralSecrets`.

    ``method``, ``missing`` and ``population`` as for
    :func:`~distpriv.modeling.model.model_query`; ``build(table, query, attribute,
    missing=...)``: what models one attribute's proportion secret with the call's other
    options (n, Monte Carlo datasets, their generator, row pool) — ``model_query`` itself
    with them bound, passed in so this module does not import its dispatcher. Rows with a
    missing value in any column of the statistics or of any attribute's predicate are
    handled once, for all attributes (``missing="drop"`` drops them from every block), so
    every block is modelled on the same rows. Monte Carlo blocks draw from one generator
    in turn.

    Returns
    -------
    SeveralQueryModel
        k = Σ_i k_i hypotheses (attribute by attribute), the blocks' means and
        covariances stacked, pairs the union of each attribute's pairs, ``uncertainty``
        the attributes' strata side by side (module docstring).
    """
    q = _as_query(query)
    policy = check_missing_policy(missing)
    meth = check_choice(method, "method", ("montecarlo", "analytic"))
    table = as_table(data)
    q.check_columns(table)
    for a in secret.attributes:
        a.parsed.check_columns(table.columns)
    table, report = table.complete(
        q.columns | secret.columns, missing=policy, what="modelling data"
    )
    # Missing values are handled above, once for every attribute.
    parts = tuple(build(table, q, a, missing="error") for a in secret.attributes)
    means = np.concatenate([p.means for p in parts])
    covs = np.concatenate([p.covariances for p in parts])
    index = {v: i for i, v in enumerate(secret.values)}
    pairs_idx = tuple((index[a], index[b]) for a, b in secret.pairs)
    samples = None if parts[0].samples is None else tuple(s for p in parts for s in p.samples or ())
    if samples is None:
        shape = tuple(
            np.concatenate([p.diagnostics[key] for p in parts])
            for key in ("skewness", "excess_kurtosis")
        )
        diagnostics = _diagnostics(means, covs, None, pairs_idx, shape=(shape[0], shape[1]))
    else:
        diagnostics = _diagnostics(means, covs, list(samples), pairs_idx)
    diagnostics["missing"] = report.to_dict()
    diagnostics["attributes"] = [p.diagnostics for p in parts]
    first = parts[0]
    return SeveralQueryModel(
        parts,
        secret=secret,
        means=means,
        covariances=covs,
        query=q,
        samples=samples,
        design=ModelDesign(
            method=meth,
            subset_size=first.subset_size,
            counts=tuple(c for p in parts for c in p.counts),
            stratum_sizes=tuple(s for p in parts for s in p.stratum_sizes),
            population=population,
            sampling=first.sampling,
        ),
        diagnostics=diagnostics,
        fitted=(
            f"{len(parts)} attributes, each modelled conditional on its own secret only "
            f"(stratified on its own predicate; the other attributes as in the population): "
            + (first.fitted or "")
        ),
        uncertainty=_joint_uncertainty(parts),
        facts=_facts_thunk(table, q, first.subset_size, policy),
    )
