"""One entry point, :func:`calibrate`, over a registry of named mechanisms."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..accounting.calibration_cache import sharing_calibration
from ..errors import MechanismNotApplicableError, ParameterError, ParameterTypeError
from ..population.confidence import DEFAULT_BETA, check_beta
from ..querymodel import GaussianQueryModel, SampledQueryModel
from ..util.threads import on_one_blas_thread
from ..util.validation import check_choice, check_epsilon, check_real
from .attribute_network import AttributeNetworkModel

if TYPE_CHECKING:
    from .base import CalibratedMechanism

__all__ = [
    "MECHANISMS",
    "MODEL_VIEWS",
    "MechanismSpec",
    "TableFacts",
    "calibrate",
    "default_options",
    "mechanism_info",
    "mechanisms_table",
    "model_view_for",
]

# What a mechanism is calibrated on: the Gaussian fit of f_θ, Monte Carlo samples of f_θ,
# or a Bayesian network over attribute parameters (APMQM).
MODEL_VIEWS = ("gaussian", "samples", "network")


class _Builder:
    """A mechanism's calibration function, imported from its module on first call.

    Why: the registry is read by every command (names, options, model views), but each
    mechanism module pulls in its own dependencies (scipy.stats, networkx, the convex
    solver); ``distpriv verify`` of one mechanism must not import the other sixteen
    (a fast cold start). ``module`` is relative to :mod:`distpriv.central`; ``kwargs`` are
    bound first, like :func:`functools.partial`.
    """

    def __init__(self, module: str, function: str, *args: Any, **kwargs: Any) -> None:
        self.module, self.function, self.args, self.kwargs = module, function, args, kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> CalibratedMechanism:
        fn = getattr(importlib.import_module(f"{__package__}.{self.module}"), self.function)
        result: CalibratedMechanism = fn(*self.args, *args, **self.kwargs, **kwargs)
        return result

    def __repr__(self) -> str:
        bound = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.module}.{self.function}({', '.join(bound)})"


@dataclass(frozen=True)
class TableFacts:
    """Public facts about the modelling table that default options are computed from.

    Computed once per table by the pipeline (not once per calibration).
    """

    #: n, the number of rows of a protected dataset.
    subset_size: int
    #: max − min of each statistic's per-row feature over the modelling table, shape (m,);
    #: the width of its declared range instead where the query declares a finite one.
    spans: tuple[float, ...]
    #: ``"mean"`` or ``"sum"`` per statistic (avg vs count/sum).
    scales: tuple[str, ...]
    # Lattice step of each statistic (NaN: not on a lattice), for the floored mechanisms
    # (distpriv.modeling.lattice.query_lattices); None when not computed.
    lattice_steps: tuple[float, ...] | None = None


def _groupdp_defaults(facts: TableFacts) -> dict[str, Any]:
    """The paper's group-DP baseline (Chen & Ohrimenko 2023 §5): g = n, range/n for a mean,
    the range (at least 1) for a count or sum; ranges declared with the query where given,
    else from the modelling table (:attr:`TableFacts.spans`)."""
    n = facts.subset_size
    sens = [
        span / n if scale == "mean" else max(span, 1.0)
        for span, scale in zip(facts.spans, facts.scales, strict=True)
    ]
    return {"group_size": n, "sensitivities": np.array(sens)}


def _floor_defaults(facts: TableFacts) -> dict[str, Any]:
    """The floored mechanisms' lattice: the steps detected on the modelling table."""
    return {} if facts.lattice_steps is None else {"lattice": np.array(facts.lattice_steps)}


QUERY_MODELS: tuple[type, ...] = (GaussianQueryModel, SampledQueryModel)
MODEL_TYPES: tuple[type, ...] = (*QUERY_MODELS, AttributeNetworkModel)


@dataclass(frozen=True)
class MechanismSpec:
    """A registered mechanism: how to calibrate it and what it needs.

    ``model_types`` are the model classes the mechanism is calibrated on: the query models
    f_θ by default, a Bayesian network over attribute parameters for APMQM.
    ``model_view`` says which view of a data-built model it is calibrated on (one of
    :data:`MODEL_VIEWS`; see :func:`model_view_for`), and ``defaults`` computes the options
    a data curator gets when the configuration does not set them (:func:`default_options`).
    """

    name: str
    summary: str
    theorem: str
    gaussian: bool
    options: tuple[str, ...]
    build: Callable[..., CalibratedMechanism]
    uses_model_covariance: bool = False
    model_types: tuple[type, ...] = QUERY_MODELS
    model_view: str = "gaussian"
    defaults: Callable[[TableFacts], dict[str, Any]] | None = None


