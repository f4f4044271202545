"""Property-inference attacks, the privacy audit (Chen & Ohrimenko 2023 §5.3) and the
data-level check of δ(ε) on resampled statistics (:func:`verify_on_data`)."""

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
from .lattice import LatticeDecoder, detect_lattice, lattice_decoder
from .likelihood import GaussianLikelihoodRatio
from .verify import DataLevelCheck, DirectionCheck, NullControl, detectable_delta, verify_on_data

__all__ = [
    "CLASSIFIERS",
    "UNDEFENDED",
    "AuditAttackResult",
    "AuditReport",
    "DataLevelCheck",
    "DirectionCheck",
    "EpsilonBound",
    "GaussianLikelihoodRatio",
    "LatticeDecoder",
    "MechanismAudit",
    "NullControl",
    "accuracy_interval",
    "audit",
    "clopper_pearson",
    "detect_lattice",
    "detectable_delta",
    "epsilon_lower_bound",
    "lattice_decoder",
    "make_classifier",
    "verify_on_data",
]
