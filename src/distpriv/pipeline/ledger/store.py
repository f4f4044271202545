"""The ledger: an append-only SQLite record of every release a curator makes.

:class:`Ledger` reads and appends the rows of a ledger file (:mod:`.schema` owns the
file itself: schema, creation and validation). Every read or write is preceded by the
file's checks (SQLite ``integrity_check``, the exact schema, a keyed checksum of every row
and the chained history): at open through a read-only connection, and again inside each
write transaction, so a file damaged between the two is still refused before anything is
appended. :meth:`Ledger.guarded_release` holds the budget check, the noise draw and the
insert in one ``BEGIN IMMEDIATE`` transaction: two processes cannot both pass the check.

A ledger opened with ``lazy=True`` (every release does) whose file does not exist yet
creates nothing until a row is recorded: its first write runs in a temporary file that is
linked into place when it commits, so a refused release leaves no file behind.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import (
    BudgetExceededError,
    LedgerError,
    ParameterError,
    ParameterTypeError,
)
from ...guarantees import to_jsonable
from ...util.version import __version__
from ..scope import note_record
from ._tempfile import held_temp_ledger, ledger_directory
from .accounts import (
    budget_of,
    close_keys,
    compose_into_accounts,
    known_keys,
    rows_of,
)
from .identity import MEANING_PREFIX, legacy_secret_key, secret_aliases, secret_key
from .records import Budget, LedgerEntry, NewRelease, same_release
from .schema import (
    BUDGET_COLUMNS,
    KEY_BYTES,
    RELEASE_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
    Heads,
    build_ledger_file,
    chain_next,
    check_content,
    create_ledger_file,
    dumps,
    now_utc,
    row_mac,
    upgrade_to_chain,
    validate_ledger_file,
    write_chain,
)

__all__ = ["Ledger", "LedgerCreatedElsewhere"]


class LedgerCreatedElsewhere(LedgerError):
    """A lazily opened ledger was created by another process before this one recorded.

    The :class:`Ledger` has switched to that file (and its identity key); nothing was
    recorded or released. The caller computes the data's account again under the new key
    and retries (:func:`~distpriv.pipeline.ledger.draw.ledgered_draw` does).
    """


def _refuse_uri_names(path: str | os.PathLike[str]) -> None:
    """``:memory:`` and ``file:`` URIs are SQLite names, not files: a ledger must be a file."""
    text = os.fspath(path)
    text = text if isinstance(text, str) else os.fsdecode(text)
    if text == ":memory:" or text.startswith("file:") or text == "":
        raise LedgerError(
            f"ledger {text!r} is not a file path (SQLite's in-memory and URI names are not "
            "ledgers: a release must be recorded in a file); give a file name"
        )


#: The prefix of the ledger key of several secrets at once (never a predicate's key).
SEVERAL_PREFIX = "several:"


def _whole_key(entry: LedgerEntry) -> str | None:
    """The key of the release as a whole, as recorded in its secret (``None`` if absent)."""
    key = entry.secret.get("key")
    return secret_key(key) if isinstance(key, str) and key.strip() else None


def _aliases(entries: Sequence[LedgerEntry], secret: str) -> frozenset[str]:
    """Every key of the account named ``secret`` (a keyed meaning or a text).

    A keyed meaning, or a canonical text key stored with one of ``entries``, needs no SQL
    parsing (so ``distpriv ledger show`` imports no parser for what this version recorded);
    any other text is canonicalised (:func:`secret_aliases`).
    """
    if secret.startswith(MEANING_PREFIX):
        return frozenset({secret})
    if secret in known_keys(entries):
        return frozenset({secret, legacy_secret_key(secret)})
    return secret_aliases(secret) | {secret}


class Ledger:
    """An append-only SQLite ledger of releases (one file per curator).

    Parameters
    ----------
    path : str or Path
        The ledger file. Created (with the schema and a fresh identity key) when it does not
        exist and ``create`` is true; an existing file must be a valid ledger.
    create : bool
        Whether a missing file may be created (``distpriv ledger show`` passes False).
    lazy : bool
        Create a missing file only when the first row is recorded (a release refused
        before that leaves no file). Until then the ledger reads as empty and its identity
        key is held in memory; if another process creates the file meanwhile, the write
        raises :class:`LedgerCreatedElsewhere` and the ledger continues on that file.
    timeout : float
        Seconds to wait for another process's transaction (SQLite busy timeout).

    Attributes
    ----------
    path : Path
    identity_key : bytes
        The ledger's secret 32-byte key (from :mod:`secrets`, made with the ledger, stored
        in it). Data identities are keyed with it
        (:func:`~distpriv.pipeline.ledger.identity.data_account`); it is only as secret
        as the file (SECURITY.md).

    Raises
    ------
    LedgerError
        Missing (with ``create=False``), empty, truncated, corrupt, tampered with (rows
        deleted, triggers dropped) or foreign file, or another schema version. The file
        is not modified.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        lazy: bool = False,
        timeout: float = 600.0,
    ):
        if not isinstance(path, str | os.PathLike):
            raise ParameterTypeError(f"ledger path must be a string or path, got {path!r}")
        _refuse_uri_names(path)
        self.path = Path(path)
        self.timeout = float(timeout)
        self._pending = False
        self._heads: Heads | None = None
        if self.path.exists():
            if not self.path.is_file():
                raise LedgerError(f"ledger {str(self.path)!r} is not a regular file")
        elif create and lazy:
            ledger_directory(self.path)  # an unusable folder fails now, not after modelling
            self._pending = True
            self.identity_key: bytes = secrets.token_bytes(KEY_BYTES)
            return
        elif create:
            create_ledger_file(self.path)
        else:
            raise LedgerError(f"ledger {str(self.path)!r} does not exist")
        self.identity_key = validate_ledger_file(self.path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    @property
    def pending(self) -> bool:
        """True while a lazily opened ledger has no file yet (nothing recorded)."""
        return self._pending

    def _adopt(self) -> None:
        """Continue on the file another process created at our path (its own key)."""
        self.identity_key = validate_ledger_file(self.path)
        self._pending = False
        raise LedgerCreatedElsewhere(
            f"ledger {str(self.path)!r} was created by another process while this release "
            "was prepared; the data's account is computed again under its key; nothing was "
            "released or recorded yet"
        )

    def _still_ours(self) -> None:
        """Before the noise is drawn into a new ledger: has another process made the file?"""
        if self._pending and os.path.lexists(self.path):
            self._adopt()

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if self._pending:  # no file yet: read an empty ledger, create nothing
            con = sqlite3.connect(":memory:", isolation_level=None)
            con.executescript(SCHEMA)
            con.row_factory = sqlite3.Row
            try:
                yield con
            finally:
                con.close()
            return
        try:
            # a file: URI of the resolved path, never a name SQLite would interpret, and
            # mode=rw: a ledger deleted since it was opened is an error, not a new empty file
            uri = self.path.resolve().as_uri() + "?mode=rw"
            con = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {str(self.path)!r}: {exc}") from exc
        con.row_factory = sqlite3.Row
        try:
            # freed space is zeroed, so unused bytes of a page stay zero (checked at open)
            con.execute("PRAGMA secure_delete = ON")
            yield con
        except sqlite3.DatabaseError as exc:
            raise LedgerError(
                f"ledger {str(self.path)!r} cannot be used ({exc}): corrupt, or not writable "
                "by this process"
            ) from exc
        finally:
            con.close()

    @contextlib.contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """A checked write transaction taken at once (BEGIN IMMEDIATE); rolled back on error.

        The file is checked again under the lock: it may have been damaged since it was
        opened, and nothing is appended to a damaged file. A schema-2 or 3 file is upgraded
        to schema 4 (chained, accounts by meaning) in the same transaction
        (:func:`.schema.upgrade_to_chain`), so a write that is rolled back leaves it as it
        was. A lazily opened ledger without a
        file writes into a new temporary ledger instead (:meth:`_creating`).
        """
        if self._pending:
            if os.path.lexists(self.path):
                self._adopt()
            with self._creating() as con:
                yield con
            return
        with self._connect() as con:
            self._begin(con)
            try:
                key, heads, version = check_content(con, self.path)
                if key != self.identity_key:
                    raise LedgerError(
                        f"ledger {str(self.path)!r} changed its identity key since it was "
                        "opened (replaced by another file?); nothing recorded"
                    )
                if version < SCHEMA_VERSION:
                    upgrade_to_chain(con, key, heads, version)
                self._heads = heads
                yield con
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # keep the original error
                    con.execute("ROLLBACK")
                raise
            finally:
                self._heads = None
            con.execute("COMMIT")

    def _begin(self, con: sqlite3.Connection) -> None:
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise LedgerError(
                f"ledger {str(self.path)!r} is busy ({exc}) after {self.timeout:g} s"
            ) from exc

    @contextlib.contextmanager
    def _creating(self) -> Iterator[sqlite3.Connection]:
        """The first write of a lazily opened ledger: into a new file, linked at commit.

        The ledger (schema, the identity key held since the open) is built in a temporary
        file next to ``path``, the rows are written there in one transaction, and the file
        is hard-linked into place only after the commit: a refusal on the way leaves no
        file, and the link never replaces a file another process created meanwhile (then
        this write is discarded unrecorded and unreleased, and
        :class:`LedgerCreatedElsewhere` tells the caller to retry on that file).
        """
        with held_temp_ledger(self.path) as tmp:
            build_ledger_file(tmp, self.identity_key)
            con = sqlite3.connect(tmp, timeout=self.timeout, isolation_level=None)
            con.row_factory = sqlite3.Row
            try:
                self._begin(con)
                try:
                    _, heads, _ = check_content(con, Path(tmp))
                    self._heads = heads
                    yield con
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        con.execute("ROLLBACK")
                    raise
                finally:
                    self._heads = None
                con.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise LedgerError(f"cannot write ledger {str(self.path)!r}: {exc}") from exc
            finally:
                con.close()
            try:
                os.link(tmp, self.path)  # atomic, and never over an existing file
            except FileExistsError:
                self._adopt()
            except OSError as exc:
                raise LedgerError(
                    f"cannot create ledger {str(self.path)!r}: {exc.strerror}; nothing recorded"
                ) from exc
            self._pending = False

    def _append(
        self, con: sqlite3.Connection, table: str, cols: Sequence[str], row: dict[str, Any]
    ) -> tuple[int, str]:
        """Append one row with the next id and its keyed checksum, and extend the chain.

        Runs inside :meth:`_immediate` (the lock is held and the history was just checked):
        the id is the next one after the rows found, the checksum covers it, and the chain
        record in ``meta`` moves to the new head in the same transaction.

        Returns
        -------
        (int, str)
            The new row's id and checksum.
        """
        if self._heads is None:
            raise LedgerError("internal: a ledger row is appended outside a write transaction")
        count, head = self._heads[table]
        values = [count + 1, *(row[c] for c in cols[1:])]
        mac = row_mac(self.identity_key, table, values)
        con.execute(
            f"INSERT INTO {table} ({', '.join(cols)}, row_mac) VALUES "
            f"({', '.join('?' * (len(cols) + 1))})",
            (*values, mac),
        )
        self._heads[table] = (count + 1, chain_next(self.identity_key, table, head, mac))
        write_chain(con, self.identity_key, self._heads)
        return count + 1, mac

    # -- reading ----------------------------------------------------------------------

    @staticmethod
    def _select(
        con: sqlite3.Connection, account: str | None, secret: str | None
    ) -> tuple[LedgerEntry, ...]:
        sql, args = "SELECT * FROM releases", []
        if account is not None:
            sql += " WHERE data_account = ?"
            args.append(account)
        rows = con.execute(sql + " ORDER BY id", args).fetchall()
        entries = tuple(LedgerEntry._from_row(r) for r in rows)
        if secret is None:
            return entries
        # An account is found under its keyed meaning or any spelling of its text.
        return tuple(rows_of(entries, _aliases(entries, secret)))

    def _budget(self, con: sqlite3.Connection, account: str, secret: str) -> Budget | None:
        rows = self._select(con, account, None)
        keys = close_keys(rows, _aliases(rows, secret))
        return budget_of(con, (account,), keys, known_keys(rows))

    def releases(
        self, data_account: str | None = None, secret: str | None = None
    ) -> tuple[LedgerEntry, ...]:
        """The recorded releases, oldest first, optionally of one data and/or secret.

        Parameters
        ----------
        data_account : str, optional
            The data's account (:func:`~distpriv.pipeline.ledger.identity.data_account`).
        secret : str, optional
            The secret's predicate (or its key, :func:`secret_key`). The key of several
            secrets at once (``"several:" + …``,
            :meth:`~distpriv.modeling.secret_several.SeveralSecrets.ledger_key`) finds the
            releases that hid exactly those attributes together, each counted once (their
            rows are stored under each attribute's own key).
        """
        with self._connect() as con:
            # the prefix needs no parsing: canonical SQL keeps it
            if secret is None or not legacy_secret_key(secret).startswith(SEVERAL_PREFIX):
                return self._select(con, data_account, secret)
            wanted = secret_key(secret)
            rows = self._select(con, data_account, None)
        return same_release([e for e in rows if _whole_key(e) == wanted])

    def budget(self, data_account: str, secret: str) -> Budget | None:
        """The budget of one data and secret (the tightest one recorded), or ``None``."""
        with self._connect() as con:
            return self._budget(con, data_account, secret)

    def groups(self) -> tuple[tuple[str, str], ...]:
        """Every (data account, secret key) with a release or a budget, in first-use order."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT data_account, secret_key, MIN(id) AS first FROM ("
                " SELECT data_account, secret_key, id FROM releases"
                " UNION ALL SELECT data_account, secret_key, id + 1e12 FROM budgets)"
                " GROUP BY data_account, secret_key ORDER BY first"
            ).fetchall()
        return tuple((r[0], r[1]) for r in rows)

    def schema_version(self) -> int:
        """The file's schema version (``PRAGMA user_version``): an older one until this
        distpriv's first write upgrades it; :data:`.schema.SCHEMA_VERSION` before a lazily
        opened ledger's file exists."""
        if self._pending:
            return SCHEMA_VERSION
        with self._connect() as con:
            return int(con.execute("PRAGMA user_version").fetchone()[0])

    def __len__(self) -> int:
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM releases").fetchone()[0])

    # -- writing ----------------------------------------------------------------------

    def set_budget(self, data_account: str, secret: str, budget: Budget) -> None:
        """Record a budget for one data and secret (appended; the tightest recorded applies).

        The explicit way to tighten a recorded budget; a release that names a budget
        different from the recorded one is refused instead (:meth:`guarded_release`).
        """
        if not isinstance(budget, Budget):
            raise ParameterTypeError(f"budget must be a Budget, got {budget!r}")
        with self._immediate() as con:
            self._insert_budget(con, data_account, secret_key(secret), budget)

    def _insert_budget(
        self, con: sqlite3.Connection, data_account: str, key: str, budget: Budget
    ) -> None:
        row = {
            "time_utc": now_utc(),
            "data_account": str(data_account),
            "secret_key": key,
            "epsilon": float(budget.epsilon),
            "delta": float(budget.delta),
        }
        self._append(con, "budgets", BUDGET_COLUMNS, row)

    def guarded_release(
        self,
        new: NewRelease,
        *,
        compose: Callable[[Sequence[LedgerEntry], Budget | None], Any],
        draw: Callable[[], Any],
        budget: Budget | None = None,
        compose_account: Callable[[Sequence[LedgerEntry], Budget | None, LedgerEntry], Any]
        | None = None,
    ) -> tuple[LedgerEntry, Any, Any, Budget | None]:
        """Check the composed guarantee against the budget, draw the noise, record: atomically.

        One ``BEGIN IMMEDIATE`` transaction holds the file check, the read of the earlier
        releases, the composition, the budget check, the noise draw and the insert, so two
        processes cannot both pass the check on the same ledger. If anything fails (budget
        exceeded, composition refused, sampler error), the transaction is rolled back and
        nothing is recorded; when the budget is exceeded ``draw`` is never called.

        Parameters
        ----------
        new : NewRelease
        compose : callable (earlier entries, effective budget) -> ComposedGuarantee
            Returns an object with ``alone``/``epsilon``/``delta``/``within(budget)``/
            ``to_dict()`` (:class:`distpriv.composition.accountant.ComposedGuarantee`).
        draw : callable () -> Release-like
            Draws the noise and returns the release (an object with ``value``).
        budget : Budget, optional
            A budget given for this release (config or ``--budget``). Recorded with the
            first release of its data and secret; later it must equal the recorded one.
        compose_account : callable (entries, budget, newest row of the account), optional
            The composed guarantee of *another* secret's account of the same data (its
            hypotheses rebuilt from that row) with this release: every account of the
            data is checked against its own budget, and listed in the result's
            ``accounts``. Returns the reason (a string), or ``None``, for an account it
            cannot state: the release is then refused (it would be left out of that
            account).

        Returns
        -------
        (LedgerEntry, release, composed guarantee, effective budget or None)

        Raises
        ------
        BudgetExceededError
            The composed guarantee would exceed the budget (nothing drawn or recorded).
        ParameterError
            ``budget`` differs from the one recorded for this data and secret (naming both;
            a later, looser budget would otherwise silently reopen the account).
        CompositionError
            The release cannot be composed into another account of its data (naming the
            account and why), with or without a budget: nothing drawn or recorded.
        """
        # Every release of the data counts in every account of it: the new release is
        # composed with all of them, under its own secret (and, through compose_account,
        # under every other secret already recorded for the data). Several secrets at once
        # are recorded under each attribute's key.
        keys = new.secret_keys
        aliases = new.key_aliases
        with self._immediate() as con:
            data_rows = tuple(
                sorted(
                    (e for d in new.data_ids for e in self._select(con, d, None)),
                    key=lambda e: e.id,
                )
            )
            earlier = same_release(data_rows)
            closed = [close_keys(data_rows, a) for a in aliases]
            budgets = [budget_of(con, new.data_ids, a) for a in closed]
            stored: Budget | None = None
            for b in budgets:
                stored = b.tighter(stored) if b is not None else stored
            differs = [b for b in budgets if b is not None and b != budget]
            if budget is not None and differs:
                stored = differs[0]
                raise ParameterError(
                    f"the budget given ({budget.epsilon:g}, {budget.delta:g}) differs from the "
                    f"budget recorded in the ledger for this data and secret "
                    f"({stored.epsilon:g}, {stored.delta:g}); give the recorded budget or none "
                    "(a recorded budget is kept; Ledger.set_budget can only tighten it); "
                    "nothing was released or recorded"
                )
            effective = stored if stored is not None else budget
            composed = compose(earlier, effective)
            if effective is not None and not composed.within(effective):
                raise BudgetExceededError(
                    f"release refused: with the {len(earlier)} earlier release(s) of this data "
                    f"the composed guarantee for this secret would be {composed.describe()}, "
                    f"beyond the budget ({effective.epsilon:g}, {effective.delta:g}); nothing "
                    "was released or recorded"
                )
            composed = compose_into_accounts(
                con, new, earlier, data_rows, closed, composed, compose_account
            )
            self._still_ours()  # a new ledger another process made meanwhile: retry there
            rel = draw()
            if budget is not None:
                for k, b in zip(keys, budgets, strict=True):
                    if b is None:
                        self._insert_budget(con, new.data_account, k, budget)
            values = [float(v) for v in to_jsonable(rel.value)]
            if not all(math.isfinite(v) for v in values):
                raise LedgerError("the released values are not finite; nothing recorded")
            row = {
                "time_utc": now_utc(),
                "version": __version__,
                "data_account": str(new.data_account),
                "secret_json": dumps(new.recorded_secret),
                "statistics_json": dumps([list(s) for s in new.statistics]),
                "model_json": dumps(new.model),
                "mechanism": str(new.mechanism),
                "noise_json": dumps(new.noise),
                "guarantee_json": dumps(new.guarantee),
                "alone_epsilon": float(composed.alone["epsilon"]),
                "alone_delta": float(composed.alone["delta"]),
                "composed_json": dumps(composed.to_dict()),
                "composed_epsilon": float(composed.epsilon),
                "composed_delta": float(composed.delta),
                "released_json": dumps(values),
            }
            for k in reversed(keys):  # the first key's row last: the entry returned
                new_id, mac = self._append(
                    con, "releases", RELEASE_COLUMNS, {**row, "secret_key": k}
                )
            entry = LedgerEntry._from_row(
                con.execute("SELECT * FROM releases WHERE id = ?", (new_id,)).fetchone()
            )
            # Before the commit: an interrupted command can then say whether it was recorded.
            note_record({"ledger": str(self.path.resolve()), "id": new_id, "row_mac": mac})
        return entry, rel, composed, effective
