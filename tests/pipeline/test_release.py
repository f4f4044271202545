"""distpriv.release (library) and `distpriv release` / `distpriv demo` end to end."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from cli_helpers import run

ROOT = Path(__file__).resolve().parents[2]
ADULT_CONFIG = ROOT / "examples" / "adult-income.toml"


def synthetic(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "hours": rng.integers(10, 60, n),
            "sex": rng.choice(["Female", "Male"], n),
            "rich": rng.random(n) < 0.4,
        }
    )


QUERY = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')", "avg_hours": "avg(hours)"}
SECRET = dp.ProportionSecret("rich", values=[0.3, 0.5])


# Far-apart values: the model alone cannot hide them, so the mechanism must add noise.
WIDE = dp.ProportionSecret("rich", values=[0.1, 0.9])


def _release(data, model_data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.AssumptionWarning)
        return dp.release(
            data, QUERY, WIDE, model_data=model_data, mechanism="expm-g", epsilon=1.0,
            delta=1e-3, **kw,
        )  # fmt: skip


def test_release_library():
    data, model_data = synthetic(20, seed=1), synthetic(400)
    a = _release(data, model_data, rng=5)
    b = _release(data, model_data, rng=5)
    np.testing.assert_array_equal(a.release.value, b.release.value)  # seeded: simulation
    assert not a.release.secure
    c, d = _release(data, model_data), _release(data, model_data)  # secure, fresh noise
    assert c.release.secure and not np.array_equal(c.release.value, d.release.value)
    assert a.release.value.shape == (3,)
    np.testing.assert_allclose(
        a.true_value, [data.age.mean(), (data.sex == "Female").sum(), data.hours.mean()]
    )
    d = a.to_dict()
    assert "true_values" not in d and "model" not in d and d["mechanism"]["name"] == "expm-g"
    private = a.diagnostics(include_true=True)
    assert private["true_values"] == pytest.approx(list(a.true_value))
    assert private["model"]["stratum_sizes"] == [
        int(model_data.rich.sum()),
        400 - int(model_data.rich.sum()),
    ]
    json.dumps(d, allow_nan=False)
    with pytest.raises(dp.ParameterError, match="subset_size=30"):
        _release(data, model_data, subset_size=30)


def test_wasserstein_release_uses_the_samples_view():
    """The registry, not the caller, decides: method='analytic' still gets samples."""
    data, model_data = synthetic(20, seed=1), synthetic(400)
    r = dp.release(
        data, QUERY, SECRET, model_data=model_data, mechanism="wasserstein", epsilon=1.0,
        n_samples=200, rng=2,
    )  # fmt: skip
    assert r.model.method == "montecarlo" and r.model.samples[0].shape == (200, 3)
    assert r.mechanism.diagnostics["sensitivity_winf"] > 0


def test_cli_example_config(tmp_path, capsys):
    out_file, private_file = tmp_path / "r.json", tmp_path / "p.json"
    argv = ["release", ADULT_CONFIG, "--json", "--out", out_file, "--private-out", private_file]
    status, out, _ = run(argv, capsys)
    assert status == 0
    report = json.loads(out)
    assert report["kind"] == "release" and len(report["statistics"]) == 5
    assert report["statistics"][0]["name"] == "avg_age"
    assert "seed" not in report["provenance"] and '"seed"' not in json.dumps(report)
    assert json.loads(out_file.read_text()) == report
    private = json.loads(private_file.read_text())
    assert private["model"]["counts"] == [45, 55] and "PRIVATE" in private["private"]
    assert "true_values" not in private
    # Two secure releases of the shipped config differ.
    status, out2, _ = run(["release", ADULT_CONFIG, "--json"], capsys)
    values = [s["value"] for s in report["statistics"]]
    assert [s["value"] for s in json.loads(out2)["statistics"]] != values


def test_insecure_seed_is_reproducible_and_not_private(tmp_path, capsys):
    data = tmp_path / "d.csv"
    from distpriv.pipeline import load_frame

    load_frame("adult:test").iloc[:100].to_csv(data, index=False)
    argv = ["release", ADULT_CONFIG, "--data", data, "--json", "--insecure-seed", "9"]
    status, out, _ = run(argv, capsys)
    assert status == 0
    a = json.loads(out)
    status, out, _ = run(argv, capsys)
    b = json.loads(out)
    assert [s["value"] for s in a["statistics"]] == [s["value"] for s in b["statistics"]]
    assert a["secure_noise"] is False and a["provenance"]["seed"] == 9
    assert "NOT PRIVATE" in a["not_private"]
    status, out, _ = run([*argv[:-3], "--insecure-seed", "9"], capsys)
    assert status == 0 and "NOT PRIVATE" in out


def write_config(path, *, model, release=None, query=None, secret=None, extra=""):
    query = query or {"avg_age": "avg(age)"}
    secret = secret or ("rich", [0.3, 0.5])
    lines = ["[data]", f"model = '{model}'"]
    if release:
        lines.append(f"release = '{release}'")
    lines += ["[query]"] + [f'{k} = "{v}"' for k, v in query.items()]
    lines += ["[secret]", f'predicate = "{secret[0]}"', f"values = {secret[1]}"]
    lines += [
        "[model]",
        "subset_size = 20",
        "[mechanism]",
        "name = 'eigm'",
        "epsilon = 1.0",
        "delta = 1e-3",
    ]
    path.write_text("\n".join(lines) + "\n" + extra)


def csv(path, frame):
    frame.to_csv(path, index=False)
    return path


CASES = {
    "unknown column": dict(query={"a": "avg(agee)"}, match="agee"),
    "invalid SQL": dict(query={"a": "avg(age"}, match="statistic 'a'"),
    "predicate no row satisfies": dict(secret=("hours > 1000", [0.3, 0.5]), match="no row"),
    "p outside [0, 1]": dict(
        secret=("rich", [0.3, 1.5]), match="fractions of the rows in \\[0, 1\\]"
    ),
    "subset larger than stratum": dict(secret=("age > 78", [0.3, 0.5]), match="needs .* rows"),
    "NaN in a statistic": dict(
        query={"a": "avg(CASE WHEN age > 40 THEN NULL ELSE age END)"}, match="NULL"
    ),
    "config key that does not exist": dict(
        extra="[output]\ninclude_truth = true\n", match="unknown key.*include_truth"
    ),
    "a seed for the release": dict(extra="", match="'seed' is not accepted", seed=True),
    "unknown mechanism option": dict(extra="", match="unknown option", mech_opt=True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_release_bad_input(case, tmp_path, capsys):
    spec = dict(CASES[case])
    match = spec.pop("match")
    mech_opt = spec.pop("mech_opt", False)
    seed = spec.pop("seed", False)
    model = csv(tmp_path / "model.csv", synthetic(400))
    data = csv(tmp_path / "data.csv", synthetic(20, seed=3))
    cfg = tmp_path / "c.toml"
    write_config(cfg, model=model, **spec)
    if mech_opt:
        cfg.write_text(cfg.read_text().replace("delta = 1e-3", "delta = 1e-3\nsigma = 2"))
    if seed:
        cfg.write_text("seed = 2023\n" + cfg.read_text())
    out_file = tmp_path / "out.json"
    status, _, err = run(["release", cfg, "--data", data, "--out", out_file], capsys)
    assert status == 2, err
    errors = [ln for ln in err.splitlines() if ln.startswith("distpriv: error:")]
    assert len(errors) == 1 and "Traceback" not in err
    assert re.search(match, errors[0]), errors[0]
    assert not out_file.exists()


def test_cli_release_empty_table(tmp_path, capsys):
    model = csv(tmp_path / "model.csv", synthetic(400))
    data = csv(tmp_path / "data.csv", synthetic(20, seed=3))
    empty = csv(tmp_path / "empty.csv", synthetic(400).iloc[:0])
    cfg = tmp_path / "c.toml"
    write_config(cfg, model=empty)
    status, _, err = run(["release", cfg, "--data", data], capsys)
    assert status == 2 and "no rows" in err
    write_config(cfg, model=model)
    status, _, err = run(["release", cfg, "--data", model], capsys)
    assert status == 2 and "data has 400 rows but subset_size=20" in err
    status, _, err = run(["release", cfg], capsys)
    assert status == 2 and "no table to release" in err
    status, _, err = run(["release", cfg, "--data", tmp_path / "nope.csv"], capsys)
    assert status == 2 and "--data: data file not found" in err


def test_cli_demo_json(tmp_path, capsys):
    out_file = tmp_path / "demo.json"
    status, out, _ = run(["demo", "--json", "--n-samples", "200", "--out", out_file], capsys)
    assert status == 0
    report = json.loads(out)
    assert report["kind"] == "demo" and report["simulation"] is True
    rows = {r["mechanism"]: r for r in report["rows"]}
    assert set(rows) == set(dp.MECHANISMS)
    assert 4.2 <= report["mean_difference_l2"] <= 4.4
    # Measured error agrees with the expected one (5 standard errors).
    for r in rows.values():
        if r["applicable"]:
            assert abs(r["measured_l2_error"] - r["expected_l2_error"]) < 5 * r["measured_l2_se"]
    # Group DP needs an order of magnitude more noise than the distribution-privacy ones.
    assert rows["groupdp-g"]["expected_l2_error"] > 10 * rows["expm-g"]["expected_l2_error"]
    assert rows["daum"]["expected_l2_error"] < rows["expm-g"]["expected_l2_error"]
    assert out_file.exists()
