"""Regenerate the hospital example tables (synthetic; Zhang, Ohrimenko & Cummings 2022 §4.2).

    python examples/hospital/make_data.py

Four independent draws from the paper's generator (distpriv.datasets.generate_hospital),
rounded to one decimal: the modelling table (public data like the hospital's), the 50
records to release, and the attacker's auxiliary table and the test table for the audit.
"""

from __future__ import annotations

from pathlib import Path

from distpriv.datasets import generate_hospital

HERE = Path(__file__).resolve().parent
TABLES = {"model.csv": (3000, 1), "release.csv": (50, 2), "auxiliary.csv": (2000, 3), "test.csv": (2000, 4)}

if __name__ == "__main__":
    for name, (rows, seed) in TABLES.items():
        generate_hospital(rows, rng=seed).round(1).to_csv(HERE / name, index=False)
