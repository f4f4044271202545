"""distpriv: distribution privacy for releasing statistics while hiding global properties.

The central flow (DESIGN.md §2): a query model (f_θ for each θ, and the pairs Ψ) →
``calibrate(mechanism, model, epsilon=..., delta=...)`` → ``release(F(data))`` →
a :class:`Release` carrying its :class:`PrivacyGuarantee`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import attach

# Imported on first use (distpriv._lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "_version": ("__version__",),
    "accounting": (
        "gaussian_constant",
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
        "population_set",
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
        "UtilityWarning",
    ),
    "accounting.pair_profile": (
        "GaussianPairProfile",
        "gaussian_delta",
        "gaussian_epsilon",
        "gaussian_pair_delta",
        "gaussian_pair_epsilon",
        "gaussian_pair_profile",
    ),
    "guarantees": (
        "Assumption",
        "PrivacyGuarantee",
        "Release",
    ),
    "modeling": (
        "DataQueryModel",
        "EventSecret",
        "MeanGrid",
        "MeanSecret",
        "ProportionSecret",
        "Query",
        "SeveralSecrets",
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
        "MomentUncertainty",
        "BootstrapUncertainty",
    ),
}

__all__ = [
    "MECHANISMS",
    "Assumption",
    "AssumptionWarning",
    "BootstrapUncertainty",
    "Budget",
    "BudgetExceededError",
    "CalibratedMechanism",
    "CompositionError",
    "ConfigError",
    "DataLevelCheck",
    "DataQueryModel",
    "DistPrivError",
    "EventSecret",
    "GaussianPairProfile",
    "GaussianQueryModel",
    "GridRounding",
    "Ledger",
    "LedgerError",
    "MeanGrid",
    "MeanSecret",
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
    "SeveralSecrets",
    "UtilityWarning",
    "__version__",
    "accounting",
    "attacks",
    "calibrate",
    "central",
    "closeness",
    "compose",
    "datasets",
    "distances",
    "divergences",
    "experiments",
    "gaussian_constant",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pair_delta",
    "gaussian_pair_epsilon",
    "gaussian_pair_profile",
    "grid_rounding",
    "guarantees",
    "local",
    "max_mahalanobis_distance",
    "mechanism_info",
    "model_query",
    "modeling",
    "noise",
    "pipeline",
    "population_set",
    "querymodel",
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

if TYPE_CHECKING:
    # The names as attach() resolves them at run time, for type checkers (which do not
    # follow a module __getattr__: without this every public name would be Any).
    from . import (
        accounting,
        attacks,
        central,
        datasets,
        distances,
        divergences,
        experiments,
        guarantees,
        local,
        modeling,
        noise,
        pipeline,
        querymodel,
    )
    from ._version import __version__
    from .accounting import gaussian_constant, max_mahalanobis_distance
    from .accounting.pair_profile import (
        GaussianPairProfile,
        gaussian_delta,
        gaussian_epsilon,
        gaussian_pair_delta,
        gaussian_pair_epsilon,
        gaussian_pair_profile,
    )
    from .attacks import DataLevelCheck, verify_on_data
    from .central import (
        MECHANISMS,
        CalibratedMechanism,
        calibrate,
        mechanism_info,
        population_set,
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
    from .modeling import (
        DataQueryModel,
        EventSecret,
        MeanGrid,
        MeanSecret,
        ProportionSecret,
        Query,
        SeveralSecrets,
        model_query,
    )
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
    from .querymodel import (
        BootstrapUncertainty,
        GaussianQueryModel,
        MomentUncertainty,
        SampledQueryModel,
    )

__getattr__, __dir__ = attach(
    __name__,
    _EXPORTS,
    # Subpackages and modules resolve on first use too (``dp.accounting``), as in scipy.
    modules=(
        "accounting",
        "attacks",
        "central",
        "datasets",
        "distances",
        "divergences",
        "experiments",
        "guarantees",
        "local",
        "modeling",
        "noise",
        "pipeline",
        "querymodel",
    ),
)
