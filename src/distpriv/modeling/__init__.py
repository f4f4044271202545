"""From data to a query model: tables, queries, secrets, modelling (Chen & Ohrimenko §5.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach

# Imported on first use (distpriv.util.lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "cells": ("CellTable", "expand_cells", "histogram_cells", "marginal_cells"),
    "expressions": (
        "ParsedExpression",
        "parse_expression",
    ),
    "model": (
        "DataQueryModel",
        "model_query",
        "stratum_moments",
    ),
    "regression": ("LogisticRegressionQuery", "logistic_regression_query"),
    "secret_mean": ("MeanSecret",),
    "model_several": ("SeveralQueryModel",),
    "queries": (
        "Query",
        "QueryEvaluation",
        "Statistic",
    ),
    "secret_several": ("AttributeValue", "SeveralSecrets"),
    "secret_events": ("EventSecret", "event_weights"),
    "secret_mean_events": ("MeanGrid",),
    "secrets": ("ProportionSecret", "Secret"),
    "tables": (
        "MissingReport",
        "Table",
        "as_table",
    ),
}

# The one export list: __all__ and the type checkers' imports follow _EXPORTS.
__all__ = sorted(name for names in _EXPORTS.values() for name in names)

if TYPE_CHECKING:
    # The names as attach() resolves them at run time, for type checkers (which do not
    # follow a module __getattr__: without this every public name would be Any).
    from .cells import CellTable, expand_cells, histogram_cells, marginal_cells
    from .expressions import ParsedExpression, parse_expression
    from .model import DataQueryModel, model_query, stratum_moments
    from .model_several import SeveralQueryModel
    from .queries import Query, QueryEvaluation, Statistic
    from .regression import LogisticRegressionQuery, logistic_regression_query
    from .secret_events import EventSecret, event_weights
    from .secret_mean import MeanSecret
    from .secret_mean_events import MeanGrid
    from .secret_several import AttributeValue, SeveralSecrets
    from .secrets import ProportionSecret, Secret
    from .tables import MissingReport, Table, as_table

__getattr__, __dir__ = attach(__name__, _EXPORTS)
