"""Progress bars: on a terminal (pseudo-terminal), never with --json, --quiet or a pipe."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from distpriv.report.progress import ProgressDisplay, progress_enabled

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "adult-income.toml"
BAR = "━"  # rich's bar glyph


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(ROOT / "src"),
        TERM="xterm-256color",
        COLUMNS="120",
        LINES="40",
        PYTHONWARNINGS="ignore",
    )
    for key in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(key, None)
    return env


def _read_all(fd: int, proc: subprocess.Popen, timeout: float = 600.0) -> bytes:
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            proc.kill()
            pytest.fail("distpriv did not finish in time")
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def run_cli(args: list[str], *, json_stdout: bool = False) -> tuple[int, str, str]:
    """Run ``distpriv ARGS`` with stderr on a pseudo-terminal (and stdout too, or a pipe).

    Returns (status, terminal output, piped stdout).
    """
    master, slave = pty.openpty()
    cmd = [sys.executable, "-c", "import sys; from distpriv.cli import main; sys.exit(main())"]
    proc = subprocess.Popen(
        [*cmd, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if json_stdout else slave,
        stderr=slave,
        env=_env(),
        cwd=ROOT,
    )
    os.close(slave)
    try:
        if json_stdout:
            # Drain the terminal while reading stdout so neither pipe fills.
            term = []
            out = []
            fds = {master: term, proc.stdout.fileno(): out}
            while fds:
                ready, _, _ = select.select(list(fds), [], [], 600.0)
                if not ready:
                    proc.kill()
                    pytest.fail("distpriv did not finish in time")
                for fd in ready:
                    try:
                        data = os.read(fd, 65536)
                    except OSError:
                        data = b""
                    if data:
                        fds[fd].append(data)
                    else:
                        del fds[fd]
            terminal, piped = b"".join(term), b"".join(out)
        else:
            terminal, piped = _read_all(master, proc), b""
    finally:
        os.close(master)
        status = proc.wait(timeout=60)
    return status, terminal.decode("utf-8", "replace"), piped.decode("utf-8", "replace")


AUDIT = ["audit", str(CONFIG), "--mechanism", "daum", "--repetitions", "2"]


def test_audit_shows_progress_on_a_terminal():
    status, terminal, _ = run_cli(AUDIT)
    assert status == 0, terminal
    assert BAR in terminal and "repetitions" in terminal
    assert "verdict" in terminal  # the table still follows


def test_audit_json_never_has_progress():
    status, terminal, stdout = run_cli([*AUDIT[:-1], "1", "--json"], json_stdout=True)
    assert status == 0, terminal
    assert BAR not in terminal and BAR not in stdout
    report = json.loads(stdout)  # nothing but the JSON on stdout
    assert [m["mechanism"] for m in report["mechanisms"]] == ["none", "daum"]


def test_audit_quiet_on_a_terminal_prints_nothing():
    status, terminal, _ = run_cli([*AUDIT[:-1], "1", "--quiet"])
    assert status == 0, terminal
    assert BAR not in terminal and "verdict" not in terminal


def test_progress_display_is_silent_when_disabled(capsys):
    with ProgressDisplay(enabled=False) as bars:
        tick = bars.step("work")
        for k in range(3):
            tick(k + 1, 3)
        with bars.phase("more work"):
            pass
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_progress_enabled_rules():
    class Tty:
        def isatty(self):
            return True

    class Pipe:
        def isatty(self):
            return False

    assert progress_enabled(stream=Tty())
    assert not progress_enabled(stream=Pipe())
    assert not progress_enabled(quiet=True, stream=Tty())
    assert not progress_enabled(json=True, stream=Tty())


def test_experiment_run_shows_progress_and_quiet_hides_it(tmp_path):
    run = ["experiment", "run", "zhang2022-apmqm", "--quick", "--out", str(tmp_path)]
    status, terminal, _ = run_cli(run)
    assert status == 0, terminal
    # The result tables use the bar glyph too: the bar's label tells it apart.
    assert "running experiments" in terminal and "1/1" in terminal
    assert "Example 1" in terminal  # the result table is printed above the bar
    status, terminal, _ = run_cli([*run, "--quiet"])
    assert status == 0, terminal
    assert "running experiments" not in terminal and "Example 1" in terminal
