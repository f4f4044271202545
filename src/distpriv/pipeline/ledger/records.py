"""The records of the ledger: budgets, recorded releases and releases about to be recorded.

Plain frozen values, built from and written to the file by :mod:`.store`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import LedgerError, ParameterError, ParameterTypeError
from ...util.records import field_values
from ...util.text import parse_decimal
from ...util.validation import check_privacy
from .identity import MEANING_PREFIX, secret_aliases, secret_key, stored_aliases

__all__ = [
    "DEFAULT_LEDGER_NAME",
    "LEDGER_DIR_ENV",
    "NOT_RECORDED",
    "Budget",
    "LedgerEntry",
    "NewRelease",
    "account_keys",
    "check_ledger_path",
    "default_ledger_path",
    "not_recorded",
    "parse_budget",
    "same_release",
    "stored_text_keys",
]


# The default ledger: one file per directory of configs, so that every config releasing
# the same data from that directory composes in the same ledger.
DEFAULT_LEDGER_NAME = "distpriv-ledger.sqlite"
# Puts the default ledger into another directory (e.g. when configs live in a read-only
# checkout); the tests use it so that no run writes a ledger into the repository.
LEDGER_DIR_ENV = "DISTPRIV_LEDGER_DIR"


def default_ledger_path(config_path: str | os.PathLike[str]) -> Path:
    """The ledger a config's releases go into by default: ``distpriv-ledger.sqlite`` next to it.

    In the directory ``$DISTPRIV_LEDGER_DIR`` instead when that variable is set.
    """
    folder = os.environ.get(LEDGER_DIR_ENV)
    base = Path(folder).expanduser() if folder else Path(config_path).resolve().parent
    return base / DEFAULT_LEDGER_NAME


# The public "ledger" block of a release kept out of every ledger: the report says that it
# is not composed with the other releases of its data.
NOT_RECORDED = "not recorded in any ledger; releases of this data are not composed"


def not_recorded(reason: str) -> dict[str, Any]:
    """The public ``"ledger"`` block of a release the curator kept out of every ledger."""
    return {"recorded": False, "note": NOT_RECORDED, "opted_out_by": reason}


@dataclass(frozen=True)
class Budget:
    """An (ε, δ) budget for all releases of one data and secret."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        eps, dlt = check_privacy(self.epsilon, self.delta)
        object.__setattr__(self, "epsilon", float(eps))
        object.__setattr__(self, "delta", float(dlt))

    def tighter(self, other: Budget | None) -> Budget:
        """The budget meeting both (componentwise minimum)."""
        if other is None:
            return self
        return Budget(min(self.epsilon, other.epsilon), min(self.delta, other.delta))

    def to_dict(self) -> dict[str, float]:
        """JSON-safe dict."""
        return {"epsilon": self.epsilon, "delta": self.delta}


def parse_budget(text: str, *, what: str = "--budget") -> Budget:
    """Parse ``"EPS,DELTA"`` (e.g. ``"2,1e-3"``) into a :class:`Budget`.

    Raises
    ------
    ParameterError
        Naming ``what`` and the text when it is not two numbers or they are not a valid
        (ε, δ) (ε finite > 0, δ in [0, 1)).
    """
    parts = str(text).split(",")
    if len(parts) != 2:
        raise ParameterError(f"{what} must be EPS,DELTA (e.g. 2,1e-3), got {text!r}")
    try:  # plain ASCII decimals only: float() reads "1_0" as 10 and "١" as 1
        eps, dlt = (parse_decimal(p, what) for p in parts)
    except ParameterError as exc:
        raise ParameterError(
            f"{what} must be two plain decimal numbers EPS,DELTA (e.g. 2,1e-3), got {text!r}"
        ) from exc
    try:
        return Budget(eps, dlt)
    except (ParameterError, ParameterTypeError) as exc:
        raise ParameterError(f"{what} {text!r}: {exc}") from exc


