"""A release judged together with the ledger's earlier releases of the same data and secret.

The glue between a release and the ledger: which ledger a release goes into (always one,
unless the curator opts out: :func:`open_ledger`, :func:`default_ledger_path`), the data's
keyed account (:mod:`.identity`), and the locked step that composes exactly
(:func:`distpriv.composition.accountant.compose`), checks the budget, draws the noise and
records (:func:`ledgered_draw`).

Distribution privacy does not compose sequentially (Kifer & Machanavajjhala 2014, the
Pufferfish framework; Chen & Ohrimenko 2023, §2): two releases of statistics of the same
data are correlated through the data, so the ledger is what lets the next release be judged
together with the earlier ones (docs/composition.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...errors import LedgerError, ParameterError, ParameterTypeError
from ..plan import ModelSpec
from .accounts import release_identity as _identity
from .accounts import secret_from_record, shown_key, text_key
from .identity import data_account, public_account, table_fingerprint
from .records import (
    DEFAULT_LEDGER_NAME,
    LEDGER_DIR_ENV,
    NOT_RECORDED,
    Budget,
    LedgerEntry,
    NewRelease,
    check_ledger_path,
    default_ledger_path,
    not_recorded,
    parse_budget,
)
from .store import Ledger, LedgerCreatedElsewhere

__all__ = [
    "DEFAULT_LEDGER_NAME",
    "LEDGER_DIR_ENV",
    "NOT_RECORDED",
    "LedgerSession",
    "LedgeredRelease",
    "default_ledger_path",
    "ledgered_draw",
    "not_recorded",
    "open_ledger",
    "release_with_ledger",
]


@dataclass(frozen=True)
class LedgeredRelease:
    """A release made through a ledger: the report, its row, and the composed guarantee.

    Attributes
    ----------
    report : distpriv.modeling.release.ReleaseReport
    entry : LedgerEntry
        The row recorded for it.
    composed : distpriv.composition.accountant.ComposedGuarantee
    budget : Budget or None
        The budget that was checked (the recorded one, or the one given with the first
        release of this data and secret).
    """

    report: Any
    entry: LedgerEntry
    composed: Any
    budget: Budget | None

    def ledger_summary(self) -> dict[str, Any]:
        """The ``"ledger"`` block of the public release report.

        The data are named only by the short form of their keyed account
        (:func:`~distpriv.pipeline.ledger.identity.public_account`): no one without the
        ledger's key can confirm a guessed table from it.
        """
        return {
            "recorded": True,
            "composed": {"epsilon": self.composed.epsilon, "delta": self.composed.delta},
            "alone": dict(self.composed.alone),
            "budget": None if self.budget is None else self.budget.to_dict(),
            "n_releases": self.composed.n_releases,
            "family": self.composed.family,
            "theorem": self.composed.theorem,
            "account": public_account(self.entry.data_account),
            "secret_key": text_key(self.entry),
            "secret_account": shown_key(self.entry.secret_key),
            "accounts": list(getattr(self.composed, "accounts", ()) or ()),
            "entry_id": self.entry.id,
        }


def ledgered_draw(
    ledger: Ledger,
    *,
    mechanism: Any,
    value: Any,
    query: Any,
    secret: Any,
    data_account: str,
    model_data: Any,
    model_account: str,
    model_spec: ModelSpec,
    budget: Budget | None = None,
    noise_rng: Any = None,
    model: Any = None,
    beta: float | None = 0.05,
    accounts: tuple[str, ...] = (),
    data_aliases: tuple[str, ...] = (),
) -> tuple[LedgerEntry, Any, Any, Budget | None]:
    """Compose with the earlier releases, check the budget, draw the noise and record.

    The step of a release that must hold the ledger's lock
    (:meth:`Ledger.guarded_release`): a mechanism already calibrated on the new release's
    own model, and F(data) already computed. The joint model of all the releases of the
    same data and secret is built inside the transaction
    (:func:`distpriv.composition.accountant.compose`).

    Parameters
    ----------
    ledger : Ledger
    mechanism : CalibratedMechanism
    value : ndarray, shape (m,)
        F(data), not yet noised.
    query : Query
    secret : Secret
    data_account, model_account : str
        Keyed accounts (:func:`~distpriv.pipeline.ledger.identity.data_account`) of the
        released and the modelling data.
    model_data : table
        The modelling data (the joint model is built from it).
    model_spec : ModelSpec
        How the release's query model was built (datasets of ``subset_size`` rows, the
        mechanism's method, Monte Carlo datasets and seed — randomness of the modelling,
        never of the noise —, population, missing-value rule, bootstrap): the joint model
        of the composition is built the same way, by the same builder
        (:func:`distpriv.pipeline.stages.model.build_query_model`).
    budget : Budget, optional
    noise_rng : int, Generator or None
        ``None``: the secure sampler (:meth:`CalibratedMechanism.release`).
    model : DataQueryModel, optional
        The model ``mechanism`` was calibrated on: the first release of this data and
        secret is composed on it rather than on the table modelled again.
    beta : float or None
        The composition holds on the population with confidence 1 − β: it is evaluated
        on the worst members of the same confidence set as the calibration
        (:func:`distpriv.composition.compose`); ``None``: on the fitted moments.
    accounts : tuple of str
        The secret's keyed meaning on the released rows, per attribute
        (:func:`~distpriv.modeling.secret_identity.secret_accounts`): the account the
        release is recorded under, whatever the secret's spelling.
    data_aliases : tuple of str
        Other accounts of the same rows (their first-version fingerprint): earlier
        releases recorded under them count too.

    Every release of the data counts in every account of it: the release is composed
    with all of the data's earlier releases under its own secret, and under every other
    secret recorded for the data (its values and pairs, rebuilt from the record), with
    this release's model specification (method, bootstrap, pool, missing-value rule).

    Returns
    -------
    (LedgerEntry, Release, ComposedGuarantee, effective budget or None)
    """
    from ...composition.accountant import ReleaseSpec, compose, noise_to_dict

    stats = tuple((s.name, s.expression) for s in query.statistics)
    recorded = secret.to_dict()
    if accounts:
        recorded["accounts"] = list(accounts)
    new = NewRelease(
        data_account=data_account,
        secret=recorded,
        statistics=stats,
        model={
            "subset_size": model_spec.subset_size,
            "method": model_spec.method,
            "n_samples": model_spec.n_samples,
            "model_data_account": model_account,
        },
        mechanism=mechanism.name,
        noise=noise_to_dict(mechanism.noise),
        guarantee=mechanism.guarantee.to_dict(),
        accounts=tuple(accounts),
        data_aliases=tuple(data_aliases),
    )
    spec = ReleaseSpec(stats, mechanism.noise, mechanism.name, float(mechanism.guarantee.delta))

    def build(joint: Any, under: Any, method: str) -> Any:
        # The one builder of the release's models, with its own specification.
        from ..stages.model import build_query_model

        spec_now = replace(model_spec, method=method)
        return build_query_model(spec_now, model_data, joint, under)

    def _compose(
        earlier: Sequence[LedgerEntry], effective: Budget | None, under: Any = secret
    ) -> Any:
        specs = [ReleaseSpec.from_record(e) for e in earlier] + [spec]
        return compose(
            specs,
            model_data=model_data,
            secret=under,
            subset_size=model_spec.subset_size,
            method=model_spec.method,
            n_samples=model_spec.n_samples,
            budget=effective,
            rng=model_spec.seed,
            newest_model=model if under is secret else None,
            population=model_spec.population,
            beta=beta,
            build=build,
        )

    def _compose_account(
        earlier: Sequence[LedgerEntry], effective: Budget | None, row: LedgerEntry
    ) -> Any:
        try:
            other = secret_from_record(row)
        except (ParameterError, ParameterTypeError, KeyError) as exc:  # a damaged record
            return f"its recorded secret cannot be rebuilt ({exc})"
        if other is None:
            kind = row.secret.get("type")
            return f"its recorded secret (kind {kind!r}) is not one this version can model"
        try:
            return _compose(earlier, effective, other)
        except ParameterError as exc:  # e.g. its columns are not in this modelling table
            return f"it cannot be modelled on this release's modelling table: {exc}"

    return ledger.guarded_release(
        new,
        compose=_compose,
        draw=lambda: mechanism.release(value, rng=noise_rng),
        budget=budget,
        compose_account=_compose_account,
    )


_Drawn = tuple[LedgerEntry, Any, Any, Budget | None]


def _retry_if_created_elsewhere(attempt: Callable[[], _Drawn], rekey: Callable[[], None]) -> _Drawn:
    """``attempt()``; once more after ``rekey()`` if another process created the ledger first.

    A lazily opened ledger that another process created meanwhile has that process's
    identity key (:class:`LedgerCreatedElsewhere`: nothing was drawn or recorded), so the
    accounts computed under ours must be recomputed before the one retry.
    """
    try:
        return attempt()
    except LedgerCreatedElsewhere:
        rekey()
        return attempt()


def _account(
    led: Ledger, source: Any, *, data_name: str | None = None, fingerprint: str | None = None
) -> str:
    """The keyed account of ``source``: of its name, given fingerprint, or multiset fingerprint."""
    key = led.identity_key
    if data_name is not None:
        return data_account(key=key, data_name=data_name)
    if fingerprint is None:
        fingerprint = table_fingerprint(source, key=key)
    return data_account(key=key, fingerprint=fingerprint)


def release_with_ledger(
    data: Any,
    query: Any,
    secret: Any,
    *,
    model_data: Any,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    ledger: Ledger | str | os.PathLike[str],
    budget: Budget | None = None,
    data_name: str | None = None,
    data_fingerprint: str | None = None,
    subset_size: int | None = None,
    method: str = "analytic",
    n_samples: int = 1000,
    options: Any = None,
    rng: Any = None,
    missing: str = "error",
    population: bool = False,
    beta: float | None = 0.05,
) -> LedgeredRelease:
    """:func:`distpriv.pipeline.release` judged together with the ledger's earlier releases.

    ``population`` and ``beta`` as in :func:`distpriv.pipeline.release` (the confidence on
    the population); declared ranges of the query clamp the released values the same way.

    The modelling and calibration of the new release happen first (outside the lock);
    then, in one ledger transaction (:func:`ledgered_draw`), the earlier releases of the
    same data and secret are composed exactly with this one
    (:func:`distpriv.composition.accountant.compose`), the release is refused if the composed
    guarantee exceeds the budget, and only then is the noise drawn and the row recorded.

    Parameters
    ----------
    data, query, secret, model_data, mechanism, epsilon, delta, subset_size, method,
    n_samples, options, rng, missing
        As for :func:`distpriv.pipeline.release`: ``rng=None`` draws the noise from the
        secure sampler; a seed gives a reproducible simulation that is NOT private.
    ledger : Ledger or path
    budget : Budget, optional
        (ε, δ) for all releases of this data and secret; recorded with the first release,
        and must equal the recorded budget afterwards.
    data_name : str, optional
        A name identifying the released data in the ledger instead of its rows (use it
        when the same data is released with rows that differ, e.g. re-encoded).
    data_fingerprint : str, optional
        The keyed multiset fingerprint of the released rows under ``ledger.identity_key``,
        when the caller computed it (e.g. in the engine); by default it is computed here.

    Raises
    ------
    BudgetExceededError
        Nothing drawn, released or recorded.
    ParameterError
        ``budget`` differs from the recorded one (both named).
    CompositionError
        The earlier releases cannot be composed exactly with this one.
    """
    from ...modeling.tables import as_table
    from ..commands.release import ReleaseReport, prepare_release

    # lazily: a release refused before its record leaves no new ledger file behind
    led = ledger if isinstance(ledger, Ledger) else Ledger(ledger, lazy=True)
    if budget is not None and not isinstance(budget, Budget):
        raise ParameterTypeError(f"budget must be a Budget, got {budget!r}")
    from ..report import collect_warnings

    with collect_warnings() as caught:
        prep = prepare_release(
            data,
            query,
            secret,
            model_data=model_data,
            mechanism=mechanism,
            epsilon=epsilon,
            delta=delta,
            subset_size=subset_size,
            method=method,
            n_samples=n_samples,
            options=options,
            rng=rng,
            missing=missing,
            population=population,
            beta=beta,
        )
    table, gen = prep.table, prep.rng
    if getattr(secret, "is_grid", False):
        # A range or events: the values on the released table's grid, as the model has them
        # (the composition and the record need the hypotheses, not the unmaterialised range).
        secret = secret.grid(table.n_rows)
    model_frame = as_table(model_data).frame
    model_rng = None if gen is None else int(gen.integers(2**63))
    given_fp = data_fingerprint

    def attempt() -> tuple[LedgerEntry, Any, Any, Budget | None]:
        meaning, aliases = _identity(led, table.frame, secret, data_name=data_name)
        return ledgered_draw(
            led,
            accounts=meaning,
            data_aliases=aliases,
            mechanism=prep.mechanism,
            value=prep.value,
            query=prep.query,
            secret=secret,
            data_account=_account(led, table.frame, data_name=data_name, fingerprint=given_fp),
            model_data=model_frame,
            model_account=_account(led, model_frame),
            # The mechanism calibrated (``auto``'s choice), whose model the ledger rebuilds.
            model_spec=ModelSpec(
                subset_size=table.n_rows,
                method=method,
                n_samples=n_samples,
                seed=model_rng,
                population=population,
                missing=missing,
            ).for_mechanism(prep.mechanism.name),
            budget=budget,
            noise_rng=gen,
            model=prep.model,
            beta=beta,
        )

    def forget_given() -> None:
        # Another process created the ledger first: a fingerprint given under our key does
        # not name the data under theirs; compute it here instead.
        nonlocal given_fp
        given_fp = None

    entry, rel, composed, effective = _retry_if_created_elsewhere(attempt, forget_given)
    if prep.query.ranges:  # declared ranges: clamping is post-processing (no privacy cost)
        rel = replace(rel, value=prep.query.clamp(rel.value)[0])
    report = ReleaseReport(
        rel,
        prep.mechanism,
        prep.model,
        prep.value,
        table.n_rows,
        choice=prep.choice,
        warnings=caught.items,
        secret=secret,
        beta=beta,
    )
    out = LedgeredRelease(report=report, entry=entry, composed=composed, budget=effective)
    # report.to_dict() then carries the composed guarantee, as the CLI's JSON does.
    return replace(out, report=replace(report, ledger=out.ledger_summary()))


@dataclass(frozen=True)
class LedgerSession:
    """A validated ledger with the budget and data name of one ``run_release``.

    Built by :func:`open_ledger` before any modelling, so that a bad ledger file or budget
    fails at once; :meth:`draw` is the locked step of the release.
    """

    ledger: Ledger
    budget: Budget | None
    data_name: str | None

    def draw(
        self,
        *,
        mechanism: Any,
        value: Any,
        query: Any,
        secret: Any,
        released_frame: Any = None,
        model_frame: Any,
        model_spec: ModelSpec,
        noise_rng: Any = None,
        data_fingerprint: str | None = None,
        model_fingerprint: str | None = None,
        fingerprints: Callable[[bytes], tuple[str, str]] | None = None,
        model: Any = None,
        beta: float | None = 0.05,
        secret_accounts: Callable[[bytes], tuple[str, ...]] | None = None,
        legacy_fingerprint: Callable[[bytes], str] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Compose, check, draw and record (:func:`ledgered_draw`).

        ``data_fingerprint``/``model_fingerprint``: the keyed multiset fingerprints of the
        released and modelling tables under ``self.ledger.identity_key`` when the caller
        computed them in the engine (then ``released_frame`` is not needed); otherwise
        computed here from the frames (:func:`~.identity.table_fingerprint`).
        ``fingerprints``: computes both under a given key; called again if another process
        created a lazily opened ledger first (its key differs, :class:`LedgerCreatedElsewhere`).
        ``model``/``model_spec``: the mechanism's own model and how it was built
        (:func:`ledgered_draw`); ``beta``: the confidence on the population of the
        calibration, which the composition keeps. ``secret_accounts(key)``: the secret's
        keyed meaning on the released rows, computed in the engine
        (:func:`~distpriv.modeling.secret_identity.secret_accounts`); ``legacy_fingerprint(key)``:
        the released rows' first-version fingerprint (earlier releases were keyed by it).

        Returns
        -------
        (Release, dict)
            The release and the ``"ledger"`` block of the public report.
        """
        led = self.ledger
        fps: tuple[str | None, str | None] = (data_fingerprint, model_fingerprint)

        def attempt() -> tuple[LedgerEntry, Any, Any, Budget | None]:
            meaning, aliases = _identity(
                led,
                released_frame,
                secret,
                data_name=self.data_name,
                accounts=secret_accounts,
                legacy=legacy_fingerprint,
            )
            return ledgered_draw(
                led,
                accounts=meaning,
                data_aliases=aliases,
                mechanism=mechanism,
                value=value,
                query=query,
                secret=secret,
                data_account=_account(
                    led, released_frame, data_name=self.data_name, fingerprint=fps[0]
                ),
                model_data=model_frame,
                model_account=_account(led, model_frame, fingerprint=fps[1]),
                model_spec=model_spec,
                budget=self.budget,
                noise_rng=noise_rng,
                model=model,
                beta=beta,
            )

        def rekey() -> None:
            # The ledger another process created has another key: the accounts change.
            nonlocal fps
            if fingerprints is not None:
                fps = fingerprints(led.identity_key)
            elif released_frame is not None or self.data_name is not None:
                fps = (None, None)
            else:
                raise LedgerError(
                    f"ledger {str(led.path)!r} was created by another process meanwhile; "
                    "nothing was released or recorded: run the release again"
                ) from None

        if fingerprints is not None:
            fps = fingerprints(led.identity_key)
        entry, rel, composed, effective = _retry_if_created_elsewhere(attempt, rekey)
        return rel, LedgeredRelease(None, entry, composed, effective).ledger_summary()


