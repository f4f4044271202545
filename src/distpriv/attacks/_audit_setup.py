"""The audit's set-up: validated inputs, its size bound, the mechanisms and the attacks.

Everything :func:`distpriv.attacks.audit` checks or builds before the first repetition
(:func:`check_audit_size`, the mechanisms calibrated by name, the likelihood-ratio tests),
and the data-level checks of δ(ε) it runs on request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..central import CalibratedMechanism, calibrate, model_view_for
from ..errors import MechanismNotApplicableError, ParameterError, ParameterTypeError
from ..modeling import DataQueryModel, ProportionSecret
from ..querymodel import GaussianQueryModel, SampledQueryModel
from ..util.validation import check_positive_int, check_real
from .audit_kinds import AuditTarget, model_rows
from .audit_report import UNDEFENDED
from .classifiers import CLASSIFIERS
from .likelihood import GaussianLikelihoodRatio
from .verify import DataLevelCheck, verify_on_data

# ---------------------------------------------------------------------------------------
# Set-up: validated inputs, the mechanisms, the attacks.


@dataclass(frozen=True)
class _Setting:
    """The validated scalar inputs of one audit."""

    pair: tuple[float, float]
    index: tuple[int, int]
    repetitions: int
    n_shadow: int
    n_test: int
    confidence: float
    classifiers: tuple[str, ...]

    def labels(self, n: int) -> np.ndarray:
        """n decisions' true labels: the first half θ₀ (0), the rest θ₁ (1)."""
        return np.repeat([0, 1], [n // 2, n - n // 2]).astype(np.int8)


# A bound on the work of one audit, checked before any data is read: each repetition trains
# every classifier on n_shadow fresh datasets per mechanism (about a second in all on Adult);
# 1,000 repetitions already take tens of minutes, and the Clopper–Pearson interval narrows
# only as 1/sqrt(repetitions). Larger audits: run several with different seeds.
MAX_REPETITIONS = 1_000
MAX_DATASETS = 100_000  # n_shadow and n_test, each


def check_audit_size(repetitions: object, n_shadow: object = 200, n_test: object = 200) -> int:
    """``repetitions`` checked against :data:`MAX_REPETITIONS` (and the dataset counts against
    :data:`MAX_DATASETS`); returns it as an int.

    Raises
    ------
    ParameterError, ParameterTypeError
        Not a positive integer, or above the bound (naming it and the parameter).
    """
    reps = check_positive_int(repetitions, "repetitions")
    if reps > MAX_REPETITIONS:
        raise ParameterError(
            f"repetitions must be at most {MAX_REPETITIONS:,} (an audit of {reps:,} repetitions "
            "would run for days); run several audits with different seeds instead"
        )
    for name, value in (("n_shadow", n_shadow), ("n_test", n_test)):
        if check_positive_int(value, name, minimum=2) > MAX_DATASETS:
            raise ParameterError(f"{name} must be at most {MAX_DATASETS:,}, got {value}")
    return reps


def _validate(
    secret: object,
    repetitions: int,
    n_shadow: int,
    n_test: int,
    confidence: float,
    classifiers: Sequence[str],
    mechanisms: Sequence[object],
    pair: tuple[float, float] | None,
) -> _Setting:
    if not isinstance(secret, ProportionSecret | AuditTarget):  # other kinds: audit_kinds
        raise ParameterTypeError(f"secret must be a ProportionSecret, got {type(secret).__name__}")
    reps = check_audit_size(repetitions, n_shadow, n_test)
    n_sh = check_positive_int(n_shadow, "n_shadow", minimum=2)
    n_te = check_positive_int(n_test, "n_test", minimum=2)
    conf = check_real(
        confidence, "confidence", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    clfs = tuple(classifiers)
    if not clfs:
        raise ParameterError("classifiers must name at least one classifier")
    for c in clfs:
        if c not in CLASSIFIERS:
            raise ParameterError(f"unknown classifier {c!r}; choose from {', '.join(CLASSIFIERS)}")
    if not mechanisms:
        raise ParameterError("mechanisms must name at least one mechanism")
    pr = tuple(secret.pairs[0]) if pair is None else tuple(pair)
    if len(pr) != 2 or pr[0] == pr[1] or any(p not in secret.values for p in pr):
        raise ParameterError(f"pair must be two different values of {secret.values}, got {pr}")
    idx = (secret.values.index(pr[0]), secret.values.index(pr[1]))
    return _Setting((float(pr[0]), float(pr[1])), idx, reps, n_sh, n_te, conf, clfs)


def _resolve_mechanisms(
    mechanisms: Sequence[str | CalibratedMechanism],
    model: DataQueryModel | None,
    epsilon: float | None,
    delta: float,
    options: Mapping[str, Mapping[str, Any]] | None,
) -> tuple[list[tuple[str, CalibratedMechanism | None]], list[str]]:
    """(name, mechanism or None for the undefended release) and notes on those refused."""
    mechs: list[tuple[str, CalibratedMechanism | None]] = []
    notes: list[str] = []
    for item in mechanisms:
        if isinstance(item, CalibratedMechanism):
            mechs.append((item.name, item))
        elif item == UNDEFENDED:
            mechs.append((UNDEFENDED, None))
        elif isinstance(item, str):
            if model is None or epsilon is None:
                raise ParameterError(
                    f"auditing mechanism {item!r} by name needs model= and epsilon="
                )
            target = model_view_for(item, model)
            opts = dict((options or {}).get(item, {}))
            try:
                mechs.append((item, calibrate(item, target, epsilon=epsilon, delta=delta, **opts)))
            except MechanismNotApplicableError as exc:
                notes.append(f"{item} not audited: {exc}")
        else:
            raise ParameterTypeError(
                f"mechanisms must hold names or CalibratedMechanism objects, got {item!r}"
            )
    keys = [m for m, _ in mechs]
    if len(set(keys)) != len(keys):
        raise ParameterError(f"mechanism names must be distinct (rename duplicates): {keys}")
    return mechs, notes


def _likelihood_ratios(
    model: GaussianQueryModel,
    pair: tuple[float, float],
    mechs: list[tuple[str, CalibratedMechanism | None]],
    dim: int,
) -> dict[str, GaussianLikelihoodRatio]:
    means, covs = model_rows(model, pair)
    return {
        m: GaussianLikelihoodRatio(
            means, covs, np.zeros((dim, dim)) if mech is None else mech.noise_covariance
        )
        for m, mech in mechs
    }


def _verify_samples(
    verify_samples: SampledQueryModel | None, model: DataQueryModel | None
) -> SampledQueryModel:
    if verify_samples is not None:
        if not isinstance(verify_samples, SampledQueryModel):
            raise ParameterTypeError(
                f"verify_samples must be a SampledQueryModel, got {type(verify_samples).__name__}"
            )
        return verify_samples
    if isinstance(model, DataQueryModel) and model.samples is not None:
        return model.to_sampled()
    raise ParameterError(
        "verify=True needs resampled statistics: pass verify_samples= (a SampledQueryModel, "
        "e.g. model_query(..., method='montecarlo', n_samples=20000).to_sampled()) or a "
        "Monte Carlo model="
    )


def _verifications(
    mechs: list[tuple[str, CalibratedMechanism | None]],
    samples: SampledQueryModel,
    n_eval: int,
    gen: np.random.Generator,
    notes: list[str],
) -> dict[str, DataLevelCheck]:
    """The data-level check of every noisy mechanism (a note for those it cannot check)."""
    out = {}
    for m, mech in mechs:
        if mech is None:
            continue
        try:
            out[m] = verify_on_data(samples, mech, rng=gen, n_eval=n_eval)
        except MechanismNotApplicableError as exc:
            notes.append(f"{m}: data-level check not run: {exc}")
    return out
