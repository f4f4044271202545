"""Shared fixtures and the hypothesis profiles (derandomized on CI so main stays green)."""

from __future__ import annotations

import os

# One BLAS/OpenMP thread per pytest-xdist worker. `pytest -n auto` already runs one worker
# per core; each numpy/scipy/scikit-learn call then starting a thread per core as well
# oversubscribes the machine (2 workers x 2 threads on 2 cores made the classifier audits
# several times slower). The variables reach subprocesses and the libraries loaded later;
# threadpoolctl (a scikit-learn dependency) limits the ones already loaded. Outside xdist
# nothing changes.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(autouse=True)
def _default_ledger_outside_the_repository(monkeypatch, tmp_path_factory):
    """Every release records itself in the default ledger next to its config: keep the
    ledgers of runs of examples/*.toml out of the repository (one fresh directory per test)."""
    monkeypatch.setenv("DISTPRIV_LEDGER_DIR", str(tmp_path_factory.mktemp("default-ledger")))


@pytest.fixture
def paper_model():
    """Chen & Ohrimenko 2023, example after Thm 4.5."""
    from distpriv import GaussianQueryModel

    return GaussianQueryModel(
        [[100.0, 101.0], [99.0, 102.0]],
        [[22.0, -6.0], [-6.0, 13.0]],
        labels=["theta1", "theta2"],
        statistics=["x1", "x2"],
    )


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole run (the ``spark`` extra; Java 17 in CI)."""
    if os.environ.get("CI"):  # .ci/run installs the extra: missing pyspark is a failure there
        import pyspark.sql as pyspark_sql
    else:
        pyspark_sql = pytest.importorskip("pyspark.sql")
    session = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .appName("distpriv-tests")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


SHORT_UTILITY_GRID = (2.0,)


@pytest.fixture
def short_utility_grid(monkeypatch):
    """The privacy-utility figure of ``--html`` pages on the grid ``SHORT_UTILITY_GRID``
    (plus the requested ε, which utility_curve always adds) instead of its seven default ε.

    The figure recalibrates every candidate mechanism at every ε of the grid, which is most
    of the run time of an ``--html`` release or demo. Use it only in tests whose assertions
    do not depend on the grid's length (what the page marks, what it leaks, which mechanisms
    it draws or explains); the default grid itself is tested in
    tests/pipeline/test_html.py::test_utility_curve_matches_calibration."""
    from distpriv.pipeline import utility

    full = utility.utility_curve

    def short(*args, **kwargs):
        return full(*args, **{**kwargs, "epsilons": SHORT_UTILITY_GRID})

    monkeypatch.setattr(utility, "utility_curve", short)
    return SHORT_UTILITY_GRID


# -- the Adult set-up many tests share (its reference values are in adult_setup.py) ----------


@pytest.fixture(scope="module")
def adult_parts():
    """The paper's split of Adult (seed 0): ``modeling``, ``auxiliary`` and ``test`` frames.
    One per test module, so that a module altering a frame cannot reach another."""
    from distpriv.datasets import paper_split

    return paper_split(rng=0)


@pytest.fixture(scope="module")
def adult_modeling(adult_parts):
    """The modelling frame of the paper's split of Adult (seed 0)."""
    return adult_parts["modeling"]


@pytest.fixture(scope="module")
def adult_analytic(adult_modeling):
    """The analytic model of the paper's five statistics and income secret on the modelling
    frame (``adult_setup.adult_income_model``; its assumption warnings silenced)."""
    from adult_setup import adult_income_model

    return adult_income_model(adult_modeling, quiet=True)


@pytest.fixture(scope="session")
def adult_release_tables(tmp_path_factory):
    """A directory holding a small Adult release, ``model.csv`` (3,000 rows) and
    ``released.csv`` (100 rows), written once per session: copy it
    (``adult_setup.copy_release_tables``) before writing anything next to it."""
    from adult_setup import write_release_tables

    return write_release_tables(tmp_path_factory.mktemp("adult-release"))
