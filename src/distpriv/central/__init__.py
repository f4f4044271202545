"""Dataset-level (central) distribution-privacy mechanisms (Chen & Ohrimenko 2023)."""

from .base import CalibratedMechanism
from .registry import MECHANISMS, MechanismSpec, calibrate, mechanism_info
from .relaxed import relax_max_divergence, relax_wasserstein, relaxed_parameters
from .uncertainty import daum_variance

__all__ = [
    "MECHANISMS",
    "CalibratedMechanism",
    "MechanismSpec",
    "calibrate",
    "daum_variance",
    "mechanism_info",
    "relax_max_divergence",
    "relax_wasserstein",
    "relaxed_parameters",
]
