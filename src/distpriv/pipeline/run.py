"""The curator's process, one function per command: release, audit, demo, calibrate.

Each function reads its configuration, builds everything in memory and returns a frozen
outcome with a ``public`` report and the curator's ``private`` diagnostics; nothing is
written here (the CLI writes files only once the whole command has succeeded).
DESIGN.md §2: config → data → model → calibrate → verify → release → report.
"""

from __future__ import annotations

import dataclasses
import secrets as _secrets
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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
from .auto import AUTO, AutoChoice, choose_for_table
from .config import BUILTIN_PREFIX, ReleaseConfig, load_model_config, load_release_config
from .demo import demo_report
from .ledger import Budget, Ledger, open_ledger
from .outcomes import AuditOutcome, CalibrateOutcome, DemoOutcome, ReleaseOutcome
from .release import ReleaseReport, build_model, calibrate_for, checked_noise, method_for
from .report import PRIVATE_BANNER, provenance, public_release, secret_dict
from .sources import (
    check_memory,
    check_model_support,
    fingerprint,
    load_frame,
    sample_subset,
    table_facts,
    warn_overlap,
)

__all__ = ["run_audit", "run_calibrate", "run_demo", "run_release"]


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


def _tables(
    cfg: ReleaseConfig, data: str | Path | None, n: int
) -> tuple[pd.DataFrame, pd.DataFrame, str, int]:
    """Modelling and released tables, the released one's source, and their row overlap."""
    model_frame = load_frame(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
    subset_rng = np.random.default_rng(cfg.insecure_seed)  # fresh OS entropy unless insecure
    released, source = _released_frame(cfg, data, n, subset_rng)
    if len(released) != n:
        raise ParameterError(
            f"data has {len(released)} rows but subset_size={n}: the query model "
            f"describes datasets of {n} rows, so only such a dataset can be released"
        )
    return model_frame, released, source, warn_overlap(model_frame, released)


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


def _released_frame(
    cfg: ReleaseConfig, data: str | Path | None, n: int, rng: np.random.Generator
) -> tuple[pd.DataFrame, str]:
    if data is not None:
        return load_frame(str(data), what="--data"), str(data)
    if cfg.release_source is None:
        raise ConfigError(f"{cfg.path}: no table to release: give --data PATH or [data] release")
    frame = load_frame(cfg.release_source, split_seed=cfg.split_seed, what="[data] release")
    if cfg.release_source.startswith(BUILTIN_PREFIX):  # a random n-row dataset of the split
        frame = sample_subset(frame, n, rng)
    return frame, cfg.release_source


def _model_and_mechanism(
    cfg: ReleaseConfig,
    model_frame: pd.DataFrame,
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
    )
    check_model_support(model.stratum_sizes, model.counts, n)
    facts = table_facts(model_frame, query, n) if mechanism_info(cfg.mechanism).defaults else None
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
    model_frame: pd.DataFrame,
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
    )
    check_model_support(model.stratum_sizes, model.counts, n)
    choice = choose_for_table(
        model,
        epsilon=cfg.epsilon,
        delta=cfg.delta,
        options=cfg.options,
        facts=table_facts(model_frame, query, n),
        progress=progress,
    )
    return model, choice.mechanism, choice


# Monte Carlo datasets per value for the data-level check (half form the density mixture,
# half are evaluation draws: verify_on_data's default n_eval = 10,000).
VERIFY_SAMPLES = 20_000


def _verify(
    cfg: ReleaseConfig,
    model_frame: pd.DataFrame,
    query: Query,
    secret: ProportionSecret,
    n: int,
    mech: CalibratedMechanism,
) -> dict[str, Any]:
    """The data-level check of f_θ + Z (attacks.verify_on_data); refuses a failing release."""
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
    ).to_sampled()
    check = verify_on_data(samples, mech)
    if not check.consistent:
        raise MechanismNotApplicableError(
            f"release refused by --verify: on resampled data, {mech.name!r} reaches "
            f"delta >= {check.delta_lower:.3g} at epsilon={check.epsilon:g} (certified lower "
            f"bound), above its target {check.target_delta:g}; " + " ".join(check.notes[:1])
        )
    return check.to_dict()


def _draw(
    session: Any,
    cfg: ReleaseConfig,
    mech: CalibratedMechanism,
    value: np.ndarray,
    query: Query,
    secret: ProportionSecret,
    released: pd.DataFrame,
    model_frame: pd.DataFrame,
) -> tuple[Any, Any]:
    """The noise: secure sampler (or the insecure seed), inside the ledger's transaction."""
    noise_rng = None if cfg.insecure_seed is None else check_rng(cfg.insecure_seed)
    if session is None:
        return mech.release(value, rng=noise_rng), None
    return session.draw(
        mechanism=mech,
        value=value,
        query=query,
        secret=secret,
        released_frame=released,
        model_frame=model_frame,
        subset_size=len(released),
        method=method_for(mech.name, cfg.model.get("method", "analytic")),
        n_samples=cfg.model.get("n_samples", 1000),
        noise_rng=noise_rng,
        model_rng=cfg.model.get("seed", 0),
    )


