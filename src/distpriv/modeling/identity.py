"""Data identity: an order-blind, keyed multiset fingerprint computed where the data is.

A fingerprint of private data that is published must be keyed, or anyone can hash a guessed
table and confirm it, and should not depend on row order, or the same rows shuffled look like
new data to a ledger (docs/architecture.md §4). :func:`multiset_fingerprint`
makes ONE
pass of the engine (DuckDB or Spark SQL) and computes the row count N and, per lane, the sum
over rows of a keyed per-row hash — an additive multiset hash (Clarke et al. 2003,
"Incremental multiset hash functions", MSet-Add-Hash), which does not depend on row order —
and then, in Python, HMAC-SHA256 with the key of (scheme, column names, N, the sums). The
output is ``"hmac-sha256:<hex>"``: without the key nothing about the table can be checked
against it (the per-row hashes and the sums never leave the engine).

The portable per-row hash (default), equal in DuckDB and Spark: each cell gets a keyed
factor in [1, Q), Q = 2³¹ − 1 — an integer (or a whole float below 10¹⁵) x = hi·Q + lo by
keyed affine maps of (lo, hi) mod Q, any other value (strings, fractional floats, dates,
booleans) by a keyed affine map of 32 bits of the MD5 of its text, NULL/NaN by a keyed
constant — and the row's hash is the product of its cells' factors mod Q (a product, so that
moving a cell to another row changes the sum), in four lanes with independent keys (about
124 bits). The key-derived constants are bound parameters, never SQL text. Fractional floats
are rendered as text by each engine (DuckDB and Spark agree in the plain decimal range;
exotic values such as ±inf or 1e-300 may differ), and integers beyond ±2⁶¹ may collide.

The native per-row hash (``portable=False``): the engine's own ``hash``/``xxhash64`` seeded
with key-derived seeds, in two 64-bit lanes — several times cheaper on a large table, but
equal only within one engine and one column typing (the scheme names the engine).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from typing import Any

from ..errors import ParameterError, ParameterTypeError
from .tables import Table, as_table

__all__ = ["FINGERPRINT_SCHEME", "multiset_fingerprint", "new_identity_key"]

FINGERPRINT_SCHEME = "hmac-sha256"
_VERSION_1 = b"distpriv-multiset-fingerprint-v1"  # text cells as typed
_VERSION = b"distpriv-multiset-fingerprint-v2"  # every cell in its canonical encoding
_LANES = 4  # 64-bit words of each row's SHA-256
_MOD = 1 << 64
_FLOAT_TYPES = ("DOUBLE", "FLOAT", "REAL", "double", "float")
_MIN_KEY_BYTES = 16


def new_identity_key() -> bytes:
    """A fresh 32-byte key from the OS's entropy (for a release without a ledger key)."""
    return secrets.token_bytes(32)


_Q = 2147483647  # the Mersenne prime 2³¹ − 1: a product of two residues fits in BIGINT
_INT_TYPES = frozenset(
    ["BIGINT", "INTEGER", "SMALLINT", "TINYINT", "bigint", "int", "smallint", "tinyint"]
)


def _quote(column: str, dialect: str) -> str:
    if dialect == "spark":
        return "`" + column.replace("`", "``") + "`"
    return '"' + column.replace('"', '""') + '"'


def _param(name: str, dialect: str) -> str:
    return f":{name}" if dialect == "spark" else f"${name}"


