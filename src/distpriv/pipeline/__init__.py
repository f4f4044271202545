"""The curator's process: config → data → model → calibrate → ledger → release → report."""

from .compose import ComposedGuarantee, ReleaseSpec, compose, table_fingerprint
from .ledger import Budget, Ledger, LedgerEntry, parse_budget

__all__ = [
    "Budget",
    "ComposedGuarantee",
    "Ledger",
    "LedgerEntry",
    "ReleaseSpec",
    "compose",
    "parse_budget",
    "table_fingerprint",
]
