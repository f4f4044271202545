"""Model, calibrate, compute F on the data, add noise: one protected release end to end.

The library entry point :func:`release`; the CLI and :func:`distpriv.pipeline.run_release`
add configuration, provenance, checks and the two reports on top of it.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...central import (
    CalibratedMechanism,
    mechanism_info,
)
from ...errors import AssumptionWarning, ParameterError, PrivacyLeakWarning
from ...guarantees import Release, to_jsonable
from ...modeling import DataQueryModel, Query, Secret
from ...modeling.bootstrap import DEFAULT_BOOTSTRAP
from ...modeling.tables import Table, as_table
from ...util.validation import check_positive_int, check_rng
from ..plan import ModelSpec, ReleasePlan, keyword_plan
from ..stages.calibrate import AUTO, calibrate_planned
from ..stages.data import check_model_support, warn_overlap_tables
from ..stages.model import build_query_model

__all__ = [
    "ReleaseReport",
    "build_model",
    "method_for",
    "release",
    "release_warnings",
    "warn_partial_noise",
]


class _NamedStatistics:
    """The part of a :class:`~distpriv.modeling.Query` a public report reads, for a model
    built by hand (statistics known by name only, no declared ranges)."""

    def __init__(self, names: Any) -> None:
        from types import SimpleNamespace

        self.statistics = tuple(SimpleNamespace(name=n, expression=None) for n in names)
        self.ranges: dict[str, tuple[float, float]] = {}

    def clamp(self, value: Any) -> tuple[np.ndarray, np.ndarray]:
        v = np.asarray(value, dtype=float)
        return v, np.zeros(v.shape, dtype=bool)

    def range_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        m = len(self.statistics)
        return np.full(m, -np.inf), np.full(m, np.inf)


@dataclass(frozen=True)
class ReleaseReport:
    """A protected release with everything the curator needs to audit it."""

    #: The noisy statistics and their guarantee (what may be published).
    release: Release
    mechanism: CalibratedMechanism
    #: The query model the mechanism was calibrated on (curator only: its moments and
    #: stratum sizes are facts about the modelling table that no guarantee covers).
    model: DataQueryModel = field(repr=False)
    #: ndarray, shape (m,)
    #: F(data), never published.
    true_value: np.ndarray = field(repr=False)  # never in a display that may be shared
    #: Rows of the released dataset.
    n_rows: int
    #: ``mechanism="auto"``: the comparison of the candidates.
    choice: Any = field(default=None, repr=False)
    #: (one-line text, category name) of each distinct warning raised while the release
    #: was made (they are also emitted as Python warnings). :meth:`to_dict` states those
    #: that the public report of ``distpriv release`` states, in the same public words
    #: (:func:`distpriv.pipeline.report.public_warnings`); :meth:`diagnostics` all of them.
    warnings: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: The secret as given (``None``: the model's).
    secret: Any = field(default=None, repr=False)  # as given (default: the model's)
    #: The public ``"ledger"`` block (:func:`~distpriv.release_with_ledger` sets it).
    ledger: dict[str, Any] | None = field(default=None, repr=False)  # the public block
    #: The calibration's confidence on the population (per-attribute guarantees).
    beta: float | None = field(default=0.05, repr=False)  # the calibration's, per attribute

    def _repr_html_(self) -> str:
        """The publishable part as compact HTML (for notebooks); never the true values:
        each statistic with its noise and the 95 % interval of the noise around the
        released value, as in the public report of ``distpriv release``."""
        from ...util.templates import repr_report

        return repr_report(self.to_dict(), private_hidden=True, private_method=".diagnostics()")

    def to_dict(self) -> dict[str, Any]:
        """The publishable part in the layout of ``distpriv release --json``.

        The same keys from the same function (:func:`distpriv.pipeline.report.public_release`):
        ``kind``, ``title``, ``secure_noise``, ``secret``, ``statistics`` (name,
        expression, value, noise sd, 95 % interval), ``mechanism``, ``guarantee``,
        ``verification`` (None), ``ledger`` (the composed guarantee of
        :func:`~distpriv.release_with_ledger`, or a note that nothing was recorded),
        ``choice`` (``mechanism="auto"``), ``provenance`` (no data fingerprints: the
        library holds no identity key), ``not_private`` for a seeded release, and
        ``warnings`` in public words.
        """
        from ..report import provenance, public_release, public_warnings

        secret = self.secret if self.secret is not None else getattr(self.model, "secret", None)
        query: Any = getattr(self.model, "query", None)
        if query is None:  # a model given by hand: its statistics' names are all there is
            query = _NamedStatistics(self.release.statistics)
        prov = provenance(
            rel=self.release, data_sha256=None, model_data_sha256=None, insecure_seed=None
        )
        with warnings.catch_warnings():  # raised once already, when the release was made
            warnings.simplefilter("ignore")
            public = public_release(
                title="release" if secret is None else f"release: {secret.describe()}",
                secret=secret,
                query=query,
                rel=self.release,
                mech=self.mechanism,
                prov=prov,
            )
            if hasattr(self.model, "parts"):  # several secrets: the guarantee per attribute
                from ..report_several import attribute_guarantees

                public["secret"]["attributes"] = attribute_guarantees(
                    public["secret"]["attributes"], self.model, self.mechanism, beta=self.beta
                )
        if self.ledger is not None:
            public["ledger"] = self.ledger
        else:
            from ..ledger.records import not_recorded

            public["ledger"] = not_recorded("distpriv.release (no ledger given)")
        if self.choice is not None:  # mechanism = "auto": the comparison behind the choice
            public |= self.choice.public()
        public["warnings"] = public_warnings(self.warnings)
        return to_jsonable(public)

    def diagnostics(self, *, include_true: bool = False) -> dict[str, Any]:
        """The curator's private diagnostics (model moments, stratum sizes, true values)."""
        out = {
            "n_rows": self.n_rows,
            "model": self.model.to_dict(),
            "calibration_diagnostics": to_jsonable(self.mechanism.diagnostics),
            "warnings": [text for text, _ in self.warnings],
        }
        if include_true:
            out["true_values"] = to_jsonable(self.true_value)
        return out