def check_ledger_path(path: str | os.PathLike[str], what: str = "--ledger") -> None:
    """Refuse a ledger path that SQLite would not read as a plain file name.

    ``":memory:"`` (a ledger that forgets every release when the command ends) and
    ``file:`` URIs (``file:x?mode=ro``; the ledger opens plain paths, so SQLite would create
    a file named after the whole string) are refused before anything is created,
    as is an empty path.

    Raises
    ------
    ParameterError
        Naming ``what`` and the path.
    """
    if not isinstance(path, str | os.PathLike):
        return  # the Ledger names a wrong type
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise ParameterError(f"{what} must be a ledger file name, got {text!r}")
    name = Path(text).name
    if ":memory:" in (text, name) or any(t.lower().startswith("file:") for t in (text, name)):
        raise ParameterError(
            f"{what} {text!r} is an SQLite special name or URI, not a file: the ledger is a "
            "plain file (e.g. distpriv-ledger.sqlite) that keeps every release"
        )


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded release (a row of the ledger)."""

    #: Position in the ledger (increasing with time).
    id: int
    #: When (ISO 8601, UTC) and by which distpriv version it was released.
    time_utc: str
    version: str
    #: ``"hmac-sha256:<hex>"``: the released data's keyed identity under the ledger's key
    #: (:func:`~distpriv.pipeline.ledger.identity.data_account`), never an unkeyed hash.
    data_account: str
    #: The secret's account: its keyed meaning on the released rows
    #: (``"meaning-hmac-sha256:<hex>"``,
    #: :func:`~distpriv.modeling.secret_identity.secret_accounts`), or, for rows
    #: recorded without one, its text key (:func:`secret_key`).
    secret_key: str
    #: ``predicate``, ``values``, ``pairs`` of the release.
    secret: dict[str, Any]
    statistics: tuple[tuple[str, str], ...]
    #: How the query model was built (``subset_size``, ``method``, ``n_samples``,
    #: ``model_data``).
    model: dict[str, Any]
    mechanism: str
    #: ``covariance`` (m × m) and ``components`` (kind, basis, scales): the noise law.
    noise: dict[str, Any]
    #: :meth:`PrivacyGuarantee.to_dict` of the release alone.
    guarantee: dict[str, Any]
    #: ``epsilon``, ``delta`` of the release alone under the exact joint computation.
    alone: dict[str, Any]
    #: The composed guarantee of this and every earlier release of the same group.
    composed: dict[str, Any]
    #: The published values.
    released: list[float]

    @classmethod
    def _from_row(cls, row: sqlite3.Row) -> LedgerEntry:
        try:
            return cls(
                id=int(row["id"]),
                time_utc=row["time_utc"],
                version=row["version"],
                data_account=row["data_account"],
                secret_key=row["secret_key"],
                secret=json.loads(row["secret_json"]),
                statistics=tuple((str(n), str(e)) for n, e in json.loads(row["statistics_json"])),
                model=json.loads(row["model_json"]),
                mechanism=row["mechanism"],
                noise=json.loads(row["noise_json"]),
                guarantee=json.loads(row["guarantee_json"]),
                alone={"epsilon": row["alone_epsilon"], "delta": row["alone_delta"]},
                composed=json.loads(row["composed_json"]),
                released=json.loads(row["released_json"]),
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerError(f"ledger row {row['id']} cannot be read: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return {
            **field_values(self, "id time_utc version data_account secret_key secret"),
            "statistics": [list(s) for s in self.statistics],
            **field_values(self, "model mechanism noise guarantee alone composed released"),
        }


@dataclass(frozen=True)
class NewRelease:
    """What the ledger records of a release, except the values and composed guarantee.

    Built by the pipeline before the transaction; :meth:`Ledger.guarded_release` adds the
    composed guarantee and the released values inside it.
    """

    data_account: str
    secret: dict[str, Any]
    statistics: tuple[tuple[str, str], ...]
    model: dict[str, Any]
    mechanism: str
    noise: dict[str, Any]
    guarantee: dict[str, Any]
    #: The keyed meaning of each attribute of the secret on the released rows
    #: (:func:`~distpriv.modeling.secret_identity.secret_accounts`), in the order of the
    #: text keys; empty: the release is keyed by text only.
    accounts: tuple[str, ...] = ()
    #: Other accounts of the same rows (their first-version fingerprint).
    data_aliases: tuple[str, ...] = ()

    @property
    def data_ids(self) -> tuple[str, ...]:
        """The data's account and its aliases, without repeats."""
        return tuple(dict.fromkeys((self.data_account, *self.data_aliases)))

    @property
    def text_keys(self) -> tuple[str, ...]:
        """The canonical text key of each attribute (:func:`secret_key`)."""
        keys = self.secret.get("keys")
        if keys:
            return tuple(secret_key(k) for k in keys)
        return (self.secret_key_text,)

    @property
    def recorded_secret(self) -> dict[str, Any]:
        """The secret as its row records it: with ``text_keys``, the canonical text key of
        each attribute (in the order of ``keys``, or the one of the whole secret), so that
        reading the ledger (``distpriv ledger show``) needs no SQL parser."""
        return {**self.secret, "text_keys": list(self.text_keys)}

    @property
    def secret_key_text(self) -> str:
        """The text key of the secret as a whole."""
        return secret_key(self.secret.get("key") or self.secret["predicate"])

    @property
    def secret_key(self) -> str:
        """The group key of the secret (its predicate, or the ``key`` a secret kind
        other than a proportion records: :meth:`~distpriv.modeling.secrets.Secret.ledger_key`)."""
        return secret_key(self.secret.get("key") or self.secret["predicate"])

    @property
    def secret_keys(self) -> tuple[str, ...]:
        """The keys the release is recorded and composed under: each attribute's predicate
        for several secrets at once (``"keys"`` of
        :meth:`~distpriv.modeling.secret_several.SeveralSecrets.to_dict`), else the one
        :attr:`secret_key`."""
        if self.accounts:
            return tuple(dict.fromkeys(self.accounts))
        keys = self.secret.get("keys")
        if keys:
            return tuple(dict.fromkeys(secret_key(k) for k in keys))
        return (self.secret_key,)

    @property
    def key_aliases(self) -> tuple[frozenset[str], ...]:
        """Per key of :attr:`secret_keys`, every key the same account's rows and budgets
        may carry: the keyed meaning, the canonical text and the earlier text key."""
        texts = self.secret.get("keys") or [self.secret.get("key") or self.secret["predicate"]]
        if not self.accounts:
            return tuple(secret_aliases(t) for t in dict.fromkeys(texts))
        out: dict[str, set[str]] = {}
        for acct, text in zip(self.accounts, texts, strict=True):
            out.setdefault(acct, {acct}).update(secret_aliases(text))
        return tuple(frozenset(v) for v in out.values())


