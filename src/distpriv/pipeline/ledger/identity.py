"""Who an account of the ledger belongs to: the keyed identity of the data and the secret.

The ledger groups releases by (data, secret) and composes every release of a group
(docs/composition.md). The *data* part of that key must

* recognise the same rows in any order (an order-blind multiset fingerprint), or the same
  150 rows in reverse order open a fresh account and escape composition;
* be keyed with a secret the curator keeps (the ledger's 32-byte identity key), or anyone
  who can guess the released table can hash it and confirm the guess from the account
  name shown in a public report (docs/architecture.md §4).

The fingerprint itself is computed by the engine,
``distpriv.modeling.identity.multiset_fingerprint(source, *, key)`` (one pass, in DuckDB or
Spark); this module turns it, or a user's ``data_name``, into the account name stored in
the ledger — an HMAC under the ledger key with a domain tag — and into the short form
shown in public outputs. No unkeyed hash of a table ever reaches the ledger or a report.

Imports nothing heavy at module level: ``distpriv ledger show`` stays light.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from ...errors import ParameterError, ParameterTypeError

__all__ = [
    "ACCOUNT_PREFIX",
    "data_account",
    "legacy_secret_key",
    "public_account",
    "secret_aliases",
    "secret_key",
    "stored_aliases",
    "table_fingerprint",
]

ACCOUNT_PREFIX = "hmac-sha256:"
# A secret's keyed meaning (distpriv.modeling.secret_identity.secret_accounts) starts so.
MEANING_PREFIX = "meaning-" + ACCOUNT_PREFIX
# Hex digits of an account shown in public outputs: 64 bits name an account among a
# curator's tables without publishing the whole MAC.
PUBLIC_HEX = 16


def legacy_secret_key(predicate: str) -> str:
    """The key earlier versions grouped a secret's releases under: its text, whitespace
    normalised (rows recorded before secrets were keyed by meaning carry it)."""
    if not isinstance(predicate, str) or not predicate.strip():
        raise ParameterTypeError(f"predicate must be a non-empty string, got {predicate!r}")
    return " ".join(predicate.split())


# Text keys of a whole secret that are not SQL: a mean's ``mean:<expression>`` and several
# secrets' ``several:<p1> | <p2>`` (distpriv.modeling.secret_mean / secret_several).
_MEAN, _SEVERAL = "mean:", "several:"


def secret_key(predicate: str) -> str:
    """The text key of a secret: its predicate (or ``mean:``/``several:`` key) in canonical SQL.

    :func:`~distpriv.modeling.secret_identity.canonical_sql` of the text (whitespace,
    parentheses, keyword and identifier case, commuted comparisons, IN-list order,
    redundant casts): ``gender='female'`` and ``('female' = GENDER)`` have one key. The
    values and pairs are *not* part of the key: every earlier release of the same data
    about the same property is composed with a new one, under the new release's pairs,
    so changing Ψ cannot reset the account. (What a secret selects on the released rows,
    beyond its spelling, is keyed by :func:`~distpriv.modeling.secret_identity.secret_accounts`.)
    A keyed meaning (``meaning-hmac-sha256:…``) is its own key: no SQL is parsed.
    """
    plain = legacy_secret_key(predicate)
    if plain.startswith(MEANING_PREFIX):
        return plain
    from ...modeling.secret_identity import canonical_sql

    if plain.startswith(_MEAN):
        return _MEAN + canonical_sql(plain[len(_MEAN) :])
    if plain.startswith(_SEVERAL):
        parts = plain[len(_SEVERAL) :].split(" | ")
        return _SEVERAL + " | ".join(canonical_sql(p) for p in parts)
    return canonical_sql(plain)


def secret_aliases(predicate: str) -> frozenset[str]:
    """Every key a secret's rows may carry: its canonical key and its earlier text key
    (a keyed meaning has no other: no SQL is parsed for it)."""
    return frozenset({secret_key(predicate), legacy_secret_key(predicate)})


def stored_aliases(canonical: str, text: str) -> frozenset[str]:
    """:func:`secret_aliases` of ``text`` when its canonical key was stored with its row
    (``canonical``, computed at record time): no SQL is parsed, so reading a ledger
    (``distpriv ledger show``) needs no parser."""
    return frozenset({canonical, legacy_secret_key(text)})


def _mac(key: bytes, tag: str, text: str) -> str:
    if not isinstance(key, bytes) or len(key) < 16:
        raise ParameterTypeError("the ledger identity key must be at least 16 bytes")
    msg = f"distpriv-ledger-account\x00{tag}\x00{text}".encode()
    return ACCOUNT_PREFIX + hmac.new(key, msg, hashlib.sha256).hexdigest()


def data_account(
    *, key: bytes, fingerprint: str | None = None, data_name: str | None = None
) -> str:
    """The ledger account of the released data: ``"hmac-sha256:<64 hex>"`` under ``key``.

    Parameters
    ----------
    key : bytes
        The ledger's identity key (:attr:`Ledger.identity_key`).
    fingerprint : str, optional
        The keyed, order-blind multiset fingerprint of the released rows
        (``multiset_fingerprint(source, key=key)``), as a string.
    data_name : str, optional
        A name the curator gives the data (``[ledger] data_name``): used instead of the
        fingerprint when the same data arrive with different rows (e.g. re-encoded).

    Returns
    -------
    str
        The account. The fingerprint and the name live in separate domains (a name can
        never collide with a fingerprint).

    Raises
    ------
    ParameterError
        Neither, or an empty name or fingerprint.
    """
    if data_name is not None:
        if not isinstance(data_name, str) or not data_name.strip():
            raise ParameterError(f"data_name must be a non-empty string, got {data_name!r}")
        return _mac(key, "name", data_name.strip())
    if not isinstance(fingerprint, str) or not fingerprint:
        raise ParameterError(
            f"a data account needs a data_name or a data fingerprint, got {fingerprint!r}"
        )
    return _mac(key, "rows", fingerprint)


def public_account(account: str) -> str:
    """The short form of an account shown in public outputs (``hmac-sha256:`` + 16 hex)."""
    # A data account starts with ACCOUNT_PREFIX; a secret's keyed meaning with
    # "meaning-" + ACCOUNT_PREFIX (distpriv.modeling.secret_identity).
    at = account.find(ACCOUNT_PREFIX) if isinstance(account, str) else -1
    if at < 0 or account[:at] not in ("", "meaning-"):
        raise ParameterError(f"not a keyed ledger account: {str(account)[:24]!r}")
    return account[: at + len(ACCOUNT_PREFIX) + PUBLIC_HEX]


def table_fingerprint(source: Any, *, key: bytes) -> str:
    """The keyed, order-blind multiset fingerprint of a table's rows (a string).

    Delegates to the engine's ``distpriv.modeling.identity.multiset_fingerprint`` when it
    exists. Until then, an interim pandas computation with the same properties: each row
    is hashed with a keyed SipHash (``pandas.util.hash_pandas_object`` with a key derived
    from ``key``), the 64-bit row hashes are *sorted* (so the order of the rows does not
    matter, and repeated rows count), and the sorted array, the column names and dtypes
    are HMAC-SHA256'd under ``key``.

    Parameters
    ----------
    source : DataFrame or table
        The released rows.
    key : bytes
        The ledger's identity key.
    """
    fingerprint: Callable[..., object] | None
    try:
        from ...modeling.identity import multiset_fingerprint as fingerprint
    except ImportError:
        fingerprint = None
    if fingerprint is not None:
        return str(fingerprint(source, key=key))
    import numpy as np
    import pandas as pd

    frame = source if isinstance(source, pd.DataFrame) else getattr(source, "frame", source)
    if not isinstance(frame, pd.DataFrame):
        raise ParameterTypeError(f"cannot fingerprint a {type(source).__name__}")
    # hash_pandas_object's SipHash takes a 16-character key: derive it from the ledger key.
    sip = hmac.new(key, b"row-hash-key", hashlib.sha256).hexdigest()[:16]
    rows = pd.util.hash_pandas_object(frame, index=False, hash_key=sip).to_numpy()
    mac = hmac.new(key, b"distpriv-multiset-v0\x00", hashlib.sha256)
    for name, dtype in zip(frame.columns, frame.dtypes, strict=True):
        mac.update(f"{name}\x00{dtype}\x00".encode())
    mac.update(np.sort(rows.astype(np.uint64)).tobytes())
    return "multiset-v0:" + mac.hexdigest()