def run_release(
    config: str | Path | ReleaseConfig,
    *,
    data: str | Path | None = None,
    insecure_seed: int | None = None,
    include_true: bool | None = None,
    verify: bool = False,
    ledger: str | Path | Ledger | None = None,
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
    ledger : path or Ledger, optional
        Judge the release together with the earlier ones of the same data and secret
        (overrides ``[ledger] path``; docs/composition.md): one ledger transaction holds
        the exact composition, the budget check, the noise draw and the record.
    budget : Budget or "EPS,DELTA", optional
        (ε, δ) budget for this data and secret (with ``[ledger] budget``, the tighter).
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
    session = open_ledger(cfg.ledger, ledger=ledger, budget=budget)  # fail before modelling
    with _collect_warnings() as caught:
        secret, query, n = _secret(cfg), Query(cfg.query), _subset_size(cfg)
        model_frame, released, source, overlap = _tables(cfg, data, n)
        model, mech, choice = _model_and_mechanism(cfg, model_frame, query, secret, n, progress)
        _warn_partial_noise(mech, verify)
        evaluation = query.evaluation(released, missing=cfg.missing)
        value = evaluation.value
        _warn_dropped(evaluation.n_rows, n)
        verification = _verify(cfg, model_frame, query, secret, n, mech) if verify else None
        rel, ledger_block = _draw(session, cfg, mech, value, query, secret, released, model_frame)
        salt = _secrets.token_bytes(32)
        prov = provenance(
            rel=rel,
            data_sha256=fingerprint(released, salt=salt),
            model_data_sha256=fingerprint(model_frame),
            insecure_seed=seed,
        )
        public = public_release(
            title=cfg.title,
            secret=secret,
            query=query,
            rel=rel,
            mech=mech,
            prov=prov,
            verification=verification,
        )
        public["ledger"] = to_jsonable(ledger_block)
        if choice is not None:  # mechanism = "auto": the comparison behind the choice
            public["choice"] = choice.rows()
            public["choice_weights"] = None if choice.weights is None else list(choice.weights)
        report = ReleaseReport(rel, mech, model, value, len(released))
        private = {
            "kind": "release-diagnostics",
            "private": PRIVATE_BANNER,
            "title": cfg.title,
            "config": cfg.path,
            "data": source,
            "data_sha256_salt": salt.hex(),
            "rows_also_in_modelling_table": overlap,
            "missing": evaluation.missing.to_dict(),
            **report.diagnostics(
                include_true=cfg.include_true if include_true is None else include_true
            ),
        }
    private["warnings"] = list(caught.lines)
    return ReleaseOutcome(public, to_jsonable(private), caught.lines, report)


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
    model_frame: pd.DataFrame,
    query: Query,
    secret: ProportionSecret,
    n: int,
) -> tuple[list[CalibratedMechanism], DataQueryModel, list[str]]:
    """Calibrate each mechanism on the same model its release would use."""
    base = cfg.model.get("method", "analytic")
    models: dict[str, DataQueryModel] = {}
    facts = None
    if any(mechanism_info(nm).defaults for nm in names):
        facts = table_facts(model_frame, query, n)  # once per table
    mechs, notes = [], []
    for name in [*names, None]:
        method = method_for(name, base) if name is not None else base
        if method not in models:
            n_samples = _check_model_memory(cfg, secret, n, method)
            models[method] = build_model(
                model_frame,
                query,
                secret,
                mechanism=name or cfg.mechanism,
                subset_size=n,
                method=method,
                n_samples=n_samples,
                rng=cfg.model.get("seed", 0),
                missing=cfg.missing,
            )
        if name is None:
            break
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
    if names in (["all"], [AUTO]):  # "auto" chooses among all of them at release time
        names = list(MECHANISMS)
    for name in names:
        mechanism_info(name)
    seed = aud.get("seed") if seed is None else seed
    gen = check_rng(seed, "seed")
    aux_src, test_src = _audit_sources(cfg)
    with _collect_warnings() as caught:
        secret, query, n = _secret(cfg), Query(cfg.query), _subset_size(cfg)
        reps = check_positive_int(
            aud.get("repetitions", 10) if repetitions is None else repetitions, "repetitions"
        )
        n_shadow = check_positive_int(aud.get("n_shadow", 200), "n_shadow", minimum=2)
        n_test = check_positive_int(aud.get("n_test", 200), "n_test", minimum=2)
        reps = check_audit_size(reps, n_shadow, n_test)  # bounded work, before any data
        check_memory((n_shadow + n_test) * n * 8.0 * 3, f"n_shadow + n_test with subset_size={n}")
        model_frame = load_frame(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
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
    public = {
        "kind": "audit",
        "title": cfg.title,
        "secret": secret_dict(secret),
        **report.to_dict(),
        "provenance": {
            "version": __version__,
            "model_data_sha256": fingerprint(model_frame),
            "seed": seed,
        },
    }
    public["notes"] = [*public.get("notes", []), *notes]
    private = {"kind": "audit-diagnostics", "private": PRIVATE_BANNER, "model": model.to_dict()}
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