def _attribute_text(entry: LedgerEntry) -> tuple[str | None, str | None]:
    """The secret's text of the attribute a row was recorded under, and its canonical key
    as stored at record time (``None`` for rows recorded before it was stored)."""
    d = entry.secret
    texts = d.get("keys") or [d.get("key") or d.get("predicate")]
    stored = d.get("text_keys") or []
    accounts = d.get("accounts") or []
    at: int | None = None
    if entry.secret_key in accounts and len(texts) == len(accounts):
        at = accounts.index(entry.secret_key)
    elif entry.secret_key in stored:  # recorded by text (no keyed meaning)
        at = stored.index(entry.secret_key)
    if at is None or at >= len(texts):
        return None, None
    text = texts[at]
    canonical = stored[at] if len(stored) == len(texts) else None
    return (text if isinstance(text, str) and text.strip() else None), canonical


def stored_text_keys(entry: LedgerEntry) -> frozenset[str]:
    """The canonical text keys stored with a row at record time (none for older rows)."""
    return frozenset(k for k in entry.secret.get("text_keys") or [] if isinstance(k, str))


def account_keys(entry: LedgerEntry) -> frozenset[str]:
    """Every key under which a recorded row belongs to an account: its ``secret_key`` and
    the text keys of the attribute it was recorded for (canonical and earlier spellings).

    The canonical key stored with the row is used as it is; only rows recorded before it
    was stored have their text parsed again (:func:`secret_aliases`)."""
    key = entry.secret_key
    out = {key}
    text, canonical = _attribute_text(entry)
    if text is not None and canonical is not None:
        out |= stored_aliases(canonical, text)
    elif text is not None:
        out |= secret_aliases(text)
    elif not key.startswith(MEANING_PREFIX):
        out |= secret_aliases(key)
    return frozenset(out)


def same_release(entries: Sequence[LedgerEntry]) -> tuple[LedgerEntry, ...]:
    """The entries oldest first, with the rows of one release recorded under several keys
    (several secrets at once: one row per attribute, written together) counted once."""
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for e in sorted(entries, key=lambda e: e.id):
        tag = (e.time_utc, e.data_account, json.dumps(e.released), json.dumps(e.noise))
        if tag in seen:
            continue
        seen.add(tag)
        out.append(e)
    return tuple(out)
