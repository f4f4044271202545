"""distpriv.local.evaluate and ``distpriv local evaluate``: reports, JSON, one-line errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cli_helpers import run
from distpriv.datasets.scenarios import adult_scenario
from distpriv.errors import ParameterError
from distpriv.local import MECHANISM_NAMES, LocalEvaluation, build_mechanism, evaluate


@pytest.fixture(scope="module")
def adult():
    return adult_scenario(seed=0)


@pytest.mark.parametrize("name", MECHANISM_NAMES)
def test_evaluate_every_mechanism(adult, name):
    rep = evaluate(adult, name, pair=1, n_samples=5_000, rng=3)
    assert isinstance(rep, LocalEvaluation)
    assert rep.pair == ("<=50K", ">50K") and rep.mechanism == name
    assert rep.epsilon_low <= rep.epsilon <= rep.epsilon_high
    assert set(rep.expected_loss) == {"<=50K", ">50K", "mean"}
    assert 0.0 <= rep.attack["success_rate"] <= 1.0
    d = rep.to_dict()
    json.dumps(d, allow_nan=False)  # JSON-safe
    assert d["divergences"]["worst"]["tv"] >= 0
    if name == "tupling":
        assert rep.method == "monte-carlo" and rep.guarantee["theorem"].endswith("Thm 3")
    elif name == "rr":
        assert rep.guarantee["theorem"].endswith("Thm 1") and rep.epsilon <= 1.0


def test_evaluate_matches_the_library(adult):
    rep = evaluate(adult, "pl", epsilon=0.7)
    from distpriv.local import distp_epsilon

    mech = build_mechanism("pl", adult, epsilon=0.7)
    lam0, lam1 = adult.distributions["male"], adult.distributions["female"]
    assert rep.epsilon == pytest.approx(distp_epsilon(mech, lam0, lam1, 1e-3))
    assert rep.expected_loss["male"] == pytest.approx(mech.expected_loss(lam0))


def test_evaluate_bad_parameters(adult):
    with pytest.raises(ParameterError, match="sigma does not apply"):
        evaluate(adult, "rr", sigma=1.0)
    with pytest.raises(ParameterError, match="mechanism must be one of"):
        evaluate(adult, "laplace")
    with pytest.raises(ParameterError, match="k must be >= 1"):
        evaluate(adult, "tupling", k=0)
    with pytest.raises(ParameterError, match="radius must be >= 0"):
        evaluate(adult, "rl", radius=-1.0)
    with pytest.raises(ParameterError, match="delta must be < 1"):
        evaluate(adult, "rr", delta=1.5)


def test_cli_json(capsys, tmp_path):
    target = tmp_path / "report.json"
    argv = [
        "local", "evaluate", "--scenario", "adult", "--mechanism", "tupling", "--k", "5",
        "--radius", "2", "--epsilon", "0.5", "--samples", "20000", "--json",
    ]  # fmt: skip
    status, out, err = run([*argv, "--out", str(target)], capsys)
    assert status == 0, err
    rep = json.loads(out)
    assert rep["mechanism"] == "tupling" and rep["params"]["k"] == 5 and rep["seed"] == 0
    lo, hi = rep["epsilon_interval"]
    assert lo <= rep["epsilon"] <= hi and math.isfinite(hi)
    assert json.loads(target.read_text()) == rep
    # Seeded: the same command gives the same numbers.
    _, again, _ = run(argv, capsys)
    assert json.loads(again)["epsilon"] == rep["epsilon"]


def test_cli_table(capsys):
    status, out, _ = run(
        [
            "local",
            "evaluate",
            "--scenario",
            "city",
            "--mechanism",
            "coupling",
            "--pair",
            "male,female",
        ],
        capsys,
    )
    assert status == 0
    assert "DistP" in out and "expected loss" in out and "attack success" in out
    assert "Kawamoto & Murakami 2019b, Thm 3" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mechanism", "tupling", "--k", "0"], "k must be >= 1"),
        (["--mechanism", "rl", "--radius", "-1"], "radius must be >= 0"),
        (["--mechanism", "rr", "--sigma", "1"], "sigma does not apply"),
        (["--mechanism", "rr", "--pair", "x,y"], "pair must name two of"),
        (["--mechanism", "rr", "--delta", "2"], "delta must be < 1"),
        (["--mechanism", "nope"], "mechanism must be one of"),
        (["--mechanism", "rr", "--epsilon", "abc"], "not a number"),
        (["--scenario", "manhattan", "--mechanism", "rr"], "scenario must be one of"),
        (["--mechanism", "rr", "--pair", "1,2,3"], "two names"),
    ],
)
def test_cli_bad_input_is_one_line(capsys, args, message):
    scenario = ["--scenario", "adult"] if "--scenario" not in args else []
    status, out, err = run(["local", "evaluate", *scenario, *args], capsys)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("distpriv: error:") and message in err
    assert "Traceback" not in err


def test_evaluate_coupling_without_estimates_is_exact(adult):
    from distpriv.local import LocalScenario

    bare = LocalScenario("bare", "t", adult.domain, dict(adult.distributions), adult.pairs)
    rep = evaluate(bare, "coupling")
    assert rep.epsilon == pytest.approx(0.0, abs=1e-9)
    assert any("exact knowledge" in n for n in rep.notes)
    assert np.isfinite(rep.expected_loss["mean"])
