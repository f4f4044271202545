"""Property-inference attacks, the privacy audit (Chen & Ohrimenko 2023 §5.3) and the
data-level check of δ(ε) on resampled statistics (:func:`verify_on_data`,
:func:`verify_sequential`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach

# Imported on first use (distpriv.util.lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "audit": (
        "UNDEFENDED",
        "AuditAttackResult",
        "AuditReport",
        "MechanismAudit",
        "accuracy_interval",
        "audit",
    ),
    "audit_kinds": ("AuditTarget", "EventSampler", "MeanSampler", "MixtureLikelihoodRatio"),
    "audit_several": ("SeveralAuditReport", "audit_attributes"),
    "audit_pairs": ("audit_pairs", "choose_pairs"),
    "audit_pairs_report": ("PairsAuditReport",),
    "bounds": (
        "EpsilonBound",
        "accuracy_allowed",
        "clopper_pearson",
        "epsilon_lower_bound",
    ),
    "classifiers": (
        "CLASSIFIERS",
        "make_classifier",
    ),
    "likelihood": ("GaussianLikelihoodRatio",),
    "verify": (
        "DataLevelCheck",
        "DirectionCheck",
        "verify_on_data",
        "NullControl",
        "detectable_delta",
    ),
    "verify_sequential": ("look_schedule", "verify_sequential"),
}

# The one export list: __all__ and the type checkers' imports follow _EXPORTS.
__all__ = sorted(name for names in _EXPORTS.values() for name in names)

if TYPE_CHECKING:
    # The names as attach() resolves them at run time, for type checkers (which do not
    # follow a module __getattr__: without this every public name would be Any).
    from .audit import (
        UNDEFENDED,
        AuditAttackResult,
        AuditReport,
        MechanismAudit,
        accuracy_interval,
        audit,
    )
    from .audit_kinds import AuditTarget, EventSampler, MeanSampler, MixtureLikelihoodRatio
    from .audit_pairs import audit_pairs, choose_pairs
    from .audit_pairs_report import PairsAuditReport
    from .audit_several import SeveralAuditReport, audit_attributes
    from .bounds import EpsilonBound, accuracy_allowed, clopper_pearson, epsilon_lower_bound
    from .classifiers import CLASSIFIERS, make_classifier
    from .likelihood import GaussianLikelihoodRatio
    from .verify import (
        DataLevelCheck,
        DirectionCheck,
        NullControl,
        detectable_delta,
        verify_on_data,
    )
    from .verify_sequential import look_schedule, verify_sequential

__getattr__, __dir__ = attach(__name__, _EXPORTS)