def method_for(mechanism: str, method: str) -> str:
    """The modelling method a mechanism needs: Monte Carlo for the samples view."""
    return "montecarlo" if mechanism_info(mechanism).model_view == "samples" else method


def build_model(
    model_data: Any,
    query: Query,
    secret: Secret,
    *,
    mechanism: str,
    subset_size: int,
    method: str = "analytic",
    n_samples: int = 1000,
    rng: np.random.Generator | int | None = None,
    missing: str = "error",
    population: bool = False,
    pool_size: int | None = None,
    bootstrap: int | None = DEFAULT_BOOTSTRAP,
) -> DataQueryModel:
    """The query model ``mechanism`` is calibrated on (Chen & Ohrimenko 2023 App. C.1).

    The Gaussian family uses ``method``; mechanisms whose registry entry asks for the
    samples view (the Wasserstein mechanisms) get Monte Carlo datasets whatever ``method``
    says, since they need the distribution itself. ``missing`` is the NULL policy
    (``"error"`` or ``"drop"``, :func:`distpriv.model_query`). ``population``: the
    modelling table is the whole population (finite-population correction against it,
    exact moments); by default it is a sample, and the model carries the uncertainty of
    its moments. ``pool_size``: Monte Carlo
    datasets drawn from a row pool of that many rows per stratum, sampled in the engine
    (for tables too large for memory); ignored by the analytic method. ``bootstrap``:
    resamples of the population layer of non-linear statistics (``None``: off).
    """
    spec = ModelSpec(
        subset_size=subset_size,
        method=method,
        n_samples=n_samples,
        seed=rng if rng is None or isinstance(rng, int) else None,
        population=population,
        missing=missing,
        bootstrap=bootstrap,
    ).for_mechanism(mechanism)
    generator = rng if isinstance(rng, np.random.Generator) else None
    return build_query_model(spec, model_data, query, secret, rng=generator, pool=pool_size)


