"""The library says what the CLI says: ``release_with_ledger`` takes every mechanism the CLI
takes (``auto`` included), and ``ReleaseReport.to_dict()`` has the layout of
``distpriv release --json``."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import distpriv as dp
from distpriv.cli import main
from distpriv.pipeline.ledger import Ledger

HOSPITAL = Path(__file__).resolve().parents[2] / "examples" / "hospital"
QUERY = {
    "avg_height": "avg(height)",
    "avg_weight": "avg(weight)",
    "avg_blood_pressure": "avg(blood_pressure)",
}


def _layout(obj, path=""):
    """Every key path of a JSON value (list items by their first element's keys)."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(f"{path}/{k}")
            out |= _layout(v, f"{path}/{k}")
    elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
        out |= _layout(obj[0], f"{path}[]")
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The hospital example with mechanism = "auto", released by the CLI and by
    ``release_with_ledger``, each into its own ledger (seeded: both NOT private)."""
    base = tmp_path_factory.mktemp("parity")
    shutil.copytree(HOSPITAL, base / "hospital")
    cfg = base / "hospital" / "hospital.toml"
    cfg.write_text(cfg.read_text().replace('name = "expm-g"', 'name = "auto"'))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        args = ["release", cfg, "--ledger", base / "cli.sqlite", "--insecure-seed", "1"]
        status = main([str(a) for a in [*args, "--json"]])
    out, err = out.getvalue(), err.getvalue()
    assert status == 0, err
    secret = dp.ProportionSecret("gender = 'female'", [0.5, 0.6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kwargs = {"model_data": pd.read_csv(HOSPITAL / "model.csv"), "mechanism": "auto"}
        kwargs |= {"epsilon": 1.0, "delta": 1e-3, "ledger": base / "lib.sqlite"}
        data = pd.read_csv(HOSPITAL / "release.csv")
        lib = [dp.release_with_ledger(data, QUERY, secret, rng=k, **kwargs) for k in (1, 2)]
    return json.loads(out), lib, base


def test_release_with_ledger_takes_auto(both):
    cli, lib, base = both
    first, second = lib
    chosen = first.report.mechanism.name
    assert chosen != "auto" and chosen == cli["mechanism"]["name"]
    entries = Ledger(base / "lib.sqlite").releases()
    assert [e.mechanism for e in entries] == [chosen, chosen]
    # The second release composes with the first: two releases, more than one alone.
    block = second.report.to_dict()["ledger"]
    assert block["recorded"] is True and block["n_releases"] == 2
    assert block["composed"]["epsilon"] > block["alone"]["epsilon"]


def test_to_dict_has_the_cli_json_layout(both):
    cli, lib, _ = both
    public = lib[0].report.to_dict()
    json.dumps(public, allow_nan=False)
    cli_keys = _layout(cli) - {"/provenance/seed"}  # the CLI's --insecure-seed, by name
    assert _layout(public) == cli_keys
    assert public["choice"] and public["ledger"]["n_releases"] == 1
    assert [s["name"] for s in public["statistics"]] == list(QUERY)


def test_release_without_a_ledger_says_so():
    secret = dp.ProportionSecret("gender = 'female'", [0.5, 0.6])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = dp.release(
            pd.read_csv(HOSPITAL / "release.csv"), QUERY, secret,
            model_data=pd.read_csv(HOSPITAL / "model.csv"), mechanism="expm-g",
            epsilon=1.0, delta=1e-3, rng=1,
        )  # fmt: skip
    public = rep.to_dict()
    assert public["kind"] == "release" and public["ledger"]["recorded"] is False
    assert public["mechanism"]["name"] == "expm-g" and public["choice"] is None
