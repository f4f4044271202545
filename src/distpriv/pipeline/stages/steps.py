"""From a configuration to a calibrated mechanism: the steps every curator's command shares.

Reading the configuration and the secret, opening the tables, building the model and
calibrating the mechanism (fixed or ``auto``), the warnings collected on the way.
docs/architecture.md §2: config → data → model → calibrate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...central import CalibratedMechanism, mechanism_info
from ...errors import (
    ConfigError,
    ParameterError,
    ParameterTypeError,
)
from ...modeling import DataQueryModel, ProportionSecret, Query, Secret
from ...modeling.identity import multiset_fingerprint
from ...modeling.secret_identity import check_distinct_attributes
from ...modeling.tables import Table
from ...util.validation import check_positive_int, check_rng
from ..config import BUILTIN_PREFIX, ReleaseConfig, load_release_config
from ..plan import ModelSpec
from ..report import collect_warnings as _collect_warnings  # noqa: F401  (the commands import it here)
from .calibrate import AUTO, AutoChoice, calibrate_planned
from .data import (
    check_memory,
    check_model_support,
    engine_table_facts,
    open_table,
    sample_table,
    warn_overlap_tables,
)
from .model import build_query_model

__all__: list[str] = []  # private steps of the commands


def _config(config: str | Path | ReleaseConfig) -> ReleaseConfig:
    return config if isinstance(config, ReleaseConfig) else load_release_config(config)


def release_config(config: str | Path | ReleaseConfig, insecure_seed: int | None) -> ReleaseConfig:
    """The configuration of ``distpriv release``, with ``--insecure-seed`` (when given)
    in place of the file's, checked before anything else."""
    cfg = _config(config)
    if insecure_seed is not None:
        cfg = dataclasses.replace(cfg, insecure_seed=insecure_seed)
    check_rng(cfg.insecure_seed, "insecure_seed")
    return cfg


@dataclass(frozen=True)
class ReleaseInputs:
    """What the data stage of a release hands on to the model and calibration stages."""

    secret: Secret
    query: Query
    #: Rows of the released dataset (the model's subset size).
    n: int
    #: The modelling and released tables, in their engines.
    model_frame: Table
    released: Table
    #: Where the released table came from (``--data`` or ``[data] release``).
    source: str
    #: Released rows also in the modelling table (curator-private).
    overlap: int
    #: F(data) on the released table, with the rows it used and the missing values.
    evaluation: Any


def release_inputs(
    cfg: ReleaseConfig, data: str | Path | None, allow_overlap: bool | None
) -> ReleaseInputs:
    """The data stage of ``distpriv release``: the secret and the statistics, both tables,
    their checks, and F(data).

    Several secrets that are one property are refused, and a modelling table that holds
    released rows (beyond chance) unless ``allow_overlap`` (default the config's ``[data]
    allow_overlap``); F(data) is computed here, so a statistic that fails on the released
    table is named before the minutes of modelling, not after.
    """
    secret, query, n = _secret(cfg), Query(cfg.query, ranges=cfg.ranges), _subset_size(cfg)
    model_frame, released, source = _tables(cfg, data, n)
    check_distinct_attributes(released, secret)  # several secrets that are one: refused
    allow = cfg.allow_overlap if allow_overlap is None else allow_overlap
    overlap = warn_overlap_tables(model_frame, released, allow=bool(allow))
    evaluation = query.evaluation(released, missing=cfg.missing, also=secret.columns)
    return ReleaseInputs(secret, query, n, model_frame, released, source, overlap, evaluation)


def _population_set(cfg: ReleaseConfig) -> AbstractContextManager[None]:
    """The command's population set (``[mechanism] population_set``) for everything in the
    ``with`` block: calibration, ``auto``'s comparison, the price, the ledger's composition."""
    from ...population import population_set

    return population_set(cfg.population_set)


