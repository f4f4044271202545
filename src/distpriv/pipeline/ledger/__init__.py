"""The privacy ledger: an append-only SQLite record of every release a curator makes.

One file per curator (by default ``distpriv-ledger.sqlite`` next to the config; every
``distpriv release`` records itself unless the curator opts out). Each row is one release:
the data's keyed account, the secret and its pairs, the statistics, the mechanism and its
noise, the guarantee of the release alone, the guarantee of all releases of the same data
and secret composed exactly after it (:mod:`distpriv.composition.accountant`), the time (UTC)
and the library version. Budgets (ε, δ) per data and secret are rows too.
docs/composition.md explains why releases must be composed; SECURITY.md what the ledger
cannot stop.

This module gathers the public names; the code lives by concern in

* :mod:`.schema` — the file: schema, creation, validation, row checksums, the chained
  history;
* :mod:`.records` — budgets and recorded releases (frozen values);
* :mod:`.store` — :class:`Ledger`, reading and appending rows under a lock (a missing
  file is created only by the first record);
* :mod:`.identity` — keyed, order-blind accounts of the data, secret keys;
* :mod:`.session` — which ledger a release goes into (a session of ``distpriv release``);
* :mod:`.draw` — the locked compose–check–draw–record step of a release;
* :mod:`.report` — what ``distpriv ledger show`` prints;
* :mod:`.migrate` — copying a schema-1 ledger into a new one.
"""

from __future__ import annotations

from .draw import PendingRelease, ReleaseAccounts, ledgered_draw
from .identity import data_account, public_account, secret_key, table_fingerprint
from .migrate import migrate_ledger
from .records import Budget, LedgerEntry, NewRelease, parse_budget
from .report import ledger_report
from .schema import APPLICATION_ID, SCHEMA_VERSION
from .session import (
    DEFAULT_LEDGER_NAME,
    NOT_RECORDED,
    DataIdentity,
    LedgeredRelease,
    LedgerSession,
    default_ledger_path,
    not_recorded,
    open_ledger,
)
from .store import Ledger

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_LEDGER_NAME",
    "NOT_RECORDED",
    "SCHEMA_VERSION",
    "Budget",
    "DataIdentity",
    "Ledger",
    "LedgerEntry",
    "LedgerSession",
    "LedgeredRelease",
    "NewRelease",
    "PendingRelease",
    "ReleaseAccounts",
    "data_account",
    "default_ledger_path",
    "ledger_report",
    "ledgered_draw",
    "migrate_ledger",
    "not_recorded",
    "open_ledger",
    "parse_budget",
    "public_account",
    "secret_key",
    "table_fingerprint",
]
