"""The curator's process, one function per command: release, audit, demo, calibrate.

Each function reads its configuration, builds everything in memory and returns a frozen
outcome with a ``public`` report and the curator's ``private`` diagnostics; nothing is
written here (the CLI writes files only once the whole command has succeeded).
DESIGN.md §2: config → data → model → calibrate → verify → release → report.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_positive_int, check_rng
from .._version import __version__
from ..central import MECHANISMS, CalibratedMechanism, calibrate, mechanism_info
from ..errors import (
    AssumptionWarning,
    ConfigError,
    MechanismNotApplicableError,
    ParameterError,
    PrivacyLeakWarning,
)
from ..guarantees import to_jsonable
from ..modeling import DataQueryModel, ProportionSecret, Query, model_query
from ..modeling import tables as _tables_mod
from ..modeling.identity import multiset_fingerprint, new_identity_key
from ..modeling.tables import Table
from .auto import AUTO, AutoChoice, choose_for_table
from .config import BUILTIN_PREFIX, ReleaseConfig, load_model_config, load_release_config
from .demo import demo_report
from .ledger import Budget, Ledger, open_ledger
from .outcomes import (
    AuditOutcome,
    CalibrateOutcome,
    DemoOutcome,
    ReleaseOutcome,
    VerifyOutcome,
)
from .price import price_for_options
from .release import ReleaseReport, build_model, calibrate_for, checked_noise, method_for
from .report import PRIVATE_BANNER, noise_to_spread, provenance, public_release, secret_dict
from .sources import (
    MIN_ROWS_PER_DRAWN_ROW,
    check_memory,
    check_model_support,
    engine_table_facts,
    load_frame,
    open_table,
    sample_table,
    warn_overlap_tables,
)

__all__ = ["run_audit", "run_calibrate", "run_demo", "run_release", "run_verify"]


class _Caught:
    lines: tuple[str, ...] = ()


@contextmanager
def _collect_warnings() -> Iterator[_Caught]:
    """Record warnings as one-line strings, then re-emit them for the caller (the CLI)."""
    box = _Caught()
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        yield box
    seen: dict[str, type[Warning]] = {}
    for w in log:
        seen.setdefault(" ".join(str(w.message).split()), w.category)
    box.lines = tuple(seen)
    for text, cat in seen.items():
        warnings.warn(text, cat, stacklevel=3)


def _config(config: str | Path | ReleaseConfig) -> ReleaseConfig:
    return config if isinstance(config, ReleaseConfig) else load_release_config(config)


def _secret(cfg: ReleaseConfig) -> ProportionSecret:
    return ProportionSecret(
        cfg.secret["predicate"],
        cfg.secret["values"],
        pairs=cfg.secret.get("pairs"),
        within=cfg.secret.get("within"),
    )


def _subset_size(cfg: ReleaseConfig) -> int:
    try:
        return check_positive_int(cfg.model["subset_size"], "subset_size")
    except (ParameterError, TypeError) as exc:
        raise ConfigError(f"{cfg.path}: [model] {exc}") from exc


def _check_model_memory(cfg: ReleaseConfig, secret: ProportionSecret, n: int, method: str) -> int:
    n_samples = check_positive_int(cfg.model.get("n_samples", 1000), "n_samples", minimum=2)
    if method == "montecarlo":
        # Index arrays (n_samples, n) int64 and the statistics, per secret value.
        need = len(secret.values) * n_samples * (n + len(cfg.query)) * 8.0 * 2
        check_memory(need, f"[model] n_samples={n_samples} with subset_size={n}")
    return n_samples


# Rows per stratum of the Monte Carlo row pool drawn in the engine when the modelling table
# is too large for memory (at least MIN_ROWS_PER_DRAWN_ROW per row a dataset draws).
POOL_ROWS = 200_000


def _pool_size(table: Table, n: int) -> int | None:
    """``None`` (the whole table) when it fits the row-level path, else an engine pool size."""
    if table.n_rows <= _tables_mod.MAX_IN_MEMORY_ROWS:
        return None
    return max(POOL_ROWS, MIN_ROWS_PER_DRAWN_ROW * n)


def _tables(cfg: ReleaseConfig, data: str | Path | None, n: int) -> tuple[Table, Table, str, int]:
    """Modelling and released tables (in their engines), the released one's source, and
    their row overlap (issue #19 item 1: nothing large is loaded into pandas)."""
    model = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
    subset_rng = np.random.default_rng(cfg.insecure_seed)  # fresh OS entropy unless insecure
    released, source = _released_table(cfg, data, n, subset_rng)
    if released.n_rows != n:
        raise ParameterError(
            f"data has {released.n_rows} rows but subset_size={n}: the query model "
            f"describes datasets of {n} rows, so only such a dataset can be released"
        )
    return model, released, source, warn_overlap_tables(model, released)


def _model_fingerprint(table: Table, query: Query, secret: ProportionSecret, key: bytes) -> str:
    """Keyed fingerprint of the modelling table as the release reads it (the columns the
    statistics and the secret use), by the engine's native row hash: the modelling table
    can be large, and its identity need not match across engines."""
    columns = sorted({table.column_name(c) for c in query.columns | secret.columns})
    return multiset_fingerprint(table, key=key, columns=columns, portable=False)


def _warn_dropped(rows: int, n: int) -> None:
    if rows != n:
        warnings.warn(
            f"[data] missing = 'drop' removed {n - rows} of the {n} released rows: the "
            f"statistics are computed on {rows} rows while the model describes datasets of "
            f"{n} rows (the guarantee assumes the dropped rows carry no information)",
            AssumptionWarning,
            stacklevel=3,
        )


def _warn_partial_noise(mech: CalibratedMechanism, verified: bool) -> None:
    """Warn when the noise leaves statistics' directions uncovered (published exactly)."""
    rank, m = mech.noise_rank, mech.dim
    if rank >= m:
        return
    tail = (
        "the data-level check (--verify) runs below"
        if verified
        else "run with --verify, or choose a mechanism with full-rank noise"
    )
    warnings.warn(
        f"{mech.name}: the noise covers {rank} of {m} directions; the statistics' other "
        "components are published exactly, and on grid-valued statistics (counts, means of "
        "integer columns) they can reveal the statistics themselves, which the Gaussian "
        f"model does not see; {tail}",
        PrivacyLeakWarning,
        stacklevel=2,
    )


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
    secret: ProportionSecret,
    n: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[DataQueryModel, CalibratedMechanism, AutoChoice | None]:
    if cfg.mechanism == AUTO:
        return _auto_model_and_mechanism(cfg, model_frame, query, secret, n, progress)
    method = method_for(cfg.mechanism, cfg.model.get("method", "analytic"))
    n_samples = _check_model_memory(cfg, secret, n, method)
    model = build_model(
        model_frame,
        query,
        secret,
        mechanism=cfg.mechanism,
        subset_size=n,
        method=method,
        n_samples=n_samples,
        rng=cfg.model.get("seed", 0),
        missing=cfg.missing,
        population=cfg.model.get("population", False),
        pool_size=_pool_size(model_frame, n),
    )
    check_model_support(model.stratum_sizes, model.counts, n)
    facts = (
        engine_table_facts(model_frame, query, n, missing=cfg.missing)
        if mechanism_info(cfg.mechanism).defaults
        else None
    )
    mech = calibrate_for(
        cfg.mechanism,
        model,
        epsilon=cfg.epsilon,
        delta=cfg.delta,
        options=cfg.options,
        facts=facts,
    )
    return model, mech, None


def _auto_model_and_mechanism(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: ProportionSecret,
    n: int,
    progress: Callable[[int, int], None] | None,
) -> tuple[DataQueryModel, CalibratedMechanism, AutoChoice]:
    """``mechanism = "auto"``: the least-error mechanism that verifies (pipeline.auto)."""
    method = cfg.model.get("method", "analytic")
    model = build_model(
        model_frame,
        query,
        secret,
        mechanism="eigm",  # any Gaussian-view mechanism: the model of the configured method
        subset_size=n,
        method=method,
        n_samples=_check_model_memory(cfg, secret, n, method),
        rng=cfg.model.get("seed", 0),
        missing=cfg.missing,
        population=cfg.model.get("population", False),
        pool_size=_pool_size(model_frame, n),
    )
    check_model_support(model.stratum_sizes, model.counts, n)
    choice = choose_for_table(
        model,
        epsilon=cfg.epsilon,
        delta=cfg.delta,
        options=cfg.options,
        facts=engine_table_facts(model_frame, query, n, missing=cfg.missing),
        progress=progress,
    )
    return model, choice.mechanism, choice


# Monte Carlo datasets per value for the data-level check (half form the density mixture,
# half are evaluation draws: verify_on_data's default n_eval = 10,000).
VERIFY_SAMPLES = 20_000


def _verify(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: ProportionSecret,
    n: int,
    mech: CalibratedMechanism,
) -> dict[str, Any]:
    """The data-level check of f_θ + Z (attacks.verify_on_data); refuses a failing release."""
    check = _verify_check(cfg, model_frame, query, secret, n, mech)
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
    secret: ProportionSecret,
    n: int,
    mech: CalibratedMechanism,
) -> Any:
    """verify_on_data on datasets resampled from the modelling table (no noise is drawn)."""
    from ..attacks import verify_on_data

    need = len(secret.values) * VERIFY_SAMPLES * (n + len(cfg.query)) * 8.0 * 2
    check_memory(need, f"--verify ({VERIFY_SAMPLES} datasets per value of {n} rows)")
    samples = model_query(
        model_frame,
        query,
        secret,
        subset_size=n,
        method="montecarlo",
        n_samples=VERIFY_SAMPLES,
        missing=cfg.missing,
        pool_size=_pool_size(model_frame, n),
    ).to_sampled()
    return verify_on_data(samples, mech)