def _proportion_secret(spec: dict[str, Any]) -> Secret:
    if "values" not in spec and "range" not in spec:
        raise ConfigError("[secret] needs 'values' (or 'range' = [low, high])")
    return ProportionSecret(
        spec["predicate"],
        spec.get("values"),
        pairs=spec.get("pairs"),
        within=spec.get("within"),
        range=spec.get("range"),
    )


def _mean_secret(spec: dict[str, Any]) -> Secret:
    from ...modeling.secret_mean import MeanSecret

    return MeanSecret(
        spec["expression"],
        spec["values"],
        pairs=spec.get("pairs"),
        within=spec.get("within"),
    )


# ``[secret] kind`` → what builds the secret from the config's [secret] table (whose keys
# config.SECRET_KEYS has checked for that kind).
def _several_secrets(spec: dict[str, Any]) -> Secret:
    from ...modeling.secret_several import several_from_spec

    return several_from_spec(spec["attributes"], what="[secret] attributes")


def _event_secret(spec: dict[str, Any]) -> Secret:
    from ...modeling.secret_events import EventSecret
    from ...modeling.secret_mean_events import MeanGrid

    # An event about a proportion (predicate) or about an average (expression, step).
    if ("predicate" in spec) == ("expression" in spec):
        raise ConfigError(
            "[secret] kind = \"event\" needs exactly one of 'predicate' (ranges of a share) "
            "or 'expression' (ranges of an average)"
        )
    if "step" in spec and "expression" not in spec:
        raise ConfigError("[secret] 'step' applies only to events about an 'expression'")
    if "predicate" in spec:
        return EventSecret(spec["predicate"], spec["events"], pairs=spec.get("pairs"))
    measured = MeanGrid(spec["expression"], step=spec.get("step"))
    return EventSecret(measured, spec["events"], pairs=spec.get("pairs"))


SECRET_BUILDERS: dict[str, Callable[[dict[str, Any]], Secret]] = {
    "proportion": _proportion_secret,
    "mean": _mean_secret,
    "several": _several_secrets,
    "event": _event_secret,
}


def _secret(cfg: ReleaseConfig) -> Secret:
    spec = {k: v for k, v in cfg.secret.items() if k != "kind"}
    try:
        secret = SECRET_BUILDERS[cfg.secret.get("kind", "proportion")](spec)
    except (ParameterError, ParameterTypeError) as exc:  # the file and the table, once
        msg = str(exc)
        if msg.startswith(cfg.path):
            raise
        msg = msg if msg.startswith("[secret]") else f"[secret] {msg}"
        raise type(exc)(f"{cfg.path}: {msg}") from None
    grid = getattr(secret, "grid", None)
    if getattr(secret, "is_grid", False) and grid is not None:
        try:  # a range or events: the values on the subset's grid
            secret = grid(_subset_size(cfg))
        except ParameterError as exc:
            raise ConfigError(f"{cfg.path}: [secret] {exc}") from exc
    return secret


def _subset_size(cfg: ReleaseConfig) -> int:
    try:
        return check_positive_int(cfg.plan.model.subset_size, "subset_size")
    except (ParameterError, TypeError) as exc:
        raise ConfigError(f"{cfg.path}: [model] {exc}") from exc


def _check_model_memory(cfg: ReleaseConfig, secret: Secret, n: int, method: str) -> int:
    n_samples = check_positive_int(cfg.plan.model.n_samples, "n_samples", minimum=2)
    if method == "montecarlo":
        # Index arrays (n_samples, n) int64 and the statistics, per secret value.
        need = len(secret.values) * n_samples * (n + len(cfg.query)) * 8.0 * 2
        check_memory(need, f"[model] n_samples={n_samples} with subset_size={n}")
    return n_samples


