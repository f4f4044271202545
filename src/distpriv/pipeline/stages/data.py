"""Where the pipeline's tables come from, and what it checks about them before a release.

:func:`open_table` opens every configured source in its engine (DuckDB or Spark), the
bundled Adult data included (parsed by DuckDB: no pandas frame), so that
the fingerprints, the overlap check and the facts the default options need are computed
from the same rows the model and the release see. The frame helpers (``load_frame``,
``fingerprint``, ``row_overlap``) serve the Python API's pandas inputs and import pandas
when called.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from ...central import TableFacts
from ...datasets import PAPER_SPLIT, paper_split
from ...datasets.adult_duckdb import adult_engine
from ...errors import ParameterError, PrivacyLeakWarning
from ...modeling import Query
from ...modeling.engines import DuckDBEngine, file_reader, locked_connection
from ...modeling.expressions import quote_column
from ...modeling.facts import (
    LATTICE_SAMPLE_ROWS,
    declared_spans,
    engine_table_facts,
    linear_scales,
)
from ...modeling.lattice import query_lattices
from ...modeling.tables import Table, as_table, sample_table
from ..scope import command_cache
from ..sources import BUILTIN_PREFIX, DUCKDB_PREFIX, SPARK_PREFIX

if TYPE_CHECKING:  # imported where frames are made: ``distpriv verify`` never needs pandas
    import pandas as pd

__all__ = [
    "LATTICE_SAMPLE_ROWS",
    "MEMORY_LIMIT_BYTES",
    "MIN_ROWS_PER_DRAWN_ROW",
    "check_memory",
    "check_model_support",
    "duplicate_rate",
    "engine_table_facts",
    "fingerprint",
    "load_frame",
    "open_table",
    "resolve_source",
    "row_overlap",
    "sample_subset",
    "sample_table",
    "table_facts",
    "table_overlap",
    "warn_overlap",
    "warn_overlap_tables",
]

# Largest single allocation the pipeline makes on the user's behalf (index arrays of the
# Monte Carlo model, shadow/test datasets); larger requests are refused before allocating.
MEMORY_LIMIT_BYTES = 2 * 1024**3
# A stratum should hold at least this many rows per row a modelled dataset draws from it;
# below, the datasets overlap so much that the model describes the table, not the population.
MIN_ROWS_PER_DRAWN_ROW = 10


def _adult_split(part: str, split_seed: int) -> pd.DataFrame:
    if part not in PAPER_SPLIT and part != "all":
        raise ParameterError(
            f"unknown Adult split {part!r}; use one of {', '.join([*PAPER_SPLIT, 'all'])}"
        )
    if part == "all":
        from ...datasets import load_adult

        return load_adult()
    cache = command_cache()
    if cache is None:
        return paper_split(rng=split_seed)[part]
    # Split once per command and seed; a copy per request, so no caller sees another's edits.
    key = ("adult-paper-split", split_seed)
    if key not in cache:
        cache[key] = paper_split(rng=split_seed)
    return cache[key][part].copy()


def load_frame(source: str, *, split_seed: int = 0, what: str = "data") -> pd.DataFrame:
    """Load ``"adult:<split>"`` (the bundled Adult data) or a CSV/Parquet path as a DataFrame.

    Parameters
    ----------
    source : str
        ``"adult:auxiliary"``, ``"adult:test"``, ``"adult:modeling"``, ``"adult:all"``, or
        a path to a ``.csv``, ``.csv.gz``, ``.tsv`` or ``.parquet`` file.
    split_seed : int
        Seed of the paper's Adult split (Chen & Ohrimenko 2023 §5.1).
    what : str
        What the table is for (e.g. ``"[data] model"``), named in errors.

    Raises
    ------
    ParameterError
        Unknown split, missing or unreadable file, empty table.
    """
    if source.startswith(BUILTIN_PREFIX):
        return _adult_split(source[len(BUILTIN_PREFIX) :], split_seed)
    path = Path(source)
    reader = file_reader(path, what)
    # A fixed statement with the path as a bound parameter: nothing from the config is
    # spliced into SQL here.
    resolved = str(path.resolve())
    conn = locked_connection([resolved])  # only this file is readable, no extension loads
    try:
        frame = conn.execute(f"SELECT * FROM {reader}(?)", [resolved]).df()
    except duckdb.Error as exc:
        raise ParameterError(
            f"{what}: cannot read data file {str(path)!r}: {' '.join(str(exc).split())}"
        ) from exc
    finally:
        conn.close()
    if frame.shape[0] == 0:
        raise ParameterError(f"{what}: data is empty: the table {str(path)!r} has no rows")
    return frame


def sample_subset(frame: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A uniformly random sample of ``n`` distinct rows of ``frame``."""
    if n > len(frame):
        raise ParameterError(f"cannot sample {n} rows from a table of {len(frame)} rows")
    return frame.iloc[np.sort(rng.choice(len(frame), size=n, replace=False))]


