"""The accounts of one data in the ledger: which rows and budgets belong to which secret.

An account is a property of the data, not a spelling: a row belongs to it under its keyed
meaning (:func:`~distpriv.modeling.secret_identity.secret_accounts`) or under the text
keys of its attribute (:func:`~.identity.secret_aliases`: canonical and earlier
spellings), so releases recorded before secrets were keyed by meaning stay in their
account. Every release of the data counts in every account of it (an adversary after one
property sees every release, whatever secret it was calibrated for); the accounts differ
in the hypotheses their guarantee is stated for and in their budgets.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from ...errors import BudgetExceededError, CompositionError
from .identity import (
    MEANING_PREFIX,
    data_account,
    legacy_secret_key,
    public_account,
    secret_aliases,
    secret_key,
)
from .records import Budget, LedgerEntry, NewRelease, account_keys, stored_text_keys

__all__ = [
    "account_of",
    "account_summary",
    "budget_of",
    "close_keys",
    "compose_into_accounts",
    "known_keys",
    "other_accounts",
    "release_identity",
    "rows_of",
    "secret_from_record",
    "shown_key",
    "text_key",
]


def rows_of(entries: Iterable[LedgerEntry], keys: frozenset[str]) -> list[LedgerEntry]:
    """The rows of ``entries`` that belong to the account named by any of ``keys``."""
    return [e for e in entries if account_keys(e) & keys]


def close_keys(entries: Iterable[LedgerEntry], keys: frozenset[str]) -> frozenset[str]:
    """``keys`` with every key the account's recorded rows carry (a text key finds the
    keyed meaning its releases were recorded under, and the other way round)."""
    out = set(keys)
    for e in entries:
        found = account_keys(e)
        if found & keys:
            out |= found
    return frozenset(out)


def _budget_is_mine(key: str, keys: frozenset[str], known: frozenset[str]) -> bool:
    """Whether a budget row's key names the account of ``keys``.

    A keyed meaning, or a canonical text key some row of the data stored (``known``), is
    decided without parsing; any other text (written by an earlier version, or set before
    its secret's first release) is canonicalised (:func:`secret_aliases`).
    """
    if key in keys or legacy_secret_key(key) in keys:
        return True
    if key.startswith(MEANING_PREFIX) or key in known:
        return False
    return bool(secret_aliases(key) & keys)


def budget_of(
    con: sqlite3.Connection,
    data_accounts: Sequence[str],
    keys: frozenset[str],
    known: frozenset[str] = frozenset(),
) -> Budget | None:
    """The tightest budget recorded for the account (under any of its keys and any of the
    data's accounts), or ``None``. ``known``: canonical text keys stored with the data's
    rows (:func:`~.records.stored_text_keys`), whose budgets need no SQL parsing."""
    marks = ", ".join("?" * len(data_accounts))
    rows = con.execute(
        f"SELECT secret_key, epsilon, delta FROM budgets WHERE data_account IN ({marks})",
        tuple(data_accounts),
    ).fetchall()
    out: Budget | None = None
    for key, eps, dlt in rows:
        if _budget_is_mine(key, keys, known):
            out = Budget(eps, dlt).tighter(out)
    return out


def known_keys(entries: Iterable[LedgerEntry]) -> frozenset[str]:
    """The canonical text keys stored with ``entries`` (none for rows of older versions)."""
    return frozenset().union(*(stored_text_keys(e) for e in entries))


def account_summary(composed: Any) -> dict[str, Any]:
    """``epsilon``, ``delta``, ``n_releases`` and ``budget`` of a composed guarantee: one
    line of its ``accounts``."""
    budget = None if composed.budget is None else dict(composed.budget)
    return {
        "epsilon": float(composed.epsilon),
        "delta": float(composed.delta),
        "n_releases": int(composed.n_releases),
        "budget": budget,
    }


def text_key(entry: LedgerEntry) -> str:
    """The secret's text key (canonical SQL) of a recorded row, as reports show it: the
    attribute's for several secrets at once. Stored with the row at record time; parsed
    again only for rows of earlier versions."""
    d = entry.secret
    stored = d.get("text_keys") or []
    if d.get("accounts") and entry.secret_key in d["accounts"]:
        at = d["accounts"].index(entry.secret_key)
        if at < len(stored) and len(stored) == len(d["accounts"]):
            return str(stored[at])
    elif entry.secret_key in stored:
        return entry.secret_key
    accounts, keys = d.get("accounts") or [], d.get("keys") or []
    if entry.secret_key in accounts and len(keys) == len(accounts):
        return secret_key(keys[accounts.index(entry.secret_key)])
    text = d.get("key") or d.get("predicate")
    return secret_key(text) if isinstance(text, str) and text.strip() else entry.secret_key


def shown_key(key: str) -> str:
    """A secret's keyed meaning in its public short form; a text key as it is."""
    return public_account(key) if key.startswith("meaning-") else key


def account_of(entry: LedgerEntry) -> str:
    """The name an account is listed under: the row's key (its keyed meaning when recorded)."""
    return entry.secret_key


def other_accounts(
    entries: Sequence[LedgerEntry], own: Sequence[frozenset[str]]
) -> list[tuple[frozenset[str], LedgerEntry]]:
    """The accounts of ``entries`` other than ``own``: (their keys, their newest row).

    Rows that share a key are one account (e.g. a respelled predicate recorded by an
    earlier version under its text); oldest account first.
    """
    mine = frozenset().union(*own) if own else frozenset()
    groups: list[tuple[set[str], LedgerEntry]] = []
    for e in sorted(entries, key=lambda e: e.id):
        keys = account_keys(e)
        if keys & mine:
            continue
        for group in groups:
            if group[0] & keys:
                group[0].update(keys)
                groups[groups.index(group)] = (group[0], e)
                break
        else:
            groups.append((set(keys), e))
    return [(frozenset(k), e) for k, e in groups]


def secret_from_record(entry: LedgerEntry) -> Any:
    """The secret an account's guarantee is stated for, rebuilt from its newest row.

    A proportion or a mean secret (the attribute of several secrets the row was recorded
    for) with its recorded values and pairs. An event secret's account is stated, as the
    event secret's own calibration and composition are, for its materialised value secret:
    every grid value the events allow, Ψ = every value of one event against every value of
    the other (recorded as its ``values`` and ``pairs``). The hockey-stick divergence is
    jointly convex, so the largest δ over those cross pairs bounds the δ of the events'
    mixtures whatever their weights (Zhang, Ohrimenko & Cummings 2022, Def. 4;
    :mod:`distpriv.modeling.secret_events`): the bound holds for the stacked releases as
    for one. ``None`` for a kind the record does not determine (one this version does not
    know, or an attribute missing from its record).
    """
    from ...modeling import MeanSecret, ProportionSecret

    d = entry.secret
    kind = d.get("type")
    if kind == "several":
        accounts = d.get("accounts") or []
        attrs = d.get("attributes") or []
        if entry.secret_key in accounts and len(attrs) == len(accounts):
            d = attrs[accounts.index(entry.secret_key)]
        else:
            keys = [a.get("key") for a in attrs]
            match = [a for a, k in zip(attrs, keys, strict=True) if k == entry.secret_key]
            if not match:
                return None
            d = match[0]
        kind = d.get("type", "proportion")
    values = d.get("values") or []
    pairs = [tuple(p) for p in d.get("pairs") or []]
    if kind == "event":  # the grid's value secret: a share's events, or an average's
        kind = "proportion" if "predicate" in d else "mean"
    if kind == "proportion":
        return ProportionSecret(d["predicate"], values, pairs=pairs)
    if kind == "mean":
        return MeanSecret(d["expression"], values=values, pairs=pairs)
    return None


def release_identity(
    led: Any,
    source: Any,
    secret: Any,
    *,
    data_name: str | None = None,
    accounts: Callable[[bytes], tuple[str, ...]] | None = None,
    legacy: Callable[[bytes], str] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The secret's keyed meaning on the released rows, and the data's earlier account.

    ``accounts(key)``/``legacy(key)`` compute them in the engine when given; otherwise
    from ``source`` (:func:`~distpriv.modeling.secret_identity.secret_accounts`, and the
    first-version fingerprint, needed only when the ledger holds releases already).
    """
    from ...modeling.identity import multiset_fingerprint
    from ...modeling.secret_identity import secret_accounts

    key = led.identity_key
    if accounts is not None:
        meaning = accounts(key)
    elif source is not None:
        meaning = secret_accounts(source, secret, key=key)
    else:
        meaning = ()
    aliases: tuple[str, ...] = ()
    # Only a ledger with rows recorded before accounts by meaning (no "accounts" in their
    # secret) needs the first-version fingerprint: one more scan of the released rows.
    earlier = () if led.pending else led.releases()
    if data_name is None and any("accounts" not in e.secret for e in earlier):
        if legacy is not None:
            aliases = (data_account(key=key, fingerprint=legacy(key)),)
        elif source is not None:
            old = multiset_fingerprint(source, key=key, canonical=False)
            aliases = (data_account(key=key, fingerprint=old),)
    return meaning, aliases


def compose_into_accounts(
    con: sqlite3.Connection,
    new: NewRelease,
    earlier: Sequence[LedgerEntry],
    data_rows: Sequence[LedgerEntry],
    own: Sequence[frozenset[str]],
    composed: Any,
    compose_account: Callable[[Sequence[LedgerEntry], Budget | None, LedgerEntry], Any] | None,
) -> Any:
    """Compose the release into every other account of the data and check its budget.

    Returns ``composed`` with ``accounts``: one dict per account of the data after this
    release, this release's own first.

    Raises
    ------
    CompositionError
        Another account that the release cannot be composed into (or no
        ``compose_account`` while the data has other accounts): the release would be
        left out of it.
    BudgetExceededError
        Another account's composed guarantee would exceed its budget.
    """
    others = other_accounts(data_rows, own)
    if others and compose_account is None:
        names = ", ".join(repr(text_key(row)) for _, row in others)
        raise CompositionError(
            f"release refused: it counts in the account(s) of {names} of the same data "
            "too, and no composition into other accounts was given (compose_account); "
            "nothing was released or recorded"
        )
    if compose_account is None:  # and no other account
        return composed
    listing = hasattr(composed, "accounts")  # False for a stand-in (tests)
    listed = [
        {
            "account": shown_key(k),
            "secret": secret_key(t),
            "this_release": True,
            **account_summary(composed),
        }
        for k, t in zip(new.secret_keys, new.text_keys, strict=False)
        if listing
    ]
    for keys, row in others:
        acct_budget = budget_of(con, new.data_ids, close_keys(data_rows, keys))
        other = compose_account(earlier, acct_budget, row)
        name = text_key(row)
        shown = shown_key(row.secret_key)
        if isinstance(other, str) or other is None:
            # The release counts in that account too, budget or not: an account it
            # cannot be composed into would leave it out (fail closed, no override).
            why = other or "no composition for this secret"
            raise CompositionError(
                f"release refused: it counts in the account of the secret {name!r} of "
                f"the same data too, and cannot be composed into it: {why}; nothing was "
                "released or recorded"
            )
        if acct_budget is not None and not other.within(acct_budget):
            raise BudgetExceededError(
                f"release refused: it counts in the account of the secret {name!r} of "
                f"the same data too, whose composed guarantee would be "
                f"{other.describe()}, beyond its budget ({acct_budget.epsilon:g}, "
                f"{acct_budget.delta:g}); nothing was released or recorded"
            )
        if listing:
            summary = account_summary(other)
            listed.append({"account": shown, "secret": name, "this_release": False} | summary)
    return replace(composed, accounts=tuple(listed)) if listing else composed
