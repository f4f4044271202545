"""Failure never publishes; every bad input is one line, exit 2, no traceback.

One test per class: markup in titles and names, Ctrl-C during a long command, unwritable
and existing ``--out``, negative seeds, ε = 1e-300, an oversized ``--k`` or sample size, a
failure after the computation; and files that follow the umask.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import run

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "examples" / "adult-income.toml"
MODEL = ROOT / "examples" / "eigm-example.toml"
SRC = ROOT / "src"


def one_error(status, err):
    assert status == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("distpriv: error:"), err
    return lines[0]


def adult_config(tmp_path, **replace):
    """The shipped Adult config, copied (data sources are built in), with replacements."""
    text = ADULT.read_text()
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_markup_in_title_and_names_is_printed_literally(tmp_path, capsys):
    cfg = adult_config(
        tmp_path,
        **{
            'title = "Adult': 'title = "[/b][bold red]x[/] Adult',
            "avg_age = ": '"[/i]age" = ',
        },
    )
    out_file = tmp_path / "r.json"
    status, out, err = run(["release", cfg, "--out", out_file], capsys)
    assert status == 0, err
    assert "[/b][bold red]x[/] Adult" in out and "[/i]age" in out
    assert json.loads(out_file.read_text())["title"].startswith("[/b][bold red]x[/]")


def test_a_failure_after_the_computation_writes_nothing(tmp_path, capsys, monkeypatch):
    import distpriv.report.text as rendering

    def broken(*args, **kwargs):
        raise OSError("terminal went away")

    monkeypatch.setattr(rendering, "render_release", broken)
    out_file, private_file = tmp_path / "r.json", tmp_path / "p.json"
    status, out, err = run(
        ["release", ADULT, "--out", out_file, "--private-out", private_file], capsys
    )
    one_error(status, err)
    assert not out_file.exists() and not private_file.exists()
    assert list(tmp_path.iterdir()) == [] and out == ""


@pytest.mark.parametrize(
    ("target", "match"),
    [
        ("missing-folder/r.json", "--out .*does not exist"),
        (".", "--out .*is a directory"),
    ],
)
def test_unwritable_out_names_the_flag(target, match, tmp_path, capsys):
    import re

    status, _, err = run(["release", ADULT, "--out", tmp_path / target], capsys)
    assert re.search(match, one_error(status, err))


def test_existing_out_is_never_overwritten(tmp_path, capsys):
    out_file = tmp_path / "r.json"
    out_file.write_text("the release published yesterday\n")
    status, out, err = run(["release", ADULT, "--out", out_file], capsys)
    assert "--out" in one_error(status, err) and "already exists" in err and out == ""
    assert out_file.read_text() == "the release published yesterday\n"
    status, _, err = run(
        ["release", ADULT, "--out", tmp_path / "a", "--private-out", tmp_path / "a"], capsys
    )
    assert "different files" in one_error(status, err)


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_written_files_follow_the_umask(mask, tmp_path, capsys):
    old = os.umask(mask)
    try:
        out_file = tmp_path / "cal.json"
        argv = ["calibrate", MODEL, "--mechanism", "eigm", "--epsilon", "1", "--delta", "1e-3"]
        status, _, err = run([*argv, "--out", out_file], capsys)
    finally:
        os.umask(old)
    assert status == 0, err
    assert out_file.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--seed", "-1"],
        ["audit", ADULT, "--seed", "-1"],
        ["release", ADULT, "--insecure-seed", "-1"],
        ["local", "evaluate", "--scenario", "city", "--mechanism", "rr", "--seed", "-1"],
        ["experiment", "run", "chen2023-fig2", "--seed", "-3"],
    ],
)
def test_negative_seed(argv, capsys):
    assert "non-negative" in one_error(*run(argv, capsys)[::2])


@pytest.mark.parametrize(
    ("mechanism", "eps", "word"),
    [
        ("expm-l", "1e-300", "too small"),
        ("dirm-l", "1e-300", "too small"),
        ("groupdp-l", "1e-300", "too small"),
        ("expm-l", "1e300", "too large"),
    ],
)
def test_tiny_and_huge_epsilon(mechanism, eps, word, capsys):
    argv = ["calibrate", MODEL, "--mechanism", mechanism, "--epsilon", eps]
    line = one_error(*run(argv, capsys)[::2])
    assert f"epsilon={float(eps)!r}" in line and word in line


def test_tiny_epsilon_release(tmp_path, capsys):
    cfg = adult_config(
        tmp_path, **{'name = "expm-g"': 'name = "expm-l"', "epsilon = 1.0": "epsilon = 1e-300"}
    )
    cfg.write_text(cfg.read_text().replace('calibration = "analytic"\n', ""))
    out_file = tmp_path / "r.json"
    line = one_error(*run(["release", cfg, "--out", out_file], capsys)[::2])
    assert "epsilon=1e-300 is too small" in line and not out_file.exists()


def test_oversized_k_and_sample_sizes_are_refused_before_allocating(tmp_path, capsys):
    argv = ["local", "evaluate", "--scenario", "city", "--mechanism", "tupling", "--k", "100000"]
    assert "k=100000" in one_error(*run(argv, capsys)[::2])
    cfg = adult_config(tmp_path, **{"n_samples = 1000": "n_samples = 100000000"})
    cfg.write_text(cfg.read_text().replace('method = "analytic"', 'method = "montecarlo"'))
    line = one_error(*run(["release", cfg], capsys)[::2])
    assert "n_samples=100000000" in line and "GiB" in line
    line = one_error(*run(["demo", "--n-samples", "100000000"], capsys)[::2])
    assert "n_samples=100000000" in line


def _wait_until_auditing(proc, timeout=120.0):
    """Wait until the child has loaded scikit-learn (imported lazily by the audit itself, for
    the gradient-boosting classifier the test asks for: the default logistic one is numpy)."""
    maps = Path(f"/proc/{proc.pid}/maps")
    start = time.monotonic()
    while time.monotonic() - start < timeout and proc.poll() is None:
        if not maps.exists():  # no procfs: give the imports ample time
            time.sleep(15)
            return
        if "sklearn" in maps.read_text(errors="replace"):
            time.sleep(2)  # well into the repetitions (minutes of work in all)
            return
        time.sleep(0.2)


def test_ctrl_c_during_a_long_command(tmp_path):
    """SIGINT in the middle of an audit: exit 130, one line, no file, no temporary file."""
    out_file = tmp_path / "audit.json"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "distpriv.cli", "audit", str(ADULT), "--repetitions", "1000",
         "--classifier", "gradient-boosting", "--out", str(out_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )  # fmt: skip
    _wait_until_auditing(proc)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["distpriv: interrupted; nothing was written"], err
    assert out == "" and list(tmp_path.iterdir()) == []


def test_nulls_in_the_released_table_are_one_line(tmp_path, capsys):
    import shutil

    import numpy as np
    import pandas as pd

    folder = tmp_path / "hospital"
    shutil.copytree(ROOT / "examples" / "hospital", folder)
    frame = pd.read_csv(folder / "release.csv")
    frame.loc[[1, 2, 3], "weight"] = np.nan
    frame.to_csv(folder / "release.csv", index=False)
    out_file = tmp_path / "r.json"
    line = one_error(*run(["release", folder / "hospital.toml", "--out", out_file], capsys)[::2])
    assert "weight" in line and "3" in line and not out_file.exists()


def test_a_sampled_view_mechanism_on_a_model_file_says_what_it_needs(capsys):
    argv = ["calibrate", MODEL, "--mechanism", "wasserstein", "--epsilon", "1"]
    line = one_error(*run(argv, capsys)[::2])
    assert "Monte Carlo samples" in line and "approx-wasserstein" not in line
