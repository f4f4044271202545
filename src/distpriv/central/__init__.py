"""Dataset-level (central) mechanisms: distribution privacy (Chen & Ohrimenko 2023) and
attribute privacy (Zhang, Ohrimenko & Cummings 2022)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach

# Imported on first use (distpriv.util.lazy): `distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn. Submodule -> the names it defines.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "apgm": (
        "GaussianAttributeBounds",
        "apgm_accuracy",
        "apgm_noise_variance",
        "attribute_query_model",
        "gaussian_attribute_bounds",
        "gaussian_attribute_model",
        "gaussian_conditional",
        "theta_grid",
    ),
    "apmqm": (
        "AttributeNetworkModel",
        "ColumnQuery",
        "QuiltNoise",
        "QuiltSearch",
        "apmqm_accuracy",
        "apmqm_quilts",
    ),
    "base": ("CalibratedMechanism",),
    "bayesnet": (
        "MarkovQuilt",
        "ParameterNetwork",
    ),
    "registry": (
        "MECHANISMS",
        "MODEL_VIEWS",
        "MechanismSpec",
        "TableFacts",
        "calibrate",
        "default_options",
        "mechanism_info",
        "model_view_for",
    ),
    "relaxed": (
        "relax_max_divergence",
        "relax_wasserstein",
        "relaxed_parameters",
    ),
    "uncertainty": ("daum_variance",),
}

# The one export list: __all__ and the type checkers' imports follow _EXPORTS.
__all__ = sorted(name for names in _EXPORTS.values() for name in names)

if TYPE_CHECKING:
    # The names as attach() resolves them at run time, for type checkers (which do not
    # follow a module __getattr__: without this every public name would be Any).
    from .apgm import (
        GaussianAttributeBounds,
        apgm_accuracy,
        apgm_noise_variance,
        attribute_query_model,
        gaussian_attribute_bounds,
        gaussian_attribute_model,
        gaussian_conditional,
        theta_grid,
    )
    from .apmqm import (
        AttributeNetworkModel,
        ColumnQuery,
        QuiltNoise,
        QuiltSearch,
        apmqm_accuracy,
        apmqm_quilts,
    )
    from .base import CalibratedMechanism
    from .bayesnet import MarkovQuilt, ParameterNetwork
    from .registry import (
        MECHANISMS,
        MODEL_VIEWS,
        MechanismSpec,
        TableFacts,
        calibrate,
        default_options,
        mechanism_info,
        model_view_for,
    )
    from .relaxed import relax_max_divergence, relax_wasserstein, relaxed_parameters
    from .uncertainty import daum_variance

__getattr__, __dir__ = attach(__name__, _EXPORTS)
