"""The paper's setting (Chen & Ohrimenko 2023, §5.1) and data-source resolution."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..datasets import PAPER_SPLIT, paper_split
from ..errors import ParameterError
from ..modeling import ProportionSecret
from ..modeling.tables import as_table

__all__ = ["ADULT_STATISTICS", "INCOME_SECRET", "group_sensitivities", "resolve_source"]

# The five statistics released in §5.1, on subsets of 100 records.
ADULT_STATISTICS = {
    "avg_age": "avg(age)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}
INCOME_SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])


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
    if not source.startswith("adult:"):
        return source
    part = source.split(":", 1)[1]
    if part not in PAPER_SPLIT and part != "all":
        raise ParameterError(
            f"unknown Adult split {part!r}; use one of {', '.join([*PAPER_SPLIT, 'all'])}"
        )
    if part == "all":
        from ..datasets import load_adult

        frame = load_adult()
    else:
        frame = paper_split(rng=split_seed)[part]
    if sample_rows is None:
        return frame
    if sample_rows > len(frame):
        raise ParameterError(
            f"cannot sample {sample_rows} rows from the {part} split ({len(frame)} rows)"
        )
    gen = rng if rng is not None else np.random.default_rng()
    return frame.iloc[gen.choice(len(frame), size=sample_rows, replace=False)]


def group_sensitivities(model_data: object, statistics: dict[str, str], n: int) -> np.ndarray:
    """Per-record sensitivities for the group-DP baseline: range/n for means, 1 for counts.

    Ranges are taken from the (public) modelling data, as in Chen & Ohrimenko 2023 §5.
    """
    from ..modeling import Query

    q = Query(statistics)
    table = as_table(model_data)
    feats = q.row_features(table) if q.is_linear else None
    if feats is None:
        raise ParameterError("group-DP sensitivities need linear statistics")
    out = []
    for j, stat in enumerate(q.statistics):
        span = float(feats[:, j].max() - feats[:, j].min())
        out.append(span / n if stat.scale == "mean" else max(span, 1.0))
    return np.array(out)