def warn_partial_noise(mech: CalibratedMechanism, verified: bool) -> None:
    """Warn when the noise leaves statistics' directions uncovered (published exactly)."""
    rank, m = mech.noise_rank, mech.dim
    if rank >= m:
        return
    tail = (
        "the data-level check (--verify) runs below"
        if verified
        else "run with --verify (distpriv.verify_on_data in Python), or choose a mechanism "
        "with full-rank noise"
    )
    if rank == 0:
        # The calibration found that the model alone meets the target on the population's
        # confidence set (the data's own variation hides the secret): the least noise is
        # none. That is a valid result, but the curator must see that nothing is added and
        # what an exact value can reveal; auto and the floored mechanisms keep noise at
        # the lattice floor in every direction instead.
        warnings.warn(
            f"{mech.name}: no noise is added: the model alone meets (epsilon, delta) on the "
            "population's confidence set (the data's own variation hides the secret), so "
            "every statistic is published exactly; on grid-valued statistics (counts, means "
            "of integer columns) an exact value can reveal what the Gaussian model does not "
            f"see; {tail} (auto, daum-floor and optimal-g-full keep noise at the lattice "
            "floor in every direction)",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        return
    warnings.warn(
        f"{mech.name}: the noise covers {rank} of {m} directions; the statistics' other "
        "components are published exactly, and on grid-valued statistics (counts, means of "
        "integer columns) they can reveal the statistics themselves, which the Gaussian "
        f"model does not see; {tail}",
        PrivacyLeakWarning,
        stacklevel=3,
    )


def warn_dropped(rows: int, n: int) -> None:
    """Warn when ``missing="drop"`` left fewer released rows than the model describes."""
    if rows != n:
        warnings.warn(
            f"[data] missing = 'drop' removed {n - rows} of the {n} released rows: the "
            f"statistics are computed on {rows} rows while the model describes datasets of "
            f"{n} rows (the guarantee assumes the dropped rows carry no information)",
            AssumptionWarning,
            stacklevel=3,
        )


def release_warnings(
    model_table: Table,
    released: Table,
    model: DataQueryModel,
    mech: CalibratedMechanism,
    *,
    rows_used: int | None = None,
    verified: bool = False,
    support: bool = True,
    overlap: int | None = None,
) -> int:
    """The warnings of a release, one home for :func:`release` and ``run_release``.

    :class:`~distpriv.errors.PrivacyLeakWarning` when the modelling table holds the released
    rows (beyond chance), when it has too few rows per stratum for the subset size, and
    when the noise leaves directions uncovered; an
    :class:`~distpriv.errors.AssumptionWarning` when dropping missing values left fewer
    released rows than the model describes.

    Parameters
    ----------
    model_table, released : Table
        The modelling and released tables.
    model : DataQueryModel
    mech : CalibratedMechanism
    rows_used : int, optional
        Released rows the statistics were computed on (after ``missing="drop"``).
    verified : bool
        The data-level check runs (changes the advice of the partial-noise warning).
    support : bool
        Check the model's support (``False`` when the caller already has).
    overlap : int, optional
        The overlap when the caller has already checked it (``run_release`` does, before
        modelling, and refuses it unless the curator allowed it).

    Returns
    -------
    int
        Released rows also found in the modelling table (curator-private).
    """
    if overlap is None:
        overlap = warn_overlap_tables(model_table, released)
    if support:
        for part in getattr(model, "parts", (model,)):  # several secrets: each attribute
            kind = getattr(part.secret, "kind", "proportion")
            check_model_support(part.stratum_sizes, part.counts, model.subset_size, kind)
    warn_partial_noise(mech, verified)
    if rows_used is not None:
        warn_dropped(rows_used, released.n_rows)
    return overlap


def release(
    data: Any,
    query: Query | Mapping[str, str],
    secret: Secret,
    *,
    model_data: Any,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    subset_size: int | None = None,
    method: str = "analytic",
    n_samples: int = 1000,
    options: Mapping[str, Any] | None = None,
    rng: np.random.Generator | int | None = None,
    missing: str = "error",
    population: bool = False,
    beta: float | None = 0.05,
) -> ReleaseReport:
    """Release F(data) under distribution privacy w.r.t. the secret.

    Models f_θ on ``model_data`` (:func:`distpriv.model_query`, Chen & Ohrimenko 2023
    App. C.1), calibrates ``mechanism`` (:func:`distpriv.calibrate`, e.g. Thm 4.5 for
    EigM), computes F on ``data`` and adds the noise.

    Parameters
    ----------
    data : DataFrame, Arrow table or CSV/Parquet path
        The dataset to release, of ``subset_size`` rows.
    query : Query or mapping of name → SQL aggregate
    secret : Secret
    model_data : DataFrame, Arrow table or CSV/Parquet path
        Public or auxiliary data describing how datasets like ``data`` are distributed
        (not the released rows).
    mechanism : str
        A name in :data:`distpriv.MECHANISMS`, or ``"auto"``: the least-error mechanism whose
        guarantee verifies (:func:`distpriv.pipeline.stages.calibrate.choose_mechanism`, as
        ``mechanism = "auto"`` in a config; its options are ``weights``, ``objective``,
        ``calibration`` and
        ``allow_partial_noise``; the comparison is in ``ReleaseReport.choice``). The
        registry says which view of the model a mechanism needs: the Wasserstein mechanisms
        are calibrated on Monte Carlo samples (whatever ``method`` says), the others on the
        Gaussian model.
    epsilon, delta : float
        Privacy parameters.
    subset_size : int, optional
        n; defaults to the number of rows of ``data``, and must equal it.
    method, n_samples
        Passed to :func:`distpriv.model_query`.
    options : mapping, optional
        Mechanism options (``calibration``, ``group_size``, …).
    rng : int, Generator or None
        ``None`` (default): the noise comes from the secure sampler
        (:meth:`CalibratedMechanism.release`), a private release. A seed or Generator
        drives the modelling and a numpy simulation of the noise: reproducible, for
        experiments and tests only, and NOT private (``release.secure`` is ``False``).
    missing : {"error", "drop"}
        NULL/NaN in a column a statistic or the secret uses: an error naming the column and
        count (default), or drop those rows, in the modelling and the released data alike.
    population : bool
        ``True`` declares ``model_data`` the whole population the released data is drawn
        from (finite-population correction against it); default ``False``: it is a sample
        of that population, and the model carries the uncertainty of its moments.
    beta : float or None
        The default (exact) calibration holds on the population with probability
        ≥ 1 − β over the draw of ``model_data`` (default 0.05; ``None``: on the fitted
        moments only). See :func:`distpriv.calibrate`.

    Returns
    -------
    ReleaseReport

    Warns
    -----
    PrivacyLeakWarning, AssumptionWarning
        The same warnings as :func:`distpriv.pipeline.run_release`, from the same function
        (:func:`release_warnings`): released rows in the modelling table, a model resting
        on too few rows, noise that leaves directions uncovered, rows dropped for missing
        values; and the model's own (:func:`distpriv.model_query`).

    Notes
    -----
    Records nothing in any ledger: the library path has no config beside which a default
    ledger could live, so repeated calls are *not* composed with each other. To record and
    compose (docs/composition.md), call :func:`distpriv.release_with_ledger` with the same
    arguments and ``ledger=PATH``, or :func:`distpriv.pipeline.run_release` with a config
    (its default ledger is ``distpriv-ledger.sqlite`` next to the config).
    """
    from ..report import collect_warnings

    table = as_table(data)
    plan = keyword_plan(
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        subset_size=table.n_rows if subset_size is None else subset_size,
        method=method,
        n_samples=n_samples,
        options=options,
        missing=missing,
        population=population,
        beta=beta,
    )
    with collect_warnings() as caught:
        prep = prepare_release(table, query, secret, model_data=model_data, plan=plan, rng=rng)
    rel = prep.mechanism.release(prep.value, rng=prep.rng)
    if prep.query.ranges:  # declared ranges: clamping is post-processing (no privacy cost)
        rel = dataclasses.replace(rel, value=prep.query.clamp(rel.value)[0])
    return ReleaseReport(
        release=rel,
        mechanism=prep.mechanism,
        model=prep.model,
        true_value=prep.value,
        n_rows=prep.table.n_rows,
        choice=prep.choice,
        warnings=caught.items,
        secret=secret,
        beta=beta,
    )


@dataclass(frozen=True)
class PreparedRelease:
    """Everything of a release but the noise: the table, query, model, calibrated mechanism,
    true value F(data) (private) and the generator (``None``: secure sampler)."""

    table: Table
    query: Query
    model: DataQueryModel
    mechanism: CalibratedMechanism
    value: np.ndarray
    rng: np.random.Generator | None
    choice: Any = None  # mechanism="auto": the AutoChoice (comparison table)


def prepare_release(
    data: Any,
    query: Query | Mapping[str, str],
    secret: Secret,
    *,
    model_data: Any,
    plan: ReleasePlan,
    rng: np.random.Generator | int | None = None,
) -> PreparedRelease:
    """Model, calibrate and evaluate F(data), drawing no noise.

    The one home of these steps for :func:`release` and the ledger's
    :func:`~distpriv.pipeline.release_with_ledger` (which draws the noise inside its
    budget transaction), in the order of the stages: the released table and F(data), the
    model (:func:`~distpriv.pipeline.stages.model.build_query_model` from the plan's model
    spec), the calibration (:func:`~distpriv.pipeline.stages.calibrate.calibrate_planned`
    from its calibration spec), the release's warnings.

    Parameters
    ----------
    data, query, secret, model_data
        As for :func:`release`.
    plan : ReleasePlan
        Built once from the caller's keywords (:func:`~distpriv.pipeline.plan.keyword_plan`);
        its ``model.subset_size`` must be the released table's rows.
    rng : int, Generator or None
        ``None``: fresh entropy for the modelling and the secure sampler for the noise; a
        seed or Generator drives both (reproducible, NOT private).
    """
    table = as_table(data)
    n = check_positive_int(plan.model.subset_size, "subset_size")
    if n != table.n_rows:
        raise ParameterError(
            f"data has {table.n_rows} rows but subset_size={n}: the query model describes "
            f"datasets of {n} rows, so only such a dataset can be released under it"
        )
    q = query if isinstance(query, Query) else Query(query)
    from ...modeling.secret_identity import check_distinct_attributes

    check_distinct_attributes(table, secret)  # several secrets that are one: refused first
    calibration = plan.calibration
    auto = calibration.mechanism == AUTO
    if not auto:
        mechanism_info(calibration.mechanism)  # fail fast on an unknown name, before modelling
    gen = None if rng is None else check_rng(rng)
    # F(data) first: a problem with the released table (or a statistic the engine cannot
    # compute on the modelling table) is reported before the modelling and calibration.
    evaluation = q.evaluation(table, missing=plan.model.missing, also=secret.columns)
    q.check_on(model_data)
    # auto: the Gaussian model of the requested method (any Gaussian-view name will do)
    spec = plan.model.for_mechanism("eigm" if auto else calibration.mechanism)
    model = build_query_model(spec, model_data, q, secret, rng=gen, pool=None)
    # Default options (lattice, group-DP sensitivities) come from model.facts.
    facts = model.facts if auto else None
    mech, choice = calibrate_planned(calibration, model, facts=facts)
    # The same warnings as the configuration path (run_release), from the same function.
    release_warnings(as_table(model_data), table, model, mech, rows_used=evaluation.n_rows)
    return PreparedRelease(table, q, model, mech, evaluation.value, gen, choice)
