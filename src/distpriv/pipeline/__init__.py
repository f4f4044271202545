"""The curator's process: config → data → model → calibrate → verify → release → report.

One function per command (:func:`run_release`, :func:`run_audit`, :func:`run_demo`,
:func:`run_calibrate`), each returning a frozen outcome with a ``public`` report and the
curator's ``private`` diagnostics; :func:`release` is the same process as a library call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import attach

# Imported on first use (distpriv._lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "auto": (
        "AutoChoice",
        "choose_mechanism",
    ),
    "ledger.compose": (
        "ComposedGuarantee",
        "ReleaseSpec",
        "compose",
    ),
    "config": (
        "ModelConfig",
        "ReleaseConfig",
        "load_model_config",
        "load_release_config",
    ),
    "demo": (
        "ADULT_STATISTICS",
        "INCOME_SECRET",
        "DemoReport",
        "DemoRow",
    ),
    "html": ("render_html",),
    "ledger": (
        "Budget",
        "Ledger",
        "LedgerEntry",
        "parse_budget",
        "release_with_ledger",
    ),
    "outcomes": (
        "AuditOutcome",
        "CalibrateOutcome",
        "DemoOutcome",
        "ReleaseOutcome",
        "VerifyOutcome",
    ),
    "release": (
        "ReleaseReport",
        "build_model",
        "calibrate_for",
        "release",
    ),
    # Each command from its own module (issue 28 item 4): `distpriv verify` must not import
    # the audit's, the release's or the ledger's modules (pipeline.run re-exports them all).
    "audit_command": ("run_audit",),
    "calibrate_command": (
        "run_calibrate",
        "run_demo",
    ),
    "run": ("run_release",),
    "verify_command": ("run_verify",),
    "sources": (
        "fingerprint",
        "load_frame",
        "resolve_source",
        "table_facts",
    ),
}

__all__ = [
    "ADULT_STATISTICS",
    "INCOME_SECRET",
    "AuditOutcome",
    "AutoChoice",
    "Budget",
    "CalibrateOutcome",
    "ComposedGuarantee",
    "DemoOutcome",
    "DemoReport",
    "DemoRow",
    "Ledger",
    "LedgerEntry",
    "ModelConfig",
    "ReleaseConfig",
    "ReleaseOutcome",
    "ReleaseReport",
    "ReleaseSpec",
    "VerifyOutcome",
    "build_model",
    "calibrate_for",
    "choose_mechanism",
    "compose",
    "fingerprint",
    "load_frame",
    "load_model_config",
    "load_release_config",
    "parse_budget",
    "release",
    "release_with_ledger",
    "render_html",
    "resolve_source",
    "run_audit",
    "run_calibrate",
    "run_demo",
    "run_release",
    "run_verify",
    "table_facts",
]

if TYPE_CHECKING:
    # The names as attach() resolves them at run time, for type checkers (which do not
    # follow a module __getattr__: without this every public name would be Any).
    from .audit_command import run_audit
    from .auto import AutoChoice, choose_mechanism
    from .calibrate_command import run_calibrate, run_demo
    from .config import ModelConfig, ReleaseConfig, load_model_config, load_release_config
    from .demo import ADULT_STATISTICS, INCOME_SECRET, DemoReport, DemoRow
    from .html import render_html
    from .ledger import Budget, Ledger, LedgerEntry, parse_budget, release_with_ledger
    from .ledger.compose import ComposedGuarantee, ReleaseSpec, compose
    from .outcomes import AuditOutcome, CalibrateOutcome, DemoOutcome, ReleaseOutcome, VerifyOutcome
    from .release import ReleaseReport, build_model, calibrate_for, release
    from .run import run_release
    from .sources import fingerprint, load_frame, resolve_source, table_facts
    from .verify_command import run_verify

__getattr__, __dir__ = attach(__name__, _EXPORTS)