class _Sql:
    """The few spellings that differ between DuckDB and Spark SQL."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.string = "STRING" if dialect == "spark" else "VARCHAR"

    def mod(self, x: str, q: str) -> str:
        # A non-negative remainder in both engines (their % keeps the dividend's sign).
        return f"((({x}) % {q} + {q}) % {q})"

    def idiv(self, x: str, q: str) -> str:
        return f"(({x}) div {q})" if self.dialect == "spark" else f"(({x}) // {q})"

    def hex_word(self, h: str, lane: int) -> str:
        """32 bits of a hex digest as a BIGINT (lane-th group of 8 hex digits)."""
        sub = f"substr({h}, {1 + 8 * lane}, 8)"
        if self.dialect == "spark":
            return f"CAST(conv({sub}, 16, 10) AS BIGINT)"
        return f"CAST(CAST('0x' || {sub} AS UBIGINT) AS BIGINT)"

    def sha(self, text: str) -> str:
        # MD5 as a cell digest inside the engine only (the keys come after it, and what
        # leaves the engine is HMAC-SHA256'd): half the cost of SHA-256, same in both engines.
        return f"md5({text})"


def _canonical_text(text: str, sql: _Sql) -> str:
    """A cell's text in the one spelling its meaning has in every encoding: the words of a
    boolean (true/false/yes/no, any case) as ``true``/``false``, a date-time at midnight
    as its date, an empty text as NULL (a CSV reader's empty field)."""
    low = f"lower(trim({text}))"
    # [0-9] and [.] rather than backslash classes: Spark's string literals read escapes.
    back = "'$1'" if sql.dialect == "spark" else "'\\1'"
    pattern = "'^([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]00:00:00([.]0+)?$'"
    date = f"regexp_replace({text}, {pattern}, {back})"
    return (
        f"CASE WHEN {low} IN ('true', 'yes') THEN 'true' "
        f"WHEN {low} IN ('false', 'no') THEN 'false' "
        f"WHEN {low} = '' THEN NULL ELSE {date} END"
    )


def _cell_base(
    column: str, kind: str, sql: _Sql, j: int, q: str, canonical: bool = True
) -> list[str]:
    """First stage, once per cell: the text's digest, or an integer's (lo, hi) mod Q.

    Integers (and whole floats below 10¹⁵) are split as x = hi·Q + lo; other values
    (strings, fractional floats, dates, booleans) are hashed as text. Returned as SQL
    select items named ``t{j}`` (hex digest, NULL for NULL/NaN or for numbers), ``l{j}``
    and ``h{j}`` (NULL unless a number).

    ``canonical`` (the default): a text cell that reads as a number is that number (so
    ``"42"``, 42 and 42.0 agree, and a CSV column typed BIGINT in one read and VARCHAR in
    another keeps its meaning), and other text is :func:`_canonical_text` (booleans and
    yes/no, dates and midnight timestamps, empty text and NULL agree).
    """
    ref = _quote(column, sql.dialect)
    text = f"CAST({ref} AS {sql.string})"
    if kind == "text" and not canonical:
        return [f"{sql.sha(text)} AS t{j}"]
    if kind == "text":
        num = f"TRY_CAST(trim({text}) AS DOUBLE)"
        other = f"WHEN {num} IS NULL THEN {sql.sha(_canonical_text(text, sql))}"
    else:
        num, other = ref, ""
    ival = f"CAST({num} AS BIGINT)"
    lo = sql.mod(ival, q)
    hi = sql.mod(sql.idiv(f"{ival} - {lo}", q), q)
    if kind == "int":
        return [f"{lo} AS l{j}", f"{hi} AS h{j}"]
    whole = f"(NOT isnan({num}) AND abs({num}) < 1e15 AND {num} = floor({num}))"
    frac = f"(NOT isnan({num}) AND NOT {whole})"
    frac_text = f"CAST({num} AS {sql.string})"
    return [
        f"CASE WHEN {frac} THEN {sql.sha(frac_text)} {other} END AS t{j}",
        f"CASE WHEN {whole} THEN {lo} END AS l{j}",
        f"CASE WHEN {whole} THEN {hi} END AS h{j}",
    ]


def _cell_factor(kind: str, sql: _Sql, j: int, lane: int, q: str) -> str:
    """Second stage: the cell's keyed factor in [1, Q) for one lane (NULL → keyed constant).

    A keyed affine map mod Q of (lo, hi) or of 32 bits of the text's digest; the keys are
    per column and lane, so a cell's factor depends on the column, the value and the key,
    never on the engine.
    """
    d = sql.dialect
    a, b, c, null = (_param(f"k{j}_{lane}_{t}", d) for t in "abcn")
    hashed = f"((({sql.mod(sql.hex_word(f't{j}', lane), q)} * {a}) % {q} + {b}) % ({q} - 1) + 1)"
    numeric = f"(((l{j} * {a}) % {q} + (h{j} * {c}) % {q} + {b}) % ({q} - 1) + 1)"
    if kind == "text":
        return f"coalesce({hashed}, {null})"
    if kind == "int":
        return f"coalesce({numeric}, {null})"
    return f"coalesce({numeric}, {hashed}, {null})"


def _kind(column: str, engine: Any) -> str:
    t = engine.types.get(column, "")
    if column in engine.float_columns or t in _FLOAT_TYPES:
        return "float"
    return "int" if t in _INT_TYPES else "text"


def _key_params(key: bytes, columns: list[str]) -> dict[str, int]:
    """Per-column, per-lane constants in [1, Q) derived from the key (HMAC-SHA256)."""
    out = {}
    for j, col in enumerate(columns):
        for lane in range(_LANES):
            for t in "abcn":
                msg = f"{j}|{lane}|{t}|{col}".encode()
                word = int.from_bytes(hmac.new(key, msg, hashlib.sha256).digest()[:8], "big")
                out[f"k{j}_{lane}_{t}"] = 1 + word % (_Q - 1)
    return out


def _check_key(key: Any) -> bytes:
    if not isinstance(key, bytes | bytearray):
        raise ParameterTypeError(f"key must be bytes, got {type(key).__name__}")
    if len(key) < _MIN_KEY_BYTES:
        raise ParameterError(f"key must have at least {_MIN_KEY_BYTES} bytes, got {len(key)}")
    return bytes(key)


def fingerprint_sums(
    table: Table,
    key: bytes,
    columns: list[str],
    *,
    canonical: bool = True,
    extra: dict[str, str] | None = None,
) -> tuple[int, list[int]]:
    """Row count and, per lane, Σ_rows Π_cells factor mod Q, in ONE query in the engine.

    Each row's hash per lane is the product of its cells' keyed factors mod Q (a product,
    so that swapping cells between rows changes the sum); the sum over rows does not
    depend on their order. Every key-derived constant is a bound parameter.

    ``canonical``: text cells in their canonical encoding (:func:`_cell_base`); ``False``
    gives the first version's sums (kept to find a ledger's earlier accounts). ``extra``:
    more columns, ``{name: SQL expression over the table (engine dialect, generated, never
    user text) of type DOUBLE}``, hashed with each row (e.g. a secret's value on it).
    """
    engine = table.engine
    sql = _Sql(engine.dialect)
    q = str(_Q)
    extra = dict(extra or {})
    cols = sorted([*columns, *extra])
    kinds = ["float" if c in extra else _kind(c, engine) for c in cols]
    base = [
        item
        for j, c in enumerate(cols)
        for item in _cell_base(c, kinds[j], sql, j, q, canonical=canonical)
    ]
    # A canonical text cell can be a number: its factor is a float cell's.
    shapes = ["float" if canonical and k == "text" else k for k in kinds]
    factors = [
        [f"{_cell_factor(kind, sql, j, lane, q)} AS f{j}_{lane}" for lane in range(_LANES)]
        for j, kind in enumerate(shapes)
    ]
    products = []
    for lane in range(_LANES):
        prod = "1"
        for j in range(len(cols)):
            prod = f"(({prod}) * f{j}_{lane}) % {q}"
        products.append(f"{prod} AS p{lane}")
    lanes = [
        f"sum(CAST(p{lane} AS DECIMAL(38, 0)))" if sql.dialect == "spark" else f"sum(p{lane})"
        for lane in range(_LANES)
    ]
    source = engine.relation
    if extra:
        items = ", ".join(f"{e} AS {_quote(n, sql.dialect)}" for n, e in extra.items())
        source = f"(SELECT *, {items} FROM {engine.relation}) AS src"
    inner = f"SELECT {', '.join(base) or '1 AS one'} FROM {source}"
    middle = f"SELECT {', '.join(x for f in factors for x in f) or '1 AS one'} FROM ({inner}) AS b"
    outer = f"SELECT {', '.join(products)} FROM ({middle}) AS f"
    text = f"SELECT count(*), {', '.join(lanes)} FROM ({outer}) AS p"
    used = set(re.findall(r"[$:](k\d+_\d+_[abcn])\b", text))
    params = {k: v for k, v in _key_params(key, cols).items() if k in used}
    row = engine.query_native(text, f"fingerprinting {table.source}", params)[0]
    return int(row[0]), [0 if v is None else int(v) % _Q for v in row[1:]]


_NATIVE_LANES = 2


def native_sums(table: Table, key: bytes, columns: list[str]) -> tuple[int, list[int]]:
    """Row count and two 64-bit sums of the engine's own keyed row hash, in one fast query.

    DuckDB's ``hash(seed, c1, …)`` or Spark's ``xxhash64(seed, c1, …)`` per row, with
    seeds derived from the key and bound as parameters: an order of magnitude cheaper than
    the portable digest, but engine- and type-specific (used for the modelling table's
    provenance, whose identity need not match across engines).
    """
    engine = table.engine
    d = engine.dialect
    cols = ", ".join(_quote(c, d) for c in sorted(columns))
    lanes = []
    params = {}
    for lane in range(_NATIVE_LANES):
        word = hmac.new(key, f"native|{lane}".encode(), hashlib.sha256).digest()[:7]
        params[f"s{lane}"] = int.from_bytes(word, "big")
        if d == "spark":
            # Two 32-bit halves summed as BIGINT (exact below 2³¹ rows): a DECIMAL sum of
            # the 64-bit hash doubled the cost of this scan in Spark.
            h = f"xxhash64(:s{lane}, {cols})"
            lanes += [f"sum(shiftright({h}, 32))", f"sum({h} & 4294967295)"]
        else:
            lanes.append(f"sum(hash($s{lane}, {cols}))")
    sql = f"SELECT count(*), {', '.join(lanes)} FROM {engine.relation}"
    row = engine.query_native(sql, f"fingerprinting {table.source}", params)[0]
    sums = [0 if v is None else int(v) for v in row[1:]]
    if d == "spark":  # Σh = 2³²·Σ(h >> 32) + Σ(h & (2³² − 1)), h signed, >> arithmetic
        sums = [(hi << 32) + lo for hi, lo in zip(sums[::2], sums[1::2], strict=True)]
    return int(row[0]), [v % _MOD for v in sums]


def multiset_fingerprint(
    source: Any,
    *,
    key: bytes,
    columns: list[str] | None = None,
    portable: bool = True,
    canonical: bool = True,
) -> str:
    """Order-blind keyed fingerprint of a table's rows: ``"hmac-sha256:<hex>"``.

    Parameters
    ----------
    source : pandas.DataFrame, pyarrow.Table, CSV/Parquet path, DuckDB relation, Spark
        DataFrame or :class:`~distpriv.modeling.tables.Table`
        The rows (a pandas frame is scanned by DuckDB in place; a Table's row filter is
        ignored: the identity is of the table as given).
    key : bytes
        The secret (≥ 16 bytes): the ledger's identity key, or a per-release key kept in the
        private diagnostics.
    columns : list of str, optional
        Fingerprint only these columns (default: all).
    portable : bool
        ``True`` (default): the canonical per-cell digest, equal across DuckDB and Spark
        and across integer/float storage of the same numbers. ``False``: the engine's own
        keyed row hash (:func:`native_sums`), several times cheaper on large tables, equal
        only within one engine and one column typing (the scheme names the engine).
    canonical : bool
        Portable digest only. ``True`` (default): every cell in its canonical encoding, so
        the same rows agree whether read from CSV (whatever the sniffer typed), Parquet,
        a DuckDB table, a pandas or Arrow frame or Spark: booleans and their words
        (true/false/yes/no), integers stored as floats or as text, dates and midnight
        timestamps, NULL and empty text. ``False``: the first version's digest (text
        cells as typed), which a ledger's earlier accounts were keyed with.

    Returns
    -------
    str
        ``"hmac-sha256:"`` + 64 hex digits. Equal for the same multiset of rows in any order,
        through DuckDB or Spark; unrelated to any unkeyed hash of the table.

    Raises
    ------
    ParameterTypeError, ParameterError
        A key that is not bytes or too short; an unknown column; an unreadable source.
    """
    k = _check_key(key)
    table = as_table(source)
    cols = list(table.columns) if columns is None else [table.column_name(c) for c in columns]
    if portable:
        count, sums = fingerprint_sums(table, k, cols, canonical=canonical)
        scheme = _VERSION if canonical else _VERSION_1
    else:
        count, sums = native_sums(table, k, cols)
        scheme = _VERSION + b"|native|" + table.dialect.encode()
    message = b"".join(
        [
            scheme,
            json.dumps(sorted(cols)).encode("utf-8"),
            count.to_bytes(16, "big"),
            *(s.to_bytes(8, "big") for s in sums),
        ]
    )
    return f"{FINGERPRINT_SCHEME}:" + hmac.new(k, message, hashlib.sha256).hexdigest()
