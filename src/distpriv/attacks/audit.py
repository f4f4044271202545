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
from typing import Any, cast

import numpy as np

from ..central import CalibratedMechanism
from ..modeling import DataQueryModel, ProportionSecret, Query, Secret
from ..modeling.strata import StratifiedSampler
from ..querymodel import SampledQueryModel
from ..util.validation import check_positive_int, check_rng
from ._audit_setup import (
    MAX_REPETITIONS,  # noqa: F401 (re-exported, not in __all__)
    _likelihood_ratios,
    _resolve_mechanisms,
    _Setting,
    _validate,
    _verifications,
    _verify_samples,
    check_audit_size,  # noqa: F401 (re-exported, not in __all__)
)
from .audit_kinds import AuditTarget, audit_target
from .audit_report import (
    AuditAttackResult,
    AuditReport,
    MechanismAudit,
    accuracy_interval,
)
from .bounds import epsilon_lower_bound
from .classifiers import fit_predict
from .likelihood import GaussianLikelihoodRatio
from .verify import DataLevelCheck

__all__ = ["AuditAttackResult", "AuditReport", "MechanismAudit", "accuracy_interval", "audit"]

LIKELIHOOD_RATIO = "likelihood-ratio"


# ---------------------------------------------------------------------------------------
# The attacks, repetition by repetition.


class _Tally:
    """Per mechanism and attack: accuracy per repetition and the pooled confusion matrix."""

    def __init__(self, mechanisms: list[str], attacks: list[str]) -> None:
        self.attacks = attacks
        self.accuracy: dict[str, dict[str, list[float]]] = {
            m: {a: [] for a in attacks} for m in mechanisms
        }
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


def _audit_report(
    st: _Setting,
    audits: tuple[MechanismAudit, ...],
    seed: int | None,
    notes: Sequence[str],
    kind: tuple[AuditTarget, Any] | None,
) -> AuditReport:
    """The report of one audited pair (of :func:`audit` and of each pair of ``audit_pairs``).

    ``kind`` is the pair's :class:`~distpriv.attacks.audit_kinds.AuditTarget` (``None`` for
    a proportion secret): it names the pair's two values in the report.
    """
    labels = None if kind is None else (kind[0].label(st.pair[0]), kind[0].label(st.pair[1]))
    return AuditReport(
        audits,
        st.pair,
        st.repetitions,
        st.n_shadow,
        st.n_test,
        st.confidence,
        st.classifiers,
        seed,
        tuple(notes),
        labels,
    )


def audit(
    *,
    auxiliary: Any,
    test: Any,
    query: Query | Mapping[str, str],
    secret: Secret,
    subset_size: int,
    mechanisms: Sequence[str | CalibratedMechanism],
    model: DataQueryModel | None = None,
    epsilon: float | None = None,
    delta: float = 0.0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    pair: tuple[Any, Any] | None = None,
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
        The two secret values to tell apart; default the secret's first pair. For an
        :class:`~distpriv.modeling.EventSecret` two event indices; for a
        :class:`~distpriv.modeling.SeveralSecrets` two ``AttributeValue`` of one
        attribute (:func:`~distpriv.attacks.audit_attributes` audits each attribute).
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
    # Mean, event and several-attribute secrets: their datasets and likelihood ratios come
    # from attacks/audit_kinds.py; a proportion's stay here.
    kind = None if isinstance(secret, ProportionSecret) else audit_target(secret, pair)
    target, pr = (secret, pair) if kind is None else kind
    st = _validate(target, repetitions, n_shadow, n_test, confidence, classifiers, mechanisms, pr)
    samples = _verify_samples(verify_samples, model) if verify else None
    gen = check_rng(rng)
    if kind is None:
        psecret = cast(ProportionSecret, secret)
        aux: Any = StratifiedSampler(auxiliary, q, psecret, subset_size, role="auxiliary data")
        tst: Any = StratifiedSampler(test, q, psecret, subset_size, role="test data")
    else:
        n = check_positive_int(subset_size, "subset_size")
        aux, tst = kind[0].samplers(auxiliary, test, q, n)
    mechs, notes = _resolve_mechanisms(mechanisms, model, epsilon, delta, options)
    lrs: Mapping[str, Any] = {}
    if model is not None and likelihood_ratio:
        lrs = (
            _likelihood_ratios(model, st.pair, mechs, q.dim)
            if kind is None
            else kind[0].likelihood_ratios(model, st.pair, mechs, q.dim, aux)
        )
    if kind is not None:
        notes += kind[0].notes(int(subset_size), aux, tst, st.pair)
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
    return _audit_report(st, out, seed, notes, kind)