def _complete(table: Table, cfg: ReleaseConfig, query: Query, secret: ProportionSecret) -> Table:
    """The modelling table under the missing-value policy (a filter in the engine), for the
    ledger's joint model, which applies no policy of its own."""
    if cfg.missing == "error":
        return table
    used = query.columns | secret.columns
    return table.complete(used, missing=cfg.missing, what="modelling data")[0]


def _draw(
    session: Any,
    cfg: ReleaseConfig,
    mech: CalibratedMechanism,
    model: DataQueryModel,
    value: np.ndarray,
    query: Query,
    secret: ProportionSecret,
    released: Table,
    model_table: Table,
    fingerprints: tuple[str, str],
    ledger_key: bytes | None,
) -> tuple[Any, Any]:
    """The noise: secure sampler (or the insecure seed), inside the ledger's transaction.

    The ledger's account of the data is the keyed multiset fingerprint of the released
    table under the ledger's identity key (the same rows in any order: the same account),
    or ``name:<data_name>``.
    """
    noise_rng = None if cfg.insecure_seed is None else check_rng(cfg.insecure_seed)
    if session is None:
        return mech.release(value, rng=noise_rng), None
    data_fp, model_fp = fingerprints
    # The engine computed both fingerprints under the ledger's key; the session keys them
    # into accounts (``data_name`` wins when set).
    return session.draw(
        mechanism=mech,
        value=value,
        query=query,
        secret=secret,
        model_frame=_complete(model_table, cfg, query, secret),
        subset_size=released.n_rows,
        method=method_for(mech.name, cfg.model.get("method", "analytic")),
        n_samples=cfg.model.get("n_samples", 1000),
        noise_rng=noise_rng,
        model_rng=cfg.model.get("seed", 0),
        data_fingerprint=data_fp if ledger_key is not None else None,
        model_fingerprint=model_fp if ledger_key is not None else None,
        model=model,
        population=bool(cfg.model.get("population", False)),
    )


