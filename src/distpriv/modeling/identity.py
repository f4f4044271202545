"""Data identity: an order-blind, keyed multiset fingerprint computed where the data is.

A fingerprint of private data that is published must be keyed, or anyone can hash a guessed
table and confirm it, and should not depend on row order, or the same rows shuffled look like
new data to a ledger (DESIGN.md §4; issue #19 item 2). :func:`multiset_fingerprint` computes,
in ONE pass of the engine (DuckDB or Spark SQL):

* per row r, h_r = SHA-256(key_hex ‖ "|" ‖ text(r)), where text(r) is a canonical,
  length-prefixed rendering of the row's cells in column-name order (so it does not depend on
  the engine or on the column order);
* the row count N and, for each of the four 64-bit words of h_r, the sum over rows mod 2⁶⁴
  (an additive multiset hash, Clarke et al. 2003, "Incremental multiset hash functions",
  MSet-Add-Hash: the sum is independent of row order);

and then, in Python, HMAC-SHA256 with the key of (scheme, column names, N, the four sums).
The output is ``"hmac-sha256:<hex>"``. Without the key nothing about the table can be checked
against it; with the key, the same multiset of rows in any order, from any engine, gives the
same value.

Canonical cells: NULL (and NaN) → ``~``; integers and strings as text; a float that is a whole
number below 10¹⁵ as that integer (so an integer column that pandas turned into floats because
of a NULL still matches); other floats as the engine's shortest round-trip text (DuckDB and
Spark agree in the plain decimal range; exotic values such as ±inf or 1e-300 are rendered by
each engine's own rules, and may differ between engines).
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
_VERSION = b"distpriv-multiset-fingerprint-v1"
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
        return f"sha2({text}, 256)" if self.dialect == "spark" else f"sha256({text})"


def _cell_base(column: str, kind: str, sql: _Sql, j: int, q: str) -> list[str]:
    """First stage, once per cell: the text's SHA-256, or an integer's (lo, hi) mod Q.

    Integers (and whole floats below 10¹⁵) are split as x = hi·Q + lo; other values
    (strings, fractional floats, dates, booleans) are hashed as text. Returned as SQL
    select items named ``t{j}`` (hex digest, NULL for NULL/NaN or for numbers), ``l{j}``
    and ``h{j}`` (NULL unless a number).
    """
    ref = _quote(column, sql.dialect)
    text = f"CAST({ref} AS {sql.string})"
    if kind == "text":
        return [f"{sql.sha(text)} AS t{j}"]
    ival = f"CAST({ref} AS BIGINT)"
    lo = sql.mod(ival, q)
    hi = sql.mod(sql.idiv(f"{ival} - {lo}", q), q)
    if kind == "int":
        return [f"{lo} AS l{j}", f"{hi} AS h{j}"]
    whole = f"(NOT isnan({ref}) AND abs({ref}) < 1e15 AND {ref} = floor({ref}))"
    frac = f"(NOT isnan({ref}) AND NOT {whole})"
    return [
        f"CASE WHEN {frac} THEN {sql.sha(text)} END AS t{j}",
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


def fingerprint_sums(table: Table, key: bytes, columns: list[str]) -> tuple[int, list[int]]:
    """Row count and, per lane, Σ_rows Π_cells factor mod Q, in ONE query in the engine.

    Each row's hash per lane is the product of its cells' keyed factors mod Q (a product,
    so that swapping cells between rows changes the sum); the sum over rows does not
    depend on their order. Every key-derived constant is a bound parameter.
    """
    engine = table.engine
    sql = _Sql(engine.dialect)
    q = str(_Q)
    cols = sorted(columns)
    kinds = [_kind(c, engine) for c in cols]
    base = [item for j, c in enumerate(cols) for item in _cell_base(c, kinds[j], sql, j, q)]
    factors = [
        [f"{_cell_factor(kind, sql, j, lane, q)} AS f{j}_{lane}" for lane in range(_LANES)]
        for j, kind in enumerate(kinds)
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
    inner = f"SELECT {', '.join(base) or '1 AS one'} FROM {engine.relation}"
    middle = f"SELECT {', '.join(x for f in factors for x in f) or '1 AS one'} FROM ({inner}) AS b"
    outer = f"SELECT {', '.join(products)} FROM ({middle}) AS f"
    text = f"SELECT count(*), {', '.join(lanes)} FROM ({outer}) AS p"
    used = set(re.findall(r"[$:](k\d+_\d+_[abcn])\b", text))
    params = {k: v for k, v in _key_params(key, cols).items() if k in used}
    row = engine.query_native(text, f"fingerprinting {table.source}", params)[0]
    return int(row[0]), [0 if v is None else int(v) % _Q for v in row[1:]]


def multiset_fingerprint(source: Any, *, key: bytes, columns: list[str] | None = None) -> str:
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
    count, sums = fingerprint_sums(table, k, cols)
    message = b"".join(
        [
            _VERSION,
            json.dumps(sorted(cols)).encode("utf-8"),
            count.to_bytes(16, "big"),
            *(s.to_bytes(8, "big") for s in sums),
        ]
    )
    return f"{FINGERPRINT_SCHEME}:" + hmac.new(k, message, hashlib.sha256).hexdigest()
