"""Copy the history of a schema-1 ledger (unkeyed data fingerprints) into a new ledger.

Schema 1 named the data by ``"sha256:<hex>"`` of the released table's CSV in row order
(unkeyed, order-sensitive) or by ``"name:<data_name>"``. A new ledger keys accounts with
its own secret (:mod:`.identity`), so:

* ``name:X`` becomes the account of ``data_name = X``: releases that keep using that name
  continue the same account and compose with the old history;
* ``sha256:H`` cannot be turned into the new order-blind fingerprint (the rows are not in
  the ledger), so it becomes a separate, keyed ``legacy`` account: its history and budget
  are kept and shown, but a new release of the same table opens a new account. Give such
  data a ``[ledger] data_name`` before migrating if they must keep composing.

The old file is only read (read-only connection) and never modified.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from ...errors import LedgerError
from .identity import data_account
from .schema import APPLICATION_ID, BUDGET_COLUMNS, RELEASE_COLUMNS, dumps
from .store import Ledger

__all__ = ["migrate_ledger"]


def _account(key: bytes, old: str) -> str:
    if old.startswith("name:"):
        return data_account(key=key, data_name=old[len("name:") :])
    return data_account(key=key, fingerprint=f"legacy-schema-1:{old}")


def migrate_ledger(old: str | os.PathLike[str], new: str | os.PathLike[str]) -> Ledger:
    """Copy every budget and release of a schema-1 ledger ``old`` into a new ledger ``new``.

    Returns
    -------
    Ledger
        The new ledger (the current schema, a fresh identity key), with the same rows, times and
        guarantees, the data renamed to keyed accounts as described in the module.

    Raises
    ------
    LedgerError
        ``old`` is not a readable schema-1 ledger, or ``new`` already exists.
    """
    src, dst = Path(old), Path(new)
    if dst.exists():
        raise LedgerError(f"cannot migrate into {str(dst)!r}: it exists (give a new path)")
    if not src.is_file():
        raise LedgerError(f"ledger {str(src)!r} does not exist")
    try:
        con = sqlite3.connect(src.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {str(src)!r} read-only: {exc}") from exc
    try:
        con.row_factory = sqlite3.Row
        if con.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            raise LedgerError(f"{str(src)!r} is not a distpriv ledger")
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version != 1:
            raise LedgerError(f"ledger {str(src)!r} has schema {version}, not 1: nothing to do")
        if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            raise LedgerError(f"ledger {str(src)!r} is corrupt; not migrated")
        budgets = con.execute("SELECT * FROM budgets ORDER BY id").fetchall()
        releases = con.execute("SELECT * FROM releases ORDER BY id").fetchall()
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"ledger {str(src)!r} cannot be read ({exc}); not migrated") from exc
    finally:
        con.close()
    led = Ledger(dst)
    key = led.identity_key
    with led._immediate() as wcon:
        for table, cols, rows in (
            ("budgets", BUDGET_COLUMNS, budgets),
            ("releases", RELEASE_COLUMNS, releases),
        ):
            for r in rows:
                row = {c: r[c] for c in cols[1:] if c != "data_account"}
                row["data_account"] = _account(key, r["data_fingerprint"])
                if table == "releases":  # no unkeyed table hash survives the migration
                    model = json.loads(row["model_json"])
                    old_fp = model.pop("model_data_sha256", None)
                    if old_fp is not None:
                        model["model_data_account"] = _account(key, f"sha256:{old_fp}")
                    row["model_json"] = dumps(model)
                led._append(wcon, table, cols, row)
    return led