_GAUSS_OPTS = ("calibration",)

_SPECS = (
    MechanismSpec(
        "wasserstein",
        "Laplace noise scaled to the largest W-infinity distance",
        "Chen & Ohrimenko 2023, Thm 3.1",
        False,
        (),
        _Builder("wasserstein", "calibrate_wasserstein"),
        model_view="samples",
    ),
    MechanismSpec(
        "approx-wasserstein",
        "Laplace noise scaled to (W, delta)-closeness",
        "Chen & Ohrimenko 2023, Thm 3.2/3.3",
        False,
        ("method",),
        _Builder("wasserstein", "calibrate_approx_wasserstein"),
        model_view="samples",
    ),
    MechanismSpec(
        "expm-l",
        "ExpM (L): i.i.d. Laplace noise scaled to Delta_E,1",
        "Chen & Ohrimenko 2023, Thm 4.1",
        False,
        (),
        _Builder("expected_value", "calibrate_expm", kind="laplace"),
    ),
    MechanismSpec(
        "expm-g",
        "ExpM (G): i.i.d. Gaussian noise scaled to Delta_E,2",
        "Chen & Ohrimenko 2023, Thm 4.2",
        True,
        _GAUSS_OPTS,
        _Builder("expected_value", "calibrate_expm", kind="gaussian"),
    ),
    MechanismSpec(
        "dirm-l",
        "DirM (L): Laplace noise along the mean differences",
        "Chen & Ohrimenko 2023, Thm 4.3",
        False,
        (),
        _Builder("expected_value", "calibrate_dirm", kind="laplace"),
    ),
    MechanismSpec(
        "dirm-g",
        "DirM (G): Gaussian noise along the mean differences",
        "Chen & Ohrimenko 2023, Thm 4.3",
        True,
        _GAUSS_OPTS,
        _Builder("expected_value", "calibrate_dirm", kind="gaussian"),
    ),
    MechanismSpec(
        "eigm",
        "EigM (G): Gaussian noise along the eigenvectors of Sigma_theta",
        "Chen & Ohrimenko 2023, Thm 4.5",
        True,
        _GAUSS_OPTS,
        _Builder("uncertainty", "calibrate_eigm"),
        True,
    ),
    MechanismSpec(
        "daum",
        "DauM (G): directional Gaussian noise using the model's variance",
        "Chen & Ohrimenko 2023, Alg. 1",
        True,
        (*_GAUSS_OPTS, "direction"),
        _Builder("uncertainty", "calibrate_daum"),
        True,
    ),
    MechanismSpec(
        "optimal-g",
        "Optimal-G: least-error Gaussian noise satisfying Cor. A.1",
        "Chen & Ohrimenko 2023, Cor. A.1 + convex program (distpriv)",
        True,
        (*_GAUSS_OPTS, "weights", "objective"),
        _Builder("optimal", "calibrate_optimal"),
        True,
    ),
    MechanismSpec(
        "groupdp-l",
        "Group-DP Laplace baseline (group size, sensitivities)",
        "Dwork & Roth 2014, Thm 2.2",
        False,
        ("group_size", "sensitivities"),
        _Builder("groupdp", "calibrate_groupdp", kind="laplace"),
        defaults=_groupdp_defaults,
    ),
    MechanismSpec(
        "groupdp-g",
        "Group-DP Gaussian baseline (group size, sensitivities)",
        "Dwork & Roth 2014, Thm A.1",
        True,
        (*_GAUSS_OPTS, "group_size", "sensitivities"),
        _Builder("groupdp", "calibrate_groupdp", kind="gaussian"),
        defaults=_groupdp_defaults,
    ),
    MechanismSpec(
        "noiseless",
        "No noise, when the model alone hides the secret",
        "Chen & Ohrimenko 2023, Thm 4.4",
        True,
        _GAUSS_OPTS,
        _Builder("uncertainty", "calibrate_noiseless"),
        True,
    ),
    MechanismSpec(
        "apgm",
        "APGM: Gaussian noise reduced by the conditional variance of F given the secret",
        "Zhang, Ohrimenko & Cummings 2022, Alg. 1 / Thm 1",
        True,
        _GAUSS_OPTS,
        _Builder("apgm", "calibrate_apgm"),
        True,
    ),
    MechanismSpec(
        "apmqm",
        "APMQM: Laplace noise scaled by the best Markov quilt of a parameter network",
        "Zhang, Ohrimenko & Cummings 2022, Alg. 2 / Thm 3",
        False,
        (),
        _Builder("apmqm", "calibrate_apmqm"),
        model_types=(AttributeNetworkModel,),
        model_view="network",
    ),
    # Full rank at rank-one prices: the main shape plus a floor of `floor` grid
    # steps in every coordinate (central/floored.py); calibrated exactly by default.
    MechanismSpec(
        "daum-floor",
        "DauM plus a noise floor on the statistics' grid (full rank)",
        "Chen & Ohrimenko 2023, Alg. 1 / Thm A.1, plus an independent floor (post-processing)",
        True,
        (*_GAUSS_OPTS, "direction", "lattice", "floor"),
        _Builder("floored", "calibrate_floored", "daum-floor"),
        True,
        defaults=_floor_defaults,
    ),
    MechanismSpec(
        "dirm-g-floor",
        "DirM (G) plus a noise floor on the statistics' grid (full rank)",
        "Chen & Ohrimenko 2023, Thm 4.3, plus an independent floor (post-processing)",
        True,
        (*_GAUSS_OPTS, "lattice", "floor"),
        _Builder("floored", "calibrate_floored", "dirm-g-floor"),
        defaults=_floor_defaults,
    ),
    MechanismSpec(
        "optimal-g-full",
        "Optimal-G over full-rank noise: least tr(W Sigma_Z) with Sigma_Z >= the floor",
        "Chen & Ohrimenko 2023, Cor. A.1 + convex program with Sigma_Z >= F (distpriv)",
        True,
        (*_GAUSS_OPTS, "weights", "objective", "lattice", "floor"),
        _Builder("floored", "calibrate_floored", "optimal-g-full"),
        True,
        defaults=_floor_defaults,
    ),
)

