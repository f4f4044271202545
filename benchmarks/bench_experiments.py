"""Benchmark: ``distpriv experiment run all`` (and ``--quick``), current code against a baseline.

Usage::

    python -m benchmarks.bench_experiments [--baseline eb5e882] [--quick-only] [--seed 0]

The baseline commit's ``src`` is exported with ``git archive`` into a temporary directory;
each command runs in a fresh subprocess with ``PYTHONPATH`` pointing at one tree or the
other, writing its files to a temporary directory, in the same run (one after the other,
or both at once with ``--concurrent`` so that both see the same load on a shared machine).
Prints wall-clock time
and peak RSS (``ru_maxrss`` of the child, from ``wait4``) of each, and the ratios
baseline/current. Exit status 1 if a command fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._common import SRC, export_src, src_env

RUN = "import sys; from distpriv.cli import main; sys.exit(main())"


def start(src: Path, args: list[str], out_dir: Path) -> tuple[subprocess.Popen, float, object]:
    """Start the CLI from ``src`` writing into ``out_dir``; returns (process, start, log)."""
    env = {**src_env(src), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-c", RUN, *args, "--out", str(out_dir), "--json"]
    log = open(out_dir.with_suffix(".log"), "wb")  # noqa: SIM115 - closed in finish()
    return (
        subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env),
        time.perf_counter(),
        log,
    )


def finish(job: tuple[subprocess.Popen, float, object]) -> tuple[float, float, int]:
    """Wait for a started run; return (seconds, peak RSS MiB, exit status)."""
    proc, began, log = job
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - began
    log.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss / 1024.0, proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="eb5e882", help="commit to compare against")
    parser.add_argument("--quick-only", action="store_true", help="only the --quick runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="run current and baseline at the same time (same machine load for both; "
        "use on a shared machine, where sequential runs see different loads)",
    )
    args = parser.parse_args(argv)
    variants = [["--quick"]] if args.quick_only else [["--quick"], []]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        base = export_src(args.baseline, Path(tmp) / "baseline")
        trees = [("current", SRC), (f"baseline {args.baseline}", base)]
        header = f"{'command':<36} {'tree':<18} {'time (s)':>9} {'peak RSS (MiB)':>15}"
        print(header)
        print("-" * len(header))
        for extra in variants:
            cli = ["experiment", "run", "all", "--seed", str(args.seed), *extra]
            shown = "experiment run all" + (" --quick" if extra else "")
            got = {}
            outs = {n: Path(tmp) / f"{n.split()[0]}{'-quick' if extra else ''}" for n, _ in trees}
            if args.concurrent:
                jobs = {n: start(src, cli, outs[n]) for n, src in trees}
                done = {n: finish(job) for n, job in jobs.items()}
            else:
                done = {n: finish(start(src, cli, outs[n])) for n, src in trees}
            for name, _ in trees:
                out = outs[name]
                secs, peak, code = done[name]
                got[name] = (secs, peak)
                flag = "" if code == 0 else f"  FAILED (exit {code}, log {out}.log)"
                ok &= code == 0
                print(f"{shown:<36} {name:<18} {secs:>9.1f} {peak:>15.0f}{flag}")
            (t_new, m_new), (t_old, m_old) = got[trees[0][0]], got[trees[1][0]]
            print(
                f"{shown:<36} {'ratio base/cur':<18} {t_old / t_new:>8.2f}x {m_old / m_new:>14.2f}x"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
