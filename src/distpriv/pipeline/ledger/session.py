"""A release of ``distpriv release`` judged together with the ledger's earlier releases.

Which ledger a release goes into (always one, unless the curator opts out:
:func:`open_ledger`, :func:`default_ledger_path`) and the session that keys the release's
accounts (:class:`DataIdentity`, :mod:`.identity`) and runs the locked step that composes
exactly (:func:`distpriv.composition.compose`), checks the budget, draws the noise and records
(:func:`~distpriv.pipeline.ledger.draw.ledgered_draw`). The library's own release with a
ledger is :func:`distpriv.pipeline.release_with_ledger` (the release command's).

Distribution privacy does not compose sequentially (Kifer & Machanavajjhala 2014, the
Pufferfish framework; Chen & Ohrimenko 2023, §2): two releases of statistics of the same
data are correlated through the data, so the ledger is what lets the next release be judged
together with the earlier ones (docs/composition.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import LedgerError, ParameterError, ParameterTypeError
from .accounts import release_identity as _identity
from .accounts import shown_key, text_key
from .draw import (
    PendingRelease,
    ReleaseAccounts,
    account_of,
    ledgered_draw,
    retry_if_created_elsewhere,
)
from .identity import public_account
from .records import (
    DEFAULT_LEDGER_NAME,
    LEDGER_DIR_ENV,
    NOT_RECORDED,
    Budget,
    LedgerEntry,
    check_ledger_path,
    default_ledger_path,
    not_recorded,
    parse_budget,
)
from .store import Ledger

__all__ = [
    "DEFAULT_LEDGER_NAME",
    "LEDGER_DIR_ENV",
    "NOT_RECORDED",
    "DataIdentity",
    "LedgerSession",
    "LedgeredRelease",
    "default_ledger_path",
    "not_recorded",
    "open_ledger",
]


@dataclass(frozen=True)
class LedgeredRelease:
    """A release made through a ledger: the report, its row, and the composed guarantee."""

    report: Any
    #: The row recorded for it.
    entry: LedgerEntry
    composed: Any
    #: The budget that was checked (the recorded one, or the one given with the first
    #: release of this data and secret).
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


@dataclass(frozen=True)
class DataIdentity:
    """What a session keys a release's accounts from, under the ledger's identity key."""

    #: The released rows; not needed when the fingerprints are given or computed by
    #: ``fingerprints`` (or the data has a name).
    released_frame: Any = None
    #: The keyed multiset fingerprints of the released and modelling tables under the
    #: ledger's key, when the caller computed them in the engine; otherwise computed from
    #: the frames (:func:`~.identity.table_fingerprint`).
    data_fingerprint: str | None = None
    model_fingerprint: str | None = None
    #: Computes both under a given key; called again if another process created a lazily
    #: opened ledger first (its key differs, :class:`~.store.LedgerCreatedElsewhere`).
    fingerprints: Callable[[bytes], tuple[str, str]] | None = None
    #: The secret's keyed meaning on the released rows, computed in the engine
    #: (:func:`~distpriv.modeling.secret_identity.secret_accounts`).
    secret_accounts: Callable[[bytes], tuple[str, ...]] | None = None
    #: The released rows' first-version fingerprint (earlier releases were keyed by it).
    legacy_fingerprint: Callable[[bytes], str] | None = None


@dataclass(frozen=True)
class LedgerSession:
    """A validated ledger with the budget and data name of one ``run_release``.

    Built by :func:`open_ledger` before any modelling, so that a bad ledger file or budget
    fails at once; :meth:`draw` is the locked step of the release.
    """

    ledger: Ledger
    budget: Budget | None
    data_name: str | None

    def draw(self, pending: PendingRelease, identity: DataIdentity) -> tuple[Any, dict[str, Any]]:
        """Compose, check, draw and record (:func:`~.draw.ledgered_draw`).

        Parameters
        ----------
        pending : PendingRelease
            The release, calibrated and computed, with its model and how it was built.
        identity : DataIdentity
            What its accounts are keyed from.

        Returns
        -------
        (Release, dict)
            The release and the ``"ledger"`` block of the public report.
        """
        led = self.ledger
        fps = (identity.data_fingerprint, identity.model_fingerprint)
        frame = identity.released_frame

        def attempt() -> tuple[LedgerEntry, Any, Any, Budget | None]:
            meaning, aliases = _identity(
                led,
                frame,
                pending.secret,
                data_name=self.data_name,
                accounts=identity.secret_accounts,
                legacy=identity.legacy_fingerprint,
            )
            accounts = ReleaseAccounts(
                data=account_of(led, frame, data_name=self.data_name, fingerprint=fps[0]),
                model=account_of(led, pending.model_data, fingerprint=fps[1]),
                meanings=meaning,
                aliases=aliases,
            )
            return ledgered_draw(led, pending, accounts, budget=self.budget)

        def rekey() -> None:
            # The ledger another process created has another key: the accounts change.
            nonlocal fps
            if identity.fingerprints is not None:
                fps = identity.fingerprints(led.identity_key)
            elif frame is not None or self.data_name is not None:
                fps = (None, None)
            else:
                raise LedgerError(
                    f"ledger {str(led.path)!r} was created by another process meanwhile; "
                    "nothing was released or recorded: run the release again"
                ) from None

        if identity.fingerprints is not None:
            fps = identity.fingerprints(led.identity_key)
        entry, rel, composed, effective = retry_if_created_elsewhere(attempt, rekey)
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
