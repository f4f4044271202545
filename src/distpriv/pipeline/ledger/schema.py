"""The ledger file: schema, creation, and the checks an existing file passes before use.

Storage only: what a distpriv ledger file is, how a new one is built, and how an existing
one is validated. The records stored in it are :mod:`.records`; the class that
reads and writes them is :mod:`.store`.

File safety
-----------
* The schema is versioned (``PRAGMA user_version``) and marked with an ``application_id``,
  so a foreign SQLite file, or one written by another distpriv schema, is recognised.
* An existing file is validated through a *read-only* connection (header, page count
  against the file size, application id, version, SQLite's full ``integrity_check``,
  tables, the identity key, and a keyed checksum of every row) before it is ever opened
  for writing; a corrupt, truncated or foreign file raises
  :class:`~distpriv.errors.LedgerError` and is left byte-for-byte untouched.
* Every row carries ``row_mac``, an HMAC-SHA256 of its content under the ledger's identity
  key. SQLite's integrity check sees the b-tree structure, not the bytes of a record's
  payload; the row checksum sees those. It detects accidental damage (a disk, a careless
  editor), not tampering: whoever can write the file can read the key in it (SECURITY.md).
* The history is chained (schema 3): the row MACs of each table, in id order, are folded
  into a hash chain, and ``meta`` holds the count and chain head of both tables under an
  HMAC (:func:`chain_value`), rewritten in the transaction of every insert. Ids run 1, 2,
  … without gaps. Deleting the last rows, a middle row, every row, or the ``meta`` record
  itself (after dropping the triggers) is refused, naming what is wrong.
* The schema itself (tables, indexes, triggers) must be exactly the one distpriv writes
  (compared with ``sqlite_master``): a dropped or altered trigger is refused.
* A new ledger is built in a temporary file and linked into place atomically, so no other
  file is ever created over, and two processes creating the same ledger cannot race. Its
  32-byte identity key comes from :mod:`secrets` (OS entropy) and is stored in ``meta``.
* Append-only: triggers abort any ``UPDATE`` or ``DELETE`` issued by other SQLite clients
  (except the update of the chain record in ``meta``, which the chain's HMAC protects).
* A schema-2 file (no chain) is read as it is and upgraded in place, inside the locked
  transaction of its first write (:func:`upgrade_to_chain`), after it has passed every
  check schema 2 allows (see there for why that is safe).
* Downgrade safety: the schema version says how the rows are keyed. A file this distpriv
  writes into is at version 4 (accounts by meaning) from that write on, so a distpriv that
  keys accounts by text (it reads 2 and 3 only, and refuses a newer version) cannot open
  fresh accounts beside its releases; a version newer than 4 is refused here in one line.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import struct
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...errors import LedgerError
from ...guarantees import to_jsonable
from ...util.version import __version__
from ._tempfile import held_temp_ledger

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "build_ledger_file",
    "check_content",
    "create_ledger_file",
    "validate_ledger_file",
]

# "dprv" as a big-endian int: marks the file as a distpriv ledger (PRAGMA application_id).
APPLICATION_ID = 0x64707276
# 1: unkeyed data fingerprints (sha256 of the table's CSV). 2: keyed, order-blind data
# accounts, an identity key in meta, a keyed checksum on every row. 3: the history chained
# (count and chain head of each table under an HMAC in meta), the schema checked exactly.
# 4: accounts by meaning (a secret's rows keyed by what it computes on the released rows,
# its text key canonical SQL, every release composed into every account of its data).
# The tables are those of 3; the version is what changes: a distpriv that reads 3 only
# would take a meaning-keyed row for a text account and open fresh accounts beside it
# (a respelled secret passing its budget), so it must refuse the file as newer.
SCHEMA_VERSION = 4
# Versions read by this distpriv: 2 and 3 are upgraded to 4 at their first write.
READABLE_VERSIONS = (2, 3, 4)
_SQLITE_MAGIC = b"SQLite format 3\x00"
TABLES = ("meta", "budgets", "releases")
KEY_BYTES = 32
_KEY_CHECK = b"distpriv ledger identity key check"
# The meta row holding the chain record; the chain of a table starts from the empty head.
CHAIN_KEY = "chain"
CHAIN_TABLES = ("budgets", "releases")
_CHAIN_START = ""
# The count and chain head of each chained table: {"budgets": (n, head), "releases": ...}.
Heads = dict[str, tuple[int, str]]

# Column order of each table as the row checksum sees it (everything but row_mac).
BUDGET_COLUMNS = ("id", "time_utc", "data_account", "secret_key", "epsilon", "delta")
RELEASE_COLUMNS = (
    "id", "time_utc", "version", "data_account", "secret_key", "secret_json",
    "statistics_json", "model_json", "mechanism", "noise_json", "guarantee_json",
    "alone_epsilon", "alone_delta", "composed_json", "composed_epsilon", "composed_delta",
    "released_json",
)  # fmt: skip

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE budgets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    data_account TEXT NOT NULL,
    secret_key TEXT NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon > 0),
    delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
    row_mac TEXT NOT NULL
);
CREATE TABLE releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    version TEXT NOT NULL,
    data_account TEXT NOT NULL,
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
    released_json TEXT NOT NULL,
    row_mac TEXT NOT NULL
);
CREATE INDEX releases_group ON releases (data_account, secret_key, id);
CREATE INDEX budgets_group ON budgets (data_account, secret_key, id);
"""


