"""Make docs/report.png: a real Adult release report, rendered by headless Chromium.

    PYTHONPATH=src python docs/make_report_png.py

Runs the example release with mechanism = "auto" (examples/adult-auto.toml) through the
pipeline with the ``--html`` path of the CLI (and a ledger of its own, in a temporary
folder), then takes the screenshot with the same headless-Chromium helper the report tests
use (``tests/browser.py``, loaded by its path: it is a test helper, not part of the
package). Needs the ``chromium`` package.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

from distpriv.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _chromium_screenshot():
    """``chromium_screenshot`` of the tests' helper, ``tests/browser.py``, loaded by path."""
    spec = importlib.util.spec_from_file_location("browser", ROOT / "tests" / "browser.py")
    if spec is None or spec.loader is None:
        raise SystemExit("tests/browser.py is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.chromium_screenshot


def make(out: Path = ROOT / "docs" / "report.png") -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        # A ledger of its own in the temporary folder: the picture's run must not leave a
        # ledger beside the shipped example (the default place).
        ledger = Path(tmp) / "ledger.sqlite"
        config = str(ROOT / "examples" / "adult-auto.toml")
        status = main(["release", config, "--html", str(page), "--ledger", str(ledger), "--quiet"])
        if status != 0:
            raise SystemExit(f"distpriv release failed with status {status}")
        return _chromium_screenshot()(page, out, width=960, height=6400)


if __name__ == "__main__":
    print(make(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "report.png"))
