"""The CLI at the edges a curator's trials reached: each refusal is one line, and comes
before anything is recorded or computed."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from cli_helpers import one_line_error, run

HOSPITAL = Path(__file__).resolve().parents[1] / "examples" / "hospital"


@pytest.fixture
def hospital(tmp_path):
    """A copy of the hospital example (its ledger would land next to the config)."""
    shutil.copytree(HOSPITAL, tmp_path / "hospital")
    return tmp_path / "hospital"


def _recorded(ledger: Path) -> int:
    """Releases in a ledger file, read with sqlite3 itself (0 when there is no file)."""
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger) as con:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        if "releases" not in tables:
            return 0
        return con.execute("select count(*) from releases").fetchone()[0]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a /proc folder")
def test_unwritable_out_is_refused_before_the_ledger_records(hospital, capsys):
    # /proc passes a permission check for root, yet no file can be created in it.
    ledger = hospital / "led.sqlite"
    status, _, err = run(
        ["release", hospital / "hospital.toml", "--ledger", ledger, "--out", "/proc/x.json"],
        capsys,
    )
    one_line_error(status, err, "--out", "/proc/x.json")
    assert "recorded" not in err
    assert _recorded(ledger) == 0


def _blank(path: Path, column: str, row: int) -> Path:
    """A copy of a CSV file with one cell of ``column`` emptied (a NULL when read)."""
    import pandas as pd

    frame = pd.read_csv(path)
    frame.loc[row, column] = None
    out = path.with_name(f"null-{column}-{path.name}")
    frame.to_csv(out, index=False)
    return out


def test_null_in_the_secret_column_of_the_released_table_is_an_error(hospital, capsys):
    # missing = "error" in the example: documented to cover the secret's column too.
    data = _blank(hospital / "release.csv", "gender", 3)
    status, _, err = run(
        ["release", hospital / "hospital.toml", "--no-ledger", "--data", data], capsys
    )
    one_line_error(status, err, "'gender'", "released data", "1 missing")


def test_null_in_the_secret_column_library_release(hospital):
    import warnings

    import pandas as pd

    import distpriv as dp
    from distpriv.errors import ParameterError

    data = pd.read_csv(_blank(hospital / "release.csv", "gender", 0))
    secret = dp.ProportionSecret("gender = 'female'", [0.5, 0.6])
    kwargs = dict(
        model_data=str(hospital / "model.csv"), mechanism="expm-g", epsilon=1.0, delta=1e-3
    )
    with pytest.raises(ParameterError, match="'gender' of the released data has 1 missing"):
        dp.release(data, {"h": "avg(height)"}, secret, **kwargs)
    # "drop" leaves the row out: F is the mean over the other 49 rows (pandas' mean).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = dp.release(data, {"h": "avg(height)"}, secret, missing="drop", **kwargs)
    assert rep.true_value[0] == pytest.approx(data["height"][data["gender"].notna()].mean())
    assert rep.true_value[0] != pytest.approx(data["height"].mean())


def test_audit_all_pairs_counts_the_pairs_of_psi(hospital, capsys):
    import itertools
    import json

    values = [0.5, 0.6, 0.7]
    text = (hospital / "hospital.toml").read_text().replace("[0.5, 0.6]", str(values))
    (hospital / "three.toml").write_text(text)
    args = ["audit", hospital / "three.toml", "--pairs", "all", "--repetitions", "2"]
    status, out, err = run([*args, "--seed", "1", "--json"], capsys)
    assert status == 0, err
    every = len(list(itertools.combinations(values, 2)))  # Ψ: every pair of the values
    notes = [n for n in json.loads(out)["notes"] if n.startswith("pairs audited")]
    assert len(notes) == 1 and notes[0].startswith(f"pairs audited: {every} of {every} (all)")


def test_mean_secret_with_ten_thousand_values_is_one_line(hospital, capsys):
    text = (hospital / "hospital.toml").read_text()
    values = ", ".join(str(60 + k / 1000) for k in range(10_000))
    text = text.replace("predicate = \"gender = 'female'\"\nvalues = [0.5, 0.6]", "")
    text = text.replace(
        "[secret]\n", f'[secret]\nkind = "mean"\nexpression = "height"\nvalues = [{values}]\n'
    )
    (hospital / "mean.toml").write_text(text)
    status, _, err = run(["release", hospital / "mean.toml", "--no-ledger"], capsys)
    one_line_error(status, err, "mean.toml: [secret] values", "10000 means given", "at most")


def test_share_values_given_as_percentages_name_file_and_key(hospital, capsys):
    text = (hospital / "hospital.toml").read_text().replace("[0.5, 0.6]", "[75, 85]")
    (hospital / "pct.toml").write_text(text)
    status, _, err = run(["release", hospital / "pct.toml", "--no-ledger"], capsys)
    one_line_error(status, err, "pct.toml: [secret] values [75, 85]", "fractions", "0.75")


@pytest.mark.parametrize(
    ("line", "typo", "meant", "table"),
    [
        ("epsilon = 1.0", "epsilion = 1.0", "'epsilon'", "[mechanism]"),
        ("delta = 1e-3", "deltta = 1e-3", "'delta'", "[mechanism]"),
        ("subset_size = 50", "subset_sise = 50", "'subset_size'", "[model]"),
    ],
)
def test_a_misspelt_key_is_named_with_the_nearest_known_one(
    hospital, capsys, line, typo, meant, table
):
    import difflib

    text = (hospital / "hospital.toml").read_text()
    assert line in text
    (hospital / "typo.toml").write_text(text.replace(line, typo))
    status, _, err = run(["release", hospital / "typo.toml", "--no-ledger"], capsys)
    wrong = typo.split(" =")[0]
    # difflib itself agrees that the suggestion is the closest of the table's keys.
    assert difflib.get_close_matches(wrong, [meant.strip("'"), "name", "beta"], n=1)
    one_line_error(status, err, "typo.toml", f"'{wrong}'", table, meant)


def test_a_statistic_that_fails_on_the_released_table_is_named_alone_before_modelling(
    hospital, capsys, monkeypatch
):
    import pandas as pd

    import distpriv.pipeline.stages.steps as steps

    # One text cell makes the released file's weight column text: avg(weight) cannot run
    # there, though it runs on the modelling table.
    frame = pd.read_csv(hospital / "release.csv").astype({"weight": object})
    frame.loc[0, "weight"] = "n/a"
    frame.to_csv(hospital / "text-weight.csv", index=False)

    def no_modelling(*args, **kwargs):
        raise AssertionError("modelling started before the released table was checked")

    monkeypatch.setattr(steps, "build_query_model", no_modelling)
    args = ["release", hospital / "hospital.toml", "--no-ledger"]
    status, _, err = run([*args, "--data", hospital / "text-weight.csv"], capsys)
    line = one_line_error(status, err, "statistic 'avg_weight' (avg(weight))")
    assert "avg_height" not in line and "avg_blood_pressure" not in line


def test_verify_memory_refusal_names_verify_own_flag_and_key(hospital, capsys):
    text = (
        (hospital / "hospital.toml").read_text().replace("subset_size = 50", "subset_size = 1500")
    )
    (hospital / "big.toml").write_text(text)
    # Datasets of 1,500 rows are checked in batches (no refusal at the default 256 MiB);
    # a batch too small for 100 of them is refused, naming verify's own flag.
    status, _, err = run(["verify", hospital / "big.toml", "--batch-mib", "1"], capsys)
    line = one_line_error(status, err, "--batch-mib", "[model] subset_size")
    assert "fewer than 100" in line and "--verify" not in line.replace("distpriv verify", "")


def test_a_mean_secret_warns_in_averages_not_shares(hospital, capsys):
    """The non-Gaussian shape and the too-few-rows warnings of a mean secret speak of its
    average (and of the table's rows), never of a share ``p=66.0`` or of rows "with the
    property"."""
    import pandas as pd

    pd.read_csv(hospital / "model.csv").iloc[:300].to_csv(hospital / "m300.csv", index=False)
    text = (hospital / "hospital.toml").read_text()
    text = text.replace("predicate = \"gender = 'female'\"", 'kind = "mean"\nexpression = "height"')
    text = text.replace("values = [0.5, 0.6]", "values = [66.0, 67.5]")
    (hospital / "mean.toml").write_text(text)
    (hospital / "mean300.toml").write_text(text.replace('"model.csv"', '"m300.csv"'))
    status, _, err = run(["verify", hospital / "mean.toml"], capsys)
    assert status == 0, err
    shape = [w for w in err.splitlines() if "f_theta is not Gaussian" in w]
    assert shape and all("at an average of height of 6" in w for w in shape), err
    args = ["release", hospital / "mean300.toml", "--no-ledger", "--insecure-seed", "1"]
    status, _, err = run(args, capsys)
    assert status == 0, err
    few = [w for w in err.splitlines() if "too few rows" in w]
    assert few and "50 rows per dataset drawn from the 300 of the table" in few[0], err
    assert "p=" not in err and "the property" not in err


def test_a_modelling_table_holding_released_rows_is_refused_unless_allowed(
    hospital, capsys, monkeypatch
):
    import pandas as pd

    import distpriv.pipeline.stages.steps as steps

    released = pd.read_csv(hospital / "release.csv")
    model = pd.concat([pd.read_csv(hospital / "model.csv"), released.iloc[:30]])
    model.to_csv(hospital / "model.csv", index=False)
    # pandas' count of released rows found in the modelling table (the reference).
    shared = len(released.merge(model.drop_duplicates(), how="inner"))
    assert shared == 30
    real_build = steps.build_query_model

    def no_modelling(*args, **kwargs):
        raise AssertionError("modelling started before the overlap was refused")

    monkeypatch.setattr(steps, "build_query_model", no_modelling)
    ledger = hospital / "led.sqlite"
    status, _, err = run(["release", hospital / "hospital.toml", "--ledger", ledger], capsys)
    one_line_error(status, err, f"{shared} of the 50 released rows", "allow_overlap = true")
    assert "--allow-overlap" in err and _recorded(ledger) == 0
    # Said explicitly: released, with the warning.
    monkeypatch.setattr(steps, "build_query_model", real_build)
    args = ["release", hospital / "hospital.toml", "--no-ledger", "--insecure-seed", "1"]
    status, _, err = run([*args, "--allow-overlap"], capsys)
    assert status == 0, err
    assert f"warning: {shared} of the 50 released rows also appear" in err
    text = (
        (hospital / "hospital.toml")
        .read_text()
        .replace('missing = "error"', 'missing = "error"\nallow_overlap = true')
    )
    (hospital / "allowed.toml").write_text(text)
    status, _, err = run(["release", hospital / "allowed.toml", *args[2:]], capsys)
    assert status == 0 and f"{shared} of the 50 released rows also appear" in err