def _trigger(table: str, op: str, when: str = "") -> str:
    return (
        f"CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table} {when}"
        f"BEGIN SELECT RAISE(ABORT, 'the distpriv ledger is append-only: "
        f"{op} on {table} refused'); END;"
    )


# Schema 3 lets the chain record of meta be rewritten (its HMAC protects it), nothing else.
_META_UPDATE_WHEN = f"WHEN OLD.key IS NOT '{CHAIN_KEY}' OR NEW.key IS NOT '{CHAIN_KEY}' "


def append_only_triggers(version: int = SCHEMA_VERSION) -> str:
    """SQL of the triggers that abort UPDATE and DELETE on every table (of schema ``version``)."""
    out = []
    for table in TABLES:
        for op in ("UPDATE", "DELETE"):
            chained = version >= 3 and table == "meta" and op == "UPDATE"
            out.append(_trigger(table, op, _META_UPDATE_WHEN if chained else ""))
    return "\n".join(out)


@functools.cache
def expected_schema(version: int) -> frozenset[tuple[str, str, str, str | None]]:
    """``(type, name, tbl_name, sql)`` of every ``sqlite_master`` entry of a ledger.

    Built once per process by running the schema of ``version`` in a scratch in-memory
    database, so the stored SQL text is compared exactly as SQLite keeps it.
    """
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(f"BEGIN; {SCHEMA} {append_only_triggers(version)} COMMIT;")
        rows = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    finally:
        con.close()
    return frozenset(tuple(r) for r in rows)


def _check_schema(con: sqlite3.Connection, path: Path, version: int) -> None:
    """Refuse a file whose tables, indexes or triggers differ from the ones distpriv writes.

    The append-only triggers are what stops another SQLite client from editing rows in
    place; a file without them (or with altered or extra ones) was tampered with.
    """
    found = {
        (r[0], r[1]): tuple(r)
        for r in con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
    }
    want = {(r[0], r[1]): r for r in expected_schema(version)}
    problems = [f"{k[0]} {k[1]} is missing" for k in want if k not in found]
    problems += [f"{k[0]} {k[1]} is altered" for k in want if k in found and found[k] != want[k]]
    problems += [f"unexpected {k[0]} {k[1]}" for k in found if k not in want]
    if problems:
        raise LedgerError(
            f"ledger {str(path)!r} has been tampered with: {'; '.join(sorted(problems))} "
            "(the append-only protection of the ledger's schema was changed); not modified"
        )


def now_utc() -> str:
    """The current time, ISO 8601 in UTC with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def dumps(obj: Any) -> str:
    """Canonical JSON (sorted keys, no NaN) of a JSON-able object."""
    return json.dumps(to_jsonable(obj), sort_keys=True, allow_nan=False)


def row_mac(key: bytes, table: str, values: Sequence[Any]) -> str:
    """HMAC-SHA256 (hex) of one row's values, in the column order of its table.

    The id is part of the values, so rows cannot be swapped or renumbered unnoticed.
    """
    msg = json.dumps([table, *values], separators=(",", ":"))  # inf allowed: ε may be ∞
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).hexdigest()


def _key_check(key: bytes) -> str:
    return hmac.new(key, _KEY_CHECK, hashlib.sha256).hexdigest()


def chain_next(key: bytes, table: str, head: str, mac: str) -> str:
    """The chain head after appending a row whose checksum is ``mac`` to ``table``."""
    msg = f"distpriv-ledger-chain\x00{table}\x00{head}\x00{mac}".encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def _heads_mac(key: bytes, heads: Heads) -> str:
    body = json.dumps([[t, *heads[t]] for t in CHAIN_TABLES], separators=(",", ":"))
    return hmac.new(key, f"distpriv-ledger-heads\x00{body}".encode(), hashlib.sha256).hexdigest()


def empty_heads() -> Heads:
    """The chain state of a ledger without rows."""
    return {t: (0, _CHAIN_START) for t in CHAIN_TABLES}


def chain_value(key: bytes, heads: Heads) -> str:
    """The ``meta`` chain record: each table's row count and chain head, and their HMAC."""
    record: dict[str, Any] = {t: [heads[t][0], heads[t][1]] for t in CHAIN_TABLES}
    record["mac"] = _heads_mac(key, heads)
    return json.dumps(record, sort_keys=True)


