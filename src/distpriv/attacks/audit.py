"""Property-inference attacks on released statistics and the privacy audit (Chen §5.3).

One repetition draws shadow datasets from the auxiliary data and test datasets from the
test data (as index arrays, all at once), computes the query on them, and evaluates every
mechanism on the same test datasets: each test vector is released through the mechanism,
and three kinds of attacker guess the secret —

* the paper's meta-classifier trained on the shadow statistics as they are;
* the same classifier trained on shadow statistics passed through the mechanism (an
  attacker who knows the mechanism);
* the likelihood-ratio test under the query model's Gaussian approximation of the release.

Their pooled decisions give an empirical ε lower bound (:func:`epsilon_lower_bound`);
the audit flags a mechanism as **violated** when that bound exceeds the claimed ε.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from .._validation import check_positive_int, check_real, check_rng
from .._version import __version__
from ..central import CalibratedMechanism, calibrate, model_view_for
from ..errors import MechanismNotApplicableError, ParameterError, ParameterTypeError
from ..guarantees import to_jsonable
from ..modeling import DataQueryModel, ProportionSecret, Query
from ..modeling.strata import StratifiedSampler
from ..querymodel import GaussianQueryModel
from .bounds import EpsilonBound, clopper_pearson, epsilon_lower_bound
from .classifiers import CLASSIFIERS, fit_predict
from .likelihood import GaussianLikelihoodRatio

__all__ = ["AttackResult", "AuditReport", "MechanismAudit", "audit"]

UNDEFENDED = "none"


@dataclass(frozen=True)
class AttackResult:
    """One attack against one mechanism, over all repetitions.

    Attributes
    ----------
    attack : str
        e.g. ``"logistic"``, ``"logistic (mechanism-aware)"``, ``"likelihood-ratio"``.
    accuracy : float
        Mean accuracy over repetitions.
    interval : tuple of float
        95 % interval of the mean accuracy (Student t over repetitions; Clopper–Pearson
        on the pooled decisions when there is one repetition).
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
    """The audit of one mechanism: claim, attacks, bound and verdict."""

    mechanism: str
    epsilon: float
    delta: float
    attacks: tuple[AttackResult, ...]
    epsilon_lower: float
    strongest: str
    verdict: str
    fallback: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
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

    def get(self, mechanism: str) -> MechanismAudit:
        """The audit of ``mechanism`` (``"none"`` for the undefended release)."""
        for m in self.mechanisms:
            if m.mechanism == mechanism:
                return m
        raise KeyError(mechanism)


