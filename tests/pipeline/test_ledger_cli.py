"""`distpriv release --ledger/--budget` and `distpriv ledger show`, including concurrency."""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import sqlite3
import warnings

import pytest

from adult_setup import copy_release_tables, small_release_toml
from cli_helpers import run
from distpriv.cli import main
from distpriv.composition.accountant import ReleaseSpec, compose
from distpriv.pipeline import run_release
from distpriv.pipeline.ledger import Ledger
from distpriv.pipeline.stages.data import load_frame

CONFIG = small_release_toml(title="ledger test")


@pytest.fixture(scope="module")
def setting(tmp_path_factory, adult_release_tables):
    """A small, fast release: 2 statistics, a 3000-row modelling table, 100 released rows."""
    base = copy_release_tables(adult_release_tables, tmp_path_factory.mktemp("ledger-cli"))
    (base / "release.toml").write_text(CONFIG)
    return base


def composed_epsilons(setting, ks):
    """ε(1e-3) of k copies of the configured release, composed (to set budgets)."""
    scratch = setting / f"scratch-{os.getpid()}.ledger"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_release(setting / "release.toml", ledger=scratch, insecure_seed=0)
    (entry,) = Ledger(scratch).releases()
    scratch.unlink()
    spec = ReleaseSpec.from_record(entry)
    model = load_frame(str(setting / "model.csv"), what="model")
    from distpriv.composition import JointModelling
    from distpriv.modeling import ProportionSecret

    secret = ProportionSecret("income = '>50K'", [0.45, 0.55])
    how = JointModelling(model_data=model, subset_size=100)
    return [compose([spec] * k, secret=secret, modelling=how).epsilon for k in ks]


def test_budget_allows_one_release_not_two(setting, capsys):
    eps1, eps2 = composed_epsilons(setting, (1, 2))
    assert eps2 > eps1 + 0.2
    budget = f"{(eps1 + eps2) / 2:.6f},1e-3"
    led = setting / "one.ledger"
    status, out, err = run(
        ["release", str(setting / "release.toml"), "--ledger", str(led), "--budget", budget],
        capsys,
    )
    assert status == 0, err
    assert "ledger: release 1" in out
    before = led.read_bytes()
    status, out, err = run(
        ["release", str(setting / "release.toml"), "--ledger", str(led), "--json"], capsys
    )
    assert status != 0 and out == ""
    assert err.count("\n") == 1 and "refused" in err and "budget" in err, err
    assert "nothing was released or recorded" in err
    assert led.read_bytes() == before

    status, out, err = run(["ledger", "show", str(led), "--json"], capsys)
    assert status == 0, err
    report = json.loads(out)
    assert report["kind"] == "ledger" and report["n_releases"] == 1
    (group,) = report["groups"]
    assert group["secret"] == "income = '>50K'"
    assert group["budget"]["epsilon"] == pytest.approx((eps1 + eps2) / 2, rel=1e-5)
    (row,) = group["releases"]
    assert row["composed"]["n_releases"] == 1
    assert row["composed"]["epsilon"] == pytest.approx(eps1, rel=1e-6)
    status, out, err = run(["ledger", "show", str(led)], capsys)
    assert status == 0 and "avg_age, n_female" in out and "over 1" in out


def test_json_report_carries_the_ledger_block(setting, capsys):
    led = setting / "json.ledger"
    argv = ["release", str(setting / "release.toml"), "--ledger", str(led), "--json"]
    assert run(argv, capsys)[0] == 0
    status, out, err = run(argv, capsys)
    assert status == 0, err
    block = json.loads(out)["ledger"]
    assert block["n_releases"] == 2 and block["budget"] is None
    assert block["composed"]["epsilon"] > block["alone"]["epsilon"] > 0
    assert block["composed"]["delta"] == 1e-3


