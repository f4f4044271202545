"""distpriv: distribution privacy for releasing statistics while hiding global properties.

The central flow (docs/architecture.md §2): a query model (f_θ for each θ, and the pairs Ψ) →
``calibrate(mechanism, model, epsilon=..., delta=...)`` → ``release(F(data))`` →
a :class:`Release` carrying its :class:`PrivacyGuarantee`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    # Subpackages and modules resolve on first use too (``dp.accounting``), as in scipy.
    from . import (
        accounting,
        attacks,
        central,
        composition,
        datasets,
        distances,
        divergences,
        experiments,
        guarantees,
        local,
        modeling,
        noise,
        pipeline,
        population,
        querymodel,
        report,
    )
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
        relax_max_divergence,
        relax_wasserstein,
        relaxed_parameters,
    )
    from .composition import ComposedGuarantee, JointModelling, ReleaseSpec, compose
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
        CellTable,
        DataQueryModel,
        EventSecret,
        MeanGrid,
        MeanSecret,
        ProportionSecret,
        Query,
        SeveralSecrets,
        histogram_cells,
        marginal_cells,
        model_query,
    )
    from .moment_uncertainty import BootstrapUncertainty, MomentUncertainty
    from .noise import GridRounding, Noise, NoiseComponent, grid_rounding, secure_sample
    from .pipeline import (
        Budget,
        Ledger,
        ReleaseReport,
        release,
        release_with_ledger,
        run_audit,
        run_calibrate,
        run_demo,
        run_release,
    )
    from .population import POPULATION_SETS, population_set
    from .querymodel import GaussianQueryModel, SampledQueryModel
    from .report import render_html
    from .util.version import __version__

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
