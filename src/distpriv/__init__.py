"""distpriv: distribution privacy for releasing statistics while hiding global properties.

The central flow (DESIGN.md §2): a query model (f_θ for each θ, and the pairs Ψ) →
``calibrate(mechanism, model, epsilon=..., delta=...)`` → ``release(F(data))`` →
a :class:`Release` carrying its :class:`PrivacyGuarantee`.
"""

from . import divergences, local
from ._version import __version__
from .accounting import (
    GaussianPairProfile,
    gaussian_constant,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_pair_delta,
    gaussian_pair_epsilon,
    gaussian_pair_profile,
    max_mahalanobis_distance,
)
from .attacks import DataLevelCheck, verify_on_data
from .central import (
    MECHANISMS,
    CalibratedMechanism,
    calibrate,
    mechanism_info,
    relax_max_divergence,
    relax_wasserstein,
    relaxed_parameters,
)
from .distances import closeness, winf_distance
from .errors import (
    AssumptionWarning,
    BudgetExceededError,
    CompositionError,
    ConfigError,
    DistPrivError,
    LedgerError,
    MechanismNotApplicableError,
    ParameterError,
    ParameterTypeError,
    PrivacyLeakWarning,
    SamplerError,
    UtilityWarning,
)
from .guarantees import Assumption, PrivacyGuarantee, Release
from .modeling import DataQueryModel, ProportionSecret, Query, model_query
from .noise import GridRounding, Noise, NoiseComponent, grid_rounding, secure_sample
from .pipeline import (
    Budget,
    Ledger,
    ReleaseReport,
    compose,
    release,
    release_with_ledger,
    run_audit,
    run_calibrate,
    run_demo,
    run_release,
)
from .querymodel import GaussianQueryModel, MomentUncertainty, SampledQueryModel

__all__ = [
    "MECHANISMS",
    "Assumption",
    "AssumptionWarning",
    "Budget",
    "BudgetExceededError",
    "CalibratedMechanism",
    "CompositionError",
    "ConfigError",
    "DataLevelCheck",
    "DataQueryModel",
    "DistPrivError",
    "GaussianPairProfile",
    "GaussianQueryModel",
    "GridRounding",
    "Ledger",
    "LedgerError",
    "MechanismNotApplicableError",
    "MomentUncertainty",
    "Noise",
    "NoiseComponent",
    "ParameterError",
    "ParameterTypeError",
    "PrivacyGuarantee",
    "PrivacyLeakWarning",
    "ProportionSecret",
    "Query",
    "Release",
    "ReleaseReport",
    "SampledQueryModel",
    "SamplerError",
    "UtilityWarning",
    "__version__",
    "calibrate",
    "closeness",
    "compose",
    "divergences",
    "gaussian_constant",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pair_delta",
    "gaussian_pair_epsilon",
    "gaussian_pair_profile",
    "grid_rounding",
    "local",
    "max_mahalanobis_distance",
    "mechanism_info",
    "model_query",
    "relax_max_divergence",
    "relax_wasserstein",
    "relaxed_parameters",
    "release",
    "release_with_ledger",
    "run_audit",
    "run_calibrate",
    "run_demo",
    "run_release",
    "secure_sample",
    "verify_on_data",
    "winf_distance",
]
