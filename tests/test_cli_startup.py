"""A fast start: lazy imports, the flat public API, Ctrl-C during import.

`distpriv --help`, argument errors and `ledger show` must not import scipy, pandas, sklearn,
DuckDB or the attacks; each check runs in a fresh interpreter (subprocess) and reads
``sys.modules`` after the command. Timing lives in benchmarks/bench_cold_start.py, never here.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import distpriv

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
HEAVY = ("scipy", "pandas", "sklearn", "duckdb", "sqlglot", "matplotlib", "distpriv.attacks")
PACKAGES = (
    "distpriv",
    "distpriv.attacks",
    "distpriv.central",
    "distpriv.datasets",
    "distpriv.experiments",
    "distpriv.local",
    "distpriv.modeling",
    "distpriv.pipeline",
)

# Runs the CLI in this interpreter, then prints which heavy modules it imported (as JSON, last
# line of stderr) — the command's own output goes before it.
_PROBE = textwrap.dedent(
    """
    import json, sys
    status = None
    try:
        from distpriv.__main__ import main
        sys.argv = ["distpriv", *sys.argv[1:]]
        status = main()
    except SystemExit as exc:
        status = exc.code
    sys.stdout.flush()
    heavy = sorted(m for m in {heavy!r} if m in sys.modules)
    sys.stderr.write("\\n" + json.dumps({{"status": status, "heavy": heavy}}) + "\\n")
    """
).format(heavy=HEAVY)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC)}


def probe(*argv: str, cwd: Path | None = None) -> tuple[int, str, str, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
        timeout=120,
    )
    *err, last = proc.stderr.rstrip("\n").split("\n")
    info = json.loads(last)
    return info["status"], proc.stdout, "\n".join(err).strip(), info["heavy"]


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("--version",),
        ("release",),  # missing CONFIG
        ("audit", "x.toml", "--repetitions", "many"),
        ("release", "x.toml", "--bogus-flag"),
        ("ledger", "show", "/nonexistent/ledger.db"),
    ],
    ids=lambda a: " ".join(a),
)
def test_help_and_argument_errors_import_nothing_heavy(argv):
    status, out, err, heavy = probe(*argv)
    assert heavy == [], f"`distpriv {' '.join(argv)}` imported {heavy}"
    if argv[0].startswith("--"):
        assert status == 0 and out
    else:
        assert status == 2 and len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_probe_sees_heavy_imports(tmp_path):
    """The check above can fail: `mechanisms` needs the registry, which imports scipy."""
    status, out, _, heavy = probe("mechanisms")
    assert status == 0 and "expm-g" in out
    assert "scipy" in heavy


def test_invalid_mechanism_choice_is_still_one_line():
    status, _, err, _ = probe("calibrate", "x.toml", "--mechanism", "bogus", "--epsilon", "1")
    assert status == 2
    assert "invalid choice: 'bogus'" in err and "expm-g" in err and len(err.splitlines()) == 1


def test_calibrate_help_lists_mechanisms_and_calibrations():
    status, out, _, _ = probe("calibrate", "--help")
    assert status == 0
    assert "optimal-g" in out and "exact, analytic, classical" in " ".join(out.split())


def test_ledger_show_of_a_real_ledger_imports_nothing_heavy(tmp_path, adult_release_tables):
    """Two accounts of one data (one with a budget): what ``show`` prints was stored at
    record time (each secret's canonical key and keyed meaning), so it parses no SQL."""
    from adult_setup import copy_release_tables, small_release_toml
    from distpriv.pipeline import run_release

    copy_release_tables(adult_release_tables, tmp_path)
    config = small_release_toml(title="startup ledger", query={"avg_age": "avg(age)"})
    (tmp_path / "release.toml").write_text(config)
    women = small_release_toml(
        title="startup ledger, another secret",
        query={"avg_age": "avg(age)"},
        secret="predicate = \"(SEX='Female')\"\nvalues = [0.3, 0.4]",
    )
    (tmp_path / "women.toml").write_text(women)
    ledger = tmp_path / "ledger.db"
    run_release(tmp_path / "release.toml", ledger=ledger, insecure_seed=1)
    run_release(tmp_path / "women.toml", ledger=ledger, insecure_seed=2, budget="50,1e-3")
    for argv in (("ledger", "show", str(ledger)), ("ledger", "show", str(ledger), "--json")):
        status, out, err, heavy = probe(*argv)
        assert status == 0, err
        assert heavy == [], f"`distpriv {' '.join(argv)}` imported {heavy}"
        assert "avg_age" in out and "sex = 'Female'" in out and "income = '>50K'" in out
    shown = json.loads(probe("ledger", "show", str(ledger), "--json")[1])
    budgets = {g["secret"]: g["budget"] for g in shown["groups"]}
    assert budgets == {"income = '>50K'": None, "sex = 'Female'": {"epsilon": 50.0, "delta": 1e-3}}


@pytest.mark.parametrize("package", PACKAGES)
def test_public_api_sees_every_name(package):
    """Every name of ``__all__`` resolves, is listed by dir(), and is the object defined in
    its submodule (so the lazy map cannot point at the wrong place)."""
    mod = importlib.import_module(package)
    listed = dir(mod)
    for name in mod.__all__:
        assert name in listed, name
        value = getattr(mod, name)
        module, attr = mod._lazy_exports[name]
        sub = importlib.import_module(f"{package}.{module}")
        assert value is (sub if attr is None else getattr(sub, attr)), name
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        mod.not_a_name  # noqa: B018


def test_lazy_map_and_all_agree():
    for package in PACKAGES:
        mod = importlib.import_module(package)
        assert set(mod._lazy_exports) == set(mod.__all__), package


def test_function_named_like_its_module_stays_the_function():
    """`distpriv.pipeline.release` is the function; importing the submodule that defines it,
    or a submodule named like a function of its package, must not rebind the name."""
    importlib.import_module("distpriv.pipeline.commands.release")
    importlib.import_module("distpriv.attacks.audit")
    importlib.import_module("distpriv.local.evaluate")
    assert callable(distpriv.pipeline.release) and not isinstance(
        distpriv.pipeline.release, type(os)
    )
    from distpriv.attacks import audit
    from distpriv.local import evaluate

    assert callable(audit) and callable(evaluate)
    assert distpriv.release is distpriv.pipeline.release


def test_from_import_star_still_works():
    ns: dict = {}
    exec("from distpriv import *", ns)
    assert {"calibrate", "release", "Query", "local"} <= set(ns)


# A hook in the meta path that, when TARGET is about to be imported, says "ready" and sleeps:
# SIGINT then arrives deterministically in the middle of that import.
_SLOW_IMPORT = textwrap.dedent(
    """
    import runpy, sys, time
    TARGET = sys.argv[1]

    class SlowImport:
        def find_spec(self, name, path=None, target=None):
            if name == TARGET:
                sys.stdout.write("ready\\n")
                sys.stdout.flush()
                time.sleep(60)
            return None

    sys.meta_path.insert(0, SlowImport())
    sys.argv = ["distpriv", *sys.argv[2:]]
    runpy.run_module("distpriv", run_name="__main__", alter_sys=True)
    """
)


@pytest.mark.parametrize(
    ("target", "argv"),
    [
        ("distpriv.cli", ("--help",)),  # the command line itself is still loading
        ("distpriv._cli_parser", ("--help",)),
        (
            "scipy",
            (
                "calibrate",
                str(ROOT / "examples" / "eigm-example.toml"),
                "--mechanism",
                "eigm",
                "--epsilon",
                "1",
                "--delta",
                "1e-3",
            ),
        ),
    ],
    ids=["import-cli", "import-parser", "import-scipy"],
)
def test_ctrl_c_during_import_exits_130_with_one_line(target, argv):
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_IMPORT, target, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err == "distpriv: interrupted; nothing was written\n"


def _count_splits(monkeypatch):
    from distpriv.pipeline.stages import data as sources

    calls = []
    real = sources.paper_split

    def counting(*args, **kwargs):
        calls.append(kwargs.get("rng"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sources, "paper_split", counting)
    return calls


def test_adult_is_split_once_per_command_scope(monkeypatch):
    from distpriv.datasets import paper_split
    from distpriv.pipeline.scope import command_scope
    from distpriv.pipeline.stages.data import load_frame

    calls = _count_splits(monkeypatch)
    parts = ("modeling", "auxiliary", "test", "test")
    with command_scope():
        got = [load_frame(f"adult:{p}", split_seed=3) for p in parts]
        load_frame("adult:test", split_seed=4)
    assert calls == [3, 4]
    reference = paper_split(rng=3)  # independent: a fresh split outside any scope
    for part, frame in zip(parts, got, strict=True):
        assert frame.equals(reference[part])
    assert got[2] is not got[3]  # copies: one caller's edits never reach another
    # outside a scope nothing is cached: another command, another split
    load_frame("adult:test", split_seed=3)
    assert calls == [3, 4, 3]


def test_cli_runs_each_command_in_its_own_scope(monkeypatch, capsys):
    from distpriv import cli
    from distpriv.pipeline.stages.data import load_frame

    calls = _count_splits(monkeypatch)

    def fake_report(args):  # stands in for audit: model, auxiliary and test tables
        for part in ("modeling", "auxiliary", "test"):
            load_frame(f"adult:{part}", split_seed=0)
        return 0

    monkeypatch.setattr(cli, "_cmd_report", fake_report)
    assert cli.main(["report", "x.json", "--html", "x.html"]) == 0
    assert cli.main(["report", "x.json", "--html", "x.html"]) == 0
    assert calls == [0, 0]  # once per command, and not shared across the two commands


def test_import_distpriv_imports_nothing_heavy():
    code = (
        "import json, sys, distpriv, distpriv.pipeline, distpriv.central, distpriv.attacks\n"
        f"print(json.dumps(sorted(m for m in {HEAVY[:-1]!r} if m in sys.modules)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


# What `distpriv verify` of the paper's setting must not import: the
# mechanisms it does not calibrate (scipy.stats for APGM and the fallback, networkx for
# APMQM, POT for Wasserstein), the audit's classifiers, and the other commands' modules;
# scipy.optimize (brentq is distpriv.util.roots' port) and scipy.integrate (QUADPACK only where
# the inversion's oscillatory tail or Laplace noise's norm needs it), each of which pulls
# scipy.sparse.linalg, scipy.spatial and scipy.fft; scipy.linalg (about 0.1 s: its
# batching decorator parses its functions' docstrings), whose one use on this path was
# the check's 5 × 5 Gaussian density (numpy's eigh now, distpriv.util.distributions); pandas
# (0.3-0.4 s, most of the yardstick `import numpy, pandas`): the bundled Adult data is
# parsed by DuckDB and the check's rows come to it as Arrow.
VERIFY_MUST_NOT_IMPORT = (
    "pandas",
    "scipy.linalg",
    "scipy.optimize",
    "scipy.integrate",
    "scipy.sparse",
    "scipy.spatial",
    "scipy.fft",
    "scipy.stats",
    "sklearn",
    "networkx",
    "ot",
    "cvxpy",
    "matplotlib",
    "distpriv.central.apgm",
    "distpriv.central.floored",
    "distpriv.central.optimal",
    "distpriv.central.apmqm",
    "distpriv.central.wasserstein",
    "distpriv.pipeline.commands.audit",
    "distpriv.pipeline.commands.run",
    "distpriv.pipeline.ledger",
    "distpriv.attacks.audit",
    # numpy's OpenBLAS loaded on one thread by the entry point: no threadpoolctl limits
    "threadpoolctl",
)


def test_verify_imports_only_what_it_uses():
    code = textwrap.dedent(
        f"""
        import json, sys
        from distpriv.__main__ import main
        sys.argv = ["distpriv", "verify", {str(ROOT / "examples" / "adult-income.toml")!r}]
        status = main()
        sys.stdout.flush()
        bad = sorted(m for m in {VERIFY_MUST_NOT_IMPORT!r} if m in sys.modules)
        sys.stderr.write("\\n" + json.dumps({{"status": status, "bad": bad}}) + "\\n")
        """
    )
    # As a user runs it: the entry point chooses the BLAS threads (no preset variable).
    env = {k: v for k, v in _env().items() if k != "OPENBLAS_NUM_THREADS"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    info = json.loads(proc.stderr.rstrip("\n").split("\n")[-1])
    assert info["status"] == 0, proc.stderr
    assert "data-level check" in proc.stdout  # the check ran, with its verdict
    assert info["bad"] == [], f"`distpriv verify` imported {info['bad']}"


def test_mechanisms_table_without_the_mechanism_modules():
    """The registry describes every mechanism without importing their modules; calibrating
    one imports its module (and only then)."""
    code = textwrap.dedent(
        """
        import json, sys
        from distpriv.central.registry import mechanisms_table, calibrate, MECHANISMS
        rows = mechanisms_table()
        before = sorted(m for m in sys.modules if m.startswith("distpriv.central."))
        from distpriv.querymodel import GaussianQueryModel
        import numpy as np
        model = GaussianQueryModel(
            np.array([[0.0, 0.0], [1.0, 0.5]]), np.stack([np.eye(2)] * 2), labels=[0.45, 0.55]
        )
        calibrate("groupdp-l", model, epsilon=1.0, group_size=1, sensitivities=[1.0, 1.0])
        after = sorted(m for m in sys.modules if m.startswith("distpriv.central."))
        print(json.dumps({"names": [r["name"] for r in rows], "all": list(MECHANISMS),
                          "before": before, "after": after}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["names"] == info["all"] and "apmqm" in info["names"]
    for heavy in ("apgm", "apmqm", "wasserstein", "optimal", "floored", "groupdp"):
        assert f"distpriv.central.{heavy}" not in info["before"], heavy
    assert "distpriv.central.groupdp" in info["after"]
    assert "distpriv.central.apmqm" not in info["after"]


def test_the_entry_point_collects_garbage_less_often_only_while_a_command_runs(monkeypatch):
    """``python -m distpriv`` raises the collector's generation-0 threshold for the command
    (its imports' million long-lived objects were traversed again and
    again) and restores the caller's thresholds afterwards, also when the command fails."""
    import gc

    import distpriv.cli as cli
    from distpriv import __main__ as entry

    before = gc.get_threshold()
    seen = []

    def command() -> int:
        seen.append(gc.get_threshold())
        return 3

    monkeypatch.setattr(cli, "main", command)
    assert entry.main() == 3
    assert seen == [(max(entry.GC_GENERATION0, before[0]), *before[1:])]
    assert gc.get_threshold() == before

    def interrupted() -> int:
        seen.append(gc.get_threshold())
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "main", interrupted)
    assert entry.main() == entry.EXIT_INTERRUPTED
    assert seen[-1][0] == max(entry.GC_GENERATION0, before[0])
    assert gc.get_threshold() == before


def test_the_entry_point_freezes_only_what_survives_collections_inside_imports(
    monkeypatch, tmp_path
):
    """``python -m distpriv`` moves what survives a collection *during an import* to the
    permanent generation (the imports' objects were traversed
    again by generation-1 collections), never what the command itself allocates, and
    unfreezes it all when the command returns (also when it fails)."""
    import gc

    import distpriv.cli as cli
    from distpriv import __main__ as entry

    assert gc.get_freeze_count() == 0
    # A module whose import allocates 100,000 lists (always tracked by the collector):
    # several generation-0 collections (the command's threshold is 20,000) run inside it.
    (tmp_path / "_cold_gc_probe.py").write_text("TABLE = [[i] for i in range(100_000)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = {}

    def command() -> int:
        seen["junk"] = [[i] for i in range(100_000)]  # collections outside an import
        seen["outside"] = gc.get_freeze_count()
        import _cold_gc_probe

        seen["inside"] = gc.get_freeze_count()
        seen["table"] = _cold_gc_probe.TABLE
        raise ValueError("the command fails")

    monkeypatch.setattr(cli, "main", command)
    try:
        with pytest.raises(ValueError, match="the command fails"):
            entry.main()
        assert seen["outside"] == 0
        # the survivors of the last collection inside the import: at least the 80,000 lists
        # the module had made by then (and whatever else was alive)
        assert seen["inside"] >= 80_000
        assert gc.get_freeze_count() == 0
        assert entry._freeze_import_survivors not in gc.callbacks
    finally:
        sys.modules.pop("_cold_gc_probe", None)
        gc.unfreeze()

    # A caller that froze objects itself: nothing frozen or unfrozen here.
    def importing() -> int:
        import _cold_gc_probe  # noqa: F401

        seen["own"] = gc.get_freeze_count()
        return 0

    monkeypatch.setattr(cli, "main", importing)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert entry.main() == 0
        # Nothing frozen (the module's 100,000 lists would add at least 80,000) and nothing
        # unfrozen (the count would drop to 0). Not equality: a frozen object freed by its
        # reference count (an import-system cache the probe's import replaces) leaves the
        # permanent generation, so the count may fall by a few (CI saw 683,324 -> 683,321).
        assert frozen - 1_000 <= seen["own"] <= frozen
        assert frozen - 1_000 <= gc.get_freeze_count() <= frozen
    finally:
        sys.modules.pop("_cold_gc_probe", None)
        gc.unfreeze()


def _lazy_probe_package(tmp_path, name: str) -> None:
    """A package with one lazy export (distpriv.util.lazy) whose module records whether the
    collector was on while it was imported."""
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from distpriv.util.lazy import attach\n"
        "__getattr__, __dir__ = attach(__name__, {'sub': ['VALUE']})\n"
    )
    (pkg / "sub.py").write_text(
        "import gc\nCOLLECTING = gc.isenabled()\nVALUE = [[i] for i in range(1000)]\n"
    )


def test_lazy_exports_load_without_collections_only_while_a_command_runs(monkeypatch, tmp_path):
    """Under ``python -m distpriv`` a command's lazy imports (``from distpriv.pipeline import
    run_verify``) run with the collector off and freeze what they leave (40 ms
    of collections of objects that live as long as the process); outside
    a command (a library user) the collector is left alone."""
    import gc

    import distpriv.cli as cli
    from distpriv import __main__ as entry
    from distpriv.util import import_gc as _import_gc

    monkeypatch.syspath_prepend(str(tmp_path))
    _lazy_probe_package(tmp_path, "_cold_lazy_in")
    _lazy_probe_package(tmp_path, "_cold_lazy_out")
    seen = {}

    def command() -> int:
        import _cold_lazy_in

        assert _cold_lazy_in.VALUE  # the lazy export: imports _cold_lazy_in.sub
        seen["collecting"] = sys.modules["_cold_lazy_in.sub"].COLLECTING
        seen["enabled_after"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count()
        return 0

    monkeypatch.setattr(cli, "main", command)
    try:
        assert gc.isenabled() and gc.get_freeze_count() == 0
        assert entry.main() == 0
        assert seen["collecting"] is False and seen["enabled_after"] is True
        assert seen["frozen"] >= 1000  # at least the module's lists
        assert gc.get_freeze_count() == 0 and _import_gc.ACTIVE is False

        import _cold_lazy_out  # no command: a library user's import

        assert _cold_lazy_out.VALUE
        assert sys.modules["_cold_lazy_out.sub"].COLLECTING is True
        assert gc.get_freeze_count() == 0
    finally:
        for name in ("_cold_lazy_in", "_cold_lazy_in.sub", "_cold_lazy_out", "_cold_lazy_out.sub"):
            sys.modules.pop(name, None)
        gc.unfreeze()
        gc.enable()


_BLAS_PROBE = textwrap.dedent(
    """
    import json, os, sys
    from contextlib import nullcontext
    import distpriv.cli as cli
    from distpriv import __main__ as entry

    seen = {}

    def command() -> int:
        from threadpoolctl import threadpool_info

        import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS, loaded during the command)

        seen["threads"] = sorted(
            {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
        )
        seen["during"] = os.environ.get("OPENBLAS_NUM_THREADS")
        from distpriv.util import threads as _threads

        seen["no_limits"] = isinstance(_threads.one_blas_thread(), nullcontext)
        return 0

    cli.main = command
    status = entry.main()
    seen["after"] = os.environ.get("OPENBLAS_NUM_THREADS")
    from distpriv.util import threads as _threads

    seen["no_limits_after"] = isinstance(_threads.one_blas_thread(), nullcontext)
    seen["status"] = status
    print(json.dumps(seen))
    """
)


@pytest.mark.parametrize("preset", [None, "2"])
def test_the_entry_point_runs_blas_on_one_thread_unless_the_user_chose(preset):
    """``python -m distpriv`` loads OpenBLAS (numpy's and scipy's) on one thread, so that its
    idle threads do not spin between the command's thousands of small calls, and
    restores the environment afterwards; a user's own
    ``OPENBLAS_NUM_THREADS`` is kept as it is."""
    env = {k: v for k, v in _env().items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    proc = subprocess.run(
        [sys.executable, "-c", _BLAS_PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["status"] == 0
    if preset is None:
        assert seen["threads"] == [1] and seen["during"] == "1" and seen["after"] is None
        # numpy's OpenBLAS was loaded on one thread: threadpoolctl's limits are skipped
        # during the command, and used again after it
        assert seen["no_limits"] is True
    else:
        assert seen["during"] == seen["after"] == preset
        assert seen["threads"] == [min(int(preset), os.cpu_count() or 1)]
        assert seen["no_limits"] is False  # the user's threads: limited as before
    assert seen["no_limits_after"] is False
