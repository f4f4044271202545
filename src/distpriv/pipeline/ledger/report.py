"""What ``distpriv ledger show`` prints: per data and secret, the composed guarantee first.

Imports nothing heavy (no pandas, no scipy, not the composition): showing a ledger reads
the recorded rows, it never recomputes them.
"""

from __future__ import annotations

import os
from typing import Any

from ...guarantees import to_jsonable
from .accounts import shown_key, text_key
from .identity import public_account
from .store import Ledger

__all__ = ["ledger_report"]


def _row(e: Any) -> dict[str, Any]:
    return {
        "id": e.id,
        "time_utc": e.time_utc,
        "version": e.version,
        "mechanism": e.mechanism,
        "statistics": [{"name": n, "expression": x} for n, x in e.statistics],
        "pairs": e.secret.get("pairs"),
        "claimed": {
            "epsilon": e.guarantee.get("epsilon"),
            "delta": e.guarantee.get("delta"),
            "theorem": e.guarantee.get("theorem"),
        },
        "alone": e.alone,
        "composed": {
            "epsilon": e.composed.get("epsilon"),
            "delta": e.composed.get("delta"),
            "n_releases": e.composed.get("n_releases"),
            "family": e.composed.get("family"),
        },
        "released": e.released,
    }


def _latest(
    every: Any, account: str, key: str, entries: Any, composed: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The account's composed guarantee after the newest release of its data: a release
    under another secret counts in it too, and records the account's guarantee after it
    (in its ``composed.accounts``).

    A later release of the data that recorded no guarantee for this account (an earlier
    distpriv listed it with a note, or composed into no other account) is not in the
    guarantee shown: its id is listed in ``left_out`` until a later composition of the
    account (which takes every earlier release of the data) covers it.
    """
    last = entries[-1].id if entries else -1
    shown = shown_key(key)
    mine = {e.id for e in entries}
    left_out: list[int] = []
    for e in every:
        if e.data_account != account or e.id <= last or e.id in mine:
            continue
        found = [a for a in e.composed.get("accounts") or [] if a.get("account") == shown]
        if any(a.get("this_release") for a in found):
            continue  # several secrets at once: this account's own release, another row
        stated = [a for a in found if "epsilon" in a]
        if not stated:
            left_out.append(e.id)
            continue
        a = stated[0]
        composed = {
            "epsilon": a["epsilon"],
            "delta": a["delta"],
            "n_releases": a["n_releases"],
            "family": (composed or {}).get("family", e.composed.get("family")),
            "after_release": e.id,
        }
        left_out = []
    if left_out and composed is not None:
        composed = {**composed, "left_out": left_out}
    return composed


def ledger_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Every release of a ledger, alone and composed, per (data, secret).

    Parameters
    ----------
    path : str or Path
        An existing ledger (never created here); validated first (integrity check and row
        checksums), so a damaged file is refused and left untouched.

    Returns
    -------
    dict
        JSON-safe: ``kind`` ("ledger"), ``path``, ``schema_version`` (the file's: an older
        one until this distpriv's first write upgrades it), ``n_releases`` and
        ``groups``, one per (data account, secret). Each group leads with ``composed``:
        the guarantee of every release of the data in this secret's account, after the
        newest release of the data (``after_release`` names it when it was made under
        another secret; ``None`` for a budget without releases; ``left_out`` lists later
        releases of the data it does not include, recorded by an earlier distpriv that
        did not compose them into this account), then ``budget``,
        ``account`` (the short keyed account, as in public reports) and ``releases`` (id,
        time, version, mechanism, statistics, the guarantee claimed alone, ``alone`` and
        ``composed`` from the exact computation, released values).
    """
    led = Ledger(path, create=False)
    groups: list[dict[str, Any]] = []
    every = led.releases()
    for account, key in led.groups():
        budget = led.budget(account, key)
        entries = led.releases(account, key)
        rows = [_row(e) for e in entries]
        composed = rows[-1]["composed"] if rows else None
        groups.append(
            {
                "composed": _latest(every, account, key, entries, composed),
                "secret": text_key(entries[-1]) if entries else key,
                "secret_account": shown_key(key),
                "budget": None if budget is None else budget.to_dict(),
                "account": public_account(account),
                "releases": rows,
            }
        )
    return to_jsonable(
        {
            "kind": "ledger",
            "path": str(led.path),
            "schema_version": led.schema_version(),
            "n_releases": sum(len(g["releases"]) for g in groups),
            "groups": groups,
        }
    )
