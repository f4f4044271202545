"""`distpriv audit` shares its modelling and calibration work.

One model per modelling method, one set of table facts, and one calibration cache for
``auto``'s candidates and the named mechanisms together; the report is the one the
unshared path gives with the same seed.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import numpy as np
import pytest

from distpriv.accounting import calibration_cache as _calibration_cache
from distpriv.pipeline.commands import audit as audit_command
from distpriv.pipeline.commands.audit import run_audit

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "adult-income.toml"
# auto calibrates every registered mechanism; groupdp-g takes the table's facts as defaults.
NAMES = ["expm-g", "groupdp-g", "auto"]


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def _audit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_audit(CONFIG, mechanisms=NAMES, repetitions=1, seed=3)


def _comparable(public):
    out = dict(public)
    out["provenance"] = {k: v for k, v in public["provenance"].items() if k != "model_data_sha256"}
    return out


@pytest.fixture(scope="module")
def unshared():
    """The audit with every calibration in its own cache block (the path before sharing)."""
    mp = pytest.MonkeyPatch()
    mp.setattr(audit_command, "shared_calibration", contextlib.nullcontext)
    caches = _counting(mp, _calibration_cache, "CalibrationCache")
    try:
        outcome = _audit()
    finally:
        mp.undo()
    return outcome, len(caches)


def test_one_model_one_facts_one_calibration_cache_and_the_same_report(monkeypatch, unshared):
    facts = _counting(monkeypatch, audit_command, "engine_table_facts")
    models = _counting(monkeypatch, audit_command, "build_query_model")
    caches = _counting(monkeypatch, _calibration_cache, "CalibrationCache")
    outcome = _audit()
    assert len(facts) == 1  # groupdp-g's defaults and auto's candidates: the same facts
    assert len(models) == 1  # every mechanism here is calibrated on the analytic model
    assert len(caches) == 1
    base, unshared_caches = unshared
    assert unshared_caches > 1  # the check above can fail: unshared, each has its own
    # Bit for bit the same calibrations, hence the same releases, attacks and verdicts.
    assert _comparable(outcome.public) == _comparable(base.public)
    mine = {m.mechanism: m for m in outcome.report.mechanisms}
    theirs = {m.mechanism: m for m in base.report.mechanisms}
    assert list(mine) == list(theirs) and len(mine) == len(NAMES) + 1
    for name, m in mine.items():
        assert m.attacks == theirs[name].attacks


def test_shared_calibrations_equal_separate_ones():
    from distpriv.modeling import Query
    from distpriv.pipeline.stages.data import open_table
    from distpriv.pipeline.stages.steps import _config, _secret, _subset_size

    cfg = _config(CONFIG)
    query, secret, n = Query(cfg.query, ranges=cfg.ranges), _secret(cfg), _subset_size(cfg)
    table = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shared, _, _ = audit_command._audit_mechanisms(cfg, NAMES, table, query, secret, n)
        # Outside any shared block: every calibration computes everything itself.
        alone, _, _ = audit_command._calibrate_all(cfg, NAMES, table, query, secret, n)
    assert [m.name for m in shared] == [m.name for m in alone]
    for a, b in zip(shared, alone, strict=True):
        np.testing.assert_array_equal(a.noise_covariance, b.noise_covariance)
        assert a.guarantee == b.guarantee
