"""Property-inference attacks on released statistics and the privacy audit (Chen §5.3).

One repetition draws shadow datasets from the auxiliary data and test datasets from the
test data (as index arrays, all at once), computes the query on them, and evaluates every
mechanism on the same test datasets: each test vector is released through the mechanism,
and three kinds of attacker guess the secret —

* the paper's meta-classifier trained on the shadow statistics as they are (one fit per
  repetition, predicting every mechanism's releases in one batch);
* the same classifier trained on shadow statistics passed through the mechanism (an
  attacker who knows the mechanism);
* the likelihood-ratio test under the query model's Gaussian approximation of the release.

Their pooled decisions give an empirical ε lower bound (:func:`epsilon_lower_bound`);
the audit flags a mechanism as **violated** when that bound exceeds the claimed ε. On
request it also runs the data-level check of δ(ε) (:func:`~distpriv.attacks.verify_on_data`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_positive_int, check_real, check_rng
from .._version import __version__
from ..central import CalibratedMechanism, calibrate, model_view_for
from ..errors import MechanismNotApplicableError, ParameterError, ParameterTypeError
from ..guarantees import to_jsonable
from ..modeling import DataQueryModel, ProportionSecret, Query
from ..modeling.strata import StratifiedSampler
from ..querymodel import GaussianQueryModel, SampledQueryModel
from .bounds import EpsilonBound, clopper_pearson, epsilon_lower_bound
from .classifiers import CLASSIFIERS, fit_predict
from .likelihood import GaussianLikelihoodRatio
from .verify import DataLevelCheck, verify_on_data

__all__ = ["AuditAttackResult", "AuditReport", "MechanismAudit", "accuracy_interval", "audit"]

UNDEFENDED = "none"
LIKELIHOOD_RATIO = "likelihood-ratio"
#: Confidence of the accuracy intervals (two-sided Clopper–Pearson).
ACCURACY_CONFIDENCE = 0.95


@dataclass(frozen=True)
class AuditAttackResult:
    """One attack against one mechanism in the audit, over all repetitions.

    (Not to be confused with :class:`distpriv.local.AttackResult`, the Bayes attack on a
    local mechanism.)

    Attributes
    ----------
    attack : str
        e.g. ``"logistic"``, ``"logistic (mechanism-aware)"``, ``"likelihood-ratio"``.
    accuracy : float
        Mean accuracy over repetitions (= pooled accuracy: every repetition makes the same
        number of decisions).
    interval : tuple of float
        95 % two-sided Clopper–Pearson interval of the accuracy from the pooled decisions;
        always inside [0, 1].
    per_repetition : tuple of float
    confusion : tuple of int
        Pooled (tp, fn, fp, tn), θ₁ being the positive class.
    bound : EpsilonBound
        ε lower bound from the pooled decisions.
    """

    attack: str
    accuracy: float
    interval: tuple[float, float]
    per_repetition: tuple[float, ...]
    confusion: tuple[int, int, int, int]
    bound: EpsilonBound

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(
            {
                "attack": self.attack,
                "accuracy": self.accuracy,
                "interval": self.interval,
                "per_repetition": self.per_repetition,
                "confusion": self.confusion,
                "epsilon_lower_bound": self.bound.to_dict(),
            }
        )


@dataclass(frozen=True)
class MechanismAudit:
    """The audit of one mechanism: claim, attacks, bound, verdict and data-level check."""

    mechanism: str
    epsilon: float
    delta: float
    attacks: tuple[AuditAttackResult, ...]
    epsilon_lower: float
    strongest: str
    verdict: str
    fallback: tuple[float, float] | None = None
    verification: DataLevelCheck | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (``verification`` is ``None`` unless the audit ran it)."""
        return to_jsonable(
            {
                "mechanism": self.mechanism,
                "claimed_epsilon": self.epsilon,
                "claimed_delta": self.delta,
                "epsilon_lower_bound": self.epsilon_lower,
                "strongest_attack": self.strongest,
                "verdict": self.verdict,
                "fallback": self.fallback,
                "attacks": [a.to_dict() for a in self.attacks],
                "verification": None if self.verification is None else self.verification.to_dict(),
            }
        )


