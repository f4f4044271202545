"""Dataset-level (central) mechanisms: distribution privacy (Chen & Ohrimenko 2023) and
attribute privacy (Zhang, Ohrimenko & Cummings 2022)."""

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
    school_network,
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

__all__ = [
    "MECHANISMS",
    "MODEL_VIEWS",
    "AttributeNetworkModel",
    "CalibratedMechanism",
    "ColumnQuery",
    "GaussianAttributeBounds",
    "MarkovQuilt",
    "MechanismSpec",
    "ParameterNetwork",
    "QuiltNoise",
    "QuiltSearch",
    "TableFacts",
    "apgm_accuracy",
    "apgm_noise_variance",
    "apmqm_accuracy",
    "apmqm_quilts",
    "attribute_query_model",
    "calibrate",
    "daum_variance",
    "default_options",
    "gaussian_attribute_bounds",
    "gaussian_attribute_model",
    "gaussian_conditional",
    "mechanism_info",
    "model_view_for",
    "relax_max_divergence",
    "relax_wasserstein",
    "relaxed_parameters",
    "school_network",
    "theta_grid",
]
