"""One library, one behaviour: the library path and the configuration path
choose the same mechanism, default to the same modelling method and warn alike."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

import distpriv as dp
from distpriv.pipeline import run_release
from distpriv.pipeline.config import load_release_config
from distpriv.pipeline.stages.calibrate import choose_mechanism
from support import quiet

ROOT = Path(__file__).resolve().parents[2]
AUTO = ROOT / "examples" / "adult-auto.toml"


@pytest.fixture(scope="module")
def parts():
    from distpriv.datasets import paper_split

    return paper_split(rng=0)


def test_library_and_config_choose_the_same_mechanism(parts):
    # The reproducer: choose_mechanism on a model from dp.model_query picked expm-g while the
    # configuration path picked a floored mechanism (the lattice lived in the pipeline only).
    cfg = load_release_config(AUTO)
    secret = dp.ProportionSecret(cfg.secret["predicate"], cfg.secret["values"])
    n = cfg.model["subset_size"]
    model = quiet(dp.model_query, parts["modeling"], cfg.query, secret, subset_size=n)
    # The model carries the grid of each statistic, found on the modelling table: means of
    # integer columns over 100 rows step by 0.01, counts by 1.
    assert model.facts.lattice_steps == (0.01, 0.01, 1.0, 1.0, 0.01)
    weights = cfg.options["weights"]
    lib = quiet(choose_mechanism, model, epsilon=cfg.epsilon, delta=cfg.delta, weights=weights)
    out = quiet(run_release, AUTO, ledger=False)
    conf = out.report.mechanism
    assert lib.name == conf.name
    assert lib.name in ("daum-floor", "dirm-g-floor", "optimal-g-full")
    lib_mse = float(np.trace(lib.mechanism.noise_covariance))
    assert lib_mse == pytest.approx(float(np.trace(conf.noise_covariance)), rel=1e-9)
    # Every row of the comparison agrees, the group-DP baselines included (their default
    # sensitivities also come from the model's facts now).
    rows = {r["mechanism"]: r for r in lib.rows()}
    for row in out.public["choice"]:
        mine = rows[row["mechanism"]]
        assert mine["verified"] == row["verified"], row["mechanism"]
        if row["mse"] is None:
            assert mine["mse"] is None
        else:
            assert mine["mse"] == pytest.approx(row["mse"], rel=1e-9), row["mechanism"]
    assert rows["groupdp-l"]["mse"] is not None


def test_model_query_defaults_to_analytic_like_release(parts):
    defaults = {
        fn.__name__: inspect.signature(fn).parameters["method"].default
        for fn in (dp.model_query, dp.release)
    }
    assert defaults == {"model_query": "analytic", "release": "analytic"}
    secret = dp.ProportionSecret("income = '>50K'", values=[0.45, 0.55])
    query = {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"}
    a = quiet(dp.model_query, parts["modeling"], query, secret, subset_size=100)
    b = quiet(dp.model_query, parts["modeling"], query, secret, subset_size=100)
    # Exact moments, no samples: the same model every time (an unseeded Monte Carlo default
    # gave a different model on each call).
    assert a.method == "analytic" and a.samples is None
    np.testing.assert_array_equal(a.means, b.means)
    np.testing.assert_array_equal(a.covariances, b.covariances)
    # Monte Carlo stays available explicitly, and agrees with the exact moments.
    mc = quiet(
        dp.model_query,
        parts["modeling"],
        query,
        secret,
        subset_size=100,
        method="montecarlo",
        n_samples=4000,
        rng=1,
    )
    assert mc.method == "montecarlo" and mc.samples[0].shape == (4000, 2)
    se = np.sqrt(np.diagonal(a.covariances, axis1=1, axis2=2) / 4000)
    assert np.all(np.abs(mc.means - a.means) < 5 * se)
    # A statistic that is not linear needs Monte Carlo, and the error says so.
    with pytest.raises(dp.ParameterError, match="method='montecarlo'"):
        dp.model_query(parts["modeling"], {"med": "median(age)"}, secret, subset_size=100)


def _leak_lines(caught):
    return sorted(
        " ".join(str(w.message).split())
        for w in caught
        if issubclass(w.category, dp.PrivacyLeakWarning)
    )


def test_library_release_warns_like_run_release(parts, tmp_path):
    # A modelling table too small for the subset size, holding the released rows, and a
    # rank-one mechanism: run_release warned three times, dp.release never.
    model_frame = parts["modeling"].iloc[:400].reset_index(drop=True)
    released = model_frame.iloc[:100].reset_index(drop=True)
    model_frame.to_csv(tmp_path / "model.csv", index=False)
    released.to_csv(tmp_path / "released.csv", index=False)
    config = tmp_path / "release.toml"
    config.write_text(
        'title = "small"\n[data]\nmodel = "model.csv"\nrelease = "released.csv"\n'
        "allow_overlap = true\n"
        '[query]\navg_age = "avg(age)"\nn_female = "count_if(sex = \'Female\')"\n'
        "[secret]\npredicate = \"income = '>50K'\"\nvalues = [0.45, 0.55]\n"
        "[model]\nsubset_size = 100\n"
        '[mechanism]\nname = "daum"\nepsilon = 1.0\ndelta = 1e-3\ncalibration = "analytic"\n',
        encoding="utf-8",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_release(config, ledger=False)
    from_config = _leak_lines(caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp.release(
            released,
            {"avg_age": "avg(age)", "n_female": "count_if(sex = 'Female')"},
            dp.ProportionSecret("income = '>50K'", values=[0.45, 0.55]),
            model_data=model_frame,
            mechanism="daum",
            epsilon=1.0,
            delta=1e-3,
            options={"calibration": "analytic"},
        )
    from_library = _leak_lines(caught)
    assert from_library == from_config
    joined = " | ".join(from_library)
    assert "rests on too few rows" in joined
    assert "100 of the 100 released rows also appear in the modelling table" in joined
    assert "covers 1 of 2 directions" in joined
