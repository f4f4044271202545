"""Benchmark: cold start of the command line and the library.

Usage::

    python -m benchmarks.bench_cold_start [--runs K]

Each case is a fresh interpreter (``python -c ...`` / ``python -m distpriv ...``), run K times
(default 7) interleaved so that load on the machine hits every case alike; printed are the
median wall times and the ratio of each to the baseline ``python -c "import numpy, pandas"``
measured in the same run. Target: ``distpriv --help`` no slower than the baseline (ratio ≤ 1).
No timing is asserted anywhere in the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from ._common import src_env

CASES: dict[str, list[str]] = {
    "baseline: import numpy, pandas": ["-c", "import numpy, pandas"],
    "python -c pass (interpreter only)": ["-c", "pass"],
    "distpriv --help": ["-m", "distpriv", "--help"],
    "distpriv release (argument error)": ["-m", "distpriv", "release"],
    "distpriv ledger show LEDGER": ["-m", "distpriv", "ledger", "show", "{ledger}"],
    "import distpriv": ["-c", "import distpriv"],
    "import distpriv; distpriv.calibrate": ["-c", "import distpriv; distpriv.calibrate"],
    "distpriv mechanisms": ["-m", "distpriv", "mechanisms"],
}


def _empty_ledger(directory: str) -> str:
    from distpriv.pipeline.ledger import Ledger

    path = os.path.join(directory, "ledger.db")
    Ledger(path)  # created empty: `ledger show` still opens and reads it
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    env = src_env()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = _empty_ledger(tmp)
        times: dict[str, list[float]] = {name: [] for name in CASES}
        for _ in range(args.runs):
            for name, argv in CASES.items():
                cmd = [sys.executable, *(a.format(ledger=ledger) for a in argv)]
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, env=env, capture_output=True)
                times[name].append(time.perf_counter() - t0)
                if proc.returncode not in (0, 2):
                    sys.stderr.write(proc.stderr.decode())
                    return 1
    base = statistics.median(times["baseline: import numpy, pandas"])
    print(f"cold start, median of {args.runs} fresh interpreters ({sys.executable})")
    print(f"{'case':<40} {'median s':>9} {'min s':>7} {'/ baseline':>11}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<40} {med:>9.3f} {min(ts):>7.3f} {med / base:>10.2f}x")
    help_ratio = statistics.median(times["distpriv --help"]) / base
    verdict = "met" if help_ratio <= 1 else "NOT met"
    print(f"target `distpriv --help` <= baseline: {verdict} ({help_ratio:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
