"""The pipeline's promises: what is public, what warns, where paths resolve, who decides.

A release you can publish: the public JSON carries no data-derived facts about the
modelling table; overlapping or too-small modelling tables warn; config paths resolve
against the config file; NULLs are an error or a documented drop; the registry alone
decides which model view a mechanism gets; cli.py stays small.
"""

from __future__ import annotations

import ast
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from distpriv.central import MECHANISMS, mechanism_info
from distpriv.pipeline import run_release

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "distpriv"
ADULT = ROOT / "examples" / "adult-income.toml"
HOSPITAL = ROOT / "examples" / "hospital"


def numbers(obj):
    """Every number in a JSON document (bools excluded)."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from numbers(v)
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        yield float(obj)


def keys(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from keys(v)


def quiet_release(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_release(*args, **kwargs)


def test_public_adult_release_has_no_stratum_size_moment_or_true_value():
    outcome = quiet_release(ADULT, include_true=True)
    public, private = outcome.public, outcome.private
    model = private["model"]
    assert public["kind"] == "release" and public["provenance"]["secure"] is True
    found = set(keys(public))
    for key in ("stratum_sizes", "means", "covariances", "true_values", "counts", "n_rows"):
        assert key not in found, key
    values = list(numbers(public))
    # No stratum size, no per-value mean or covariance entry, no true value appears.
    secret_facts = [
        *model["stratum_sizes"],
        *np.ravel(model["means"]),
        *np.ravel(model["covariances"]),
        *private["true_values"],
    ]
    for fact in secret_facts:
        assert not any(np.isclose(v, fact, rtol=1e-9, atol=0.0) for v in values), fact
    # ... while the private diagnostics, marked as such, have them.
    assert "PRIVATE" in private["private"] and len(private["true_values"]) == 5
    json.dumps(public, allow_nan=False)
    json.dumps(private, allow_nan=False)


def _hospital_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "elsewhere" / "hospital"
    shutil.copytree(HOSPITAL, dest)
    return dest / "hospital.toml"


def test_config_in_another_directory_finds_its_data(tmp_path, monkeypatch):
    config = _hospital_copy(tmp_path)
    monkeypatch.chdir(tmp_path)  # not the config's folder: model.csv is not here
    outcome = quiet_release(Path("elsewhere/hospital/hospital.toml"))
    assert outcome.private["data"] == str(config.parent.resolve() / "release.csv")
    assert len(outcome.public["statistics"]) == 3


def test_two_secure_releases_differ_and_seeded_ones_repeat(tmp_path):
    config = _hospital_copy(tmp_path)
    a, b = quiet_release(config), quiet_release(config)
    va = [s["value"] for s in a.public["statistics"]]
    assert va != [s["value"] for s in b.public["statistics"]]
    assert a.public["secure_noise"] is True and "seed" not in a.public["provenance"]
    c, d = quiet_release(config, insecure_seed=4), quiet_release(config, insecure_seed=4)
    assert c.public["statistics"] == d.public["statistics"]
    assert c.public["secure_noise"] is False and "NOT PRIVATE" in c.public["not_private"]
    # With the (default) ledger the fingerprints are keyed by the ledger's key: equal data,
    # equal fingerprints, so the ledger recognises the data.
    assert a.public["provenance"]["data_sha256"] == b.public["provenance"]["data_sha256"]
    # Without a ledger they are keyed with a per-release key: equal data, different hashes;
    # the curator, who keeps the key in the PRIVATE diagnostics, can check them.
    e, f = quiet_release(config, ledger=False), quiet_release(config, ledger=False)
    assert e.public["provenance"]["data_sha256"] != f.public["provenance"]["data_sha256"]
    assert (
        e.public["provenance"]["model_data_sha256"] != f.public["provenance"]["model_data_sha256"]
    )
    from distpriv.modeling.identity import multiset_fingerprint

    key = bytes.fromhex(e.private["identity_key"])
    released = pd.read_csv(config.parent / "release.csv")
    assert multiset_fingerprint(released, key=key) == e.public["provenance"]["data_sha256"]


def test_overlapping_modelling_table_warns_when_allowed(tmp_path):
    config = _hospital_copy(tmp_path)
    folder = config.parent
    model = pd.concat([pd.read_csv(folder / "release.csv"), pd.read_csv(folder / "model.csv")])
    model.to_csv(folder / "model.csv", index=False)
    with pytest.warns(dp.PrivacyLeakWarning, match="50 of the 50 released rows"):
        outcome = run_release(config, allow_overlap=True)
    assert outcome.private["rows_also_in_modelling_table"] == 50
    assert any("released rows also appear" in w for w in outcome.warnings)


def test_too_small_modelling_table_warns(tmp_path):
    config = _hospital_copy(tmp_path)
    folder = config.parent
    pd.read_csv(folder / "model.csv").iloc[:64].to_csv(folder / "model.csv", index=False)
    with pytest.warns(dp.PrivacyLeakWarning, match="too few rows"):
        run_release(config)


def test_chance_duplicates_do_not_warn(tmp_path):
    """Adult holds identical records by chance; one shared row among 100 does not warn."""
    from distpriv.pipeline import load_frame

    model, test = load_frame("adult:modeling"), load_frame("adult:test")
    seen = set(pd.util.hash_pandas_object(model, index=False))
    in_model = pd.util.hash_pandas_object(test, index=False).isin(seen).to_numpy()
    assert 1 <= in_model.sum() <= 20  # the split does share a few identical records
    subset = pd.concat([test[in_model].iloc[:1], test[~in_model].iloc[:99]])
    subset.to_csv(tmp_path / "d.csv", index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = run_release(ADULT, data=tmp_path / "d.csv")
    assert outcome.private["rows_also_in_modelling_table"] >= 1
    assert not [w for w in caught if issubclass(w.category, dp.PrivacyLeakWarning)]


def test_nulls_are_an_error_or_a_documented_drop(tmp_path):
    config = _hospital_copy(tmp_path)
    folder = config.parent
    frame = pd.read_csv(folder / "release.csv")
    frame.loc[[3, 7], "height"] = np.nan
    frame.to_csv(folder / "release.csv", index=False)
    with pytest.raises(dp.DistPrivError, match="height") as err:
        quiet_release(config)
    assert "2" in str(err.value)
    config.write_text(config.read_text().replace('missing = "error"', 'missing = "drop"'))
    with pytest.warns(dp.AssumptionWarning, match="removed 2 of the 50"):
        outcome = run_release(config)
    assert "missing" not in json.dumps(outcome.public)  # the count is data: private
    assert json.dumps(outcome.private["missing"]).count("2") >= 1


def test_nulls_in_the_modelling_table(tmp_path):
    config = _hospital_copy(tmp_path)
    folder = config.parent
    frame = pd.read_csv(folder / "model.csv")
    frame.loc[:4, "weight"] = np.nan
    frame.to_csv(folder / "model.csv", index=False)
    with pytest.raises(dp.DistPrivError, match="weight"):
        quiet_release(config)


def _calls_to_sampled(tree: ast.AST) -> list[int]:
    """``.to_sampled()`` calls, except in functions of the data-level check (``*verify*``),
    which take resampled f_theta by contract rather than a mechanism's view."""
    skip = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and "verify" in fn.name:
            skip |= {id(n) for n in ast.walk(fn)}
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "to_sampled"
        and id(n) not in skip
    ]


