"""The paper's setting (Chen & Ohrimenko 2023, §5.1), shared by the experiments."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..central import default_options
from ..modeling import Query
from ..pipeline.commands.demo import ADULT_STATISTICS, INCOME_SECRET
from ..pipeline.stages.data import resolve_source, table_facts

__all__ = ["ADULT_STATISTICS", "INCOME_SECRET", "group_sensitivities", "resolve_source"]


def group_sensitivities(model_data: Any, statistics: dict[str, str], n: int) -> np.ndarray:
    """Per-record sensitivities of the group-DP baseline (the registry's default options).

    Range/n for means, the range (at least 1) for counts, ranges from the (public)
    modelling data, as in Chen & Ohrimenko 2023 §5.
    """
    facts = table_facts(model_data, Query(statistics), n)
    return np.asarray(default_options("groupdp-g", facts)["sensitivities"])
