"""Hostile inputs: one line on stderr, exit 2, no traceback, no partial or
overwritten file, bounded work, and no number spliced into SQL text.

Ctrl-C while importing is tested in tests/test_cli_startup.py (a subprocess interrupted in
the middle of an import).
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from adult_setup import copy_release_tables, small_release_toml
from cli_helpers import one_line_error, run
from distpriv import GaussianQueryModel

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "distpriv"
EXAMPLE = ROOT / "examples" / "eigm-example.toml"


# --- distpriv report: a saved report is untrusted input ------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A well-formed release report with a privacy–utility figure, as saved by --out."""
    from distpriv import calibrate
    from distpriv.pipeline.utility import utility_curve

    model = GaussianQueryModel(
        [[100.0, 101.0], [99.0, 102.0]],
        [[22.0, -6.0], [-6.0, 13.0]],
        labels=["0.45", "0.55"],
        statistics=["avg_age", "n_female"],
    )
    mech = calibrate("eigm", model, epsilon=1.0, delta=1e-3)
    sd = np.sqrt(np.diag(mech.noise_covariance))
    report = {
        "kind": "release",
        "title": "hostile",
        "secret": {"description": "d", "values": [0.45, 0.55], "pairs": [[0.45, 0.55]]},
        "statistics": [
            {"name": n, "expression": f"avg({n})", "value": 1.0, "noise_sd": float(s)}
            for n, s in zip(mech.statistics, sd, strict=True)
        ],
        "mechanism": {"name": "eigm", "summary": "s", "theorem": "t", "options": {}},
        "guarantee": mech.guarantee.to_dict(),
        "provenance": {"version": "9.9.9", "secure": False, "seed": 5},
        "utility": utility_curve(
            model,
            delta=1e-3,
            epsilon=1.0,
            chosen="eigm",
            mechanisms=["eigm", "expm-g"],
            epsilons=(0.5, 2.0),
        ),
    }
    path = tmp_path_factory.mktemp("saved") / "report.json"
    path.write_text(json.dumps(report))
    return json.loads(path.read_text())


def _write(tmp_path, report, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_report_renders_the_well_formed_report(saved, tmp_path, capsys):
    status, _, err = run(["report", _write(tmp_path, saved), "--html", tmp_path / "p.html"], capsys)
    assert status == 0, err
    assert "<svg" in (tmp_path / "p.html").read_text(encoding="utf-8")


def test_report_math_text_label_is_shown_as_text(saved, tmp_path, capsys):
    rep = json.loads(json.dumps(saved))
    rep["utility"]["curves"][1]["mechanism"] = r"$\frac{$"
    rep["utility"]["chosen"] = r"$\frac{$"
    rep["statistics"][0]["name"] = r"$\frac{$"
    status, _, err = run(["report", _write(tmp_path, rep), "--html", tmp_path / "p.html"], capsys)
    assert status == 0, err
    assert r"$\frac{$ (chosen)" in (tmp_path / "p.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"kind": "release", "title": "\xff\xfe"}', ("not UTF-8", "offset 30")),
        (b"[" * 100_000 + b"]" * 100_000, ("nested",)),
        (b'{"kind": "release", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", ("nested",)),
        (b'{"kind": "release", "x": ' + b"[" * 70 + b"]" * 70 + b"}", ("nested more than 64",)),
        (b"{not json", ("not a JSON report",)),
        (b"[1, 2]", ("not a JSON report (an object)",)),
    ],
    ids=["invalid-utf8", "deep-array", "deep-in-object", "depth-70", "not-json", "array"],
)
def test_report_malformed_file(tmp_path, capsys, content, words):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    status, _, err = run(["report", path, "--html", tmp_path / "p.html"], capsys)
    one_line_error(status, err, "REPORT", *words)
    assert not (tmp_path / "p.html").exists()


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("statistics", "oops", ("'statistics' must be a list", '"oops"')),
        ("mechanism", ["x"], ("'mechanism' must be a table",)),
        ("utility", {"epsilons": [1.0], "curves": "x"}, ("utility needs lists",)),
        ("utility", {"epsilons": [-1.0], "curves": []}, ("positive numbers",)),
    ],
)
def test_report_wrong_types(saved, tmp_path, capsys, key, value, words):
    rep = {**saved, key: value}
    status, _, err = run(["report", _write(tmp_path, rep), "--html", tmp_path / "p.html"], capsys)
    one_line_error(status, err, *words)
    assert not (tmp_path / "p.html").exists()


