"""The population panel of ``benchmarks/bench_price_panel.py``: real populations that differ.

Every population is loaded offline from a package already installed (distpriv's bundled
Adult, statsmodels' bundled datasets, scikit-learn's bundled datasets; nothing is
downloaded). Each entry is a table, five to sixty linear statistics over 100-row releases,
and a secret. Together they cover:

* statistics whose units differ by 10⁴ or more (``adult_units``: ``fnlwgt``, sd 1.1e5,
  beside a share, sd 0.47; ``cancer``: mean area, sd 350, beside the fractal dimension,
  sd 0.007);
* heavy-tailed columns, kurtosis > 5 (``fnlwgt`` 9.2, ``hours_per_week`` 6.2,
  ``capital_gain`` 153, ``capital_loss`` 22, RAND HIE's ``mdvis`` 45 and ``disea`` 6.3,
  Fair's ``affairs`` 135, the cancer set's area error);
* skewed, zero-inflated columns (``capital_gain``, ``capital_loss``, ``affairs``,
  ``mdvis``, the digits' pixels);
* counts (``count_if``) beside averages and shares (``avg`` of an indicator);
* five statistics and 50-100 (``adult_bins``: 57 indicator counts; ``digits``: 50 pixel
  averages);
* proportion secrets and mean secrets (``adult_mean``, ``randhie_mean``, ``diabetes``);
* secrets correlated with the statistics (income, malignancy, the digit) and nearly
  uncorrelated (``adult_uncorr``: born in the United States, correlation 0.01 with age,
  hours and sex; ``randhie_mean``: visits, 0.0-0.2 with the statistics).

**Real rows and resampled rows.** Adult (45,222 rows) and RAND HIE (20,190) are used as
they are. Fair (6,366 rows), scikit-learn's breast cancer (569), digits (1,797) and
diabetes (442) are too small to draw 4,000-row modelling tables from without
replacement, so each is **expanded to a synthetic population of 50,000 rows by resampling
its real rows with replacement** (a fixed seed per population): every row is a real row,
the population is the table's empirical law, and the modelling tables of
``bench_price_panel.py`` are drawn from those 50,000 rows as for the others.

The panel is pre-registered: it was fixed (and committed) before the results on it, and
before any change of the calibration it is meant to measure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from distpriv.modeling import MeanSecret, ProportionSecret

# Rows of the synthetic population a small bundled table is expanded to (module docstring).
SYNTHETIC_ROWS = 50_000


@dataclass(frozen=True)
class Population:
    """One population of the panel: how to load it, its statistics and its secret."""

    name: str
    load: Callable[[], pd.DataFrame]
    stats: dict[str, str]
    secret: Any
    note: str
    resampled: bool = False


def _adult() -> pd.DataFrame:
    from distpriv.datasets.adult import load_adult

    return load_adult()


def _randhie() -> pd.DataFrame:
    from statsmodels.datasets import randhie

    return randhie.load_pandas().data


def _expand(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``frame``'s rows resampled with replacement to ``SYNTHETIC_ROWS`` rows (seeded)."""
    idx = np.random.default_rng([20261202, seed]).integers(0, len(frame), SYNTHETIC_ROWS)
    return frame.iloc[idx].reset_index(drop=True)


def _fair() -> pd.DataFrame:
    from statsmodels.datasets import fair

    return _expand(fair.load_pandas().data, 1)


def _sk(loader: str, seed: int, **kwargs: Any) -> pd.DataFrame:
    from sklearn import datasets

    frame = getattr(datasets, loader)(as_frame=True, **kwargs).frame
    frame.columns = [str(c).replace(" ", "_") for c in frame.columns]
    return _expand(frame, seed)


def _digits_pixels() -> list[str]:
    """The 50 digit pixels of largest variance (the others are nearly constant: several
    are zero on every image)."""
    from sklearn import datasets

    frame = datasets.load_digits(as_frame=True).frame
    var = frame.drop(columns="target").var()
    return sorted(var.nlargest(50).index, key=lambda c: int(c.split("_")[1]))