def write_chain(con: sqlite3.Connection, key: bytes, heads: Heads) -> None:
    """Rewrite the chain record in the caller's transaction (the row it covers is in it)."""
    con.execute("UPDATE meta SET value = ? WHERE key = ?", (chain_value(key, heads), CHAIN_KEY))


def _check_chain(con: sqlite3.Connection, path: Path, key: bytes, heads: Heads) -> None:
    """Compare the rows found with the chain record of ``meta`` (count and head per table)."""
    rows = con.execute("SELECT value FROM meta WHERE key = ?", (CHAIN_KEY,)).fetchall()
    where = f"ledger {str(path)!r}"
    if not rows:
        raise LedgerError(
            f"{where} has been tampered with: its history record (meta {CHAIN_KEY!r}) was "
            "deleted, so deleted releases or budgets could not be noticed; not modified"
        )
    try:
        record = json.loads(rows[0][0])
        recorded: Heads = {t: (int(record[t][0]), str(record[t][1])) for t in CHAIN_TABLES}
        good = hmac.compare_digest(_heads_mac(key, recorded), str(record["mac"]))
    except (ValueError, TypeError, KeyError, IndexError):
        good = False
    if not good:
        raise LedgerError(
            f"{where} has been tampered with: its history record (meta {CHAIN_KEY!r}) fails "
            "its checksum; not modified"
        )
    for table in CHAIN_TABLES:
        (want, head), (have, found) = recorded[table], heads[table]
        if have < want:
            raise LedgerError(
                f"{where} has been tampered with: the history records {want} {table} row(s) "
                f"but the file holds {have}: the last {want - have} were deleted; not modified"
            )
        if have > want:
            raise LedgerError(
                f"{where} has been tampered with: it holds {have} {table} row(s) where the "
                f"history records {want}: rows were added outside distpriv; not modified"
            )
        if not hmac.compare_digest(head, found):
            raise LedgerError(
                f"{where} has been tampered with: its {table} rows are not the recorded "
                "history (rows deleted and others put in their place); not modified"
            )


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
        con = sqlite3.connect(path.resolve().as_uri(), uri=True, timeout=60.0)
        try:
            con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise LedgerError(
            f"ledger {str(path)!r} has an interrupted transaction that SQLite could not roll "
            f"back ({exc})"
        ) from exc


def _check_version(path: Path, version: int) -> None:
    if version in READABLE_VERSIONS:
        return
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"ledger {str(path)!r} has schema version {version} (written by a newer "
            f"distpriv); this distpriv reads versions up to {SCHEMA_VERSION}: use the "
            "distpriv that wrote it; not modified"
        )
    raise LedgerError(
        f"ledger {str(path)!r} has schema version {version}, whose unkeyed data fingerprints "
        f"this distpriv (schema {SCHEMA_VERSION}) no longer uses; copy its history into a new "
        "ledger with distpriv.pipeline.ledger.migrate_ledger(OLD, NEW) (docs/composition.md); "
        "not modified"
    )


def read_identity_key(con: sqlite3.Connection, path: Path) -> bytes:
    """The ledger's 32-byte identity key from ``meta``, checked against its stored check."""
    rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    try:
        key = bytes.fromhex(rows["identity_key"])
        good = len(key) == KEY_BYTES and hmac.compare_digest(
            _key_check(key), rows["identity_key_check"]
        )
    except (KeyError, ValueError, TypeError):
        good = False
    if not good:
        raise LedgerError(
            f"ledger {str(path)!r} is corrupt: its identity key is missing or damaged; not modified"
        )
    return key