def _interval(acc: np.ndarray, correct: int, total: int) -> tuple[float, float]:
    if acc.size >= 2:
        half = float(student_t.ppf(0.975, acc.size - 1) * acc.std(ddof=1) / math.sqrt(acc.size))
        return (float(acc.mean()) - half, float(acc.mean()) + half)
    return (
        clopper_pearson(correct, total, 0.975, "lower"),
        clopper_pearson(correct, total, 0.975, "upper"),
    )


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
        Fresh shadow and test datasets each time (the paper: 50).
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
    if not isinstance(secret, ProportionSecret):
        raise ParameterTypeError(f"secret must be a ProportionSecret, got {type(secret).__name__}")
    reps = check_positive_int(repetitions, "repetitions")
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
    gen = check_rng(rng)
    aux = StratifiedSampler(auxiliary, q, secret, subset_size, role="auxiliary data")
    tst = StratifiedSampler(test, q, secret, subset_size, role="test data")
    idx = [secret.values.index(p) for p in pr]

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
    lr_base = _pair_model(model, pr) if model is not None and likelihood_ratio else None

    names = [*clfs, *((f"{c} (mechanism-aware)" for c in clfs) if mechanism_aware else ())]
    if lr_base is not None:
        names.append("likelihood-ratio")
    # correct[mech][attack] per repetition; confusion pooled.
    acc = {m: {a: [] for a in names} for m, _ in mechs}
    conf_m = {m: {a: np.zeros(4, dtype=np.int64) for a in names} for m, _ in mechs}
    half_sh, half_te = n_sh // 2, n_te // 2
    y_sh = np.repeat([0, 1], [half_sh, n_sh - half_sh]).astype(np.int8)
    y_te = np.repeat([0, 1], [half_te, n_te - half_te]).astype(np.int8)
    lrs: dict[str, GaussianLikelihoodRatio] = {}
    if lr_base is not None:
        for m, mech in mechs:
            cov = np.zeros((q.dim, q.dim)) if mech is None else mech.noise_covariance
            lrs[m] = GaussianLikelihoodRatio(lr_base[0], lr_base[1], cov)
    for r in range(reps):
        x_sh = np.vstack([aux.draw(idx[0], half_sh, gen), aux.draw(idx[1], n_sh - half_sh, gen)])
        x_te = np.vstack([tst.draw(idx[0], half_te, gen), tst.draw(idx[1], n_te - half_te, gen)])
        seed = int(gen.integers(2**31))
        released = {
            m: x_te if mech is None else x_te + mech.noise.sample(n_te, gen) for m, mech in mechs
        }
        order = [m for m, _ in mechs]
        # One classifier per kind, trained on the raw shadow statistics, scores every
        # mechanism's releases of the same test datasets.
        for c in clfs:
            preds = fit_predict(c, x_sh, y_sh, [released[m] for m in order], seed)
            for m, pred in zip(order, preds, strict=True):
                _record(acc[m][c], conf_m[m][c], pred, y_te)
        for m, mech in mechs:
            x_aware = x_sh if mech is None else x_sh + mech.noise.sample(n_sh, gen)
            for c in clfs if mechanism_aware else ():
                (pred,) = fit_predict(c, x_aware, y_sh, [released[m]], seed)
                _record(
                    acc[m][f"{c} (mechanism-aware)"],
                    conf_m[m][f"{c} (mechanism-aware)"],
                    pred,
                    y_te,
                )
            if m in lrs:
                _record(
                    acc[m]["likelihood-ratio"],
                    conf_m[m]["likelihood-ratio"],
                    lrs[m].decide(released[m]),
                    y_te,
                )
        if progress is not None:
            progress(r + 1, reps)

    per_attack_conf = 1.0 - (1.0 - conf) / len(names)
    out = []
    for m, mech in mechs:
        claim_eps = math.inf if mech is None else mech.guarantee.epsilon
        claim_delta = 0.0 if mech is None else mech.guarantee.delta
        results = []
        for a in names:
            tp, fn, fp, tn = (int(v) for v in conf_m[m][a])
            accs = np.array(acc[m][a])
            bound = epsilon_lower_bound(
                tp, fn, fp, tn, delta=min(claim_delta, 0.999999), confidence=per_attack_conf
            )
            results.append(
                AttackResult(
                    a,
                    float(accs.mean()),
                    _interval(accs, tp + tn, tp + fn + fp + tn),
                    tuple(accs),
                    (tp, fn, fp, tn),
                    bound,
                )
            )
        best = max(results, key=lambda res: res.bound.epsilon_lower)
        eps_lb = best.bound.epsilon_lower
        if mech is None:
            verdict = "undefended"
        else:
            verdict = "violated" if eps_lb > claim_eps * (1 + 1e-9) else "consistent"
        fb = None
        if mech is not None and mech.guarantee.fallback is not None:
            fb = (mech.guarantee.fallback.epsilon, mech.guarantee.fallback.delta)
        strongest = max(results, key=lambda res: res.accuracy).attack
        out.append(
            MechanismAudit(
                m, claim_eps, claim_delta, tuple(results), eps_lb, strongest, verdict, fb
            )
        )
    seed_val = rng if isinstance(rng, int) and not isinstance(rng, bool) else None
    return AuditReport(
        tuple(out),
        (float(pr[0]), float(pr[1])),
        reps,
        n_sh,
        n_te,
        conf,
        clfs,
        seed_val,
        tuple(notes),
    )


def _record(accs: list[float], confusion: np.ndarray, pred: np.ndarray, y: np.ndarray) -> None:
    accs.append(float(np.mean(pred == y)))
    confusion += [
        int(np.sum((pred == 1) & (y == 1))),
        int(np.sum((pred == 0) & (y == 1))),
        int(np.sum((pred == 1) & (y == 0))),
        int(np.sum((pred == 0) & (y == 0))),
    ]