ADULT5 = {
    "avg_age": "avg(age)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}
RANDHIE5 = {
    "avg_visits": "avg(mdvis)",
    "avg_disease": "avg(disea)",
    "n_poor_health": "count_if(hlthp = 1)",
    "n_limitation": "count_if(physlm > 0)",
    "n_free_care": "count_if(lncoins = 0)",
}
_OCCUPATIONS = (
    "Craft-repair",
    "Prof-specialty",
    "Exec-managerial",
    "Adm-clerical",
    "Sales",
    "Other-service",
    "Machine-op-inspct",
    "Transport-moving",
    "Handlers-cleaners",
    "Farming-fishing",
    "Tech-support",
    "Protective-serv",
)
ADULT_BINS = {
    **{f"n_age_{a}": f"count_if(age = {a})" for a in range(18, 63)},
    **{
        f"n_occ_{o.replace('-', '_').lower()}": f"count_if(occupation = '{o}')"
        for o in _OCCUPATIONS
    },
}


def _panel() -> dict[str, Population]:
    pops = [
        Population(
            "adult",
            _adult,
            ADULT5,
            ProportionSecret("income = '>50K'", values=[0.45, 0.55]),
            "bench_price.py's Adult: averages and counts, income share (correlated)",
        ),
        Population(
            "randhie",
            _randhie,
            RANDHIE5,
            ProportionSecret("idp = 1", values=[0.2, 0.3]),
            "bench_price.py's RAND HIE: visits (kurtosis 45), individual deductible "
            "(r -0.25 with free care, |r| <= 0.05 with the others)",
        ),
        Population(
            "adult_units",
            _adult,
            {
                "avg_fnlwgt": "avg(fnlwgt)",
                "avg_age": "avg(age)",
                "avg_hours_per_week": "avg(hours_per_week)",
                "avg_education_years": "avg(education_num)",
                "share_female": "avg(CASE WHEN sex = 'Female' THEN 1 ELSE 0 END)",
            },
            ProportionSecret("income = '>50K'", values=[0.35, 0.45]),
            "units 1e5 (fnlwgt, kurtosis 9.2) to a share (sd 0.47); hours kurtosis 6.2",
        ),
        Population(
            "adult_mean",
            _adult,
            {
                "n_never_married": "count_if(marital_status = 'Never-married')",
                "avg_hours_per_week": "avg(hours_per_week)",
                "avg_capital_gain": "avg(capital_gain)",
                "avg_capital_loss": "avg(capital_loss)",
                "n_female": "count_if(sex = 'Female')",
            },
            MeanSecret("age", values=[37.0, 40.0]),
            "mean secret (age) correlated with never-married; zero-inflated capital "
            "gain/loss (kurtosis 153/22)",
        ),
        Population(
            "adult_uncorr",
            _adult,
            {
                "avg_age": "avg(age)",
                "avg_hours_per_week": "avg(hours_per_week)",
                "n_female": "count_if(sex = 'Female')",
                "n_husband": "count_if(relationship = 'Husband')",
                "n_private": "count_if(workclass = 'Private')",
            },
            ProportionSecret("native_country = 'United-States'", values=[0.88, 0.94]),
            "a secret nearly uncorrelated with the statistics (|r| ~ 0.01)",
        ),
        Population(
            "adult_bins",
            _adult,
            ADULT_BINS,
            ProportionSecret("income = '>50K'", values=[0.45, 0.55]),
            "57 indicator counts (45 single-year age bins, 12 occupations)",
        ),
        Population(
            "randhie_mean",
            _randhie,
            {
                "avg_disease": "avg(disea)",
                "n_limitation": "count_if(physlm > 0)",
                "n_poor_health": "count_if(hlthp = 1)",
                "avg_coinsurance": "avg(lncoins)",
                "avg_deductible": "avg(fmde)",
            },
            MeanSecret("mdvis", values=[2.6, 3.1]),
            "mean secret on a zero-inflated count (visits, kurtosis 45), weakly "
            "correlated with the statistics (|r| 0.0-0.2)",
        ),
        Population(
            "fair",
            _fair,
            {
                "avg_affairs": "avg(affairs)",
                "avg_age": "avg(age)",
                "avg_years_married": "avg(yrs_married)",
                "avg_education": "avg(educ)",
                "n_children": "count_if(children > 0)",
            },
            ProportionSecret("rate_marriage >= 4", values=[0.7, 0.8]),
            "statsmodels' Fair (6,366 rows resampled to 50,000): affairs zero-inflated, "
            "kurtosis 135",
            resampled=True,
        ),
        Population(
            "cancer",
            lambda: _sk("load_breast_cancer", 2),
            {
                "avg_area": "avg(mean_area)",
                "avg_area_error": "avg(area_error)",
                "avg_smoothness": "avg(mean_smoothness)",
                "avg_fractal_dimension": "avg(mean_fractal_dimension)",
                "n_concave": "count_if(mean_concavity > 0.1)",
            },
            ProportionSecret("target = 0", values=[0.35, 0.45]),
            "scikit-learn's breast cancer (569 rows resampled to 50,000): units 1e3 to "
            "1e-3, area error heavy-tailed; malignancy share (strongly correlated)",
            resampled=True,
        ),
        Population(
            "digits",
            lambda: _sk("load_digits", 3),
            {f"avg_{p}": f"avg({p})" for p in _digits_pixels()},
            ProportionSecret("target < 5", values=[0.45, 0.55]),
            "scikit-learn's digits (1,797 rows resampled to 50,000): 50 pixel averages, "
            "many zero-inflated; share of digits 0-4",
            resampled=True,
        ),
        Population(
            "diabetes",
            lambda: _sk("load_diabetes", 4, scaled=False),
            {
                "avg_age": "avg(age)",
                "avg_bmi": "avg(bmi)",
                "avg_bp": "avg(bp)",
                "avg_s5": "avg(s5)",
                "n_sex2": "count_if(sex = 2)",
            },
            MeanSecret("target", values=[145.0, 160.0]),
            "scikit-learn's diabetes, raw units (442 rows resampled to 50,000): mean "
            "secret (progression) correlated with bmi and s5",
            resampled=True,
        ),
    ]
    return {p.name: p for p in pops}


PANEL = _panel()
