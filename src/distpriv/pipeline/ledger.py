"""The privacy ledger: an append-only SQLite record of every release a curator makes.

One file per curator. Each row is one release: the data's fingerprint, the secret and its
pairs, the statistics, the mechanism and its noise, the guarantee of the release alone, the
guarantee of all releases of the same data and secret composed exactly after it
(:mod:`distpriv.pipeline.compose`), the time (UTC) and the library version. Budgets (ε, δ)
per data and secret are rows too.

Distribution privacy does not compose sequentially (Kifer & Machanavajjhala 2014, the
Pufferfish framework; Chen & Ohrimenko 2023, §2): two releases of statistics of the same
data are correlated through the data, so the ledger is what lets the next release be judged
together with the earlier ones (docs/composition.md).

File safety
-----------
* The schema is versioned (``PRAGMA user_version``) and marked with an ``application_id``,
  so a foreign SQLite file, or one written by a newer distpriv, is recognised.
* An existing file is validated through a *read-only* connection (header, page count
  against the file size, application id, version, ``quick_check``, tables) before it is
  ever opened for writing; a corrupt, truncated or foreign file raises
  :class:`~distpriv.errors.LedgerError` and is left byte-for-byte untouched.
* A new ledger is built in a temporary file and linked into place atomically, so no other
  file is ever created over, and two processes creating the same ledger cannot race.
* Append-only: the API has no update or delete, and triggers abort any ``UPDATE`` or
  ``DELETE`` issued by other SQLite clients.
* :meth:`Ledger.guarded_release` holds the budget check, the noise draw and the insert in
  one ``BEGIN IMMEDIATE`` transaction: two processes cannot both pass the check.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._validation import check_privacy
from .._version import __version__
from ..errors import BudgetExceededError, LedgerError, ParameterError, ParameterTypeError
from ..guarantees import to_jsonable

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "Budget",
    "Ledger",
    "LedgerEntry",
    "LedgerSession",
    "LedgeredRelease",
    "NewRelease",
    "data_fingerprint",
    "ledger_report",
    "ledgered_draw",
    "open_ledger",
    "parse_budget",
    "release_with_ledger",
    "secret_key",
]

# "dprv" as a big-endian int: marks the file as a distpriv ledger (PRAGMA application_id).
APPLICATION_ID = 0x64707276
SCHEMA_VERSION = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = ("meta", "budgets", "releases")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE budgets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    data_fingerprint TEXT NOT NULL,
    secret_key TEXT NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1)
);
CREATE TABLE releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    version TEXT NOT NULL,
    data_fingerprint TEXT NOT NULL,
    secret_key TEXT NOT NULL,
    secret_json TEXT NOT NULL,
    statistics_json TEXT NOT NULL,
    model_json TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    noise_json TEXT NOT NULL,
    guarantee_json TEXT NOT NULL,
    alone_epsilon REAL NOT NULL,
    alone_delta REAL NOT NULL,
    composed_json TEXT NOT NULL,
    composed_epsilon REAL NOT NULL,
    composed_delta REAL NOT NULL,
    released_json TEXT NOT NULL
);
CREATE INDEX releases_group ON releases (data_fingerprint, secret_key, id);
CREATE INDEX budgets_group ON budgets (data_fingerprint, secret_key, id);
"""


def _append_only_triggers() -> str:
    out = []
    for table in _TABLES:
        for op in ("UPDATE", "DELETE"):
            out.append(
                f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, 'the distpriv ledger is append-only: "
                f"{op} on {table} refused'); END;"
            )
    return "\n".join(out)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _dumps(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), sort_keys=True, allow_nan=False)


