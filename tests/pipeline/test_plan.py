"""The release plan: one typed home for every setting, read once from the configuration.

Checks that (1) the plan's defaults are the library's own (model_query, calibrate, the
population set), so a release configured by TOML and one made by keyword arguments agree;
(2) the configuration's raw tables are read in one module only (a scan of the source);
(3) the plan reads every key of the example configurations as the file says; (4) the one
builder of query models gives the library's :func:`distpriv.model_query` for every option.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import distpriv as dp
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.plan import (
    DEFAULT_BETA,
    DEFAULT_BOOTSTRAP,
    DEFAULT_METHOD,
    DEFAULT_MISSING,
    DEFAULT_N_SAMPLES,
    DEFAULT_POPULATION_SET,
    ModelSpec,
)
from distpriv.pipeline.stages.model import build_query_model

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "distpriv"
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.toml") if "[data]" in p.read_text())


def test_plan_defaults_are_the_librarys():
    from distpriv.modeling.bootstrap import DEFAULT_BOOTSTRAP as LIB_BOOTSTRAP
    from distpriv.population import DEFAULT_BETA as LIB_BETA
    from distpriv.population import selected_set

    sig = inspect.signature(dp.model_query).parameters
    assert sig["method"].default == DEFAULT_METHOD
    assert sig["n_samples"].default == DEFAULT_N_SAMPLES
    assert sig["missing"].default == DEFAULT_MISSING
    assert sig["population"].default is False
    assert LIB_BOOTSTRAP == DEFAULT_BOOTSTRAP
    assert LIB_BETA == DEFAULT_BETA
    assert selected_set() == DEFAULT_POPULATION_SET


# A raw table of the configuration read outside config.py: `cfg.model.get(`, `cfg.ledger[`,
# `cfg.options.get(`, `cfg.audit.get(` and the like, under any variable name bound to them.
_RAW = re.compile(r"\.(model|ledger|options|audit)(\.get\(|\[)")


def test_raw_configuration_is_read_only_in_config_py():
    offenders = []
    for path in sorted((SRC / "pipeline").rglob("*.py")):
        if path.name in {"config.py"}:
            continue
        text = path.read_text(encoding="utf-8")
        for lineno, line in enumerate(text.splitlines(), 1):
            if re.search(r"\bcfg\b|\bconfig\b", line) and _RAW.search(line):
                offenders.append(f"{path.relative_to(SRC)}:{lineno}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_plan_reads_the_file_as_written(path):
    import tomllib

    raw = tomllib.loads(path.read_text())
    plan = load_release_config(path).plan
    model = raw["model"]
    assert plan.model.subset_size == model["subset_size"]
    assert plan.model.method == model.get("method", "analytic")
    assert plan.model.n_samples == model.get("n_samples", 1000)
    assert plan.model.seed == model.get("seed", 0)
    assert plan.model.population == model.get("population", False)
    boot = model.get("bootstrap", 50)
    assert plan.model.bootstrap == (None if boot == "none" else boot)
    mech = raw["mechanism"]
    assert plan.calibration.mechanism == mech["name"]
    assert plan.calibration.epsilon == mech["epsilon"]
    assert plan.calibration.delta == mech.get("delta", 0.0)
    assert plan.calibration.population_set == mech.get("population_set", "box")
    beta = mech.get("beta", 0.05)
    assert plan.calibration.beta == (None if beta == "none" else beta)
    rest = set(mech) - {"name", "epsilon", "delta", "beta", "population_set"}
    assert set(plan.calibration.options) == rest
    assert plan.ledger.enabled == raw.get("ledger", {}).get("enabled", True)


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 600
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "hours": rng.gamma(4.0, 10.0, n),
            "rich": rng.random(n) < 0.4,
        }
    )


SPECS = [
    ModelSpec(subset_size=50),
    ModelSpec(subset_size=50, method="montecarlo", n_samples=200, seed=3),
    ModelSpec(subset_size=50, population=True),
    ModelSpec(subset_size=50, method="montecarlo", n_samples=200, seed=5, bootstrap=None),
    ModelSpec(subset_size=40, method="montecarlo", n_samples=100, seed=7, missing="drop"),
]


@pytest.mark.parametrize("spec", SPECS, ids=repr)
def test_the_one_builder_is_model_query_with_every_option(spec):
    frame = _table(1)
    query = dp.Query({"avg_age": "avg(age)", "avg_hours": "avg(hours)"})
    secret = dp.ProportionSecret("rich", values=[0.3, 0.5])
    ours = build_query_model(spec, frame, query, secret)
    ref = dp.model_query(
        frame,
        query,
        secret,
        subset_size=spec.subset_size,
        method=spec.method,
        n_samples=spec.n_samples,
        rng=spec.seed,
        missing=spec.missing,
        population=spec.population,
        bootstrap=spec.bootstrap,
    )
    np.testing.assert_array_equal(ours.means, ref.means)
    np.testing.assert_array_equal(ours.covariances, ref.covariances)
    assert (ours.uncertainty is None) == (ref.uncertainty is None)
    if spec.method == "montecarlo":
        np.testing.assert_array_equal(ours.to_sampled().samples[0], ref.to_sampled().samples[0])


def test_samples_view_mechanisms_get_monte_carlo():
    spec = ModelSpec(subset_size=10)
    assert spec.for_mechanism("wasserstein").method == "montecarlo"
    assert spec.for_mechanism("eigm") == spec
    assert replace(spec, method="montecarlo").for_mechanism("eigm").method == "montecarlo"


def test_the_ledgers_joint_model_is_built_like_the_release(tmp_path):
    """The ledger composes on a joint model built with the release's own specification:
    with ``missing="drop"`` and NULLs in a statistic's column of the modelling table, the
    second release composes (the joint model drops them as the release's model did) and
    its guarantee agrees with the stacked model built here by the library itself."""
    from distpriv.accounting import gaussian_pair_epsilon
    from distpriv.pipeline import release_with_ledger

    frame = _table(3)
    frame.loc[frame.index[::37], "hours"] = np.nan  # NULLs in a statistic's column
    released = _table(4).iloc[:50].reset_index(drop=True)
    query = {"avg_age": "avg(age)", "avg_hours": "avg(hours)"}
    secret = dp.ProportionSecret("rich", values=[0.3, 0.5])
    kw = dict(model_data=frame, mechanism="expm-g", epsilon=1.0, delta=1e-3, missing="drop")
    path = tmp_path / "l.db"
    release_with_ledger(released, query, secret, ledger=path, rng=1, beta=None, **kw)
    second = release_with_ledger(released, query, secret, ledger=path, rng=2, beta=None, **kw)
    assert second.composed.n_releases == 2
    # Independent: the stacked statistics modelled by model_query with the same options,
    # the two releases' noises side by side, the exact accountant per pair and direction.
    stacked = dp.Query({f"r{k}.{n}": e for k in (0, 1) for n, e in query.items()})
    joint = dp.model_query(
        frame, stacked, secret, subset_size=50, missing="drop", rng=0, bootstrap=None
    )
    noise = np.kron(np.eye(2), second.report.mechanism.noise_covariance)
    eps = max(
        gaussian_pair_epsilon(
            joint.means[i],
            joint.covariances[i] + noise,
            joint.means[j],
            joint.covariances[j] + noise,
            delta=1e-3,
        )
        for i, j in ((0, 1), (1, 0))
    )
    assert second.composed.epsilon == pytest.approx(eps, rel=1e-6)


@pytest.mark.parametrize("k, mean", [(1, 0.3), (2, 0.1), (7, 0.1), (3, 2.0), (12, 4.5)])
def test_overlap_refusal_tail_against_scipy(k, mean):
    """The overlap check refuses only where chance duplicates are implausible: its Poisson
    tail P(K >= k) agrees with scipy's survival function."""
    from scipy.stats import poisson

    from distpriv.pipeline.stages.data import _poisson_tail

    assert _poisson_tail(k, mean) == pytest.approx(poisson.sf(k - 1, mean), rel=1e-9, abs=1e-15)


def test_the_keyword_api_defaults_are_the_plans():
    """release and release_with_ledger build their plan with keyword_plan from their own
    defaults: those must be the plan's, or a TOML release and a keyword release differ."""
    from distpriv.pipeline.plan import keyword_plan

    for fn in (dp.release, dp.release_with_ledger):
        sig = inspect.signature(fn).parameters
        plan = keyword_plan(
            mechanism="eigm",
            epsilon=1.0,
            delta=sig["delta"].default,
            subset_size=100,
            method=sig["method"].default,
            n_samples=sig["n_samples"].default,
            options=sig["options"].default,
            missing=sig["missing"].default,
            population=sig["population"].default,
            beta=sig["beta"].default,
        )
        defaults = ModelSpec(subset_size=100)
        assert replace(plan.model, seed=defaults.seed) == defaults, fn.__name__
        assert plan.calibration.beta == DEFAULT_BETA, fn.__name__
        assert plan.calibration.delta == 0.0 and dict(plan.calibration.options) == {}