_REGISTRY = {s.name: s for s in _SPECS}
# The mechanisms central/floored.py calibrates and verifies itself (its FLOORED_MECHANISMS).
_FLOORED = frozenset(
    s.name for s in _SPECS if isinstance(s.build, _Builder) and s.build.module == "floored"
)
MECHANISMS: tuple[str, ...] = tuple(_REGISTRY)


def mechanism_info(name: str) -> MechanismSpec:
    """The registry entry of ``name``."""
    return _REGISTRY[check_choice(name, "mechanism", MECHANISMS)]


def model_view_for(name: str, model: Any) -> Any:
    """The view of ``model`` that mechanism ``name`` is calibrated on.

    A data-built model (:class:`~distpriv.DataQueryModel`) is a Gaussian query model that
    may also carry Monte Carlo samples: the Wasserstein mechanisms (Chen & Ohrimenko 2023,
    Thm 3.1-3.3) need the samples themselves (``model.to_sampled()``), the others the
    Gaussian. Other models are returned unchanged. This is the one place that decides.
    """
    view = mechanism_info(name).model_view
    if view == "samples" and not isinstance(model, SampledQueryModel):
        to_sampled = getattr(model, "to_sampled", None)
        if to_sampled is None:
            raise MechanismNotApplicableError(
                f"mechanism {name!r} is calibrated on Monte Carlo samples of f_theta (model "
                f"view 'samples'); a {type(model).__name__} has only a Gaussian: build the "
                "model from data with method='montecarlo'"
            )
        return to_sampled()
    return model


def default_options(name: str, facts: TableFacts) -> dict[str, Any]:
    """The options mechanism ``name`` gets by default for a table with ``facts`` (may be {})."""
    spec = mechanism_info(name)
    return {} if spec.defaults is None else spec.defaults(facts)


# Headroom for the squares, sums and products the calibrations form.
_RANGE = np.finfo(float).max / 1e8


def _check_range(model: GaussianQueryModel | SampledQueryModel) -> None:
    """Refuse models whose arithmetic would overflow, rather than return inf/zero noise."""
    m = model.dim
    with np.errstate(over="ignore", invalid="ignore"):
        diff = float(np.max(np.abs(model.mean_differences)))
        big = not np.isfinite(diff) or diff * diff * m > _RANGE
        if isinstance(model, GaussianQueryModel):
            cov = float(np.max(np.abs(model.covariances)))
            big = big or cov * m > _RANGE
    if big:
        raise ParameterError(
            "model: the means or covariances are so large that double-precision arithmetic "
            f"overflows (largest mean difference {diff:.3g}); rescale the statistics (the "
            "guarantee does not depend on their units)"
        )


@on_one_blas_thread
def _query_model(
    model: GaussianQueryModel | SampledQueryModel | AttributeNetworkModel, name: str
) -> GaussianQueryModel | SampledQueryModel:
    """The model as a query model; the floored and exact calibrations take no other."""
    if not isinstance(model, GaussianQueryModel | SampledQueryModel):
        raise MechanismNotApplicableError(
            f"mechanism {name!r} is calibrated on a query model, got a {type(model).__name__}"
        )
    return model


