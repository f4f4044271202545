"""Baseline of ``bench_cold_path.py``: the paper's attack as a plain numpy notebook runs it.

Chen & Ohrimenko 2023 §5.3 on the paper's setting (``examples/adult-income.toml``): hide
whether 45 % or 55 % of a 100-row subset of Adult earn more than $50K while releasing five
statistics with ExpM (G) at (ε, δ) = (1, 10⁻³). What a curator's notebook does without
distpriv, in one fresh interpreter:

1. load the bundled Adult files with pandas, drop rows with a missing field, split them
   10,000 auxiliary / 10,000 test / the rest modelling (seeded permutation);
2. calibrate ExpM (G) the paper's way: the expected statistics per secret value from the
   modelling rows of each stratum, Δ_E,2 = ‖μ₀.₄₅ − μ₀.₅₅‖₂, σ = Δ_E,2 / D* with D* the
   analytic Gaussian distance at (ε, δ) (Balle & Wang 2018), found by bisection;
3. draw 200 shadow datasets from the auxiliary rows and 200 test datasets from the test
   rows (half per value) as index arrays, and compute the five statistics;
4. train the paper's meta-classifier (standardised logistic regression, scikit-learn) on
   the shadow statistics and report its accuracy on the raw and on the noisy test releases.

The same sizes as one repetition of ``distpriv audit examples/adult-income.toml``; the audit
also runs the mechanism-aware classifier and the likelihood-ratio test and bounds ε, so it
does more than this. Not a distpriv import anywhere: this is the baseline.

Run: ``python -m benchmarks._cold_notebook`` (prints the two accuracies).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

DATA = Path(__file__).resolve().parents[1] / "src" / "distpriv" / "datasets" / "data"
COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
]
N, VALUES, EPSILON, DELTA = 100, (0.45, 0.55), 1.0, 1e-3
N_SHADOW = N_TEST = 200


def load_adult() -> pd.DataFrame:
    """Both bundled files, rows with a '?' dropped, labels without the test file's '.'."""
    frames = [
        pd.read_csv(
            DATA / name,
            header=None,
            names=COLUMNS,
            skiprows=skip,
            skipinitialspace=True,
            na_values="?",
        )
        for name, skip in (("adult.data.gz", 0), ("adult.test.gz", 1))
    ]
    df = pd.concat(frames, ignore_index=True).dropna()
    df["income"] = df["income"].str.rstrip(".")
    return df.reset_index(drop=True)


def features(t: pd.DataFrame) -> np.ndarray:
    """Per-row contributions to the five statistics (means divided by N), shape (rows, 5)."""
    return np.column_stack(
        [
            t["age"].to_numpy(float) / N,
            t["education_num"].to_numpy(float) / N,
            (t["marital_status"] == "Never-married").to_numpy(float),
            (t["sex"] == "Female").to_numpy(float),
            t["hours_per_week"].to_numpy(float) / N,
        ]
    )


def strata(t: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Features of the rows with income > 50K and of the others."""
    rich = (t["income"] == ">50K").to_numpy()
    x = features(t)
    return x[rich], x[~rich]


def gaussian_delta(d: float, eps: float) -> float:
    """δ(ε) of two Gaussians at Mahalanobis distance d (Balle & Wang 2018, Thm 8)."""

    def phi(z: float) -> float:
        return 0.5 * math.erfc(-z / math.sqrt(2.0))

    return phi(d / 2 - eps / d) - math.exp(eps) * phi(-d / 2 - eps / d)


def analytic_distance(eps: float, delta: float) -> float:
    """The largest d with δ(ε; d) ≤ δ, by bisection."""
    lo, hi = 1e-9, 100.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gaussian_delta(mid, eps) <= delta else (lo, mid)
    return lo


def draw(a: np.ndarray, b: np.ndarray, p: float, count: int, rng: np.random.Generator):
    """Statistics of ``count`` datasets of N rows, round(p·N) of them from stratum a."""
    k = round(p * N)
    ia = rng.random((count, a.shape[0])).argpartition(k, axis=1)[:, :k]
    ib = rng.random((count, b.shape[0])).argpartition(N - k, axis=1)[:, : N - k]
    return a[ia].sum(axis=1) + b[ib].sum(axis=1)


def main() -> None:
    rng = np.random.default_rng(0)
    df = load_adult()
    order = rng.permutation(len(df))
    aux, test, modeling = (
        df.iloc[order[:10_000]],
        df.iloc[order[10_000:20_000]],
        df.iloc[order[20_000:]],
    )
    # ExpM (G): σ = Δ_E,2 / D*(ε, δ) per coordinate (Chen & Ohrimenko 2023, Thm 4.2).
    ma, mb = (s.mean(axis=0) for s in strata(modeling))
    mu = [N * (p * ma + (1 - p) * mb) for p in VALUES]
    sigma = float(np.linalg.norm(mu[0] - mu[1])) / analytic_distance(EPSILON, DELTA)
    (aa, ab), (ta, tb) = strata(aux), strata(test)
    half_sh, half_te = N_SHADOW // 2, N_TEST // 2
    x_sh = np.vstack([draw(aa, ab, VALUES[0], half_sh, rng), draw(aa, ab, VALUES[1], half_sh, rng)])
    x_te = np.vstack([draw(ta, tb, VALUES[0], half_te, rng), draw(ta, tb, VALUES[1], half_te, rng)])
    y_sh = np.repeat([0, 1], half_sh)
    y_te = np.repeat([0, 1], half_te)
    released = x_te + rng.normal(0.0, sigma, x_te.shape)
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    clf.fit(x_sh, y_sh)
    acc_none = float(np.mean(clf.predict(x_te) == y_te))
    acc_expm = float(np.mean(clf.predict(released) == y_te))
    print(f"sigma {sigma:.3f}; accuracy: none {acc_none:.3f}, expm-g {acc_expm:.3f}")


if __name__ == "__main__":
    main()
