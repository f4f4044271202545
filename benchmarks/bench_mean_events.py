"""Benchmark: mean events against the two-value mean secret at their closest values.

Mean events: "is the average age of 100 rows in [36, 38] or in [41, 43]?"
(Adult, the five standard statistics; and "is the average number of chronic diseases in
[10, 10.8] or [11.8, 12.6]?" on the RAND health insurance experiment), ε = 1, δ = 1e-3.
For each table, each grid step (the default, a quarter of the range, and 0.25 / 0.1), the
population's own model and a modelling sample with the β = 0.05 layer, and two mechanisms
(expm-g, eigm), printed in one run: model and calibration CPU seconds of the mean events
and of the baseline (``MeanSecret`` at the events' closest values, 38 vs 41), and E‖Z‖² of
both with their ratio (the price of hiding a range whatever the weights: the farthest
cross pair binds).

Run: ``python -m benchmarks.bench_mean_events``.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

import numpy as np
import pandas as pd

import distpriv as dp
from distpriv.datasets.adult import load_adult, paper_split
from distpriv.modeling import EventSecret, MeanGrid, MeanSecret, model_query

from ._common import timed

ADULT_STATS = {
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
    "n_high_earners": "count_if(income = '>50K')",
}
T = TypeVar("T")
RAND_STATS = {
    "avg_visits": "avg(mdvis)",
    "n_poor_health": "count_if(hlthp = 1)",
    "n_limitation": "count_if(physlm > 0)",
    "n_free_care": "count_if(lncoins = 0)",
    "avg_log_income": "avg(lpi)",
}


def main() -> None:
    """Print the table described in the module docstring."""
    warnings.simplefilter("ignore")
    from statsmodels.datasets import randhie

    adult = load_adult()
    rand: pd.DataFrame = randhie.load_pandas().data
    cases = (
        (
            "adult",
            adult,
            paper_split(adult, rng=0)["modeling"],
            ADULT_STATS,
            "age",
            [(36, 38), (41, 43)],
            (38, 41),
            0.25,
        ),
        (
            "randhie",
            rand,
            rand.sample(8_000, random_state=0),
            RAND_STATS,
            "disea",
            [(10, 10.8), (11.8, 12.6)],
            (10.8, 11.8),
            0.1,
        ),
    )
    for name, frame, modelling, stats, col, events, closest, fine in cases:
        for step in (None, fine):
            secret = EventSecret(MeanGrid(col, step=step), events=events)
            for label, table, pop in (("population", frame, True), ("layer", modelling, False)):
                model, t_model, _ = timed(
                    model_query, table, stats, secret, subset_size=100, population=pop
                )
                base, t_base, _ = timed(
                    model_query,
                    table,
                    stats,
                    MeanSecret(col, values=list(closest)),
                    subset_size=100,
                    population=pop,
                )
                for mech in ("expm-g", "eigm"):
                    a, t_a, _ = timed(dp.calibrate, mech, model, epsilon=1.0, delta=1e-3)
                    b, t_b, _ = timed(dp.calibrate, mech, base, epsilon=1.0, delta=1e-3)
                    za, zb = np.trace(a.noise_covariance), np.trace(b.noise_covariance)
                    print(
                        f"{name} step={step} {label} {mech}: {len(model.pairs)} pairs, model "
                        f"{t_model:.1f}s vs {t_base:.1f}s, calibration {t_a:.2f}s vs "
                        f"{t_b:.2f}s; E||Z||^2 events {za:.5g} vs two values {zb:.5g} "
                        f"(x{za / zb:.2f})",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
