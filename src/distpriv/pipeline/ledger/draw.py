"""The locked step of a release: compose with the earlier releases, check, draw, record.

A release reaches the ledger calibrated and computed (a :class:`PendingRelease`: the
mechanism, F(data), the model and how it was built) and keyed (its
:class:`ReleaseAccounts`). Inside one ledger transaction (:meth:`Ledger.guarded_release`)
the joint model of every release of the same data is built by the release's own builder,
composed exactly (:func:`distpriv.composition.compose`), the budget checked, and only then
the noise drawn and the row recorded (:func:`ledgered_draw`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...errors import ParameterError, ParameterTypeError
from ..plan import ModelSpec
from .accounts import secret_from_record
from .identity import data_account, table_fingerprint
from .records import Budget, LedgerEntry, NewRelease
from .store import Ledger, LedgerCreatedElsewhere

__all__ = ["PendingRelease", "ReleaseAccounts", "ledgered_draw"]


@dataclass(frozen=True)
class PendingRelease:
    """A release calibrated and computed, waiting for its noise."""

    #: Calibrated on the release's own model.
    mechanism: Any
    #: ndarray, shape (m,)
    #: F(data), not yet noised (private).
    value: Any
    query: Any
    secret: Any
    #: The modelling data (the joint model of the composition is built from it).
    model_data: Any
    #: How the release's query model was built (datasets of ``subset_size`` rows, the
    #: mechanism's method, Monte Carlo datasets and seed — randomness of the modelling,
    #: never of the noise —, population, missing-value rule, bootstrap): the joint model
    #: of the composition is built the same way, by the same builder
    #: (:func:`distpriv.pipeline.stages.model.build_query_model`).
    model_spec: ModelSpec
    #: The model ``mechanism`` was calibrated on: the first release of this data and
    #: secret is composed on it rather than on the table modelled again.
    model: Any = None
    #: The calibration's confidence on the population: the composition is evaluated on
    #: the worst members of the same confidence set (:func:`distpriv.composition.compose`);
    #: ``None``: on the fitted moments.
    beta: float | None = 0.05
    #: ``None``: the secure sampler (:meth:`CalibratedMechanism.release`).
    noise_rng: Any = None


@dataclass(frozen=True)
class ReleaseAccounts:
    """The keyed accounts a release is recorded and composed under."""

    #: Keyed accounts (:func:`~distpriv.pipeline.ledger.identity.data_account`) of the
    #: released and the modelling data.
    data: str
    model: str
    #: The secret's keyed meaning on the released rows, per attribute
    #: (:func:`~distpriv.modeling.secret_identity.secret_accounts`): the account the
    #: release is recorded under, whatever the secret's spelling.
    meanings: tuple[str, ...] = ()
    #: Other accounts of the same rows (their first-version fingerprint): earlier releases
    #: recorded under them count too.
    aliases: tuple[str, ...] = ()


_Drawn = tuple[LedgerEntry, Any, Any, Budget | None]


def ledgered_draw(
    ledger: Ledger,
    pending: PendingRelease,
    accounts: ReleaseAccounts,
    *,
    budget: Budget | None = None,
) -> _Drawn:
    """Compose with the earlier releases, check the budget, draw the noise and record.

    The step of a release that must hold the ledger's lock
    (:meth:`Ledger.guarded_release`). Every release of the data counts in every account of
    it: the release is composed with all of the data's earlier releases under its own
    secret, and under every other secret recorded for the data (its values and pairs,
    rebuilt from the record), with this release's model specification (method, bootstrap,
    pool, missing-value rule): the joint model is built inside the transaction by the one
    builder of the release's models.

    Parameters
    ----------
    ledger : Ledger
    pending : PendingRelease
        The release, calibrated and computed.
    accounts : ReleaseAccounts
        Its keyed accounts under ``ledger``'s identity key.
    budget : Budget, optional

    Returns
    -------
    (LedgerEntry, Release, ComposedGuarantee, effective budget or None)
    """
    from ...composition import JointModelling, ReleaseSpec, compose, noise_to_dict

    mechanism, secret, model_spec = pending.mechanism, pending.secret, pending.model_spec
    stats = tuple((s.name, s.expression) for s in pending.query.statistics)
    recorded = secret.to_dict()
    if accounts.meanings:
        recorded["accounts"] = list(accounts.meanings)
    new = NewRelease(
        data_account=accounts.data,
        secret=recorded,
        statistics=stats,
        model={
            "subset_size": model_spec.subset_size,
            "method": model_spec.method,
            "n_samples": model_spec.n_samples,
            "model_data_account": accounts.model,
        },
        mechanism=mechanism.name,
        noise=noise_to_dict(mechanism.noise),
        guarantee=mechanism.guarantee.to_dict(),
        accounts=tuple(accounts.meanings),
        data_aliases=tuple(accounts.aliases),
    )
    spec = ReleaseSpec(stats, mechanism.noise, mechanism.name, float(mechanism.guarantee.delta))

    def build(joint: Any, under: Any, method: str) -> Any:
        # The one builder of the release's models, with its own specification.
        from ..stages.model import build_query_model

        spec_now = replace(model_spec, method=method)
        return build_query_model(spec_now, pending.model_data, joint, under)

    modelling = JointModelling(
        model_data=pending.model_data,
        subset_size=model_spec.subset_size,
        method=model_spec.method,
        n_samples=model_spec.n_samples,
        rng=model_spec.seed,
        population=model_spec.population,
        build=build,
    )

    def _compose(
        earlier: Sequence[LedgerEntry], effective: Budget | None, under: Any = secret
    ) -> Any:
        specs = [ReleaseSpec.from_record(e) for e in earlier] + [spec]
        return compose(
            specs,
            secret=under,
            modelling=modelling,
            budget=effective,
            newest_model=pending.model if under is secret else None,
            beta=pending.beta,
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
        draw=lambda: mechanism.release(pending.value, rng=pending.noise_rng),
        budget=budget,
        compose_account=_compose_account,
    )


def retry_if_created_elsewhere(attempt: Callable[[], _Drawn], rekey: Callable[[], None]) -> _Drawn:
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


def account_of(
    led: Ledger, source: Any, *, data_name: str | None = None, fingerprint: str | None = None
) -> str:
    """The keyed account of ``source``: of its name, given fingerprint, or multiset fingerprint."""
    key = led.identity_key
    if data_name is not None:
        return data_account(key=key, data_name=data_name)
    if fingerprint is None:
        fingerprint = table_fingerprint(source, key=key)
    return data_account(key=key, fingerprint=fingerprint)
