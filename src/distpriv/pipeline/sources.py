"""How a data source is written in a configuration: the prefixes that are not paths.

The configuration reader (:mod:`distpriv.pipeline.config`) resolves a source's path against
the file's folder; the data stage (:mod:`distpriv.pipeline.stages.data`) opens it. Both read
the spelling from here, so neither imports the other for it.
"""

from __future__ import annotations

__all__ = ["BUILTIN_PREFIX", "DUCKDB_PREFIX", "SPARK_PREFIX"]

# Data sources with this prefix name the bundled Adult splits; anything else is a path.
BUILTIN_PREFIX = "adult:"
# "spark:<table>": a table of the active (or a new local) Spark session's catalog;
# "duckdb:<database file>#<table>": a table of a DuckDB database file (opened read-only).
SPARK_PREFIX = "spark:"
DUCKDB_PREFIX = "duckdb:"