@dataclass(frozen=True)
class AuditReport:
    """Every audited mechanism, the undefended baseline and the setting."""

    mechanisms: tuple[MechanismAudit, ...]
    pair: tuple[float, float]
    repetitions: int
    n_shadow: int
    n_test: int
    confidence: float
    classifiers: tuple[str, ...]
    seed: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""

        return to_jsonable(
            {
                "version": __version__,
                "seed": self.seed,
                "pair": self.pair,
                "repetitions": self.repetitions,
                "n_shadow": self.n_shadow,
                "n_test": self.n_test,
                "confidence": self.confidence,
                "classifiers": self.classifiers,
                "notes": self.notes,
                "mechanisms": [m.to_dict() for m in self.mechanisms],
            }
        )

    def _repr_html_(self) -> str:
        """Compact HTML summary for Jupyter (from the package templates)."""
        from .._html import repr_audit

        return repr_audit(self.to_dict())

    def get(self, mechanism: str) -> MechanismAudit:
        """The audit of ``mechanism`` (``"none"`` for the undefended release)."""
        for m in self.mechanisms:
            if m.mechanism == mechanism:
                return m
        raise KeyError(mechanism)


def accuracy_interval(
    correct: int, total: int, confidence: float = ACCURACY_CONFIDENCE
) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval of an accuracy from ``correct`` of ``total``.

    Exact for independent decisions with a common success rate; for pooled repetitions
    whose rates differ slightly it covers their average rate (Hoeffding 1956). It is
    always inside [0, 1], also with few decisions or all of them correct.
    """
    side = 1.0 - (1.0 - confidence) / 2.0
    return (
        clopper_pearson(correct, total, side, "lower"),
        clopper_pearson(correct, total, side, "upper"),
    )


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
    if not isinstance(secret, ProportionSecret):
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


def _pair_model(
    model: GaussianQueryModel, pair: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    labels = list(model.labels)
    try:
        idx = [labels.index(p) for p in pair]
    except ValueError:
        raise ParameterError(
            f"the query model has no hypotheses {pair}; its labels are {model.labels}"
        ) from None
    return model.means[idx], model.covariances[idx]


def _likelihood_ratios(
    model: GaussianQueryModel, pair: tuple[float, float], mechs: list, dim: int
) -> dict[str, GaussianLikelihoodRatio]:
    means, covs = _pair_model(model, pair)
    return {
        m: GaussianLikelihoodRatio(
            means, covs, np.zeros((dim, dim)) if mech is None else mech.noise_covariance
        )
        for m, mech in mechs
    }


# ---------------------------------------------------------------------------------------
# The attacks, repetition by repetition.


class _Tally:
    """Per mechanism and attack: accuracy per repetition and the pooled confusion matrix."""

    def __init__(self, mechanisms: list[str], attacks: list[str]) -> None:
        self.attacks = attacks
        self.accuracy = {m: {a: [] for a in attacks} for m in mechanisms}
        self.confusion = {m: {a: np.zeros(4, dtype=np.int64) for a in attacks} for m in mechanisms}

    def record(self, mech: str, attack: str, pred: np.ndarray, y: np.ndarray) -> None:
        self.accuracy[mech][attack].append(float(np.mean(pred == y)))
        self.confusion[mech][attack] += [
            int(np.sum((pred == 1) & (y == 1))),
            int(np.sum((pred == 0) & (y == 1))),
            int(np.sum((pred == 1) & (y == 0))),
            int(np.sum((pred == 0) & (y == 0))),
        ]


def _draw(sampler: StratifiedSampler, st: _Setting, n: int, gen: np.random.Generator) -> np.ndarray:
    """n datasets' statistics, the first half under θ₀ and the rest under θ₁."""
    half = n // 2
    return np.vstack(
        [sampler.draw(st.index[0], half, gen), sampler.draw(st.index[1], n - half, gen)]
    )