def _release_in_a_child(argv, start, conn):
    """One `distpriv release` in its own process: its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    start.wait(timeout=600)  # all eight start together
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:
            status = exc.code
    conn.send((status, out.getvalue(), err.getvalue()))
    conn.close()


def test_eight_concurrent_releases_with_a_budget_for_three(setting):
    """Eight separate processes, each with its own SQLite connection, race for a budget of
    three. They are forked from one forkserver that has imported distpriv once, instead of
    eight `python -m distpriv.cli` launches that each spent ~3 s importing it (the CLI entry
    itself runs as a real subprocess in tests/test_cli.py): the processes, their connections
    and the race on the ledger file are the same, and they start closer together."""
    eps3, eps4 = composed_epsilons(setting, (3, 4))
    assert eps4 > eps3 + 0.1
    budget = f"{(eps3 + eps4) / 2:.6f},1e-3"
    led = setting / "concurrent.ledger"
    argv = [
        "release",
        str(setting / "release.toml"),
        "--ledger",
        str(led),
        "--budget",
        budget,
        "--quiet",
    ]
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["distpriv.cli", "distpriv.pipeline.commands.run", __name__])
    start = ctx.Event()
    pipes, procs = [], []
    for _ in range(8):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_release_in_a_child, args=(argv, start, send))
        proc.start()
        send.close()
        pipes.append(receive)
        procs.append(proc)
    start.set()
    results = []
    for receive, proc in zip(pipes, procs, strict=True):
        assert receive.poll(600), "a release process did not answer"
        results.append(receive.recv())
        proc.join(timeout=60)
        assert proc.exitcode == 0, proc.exitcode
    ok = [r for r in results if r[0] == 0]
    refused = [r for r in results if r[0] != 0]
    assert len(ok) == 3, results
    assert all("refused" in err and "budget" in err for _, _, err in refused), refused
    pids = {proc.pid for proc in procs}
    assert len(pids) == 8 and os.getpid() not in pids  # eight distinct processes
    rows = Ledger(led).releases()
    assert len(rows) == 3
    assert [r.composed["n_releases"] for r in rows] == [1, 2, 3]
    assert rows[-1].composed["epsilon"] == pytest.approx(eps3, rel=1e-6)
    con = sqlite3.connect(led)
    assert con.execute("SELECT COUNT(*) FROM releases").fetchone()[0] == 3
    con.close()


@pytest.mark.parametrize("kind", ["truncated", "text", "foreign"])
def test_bad_ledger_file_is_refused_untouched(setting, capsys, kind):
    path = setting / f"bad-{kind}.ledger"
    if kind == "truncated":
        run(["release", str(setting / "release.toml"), "--ledger", str(path)], capsys)
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    elif kind == "text":
        path.write_text("date,amount\n2024-01-01,3\n")
    else:
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE t (x)")
        con.commit()
        con.close()
    before = path.read_bytes()
    for argv in (
        ["release", str(setting / "release.toml"), "--ledger", str(path)],
        ["ledger", "show", str(path)],
    ):
        status, out, err = run(argv, capsys)
        assert status != 0 and out == ""
        assert err.count("\n") == 1 and str(path) in err, err
        assert "not a distpriv ledger" in err or "truncated" in err
        assert path.read_bytes() == before


def test_flag_errors(setting, capsys):
    cfg = str(setting / "release.toml")
    status, out, err = run(["release", cfg, "--no-ledger", "--budget", "1,1e-3"], capsys)
    assert status != 0 and out == "" and "--budget needs a ledger" in err
    status, out, err = run(["release", cfg, "--no-ledger", "--ledger", "x.db"], capsys)
    assert status == 2 and out == "" and "not allowed with argument" in err
    status, out, err = run(
        ["release", cfg, "--ledger", str(setting / "x.db"), "--budget", "1"], capsys
    )
    assert status != 0 and "--budget" in err and "'1'" in err
    assert not (setting / "x.db").exists() or Ledger(setting / "x.db").releases() == ()
    status, out, err = run(["ledger", "show", str(setting / "missing.ledger")], capsys)
    assert status != 0 and out == "" and "does not exist" in err
    assert not (setting / "missing.ledger").exists()


@pytest.mark.parametrize(
    "predicate",
    [
        "income='>50K'",
        "'>50K' = income",
        "(income = '>50K')",
        "lower(income) = '>50k'",
        "INCOME = '>50K'",
        "income <> '>50K'",  # the complement: one minus the share of the others
    ],
)
def test_a_respelled_secret_is_refused_by_the_budget_from_the_command_line(
    setting, capsys, predicate
):
    """The account is the property, not its text: through the CLI, a release whose budget
    admits one release refuses the same release under a respelled (or complementary)
    predicate, and records nothing."""
    eps1, eps2 = composed_epsilons(setting, (1, 2))
    budget = f"{(eps1 + eps2) / 2:.6f},1e-3"
    led = setting / f"respelled-{abs(hash(predicate))}.ledger"
    status, out, err = run(
        ["release", str(setting / "release.toml"), "--ledger", str(led), "--budget", budget],
        capsys,
    )
    assert status == 0, err
    respelled = setting / f"respelled-{abs(hash(predicate))}.toml"
    text = CONFIG.replace("predicate = \"income = '>50K'\"", f'predicate = "{predicate}"')
    assert text != CONFIG
    respelled.write_text(text)
    before = led.read_bytes()
    status, out, err = run(["release", str(respelled), "--ledger", str(led)], capsys)
    assert status != 0 and out == ""
    assert err.count("\n") == 1 and "refused" in err and "budget" in err, err
    assert led.read_bytes() == before
