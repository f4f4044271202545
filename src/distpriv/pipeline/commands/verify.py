"""``distpriv verify``: the data-level check of a calibrated mechanism before any release.
Also used by ``release --verify``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...central import CalibratedMechanism, mechanism_info
from ...errors import (
    MechanismNotApplicableError,
    ParameterError,
    ParameterTypeError,
    PrivacyLeakWarning,
)
from ...guarantees import to_jsonable
from ...modeling import ProportionSecret, Query, Secret, model_query
from ...modeling.tables import Table
from ...querymodel import SampledQueryModel
from ...util.validation import check_positive_int, check_real
from ...util.version import __version__
from ..config import ReleaseConfig
from ..outcomes import (
    VerifyOutcome,
)
from ..plan import MIN_VERIFY_SAMPLES, VerifySpec
from ..price.table import price_for_options
from ..report import PRIVATE_BANNER, secret_dict
from ..stages import data as sources
from ..stages.data import (
    open_table,
)
from ..stages.model import pool_size
from ..stages.steps import (
    _collect_warnings,
    _config,
    _model_and_mechanism,
    _population_set,
    _secret,
    _subset_size,
)

__all__ = ["run_verify"]


# Monte Carlo datasets per value at the data-level check's first look (half choose the
# sets, half are the first evaluation draws); it draws more, doubling, while undecided
# (attacks.verify_sequential), up to VERIFY_MAX_SAMPLES per value (``--max-samples``) or
# VERIFY_SECONDS of wall-clock time. With VERIFY_EARLY_STOP it draws more only when the
# first look is suspicious (an estimate above the claim, or a lattice decoder applies): a
# mechanism well below its claim costs one look, at some power against violations the
# first look misses (docs/user-guide.md, "Checking before releasing").
VERIFY_SAMPLES = 20_000
VERIFY_MAX_SAMPLES = 160_000
VERIFY_SECONDS = 300.0
VERIFY_EARLY_STOP = True
# Memory of one batch of resampled datasets (``--batch-mib``): the evaluation datasets are
# drawn, noised and counted this many at a time, then dropped, so the check's memory does
# not grow with its sample budget.
VERIFY_BATCH_MIB = 256
# Fewer datasets per batch than this and the per-call overhead of drawing dominates.
MIN_VERIFY_BATCH = 100


def _look_sizes(budget: int) -> tuple[int, ...]:
    """Datasets per value at each look of the check for a sample budget."""
    from ...attacks.verify_sequential import look_schedule

    first = min(VERIFY_SAMPLES, budget)
    return look_schedule(first, max(first, budget))


def _verify_batch(
    values: int,
    n: int,
    m: int,
    sizes: tuple[int, ...],
    spec: VerifySpec,
    command: str = "verify",
) -> int:
    """Datasets per value per batch of the check, from its memory bound, or a refusal naming
    what bounds it: the batch memory (``--batch-mib`` of ``distpriv verify``, or the
    configuration's ``[verify] batch_mib``, the one ``release --verify`` reads), the dataset
    size (``[model] subset_size``) and the number of statistics (``[query]``).

    One batch holds each dataset's row indices and statistics (n + m values) in two copies,
    for every value of the secret; the sets are chosen on ``sizes[0] // 2`` datasets per
    value held at once (their statistics, the train split's releases: about three copies of
    m values), which must fit :data:`~distpriv.pipeline.stages.data.MEMORY_LIMIT_BYTES`
    together with one batch.
    """
    mib = VERIFY_BATCH_MIB if spec.batch_mib is None else spec.batch_mib
    per_dataset = values * (n + m) * 8.0 * 2
    batch = int(mib * 1024**2 // per_dataset)
    choose = values * (sizes[0] // 2) * m * 8.0 * 3
    limit = sources.MEMORY_LIMIT_BYTES
    what = (
        f"the data-level check draws its resampled datasets in batches of {mib:g} MiB "
        f"(--batch-mib, [verify] batch_mib): {max(batch, 0)} datasets per value at once "
        f"({values} values, {n} rows each by [model] subset_size, {m} statistics in [query])"
    )
    if choose + MIN_VERIFY_BATCH * per_dataset > limit:
        raise ParameterError(
            f"{what}: even {MIN_VERIFY_BATCH} datasets per value at once, with the "
            f"{sizes[0] // 2} per value that choose the sets, pass the memory limit of "
            f"{limit / 1024**3:.3g} GiB: use a smaller [model] subset_size or fewer "
            "statistics in [query]"
        )
    if batch < MIN_VERIFY_BATCH:
        need = math.ceil(MIN_VERIFY_BATCH * per_dataset / 1024**2)
        if command == "verify":
            advice = f"pass --batch-mib {need} or more (or set [verify] batch_mib = {need})"
        else:
            advice = f"set [verify] batch_mib = {need} or more in the configuration"
        raise ParameterError(
            f"{what}, fewer than {MIN_VERIFY_BATCH}: {advice}, or use a smaller [model] subset_size"
        )
    if choose + batch * per_dataset > limit:
        fits = (limit - choose) / 1024**2
        raise ParameterError(
            f"{what}; with the {sizes[0] // 2} datasets per value that choose the sets "
            f"(about {choose / 1024**3:.2f} GiB) this passes the memory limit of "
            f"{limit / 1024**3:.3g} GiB: set --batch-mib (or [verify] batch_mib) to "
            f"{math.floor(fits)} or less"
        )
    return batch


def _verify(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: Secret,
    n: int,
    mech: CalibratedMechanism,
) -> dict[str, Any]:
    """The data-level check of f_θ + Z (attacks.verify_on_data); refuses a failing release."""
    check = _verify_check(cfg, model_frame, query, secret, n, mech, cfg.plan.verify)
    if check.verdict == "violation":
        # Refused before any noise is drawn or file written.
        raise MechanismNotApplicableError(
            f"release refused by --verify: {mech.name!r} at epsilon={check.epsilon:g}: "
            + check.advice
        )
    if check.verdict == "inconclusive":
        warnings.warn(
            f"--verify on {mech.name!r}: {check.advice}", PrivacyLeakWarning, stacklevel=2
        )
    return check.to_dict()


def _verify_check(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: Secret,
    n: int,
    mech: CalibratedMechanism,
    spec: VerifySpec | None = None,
    missing_report: Mapping[str, Any] | None = None,
    command: str = "release --verify",
) -> Any:
    """verify_sequential on datasets resampled from the modelling table (no noise is drawn).

    The first look uses ``VERIFY_SAMPLES`` datasets per value (or ``spec.max_samples`` when
    smaller); while undecided the check doubles them, up to ``spec.max_samples`` (default
    ``VERIFY_MAX_SAMPLES``) or ``VERIFY_SECONDS`` (the stated budget), and with
    ``spec.early_stop`` (default ``VERIFY_EARLY_STOP``) only when the first look is
    suspicious. The datasets are drawn and counted in batches of ``spec.batch_mib`` MiB
    (:func:`_verify_batch`).
    ``missing_report``: the model's count of missing values in this table (its
    ``diagnostics["missing"]``), reused when it covers the check's columns. ``command``
    (``"verify"`` or ``"release --verify"``) says which flags a refusal names.
    """
    from ...attacks.verify_sequential import verify_sequential

    spec = VerifySpec() if spec is None else spec
    budget = VERIFY_MAX_SAMPLES if spec.max_samples is None else spec.max_samples
    sizes = _look_sizes(budget)
    batch = _verify_batch(len(secret.values), n, len(cfg.query), sizes, spec, command)
    early_stop = VERIFY_EARLY_STOP if spec.early_stop is None else bool(spec.early_stop)
    pool = pool_size(model_frame, n)
    if pool is None and isinstance(secret, ProportionSecret):
        return verify_sequential(
            _sampler_draw(cfg, model_frame, query, secret, n, missing_report),
            mech,
            first=sizes[0],
            max_samples=sizes[-1],
            max_seconds=VERIFY_SECONDS,
            early_stop=early_stop,
            batch=batch,
        )

    def draw(k: int, gen: Any) -> Any:
        return model_query(
            model_frame,
            query,
            secret,
            subset_size=n,
            method="montecarlo",
            n_samples=k,
            rng=gen,
            missing=cfg.missing,
            pool_size=pool,
        ).to_sampled()

    return verify_sequential(
        draw,
        mech,
        first=sizes[0],
        max_samples=sizes[-1],
        max_seconds=VERIFY_SECONDS,
        early_stop=early_stop,
        batch=batch,
    )


def _sampler_draw(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: ProportionSecret,
    n: int,
    missing_report: Mapping[str, Any] | None = None,
) -> Callable[[int, Any], SampledQueryModel]:
    """The check's draws from one sampler: the table's strata and per-row
    features are computed once, each look only draws index arrays and sums; the law is
    ``model_query(..., method="montecarlo")``'s (rows i.i.d. from the strata), without
    its per-call validation, featurisation and normality diagnostics."""
    from ...modeling.strata import StratifiedSampler
    from ...modeling.tables import check_missing_policy

    policy = check_missing_policy(cfg.missing)
    used = query.columns | secret.columns
    counts, rows_missing = _known_missing(model_frame, used, policy, missing_report)
    table, _ = model_frame.complete(
        used, missing=policy, what="modelling data", counts=counts, rows_missing=rows_missing
    )
    sampler = StratifiedSampler(table, query, secret, n, replace=True, only_values=True)

    def draw(k: int, gen: Any) -> SampledQueryModel:
        return SampledQueryModel(
            [sampler.draw(t, k, gen) for t in range(len(sampler.counts))],
            secret.pairs,
            labels=secret.values,
            statistics=query.names,
        )

    return draw


def _known_missing(
    table: Table, used: Any, policy: str, report: Mapping[str, Any] | None
) -> tuple[dict[str, int] | None, int | None]:
    """The missing-value counts of ``used`` in ``table`` from the model's report (the model
    counted them in its own query: one query less per ``verify``), or
    ``(None, None)`` (count them again) unless the report is about exactly these columns
    under this policy."""
    if report is None or report.get("policy") != policy:
        return None, None
    columns = tuple(sorted({table.column_name(c) for c in used}))
    if tuple(report.get("columns", ())) != columns:
        return None, None
    return dict(report.get("missing_counts", {})), int(report.get("rows_dropped", 0))


def run_verify(
    config: str | Path | ReleaseConfig,
    *,
    progress: Callable[[int, int], None] | None = None,
    max_samples: int | None = None,
    early_stop: bool | None = None,
    batch_mib: float | None = None,
) -> VerifyOutcome:
    """Model, calibrate and check a configured release on data, drawing no noise.

    The dry run of :func:`run_release` with ``verify=True``: the same model and mechanism
    (auto's choice included), then the data-level check of the actual outputs f_θ + Z on
    datasets resampled from the modelling table (:func:`distpriv.attacks.verify_on_data`).
    Nothing is released, no noise is drawn, no ledger is opened or written; the released
    table is not read.

    Parameters
    ----------
    config : path or ReleaseConfig
    progress : callable, optional
        ``progress(done, total)`` of an ``auto`` search.
    max_samples : int, optional
        The check's sample budget, resampled datasets per value at its last possible look
        (``--max-samples``; default the configuration's ``[verify] max_samples``, else
        ``VERIFY_MAX_SAMPLES`` = 160,000; at least ``MIN_VERIFY_SAMPLES`` = 1,000). More
        detects smaller excesses and costs more.
    early_stop : bool, optional
        Stop after the first look unless it is suspicious (default ``[verify] early_stop``,
        else ``VERIFY_EARLY_STOP``; ``--no-early-stop`` turns it off):
        :func:`distpriv.attacks.verify_sequential`.
    batch_mib : float, optional
        Memory of one batch of resampled datasets, MiB (``--batch-mib``; default
        ``[verify] batch_mib``, else ``VERIFY_BATCH_MIB`` = 256): the check's memory does not
        grow with its budget.

    Each argument given here wins over the configuration's ``[verify]`` table, which
    ``release --verify`` reads too.

    Returns
    -------
    VerifyOutcome
        ``public``: ``kind = "verification"``, the mechanism, its guarantee and the check
        (with its verdict); ``private``: the model.
    """
    if early_stop is not None and not isinstance(early_stop, bool):
        raise ParameterTypeError(
            f"early_stop must be True, False or None, got {type(early_stop).__name__}"
        )
    if max_samples is not None:
        # Checked before the configuration is read: a bad flag costs nothing.
        max_samples = check_positive_int(
            max_samples, "max_samples (--max-samples)", minimum=MIN_VERIFY_SAMPLES
        )
    if batch_mib is not None:
        batch_mib = check_real(batch_mib, "batch_mib (--batch-mib)", low=0.0, low_inclusive=False)
    cfg = _config(config)
    with _collect_warnings() as caught, _population_set(cfg):
        secret, query, n = _secret(cfg), Query(cfg.query, ranges=cfg.ranges), _subset_size(cfg)
        model_frame = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
        model, mech, choice = _model_and_mechanism(cfg, model_frame, query, secret, n, progress)
        check = _verify_check(
            cfg,
            model_frame,
            query,
            secret,
            n,
            mech,
            cfg.plan.verify.overridden(max_samples, early_stop, batch_mib),
            missing_report=getattr(model, "diagnostics", {}).get("missing"),
            command="verify",
        )
        spec = mechanism_info(mech.name)
        public = {
            "kind": "verification",
            "title": cfg.title,
            "secret": secret_dict(secret),
            "statistics": list(query.names),
            "mechanism": {
                "name": mech.name,
                "summary": spec.summary,
                "theorem": spec.theorem,
                "noise_covariance": mech.noise_covariance,
                "expected_l2_error": mech.expected_l2_error(),
                "noise_rank": mech.noise_rank,
            },
            "guarantee": mech.guarantee.to_dict(),
            "verification": check.to_dict(),
            "choice": None if choice is None else choice.rows(),
            "noise_drawn": False,
            "provenance": {"version": __version__},
        }
    with _population_set(cfg):  # the price's re-calibrations: on the command's set too
        price = price_for_options(model, mech, cfg.options).to_dict()
    private = {
        "kind": "verification-diagnostics",
        "private": PRIVATE_BANNER,
        "model": model.to_dict(),
        # The price per statistic, before any noise is drawn (pipeline.price.table):
        # private, as noise / spread is (the spread is the modelling table's).
        "price": price,
        "warnings": list(caught.lines),
    }
    return VerifyOutcome(to_jsonable(public), to_jsonable(private), caught.lines, report=check)
