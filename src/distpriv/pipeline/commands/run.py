"""The curator's process, one function per command: ``distpriv release`` here.

The other commands live by concern beside it (:mod:`.verify_command`,
:mod:`.audit_command`, :mod:`.calibrate_command`; the steps they share in :mod:`.steps`)
and are re-exported here, so ``from distpriv.pipeline.commands.run import run_audit`` keeps
working. Each function reads its configuration, builds everything in memory and returns a
frozen outcome with a ``public`` report and the curator's ``private`` diagnostics; nothing
is written here (the CLI writes files only once the whole command has succeeded).
docs/architecture.md §2: config → data → model → calibrate → verify → release → report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...guarantees import to_jsonable
from ...modeling.identity import multiset_fingerprint, new_identity_key
from ...modeling.secret_identity import secret_accounts
from ...modeling.tables import Table
from ...util.validation import check_rng
from ..config import ReleaseConfig
from ..ledger import Budget, DataIdentity, Ledger, LedgerSession, PendingRelease, open_ledger
from ..outcomes import (
    ReleaseOutcome,
)
from ..report import (
    PRIVATE_BANNER,
    lead_with_accounts,
    noise_to_spread,
    provenance,
    public_release,
    public_warnings,
)
from ..stages.steps import (
    _collect_warnings,
    _complete,
    _model_and_mechanism,
    _model_fingerprint,
    _population_set,
    release_config,
    release_inputs,
)
from .audit import run_audit
from .calibrate import run_calibrate, run_demo
from .release import ReleaseReport, release_warnings
from .verify import _verify, run_verify

__all__ = ["run_audit", "run_calibrate", "run_demo", "run_release", "run_verify"]


def _draw(
    session: LedgerSession | None,
    pending: PendingRelease,
    released: Table,
    fingerprints: Callable[[bytes], tuple[str, str]],
    key: bytes,
) -> tuple[Any, Any, tuple[str, str]]:
    """The noise: secure sampler (or the insecure seed), inside the ledger's transaction.

    The ledger's account of the data is the keyed multiset fingerprint of the released
    table under the ledger's identity key (the same rows in any order: the same account),
    or ``name:<data_name>``. ``fingerprints(key)`` computes both tables' fingerprints in
    the engine; with a ledger it is called under the ledger's key at the draw (again if
    another process created a new ledger first, with its own key). Returns the release,
    the ledger block and the fingerprints used.
    """
    if session is None:
        return (
            pending.mechanism.release(pending.value, rng=pending.noise_rng),
            None,
            fingerprints(key),
        )
    used: list[tuple[str, str]] = []

    def keyed(k: bytes) -> tuple[str, str]:
        used.append(fingerprints(k))
        return used[-1]

    # The engine computes both fingerprints under the ledger's key; the session keys them
    # into accounts (``data_name`` wins when set).
    secret = pending.secret
    identity = DataIdentity(
        fingerprints=keyed,
        secret_accounts=lambda k: secret_accounts(released, secret, key=k),
        legacy_fingerprint=lambda k: multiset_fingerprint(released, key=k, canonical=False),
    )
    rel, block = session.draw(pending, identity)
    return rel, block, used[-1]


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
    allow_overlap: bool | None = None,
) -> ReleaseOutcome:
    """Release the configured statistics of a table with secure noise.

    Reads the configuration, loads the modelling and released tables (paths relative to
    the config file), refuses a modelling table that contains released rows (unless
    ``allow_overlap``: then it warns), warns
    (:class:`~distpriv.errors.PrivacyLeakWarning`) when it is too small for the subset size, builds
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
    allow_overlap : bool, optional
        Release even though the modelling table holds released rows (beyond chance), with
        a warning; by default (the config's ``[data] allow_overlap``, false unless set)
        such a release is refused before any modelling (``--allow-overlap``).

    Returns
    -------
    ReleaseOutcome
        ``public``: the publishable report; ``private``: model moments, stratum sizes,
        calibration diagnostics, the key of the data fingerprints (``identity_key``, when no
        ledger holds it), true values on request; the warnings, also in ``public`` in
        public words (:func:`~distpriv.pipeline.report.public_warnings`).
    """
    cfg = release_config(config, insecure_seed)
    seed = cfg.insecure_seed
    # always on unless opted out; fail on a bad ledger or budget before modelling
    session = open_ledger(cfg.ledger, ledger=ledger, budget=budget, config_path=cfg.path)
    # The data identity's key: the ledger's, else a fresh one kept in the PRIVATE output.
    ledger_key = None if session is None else getattr(session.ledger, "identity_key", None)
    key = ledger_key if ledger_key is not None else new_identity_key()
    with _collect_warnings() as caught, _population_set(cfg):
        # The stages in order: data (tables, checks, F(data)), model and calibration,
        # the release's warnings, the data-level check, the ledger's draw, the report.
        inputs = release_inputs(cfg, data, allow_overlap)
        secret, query, n = inputs.secret, inputs.query, inputs.n
        model_frame, released, evaluation = inputs.model_frame, inputs.released, inputs.evaluation
        value = evaluation.value
        model, mech, choice = _model_and_mechanism(
            cfg, model_frame, query, secret, n, progress, support=False
        )
        # One home for the release's warnings, shared with the library's distpriv.release.
        overlap = release_warnings(
            model_frame, released, model, mech, rows_used=evaluation.n_rows, verified=verify,
            overlap=inputs.overlap,
        )  # fmt: skip
        verification = _verify(cfg, model_frame, query, secret, n, mech) if verify else None

        def fingerprints(k: bytes) -> tuple[str, str]:
            return (
                multiset_fingerprint(released, key=k),
                _model_fingerprint(model_frame, query, secret, k),
            )

        pending = PendingRelease(
            mechanism=mech,
            value=value,
            query=query,
            secret=secret,
            # The ledger's joint model applies no missing-value policy of its own.
            model_data=model_frame
            if session is None
            else _complete(model_frame, cfg, query, secret),
            # The release's own model specification: the ledger's joint model is built like it.
            model_spec=replace(cfg.plan.model, subset_size=n).for_mechanism(mech.name),
            model=model,
            # The calibration's confidence on the population, kept by the composition.
            beta=cfg.plan.calibration.beta,
            noise_rng=None if seed is None else check_rng(seed),
        )
        rel, ledger_block, fps = _draw(session, pending, released, fingerprints, key)
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
        if hasattr(model, "parts"):  # several secrets at once: the guarantee per attribute
            from ..report_several import attribute_guarantees

            public["secret"]["attributes"] = attribute_guarantees(
                public["secret"]["attributes"], model, mech, beta=cfg.plan.calibration.beta
            )
        if ledger_block is None:  # the curator opted out: the report says so
            from ..ledger.records import not_recorded

            why = "--no-ledger" if ledger is False else "[ledger] enabled = false"
            ledger_block = not_recorded(why)
        public["ledger"] = to_jsonable(ledger_block)
        public = lead_with_accounts(public)  # earlier releases: the composed truth first
        if choice is not None:  # mechanism = "auto": the comparison behind the choice
            public |= choice.public()
        report = ReleaseReport(rel, mech, model, value, released.n_rows)
        private = {
            "kind": "release-diagnostics",
            "private": PRIVATE_BANNER,
            "title": cfg.title,
            "config": cfg.path,
            "data": inputs.source,
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
    # The report tells the whole truth: every warning, in public words.
    public["warnings"] = public_warnings(caught.items)
    return ReleaseOutcome(public, to_jsonable(private), caught.lines, report)