def test_report_two_million_point_curve_is_refused_before_drawing(saved, tmp_path, capsys):
    n = 2_000_000
    rep = json.loads(json.dumps(saved))
    rep["utility"]["epsilons"] = [1] * n
    for c in rep["utility"]["curves"]:
        c["errors"], c["verified"] = [1] * n, [True] * n
    path = tmp_path / "big.json"
    path.write_text(json.dumps(rep, separators=(",", ":")))
    status, _, err = run(["report", path, "--html", tmp_path / "p.html"], capsys)
    one_line_error(status, err, "REPORT", "a report is at most")  # 32 MB: refused unread
    assert not (tmp_path / "p.html").exists()
    # 2,000,000 points in 4 MB (one list): parsed, then refused by its number of values
    rep["utility"]["curves"] = rep["utility"]["curves"][:1]
    rep["utility"]["curves"][0]["errors"] = rep["utility"]["curves"][0]["verified"] = [1]
    path.write_text(json.dumps(rep, separators=(",", ":")))
    status, _, err = run(["report", path, "--html", tmp_path / "p.html"], capsys)
    one_line_error(status, err, "REPORT", "more than 500,000 values")
    assert not (tmp_path / "p.html").exists()


def test_report_curve_points_and_file_size_are_bounded(saved, tmp_path, capsys, monkeypatch):
    from distpriv.report import saved as saved_report

    rep = json.loads(json.dumps(saved))
    n = saved_report.MAX_CURVE_POINTS + 1
    rep["utility"]["epsilons"] = [1.0] * n
    for c in rep["utility"]["curves"]:
        c["errors"], c["verified"] = [1.0] * n, [True] * n
    status, _, err = run(["report", _write(tmp_path, rep), "--html", tmp_path / "p.html"], capsys)
    one_line_error(status, err, f"at most {saved_report.MAX_CURVES} curves")
    monkeypatch.setattr(saved_report, "MAX_REPORT_BYTES", 100)
    status, _, err = run(["report", _write(tmp_path, saved), "--html", tmp_path / "p.html"], capsys)
    one_line_error(status, err, "a report is at most 100 bytes")


def test_report_html_is_never_overwritten(saved, tmp_path, capsys):
    page = tmp_path / "p.html"
    page.write_text("mine")
    status, _, err = run(["report", _write(tmp_path, saved), "--html", page], capsys)
    one_line_error(status, err, "--html", "already exists")
    assert page.read_text() == "mine"


def test_no_clobber_write_refuses_a_file_that_appeared_after_the_check(tmp_path):
    from distpriv.report.output import OutputError, check_output, write_atomic

    target = check_output(tmp_path / "out.json", "--out", overwrite=False)
    target.write_text("someone else's")  # appears between the check and the write
    with pytest.raises(OutputError, match="already exists"):
        write_atomic(target, "ours", "--out", overwrite=False)
    assert target.read_text() == "someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left


# --- calibrate --out, experiment --doc ----------------------------------------------------


def test_calibrate_out_is_never_overwritten(tmp_path, capsys):
    out = tmp_path / "cal.json"
    out.write_text("mine")
    argv = ["calibrate", EXAMPLE, "--mechanism", "eigm", "--epsilon", "1", "--delta", "1e-3"]
    status, _, err = run([*argv, "--out", out], capsys)
    one_line_error(status, err, "--out", "already exists")
    assert out.read_text() == "mine"
    status, _, err = run([*argv, "--out", tmp_path / "new.json", "--json"], capsys)
    assert status == 0, err
    assert json.loads((tmp_path / "new.json").read_text())["mechanism"] == "eigm"


