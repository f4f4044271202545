"""The curator's process: config → data → model → calibrate → verify → release → report.

One function per command (:func:`run_release`, :func:`run_audit`, :func:`run_demo`,
:func:`run_calibrate`), each returning a frozen outcome with a ``public`` report and the
curator's ``private`` diagnostics; :func:`release` is the same process as a library call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    # Each command from its own module: `distpriv verify` must not import the audit's, the
    # release's or the ledger's modules.
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

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