def secret_key(predicate: str) -> str:
    """The key under which releases about one secret are grouped: its predicate.

    Whitespace is normalised. The values and pairs are *not* part of the key: every earlier
    release of the same data about the same property is composed with a new one, under the
    new release's pairs, so changing Ψ cannot reset the account.
    """
    if not isinstance(predicate, str) or not predicate.strip():
        raise ParameterTypeError(f"predicate must be a non-empty string, got {predicate!r}")
    return " ".join(predicate.split())


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
    try:
        eps, dlt = float(parts[0]), float(parts[1])
    except ValueError as exc:
        raise ParameterError(f"{what} must be two numbers EPS,DELTA, got {text!r}") from exc
    try:
        return Budget(eps, dlt)
    except (ParameterError, ParameterTypeError) as exc:
        raise ParameterError(f"{what} {text!r}: {exc}") from exc


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded release (a row of the ledger).

    Attributes
    ----------
    id : int
        Position in the ledger (increasing with time).
    time_utc, version : str
        When (ISO 8601, UTC) and by which distpriv version it was released.
    data_fingerprint : str
        ``"sha256:<hex>"`` of the released table, or ``"name:<text>"`` given by the user.
    secret_key : str
        The secret's predicate (see :func:`secret_key`).
    secret : dict
        ``predicate``, ``values``, ``pairs`` of the release.
    statistics : tuple of (name, expression)
    model : dict
        How the query model was built (``subset_size``, ``method``, ``n_samples``,
        ``model_data``).
    mechanism : str
    noise : dict
        ``covariance`` (m × m) and ``components`` (kind, basis, scales): the noise law.
    guarantee : dict
        :meth:`PrivacyGuarantee.to_dict` of the release alone.
    alone : dict
        ``epsilon``, ``delta`` of the release alone under the exact joint computation.
    composed : dict
        The composed guarantee of this and every earlier release of the same group.
    released : list of float
        The published values.
    """

    id: int
    time_utc: str
    version: str
    data_fingerprint: str
    secret_key: str
    secret: dict[str, Any]
    statistics: tuple[tuple[str, str], ...]
    model: dict[str, Any]
    mechanism: str
    noise: dict[str, Any]
    guarantee: dict[str, Any]
    alone: dict[str, Any]
    composed: dict[str, Any]
    released: list[float]

    @classmethod
    def _from_row(cls, row: sqlite3.Row) -> LedgerEntry:
        try:
            return cls(
                id=int(row["id"]),
                time_utc=row["time_utc"],
                version=row["version"],
                data_fingerprint=row["data_fingerprint"],
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
            "id": self.id,
            "time_utc": self.time_utc,
            "version": self.version,
            "data_fingerprint": self.data_fingerprint,
            "secret_key": self.secret_key,
            "secret": self.secret,
            "statistics": [list(s) for s in self.statistics],
            "model": self.model,
            "mechanism": self.mechanism,
            "noise": self.noise,
            "guarantee": self.guarantee,
            "alone": self.alone,
            "composed": self.composed,
            "released": self.released,
        }


@dataclass(frozen=True)
class NewRelease:
    """What the ledger records of a release, except the values and composed guarantee.

    Built by the pipeline before the transaction; :meth:`Ledger.guarded_release` adds the
    composed guarantee and the released values inside it.
    """

    data_fingerprint: str
    secret: dict[str, Any]
    statistics: tuple[tuple[str, str], ...]
    model: dict[str, Any]
    mechanism: str
    noise: dict[str, Any]
    guarantee: dict[str, Any]

    @property
    def secret_key(self) -> str:
        """The group key of the secret (its predicate)."""
        return secret_key(self.secret["predicate"])


# ---------------------------------------------------------------------------------------
# Validation of an existing file (read-only)
# ---------------------------------------------------------------------------------------


def _read_header(path: Path) -> bytes:
    """The 100-byte SQLite header; rejects empty and non-SQLite files."""
    size = path.stat().st_size
    if size == 0:
        raise LedgerError(
            f"ledger {str(path)!r} is an empty file, not a distpriv ledger; remove it or "
            "give a new path (a new ledger is created when the path does not exist)"
        )
    with path.open("rb") as fh:
        header = fh.read(100)
    if not header.startswith(_SQLITE_MAGIC):
        raise LedgerError(
            f"ledger {str(path)!r} is not a distpriv ledger (not an SQLite database); the "
            "file was not modified"
        )
    if len(header) < 100:
        raise LedgerError(f"ledger {str(path)!r} is truncated ({size} bytes); not modified")
    # application_id (offset 68) is written with the schema: a foreign database is
    # recognised from its header, before SQLite touches it.
    (app,) = struct.unpack(">I", header[68:72])
    if app != APPLICATION_ID:
        raise LedgerError(
            f"{str(path)!r} is an SQLite database but not a distpriv ledger "
            f"(application_id {app:#x}, expected {APPLICATION_ID:#x}); not modified"
        )
    return header


def _check_size(path: Path, header: bytes) -> None:
    """Reject a truncated file: its size against the page count of the header."""
    size = path.stat().st_size
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    (change,) = struct.unpack(">I", header[24:28])
    (pages,) = struct.unpack(">I", header[28:32])
    (valid_for,) = struct.unpack(">I", header[92:96])
    if page_size < 512 or page_size & (page_size - 1):
        raise LedgerError(f"ledger {str(path)!r} has a corrupt header (page size {page_size})")
    # The in-header page count is trustworthy when "version-valid-for" matches the change
    # counter (SQLite file format §1.3.7).
    expected = pages * page_size if (pages and change == valid_for) else page_size
    if size < expected or size % page_size:
        raise LedgerError(
            f"ledger {str(path)!r} is truncated or corrupt: {size} bytes where the header "
            f"announces {expected}; the file was not modified"
        )


def _recover_hot_journal(path: Path) -> None:
    """Roll back a transaction interrupted by a crash (SQLite's own recovery).

    A process killed inside a transaction leaves a "hot" rollback journal; a read-only
    connection cannot roll it back. The file is already known to be a ledger (header),
    so a read-write connection, whose first read restores the pre-transaction state,
    is safe here.
    """
    journal = Path(f"{path}-journal")
    if not (journal.exists() and journal.stat().st_size > 0):
        return
    try:
        con = sqlite3.connect(path, timeout=60.0)
        try:
            con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise LedgerError(
            f"ledger {str(path)!r} has an interrupted transaction that SQLite could not roll "
            f"back ({exc})"
        ) from exc


def _validate(path: Path) -> None:
    _read_header(path)
    _recover_hot_journal(path)
    _check_size(path, _read_header(path))
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=60.0)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {str(path)!r} read-only: {exc}") from exc
    try:
        app = con.execute("PRAGMA application_id").fetchone()[0]
        if app != APPLICATION_ID:
            raise LedgerError(
                f"{str(path)!r} is an SQLite database but not a distpriv ledger "
                f"(application_id {app:#x}, expected {APPLICATION_ID:#x}); not modified"
            )
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            newer = " (written by a newer distpriv)" if version > SCHEMA_VERSION else ""
            raise LedgerError(
                f"ledger {str(path)!r} has schema version {version}{newer}; this distpriv "
                f"reads version {SCHEMA_VERSION}"
            )
        check = con.execute("PRAGMA quick_check").fetchall()
        if [tuple(r) for r in check] != [("ok",)]:
            first = check[0][0] if check else "no result"
            raise LedgerError(f"ledger {str(path)!r} is corrupt: {first}; not modified")
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in _TABLES if t not in names]
        if missing:
            raise LedgerError(f"ledger {str(path)!r} lacks the table(s) {missing}; corrupt")
    except sqlite3.DatabaseError as exc:
        raise LedgerError(
            f"ledger {str(path)!r} is corrupt or not a ledger ({exc}); the file was not modified"
        ) from exc
    finally:
        con.close()


def _create(path: Path) -> None:
    """Build the schema in a temporary file and link it into place (never overwrites)."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise LedgerError(f"cannot create ledger {str(path)!r}: no directory {str(parent)!r}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.executescript(
                f"PRAGMA application_id = {APPLICATION_ID};"
                f"PRAGMA user_version = {SCHEMA_VERSION};"
                f"BEGIN; {_SCHEMA} {_append_only_triggers()} COMMIT;"
            )
            con.execute(
                "INSERT INTO meta VALUES ('created_utc', ?), ('created_by', ?)",
                (_now(), f"distpriv {__version__}"),
            )
            con.commit()
        finally:
            con.close()
        try:
            os.link(tmp, path)  # atomic, and fails if anything exists at path
        except FileExistsError:
            pass  # another process created it first: validate theirs
        except OSError as exc:
            raise LedgerError(f"cannot create ledger {str(path)!r}: {exc.strerror}") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# ---------------------------------------------------------------------------------------
# The ledger
# ---------------------------------------------------------------------------------------


class Ledger:
    """An append-only SQLite ledger of releases (one file per curator).

    Parameters
    ----------
    path : str or Path
        The ledger file. Created (with the schema) when it does not exist and ``create``
        is true; an existing file must be a valid ledger.
    create : bool
        Whether a missing file may be created (``distpriv ledger show`` passes False).
    timeout : float
        Seconds to wait for another process's transaction (SQLite busy timeout).

    Raises
    ------
    LedgerError
        Missing (with ``create=False``), empty, truncated, corrupt or foreign file, or an
        unknown schema version. The file is not modified.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, timeout: float = 600.0
    ):
        if not isinstance(path, str | os.PathLike):
            raise ParameterTypeError(f"ledger path must be a string or path, got {path!r}")
        self.path = Path(path)
        self.timeout = float(timeout)
        if self.path.exists():
            if not self.path.is_file():
                raise LedgerError(f"ledger {str(self.path)!r} is not a regular file")
        elif create:
            _create(self.path)
        else:
            raise LedgerError(f"ledger {str(self.path)!r} does not exist")
        _validate(self.path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {str(self.path)!r}: {exc}") from exc
        con.row_factory = sqlite3.Row
        try:
            yield con
        finally:
            con.close()

    @contextlib.contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken at once (BEGIN IMMEDIATE); rolled back on any error."""
        with self._connect() as con:
            try:
                con.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise LedgerError(
                    f"ledger {str(self.path)!r} is busy ({exc}) after {self.timeout:g} s"
                ) from exc
            try:
                yield con
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # keep the original error
                    con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    # -- reading ----------------------------------------------------------------------

    @staticmethod
    def _select(
        con: sqlite3.Connection, data_fingerprint: str | None, secret: str | None
    ) -> tuple[LedgerEntry, ...]:
        sql, args = "SELECT * FROM releases", []
        where = []
        if data_fingerprint is not None:
            where.append("data_fingerprint = ?")
            args.append(data_fingerprint)
        if secret is not None:
            where.append("secret_key = ?")
            args.append(secret_key(secret))
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = con.execute(sql + " ORDER BY id", args).fetchall()
        return tuple(LedgerEntry._from_row(r) for r in rows)

    @staticmethod
    def _budget(con: sqlite3.Connection, data_fingerprint: str, secret: str) -> Budget | None:
        rows = con.execute(
            "SELECT epsilon, delta FROM budgets WHERE data_fingerprint = ? AND secret_key = ?",
            (data_fingerprint, secret_key(secret)),
        ).fetchall()
        out: Budget | None = None
        for eps, dlt in rows:
            out = Budget(eps, dlt).tighter(out)
        return out

    def releases(
        self, data_fingerprint: str | None = None, secret: str | None = None
    ) -> tuple[LedgerEntry, ...]:
        """The recorded releases, oldest first, optionally of one data and/or secret.

        Parameters
        ----------
        data_fingerprint : str, optional
        secret : str, optional
            The secret's predicate (or its key, :func:`secret_key`).
        """
        with self._connect() as con:
            return self._select(con, data_fingerprint, secret)

    def budget(self, data_fingerprint: str, secret: str) -> Budget | None:
        """The budget of one data and secret (the tightest one recorded), or ``None``."""
        with self._connect() as con:
            return self._budget(con, data_fingerprint, secret)

    def groups(self) -> tuple[tuple[str, str], ...]:
        """Every (data fingerprint, secret key) with a release or a budget, in first-use order."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT data_fingerprint, secret_key, MIN(id) AS first FROM ("
                " SELECT data_fingerprint, secret_key, id FROM releases"
                " UNION ALL SELECT data_fingerprint, secret_key, id + 1e12 FROM budgets)"
                " GROUP BY data_fingerprint, secret_key ORDER BY first"
            ).fetchall()
        return tuple((r[0], r[1]) for r in rows)

    def __len__(self) -> int:
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM releases").fetchone()[0])

    # -- writing ----------------------------------------------------------------------

    def set_budget(self, data_fingerprint: str, secret: str, budget: Budget) -> None:
        """Record a budget for one data and secret (appended; the tightest recorded applies)."""
        if not isinstance(budget, Budget):
            raise ParameterTypeError(f"budget must be a Budget, got {budget!r}")
        with self._immediate() as con:
            self._insert_budget(con, data_fingerprint, secret_key(secret), budget)

    @staticmethod
    def _insert_budget(
        con: sqlite3.Connection, data_fingerprint: str, key: str, budget: Budget
    ) -> None:
        con.execute(
            "INSERT INTO budgets (time_utc, data_fingerprint, secret_key, epsilon, delta) "
            "VALUES (?, ?, ?, ?, ?)",
            (_now(), data_fingerprint, key, budget.epsilon, budget.delta),
        )

    def guarded_release(
        self,
        new: NewRelease,
        *,
        compose: Callable[[Sequence[LedgerEntry], Budget | None], Any],
        draw: Callable[[], Any],
        budget: Budget | None = None,
    ) -> tuple[LedgerEntry, Any, Any, Budget | None]:
        """Check the composed guarantee against the budget, draw the noise, record: atomically.

        One ``BEGIN IMMEDIATE`` transaction holds the read of the earlier releases, the
        composition, the budget check, the noise draw and the insert, so two processes
        cannot both pass the check on the same ledger. If anything fails (budget exceeded,
        composition refused, sampler error), the transaction is rolled back and nothing is
        recorded; when the budget is exceeded ``draw`` is never called.

        Parameters
        ----------
        new : NewRelease
        compose : callable (earlier entries, effective budget) -> ComposedGuarantee
            Returns an object with ``alone``/``epsilon``/``delta``/``within(budget)``/
            ``to_dict()`` (:class:`distpriv.pipeline.compose.ComposedGuarantee`).
        draw : callable () -> Release-like
            Draws the noise and returns the release (an object with ``value``).
        budget : Budget, optional
            A budget given for this release (config or ``--budget``); the tighter of it and
            the ledger's applies, and it is recorded with the release.

        Returns
        -------
        (LedgerEntry, release, composed guarantee, effective budget or None)

        Raises
        ------
        BudgetExceededError
            The composed guarantee would exceed the budget (nothing drawn or recorded).
        """
        key = new.secret_key
        with self._immediate() as con:
            earlier = self._select(con, new.data_fingerprint, key)
            stored = self._budget(con, new.data_fingerprint, key)
            effective = budget.tighter(stored) if budget is not None else stored
            composed = compose(earlier, effective)
            if effective is not None and not composed.within(effective):
                raise BudgetExceededError(
                    f"release refused: with the {len(earlier)} earlier release(s) of this data "
                    f"and secret the composed guarantee would be {composed.describe()}, beyond "
                    f"the budget ({effective.epsilon:g}, {effective.delta:g}); nothing was "
                    "released or recorded"
                )
            rel = draw()
            if budget is not None and (stored is None or stored.tighter(budget) != stored):
                self._insert_budget(con, new.data_fingerprint, key, budget)
            values = [float(v) for v in to_jsonable(rel.value)]
            if not all(math.isfinite(v) for v in values):
                raise LedgerError("the released values are not finite; nothing recorded")
            cur = con.execute(
                "INSERT INTO releases (time_utc, version, data_fingerprint, secret_key, "
                "secret_json, statistics_json, model_json, mechanism, noise_json, "
                "guarantee_json, alone_epsilon, alone_delta, composed_json, "
                "composed_epsilon, composed_delta, released_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _now(),
                    __version__,
                    new.data_fingerprint,
                    key,
                    _dumps(new.secret),
                    _dumps([list(s) for s in new.statistics]),
                    _dumps(new.model),
                    new.mechanism,
                    _dumps(new.noise),
                    _dumps(new.guarantee),
                    composed.alone["epsilon"],
                    composed.alone["delta"],
                    _dumps(composed.to_dict()),
                    composed.epsilon,
                    composed.delta,
                    _dumps(values),
                ),
            )
            row = con.execute("SELECT * FROM releases WHERE id = ?", (cur.lastrowid,)).fetchone()
            entry = LedgerEntry._from_row(row)
        return entry, rel, composed, effective


# ---------------------------------------------------------------------------------------
# A release judged together with the earlier ones
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgeredRelease:
    """A release made through a ledger: the report, its row, and the composed guarantee.

    Attributes
    ----------
    report : distpriv.modeling.release.ReleaseReport
    entry : LedgerEntry
        The row recorded for it.
    composed : distpriv.pipeline.compose.ComposedGuarantee
    budget : Budget or None
        The budget that was checked (the tighter of the given and the recorded one).
    """

    report: Any
    entry: LedgerEntry
    composed: Any
    budget: Budget | None

    def ledger_summary(self) -> dict[str, Any]:
        """The ``"ledger"`` block of the public release report."""
        return {
            "composed": {"epsilon": self.composed.epsilon, "delta": self.composed.delta},
            "alone": dict(self.composed.alone),
            "budget": None if self.budget is None else self.budget.to_dict(),
            "n_releases": self.composed.n_releases,
            "family": self.composed.family,
            "theorem": self.composed.theorem,
            "data_fingerprint": self.entry.data_fingerprint,
            "secret_key": self.entry.secret_key,
            "entry_id": self.entry.id,
        }


def ledgered_draw(
    ledger: Ledger,
    *,
    mechanism: Any,
    value: Any,
    query: Any,
    secret: Any,
    data_fingerprint: str,
    model_data: Any,
    model_fingerprint: str,
    subset_size: int,
    method: str,
    n_samples: int,
    budget: Budget | None = None,
    noise_rng: Any = None,
    model_rng: Any = 0,
) -> tuple[LedgerEntry, Any, Any, Budget | None]:
    """Compose with the earlier releases, check the budget, draw the noise and record.

    The step of a release that must hold the ledger's lock
    (:meth:`Ledger.guarded_release`): a mechanism already calibrated on the new release's
    own model, and F(data) already computed. The joint model of all the releases of the
    same data and secret is built inside the transaction
    (:func:`distpriv.pipeline.compose.compose`).

    Parameters
    ----------
    ledger : Ledger
    mechanism : CalibratedMechanism
    value : ndarray, shape (m,)
        F(data), not yet noised.
    query : Query
    secret : ProportionSecret
    data_fingerprint : str
        ``"sha256:<hex>"`` of the released table or ``"name:<text>"``.
    model_data : table
        The modelling data (the joint model is built from it).
    model_fingerprint : str
    subset_size, method, n_samples
        How the query model is built.
    budget : Budget, optional
    noise_rng : int, Generator or None
        ``None``: the secure sampler (:meth:`CalibratedMechanism.release`).
    model_rng : int or Generator
        Randomness of the joint modelling (Monte Carlo datasets), never of the noise.

    Returns
    -------
    (LedgerEntry, Release, ComposedGuarantee, effective budget or None)
    """
    from .compose import ReleaseSpec, compose, noise_to_dict

    stats = tuple((s.name, s.expression) for s in query.statistics)
    new = NewRelease(
        data_fingerprint=data_fingerprint,
        secret=secret.to_dict(),
        statistics=stats,
        model={
            "subset_size": subset_size,
            "method": method,
            "n_samples": n_samples,
            "model_data_sha256": model_fingerprint,
        },
        mechanism=mechanism.name,
        noise=noise_to_dict(mechanism.noise),
        guarantee=mechanism.guarantee.to_dict(),
    )
    spec = ReleaseSpec(stats, mechanism.noise, mechanism.name, float(mechanism.guarantee.delta))

    def _compose(earlier: Sequence[LedgerEntry], effective: Budget | None) -> Any:
        specs = [ReleaseSpec.from_record(e) for e in earlier] + [spec]
        return compose(
            specs,
            model_data=model_data,
            secret=secret,
            subset_size=subset_size,
            method=method,
            n_samples=n_samples,
            budget=effective,
            rng=model_rng,
        )

    return ledger.guarded_release(
        new,
        compose=_compose,
        draw=lambda: mechanism.release(value, rng=noise_rng),
        budget=budget,
    )


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
    subset_size: int | None = None,
    method: str = "analytic",
    n_samples: int = 1000,
    options: Any = None,
    rng: Any = None,
    missing: str = "error",
) -> LedgeredRelease:
    """:func:`distpriv.pipeline.release` judged together with the ledger's earlier releases.

    The modelling and calibration of the new release happen first (outside the lock);
    then, in one ledger transaction (:func:`ledgered_draw`), the earlier releases of the
    same data and secret are composed exactly with this one
    (:func:`distpriv.pipeline.compose.compose`), the release is refused if the composed
    guarantee exceeds the budget, and only then is the noise drawn and the row recorded.

    Parameters
    ----------
    data, query, secret, model_data, mechanism, epsilon, delta, subset_size, method,
    n_samples, options, rng, missing
        As for :func:`distpriv.pipeline.release`: ``rng=None`` draws the noise from the
        secure sampler; a seed gives a reproducible simulation that is NOT private.
    ledger : Ledger or path
    budget : Budget, optional
        (ε, δ) for all releases of this data and secret; recorded with the release.
    data_name : str, optional
        A name identifying the released data in the ledger instead of the SHA-256 of the
        table (use it when the same data is released from files that differ in bytes).

    Raises
    ------
    BudgetExceededError
        Nothing drawn, released or recorded.
    CompositionError
        The earlier releases cannot be composed exactly with this one.
    """
    from ..modeling.tables import as_table
    from .release import ReleaseReport, method_for, prepare_release
    from .sources import fingerprint

    led = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
    if budget is not None and not isinstance(budget, Budget):
        raise ParameterTypeError(f"budget must be a Budget, got {budget!r}")
    fp = data_fingerprint(data_name=data_name)
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
    )
    table, mech, value, q, gen, n = (
        prep.table, prep.mechanism, prep.value, prep.query, prep.rng, prep.table.n_rows
    )  # fmt: skip
    meth = method_for(mechanism, method)
    model = prep.model
    model_frame = as_table(model_data).frame
    entry, rel, composed, effective = ledgered_draw(
        led,
        mechanism=mech,
        value=value,
        query=q,
        secret=secret,
        data_fingerprint=fp or "sha256:" + fingerprint(table.frame),
        model_data=model_frame,
        model_fingerprint=fingerprint(model_frame),
        subset_size=n,
        method=meth,
        n_samples=n_samples,
        budget=budget,
        noise_rng=gen,
        model_rng=None if gen is None else int(gen.integers(2**63)),
    )
    report = ReleaseReport(rel, mech, model, value, table.n_rows)
    return LedgeredRelease(report=report, entry=entry, composed=composed, budget=effective)


def data_fingerprint(*, data_name: str | None = None, frame: Any = None) -> str | None:
    """The ledger's key for the released data: ``"name:<data_name>"`` or ``"sha256:<hex>"``.

    With neither a name nor a frame, ``None``. The hash is unsalted (unlike the public
    report's): the ledger is the curator's private file and must recognise the same table.
    """
    if data_name is not None:
        if not isinstance(data_name, str) or not data_name.strip():
            raise ParameterError(f"data_name must be a non-empty string, got {data_name!r}")
        return f"name:{data_name.strip()}"
    if frame is None:
        return None
    from .sources import fingerprint

    return "sha256:" + fingerprint(frame)


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
        released_frame: Any,
        model_frame: Any,
        subset_size: int,
        method: str,
        n_samples: int,
        noise_rng: Any = None,
        model_rng: Any = 0,
    ) -> tuple[Any, dict[str, Any]]:
        """Compose, check, draw and record (:func:`ledgered_draw`).

        Returns
        -------
        (Release, dict)
            The release and the ``"ledger"`` block of the public report.
        """
        from .sources import fingerprint

        entry, rel, composed, effective = ledgered_draw(
            self.ledger,
            mechanism=mechanism,
            value=value,
            query=query,
            secret=secret,
            data_fingerprint=data_fingerprint(data_name=self.data_name, frame=released_frame),
            model_data=model_frame,
            model_fingerprint=fingerprint(model_frame),
            subset_size=subset_size,
            method=method,
            n_samples=n_samples,
            budget=self.budget,
            noise_rng=noise_rng,
            model_rng=model_rng,
        )
        return rel, LedgeredRelease(None, entry, composed, effective).ledger_summary()


def open_ledger(
    config: dict[str, Any] | None = None,
    *,
    ledger: str | os.PathLike[str] | Ledger | None = None,
    budget: Budget | str | None = None,
) -> LedgerSession | None:
    """The ledger of a release from the config's ``[ledger]`` table and the CLI flags.

    ``ledger`` (``--ledger``) overrides ``[ledger] path``; a ``budget`` (``--budget``)
    and ``[ledger] budget`` both apply (the tighter one). ``None`` when no ledger is given.

    Raises
    ------
    ParameterError
        A budget without a ledger (naming ``--budget``), or an invalid budget.
    LedgerError
        An invalid ledger file (left untouched).
    """
    cfg = dict(config or {})
    given = parse_budget(budget) if isinstance(budget, str) else budget
    if given is not None and not isinstance(given, Budget):
        raise ParameterTypeError(f"budget must be a Budget or 'EPS,DELTA', got {budget!r}")
    if "budget" in cfg:
        eps, dlt = cfg["budget"]
        try:
            given = Budget(eps, dlt).tighter(given)
        except (ParameterError, ParameterTypeError) as exc:
            raise ParameterError(f"[ledger] budget {cfg['budget']!r}: {exc}") from exc
    path = ledger if ledger is not None else cfg.get("path")
    if path is None:
        if given is not None:
            raise ParameterError(
                "--budget needs a ledger (--ledger FILE or [ledger] path): a budget is "
                "kept across releases in the ledger"
            )
        return None
    led = path if isinstance(path, Ledger) else Ledger(path)
    return LedgerSession(led, given, cfg.get("data_name"))


def ledger_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``distpriv ledger show`` prints: every release, alone and composed, per group.

    Parameters
    ----------
    path : str or Path
        An existing ledger (never created here).

    Returns
    -------
    dict
        JSON-safe: ``kind`` ("ledger"), ``path``, ``schema_version``, ``n_releases`` and
        ``groups``, one per (data fingerprint, secret) with its ``budget`` and its
        ``releases`` (id, time, version, mechanism, statistics, the guarantee claimed
        alone, ``alone`` and ``composed`` from the exact computation, released values).
    """
    led = Ledger(path, create=False)
    groups = []
    for fp, key in led.groups():
        budget = led.budget(fp, key)
        rows = []
        for e in led.releases(fp, key):
            rows.append(
                {
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
            )
        groups.append(
            {
                "data_fingerprint": fp,
                "secret": key,
                "budget": None if budget is None else budget.to_dict(),
                "releases": rows,
            }
        )
    return to_jsonable(
        {
            "kind": "ledger",
            "path": str(led.path),
            "schema_version": SCHEMA_VERSION,
            "n_releases": sum(len(g["releases"]) for g in groups),
            "groups": groups,
        }
    )