@on_one_blas_thread
@sharing_calibration
def calibrate(
    name: str,
    model: GaussianQueryModel | SampledQueryModel | AttributeNetworkModel,
    *,
    epsilon: float,
    delta: float = 0.0,
    beta: float | None = DEFAULT_BETA,
    **options: Any,
) -> CalibratedMechanism:
    """Calibrate the mechanism ``name`` to a query model.

    Parameters
    ----------
    name : str
        One of :data:`MECHANISMS`: ``"wasserstein"``, ``"approx-wasserstein"``,
        ``"expm-l"``, ``"expm-g"``, ``"dirm-l"``, ``"dirm-g"``, ``"eigm"``, ``"daum"``,
        ``"optimal-g"``, ``"groupdp-l"``, ``"groupdp-g"``, ``"noiseless"``, ``"apgm"``,
        ``"apmqm"``.
    model : GaussianQueryModel, SampledQueryModel or AttributeNetworkModel
        f_θ for each θ and the pairs Ψ. Gaussian mechanisms fit a Gaussian to a sampled
        model (and say so in the guarantee). For ``"apgm"`` the hypotheses are the
        combinations (θ, secret value) and the pairs the secret pairs within one θ
        (:func:`~distpriv.central.attribute_query_model`). ``"apmqm"`` takes an
        :class:`~distpriv.central.AttributeNetworkModel` and only it.
    epsilon : float
        ε > 0, finite.
    delta : float
        δ in [0, 1); Gaussian mechanisms need δ > 0. Pure mechanisms (Laplace) ignore it
        and report δ = 0.
    beta : float or None
        Confidence 1 − β for a model built from a modelling table that samples the
        population (``model.uncertainty`` set, :func:`distpriv.model_query` with
        ``population=False``, the default): the exact calibration then meets (ε, δ) on the
        worst members of a (1 − β) confidence set for the population's moments
        (:mod:`distpriv.population.confidence`), so the guarantee holds on the population with
        probability ≥ 1 − β over the draw of the table. Default 0.05. ``None``: calibrate
        on the fitted moments only (the premise says so). Ignored by models without
        uncertainty (given directly, or declared the whole population) and by the
        papers' calibrations (``"analytic"``, ``"classical"``).
    **options
        Mechanism options: ``calibration`` for the Gaussian ones: ``"exact"`` (default for
        expm-g, dirm-g, eigm, daum, optimal-g, apgm and noiseless) keeps the noise shape
        and finds the least scale that meets (ε, δ) for every pair, both directions,
        under the exact privacy profile of the model's own covariances
        (:mod:`distpriv.central.exact_calibration`); ``"analytic"`` (Balle & Wang's exact
        D*, default for groupdp-g) and ``"classical"`` are the papers' equal-covariance
        calibrations, kept to reproduce their tables — their headline is then what the
        exact profile verifies, with the target as "requested" when it is not met;
        ``method`` for approx-wasserstein; ``direction`` for daum;
        ``weights`` (per-statistic, or a matrix W in tr(W Σ_Z)) and ``objective``
        (``"relative"``, the default: each statistic's noise weighed against its own
        sampling variance, so units do not matter; ``"l2"``: the papers' E‖Z‖²) for
        optimal-g and optimal-g-full (:mod:`distpriv.central.objective`);
        ``group_size`` and ``sensitivities`` for the group-DP baselines; ``lattice`` and
        ``floor`` for the floored mechanisms. Options not given are filled from
        ``model.facts`` when the model carries them (a model built by
        :func:`distpriv.model_query`: :func:`default_options`).

    Returns
    -------
    CalibratedMechanism
        Noise, guarantee (with checked assumptions) and ``release``.

    Raises
    ------
    ParameterError, ParameterTypeError
        Invalid parameters or options.
    MechanismNotApplicableError
        The mechanism cannot give its guarantee for this model (including a model of a
        kind the mechanism does not take, e.g. a query model for ``"apmqm"``).

    Warns
    -----
    AssumptionWarning
        An assumption of the theorem does not hold on the model (recorded in the
        guarantee as well), or the classical constant is used with ε ≥ 1.
    """
    spec = mechanism_info(name)
    # Privacy parameters first: they are checked the same way for every kind of model.
    eps = check_epsilon(epsilon)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, high_inclusive=False)
    conf = check_beta(beta)
    if not isinstance(model, MODEL_TYPES):
        raise ParameterTypeError(
            f"model must be a GaussianQueryModel, SampledQueryModel or AttributeNetworkModel, "
            f"got {type(model).__name__}"
        )
    if not isinstance(model, spec.model_types):
        kinds = " or ".join(t.__name__ for t in spec.model_types)
        raise MechanismNotApplicableError(
            f"mechanism {name!r} is calibrated on a {kinds}, got a {type(model).__name__}"
            + (
                "; use 'apgm' for dataset attribute privacy on a query model"
                if name == "apmqm"
                else ""
            )
        )
    if spec.gaussian and dlt == 0.0:
        raise ParameterError(
            f"mechanism {name!r} adds Gaussian noise and needs delta > 0, got delta=0.0"
        )
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        allowed = ", ".join(spec.options) or "none"
        raise ParameterError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for mechanism {name!r}; "
            f"allowed: {allowed}"
        )
    # Only a mechanism with default options asks for them (a model computes its facts
    # on first use).
    facts = getattr(model, "facts", None) if spec.defaults is not None else None
    if isinstance(facts, TableFacts):
        # A model built from a table carries the table's facts: the options a data curator
        # gets by default (lattice, group-DP sensitivities) are the same on every path.
        options = {**default_options(name, facts), **options}
    if isinstance(model, GaussianQueryModel | SampledQueryModel):  # QUERY_MODELS
        _check_range(model)
    # Imported here, not at the top: see _Builder.
    from ..accounting import CALIBRATIONS, DISTANCE_CALIBRATIONS
    from .exact_calibration import EXACT_MECHANISMS, calibrate_exact

    if name in _FLOORED:
        from .floored import calibrate_floored

        model = _query_model(model, name)
        # Calibrated (exactly by default) and verified inside central/floored.py.
        cal = options.pop("calibration", "exact")
        check_choice(cal, "calibration", CALIBRATIONS)
        return calibrate_floored(
            name, model, epsilon=eps, delta=dlt, calibration=cal, beta=conf, **options
        )
    exact_ok = name in EXACT_MECHANISMS
    cal = options.pop("calibration", "exact" if exact_ok else "analytic")
    check_choice(cal, "calibration", CALIBRATIONS if exact_ok else DISTANCE_CALIBRATIONS)
    if spec.gaussian:
        options["calibration"] = cal
    if cal == "exact":
        qmodel = _query_model(model, name)
        gm = qmodel if isinstance(qmodel, GaussianQueryModel) else qmodel.to_gaussian()

        def build(other: str, *, calibration: str) -> CalibratedMechanism:
            opts = {**options, "calibration": calibration} if other == name else {}
            return _REGISTRY[other].build(model, epsilon=eps, delta=dlt, **opts)

        return calibrate_exact(name, qmodel, gm, build, epsilon=eps, delta=dlt, beta=conf)
    mech = spec.build(model, epsilon=eps, delta=dlt, **options)
    if not isinstance(model, GaussianQueryModel | SampledQueryModel):  # QUERY_MODELS
        return mech
    failed = {a.name for a in mech.guarantee.failed}
    # The same Gaussian the mechanism was calibrated on (fitted if given samples).
    gm = model if isinstance(model, GaussianQueryModel) else model.to_gaussian()
    if failed & {"equal-covariance", "translation"}:
        from .fallback import covariance_fallback

        # Thm 4.6: extra information about the papers' calibration, never the headline.
        mech = covariance_fallback(
            mech,
            gm,
            uses_model_covariance=spec.uses_model_covariance,
            d_star=mech.diagnostics.get("allowed_distance"),
        )
    if exact_ok:
        from ..population.exact import verified_headline

        # The headline is what holds: checked under the exact profile of each theta's
        # own covariance; a target that is not met becomes "requested".
        guarantee, check = verified_headline(mech.guarantee, gm, mech.noise_covariance)
        diag = {**mech.diagnostics, "exact_check": check.to_dict()}
        mech = dataclasses.replace(mech, guarantee=guarantee, diagnostics=diag)
    return mech


def mechanisms_table() -> list[dict[str, Any]]:
    """Every registered mechanism as a JSON-safe row (``distpriv mechanisms``): name,
    summary, theorem, whether it is Gaussian, the model view it needs and its options."""
    return [
        {
            "name": name,
            "summary": spec.summary,
            "theorem": spec.theorem,
            "gaussian": spec.gaussian,
            "model_view": spec.model_view,
            "options": list(spec.options),
        }
        for name, spec in ((n, mechanism_info(n)) for n in MECHANISMS)
    ]
