"""Terminal safety and odd input: one line, exit 2, no traceback, no file.

* titles and statistic names with control characters are printed escaped by ``release``
  and ``ledger show`` (no ESC, CR or bidi override reaches the terminal);
* an empty statistic name is refused by the config and by :class:`Query`;
* ``--budget 1_0,1e-3`` and Arabic-Indic digits are refused (plain ASCII decimals only),
  as in every number flag;
* a directory or a FIFO as the data file (or the config) says what it is, and never hangs;
* a secret value that is not a whole number of rows of the subset is refused, naming it;
* a statistic of a constant column next to a varying one releases (rc 0, no traceback);
* ``experiment run`` interrupted or failing after a finished experiment leaves no file;
* ``--ledger=:memory:``, ``file:`` URIs and ``[ledger] path = ":memory:"`` are refused and
  create no file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from cli_helpers import one_line_error, run
from distpriv.errors import ParameterError
from distpriv.util.text import parse_decimal, parse_nonnegative_int, printable

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
HOSPITAL = ROOT / "examples" / "hospital"
ESC = "\x1b[2J\x1b[31m"


def _unsafe(text: str) -> list[str]:
    """Characters that act on a terminal: controls (C0, DEL, C1), format characters
    (bidi overrides, zero-width), line and paragraph separators — by Unicode category."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c != "\n"]


def _hospital(tmp_path: Path, *, title: str | None = None, query: str | None = None, **keys):
    """A copy of the hospital example; ``keys`` replace whole ``key = ...`` lines."""
    dest = tmp_path / "hospital"
    if not dest.exists():
        shutil.copytree(HOSPITAL, dest)
    lines = (HOSPITAL / "hospital.toml").read_text().splitlines()
    out = []
    skip = False
    for line in lines:
        key = line.split("=")[0].strip()
        if query is not None and line.strip() == "[query]":
            out += ["[query]", query]
            skip = True
            continue
        if skip:
            if line.startswith("["):
                skip = False
            else:
                continue
        if key == "title" and title is not None:
            line = f"title = {json.dumps(title)}"
        elif key in keys:
            line = f"{key} = {keys[key]}"
        out.append(line)
    path = dest / "case.toml"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


# --- control characters --------------------------------------------------------------------


def test_printable_leaves_no_terminal_control_character():
    every = "".join(chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)])
    bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200e\u2028\u2029"
    text = printable("a" + every + bidi + "é ß 名")
    assert _unsafe(text) == [] and "\n" not in text and "\r" not in text
    assert text.startswith("a\\x00\\x01") and "\\x1b" in text and "\\u202e" in text
    assert text.endswith("é ß 名")  # printable non-ASCII text is kept as is
    assert printable("plain text") == "plain text"


def test_release_and_ledger_show_escape_titles_and_names(tmp_path, capsys):
    name = json.dumps(f"n{ESC}\r\u202efake", ensure_ascii=True)  # ESC, CR, bidi override
    config = _hospital(
        tmp_path,
        title=f"T{ESC}\r\nFAKE LINE\u202e",
        query=f'{name} = "avg(height)"\navg_weight = "avg(weight)"',
    )
    ledger = tmp_path / "l.sqlite"
    status, out, err = run(["release", config, "--ledger", ledger, "--insecure-seed", "1"], capsys)
    assert status == 0, err
    assert _unsafe(out + err) == [] and "\r" not in out + err
    assert "T\\x1b[2J\\x1b[31m\\r\\nFAKE LINE\\u202e" in out  # shown, inert
    assert "n\\x1b[2J\\x1b[31m\\r\\u202efake" in out
    status, out, err = run(["ledger", "show", ledger], capsys)
    assert status == 0, err
    assert _unsafe(out + err) == [] and "\r" not in out
    assert "n\\x1b[2J\\x1b[31m\\r\\u202efake" in out
    # The JSON output keeps the exact name (JSON escapes control characters itself).
    status, out, _ = run(
        ["release", config, "--no-ledger", "--insecure-seed", "1", "--json"], capsys
    )
    assert status == 0 and _unsafe(out) == []
    names = [s["name"] for s in json.loads(out)["statistics"]]
    assert names[0] == f"n{ESC}\r\u202efake"


def test_error_lines_are_escaped(tmp_path, capsys):
    config = _hospital(tmp_path, query=f'{json.dumps("x" + ESC)} = "avg(nope)"')
    status, _, err = run(["release", config, "--no-ledger", "--insecure-seed", "1"], capsys)
    line = one_line_error(status, err, "nope")
    assert _unsafe(err) == [] and "\\x1b" in line


# --- empty names, numbers ------------------------------------------------------------------


