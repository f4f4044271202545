"""Units do not matter: each statistic's noise sd over its own sampling sd, under the papers'
objective (``objective="l2"``, E||Z||^2) and the default (``"relative"``), for ``auto``.

Tables: a synthetic 5-statistic table whose units differ by about 10^5 (a heavy-tailed price
in dollars, a score, an average count, a count, a share; 0.30 vs 0.45 hidden, 100-row
releases) built from 1,000 and 4,000 modelling rows, and the same table with the price in
cents; and the clinic example (examples/clinic: scikit-learn's breast-cancer table, four
statistics). The population layer (box set, β = 0.05) is on, as a curator gets it. A ratio
is the price of the statistic in its own units: 1 means noise as large as the statistic's
own variation from one 100-row dataset to another.

    python -m benchmarks.bench_units [--out benchmarks/results/units.json]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from distpriv.modeling import ProportionSecret, model_query
from distpriv.pipeline.stages.calibrate import choose_for_table

STATS = {
    "avg_price": "avg(price)",
    "avg_score": "avg(score)",
    "avg_visits": "avg(visits)",
    "n_smokers": "count_if(smoker = 1)",
    "share_members": "avg(member)",
}
CLINIC = {
    "avg_radius": "avg(radius)",
    "avg_texture": "avg(texture)",
    "avg_area": "avg(area)",
    "n_large": "count_if(area > 700)",
}


def synthetic(n: int, factor: float = 1.0, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    flag = rng.random(n) < 0.35
    return pd.DataFrame(
        {
            "flag": flag.astype(int),
            "price": np.round(rng.lognormal(10 + 0.3 * flag, 0.8, n), 2) * factor,
            "score": rng.normal(0.5 + 0.05 * flag, 0.2, n),
            "visits": rng.poisson(2 + flag, n),
            "smoker": (rng.random(n) < 0.2 + 0.15 * flag).astype(int),
            "member": (rng.random(n) < 0.5 + 0.1 * flag).astype(int),
        }
    )


def one(frame: pd.DataFrame, query: dict[str, str], predicate: str) -> dict[str, object]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_query(
            frame, query, ProportionSecret(predicate, values=[0.3, 0.45]), subset_size=100, rng=0
        )
        spread = np.sqrt(np.diagonal(model.covariances, axis1=1, axis2=2).mean(axis=0))
        out: dict[str, object] = {"statistics": list(query), "sampling_sd": spread.tolist()}
        for objective in ("l2", "relative"):
            start = time.process_time()
            choice = choose_for_table(
                model,
                epsilon=1.0,
                delta=1e-3,
                facts=model.facts,
                options={"objective": objective},
            )
            sd = np.sqrt(np.diag(choice.mechanism.noise_covariance))
            out[objective] = {
                "chosen": choice.name,
                "noise_sd": sd.tolist(),
                "noise_to_sampling_sd": (sd / spread).tolist(),
                "sum_relative_variance": float(np.sum((sd / spread) ** 2)),
                "expected_squared_error": float(np.sum(sd**2)),
                "cpu_s": time.process_time() - start,
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    cases = {
        f"synthetic, {n} rows, price in {unit}": (synthetic(n, f), STATS, "flag = 1")
        for n in (1000, 4000)
        for unit, f in (("dollars", 1.0), ("cents", 100.0))
    }
    clinic = pd.read_csv(root / "examples" / "clinic" / "clinic.csv")
    cases["clinic example (569 rows)"] = (clinic, CLINIC, "malignant = 1")
    results = {}
    for label, (frame, query, predicate) in cases.items():
        res = one(frame, query, predicate)
        results[label] = res
        print(f"\n{label}")
        print(f"  {'statistic':16s} {'sampling sd':>12s} {'l2: noise/sd':>14s} {'relative':>10s}")
        for k, name in enumerate(res["statistics"]):  # type: ignore[arg-type]
            l2 = res["l2"]["noise_to_sampling_sd"][k]  # type: ignore[index]
            rel = res["relative"]["noise_to_sampling_sd"][k]  # type: ignore[index]
            print(f"  {name:16s} {res['sampling_sd'][k]:12.4g} {l2:14.4g} {rel:10.4g}")  # type: ignore[index]
        for objective in ("l2", "relative"):
            r = res[objective]
            print(
                f"  {objective}: {r['chosen']}, sum (noise/sd)^2 = "  # type: ignore[index]
                f"{r['sum_relative_variance']:.4g}, E||Z||^2 = "  # type: ignore[index]
                f"{r['expected_squared_error']:.4g}, CPU {r['cpu_s']:.1f} s"  # type: ignore[index]
            )
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
