"""The data-level check's memory: resampled datasets are drawn and counted in batches of
``--batch-mib`` or ``[verify] batch_mib`` (so its memory does not grow with the sample
budget); a refusal happens only when one batch of the smallest size cannot fit, and names the
flag, its key, and the configuration keys that set each dataset's size (``[model]
subset_size``, the statistics in ``[query]``).
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
from distpriv.pipeline.commands.verify import (
    MIN_VERIFY_BATCH,
    VERIFY_BATCH_MIB,
    VERIFY_MAX_SAMPLES,
)
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.plan import VerifySpec

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "adult-income.toml"


def _per_dataset(values: int, n: int, m: int) -> float:
    """Bytes per resampled dataset: row indices and statistics (n + m values) in two copies,
    for each value of the secret."""
    return values * (n + m) * 8.0 * 2


def test_a_thousand_statistics_of_a_thousand_rows_are_not_refused():
    # The old check held every look's datasets: 80,000 per value at 170 statistics was
    # refused for memory. Batched, the budget no longer matters.
    sizes = verify_command._look_sizes(VERIFY_MAX_SAMPLES)
    for budget in (VERIFY_MAX_SAMPLES, 10 * VERIFY_MAX_SAMPLES):
        batch = verify_command._verify_batch(
            2, 1000, 1000, verify_command._look_sizes(budget), VerifySpec(budget)
        )
        assert batch >= MIN_VERIFY_BATCH
        assert batch * _per_dataset(2, 1000, 1000) <= VERIFY_BATCH_MIB * 1024**2
        assert (batch + 1) * _per_dataset(2, 1000, 1000) > VERIFY_BATCH_MIB * 1024**2
    smaller = verify_command._verify_batch(2, 1000, 1000, sizes, VerifySpec(batch_mib=16))
    assert smaller == int(16 * 1024**2 // _per_dataset(2, 1000, 1000))


def test_a_batch_that_cannot_fit_names_the_flag_and_the_keys():
    sizes = verify_command._look_sizes(VERIFY_MAX_SAMPLES)
    # 10^5 rows: 100 datasets per value need more than the default 256 MiB.
    with pytest.raises(sources.ParameterError) as info:
        verify_command._verify_batch(2, 10**5, 5, sizes, VerifySpec())
    msg = str(info.value)
    assert "--batch-mib" in msg and "[verify] batch_mib" in msg
    assert "[model] subset_size" in msg and "[query]" in msg
    assert f"{10**5} rows each" in msg and "5 statistics in [query]" in msg
    need = int(re.search(r"--batch-mib (\d+) or more", msg).group(1))
    assert need * 1024**2 >= MIN_VERIFY_BATCH * _per_dataset(2, 10**5, 5)
    # The suggested size is enough.
    assert verify_command._verify_batch(2, 10**5, 5, sizes, VerifySpec(batch_mib=need)) >= 100
    # release --verify has no flag of its own: it names the configuration key.
    with pytest.raises(sources.ParameterError, match=rf"set \[verify\] batch_mib = {need} or"):
        verify_command._verify_batch(2, 10**5, 5, sizes, VerifySpec(), "release --verify")
    # 10^7 rows: no batch fits the memory limit at all; the dataset size must shrink.
    with pytest.raises(sources.ParameterError) as info:
        verify_command._verify_batch(2, 10**7, 5, sizes, VerifySpec())
    assert "even 100 datasets" in str(info.value) and "[model] subset_size" in str(info.value)


def test_choosing_the_sets_must_fit_the_memory_limit(monkeypatch):
    # The sets (about 458 MiB at 1,000 statistics) and a default batch: above 700 MiB.
    monkeypatch.setattr(sources, "MEMORY_LIMIT_BYTES", 700 * 1024**2)
    sizes = verify_command._look_sizes(VERIFY_MAX_SAMPLES)
    with pytest.raises(sources.ParameterError, match="choose the sets") as info:
        verify_command._verify_batch(2, 1000, 1000, sizes, VerifySpec())
    fits = int(re.search(r"batch_mib\) to (\d+) or less", str(info.value)).group(1))
    assert verify_command._verify_batch(2, 1000, 1000, sizes, VerifySpec(batch_mib=fits)) > 0


def test_cli_batches_and_refuses_with_one_line(tmp_path, capsys):
    cfg = tomllib.loads(CONFIG.read_text())
    values, n, m = len(cfg["secret"]["values"]), cfg["model"]["subset_size"], len(cfg["query"])
    # Room for 300 datasets per value per batch: the check runs with it and says so.
    mib = 300 * _per_dataset(values, n, m) / 1024**2
    status, stdout, err = run(
        ["verify", CONFIG, "--max-samples", 2000, "--batch-mib", f"{mib:.6f}", "--json"], capsys
    )
    assert status in (0, 1), err
    check = json.loads(stdout)["verification"]
    assert check["n_samples"] == 2000
    assert any("batches of at most 300" in note for note in check["notes"])
    # Too small for the smallest batch: one line naming the flag.
    status, stdout, err = run(["verify", CONFIG, "--batch-mib", f"{mib / 10:.6f}"], capsys)
    one_line_error(status, err, "--batch-mib", "[model] subset_size")
    status, _, err = run(["verify", CONFIG, "--batch-mib", "-1"], capsys)
    one_line_error(status, err, "--batch-mib")


def _with_verify(tmp_path: Path, table: str) -> Path:
    """The example configuration with a ``[verify]`` table (its sources are built in)."""
    path = tmp_path / "cfg.toml"
    path.write_text(CONFIG.read_text() + "\n[verify]\n" + table + "\n")
    return path


def test_the_verify_table_is_read_into_the_plan(tmp_path):
    plan = load_release_config(
        _with_verify(tmp_path, "max_samples = 4000\nearly_stop = false\nbatch_mib = 12.5")
    ).plan
    assert plan.verify == VerifySpec(max_samples=4000, early_stop=False, batch_mib=12.5)
    assert load_release_config(CONFIG).plan.verify == VerifySpec()
    # A flag given beside the key wins; an absent flag keeps the key.
    assert plan.verify.overridden(batch_mib=3.0) == VerifySpec(4000, False, 3.0)
    assert plan.verify.overridden() == plan.verify


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("max_samples = 999", "max_samples"),
        ("max_samples = 2.5e4", "max_samples"),
        ("max_samples = true", "max_samples"),
        ("early_stop = 1", "early_stop"),
        ("batch_mib = 0", "batch_mib"),
        ("batch_mib = -3", "batch_mib"),
        ("batch_mib = nan", "batch_mib"),
        ("batch_mib = inf", "batch_mib"),
        ("batch_mib = false", "batch_mib"),
        ("batch = 4", "batch"),
    ],
)
def test_a_bad_verify_key_is_refused_naming_it(tmp_path, capsys, line, key):
    path = _with_verify(tmp_path, line)
    status, _, err = run(["verify", path], capsys)
    one_line_error(status, err, "[verify]", key)


def test_release_verify_reads_the_batch_from_the_configuration(tmp_path, capsys):
    cfg = tomllib.loads(CONFIG.read_text())
    values, n, m = len(cfg["secret"]["values"]), cfg["model"]["subset_size"], len(cfg["query"])
    mib = 300 * _per_dataset(values, n, m) / 1024**2
    # The key alone bounds verify's batches (no flag), as the flag does.
    path = _with_verify(tmp_path, f"max_samples = 2000\nbatch_mib = {mib:.6f}")
    status, stdout, err = run(["verify", path, "--json"], capsys)
    assert status in (0, 1), err
    check = json.loads(stdout)["verification"]
    assert check["n_samples"] == 2000
    assert any("batches of at most 300" in note for note in check["notes"])
    # release --verify has no flag for it: a batch too small for the smallest is refused
    # before any noise is drawn or file written, naming the key.
    small = _with_verify(tmp_path, f"batch_mib = {mib / 10:.6f}")
    out = tmp_path / "out.json"
    status, _, err = run(
        ["release", small, "--verify", "--no-ledger", "--out", out, "--insecure-seed", "1"],
        capsys,
    )
    one_line_error(status, err, "[verify] batch_mib")
    assert not out.exists()