def resolve_source(
    source: str,
    *,
    split_seed: int,
    sample_rows: int | None = None,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame | str:
    """Turn ``"adult:<split>"`` into that split of the bundled Adult data, else a path.

    With ``sample_rows``, an Adult split is reduced to a random sample of that many rows
    (the dataset to release); a path is returned unchanged.
    """
    if not source.startswith(BUILTIN_PREFIX):
        return source
    frame = _adult_split(source[len(BUILTIN_PREFIX) :], split_seed)
    if sample_rows is None:
        return frame
    gen = rng if rng is not None else np.random.default_rng()
    return sample_subset(frame, sample_rows, gen)


def _canonical_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


def fingerprint(frame: pd.DataFrame, *, salt: bytes = b"") -> str:
    """SHA-256 (hex) of a table's rows as CSV (header, columns and rows in order).

    A ``salt`` (random, kept private) stops anyone from confirming a guess of a small
    released table by hashing it; the curator, who keeps the salt, can still check.
    """
    h = hashlib.sha256()
    h.update(salt)
    h.update(_canonical_bytes(frame))
    return h.hexdigest()


def _row_hashes(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    import pandas as pd

    return pd.util.hash_pandas_object(frame[columns], index=False).to_numpy()


def row_overlap(model: pd.DataFrame, released: pd.DataFrame) -> int:
    """Number of released rows that also appear (all shared columns equal) in ``model``."""
    shared = [c for c in released.columns if c in set(model.columns)]
    if not shared:
        return 0
    try:
        seen = set(_row_hashes(model, shared).tolist())
        return int(sum(h in seen for h in _row_hashes(released, shared).tolist()))
    except TypeError:  # unhashable cells (lists...): compare as text
        seen_text = set(model[shared].astype(str).agg("\x1f".join, axis=1))
        return int(released[shared].astype(str).agg("\x1f".join, axis=1).isin(seen_text).sum())


def duplicate_rate(frame: pd.DataFrame) -> float:
    """Share of rows of ``frame`` that equal another of its rows (chance coincidences)."""
    import pandas as pd

    try:
        dup = pd.util.hash_pandas_object(frame, index=False).duplicated(keep=False)
    except TypeError:  # unhashable cells: compare as text
        dup = frame.astype(str).agg("\x1f".join, axis=1).duplicated(keep=False)
    return float(dup.mean()) if len(frame) else 0.0


def warn_overlap(model: pd.DataFrame, released: pd.DataFrame) -> int:
    """Warn (:class:`PrivacyLeakWarning`) when released rows appear in the modelling table.

    The model, and so the noise, must not depend on the data it protects (Chen & Ohrimenko
    2023 §3: f_θ describes how datasets are drawn, estimated from other data). Real tables
    hold identical records by chance (Adult: about 0.1 % of the test split also appears in
    the modelling split), so the warning fires when the overlap exceeds what the modelling
    table's own duplicate rate d explains: more than n·d + 4·√(n·d) of the n released rows
    (any shared row when the table has no duplicates).
    """
    k = row_overlap(model, released)
    chance = len(released) * duplicate_rate(model)
    if k > chance + 4.0 * np.sqrt(chance):
        warnings.warn(
            f"{k} of the {len(released)} released rows also appear in the modelling table: "
            "the model should come from other data than the data it protects (the noise "
            "scale, and the report, then depend on the private rows)",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    return k


def check_model_support(
    stratum_sizes: tuple[int, int],
    counts: tuple[int, ...],
    subset_size: int,
    kind: str = "proportion",
) -> None:
    """Warn when the model rests on too few rows per stratum for the subset size.

    Each modelled dataset draws round(p·n) rows from the N_A rows with the property and the
    rest from the N_B without; when N_A or N_B is below :data:`MIN_ROWS_PER_DRAWN_ROW`
    times the rows drawn, the datasets share most of their rows and f_θ describes the
    modelling table itself rather than datasets like the released one. ``kind``: the
    secret's; a mean secret's strata are virtual, so its words are the table's rows.
    """
    need_a = max(counts)
    need_b = subset_size - min(counts)
    n_a, n_b = stratum_sizes
    low = [
        (label, have, need)
        for label, have, need in (("with", n_a, need_a), ("without", n_b, need_b))
        if need > 0 and have < MIN_ROWS_PER_DRAWN_ROW * need
    ]
    if low:
        detail = "; ".join(
            f"{need} rows drawn from the {have} {label} the property" for label, have, need in low
        )
        if kind == "mean":  # no property splits the rows: each dataset draws from them all
            detail = f"{subset_size} rows per dataset drawn from the {n_a} of the table"
        warnings.warn(
            f"the model rests on too few rows ({detail}; want at least "
            f"{MIN_ROWS_PER_DRAWN_ROW}x): the modelled datasets overlap heavily and the "
            "guarantee depends on a shaky model; use a larger modelling table",
            PrivacyLeakWarning,
            stacklevel=2,
        )


def check_memory(nbytes: float, what: str) -> None:
    """Refuse, before allocating, a request larger than :data:`MEMORY_LIMIT_BYTES`."""
    if nbytes > MEMORY_LIMIT_BYTES:
        raise ParameterError(
            f"{what} would need about {nbytes / 1024**3:.1f} GiB of memory (limit "
            f"{MEMORY_LIMIT_BYTES / 1024**3:.0f} GiB): use a smaller value"
        )


def table_facts(data: Any, query: Query, subset_size: int) -> TableFacts:
    """Spans and scales of the statistics over the modelling table (for default options).

    Computed once per table and reused by every calibration of a run.

    Raises
    ------
    ParameterError
        A statistic is not linear (its per-row span is undefined).
    """
    table = as_table(data)
    if not query.is_linear:
        bad = next(s for s in query.statistics if not s.linear)
        raise ParameterError(
            f"default options (group-DP sensitivities) need linear statistics; "
            f"{bad.name!r} ({bad.expression}) is not: set them in [mechanism]"
        )
    feats = query.row_features(table)
    spans = tuple(float(v) for v in feats.max(axis=0) - feats.min(axis=0))
    # The grid each statistic lives on, for the floored mechanisms (modeling.lattice).
    steps = tuple(
        math.nan if lat.step is None else lat.step
        for lat in query_lattices(table, query, subset_size)
    )
    return TableFacts(subset_size, declared_spans(query, spans), linear_scales(query), steps)


# ---------------------------------------------------------------------------------------
# Engine-side sources: tables stay where they are; only aggregates, a
# bounded sample or the n released rows ever reach Python.
# ---------------------------------------------------------------------------------------

_SPARK_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")


def _spark_table(name: str, what: str) -> Any:
    """``spark:<name>``: the table of the active Spark session (or a new local one)."""
    if not _SPARK_NAME.match(name):
        raise ParameterError(
            f"{what}: Spark table name {name!r} must be identifiers joined by dots "
            "(e.g. 'warehouse.adult')"
        )
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise ParameterError(
            f"{what}: reading spark:{name} needs pyspark (pip install 'distpriv[spark]')"
        ) from exc
    session = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
    try:
        return session.table(name)
    except Exception as exc:  # pyspark's AnalysisException and friends
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            text = " ".join(str(exc).split()).split(" JVM stacktrace")[0][:200]
            raise ParameterError(f"{what}: cannot read Spark table {name!r}: {text}") from exc
        raise


def open_table(source: str, *, split_seed: int = 0, what: str = "data") -> Table:
    """A configured data source as an engine-backed :class:`~distpriv.modeling.tables.Table`.

    ``"adult:<split>"`` (bundled, parsed into DuckDB), ``"spark:<table>"`` (Spark
    SQL), ``"duckdb:<file>#<table>"`` (a DuckDB database opened read-only) or a CSV/Parquet
    path (read by DuckDB, only the columns a query names). Nothing is loaded into pandas.

    Raises
    ------
    ParameterError
        Unknown split, missing or unreadable file or table, empty table (naming ``what``).
    """
    if source.startswith(BUILTIN_PREFIX):
        # Parsed and split by DuckDB (the rows and order of paper_split's, tested): no
        # pandas frame is made for a table the engine scans anyway.
        part = source[len(BUILTIN_PREFIX) :]
        engine = adult_engine(part, split_seed, cache=command_cache())
        if engine is None:  # pragma: no cover - the package is not on a file system
            return Table(_adult_split(part, split_seed), source)
        return Table(engine, source)
    if source.startswith(SPARK_PREFIX):
        frame = _spark_table(source[len(SPARK_PREFIX) :], what)
        return Table(frame, source)
    if source.startswith(DUCKDB_PREFIX):
        db, _, name = source[len(DUCKDB_PREFIX) :].rpartition("#")
        table = Table(DuckDBEngine.from_database(db, name, what), source)
    else:
        path = Path(source)
        file_reader(path, what)  # a clear message for a missing file or a bad extension
        try:
            table = Table(path, source)
        except ParameterError as exc:
            raise ParameterError(f"{what}: {exc}") from exc
    if table.n_rows == 0:
        raise ParameterError(f"{what}: data is empty: the table {source!r} has no rows")
    return table


def _types_of(engine: Any, relation: str) -> dict[str, str]:
    if engine.dialect == "spark":
        return {str(c): str(t).lower() for c, t in engine.spark.table(relation).dtypes}
    described = engine.conn.sql(f"SELECT * FROM {relation} LIMIT 0")
    return {str(c): str(t) for c, t in zip(described.columns, described.types, strict=True)}


def _row_hash(
    columns: list[str], types: dict[str, str], other: dict[str, str], dialect: str
) -> str:
    """SQL of a 64-bit hash of the ``columns`` of a row, comparable across two relations of
    the same engine: a column whose types differ between them is hashed as text."""
    string = "STRING" if dialect == "spark" else "VARCHAR"
    parts = []
    for c in columns:
        ref = ("`" + c.replace("`", "``") + "`") if dialect == "spark" else quote_column(c)
        parts.append(ref if types.get(c) == other.get(c) else f"CAST({ref} AS {string})")
    func = "xxhash64" if dialect == "spark" else "hash"
    return f"{func}({', '.join(parts)})"


# Rows of the modelling table on which its duplicate rate is measured (at least this many
# in expectation): the rows whose row hash is 0 modulo a power of two (all copies of a row
# share its hash, so the duplicates of a sampled row are all sampled too).
DUPLICATE_SAMPLE_ROWS = 200_000


def _hash_mask(n_rows: int) -> int:
    """``2**j - 1`` with ``2**j`` the largest power of two at most n_rows / 200,000 (0: all)."""
    return (1 << max(0, (n_rows // DUPLICATE_SAMPLE_ROWS).bit_length() - 1)) - 1


def table_overlap(model: Table, released: Table) -> tuple[int, float | None]:
    """Released rows also in the modelling table (all shared columns equal), and the
    modelling table's duplicate rate, in ONE scan of the modelling table in its engine.

    The ``n`` released rows (shared columns only) are registered in the modelling table's
    engine and matched against it by a 64-bit row hash (a broadcast hash join); in the same
    grouped pass, the duplicate rate (share of rows equal to another row on the shared
    columns: what a chance match needs) is measured on
    the rows whose hash is 0 modulo 2ʲ, a hash-partition sample of about
    :data:`DUPLICATE_SAMPLE_ROWS` rows (every row of a table of fewer than 400,000 rows:
    then exact). All copies of a row share its hash, so a sampled row's duplicates are
    sampled too and the sample's share is unbiased for the table's.

    Returns
    -------
    (k, duplicate rate or None)
        ``None`` when no column is shared.
    """
    shared = [c for c in released.columns if c in set(model.columns)]
    if not shared:
        return 0, None
    select = ", ".join(quote_column(c) for c in shared)  # DuckDB SQL (translated for Spark)
    rows = released.engine.fetch_frame(select, None, "reading the released rows")
    engine = model.engine
    view = engine.register_rows("__distpriv_released", rows)
    mine, theirs = _types_of(engine, engine.relation), _types_of(engine, view)
    h_model = _row_hash(shared, mine, theirs, engine.dialect)
    h_rel = _row_hash(shared, theirs, mine, engine.dialect)
    released_hashes = [
        r[0] for r in engine.query_native(f"SELECT {h_rel} FROM {view}", "hashing released rows")
    ]
    mask = _hash_mask(model.n_rows)
    sampled = f"(g.h & {mask}) = 0"
    hits = (
        "collect_list(CASE WHEN g.hit = 1 THEN g.h END)"
        if engine.dialect == "spark"
        else "list(g.h) FILTER (WHERE g.hit = 1)"
    )
    sql = (
        f"WITH r AS (SELECT DISTINCT {h_rel} AS h FROM {view}), "
        f"m AS (SELECT {h_model} AS h FROM {engine.relation}), "
        "g AS (SELECT m.h AS h, count(*) AS c, max(CASE WHEN r.h IS NULL THEN 0 ELSE 1 END) "
        f"AS hit FROM m LEFT JOIN r ON m.h = r.h WHERE r.h IS NOT NULL OR (m.h & {mask}) = 0 "
        "GROUP BY m.h) "
        f"SELECT {hits}, sum(CASE WHEN {sampled} THEN g.c ELSE 0 END), "
        f"sum(CASE WHEN {sampled} AND g.c > 1 THEN g.c ELSE 0 END) FROM g"
    )
    matched, total, dup = engine.query_native(sql, "checking the overlap of the two tables")[0]
    found = set(matched or ())
    k = sum(1 for h in released_hashes if h in found)
    return k, (float(dup or 0) / float(total) if total else 0.0)


def _poisson_tail(k: int, mean: float) -> float:
    """P(K >= k) for K ~ Poisson(mean): how likely chance duplicates reach k rows."""
    if k <= 0:
        return 1.0
    if mean <= 0.0:
        return 0.0
    below = sum(math.exp(i * math.log(mean) - mean - math.lgamma(i + 1)) for i in range(k))
    return max(0.0, 1.0 - below)


def warn_overlap_tables(model: Table, released: Table, *, allow: bool = True) -> int:
    """:func:`warn_overlap` for engine-backed tables (same rule, same warning).

    With ``allow=False`` (a configuration's default: ``[data] allow_overlap``,
    ``--allow-overlap``) the overlap is refused instead, before anything is modelled.
    """
    k, dup = table_overlap(model, released)
    chance = released.n_rows * (dup or 0.0)
    if k > chance + 4.0 * np.sqrt(chance):
        # Refused only when chance cannot explain it (Poisson tail below 1e-9): records that
        # are equal by value in two disjoint tables (Adult has such duplicates) are warned
        # about, never a reason to refuse a release at random.
        if not allow and _poisson_tail(k, chance) < 1e-9:
            raise ParameterError(
                f"{k} of the {released.n_rows} released rows also appear in the modelling "
                "table: the model must come from other data than the data it protects (the "
                "noise scale would depend on the private rows); model on other rows, or say "
                "so explicitly with [data] allow_overlap = true (distpriv release "
                "--allow-overlap)"
            )
        warnings.warn(
            f"{k} of the {released.n_rows} released rows also appear in the modelling table: "
            "the model should come from other data than the data it protects (the noise "
            "scale, and the report, then depend on the private rows)",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    return k