def run_release(
    config: str | Path | ReleaseConfig,
    *,
    data: str | Path | None = None,
    insecure_seed: int | None = None,
    include_true: bool | None = None,
    verify: bool = False,
    ledger: str | Path | Ledger | bool | None = None,
    budget: Budget | str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReleaseOutcome:
    """Release the configured statistics of a table with secure noise.

    Reads the configuration, loads the modelling and released tables (paths relative to
    the config file), warns (:class:`~distpriv.errors.PrivacyLeakWarning`) when the
    modelling table contains released rows or is too small for the subset size, builds
    the query model the mechanism's registry entry asks for (Chen & Ohrimenko 2023
    App. C.1), calibrates (e.g. Thm 4.5 for EigM), and releases F(data) + Z with noise
    from the secure sampler.

    Parameters
    ----------
    config : path or ReleaseConfig
    data : path, optional
        The table to release (overrides ``[data] release``), relative to the working
        directory.
    insecure_seed : int, optional
        Reproducible numpy noise from this seed (overrides the config's
        ``insecure_seed``). The release is then NOT private and says so.
    include_true : bool, optional
        Put the true values into the private diagnostics (default: the config's
        ``[output] include_true``).
    verify : bool
        Before releasing, estimate δ(ε) of the actual outputs f_θ + Z on resampled data
        (:func:`distpriv.attacks.verify_on_data`); the check goes into the public report,
        and a release whose certified lower bound exceeds the target δ is refused.
    ledger : path, Ledger or False, optional
        Judge the release together with the earlier ones of the same data and secret
        (overrides ``[ledger] path``; docs/composition.md): one ledger transaction holds
        the exact composition, the budget check, the noise draw and the record. By default
        the ledger is ``[ledger] path`` or ``distpriv-ledger.sqlite`` next to the config;
        ``False`` (``--no-ledger``) or ``[ledger] enabled = false`` opts out, and the
        report then says the release is not recorded in any ledger.
    budget : Budget or "EPS,DELTA", optional
        (ε, δ) budget for this data and secret (``[ledger] budget`` must agree); recorded
        with the first release, and a later budget that differs is an error naming both.
        A release that would exceed it raises :class:`~distpriv.errors.BudgetExceededError`
        before any noise is drawn.
    progress : callable(done, total), optional
        Called as ``mechanism = "auto"`` calibrates each candidate mechanism.

    Returns
    -------
    ReleaseOutcome
        ``public``: the publishable report; ``private``: model moments, stratum sizes,
        calibration diagnostics, the salt of the data fingerprint, true values on request.
    """
    cfg = _config(config)
    if insecure_seed is not None:
        cfg = dataclasses.replace(cfg, insecure_seed=insecure_seed)
    seed = cfg.insecure_seed
    check_rng(seed, "insecure_seed")
    # always on unless opted out; fail on a bad ledger or budget before modelling
    session = open_ledger(cfg.ledger, ledger=ledger, budget=budget, config_path=cfg.path)
    # The data identity's key: the ledger's, else a fresh one kept in the PRIVATE output.
    ledger_key = None if session is None else getattr(session.ledger, "identity_key", None)
    key = ledger_key if ledger_key is not None else new_identity_key()
    with _collect_warnings() as caught:
        secret, query, n = _secret(cfg), Query(cfg.query, ranges=cfg.ranges), _subset_size(cfg)
        model_frame, released, source, overlap = _tables(cfg, data, n)
        model, mech, choice = _model_and_mechanism(cfg, model_frame, query, secret, n, progress)
        _warn_partial_noise(mech, verify)
        evaluation = query.evaluation(released, missing=cfg.missing)
        value = evaluation.value
        _warn_dropped(evaluation.n_rows, n)
        verification = _verify(cfg, model_frame, query, secret, n, mech) if verify else None
        fps = (
            multiset_fingerprint(released, key=key),
            _model_fingerprint(model_frame, query, secret, key),
        )
        rel, ledger_block = _draw(
            session, cfg, mech, model, value, query, secret, released, model_frame, fps, ledger_key
        )
        prov = provenance(rel=rel, data_sha256=fps[0], model_data_sha256=fps[1], insecure_seed=seed)
        public = public_release(
            title=cfg.title,
            secret=secret,
            query=query,
            rel=rel,
            mech=mech,
            prov=prov,
            verification=verification,
        )
        if ledger_block is None:  # the curator opted out: the report says so
            from .ledger import not_recorded

            why = "--no-ledger" if ledger is False else "[ledger] enabled = false"
            ledger_block = not_recorded(why)
        public["ledger"] = to_jsonable(ledger_block)
        if choice is not None:  # mechanism = "auto": the comparison behind the choice
            public["choice"] = choice.rows()
            public["choice_weights"] = None if choice.weights is None else list(choice.weights)
        report = ReleaseReport(rel, mech, model, value, released.n_rows)
        private = {
            "kind": "release-diagnostics",
            "private": PRIVATE_BANNER,
            "title": cfg.title,
            "config": cfg.path,
            "data": source,
            # The key of the data fingerprints (HMAC): the ledger keeps its own.
            "identity_key": None if ledger_key is not None else key.hex(),
            "rows_also_in_modelling_table": overlap,
            "missing": evaluation.missing.to_dict(),
            "noise_to_spread": noise_to_spread(mech, model),
            **report.diagnostics(
                include_true=cfg.include_true if include_true is None else include_true
            ),
        }
    private["warnings"] = list(caught.lines)
    return ReleaseOutcome(public, to_jsonable(private), caught.lines, report)


def run_verify(
    config: str | Path | ReleaseConfig,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyOutcome:
    """Model, calibrate and check a configured release on data, drawing no noise.

    The dry run of :func:`run_release` with ``verify=True``: the same model and mechanism
    (auto's choice included), then the data-level check of the actual outputs f_θ + Z on
    datasets resampled from the modelling table (:func:`distpriv.attacks.verify_on_data`).
    Nothing is released, no noise is drawn, no ledger is opened or written; the released
    table is not read.

    Returns
    -------
    VerifyOutcome
        ``public``: ``kind = "verification"``, the mechanism, its guarantee and the check
        (with its verdict); ``private``: the model.
    """
    cfg = _config(config)
    with _collect_warnings() as caught:
        secret, query, n = _secret(cfg), Query(cfg.query, ranges=cfg.ranges), _subset_size(cfg)
        model_frame = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
        model, mech, choice = _model_and_mechanism(cfg, model_frame, query, secret, n, progress)
        check = _verify_check(cfg, model_frame, query, secret, n, mech)
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
            # The price per statistic, before any noise is drawn (pipeline.price, issue 25).
            "price": price_for_options(model, mech, cfg.options).to_dict(),
            "choice": None if choice is None else choice.rows(),
            "noise_drawn": False,
            "provenance": {"version": __version__},
        }
    private = {
        "kind": "verification-diagnostics",
        "private": PRIVATE_BANNER,
        "model": model.to_dict(),
        "warnings": list(caught.lines),
    }
    return VerifyOutcome(to_jsonable(public), to_jsonable(private), caught.lines, report=check)


def _audit_sources(cfg: ReleaseConfig) -> tuple[str, str]:
    builtin = cfg.model_source.startswith(BUILTIN_PREFIX)
    aux = cfg.auxiliary_source or ("adult:auxiliary" if builtin else None)
    test = cfg.test_source or ("adult:test" if builtin else None)
    if aux is None or test is None:
        raise ConfigError(
            f"{cfg.path}: [data] needs 'auxiliary' and 'test' tables for the audit (the "
            "attacker's shadow data and the data test datasets are drawn from)"
        )
    return aux, test


def _audit_options(cfg: ReleaseConfig, name: str) -> dict[str, Any]:
    # The config's options belong to its mechanism; others get only its calibration.
    if name == cfg.mechanism:
        return dict(cfg.options)
    if "calibration" in cfg.options and mechanism_info(name).gaussian:
        return {"calibration": cfg.options["calibration"]}
    return {}


def _audit_mechanisms(
    cfg: ReleaseConfig,
    names: Sequence[str],
    model_frame: Table,
    query: Query,
    secret: ProportionSecret,
    n: int,
) -> tuple[list[CalibratedMechanism], DataQueryModel, list[str]]:
    """Calibrate each mechanism on the same model its release would use."""
    base = cfg.model.get("method", "analytic")
    models: dict[str, DataQueryModel] = {}
    facts = None
    if any(nm != AUTO and mechanism_info(nm).defaults for nm in names):
        facts = engine_table_facts(model_frame, query, n, missing=cfg.missing)  # once per table
    mechs, notes = [], []
    for name in [*names, None]:
        method = method_for(name, base) if name not in (None, AUTO) else base
        if method not in models:
            n_samples = _check_model_memory(cfg, secret, n, method)
            models[method] = build_model(
                model_frame,
                query,
                secret,
                mechanism="eigm" if (name or cfg.mechanism) == AUTO else (name or cfg.mechanism),
                subset_size=n,
                method=method,
                n_samples=n_samples,
                rng=cfg.model.get("seed", 0),
                missing=cfg.missing,
                population=cfg.model.get("population", False),
                pool_size=_pool_size(model_frame, n),
            )
        if name is None:
            break
        if name == AUTO:
            # Audit what is released: auto's choice on the same model as the release's.
            choice = choose_for_table(
                models[method],
                epsilon=cfg.epsilon,
                delta=cfg.delta,
                options=cfg.options if cfg.mechanism == AUTO else {},
                facts=engine_table_facts(model_frame, query, n, missing=cfg.missing),
            )
            mechs.append(choice.mechanism)
            notes.append(
                f"auto: audited {choice.name!r}, the mechanism 'distpriv release' chooses "
                "for this configuration (least error among those whose guarantee verifies)"
            )
            continue
        try:
            opts = _audit_options(cfg, name)
            mechs.append(
                calibrate_for(
                    name,
                    models[method],
                    epsilon=cfg.epsilon,
                    delta=cfg.delta,
                    options=opts,
                    facts=facts,
                )
            )
        except MechanismNotApplicableError as exc:
            notes.append(f"{name} not audited: {exc}")
    return mechs, models[base], notes


def run_audit(
    config: str | Path | ReleaseConfig,
    *,
    mechanisms: Sequence[str] | None = None,
    repetitions: int | None = None,
    classifiers: Sequence[str] | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditOutcome:
    """Attack the configured mechanism(s) and test the claimed ε (Chen & Ohrimenko §5.3).

    Each mechanism is calibrated on the same model as its release
    (:func:`run_release`); arguments left ``None`` come from the config's ``[audit]``
    table, then from the defaults (the config's mechanism, 10 repetitions, the logistic
    classifier, confidence 0.95, a fresh seed).

    Returns
    -------
    AuditOutcome
        ``public``: the audit report (``AuditReport.to_dict()`` with ``kind``, ``title``,
        ``secret`` and ``provenance``).
    """
    from ..attacks import audit  # scikit-learn: imported only when auditing
    from ..attacks.audit import check_audit_size

    cfg = _config(config)
    aud = cfg.audit
    names = list(mechanisms or aud.get("mechanisms") or [cfg.mechanism])
    if names == ["all"]:
        names = list(MECHANISMS)
    for name in names:
        if name != AUTO:  # "auto": the mechanism the release would choose, audited below
            mechanism_info(name)
    seed = aud.get("seed") if seed is None else seed
    gen = check_rng(seed, "seed")
    aux_src, test_src = _audit_sources(cfg)
    with _collect_warnings() as caught:
        secret, query, n = _secret(cfg), Query(cfg.query, ranges=cfg.ranges), _subset_size(cfg)
        reps = check_positive_int(
            aud.get("repetitions", 10) if repetitions is None else repetitions, "repetitions"
        )
        n_shadow = check_positive_int(aud.get("n_shadow", 200), "n_shadow", minimum=2)
        n_test = check_positive_int(aud.get("n_test", 200), "n_test", minimum=2)
        reps = check_audit_size(reps, n_shadow, n_test)  # bounded work, before any data
        check_memory((n_shadow + n_test) * n * 8.0 * 3, f"n_shadow + n_test with subset_size={n}")
        model_frame = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
        mechs, model, notes = _audit_mechanisms(cfg, names, model_frame, query, secret, n)
        report = audit(
            auxiliary=load_frame(aux_src, split_seed=cfg.split_seed, what="[data] auxiliary"),
            test=load_frame(test_src, split_seed=cfg.split_seed, what="[data] test"),
            query=query,
            secret=secret,
            subset_size=n,
            mechanisms=["none", *mechs],
            model=model,
            repetitions=reps,
            n_shadow=n_shadow,
            n_test=n_test,
            classifiers=tuple(classifiers or aud.get("classifiers") or ("logistic",)),
            confidence=aud.get("confidence", 0.95) if confidence is None else confidence,
            rng=gen,
            progress=progress,
        )
    key = new_identity_key()
    public = {
        "kind": "audit",
        "title": cfg.title,
        "secret": secret_dict(secret),
        **report.to_dict(),
        "provenance": {
            "version": __version__,
            "model_data_sha256": _model_fingerprint(model_frame, query, secret, key),
            "seed": seed,
        },
    }
    public["notes"] = [*public.get("notes", []), *notes]
    private = {
        "kind": "audit-diagnostics",
        "private": PRIVATE_BANNER,
        "model": model.to_dict(),
        "identity_key": key.hex(),
    }
    return AuditOutcome(to_jsonable(public), to_jsonable(private), caught.lines, report=report)


def run_demo(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    seed: int = 0,
    n_samples: int = 1000,
    attack_repetitions: int = 5,
) -> DemoOutcome:
    """Every mechanism on the paper's Adult setting (Chen & Ohrimenko 2023 §5.1), simulated.

    A simulation on public data: the noise is numpy's, seeded, and the report says so.
    """
    with _collect_warnings() as caught:
        report = demo_report(
            epsilon=epsilon,
            delta=delta,
            seed=seed,
            n_samples=n_samples,
            attack_repetitions=attack_repetitions,
        )
    public = {"kind": "demo", "simulation": True, **report.to_dict()}
    return DemoOutcome(public, {}, caught.lines, report=report)


def run_calibrate(
    model_file: str | Path,
    *,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    calibration: str | None = None,
) -> CalibrateOutcome:
    """Calibrate a mechanism to a Gaussian query model read from a TOML file.

    Raises
    ------
    MechanismNotApplicableError
        The mechanism needs another view of f_θ than a model file gives (the Wasserstein
        mechanisms need Monte Carlo samples, APMQM a parameter network).
    ParameterError
        ``calibration`` for a non-Gaussian mechanism; an ε so small (or large) that the
        noise is not a finite number.
    """
    cfg = load_model_config(model_file)
    spec = mechanism_info(mechanism)
    if spec.model_view != "gaussian":
        raise MechanismNotApplicableError(
            f"mechanism {mechanism!r} is calibrated on "
            + (
                "Monte Carlo samples of f_theta; a model file gives only a Gaussian: use "
                "'distpriv release' or 'distpriv audit' with a data table (the samples are "
                "drawn from it)"
                if spec.model_view == "samples"
                else "a parameter network, not a query model (see distpriv.central.apmqm)"
            )
        )
    options = dict(cfg.options.get(mechanism, {}))
    if calibration is not None:
        if not spec.gaussian:
            raise ParameterError(f"--calibration applies to Gaussian mechanisms, not {mechanism!r}")
        options["calibration"] = calibration
    mech = checked_noise(calibrate(mechanism, cfg.model, epsilon=epsilon, delta=delta, **options))
    public = {
        "kind": "calibration",
        "title": cfg.title,
        "model_file": cfg.path,
        "version": __version__,
        "model": cfg.model.to_dict(),
        **mech.to_dict(),
    }
    return CalibrateOutcome(to_jsonable(public), {}, (), mechanism=mech)