@pytest.mark.parametrize("failure", ["error", "interrupt"])
def test_failed_experiment_leaves_no_doc_folder(tmp_path, capsys, monkeypatch, failure):
    import distpriv.experiments
    from distpriv.errors import ParameterError

    def fails(*args, **kwargs):
        raise KeyboardInterrupt if failure == "interrupt" else ParameterError("it failed")

    monkeypatch.setattr(distpriv.experiments, "run_experiments", fails)
    doc = tmp_path / "newdir" / "sub" / "doc.md"
    status, _, err = run(
        ["experiment", "run", "chen2023-table2", "--doc", doc, "--out", tmp_path / "o"], capsys
    )
    if failure == "interrupt":
        assert status == 130 and err == "distpriv: interrupted; nothing was written\n"
    else:
        one_line_error(status, err, "it failed")
    assert not (tmp_path / "newdir").exists()


def test_doc_folders_are_made_at_the_final_write_and_removed_if_it_fails(tmp_path):
    from distpriv.report.output import OutputError, check_output, write_files

    doc = tmp_path / "a" / "b" / "doc.md"
    check_output(doc, "--doc", create_parents=True)
    assert not (tmp_path / "a").exists()
    with pytest.raises(OutputError):  # the second file's folder is a file: nothing stays
        (tmp_path / "blocker").write_text("")
        write_files(
            [(doc, "x", "--doc"), (tmp_path / "blocker" / "y.md", "y", "--out")],
            create_parents=True,
        )
    assert not (tmp_path / "a").exists() and not doc.exists()
    write_files([(doc, "x", "--doc")], create_parents=True)
    assert doc.read_text() == "x"
    with pytest.raises(OutputError, match="does not exist"):
        check_output(tmp_path / "blocker" / "z" / "doc.md", "--doc", create_parents=True)


# --- audit: bounded work --------------------------------------------------------------------


def test_audit_refuses_a_billion_repetitions_before_any_work(capsys, monkeypatch):
    from distpriv.pipeline.commands import audit as run_module

    def no_data(*args, **kwargs):
        raise AssertionError("data was loaded")

    monkeypatch.setattr(run_module, "load_frame", no_data)
    config = ROOT / "examples" / "adult-income.toml"
    status, _, err = run(["audit", config, "--repetitions", "1000000000"], capsys)
    one_line_error(status, err, "repetitions must be at most 1,000")


def test_audit_size_bounds_in_the_library():
    from distpriv.attacks.audit import MAX_REPETITIONS, check_audit_size
    from distpriv.errors import ParameterError

    assert check_audit_size(MAX_REPETITIONS) == MAX_REPETITIONS
    with pytest.raises(ParameterError, match="repetitions must be at most"):
        check_audit_size(MAX_REPETITIONS + 1)
    with pytest.raises(ParameterError, match="n_shadow must be at most"):
        check_audit_size(10, n_shadow=10**6)


# --- data and config -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables(tmp_path_factory, adult_release_tables):
    import pandas as pd

    base = copy_release_tables(adult_release_tables, tmp_path_factory.mktemp("hostile-data"))
    model = pd.read_csv(base / "model.csv")
    test = pd.read_csv(base / "released.csv")
    huge = model.copy()
    huge["age"] = huge["age"].astype(float)
    huge.loc[huge.index[:5], "age"] = 1e308  # finite, but its square overflows
    huge.to_csv(base / "huge.csv", index=False)
    for frame, name in ((model, "model_const.csv"), (test, "released_const.csv")):
        const = frame.copy()
        const["age"], const["one"] = 40, 1
        const.to_csv(base / name, index=False)
    return base


def _config(base, name, *, model="model.csv", release="released.csv", query='a = "avg(age)"'):
    path = base / f"{name}.toml"
    path.write_text(
        small_release_toml(
            title="hostile data", model=model, release=release, query=query, mechanism="expm-g"
        )
    )
    return path


def test_huge_values_are_a_clear_error_not_sql_text(tables, capsys):
    cfg = _config(tables, "huge", model="huge.csv")
    status, _, err = run(["release", cfg, "--insecure-seed", "1"], capsys)
    one_line_error(status, err, "statistic 'a'", "too large", "double precision")
    assert "Binder Error" not in err