def model_spec(cfg: ReleaseConfig, n: int, mechanism: str, secret: Secret) -> ModelSpec:
    """The plan's model spec for datasets of ``n`` rows and ``mechanism``'s view, with its
    Monte Carlo memory checked before anything is drawn."""
    spec = dataclasses.replace(cfg.plan.model, subset_size=n).for_mechanism(mechanism)
    _check_model_memory(cfg, secret, n, spec.method)
    return spec


def _tables(cfg: ReleaseConfig, data: str | Path | None, n: int) -> tuple[Table, Table, str]:
    """Modelling and released tables (in their engines) and the released one's source
    (nothing large is loaded into pandas). Their row overlap is checked
    with the release's other warnings
    (:func:`~distpriv.pipeline.commands.release.release_warnings`)."""
    model = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
    subset_rng = np.random.default_rng(cfg.insecure_seed)  # fresh OS entropy unless insecure
    released, source = _released_table(cfg, data, n, subset_rng)
    if released.n_rows != n:
        raise ParameterError(
            f"data has {released.n_rows} rows but subset_size={n}: the query model "
            f"describes datasets of {n} rows, so only such a dataset can be released"
        )
    return model, released, source


def _model_fingerprint(table: Table, query: Query, secret: Secret, key: bytes) -> str:
    """Keyed fingerprint of the modelling table as the release reads it (the columns the
    statistics and the secret use), by the engine's native row hash: the modelling table
    can be large, and its identity need not match across engines."""
    columns = sorted({table.column_name(c) for c in query.columns | secret.columns})
    return multiset_fingerprint(table, key=key, columns=columns, portable=False)


def _released_table(
    cfg: ReleaseConfig, data: str | Path | None, n: int, rng: np.random.Generator
) -> tuple[Table, str]:
    if data is not None:
        return open_table(str(data), what="--data"), str(data)
    if cfg.release_source is None:
        raise ConfigError(f"{cfg.path}: no table to release: give --data PATH or [data] release")
    table = open_table(cfg.release_source, split_seed=cfg.split_seed, what="[data] release")
    if cfg.release_source.startswith(BUILTIN_PREFIX):  # a random n-row dataset of the split
        table = sample_table(table, n, rng, "[data] release")
    return table, cfg.release_source


def _model_and_mechanism(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: Secret,
    n: int,
    progress: Callable[[int, int], None] | None = None,
    support: bool = True,
) -> tuple[DataQueryModel, CalibratedMechanism, AutoChoice | None]:
    """The model and the calibrated mechanism (fixed or ``auto``), from the plan's model
    and calibration specs; ``support``: warn here when the model rests on too few rows
    (``run_release`` warns with the release's other warnings instead)."""
    query.check_on(model_frame)  # a statistic that fails on the table: named, before modelling
    calibration = cfg.plan.calibration
    auto = calibration.mechanism == AUTO
    # auto: any Gaussian-view mechanism gives the model of the configured method
    spec = model_spec(cfg, n, "eigm" if auto else calibration.mechanism, secret)
    model = build_query_model(spec, model_frame, query, secret)
    if support:
        for part in getattr(model, "parts", (model,)):  # several secrets: each attribute
            kind = getattr(part.secret, "kind", "proportion")
            check_model_support(part.stratum_sizes, part.counts, n, kind)
    # The model carries its table's facts (model_query); the call names the problem when
    # the statistics have none (not linear) and the mechanism needs them.
    facts = None
    if auto or mechanism_info(calibration.mechanism).defaults:
        facts = model.facts or engine_table_facts(model_frame, query, n, missing=spec.missing)
    mech, choice = calibrate_planned(calibration, model, facts=facts, progress=progress)
    return model, mech, choice


def _complete(table: Table, cfg: ReleaseConfig, query: Query, secret: Secret) -> Table:
    """The modelling table under the missing-value policy (a filter in the engine), for the
    ledger's joint model, which applies no policy of its own."""
    if cfg.missing == "error":
        return table
    used = query.columns | secret.columns
    return table.complete(used, missing=cfg.missing, what="modelling data")[0]