def _given_budget(cfg: dict[str, Any], budget: Budget | str | None) -> Budget | None:
    """The budget of ``--budget`` and ``[ledger] budget``: they must agree when both given."""
    given = parse_budget(budget) if isinstance(budget, str) else budget
    if given is not None and not isinstance(given, Budget):
        raise ParameterTypeError(f"budget must be a Budget or 'EPS,DELTA', got {budget!r}")
    if "budget" not in cfg:
        return given
    eps, dlt = cfg["budget"]
    try:
        configured = Budget(eps, dlt)
    except (ParameterError, ParameterTypeError) as exc:
        raise ParameterError(f"[ledger] budget {cfg['budget']!r}: {exc}") from exc
    if given is not None and given != configured:
        raise ParameterError(
            f"--budget ({given.epsilon:g}, {given.delta:g}) differs from the config's "
            f"[ledger] budget ({configured.epsilon:g}, {configured.delta:g}); give one budget"
        )
    return configured


def open_ledger(
    config: dict[str, Any] | None = None,
    *,
    ledger: str | os.PathLike[str] | Ledger | bool | None = None,
    budget: Budget | str | None = None,
    config_path: str | os.PathLike[str] | None = None,
) -> LedgerSession | None:
    """The ledger of a release from the config's ``[ledger]`` table and the CLI flags.

    Always on: ``ledger`` (``--ledger FILE``) overrides ``[ledger] path``, which overrides
    the default ledger :func:`default_ledger_path` next to the config (``config_path``).
    ``None`` only when the curator opts out explicitly: ``ledger=False`` (``--no-ledger``)
    or ``[ledger] enabled = false`` (an explicit ``--ledger FILE`` still records).

    Raises
    ------
    ParameterError
        A budget together with an opt-out (naming ``--budget``), an invalid budget, or
        ``--budget`` and ``[ledger] budget`` that differ.
    LedgerError
        An invalid ledger file (left untouched), or a folder where a new ledger cannot be
        made. A missing ledger file is created only when the release is recorded.
    """
    cfg = dict(config or {})
    given = _given_budget(cfg, budget)
    if ledger is True:
        ledger = None
    if ledger is False or (ledger is None and cfg.get("enabled", True) is False):
        if given is not None:
            raise ParameterError(
                "--budget needs a ledger, but the ledger is off (--no-ledger or [ledger] "
                "enabled = false): a budget is kept across releases in the ledger"
            )
        return None
    path = ledger if ledger is not None else cfg.get("path")
    if path is None and config_path is not None:
        path = default_ledger_path(config_path)
    if path is None:
        if given is not None:
            raise ParameterError(
                "--budget needs a ledger (--ledger FILE or [ledger] path): a budget is "
                "kept across releases in the ledger"
            )
        return None
    if not isinstance(path, Ledger):
        check_ledger_path(path, "--ledger" if ledger is not None else "[ledger] path")
    # lazily: nothing is created before a release is actually recorded
    led = path if isinstance(path, Ledger) else Ledger(path, lazy=True)
    return LedgerSession(led, given, cfg.get("data_name"))
