"""Dataset-level (central) mechanisms: distribution privacy (Chen & Ohrimenko 2023) and
attribute privacy (Zhang, Ohrimenko & Cummings 2022)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
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

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
