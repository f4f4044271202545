"""From data to a query model: tables, queries, secrets, modelling (Chen & Ohrimenko §5.1)."""

from __future__ import annotations

from .._lazy import attach

# Imported on first use (distpriv._lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "expressions": (
        "ParsedExpression",
        "parse_expression",
    ),
    "model": (
        "DataQueryModel",
        "model_query",
        "stratum_moments",
    ),
    "queries": (
        "Query",
        "QueryEvaluation",
        "Statistic",
    ),
    "secrets": ("ProportionSecret",),
    "tables": (
        "MissingReport",
        "Table",
        "as_table",
    ),
}

__all__ = [
    "DataQueryModel",
    "MissingReport",
    "ParsedExpression",
    "ProportionSecret",
    "Query",
    "QueryEvaluation",
    "Statistic",
    "Table",
    "as_table",
    "model_query",
    "parse_expression",
    "stratum_moments",
]

__getattr__, __dir__ = attach(__name__, _EXPORTS)