def check_content(con: sqlite3.Connection, path: Path) -> tuple[bytes, Heads, int]:
    """SQLite's integrity check, the schema, the key, every row's checksum and the chain.

    Runs on any connection (read-only at open, inside the write transaction before a
    write).

    Returns
    -------
    (bytes, dict, int)
        The identity key, the count and chain head of each table as found (the state the
        next insert extends), and the schema version (2, 3 or 4; a 2 has no chain record).

    Raises
    ------
    LedgerError
        Naming the first problem found: damage, edited rows (checksum), deleted rows (a
        gap in the ids, or fewer rows than the chain record), a deleted or edited chain
        record, a dropped or altered trigger.
    """
    version = int(con.execute("PRAGMA user_version").fetchone()[0])
    _check_version(path, version)
    check = con.execute("PRAGMA integrity_check").fetchall()
    if [tuple(r) for r in check] != [("ok",)]:
        first = check[0][0] if check else "no result"
        raise LedgerError(f"ledger {str(path)!r} is corrupt: {first}; not modified")
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in TABLES if t not in names]
    if missing:
        raise LedgerError(f"ledger {str(path)!r} lacks the table(s) {missing}; corrupt")
    _check_schema(con, path, version)
    key = read_identity_key(con, path)
    heads: Heads = {}
    for table, cols in (("budgets", BUDGET_COLUMNS), ("releases", RELEASE_COLUMNS)):
        count, head = 0, _CHAIN_START
        for row in con.execute(f"SELECT {', '.join(cols)}, row_mac FROM {table} ORDER BY id"):
            try:
                good = hmac.compare_digest(row_mac(key, table, row[:-1]), str(row[-1]))
            except (ValueError, TypeError):
                good = False
            if not good:
                raise LedgerError(
                    f"ledger {str(path)!r} is corrupt: {table} row {row[0]} fails its "
                    "checksum; not modified"
                )
            # distpriv numbers rows 1, 2, ... in its write transaction: a gap is a deletion.
            if row[0] != count + 1:
                raise LedgerError(
                    f"ledger {str(path)!r} has been tampered with: {table} row(s) "
                    f"{count + 1}..{row[0] - 1} were deleted from the history; not modified"
                )
            count, head = count + 1, chain_next(key, table, head, str(row[-1]))
        heads[table] = (count, head)
    if version >= 3:
        _check_chain(con, path, key, heads)
    return key, heads, version


def upgrade_to_chain(con: sqlite3.Connection, key: bytes, heads: Heads, version: int = 2) -> None:
    """Upgrade a checked ledger of schema ``version`` (2 or 3) to :data:`SCHEMA_VERSION`, in
    the caller's write transaction.

    From 2: adds the chain record of the rows as they are and lets the trigger on ``meta``
    admit its updates. From 2 or 3: sets the version (4: accounts by meaning, so that a
    distpriv keying accounts by text refuses the file from this write on). SQLite's
    transaction makes it one step with the write.

    Why this is safe: the file has just passed every check schema 2 allows (integrity,
    the exact schema-2 schema with its triggers, every row's checksum, ids without gaps),
    under the write lock, so the chain starts from exactly the history that schema 2
    could vouch for; only a deletion of the *last* rows before the upgrade, which schema 2
    could never detect, stays undetectable (a copy into a new file would inherit it just
    the same). After the upgrade an older distpriv refuses the file (a newer version)
    instead of appending rows that the chain would not cover.
    """
    if version < 3:
        con.execute("DROP TRIGGER meta_no_update")
        con.execute(_trigger("meta", "UPDATE", _META_UPDATE_WHEN))
        con.execute("INSERT INTO meta VALUES (?, ?)", (CHAIN_KEY, chain_value(key, heads)))
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def validate_ledger_file(path: Path) -> bytes:
    """Validate an existing ledger through a read-only connection; return its identity key.

    Raises
    ------
    LedgerError
        Empty, foreign, truncated or corrupt file, or another schema version. The file is
        not modified (except that SQLite rolls back a crashed transaction's hot journal).
    """
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
        return check_content(con, path)[0]
    except sqlite3.DatabaseError as exc:
        raise LedgerError(
            f"ledger {str(path)!r} is corrupt or not a ledger ({exc}); the file was not modified"
        ) from exc
    finally:
        con.close()


def build_ledger_file(tmp: str | os.PathLike[str], key: bytes) -> None:
    """Write an empty ledger (schema, ``key``, an empty chain record) into the file ``tmp``."""
    con = sqlite3.connect(tmp)
    try:
        con.executescript(
            f"PRAGMA application_id = {APPLICATION_ID};"
            f"PRAGMA user_version = {SCHEMA_VERSION};"
            f"BEGIN; {SCHEMA} {append_only_triggers()} COMMIT;"
        )
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("created_utc", now_utc()),
                ("created_by", f"distpriv {__version__}"),
                ("identity_key", key.hex()),
                ("identity_key_check", _key_check(key)),
                (CHAIN_KEY, chain_value(key, empty_heads())),
            ],
        )
        con.commit()
    finally:
        con.close()


def create_ledger_file(path: Path) -> None:
    """Build the schema and a fresh identity key in a temporary file, link it into place.

    Never overwrites: if anything appears at ``path`` meanwhile (another process), that
    file is kept and validated by the caller instead.
    """
    with held_temp_ledger(path) as tmp:
        build_ledger_file(tmp, secrets.token_bytes(KEY_BYTES))
        try:
            os.link(tmp, path)  # atomic, and fails if anything exists at path
        except FileExistsError:
            pass  # another process created it first: validate theirs
        except OSError as exc:
            raise LedgerError(f"cannot create ledger {str(path)!r}: {exc.strerror}") from exc
