"""Benchmark: the declared lazy exports (read from each ``__init__``'s TYPE_CHECKING block)
against the previous hand-written ``_EXPORTS`` tables, on a cold start.

Usage::

    python -m benchmarks.bench_lazy_exports [--runs K] [--baseline REV]

Reading the export list costs a parse of each imported package ``__init__`` (the compiler's
own parser, without the ``ast`` module's imports). Each case runs in a fresh interpreter,
this checkout's ``src/`` and the baseline's (``git archive REV``, default the commit before
the change) interleaved K times (default 9) so that load on the machine hits both alike;
printed are the medians and the ratio this / baseline per case. Target: ratio ≤ 1.05 for
``import distpriv`` and ``distpriv --help`` (within noise). No timing is asserted in the tests.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ._common import SRC, export_src, src_env

CASES: dict[str, list[str]] = {
    "import distpriv": ["-c", "import distpriv"],
    "distpriv --help": ["-m", "distpriv", "--help"],
    # Every package front resolved once: the most __init__ files parsed in one process.
    "every package's __all__": [
        "-c",
        "import importlib\n"
        "for p in ('', '.attacks', '.central', '.composition', '.datasets', '.experiments',"
        " '.local', '.modeling', '.pipeline', '.population', '.report'):\n"
        "    importlib.import_module('distpriv' + p).__all__",
    ],
}


def _time(argv: list[str], src: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], env=src_env(src), capture_output=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode())
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--baseline", default="ec4aec1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_src = export_src(args.baseline, Path(tmp))
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.runs):
            for name, argv in CASES.items():
                for tree, src in (("this", SRC), ("baseline", base_src)):
                    times.setdefault((name, tree), []).append(_time(argv, src))
    print(f"cold start, median of {args.runs} fresh interpreters; baseline {args.baseline}")
    print(f"{'case':<28} {'this s':>8} {'baseline s':>11} {'this / baseline':>16}")
    for name in CASES:
        this = statistics.median(times[(name, "this")])
        base = statistics.median(times[(name, "baseline")])
        print(f"{name:<28} {this:>8.3f} {base:>11.3f} {this / base:>15.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
