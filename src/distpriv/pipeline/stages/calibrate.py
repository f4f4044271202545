"""The calibrate stage: the plan's mechanism on the release's model, or ``auto``'s choice.

:func:`calibrate_planned` takes the plan's
:class:`~distpriv.pipeline.plan.CalibrationSpec`: a named mechanism is calibrated on the view
of the model its registry entry asks for (:func:`calibrate_for`, options the table's facts
fill), ``"auto"`` by the comparison below; either way a noise that is not a usable number is
refused (:func:`checked_noise`). The comparison's results (:class:`AutoChoice`, its
:class:`Candidate` rows) are in :mod:`.auto_choice`.

``mechanism = "auto"``: the least-error mechanism whose guarantee verifies on the model.

Every registered mechanism that takes this kind of model is calibrated at the requested
(ε, δ); a mechanism is a candidate when its guarantee *verifies*: every assumption of its
theorem was checked on the model and holds (``guarantee.holds is True``) and the verified
headline (ε, δ) is no weaker than the request. Among the candidates the one with the least
expected squared error E[Zᵀ W Z] = Σᵢ wᵢ Var(Zᵢ) is chosen: by default (``objective =
"relative"``) wᵢ = 1/vᵢ, vᵢ statistic i's sampling variance under the model, so the
comparison — and optimal-g's and optimal-g-full's noise, which minimise the same W — does
not depend on the statistics' units (:mod:`distpriv.central.objective`); ``objective =
"l2"`` is W = I, the papers' E‖Z‖²; declared weights are used as given. Mechanisms whose
guarantee rests on a failed or unverifiable assumption are never chosen, however small
their noise: their headline is not proven (Chen & Ohrimenko 2023, §4.4).

By default (``prune=True``) a mechanism that provably cannot be chosen is not calibrated
(:mod:`distpriv.central.auto_pruning`): its row says "not calibrated" and why, with the
error it would exceed when the certificate gives one; the choice and its noise are those
of the full comparison (``prune=False``, every row calibrated).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...accounting.calibration_cache import sharing_calibration
from ...central import (
    MECHANISMS,
    CalibratedMechanism,
    TableFacts,
    calibrate,
    default_options,
    mechanism_info,
    model_view_for,
)
from ...central.objective import (
    DEFAULT_OBJECTIVE,
    comparison_weights,
    config_objective,
    objective_kind,
)
from ...errors import ConfigError, DistPrivError, MechanismNotApplicableError, ParameterError
from ...modeling import DataQueryModel
from ...modeling.lattice import detect_lattice
from ...querymodel import GaussianQueryModel, SampledQueryModel
from ...util.threads import on_one_blas_thread
from ...util.validation import check_delta, check_epsilon
from ..plan import CalibrationSpec
from .auto_choice import AutoChoice, Candidate

__all__ = [
    "AUTO",
    "AutoChoice",
    "Candidate",
    "calibrate_candidates",
    "calibrate_for",
    "calibrate_planned",
    "checked_noise",
    "choose_for_table",
    "choose_mechanism",
]

AUTO = "auto"
# What ``[mechanism] name = "auto"`` accepts besides epsilon and delta.
AUTO_OPTIONS = (
    "weights",
    "objective",
    "calibration",
    "allow_partial_noise",
    "beta",
    "floor",
    "prune",
)

# Relative slack for "the verified headline is no weaker than the request": the verified
# numbers are rounded up by the accountant, never down.
_TOLERANCE = 1e-9
# Errors within this relative distance of the least are one error to auto's choice: the
# exact scale search stops within a relative 1e-5 of the least scale
# (population/exact.py, _SCALE_RTOL), so two shapes that publish the same noise can land up
# to about 4e-5 apart in error, in an order the statistics' units can change.
TIE_RTOL = 1e-4

ProgressCallback = Callable[[int, int], None]

# Numerical failures of a calibration that drop the candidate (with the reason) instead of
# ending the comparison; programming errors (TypeError, AttributeError...) still propagate.
_NUMERIC_FAILURES: tuple[type[Exception], ...] = (
    ArithmeticError,
    np.linalg.LinAlgError,
)


def _views(model: Any) -> tuple[Any, Any]:
    """(model for the Gaussian mechanisms, model for the Wasserstein ones).

    The Wasserstein mechanisms use Monte Carlo samples when the model has them (Chen &
    Ohrimenko 2023 Thm 3.1/3.2) and the Gaussian model otherwise (Thm 3.3 for
    approx-wasserstein; wasserstein then refuses unequal covariances itself).
    """
    to_sampled = getattr(model, "to_sampled", None)
    if to_sampled is not None and getattr(model, "samples", None) is not None:
        return model, to_sampled()
    return model, model


def _partial_noise(mech: CalibratedMechanism) -> str:
    """Why ``auto`` passes over a mechanism whose noise leaves directions uncovered ('' if not)."""
    rank, m = mech.noise_rank, mech.dim
    if rank >= m:
        return ""
    return (
        f"noise covers {rank} of {m} directions: the other components are published exactly "
        "and, on grid-valued statistics, can reveal the statistics (see verify_on_data); "
        "pick it by name, or pass allow_partial_noise=True, if the statistics are continuous"
    )


def _verdict(g: Any, epsilon: float, delta: float) -> tuple[bool, str]:
    if g.holds is False:
        failed = ", ".join(a.name for a in g.failed)
        return False, f"assumption(s) fail on the model: {failed}"
    if g.holds is None:
        unknown = ", ".join(a.name for a in g.assumptions if a.holds is None)
        return False, f"assumption(s) cannot be verified on the model: {unknown}"
    if g.epsilon > epsilon * (1 + _TOLERANCE) or g.delta > delta * (1 + _TOLERANCE):
        return False, (
            f"verified guarantee ({g.epsilon:.4g}, {g.delta:.3g}) is weaker than the "
            f"request ({epsilon:g}, {delta:g})"
        )
    if g.notion != "distribution privacy":
        # A guarantee of another notion over the same pairs (attribute privacy, group DP): say so.
        return True, f"{g.notion} w.r.t. the same pairs"
    return True, ""


@on_one_blas_thread
@sharing_calibration
def calibrate_candidates(
    model: GaussianQueryModel | SampledQueryModel,
    *,
    epsilon: float,
    delta: float,
    weights: Any = None,
    objective: str = DEFAULT_OBJECTIVE,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    mechanisms: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
    allow_partial_noise: bool = False,
    prune: bool = False,
) -> tuple[Candidate, ...]:
    """Calibrate every applicable mechanism at (ε, δ) and say which verify.

    Parameters
    ----------
    model : GaussianQueryModel or SampledQueryModel
        The query model (a ``DataQueryModel`` with Monte Carlo samples also lets the
        Wasserstein mechanisms take part).
    epsilon, delta : float
        The requested guarantee (keyword-only).
    weights : array_like, shape (m,), optional
        Declared positive per-statistic weights wᵢ of E[Σᵢ wᵢ Zᵢ²] (also passed to
        ``optimal-g`` and ``optimal-g-full``, which then minimise the same criterion).
    objective : {"relative", "l2"}, default "relative"
        Without declared weights: ``"relative"`` is wᵢ = 1/vᵢ, vᵢ statistic i's sampling
        variance under the model (the mean over θ of Σ_θ's diagonal), so that neither the
        choice nor the shaped mechanisms' noise depends on the statistics' units;
        ``"l2"`` is W = I, the papers' E‖Z‖² (their tables are computed with it).
        Mechanisms whose shape is fixed by their theorem (expm-g's σ²I, eigm, daum, ...)
        keep it: the objective only decides whether they win.
    options : mapping of name → mapping, optional
        Options per mechanism (e.g. ``{"groupdp-l": {"group_size": 100, ...}}``).
    mechanisms : sequence of str, optional
        Restrict the comparison (default: every registered mechanism).
    progress : callable(done, total), optional
        Called after each mechanism.
    allow_partial_noise : bool, default False
        Let mechanisms whose noise covers fewer than m directions (daum, dirm, a rank-one
        optimal-g) be chosen. Off by default: the uncovered components are published exactly,
        and on grid-valued statistics they can reveal F(Data) (on Adult the data-level check
        certifies δ(1) ≥ 0.26 for daum); the Gaussian model cannot see this.
    prune : bool, default False
        Skip the calibration of candidates that provably cannot be chosen
        (:mod:`distpriv.central.auto_pruning`): fixed-shape families (expm-g, eigm, apgm,
        daum-floor, dirm-g-floor) whose noise fails at the best verified error so far, and
        noise of rank below m whatever its scale (daum, dirm-g, noiseless) unless
        ``allow_partial_noise``. A skipped row is not calibrated (``mse`` NaN,
        ``pruned=True``, ``calibrated=None``), its reason says why, and ``mse_above`` is
        the error its calibration would exceed when the certificate gives one. The choice
        and its noise are the full search's; ``progress`` then follows
        :func:`~distpriv.central.auto_pruning.calibration_order`. Off here (every
        mechanism's error, e.g. for the utility curves); on in :func:`choose_mechanism`.

    Returns
    -------
    tuple of Candidate
        In the order of ``mechanisms``. A mechanism that cannot be calibrated (an error of
        the library, or a numerical failure such as an overflow) is a row with its reason.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    names = list(MECHANISMS if mechanisms is None else mechanisms)
    for name in names:
        mechanism_info(name)
    w = comparison_weights(_views(model)[0], weights=weights, objective=objective)
    opts = {k: dict(v) for k, v in (options or {}).items()}
    gaussian_view, sampled_view = _views(model)
    # central/auto_pruning imports the floored mechanisms (scipy.linalg): not on the paths
    # that calibrate one named mechanism (tests/test_cli_startup.py).
    from ...central.auto_pruning import calibration_order, dominated, partial_rank

    floor_lattice = None
    done: dict[str, Candidate] = {}
    nan = float("nan")
    best: Candidate | None = None
    for k, name in enumerate(calibration_order(names, prune)):
        spec = mechanism_info(name)
        mine = dict(opts.get(name, {}))
        if "weights" in spec.options and weights is not None:
            mine.setdefault("weights", w)
        elif "objective" in spec.options:  # the same W, computed by the mechanism itself
            mine.setdefault("objective", objective)
        if "lattice" in spec.options and "lattice" not in mine and not _has_lattice(model):
            # No lattice from the table: detect it on the model's Monte Carlo samples.
            if floor_lattice is None:
                floor_lattice = _sample_lattice(model)
            if floor_lattice is not None:
                mine["lattice"] = floor_lattice
        # The registry says which view each mechanism is calibrated on.
        target = sampled_view if spec.model_view == "samples" else gaussian_view
        reason = ""
        mech = None
        above: float | None = None
        if prune:
            reason = partial_rank(name, target, mine, allow_partial_noise)
        if prune and best is not None and not reason:
            # Above the ties' reach (TIE_RTOL): a noise that fails there is never chosen.
            bound = best.mse * (1.0 + TIE_RTOL)
            reason = dominated(name, target, mine, w, bound, best.mechanism, epsilon=eps, delta=dlt)
            above = bound if reason else None
        skipped = bool(reason)
        if skipped:
            pass  # provably not the choice: not calibrated (central/auto_pruning.py)
        elif spec.gaussian and dlt == 0.0:
            reason = "adds Gaussian noise and needs delta > 0"
        else:
            try:
                with warnings.catch_warnings():
                    # An assumption failing is recorded in the guarantee and in the table.
                    warnings.simplefilter("ignore")
                    mech = calibrate(name, target, epsilon=eps, delta=dlt, **mine)
            except DistPrivError as exc:
                reason = " ".join(str(exc).split())
            except _NUMERIC_FAILURES as exc:
                # A numerical failure of one calibration (an overflow, a singular matrix)
                # drops that candidate with its reason, never the whole comparison.
                text = " ".join(str(exc).split()) or "no message"
                reason = f"could not be calibrated ({type(exc).__name__}: {text})"
        if mech is None:
            done[name] = Candidate(
                name, nan, False, nan, nan, reason, pruned=skipped, mse_above=above
            )
        else:
            cov = np.diag(mech.noise_covariance)
            mse = float(cov.sum() if w is None else (w * cov).sum())
            ok, why = _verdict(mech.guarantee, eps, dlt)
            partial = "" if allow_partial_noise else _partial_noise(mech)
            only_partial = bool(ok and partial)
            if ok and partial:
                ok, why = False, partial
            g = mech.guarantee
            done[name] = Candidate(
                name,
                mse,
                ok,
                float(g.epsilon),
                float(g.delta),
                why,
                mech,
                noise_rank=mech.noise_rank,
                partial_noise=only_partial,
            )
            if ok and (best is None or mse < best.mse):
                best = done[name]
        if progress is not None:
            progress(k + 1, len(names))
    return tuple(done[n] for n in names)


@on_one_blas_thread
def choose_mechanism(
    model: GaussianQueryModel | SampledQueryModel,
    *,
    epsilon: float,
    delta: float,
    weights: Any = None,
    objective: str = DEFAULT_OBJECTIVE,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    mechanisms: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
    allow_partial_noise: bool = False,
    prune: bool = True,
) -> AutoChoice:
    """Choose the least-error mechanism whose guarantee verifies at (ε, δ).

    The comparison follows Chen & Ohrimenko 2023 (Table 2 compares the mechanisms by
    their error at equal (ε, δ)), restricted to guarantees that are proven on this model:
    every assumption of the mechanism's theorem holds (§4.4) and the verified headline
    meets the request.

    Parameters
    ----------
    model, epsilon, delta, weights, objective, options, mechanisms, progress
        As in :func:`calibrate_candidates`.
    allow_partial_noise
        As in :func:`calibrate_candidates`.
    prune : bool, default True
        As in :func:`calibrate_candidates`, but on by default: the same choice and noise,
        without calibrating what provably cannot be chosen (those rows say "not
        calibrated" and why, and carry no error; the rank-one optimum of the ``vs_rank_one``
        column needs daum's calibration). ``prune=False``: every row calibrated.

    Returns
    -------
    AutoChoice
        The chosen calibrated mechanism and the comparison table. Ties keep registry
        order.

    Raises
    ------
    MechanismNotApplicableError
        No mechanism verifies; the message gives each mechanism's reason.
    """
    cands = calibrate_candidates(
        model,
        epsilon=epsilon,
        delta=delta,
        weights=weights,
        objective=objective,
        options=options,
        mechanisms=mechanisms,
        progress=progress,
        allow_partial_noise=allow_partial_noise,
        prune=prune,
    )
    ok = [c for c in cands if c.verified]
    if not ok:
        reasons = "; ".join(f"{c.mechanism}: {c.reason}" for c in cands)
        raise MechanismNotApplicableError(
            f"mechanism='auto': no mechanism's guarantee verifies on this model at "
            f"epsilon={float(epsilon):g}, delta={float(delta):g} ({reasons})"
        )
    # The least error, ties within TIE_RTOL going to the first in the registry's order:
    # two shapes that give the same noise (optimal-g's and optimal-g-full's, daum-floor's)
    # differ in their error only by the calibration's rounding, which must not decide the
    # name (it would change with the statistics' units).
    least = min(c.mse for c in ok)
    best = next(c for c in ok if c.mse <= least * (1.0 + TIE_RTOL))
    if best.calibrated is None:  # pragma: no cover - a verified candidate is a calibrated one
        raise RuntimeError(f"auto: verified candidate {best.mechanism!r} has no calibration")
    w = comparison_weights(_views(model)[0], weights=weights, objective=objective)
    return AutoChoice(
        mechanism=best.calibrated,
        candidates=cands,
        epsilon=float(epsilon),
        delta=float(delta),
        weights=None if w is None else tuple(float(x) for x in w),
        objective=objective_kind(objective, weights),
    )


def choose_for_table(
    model: GaussianQueryModel | SampledQueryModel,
    *,
    epsilon: float,
    delta: float,
    options: Mapping[str, Any] | None = None,
    facts: Any = None,
    progress: ProgressCallback | None = None,
    lattice: Any = None,
) -> AutoChoice:
    """``mechanism = "auto"`` of a release configuration.

    Parameters
    ----------
    model : GaussianQueryModel or SampledQueryModel
        The model built from the modelling table.
    epsilon, delta : float
        The configuration's request.
    options : mapping, optional
        The ``[mechanism]`` table's other keys: ``weights`` (one positive number per
        statistic), ``objective`` (``"relative"``, the default, or ``"l2"``: see
        :func:`calibrate_candidates`), ``calibration`` (for the Gaussian mechanisms),
        ``allow_partial_noise`` (see :func:`calibrate_candidates`), ``floor`` (the floored
        mechanisms' noise floor in grid steps, default
        :data:`~distpriv.central.floored.DEFAULT_FLOOR`) and ``prune`` (default true: see
        :func:`choose_mechanism`; false calibrates every row of the comparison); nothing
        else.
    facts : TableFacts, optional
        Facts about the modelling table for the registry's default options (the group-DP
        baselines' group size and sensitivities), as for a named mechanism.
    progress : callable(done, total), optional
    lattice : sequence of float, optional
        The grid step of each statistic (NaN: none) for the floored mechanisms, when
        neither ``facts`` nor the model (``model.facts``, :func:`distpriv.model_query`)
        carry it.

    Raises
    ------
    ConfigError
        An option ``auto`` does not take.
    MechanismNotApplicableError
        No mechanism verifies.
    """
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(AUTO_OPTIONS))
    if unknown:
        raise ConfigError(
            f"[mechanism] option(s) {', '.join(map(repr, unknown))} do not apply to "
            f"name = 'auto'; it takes: {', '.join(AUTO_OPTIONS)}"
        )
    per: dict[str, dict[str, Any]] = {}
    for name in MECHANISMS:
        spec = mechanism_info(name)
        mine = dict(default_options(name, facts)) if facts is not None else {}
        if "calibration" in opts and spec.gaussian:
            mine["calibration"] = opts["calibration"]
        if "beta" in opts:  # confidence on the population: the same for every candidate
            mine["beta"] = opts["beta"]
        if "floor" in opts and "floor" in spec.options:  # grid steps (central/floored.py)
            mine["floor"] = opts["floor"]
        if lattice is not None and "lattice" in spec.options and "lattice" not in mine:
            mine["lattice"] = lattice  # the grid detected on the table (library release)
        if mine:
            per[name] = mine
    return choose_mechanism(
        model,
        epsilon=epsilon,
        delta=delta,
        weights=opts.get("weights"),
        objective=config_objective(opts.get("objective", DEFAULT_OBJECTIVE)),
        options=per,
        progress=progress,
        allow_partial_noise=_flag(opts.get("allow_partial_noise", False)),
        prune=_flag(opts.get("prune", True), "prune"),
    )


def calibrate_for(
    mechanism: str,
    model: DataQueryModel,
    *,
    epsilon: float,
    delta: float,
    options: Mapping[str, Any] | None = None,
    facts: TableFacts | None = None,
    beta: float | str | None = "default",
) -> CalibratedMechanism:
    """Calibrate ``mechanism`` on the view of ``model`` its registry entry names.

    Options not given are filled from the registry's defaults for the table (``facts``,
    computed once per table by :func:`distpriv.pipeline.stages.data.table_facts`).
    ``beta`` (confidence 1 − β on the population, :func:`distpriv.calibrate`) overrides a
    ``beta`` among the options; by default the options' or the library's (0.05).
    """
    opts = dict(options or {})
    if beta != "default":
        opts["beta"] = beta
    if facts is not None:
        opts = {**default_options(mechanism, facts), **opts}
    target = model_view_for(mechanism, model)
    return checked_noise(calibrate(mechanism, target, epsilon=epsilon, delta=delta, **opts))


def checked_noise(mech: CalibratedMechanism) -> CalibratedMechanism:
    """Refuse a calibration whose noise is not a usable number (ε far too small or large).

    ε = 1e-300 asks for Laplace scales of ~1e300, whose variance overflows; ε = 1e300 for
    scales that underflow to 0. Either way the guarantee would be stated for noise that
    cannot be drawn, so the calibration is refused, naming ε.
    """
    eps = mech.guarantee.epsilon
    problem = None
    with np.errstate(all="ignore"):
        try:
            ok = bool(np.all(np.isfinite(mech.noise_covariance)))
            ok = ok and bool(np.isfinite(mech.expected_l2_error()))
        except (ZeroDivisionError, OverflowError, FloatingPointError, ValueError):
            ok = False
    if not ok:
        problem = "too small" if eps < 1.0 else "too large"
        raise ParameterError(
            f"epsilon={eps!r} is {problem} for mechanism {mech.name!r}: the noise it needs "
            "is not a representable number"
        )
    return mech


def calibrate_planned(
    spec: CalibrationSpec,
    model: Any,
    *,
    facts: TableFacts | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[CalibratedMechanism, AutoChoice | None]:
    """The calibrate stage of a release: the plan's mechanism on ``model``, or ``auto``'s.

    Parameters
    ----------
    spec : CalibrationSpec
        The mechanism (or ``"auto"``), (ε, δ), β and the mechanism's options.
    model : DataQueryModel
        The release's model (:func:`distpriv.pipeline.stages.model.build_query_model`).
    facts : TableFacts, optional
        The modelling table's facts for default options; by default the model's own.
    progress : callable(done, total), optional
        Called as ``auto`` calibrates each candidate.

    Returns
    -------
    (CalibratedMechanism, AutoChoice or None)
        The mechanism, refused when its noise is not a usable number
        (:func:`checked_noise`), and ``auto``'s comparison.
    """
    if spec.mechanism == AUTO:
        # auto's own options, β first: a β among the options is the curator's.
        options = {"beta": spec.beta, **spec.options}
        choice = choose_for_table(
            model,
            epsilon=spec.epsilon,
            delta=spec.delta,
            options=options,
            facts=facts,
            progress=progress,
        )
        return checked_noise(choice.mechanism), choice
    mech = calibrate_for(
        spec.mechanism,
        model,
        epsilon=spec.epsilon,
        delta=spec.delta,
        options=spec.mechanism_options(),
        facts=facts,
    )
    return mech, None


def _has_lattice(model: Any) -> bool:
    """The model carries its table's lattice (``model.facts``, :func:`distpriv.model_query`),
    which :func:`distpriv.calibrate` uses: the same grid as the configuration path."""
    facts = getattr(model, "facts", None)
    return getattr(facts, "lattice_steps", None) is not None


def _sample_lattice(model: Any) -> tuple[float, ...] | None:
    """Lattice steps detected on a model's Monte Carlo samples (NaN: none), or None."""
    samples = getattr(model, "samples", None)
    if not samples:
        return None
    pooled = np.vstack(samples)
    steps = []
    for k in range(pooled.shape[1]):
        lat = detect_lattice(pooled[:, k])
        steps.append(math.nan if lat.step is None else lat.step)
    return tuple(steps)


def _flag(value: Any, key: str = "allow_partial_noise") -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"[mechanism] {key} must be true or false, got {value!r}")
    return value
