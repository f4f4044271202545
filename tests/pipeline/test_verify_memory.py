"""The data-level check's memory refusal names what bounds it: ``distpriv verify``'s own
flag (``--max-samples``, with a budget that fits) and the configuration key that sets each
dataset's size (``[model] subset_size``); ``release --verify`` points to ``distpriv verify``.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

import distpriv.pipeline.stages.data as sources
from cli_helpers import one_line_error, run
from distpriv.pipeline.commands import verify as verify_command
from distpriv.pipeline.commands.verify import VERIFY_MAX_SAMPLES, VERIFY_SAMPLES

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "adult-income.toml"


def _per_dataset() -> float:
    """Bytes per resampled dataset of the example's check, from the configuration itself:
    row indices and statistics (n + m values) in two copies, for each value of the secret."""
    cfg = tomllib.loads(CONFIG.read_text())
    n, m = cfg["model"]["subset_size"], len(cfg["query"])
    return len(cfg["secret"]["values"]) * (n + m) * 8.0 * 2


def _limit_for(batch_fits: int) -> float:
    # Room for `batch_fits` datasets per value at once, not for twice as many.
    return 1.5 * batch_fits * _per_dataset()


def test_verify_names_its_flag_the_key_and_a_budget_that_fits(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sources, "MEMORY_LIMIT_BYTES", _limit_for(2000))
    out = tmp_path / "report.json"
    status, stdout, err = run(["verify", CONFIG, "--out", out], capsys)
    line = one_line_error(status, err, "--max-samples", "[model] subset_size", "GiB")
    assert stdout == "" and not out.exists()
    # The default budget's largest look draws VERIFY_MAX_SAMPLES / 2 datasets at once.
    assert f"{VERIFY_MAX_SAMPLES // 2} resampled datasets per value" in line
    suggested = int(re.search(r"--max-samples (\d+)", line).group(1))
    assert 1000 <= suggested < VERIFY_SAMPLES
    # The suggestion is honest: that budget runs (one look of `suggested` datasets, which
    # fit), and twice it would not have.
    status, stdout, err = run(["verify", CONFIG, "--max-samples", suggested, "--json"], capsys)
    assert status in (0, 1), err
    assert json.loads(stdout)["verification"]["n_samples"] == suggested
    status, _, err = run(["verify", CONFIG, "--max-samples", 2 * suggested], capsys)
    one_line_error(status, err, "--max-samples", "GiB")


def test_release_verify_points_to_distpriv_verify(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sources, "MEMORY_LIMIT_BYTES", _limit_for(2000))
    out = tmp_path / "public.json"
    status, stdout, err = run(
        ["release", CONFIG, "--verify", "--no-ledger", "--out", out, "--insecure-seed", 1],
        capsys,
    )
    one_line_error(status, err, "release --verify", "distpriv verify", "--max-samples")
    assert "[model] subset_size" in err and stdout == "" and not out.exists()


@pytest.mark.parametrize("command", ["verify", "release --verify"])
def test_no_budget_fits_says_so(command):
    with pytest.raises(sources.ParameterError) as info:
        verify_command._check_verify_memory(2, 10**7, 5, VERIFY_MAX_SAMPLES, command)
    msg = str(info.value)
    assert "smallest budget (1000) does not fit" in msg and "[model] subset_size" in msg
    assert f"{10**7} rows each" in msg and "5 statistics in [query]" in msg
