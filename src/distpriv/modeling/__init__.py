"""From data to a query model: tables, queries, secrets, modelling (Chen & Ohrimenko §5.1)."""

from .expressions import ParsedExpression, parse_expression
from .model import DataQueryModel, model_query, stratum_moments
from .queries import Query, QueryEvaluation, Statistic
from .secrets import ProportionSecret
from .tables import MissingReport, Table, as_table

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
