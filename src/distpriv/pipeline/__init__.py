"""The curator's process: config → data → model → calibrate → verify → release → report.

One function per command (:func:`run_release`, :func:`run_audit`, :func:`run_demo`,
:func:`run_calibrate`), each returning a frozen outcome with a ``public`` report and the
curator's ``private`` diagnostics; :func:`release` is the same process as a library call.
"""

from .auto import AutoChoice, choose_mechanism
from .compose import ComposedGuarantee, ReleaseSpec, compose
from .config import (
    ModelConfig,
    ReleaseConfig,
    load_model_config,
    load_release_config,
)
from .demo import ADULT_STATISTICS, INCOME_SECRET, DemoReport, DemoRow
from .html import render_html
from .ledger import Budget, Ledger, LedgerEntry, parse_budget, release_with_ledger
from .outcomes import AuditOutcome, CalibrateOutcome, DemoOutcome, ReleaseOutcome, VerifyOutcome
from .release import ReleaseReport, build_model, calibrate_for, release
from .run import run_audit, run_calibrate, run_demo, run_release, run_verify
from .sources import fingerprint, load_frame, resolve_source, table_facts

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