def _repetition(
    st: _Setting,
    aux: StratifiedSampler,
    tst: StratifiedSampler,
    mechs: list[tuple[str, CalibratedMechanism | None]],
    lrs: Mapping[str, GaussianLikelihoodRatio],
    tally: _Tally,
    gen: np.random.Generator,
    mechanism_aware: bool,
) -> None:
    """One repetition: fresh shadow and test datasets, every attack on every mechanism."""
    x_sh, x_te = _draw(aux, st, st.n_shadow, gen), _draw(tst, st, st.n_test, gen)
    y_sh, y_te = st.labels(st.n_shadow), st.labels(st.n_test)
    seed = int(gen.integers(2**31))
    released = {
        m: x_te if mech is None else x_te + mech.noise.sample(st.n_test, gen) for m, mech in mechs
    }
    order = [m for m, _ in mechs]
    for c in st.classifiers:
        # One classifier trained on the raw shadow statistics scores every mechanism's
        # releases of the same test datasets, in one batch.
        (pred,) = fit_predict(c, x_sh, y_sh, [np.vstack([released[m] for m in order])], seed)
        for m, part in zip(order, np.split(pred, len(order)), strict=True):
            tally.record(m, c, part, y_te)
    for m, mech in mechs:
        if mechanism_aware:
            x_aware = x_sh if mech is None else x_sh + mech.noise.sample(st.n_shadow, gen)
            for c in st.classifiers:
                (pred,) = fit_predict(c, x_aware, y_sh, [released[m]], seed)
                tally.record(m, f"{c} (mechanism-aware)", pred, y_te)
        if m in lrs:
            tally.record(m, LIKELIHOOD_RATIO, lrs[m].decide(released[m]), y_te)


# ---------------------------------------------------------------------------------------
# Summaries.


def _attack_result(
    attack: str, accs: list[float], confusion: np.ndarray, claim_delta: float, conf: float
) -> AuditAttackResult:
    tp, fn, fp, tn = (int(v) for v in confusion)
    bound = epsilon_lower_bound(tp, fn, fp, tn, delta=min(claim_delta, 0.999999), confidence=conf)
    return AuditAttackResult(
        attack,
        float(np.mean(accs)),
        accuracy_interval(tp + tn, tp + fn + fp + tn),
        tuple(accs),
        (tp, fn, fp, tn),
        bound,
    )


def _summarise(
    name: str,
    mech: CalibratedMechanism | None,
    tally: _Tally,
    confidence: float,
    verification: DataLevelCheck | None,
) -> MechanismAudit:
    """Claim, attack results, ε lower bound and verdict of one mechanism."""
    claim_eps = math.inf if mech is None else mech.guarantee.epsilon
    claim_delta = 0.0 if mech is None else mech.guarantee.delta
    # Bonferroni over the attacks: the largest bound holds at ``confidence``.
    per_attack = 1.0 - (1.0 - confidence) / len(tally.attacks)
    results = tuple(
        _attack_result(
            a, tally.accuracy[name][a], tally.confusion[name][a], claim_delta, per_attack
        )
        for a in tally.attacks
    )
    eps_lb = max(r.bound.epsilon_lower for r in results)
    if mech is None:
        verdict = "undefended"
    else:
        verdict = "violated" if eps_lb > claim_eps * (1 + 1e-9) else "consistent"
    fb = None
    if mech is not None and mech.guarantee.fallback is not None:
        fb = (mech.guarantee.fallback.epsilon, mech.guarantee.fallback.delta)
    strongest = max(results, key=lambda r: r.accuracy).attack
    return MechanismAudit(
        name, claim_eps, claim_delta, results, eps_lb, strongest, verdict, fb, verification
    )


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


