"""distpriv: distribution privacy for releasing statistics while hiding global properties.

The central flow (DESIGN.md §2): a query model (f_θ for each θ, and the pairs Ψ) →
``calibrate(mechanism, model, epsilon=..., delta=...)`` → ``release(F(data))`` →
a :class:`Release` carrying its :class:`PrivacyGuarantee`.
"""

from __future__ import annotations

from ._lazy import attach

# Imported on first use (distpriv._lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "_version": ("__version__",),
    "accounting": (
        "GaussianPairProfile",
        "gaussian_constant",
        "gaussian_delta",
        "gaussian_epsilon",
        "gaussian_pair_delta",
        "gaussian_pair_epsilon",
        "gaussian_pair_profile",
        "max_mahalanobis_distance",
    ),
    "attacks": (
        "DataLevelCheck",
        "verify_on_data",
    ),
    "central": (
        "MECHANISMS",
        "CalibratedMechanism",
        "calibrate",
        "mechanism_info",
        "relax_max_divergence",
        "relax_wasserstein",
        "relaxed_parameters",
    ),
    "distances": (
        "closeness",
        "winf_distance",
    ),
    "errors": (
        "AssumptionWarning",
        "BudgetExceededError",
        "CompositionError",
        "ConfigError",
        "DistPrivError",
        "LedgerError",
        "MechanismNotApplicableError",
        "ParameterError",
        "ParameterTypeError",
        "PrivacyLeakWarning",
        "SamplerError",
    ),
    "guarantees": (
        "Assumption",
        "PrivacyGuarantee",
        "Release",
    ),
    "modeling": (
        "DataQueryModel",
        "ProportionSecret",
        "Query",
        "model_query",
    ),
    "noise": (
        "GridRounding",
        "Noise",
        "NoiseComponent",
        "grid_rounding",
        "secure_sample",
    ),
    "pipeline": (
        "Budget",
        "Ledger",
        "ReleaseReport",
        "compose",
        "release",
        "release_with_ledger",
        "run_audit",
        "run_calibrate",
        "run_demo",
        "run_release",
    ),
    "querymodel": (
        "GaussianQueryModel",
        "SampledQueryModel",
    ),
}

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

__getattr__, __dir__ = attach(
    __name__,
    _EXPORTS,
    modules=(
        "divergences",
        "local",
    ),
)