def test_constant_statistics_need_no_noise(tables, capsys):
    cfg = _config(
        tables,
        "const",
        model="model_const.csv",
        release="released_const.csv",
        query='a = "avg(age)"\nn = "sum(one)"',
    )
    status, out, err = run(["release", cfg, "--insecure-seed", "1", "--json"], capsys)
    assert status == 0, err
    stats = {s["name"]: s for s in json.loads(out)["statistics"]}
    assert stats["a"]["value"] == 40.0 and stats["n"]["value"] == 100.0  # exact: no noise
    assert "Traceback" not in err and "IndexError" not in err


def test_mahalanobis_of_all_constant_statistics_is_zero():
    from distpriv.central._common import mahalanobis

    zero = np.zeros((3, 3))
    assert mahalanobis(np.zeros(3), zero) == 0.0
    assert mahalanobis(np.array([0.0, 1.0, 0.0]), zero) == np.inf


def test_unknown_home_directory_is_a_config_error(tables, capsys):
    cfg = _config(tables, "home", model="~no_such_user_distpriv/x.csv")
    status, _, err = run(["release", cfg, "--insecure-seed", "1"], capsys)
    one_line_error(status, err, "[data] model", "~no_such_user_distpriv", "full path")


def test_statement_as_statistic_leaks_no_sqlglot_log(tables, caplog):
    from distpriv.errors import ParameterError
    from distpriv.modeling.expressions import parse_expression

    with caplog.at_level(logging.DEBUG), pytest.raises(ParameterError, match="not allowed"):
        parse_expression("LOAD httpfs", what="statistic 'x'")
    assert not [r for r in caplog.records if r.name.startswith("sqlglot")]


def test_statement_as_statistic_is_one_line_in_a_process(tables):
    cfg = _config(tables, "load", query='a = "LOAD httpfs"')
    proc = subprocess.run(
        [sys.executable, "-m", "distpriv", "release", str(cfg), "--insecure-seed", "1"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC.parent)},
        timeout=120,
    )
    one_line_error(proc.returncode, proc.stderr, "LOAD httpfs", "not allowed")


# --- numbers never spliced into SQL text ---------------------------------------------------

_SQL = re.compile(r"\b(SELECT|WHERE|CAST\(|LIMIT|GROUP BY|AS DOUBLE)\b")


def _spliced_numbers(tree: ast.AST) -> list[int]:
    """Lines of f-strings that look like SQL and format a value with !r, a format spec or
    float(...) — how a float (inf, nan, 1e+308) becomes text the engine misreads."""
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        if not _SQL.search(text):
            continue
        for v in node.values:
            if not isinstance(v, ast.FormattedValue):
                continue
            call = v.value
            is_float = (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "float"
            )
            if v.conversion == ord("r") or v.format_spec is not None or is_float:
                bad.append(node.lineno)
    return bad


def test_no_number_is_spliced_into_sql_text():
    found = {
        str(p.relative_to(SRC)): lines
        for p in sorted(SRC.rglob("*.py"))
        if p.name != "sql_literals.py"  # the one renderer, for finite floats only
        and (lines := _spliced_numbers(ast.parse(p.read_text(encoding="utf-8"))))
    }
    assert not found, f"render numbers with modeling.sql_literals.sql_double: {found}"


def test_the_splice_check_can_fail():
    tree = ast.parse('x = f"SELECT a - ({float(s)!r}) FROM t"\ny = f"SELECT {n:g}"')
    assert _spliced_numbers(tree) == [1, 2]


@pytest.mark.parametrize("value", [1.5, -2e-300, 1e308, float("inf"), float("-inf"), 0.0])
def test_sql_double_round_trips_through_duckdb(value):
    import duckdb

    from distpriv.modeling.sql_literals import sql_double

    got = duckdb.connect().execute(f"SELECT {sql_double(value)}").fetchone()[0]
    assert got == value
    nan = duckdb.connect().execute(f"SELECT {sql_double(float('nan'))}").fetchone()[0]
    assert nan != nan