def audit(
    *,
    auxiliary: Any,
    test: Any,
    query: Query | Mapping[str, str],
    secret: ProportionSecret,
    subset_size: int,
    mechanisms: Sequence[str | CalibratedMechanism],
    model: DataQueryModel | None = None,
    epsilon: float | None = None,
    delta: float = 0.0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    pair: tuple[float, float] | None = None,
    repetitions: int = 10,
    n_shadow: int = 200,
    n_test: int = 200,
    classifiers: Sequence[str] = ("logistic",),
    confidence: float = 0.95,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int, int], None] | None = None,
    mechanism_aware: bool = True,
    likelihood_ratio: bool = True,
    verify: bool = False,
    verify_samples: SampledQueryModel | None = None,
    verify_n_eval: int = 10_000,
) -> AuditReport:
    """Attack each mechanism's releases and test its claimed ε empirically.

    Parameters
    ----------
    auxiliary : DataFrame, Arrow table or path
        The attacker's data, for shadow datasets (Chen & Ohrimenko 2023 §5.3: 10,000 rows).
    test : DataFrame, Arrow table or path
        Data the test datasets are drawn from (each is released through the mechanism).
    query, secret, subset_size
        As for :func:`distpriv.release`.
    mechanisms : sequence of str or CalibratedMechanism
        Registry names (calibrated on ``model`` at ``epsilon``/``delta``) or already
        calibrated mechanisms (e.g. one with deliberately too little noise). ``"none"``
        audits the undefended release (claimed ε = inf).
    model : DataQueryModel, optional
        The query model used to calibrate named mechanisms and by the likelihood-ratio
        attack (required for both).
    epsilon, delta : float
        Privacy parameters for named mechanisms.
    options : mapping, optional
        Per-mechanism options, e.g. ``{"groupdp-g": {"group_size": 100, ...}}``.
    pair : (float, float), optional
        The two secret values to tell apart; default the secret's first pair.
    repetitions : int
        Fresh shadow and test datasets each time (the paper: 50); at most
        :data:`MAX_REPETITIONS` (1,000), refused before any work.
    n_shadow, n_test : int
        Datasets per repetition, half per value (the paper: 200 and 200).
    classifiers : sequence of str
        Meta-classifiers among ``"logistic"`` (the paper's), ``"lda"``,
        ``"gradient-boosting"``, ``"mlp"``.
    confidence : float
        Joint confidence of each mechanism's ε lower bound, in (0, 1) (Bonferroni over
        its attacks and both directions).
    rng : int, Generator or None
    progress : callable, optional
        Called as ``progress(done, total)`` after each repetition.
    mechanism_aware, likelihood_ratio : bool
        Also run the mechanism-aware classifiers and the likelihood-ratio test (default).
        With both off, only the paper's attack runs: one classifier per repetition scores
        every mechanism, which makes large sweeps cheap.
    verify : bool
        Also run :func:`~distpriv.attacks.verify_on_data` for every noisy mechanism and
        attach it to its :class:`MechanismAudit` (``verification``).
    verify_samples : SampledQueryModel, optional
        The resampled statistics for ``verify`` (default: the samples of a Monte Carlo
        ``model``).
    verify_n_eval : int
        ``n_eval`` of the data-level check.

    Returns
    -------
    AuditReport

    Notes
    -----
    Every decision that enters a bound is made on a test dataset drawn after the attack
    was fixed (classifiers are trained on shadow data; the likelihood-ratio test uses the
    model), so the Clopper–Pearson bounds apply. Pooling repetitions gives a sum of
    independent Bernoulli decisions whose rates differ slightly between repetitions; the
    binomial bound on their average rate stays valid (Hoeffding 1956).
    """
    q = query if isinstance(query, Query) else Query(query)
    st = _validate(secret, repetitions, n_shadow, n_test, confidence, classifiers, mechanisms, pair)
    samples = _verify_samples(verify_samples, model) if verify else None
    gen = check_rng(rng)
    aux = StratifiedSampler(auxiliary, q, secret, subset_size, role="auxiliary data")
    tst = StratifiedSampler(test, q, secret, subset_size, role="test data")
    mechs, notes = _resolve_mechanisms(mechanisms, model, epsilon, delta, options)
    lrs = (
        _likelihood_ratios(model, st.pair, mechs, q.dim)
        if model is not None and likelihood_ratio
        else {}
    )
    attacks = [*st.classifiers]
    if mechanism_aware:
        attacks += [f"{c} (mechanism-aware)" for c in st.classifiers]
    if lrs:
        attacks.append(LIKELIHOOD_RATIO)
    tally = _Tally([m for m, _ in mechs], attacks)
    for r in range(st.repetitions):
        _repetition(st, aux, tst, mechs, lrs, tally, gen, mechanism_aware)
        if progress is not None:
            progress(r + 1, st.repetitions)
    checks = {}
    if samples is not None:
        checks = _verifications(mechs, samples, verify_n_eval, gen, notes)
    out = tuple(_summarise(m, mech, tally, st.confidence, checks.get(m)) for m, mech in mechs)
    seed = rng if isinstance(rng, int) and not isinstance(rng, bool) else None
    return AuditReport(
        out,
        st.pair,
        st.repetitions,
        st.n_shadow,
        st.n_test,
        st.confidence,
        st.classifiers,
        seed,
        tuple(notes),
    )
