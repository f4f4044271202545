"""``distpriv verify``'s cold path: the data-level check's
sampler reuses the model's count of missing values instead of counting them again, and
draws from exactly the table it would have built by counting."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from distpriv.modeling import strata
from distpriv.modeling.tables import Table
from distpriv.pipeline import run_verify
from distpriv.pipeline.commands import verify as verify_command

HOSPITAL = Path(__file__).resolve().parents[2] / "examples" / "hospital"
USED = ["height", "weight", "blood_pressure", "gender"]


def _hospital(tmp_path: Path, missing: str) -> tuple[Path, pd.DataFrame]:
    dest = tmp_path / "hospital"
    shutil.copytree(HOSPITAL, dest)
    frame = pd.read_csv(dest / "model.csv")
    if missing == "drop":
        # NULLs in two used columns, one row with both: 9 rows have at least one.
        frame.loc[[3, 7, 11, 19, 23], "weight"] = np.nan
        frame.loc[[7, 40, 41, 42, 43], "height"] = np.nan
        frame.to_csv(dest / "model.csv", index=False)
    config = dest / "hospital.toml"
    config.write_text(config.read_text().replace('missing = "error"', f'missing = "{missing}"'))
    return config, frame


def _spy(monkeypatch) -> tuple[list, list]:
    counted, tables = [], []
    real_counts = Table.missing_counts
    real_init = strata.StratifiedSampler.__init__

    def counting(self, columns):
        counted.append(sorted(columns))
        return real_counts(self, columns)

    def init(self, data, *args, **kwargs):
        tables.append(data)
        real_init(self, data, *args, **kwargs)

    monkeypatch.setattr(Table, "missing_counts", counting)
    monkeypatch.setattr(strata.StratifiedSampler, "__init__", init)
    return counted, tables


def _verify(config: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_verify(config, max_samples=1000)


@pytest.mark.parametrize("missing", ["error", "drop"])
def test_the_check_reuses_the_models_missing_count(tmp_path, monkeypatch, missing):
    config, frame = _hospital(tmp_path, missing)
    counted, tables = _spy(monkeypatch)
    assert _verify(config).public["verification"]["verdict"]  # the check ran
    assert counted == []  # the model's aggregate query counted them; nobody counts again
    (reused,) = tables
    # The sampler's table: the complete rows, counted independently with pandas.
    assert reused.n_rows == int(frame[USED].notna().all(axis=1).sum())
    assert reused.n_rows == (len(frame) - 9 if missing == "drop" else len(frame))

    # Without the model's report the check counts them itself (one query) and builds the
    # very same table: same filter, same rows.
    monkeypatch.setattr(verify_command, "_known_missing", lambda *a: (None, None))
    _verify(config)
    assert counted == [sorted(USED)]
    counted_table = tables[1]
    assert (counted_table.where, counted_table.n_rows) == (reused.where, reused.n_rows)


def test_a_report_about_other_columns_or_policy_is_not_used():
    from distpriv.pipeline.stages.data import open_table

    table = open_table(str(HOSPITAL / "model.csv"), split_seed=0, what="model")
    report = {"policy": "drop", "columns": sorted(USED), "missing_counts": {"weight": 5}}
    report["rows_dropped"] = 5
    known = verify_command._known_missing
    assert known(table, set(USED), "drop", report) == ({"weight": 5}, 5)
    assert known(table, {c.upper() for c in USED}, "drop", report) == ({"weight": 5}, 5)
    assert known(table, set(USED), "error", report) == (None, None)
    assert known(table, set(USED[:2]), "drop", report) == (None, None)
    assert known(table, set(USED), "drop", None) == (None, None)
