"""``distpriv audit``: property-inference attacks against the configured mechanisms
(Chen & Ohrimenko 2023 §5.3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...accounting.calibration_cache import shared_calibration
from ...central import MECHANISMS, CalibratedMechanism, mechanism_info
from ...errors import (
    ConfigError,
    MechanismNotApplicableError,
    ParameterError,
)
from ...guarantees import to_jsonable
from ...modeling import DataQueryModel, Query, Secret
from ...modeling.identity import new_identity_key
from ...modeling.tables import Table
from ...util.validation import check_positive_int, check_rng
from ...util.version import __version__
from ..config import BUILTIN_PREFIX, ReleaseConfig
from ..outcomes import (
    AuditOutcome,
)
from ..report import PRIVATE_BANNER, secret_dict
from ..stages.calibrate import AUTO, calibrate_for, choose_for_table
from ..stages.data import (
    check_memory,
    engine_table_facts,
    load_frame,
    open_table,
)
from ..stages.model import build_query_model
from ..stages.steps import (
    _collect_warnings,
    _config,
    _model_fingerprint,
    _population_set,
    _secret,
    _subset_size,
    model_spec,
)

__all__ = ["run_audit"]


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
    options = cfg.plan.calibration.mechanism_options()
    if name == cfg.mechanism:
        return options
    if "calibration" in options and mechanism_info(name).gaussian:
        return {"calibration": options["calibration"]}
    return {}


def _audit_mechanisms(
    cfg: ReleaseConfig,
    names: Sequence[str],
    model_frame: Table,
    query: Query,
    secret: Secret,
    n: int,
) -> tuple[list[CalibratedMechanism], DataQueryModel, list[str]]:
    """Calibrate each mechanism on the same model its release would use.

    One model per modelling method and one set of table facts for all of them; the
    calibrations (``auto``'s candidates and the named mechanisms) run in one
    :func:`~distpriv.central.shared_calibration` block, so the accountant's pure work
    (pair checks, the population set's members) is done once per model and noise.
    """
    with shared_calibration():
        return _calibrate_all(cfg, names, model_frame, query, secret, n)


def _calibrate_all(
    cfg: ReleaseConfig,
    names: Sequence[str],
    model_frame: Table,
    query: Query,
    secret: Secret,
    n: int,
) -> tuple[list[CalibratedMechanism], DataQueryModel, list[str]]:
    models: dict[str, DataQueryModel] = {}
    facts = None
    if any(nm == AUTO or mechanism_info(nm).defaults for nm in names):
        facts = engine_table_facts(model_frame, query, n, missing=cfg.missing)  # once per table
    mechs, notes = [], []
    for name in [*names, None]:
        view = name if name not in (None, AUTO) else "eigm"  # auto, None: the configured method
        method = cfg.plan.model.for_mechanism(view).method
        if method not in models:
            spec = model_spec(cfg, n, view, secret)
            models[method] = build_query_model(spec, model_frame, query, secret)
        if name is None:
            break
        if name == AUTO:
            # Audit what is released: auto's choice on the same model as the release's.
            choice = choose_for_table(
                models[method],
                epsilon=cfg.epsilon,
                delta=cfg.delta,
                options=cfg.options if cfg.mechanism == AUTO else {},
                facts=facts,
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
    return mechs, models[cfg.plan.model.method], notes


def _pairs_of(secret: Secret) -> tuple[Any, ...]:
    """The pairs an audit can attack: an event secret's pairs of events, else Ψ."""
    return tuple(getattr(secret, "event_pairs", None) or secret.pairs)


def run_audit(
    config: str | Path | ReleaseConfig,
    *,
    mechanisms: Sequence[str] | None = None,
    repetitions: int | None = None,
    classifiers: Sequence[str] | None = None,
    confidence: float | None = None,
    seed: int | None = None,
    pairs: str | int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AuditOutcome:
    """Attack the configured mechanism(s) and test the claimed ε (Chen & Ohrimenko §5.3).

    Each mechanism is calibrated on the same model as its release
    (:func:`run_release`); arguments left ``None`` come from the config's ``[audit]``
    table, then from the defaults (the config's mechanism, 10 repetitions, the logistic
    classifier, confidence 0.95, a fresh seed, ``pairs="auto"``).

    ``pairs`` chooses the pairs of Ψ attacked (:func:`~distpriv.attacks.audit_pairs.choose_pairs`:
    ``"all"``, ``"binding"``, ``"first"``, a number per attribute, or ``"auto"``). A secret of
    one pair gets :func:`~distpriv.attacks.audit`'s report; a secret of several pairs (a range,
    several values or several attributes) one audit per chosen pair
    (:func:`~distpriv.attacks.audit_pairs`), sharing the datasets at each value.

    Returns
    -------
    AuditOutcome
        ``public``: the audit report (``AuditReport.to_dict()`` with ``kind``, ``title``,
        ``secret`` and ``provenance``).
    """
    from ...attacks import audit  # scikit-learn: imported only when auditing
    from ...attacks.audit import check_audit_size
    from ...attacks.audit_pairs import audit_pairs, parse_pairs

    cfg = _config(config)
    aud = cfg.plan.audit
    names = list(mechanisms or aud.mechanisms or [cfg.mechanism])
    if names == ["all"]:
        names = list(MECHANISMS)
    for name in names:
        if name != AUTO:  # "auto": the mechanism the release would choose, audited below
            mechanism_info(name)
    seed = aud.seed if seed is None else seed
    if pairs is None and aud.pairs is not None:
        try:
            which = parse_pairs(aud.pairs)
        except ParameterError as exc:
            raise ConfigError(f"{cfg.path}: [audit] {exc}") from None
    else:
        which = parse_pairs("auto" if pairs is None else pairs, flag="--pairs")
    gen = check_rng(seed, "seed")
    aux_src, test_src = _audit_sources(cfg)
    with _collect_warnings() as caught, _population_set(cfg):
        secret, query, n = _secret(cfg), Query(cfg.query, ranges=cfg.ranges), _subset_size(cfg)
        reps = check_positive_int(
            aud.repetitions if repetitions is None else repetitions, "repetitions"
        )
        n_shadow = check_positive_int(aud.n_shadow, "n_shadow", minimum=2)
        n_test = check_positive_int(aud.n_test, "n_test", minimum=2)
        reps = check_audit_size(reps, n_shadow, n_test)  # bounded work, before any data
        check_memory((n_shadow + n_test) * n * 8.0 * 3, f"n_shadow + n_test with subset_size={n}")
        model_frame = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
        mechs, model, notes = _audit_mechanisms(cfg, names, model_frame, query, secret, n)
        # Several pairs (a range, several values or attributes): one audit per chosen pair
        # (attacks/audit_pairs.py); one pair: the single audit's report, as before.
        many = secret.kind == "several" or len(_pairs_of(secret)) > 1
        run_one: Any = audit_pairs if many else audit
        extra: dict[str, Any] = {"pairs": which} if many else {}
        report = run_one(
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
            classifiers=tuple(classifiers or aud.classifiers),
            confidence=aud.confidence if confidence is None else confidence,
            rng=gen,
            progress=progress,
            **extra,
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
    if secret.kind == "several":  # each attribute's guarantee beside its attacks
        from .audit_kinds import several_audit_blocks

        beta = cfg.plan.calibration.beta
        notes += several_audit_blocks(public, model, mechs, beta=beta)
    public["notes"] = [*public.get("notes", []), *notes]
    private = {
        "kind": "audit-diagnostics",
        "private": PRIVATE_BANNER,
        "model": model.to_dict(),
        "identity_key": key.hex(),
    }
    return AuditOutcome(to_jsonable(public), to_jsonable(private), caught.lines, report=report)
