"""Property-inference attacks and the privacy audit (Chen & Ohrimenko 2023 §5.3)."""

from .audit import (
    UNDEFENDED,
    AuditAttackResult,
    AuditReport,
    MechanismAudit,
    accuracy_interval,
    audit,
)
from .bounds import EpsilonBound, clopper_pearson, epsilon_lower_bound
from .classifiers import CLASSIFIERS, make_classifier
from .likelihood import GaussianLikelihoodRatio
from .verify import DataLevelCheck, DirectionCheck, verify_on_data

__all__ = [
    "CLASSIFIERS",
    "UNDEFENDED",
    "AuditAttackResult",
    "AuditReport",
    "DataLevelCheck",
    "DirectionCheck",
    "EpsilonBound",
    "GaussianLikelihoodRatio",
    "MechanismAudit",
    "accuracy_interval",
    "audit",
    "clopper_pearson",
    "epsilon_lower_bound",
    "make_classifier",
    "verify_on_data",
]