def _mechanism_name_tests(tree: ast.AST) -> list[int]:
    """Lines that name a samples-view mechanism, or test for a mechanism whose view or
    default options the registry decides (``name in (...)``, ``name.startswith(...)``)."""
    sampled = {n for n in MECHANISMS if mechanism_info(n).model_view == "samples"}
    names = {n for n in MECHANISMS if mechanism_info(n).model_view != "gaussian"}
    names |= {n for n in MECHANISMS if mechanism_info(n).defaults is not None}
    out = set()
    for n in ast.walk(tree):
        named = isinstance(n, ast.Constant) and n.value in sampled
        compared = isinstance(n, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value in names for c in ast.walk(n)
        )
        if (
            named
            or compared
            or (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "startswith"
                and any(
                    isinstance(a, ast.Constant) and any(m.startswith(str(a.value)) for m in names)
                    for a in n.args
                )
            )
        ):
            out.add(n.lineno)
    return sorted(out)


def test_no_caller_outside_the_registry_decides_a_model_view():
    """Only central/ (the registry) turns a model into the view a mechanism needs."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "central":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(SRC)
        offenders += [f"{where}:{ln} to_sampled()" for ln in _calls_to_sampled(tree)]
        offenders += [f"{where}:{ln} mechanism name" for ln in _mechanism_name_tests(tree)]
    assert not offenders, offenders


def test_the_view_checker_finds_a_hand_made_list():
    tree = ast.parse(
        "SAMPLE = ('wasserstein',)\n"
        "target = model.to_sampled() if name in SAMPLE else m\n"
        "if name.startswith('groupdp'):\n    pass\n"
        "def _verify(m):\n    return m.to_sampled()\n"
        "opts = {} if name != 'groupdp-g' else d\n"
        "weights = w if name == 'optimal-g' else None\n"
    )
    assert _calls_to_sampled(tree) == [2]
    assert _mechanism_name_tests(tree) == [1, 3, 7]


def test_registry_owns_views_and_defaults():
    views = {n: mechanism_info(n).model_view for n in MECHANISMS}
    assert views["wasserstein"] == views["approx-wasserstein"] == "samples"
    assert views["apmqm"] == "network" and views["eigm"] == "gaussian"
    facts = dp.central.TableFacts(100, (73.0, 1.0), ("mean", "sum"))
    opts = dp.central.default_options("groupdp-g", facts)
    assert opts["group_size"] == 100 and list(opts["sensitivities"]) == [0.73, 1.0]
    assert dp.central.default_options("eigm", facts) == {}


def test_cli_is_small():
    lines = (SRC / "cli.py").read_text(encoding="utf-8").count("\n")
    assert lines <= 350, lines
