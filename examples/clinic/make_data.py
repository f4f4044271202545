"""Regenerate the clinic example's table from scikit-learn's bundled breast-cancer data.

    python examples/clinic/make_data.py

The Breast Cancer Wisconsin (Diagnostic) data (Wolberg, Street & Mangasarian, UCI Machine
Learning Repository, CC BY 4.0; shipped with scikit-learn as
``sklearn.datasets.load_breast_cancer``, no download): 569 patients, one row each. Kept:
four of the per-tumour measurements (mean radius, texture, area and smoothness) and the
diagnosis as ``malignant`` (1) or benign (0). tests/pipeline/test_price_clinic.py checks
that ``clinic.csv`` is what this script writes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
COLUMNS = {
    "mean radius": "radius",
    "mean texture": "texture",
    "mean area": "area",
    "mean smoothness": "smoothness",
}


def clinic_table() -> pd.DataFrame:
    """The 569-row table of ``clinic.csv`` (columns radius, texture, area, smoothness,
    malignant)."""
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    table = frame[list(COLUMNS)].rename(columns=COLUMNS)
    table["malignant"] = (frame["target"] == 0).astype(int)  # sklearn: 0 = malignant
    return table


if __name__ == "__main__":
    clinic_table().to_csv(HERE / "clinic.csv", index=False)
