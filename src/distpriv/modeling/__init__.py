"""From data to a query model: tables, queries, secrets, modelling (Chen & Ohrimenko §5.1)."""

from .model import DataQueryModel, model_query, stratum_moments
from .queries import Query, Statistic
from .secrets import ProportionSecret
from .tables import Table, as_table

__all__ = [
    "DataQueryModel",
    "ProportionSecret",
    "Query",
    "Statistic",
    "Table",
    "as_table",
    "model_query",
    "stratum_moments",
]