def test_empty_statistic_name_is_refused(tmp_path, capsys):
    from distpriv.modeling import Query

    config = _hospital(tmp_path, query='"" = "avg(height)"\nb = "avg(weight)"')
    out = tmp_path / "public.json"
    status, _, err = run(["release", config, "--no-ledger", "--out", out], capsys)
    one_line_error(status, err, "[query] statistic names must not be empty")
    assert not out.exists()
    for names in ({"": "avg(x)"}, {"  ": "avg(x)"}):
        with pytest.raises(ParameterError, match="must not be empty"):
            Query(names)


@pytest.mark.parametrize("budget", ["1_0,1e-3", "\u0661,1e-3", "1,1e-\u0663", "0x1,0", "1e,0"])
def test_budget_is_plain_decimals_only(tmp_path, capsys, budget):
    config = _hospital(tmp_path)
    ledger = tmp_path / "l.sqlite"
    argv = ["release", config, "--ledger", ledger, "--budget", budget, "--insecure-seed", "1"]
    status, _, err = run(argv, capsys)
    one_line_error(status, err, "--budget", "plain decimal")
    assert not ledger.exists()


def test_budget_and_number_flags_accept_plain_decimals():
    from distpriv.pipeline.ledger.records import parse_budget

    b = parse_budget("2, 1e-3")
    assert (b.epsilon, b.delta) == (2.0, 1e-3)
    assert parse_budget("10,0").epsilon == 10.0
    for text, value in (("-0.5", -0.5), (".5", 0.5), ("5.", 5.0), ("1E+2", 100.0)):
        assert parse_decimal(text, "x") == value == float(text)
    assert parse_decimal("inf", "x") == float("inf")
    with pytest.raises(ParameterError, match="plain decimal"):
        parse_decimal("inf", "x", special=False)
    assert parse_nonnegative_int("007", "x") == 7
    for bad in ("1_0", "\u0661", "+1", " 1", "-1", "\u00b2"):
        with pytest.raises(ParameterError):
            parse_nonnegative_int(bad, "x")
    assert int("1_0") == 10 and int("\u0661") == 1 and float("1_0") == 10.0  # what int()


_CALIBRATE = ["calibrate", ROOT / "examples" / "eigm-example.toml", "--mechanism", "eigm"]
_CALIBRATE += ["--delta", "1e-3"]


def test_calibrate_takes_the_plain_numbers(capsys):
    status, out, err = run([*_CALIBRATE, "--epsilon", "10", "--json"], capsys)
    assert status == 0, err  # so the refusals below are the numbers' doing
    assert json.loads(out)["mechanism"] == "eigm"


@pytest.mark.parametrize(
    "argv",
    [
        [*_CALIBRATE, "--epsilon", "1_0"],
        [*_CALIBRATE, "--epsilon", "\u0661"],
        ["demo", "--seed", "\u0661"],
        ["demo", "--seed", "1_0"],
        ["local", "evaluate", "--mechanism", "rr", "--epsilon", "1", "--pair", "\u00b2"],
    ],
    ids=["eps-underscore", "eps-arabic", "seed-arabic", "seed-underscore", "pair-superscript"],
)
def test_number_flags_refuse_what_float_and_int_would_take(argv, capsys):
    status, _, err = run(argv, capsys)
    assert status == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# --- what the data file is -----------------------------------------------------------------


def test_directory_and_fifo_as_the_data_file(tmp_path, capsys):
    config = _hospital(tmp_path)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    status, _, err = run(["release", config, "--no-ledger", "--data", folder], capsys)
    one_line_error(status, err, "--data", "is a directory")
    assert "not found" not in err
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    status, _, err = run(["release", config, "--no-ledger", "--data", fifo], capsys)
    one_line_error(status, err, "--data", "FIFO", "not a regular file")
    assert "not found" not in err
    status, _, err = run(["release", config, "--no-ledger", "--data", tmp_path / "no.csv"], capsys)
    one_line_error(status, err, "--data", "not found")


def test_fifo_as_the_config_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "distpriv", "release", str(fifo), "--no-ledger"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=120,  # reading the FIFO would block forever
    )
    one_line_error(proc.returncode, proc.stderr, "config file", "not a regular file")


# --- the secret's grid -----------------------------------------------------------------------


def test_secret_value_off_the_subset_grid_is_refused(tmp_path, capsys):
    config = _hospital(tmp_path, values="[0.5, 0.305]", subset_size="100", release='"model.csv"')
    out = tmp_path / "public.json"
    status, _, err = run(["release", config, "--no-ledger", "--out", out], capsys)
    one_line_error(status, err, "[secret] value 0.305", "subset_size 100", "30.5", "0.3 or 0.31")
    assert not out.exists()
    # The same in the model rows of the audit and verify commands (one config check).
    status, _, err = run(["verify", config], capsys)
    one_line_error(status, err, "[secret] value 0.305")


