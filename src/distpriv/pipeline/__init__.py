"""The curator's process: config → data → model → calibrate → verify → release → report.

One function per command (:func:`run_release`, :func:`run_audit`, :func:`run_demo`,
:func:`run_calibrate`), each returning a frozen outcome with a ``public`` report and the
curator's ``private`` diagnostics; :func:`release` is the same process as a library call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach

# Imported on first use (distpriv.util.lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "stages.calibrate": ("AutoChoice", "calibrate_for", "choose_mechanism"),
    "config": ("ReleaseConfig", "load_release_config"),
    "model_file": ("ModelConfig", "load_model_config"),
    "commands.demo": ("ADULT_STATISTICS", "INCOME_SECRET", "DemoReport", "DemoRow"),
    "ledger": ("Budget", "Ledger", "LedgerEntry", "parse_budget"),
    "outcomes": (
        "AuditOutcome",
        "CalibrateOutcome",
        "DemoOutcome",
        "ReleaseOutcome",
        "VerifyOutcome",
    ),
    "commands.release": ("ReleaseReport", "build_model", "release"),
    "commands.release_ledger": ("release_with_ledger",),
    # Each command from its own module: `distpriv verify` must not import the audit's, the
    # release's or the ledger's modules.
    "commands.audit": ("run_audit",),
    "commands.calibrate": ("run_calibrate", "run_demo"),
    "commands.run": ("run_release",),
    "commands.verify": ("run_verify",),
    "stages.data": ("fingerprint", "load_frame", "resolve_source", "table_facts"),
}

# The one export list: __all__ and the type checkers' imports below follow _EXPORTS
# (tests/test_typing_exports.py checks the TYPE_CHECKING block against it).
__all__ = sorted(name for names in _EXPORTS.values() for name in names)

if TYPE_CHECKING:
    # The names as attach() resolves them at run time, for type checkers (which do not
    # follow a module __getattr__: without this every public name would be Any).
    from .commands.audit import run_audit
    from .commands.calibrate import run_calibrate, run_demo
    from .commands.demo import ADULT_STATISTICS, INCOME_SECRET, DemoReport, DemoRow
    from .commands.release import ReleaseReport, build_model, release
    from .commands.release_ledger import release_with_ledger
    from .commands.run import run_release
    from .commands.verify import run_verify
    from .config import ReleaseConfig, load_release_config
    from .ledger import Budget, Ledger, LedgerEntry, parse_budget
    from .model_file import ModelConfig, load_model_config
    from .outcomes import AuditOutcome, CalibrateOutcome, DemoOutcome, ReleaseOutcome, VerifyOutcome
    from .stages.calibrate import AutoChoice, calibrate_for, choose_mechanism
    from .stages.data import fingerprint, load_frame, resolve_source, table_facts

__getattr__, __dir__ = attach(__name__, _EXPORTS)
