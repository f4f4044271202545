"""From data to a query model: tables, queries, secrets, modelling (Chen & Ohrimenko §5.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
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

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
