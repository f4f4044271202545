"""A process killed while building a ledger leaves a hidden temporary file; the next one sweeps it.

Real ``SIGKILL``s of child processes (no clean-up can run), and the two things the sweep must
never remove: a temporary file whose builder is alive (it holds the ``flock``), and one
created a moment ago (its builder may not hold the lock yet).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from distpriv.pipeline.ledger import Ledger
from distpriv.pipeline.ledger._tempfile import STALE_AFTER_S, held_temp_ledger, sweep_stale_temps

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")

_KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from distpriv.pipeline.ledger._tempfile import held_temp_ledger
    with held_temp_ledger(Path(sys.argv[1])) as tmp:
        print(tmp, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """
)

_HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from distpriv.pipeline.ledger._tempfile import held_temp_ledger
    with held_temp_ledger(Path(sys.argv[1])) as tmp:
        print(tmp, flush=True)
        sys.stdin.readline()
    """
)


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _age(path: str | Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def _killed_build(path: Path) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return proc.stdout.strip()


def test_a_killed_build_leaves_its_file_and_the_next_creation_removes_it(tmp_path):
    path = tmp_path / "ledger.sqlite"
    tmp = _killed_build(path)
    assert Path(tmp).exists() and Path(tmp).parent == tmp_path  # what SIGKILL leaves
    _age(tmp, 2 * STALE_AFTER_S)
    Ledger(path)  # creates the ledger
    assert _hidden(tmp_path) == []
    assert path.exists()


def test_a_lazy_first_record_sweeps_too(tmp_path):
    path = tmp_path / "ledger.sqlite"
    tmp = _killed_build(path)
    _age(tmp, 2 * STALE_AFTER_S)
    with held_temp_ledger(path) as mine:  # what a lazy ledger's first record does
        assert _hidden(tmp_path) == [Path(mine).name]
    assert _hidden(tmp_path) == []


def test_a_live_builders_file_is_never_removed(tmp_path):
    path = tmp_path / "ledger.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        tmp = holder.stdout.readline().strip()
        _age(tmp, 10 * STALE_AFTER_S)  # old, but its builder holds the lock
        assert sweep_stale_temps(path) == []
        Ledger(path)
        assert Path(tmp).exists()
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0
    finally:
        if holder.poll() is None:  # pragma: no cover - only if the test failed midway
            holder.kill()
            holder.wait()
    assert not Path(tmp).exists()  # its builder removed it on the way out


def test_a_fresh_or_foreign_file_is_left_alone(tmp_path):
    path = tmp_path / "ledger.sqlite"
    fresh = tmp_path / ".ledger.sqlite.abc123.tmp"  # no lock, but created just now
    fresh.write_bytes(b"")
    other = tmp_path / ".other.sqlite.abc123.tmp"  # another ledger's, abandoned
    other.write_bytes(b"")
    _age(other, 2 * STALE_AFTER_S)
    visible = tmp_path / "ledger.sqlite.abc123.tmp"  # not hidden: not ours
    visible.write_bytes(b"")
    _age(visible, 2 * STALE_AFTER_S)
    assert sweep_stale_temps(path) == []
    assert sweep_stale_temps(path, now=time.time() + 2 * STALE_AFTER_S) == [fresh]
    assert other.exists() and visible.exists()