def test_secret_values_on_the_grid_pass_despite_float_rounding():
    from distpriv.pipeline.config import _check_grid

    for values, n in (([0.45, 0.55], 100), ([0.29, 0.57], 100), ([0.1, 0.7], 10), ([0, 1], 7)):
        assert 0.57 * 100 != 57  # the float product is not exact, the check allows for it
        _check_grid(values, n, "cfg")
    with pytest.raises(ParameterError, match=r"value 0\.5 is not a whole number of rows"):
        _check_grid([0.5, 0.6], 5, "cfg")


# --- a constant column next to a varying one ------------------------------------------------


def test_constant_column_statistic_releases_without_traceback(tmp_path, capsys):
    import pandas as pd

    config = _hospital(tmp_path, query='n = "sum(one)"\nb = "avg(weight)"')
    for name in ("model", "release"):
        path = config.parent / f"{name}.csv"
        frame = pd.read_csv(path)
        frame["one"] = 1
        frame.to_csv(path, index=False)
    status, out, err = run(["release", config, "--no-ledger", "--insecure-seed", "1"], capsys)
    assert status == 0, err
    assert "Traceback" not in err
    row = next(line for line in out.splitlines() if line.startswith("│ n "))
    assert row.rstrip(" │").endswith("inf")  # its noise/spread: it never varies


# --- experiment run: all files or none ---------------------------------------------------------


def _fake_experiments(monkeypatch, second: str):
    """Two fast experiments: the first writes a figure into its folder, the second
    finishes, fails or is interrupted."""
    from distpriv.experiments import base, registry

    def first(*, quick, seed, out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)  # as save_figure does
        (out_dir / "one.png").write_bytes(b"png")
        return base.make_result(
            "one",
            "One",
            ["a"],
            [(1,)],
            [],
            ["one.png"],
            {},
            base.RunInfo(seed, quick, time.perf_counter()),
        )

    def then(*, quick, seed, out_dir):
        if second == "interrupt":
            raise KeyboardInterrupt
        if second == "error":
            raise ParameterError("it failed")
        return base.make_result(
            "two", "Two", ["a"], [(2,)], [], [], {}, base.RunInfo(seed, quick, time.perf_counter())
        )

    fakes = {
        "one": base.Experiment("one", "One", "paper", first),
        "two": base.Experiment("two", "Two", "paper", then),
    }
    import distpriv.experiments as package

    # The package first: reading its lazy EXPERIMENTS loads the registry's, and the value
    # monkeypatch restores must be the real one, not the fakes.
    monkeypatch.setattr(package, "EXPERIMENTS", fakes, raising=False)
    monkeypatch.setattr(registry, "EXPERIMENTS", fakes)


@pytest.mark.parametrize("existing", [False, True])
@pytest.mark.parametrize("second", ["interrupt", "error"])
def test_experiment_run_failing_late_leaves_no_file(
    tmp_path, capsys, monkeypatch, second, existing
):
    _fake_experiments(monkeypatch, second)
    out = tmp_path / "results" / "sub"
    if existing:
        out.mkdir(parents=True)
        (out / "mine.txt").write_text("mine")
    status, stdout, err = run(["experiment", "run", "one", "two", "--out", out], capsys)
    if second == "interrupt":
        assert status == 130 and err == "distpriv: interrupted; nothing was written\n"
    else:
        one_line_error(status, err, "it failed")
    assert "One" in stdout  # the first experiment finished and was shown
    if existing:
        assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    else:
        assert not (tmp_path / "results").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["results"] if existing else [])


def test_experiment_run_moves_every_file_at_the_end(tmp_path, capsys, monkeypatch):
    _fake_experiments(monkeypatch, "ok")
    out = tmp_path / "results"
    status, _, err = run(["experiment", "run", "one", "two", "--out", out], capsys)
    assert status == 0, err
    names = sorted(p.name for p in out.iterdir())
    assert names == ["one.csv", "one.json", "one.png", "two.csv", "two.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # no staging left


# --- ledger paths that are not files -------------------------------------------------------


@pytest.mark.parametrize("path", [":memory:", "file:led.sqlite?mode=rwc", "FILE:led", ""])
def test_special_ledger_paths_are_refused_and_create_nothing(tmp_path, capsys, monkeypatch, path):
    config = _hospital(tmp_path)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    before = sorted(p.name for p in config.parent.iterdir())
    status, _, err = run(["release", config, f"--ledger={path}", "--insecure-seed", "1"], capsys)
    one_line_error(status, err, "--ledger")
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in config.parent.iterdir()) == before


def test_memory_ledger_in_the_config_is_refused(tmp_path, capsys, monkeypatch):
    config = _hospital(tmp_path)
    config.write_text(config.read_text() + '\n[ledger]\npath = ":memory:"\n')
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in config.parent.iterdir())
    status, _, err = run(["release", config, "--insecure-seed", "1"], capsys)
    one_line_error(status, err, "[ledger] path", ":memory:", "not a file")
    assert sorted(p.name for p in config.parent.iterdir()) == before
