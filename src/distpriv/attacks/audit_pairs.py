"""The attack audit of many pairs of Ψ at once (ranges and several attributes).

A secret protects a set Ψ of pairs (Chen & Ohrimenko 2023, §2): a range secret hundreds
(every two grid values at most ``within`` apart), a several-attribute secret the union of
each attribute's pairs (Zhang, Ohrimenko & Cummings 2022, §3, the set C). The guarantee
covers every pair, so an audit of one pair says nothing about the others: a release that
is under-noised for one attribute, or at one end of a range, passes an audit of another.
:func:`audit_pairs` runs :func:`~distpriv.attacks.audit`'s attacks on every pair it is
asked for (:func:`choose_pairs`: ``"all"``, ``"binding"``, a number per attribute, or
``"auto"``), each pair against the same calibrated mechanisms, in one pass:

* **Shared datasets.** Within a repetition, the shadow and test datasets drawn at a value
  serve every audited pair containing that value (a range's value belongs to up to 2w/step
  pairs): drawing and evaluating datasets is most of an audit's work, the classifiers (one
  fit per pair) the rest. Sharing is sound: each pair's classifier is still trained on
  shadow datasets independent of its test datasets, and each pair's decisions are still
  independent test datasets; the pairs' results are dependent on each other, which the
  union bound below does not mind.
* **Bonferroni over the audited pairs.** Each pair's ε lower bounds hold at confidence
  1 − (1 − c)/P for P audited pairs, so the largest over all pairs (the combined verdict)
  holds at c jointly, whatever the dependence between pairs.
* **Per attribute.** A several-attribute secret's pairs are audited attribute by
  attribute (each with its own strata: datasets at attribute i's values, every other
  attribute as in the population; :mod:`distpriv.attacks.audit_kinds`), and the report
  (:class:`~distpriv.attacks.audit_pairs_report.PairsAuditReport`) says per attribute and
  pair what was audited.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..modeling import ProportionSecret, Query
from ..modeling.secret_several import AttributeValue, SeveralSecrets
from ..modeling.strata import StratifiedSampler
from ..util.validation import check_positive_int, check_real, check_rng
from ._audit_setup import _likelihood_ratios, _resolve_mechanisms, _validate, check_audit_size
from .audit import LIKELIHOOD_RATIO, _audit_report, _repetition, _summarise, _Tally
from .audit_kinds import audit_target, model_rows
from .audit_pairs_report import PairsAuditReport
from .audit_report import AuditReport

__all__ = [
    "AUTO_ALL_LIMIT",
    "AUTO_PER_ATTRIBUTE",
    "PAIRS_CHOICES",
    "audit_pairs",
    "choose_pairs",
    "parse_pairs",
]

#: The named ways of choosing the audited pairs (besides a number per attribute).
PAIRS_CHOICES = ("auto", "all", "binding", "first")

#: ``pairs="auto"`` audits every pair when Ψ has at most this many pairs ...
AUTO_ALL_LIMIT = 24
#: ... and otherwise this many per attribute (the binding ones, then spread over Ψ).
AUTO_PER_ATTRIBUTE = 8


class _SharedDraws:
    """A sampler that returns, within one repetition, the same datasets for the same
    (value, count): the pairs sharing a value share its datasets (module docstring)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.cache: dict[tuple[int, int], np.ndarray] = {}

    def reset(self) -> None:
        """A new repetition: fresh datasets from now on."""
        self.cache.clear()

    def draw(self, index: int, count: int, rng: np.random.Generator) -> np.ndarray:
        key = (int(index), int(count))
        if key not in self.cache:
            self.cache[key] = self.inner.draw(index, count, rng)
        return self.cache[key]

    def __getattr__(self, name: str) -> Any:
        # The kinds' likelihood ratios and notes read the sampler's own attributes.
        if name in ("inner", "cache"):  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


def _groups(secret: Any) -> list[tuple[str, list[tuple[Any, Any]]]]:
    """(attribute name, the pairs of Ψ as :func:`audit` takes them) per attribute."""
    if isinstance(secret, SeveralSecrets):
        return [
            (
                attr.predicate,
                [
                    (AttributeValue(attr.predicate, a), AttributeValue(attr.predicate, b))
                    for a, b in attr.pairs
                ],
            )
            for attr in secret.attributes
        ]
    pairs = getattr(secret, "event_pairs", None) or secret.pairs
    name = getattr(secret, "predicate", None) or secret.describe()
    return [(str(name), [tuple(p) for p in pairs])]


def _pair_rows(secret: Any, model: Any, pair: tuple[Any, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The fitted model's means and covariances of a pair's two hypotheses."""
    if isinstance(secret, SeveralSecrets):
        parts = getattr(model, "parts", None)
        if parts is not None:
            a = secret.predicates.index(pair[0].predicate)
            return model_rows(parts[a], [pair[0].value, pair[1].value])
    return model_rows(model, list(pair))


def _distinguishability(
    secret: Any, model: Any, pairs: Sequence[tuple[Any, Any]], noises: Sequence[np.ndarray]
) -> np.ndarray:
    """Per pair, the largest total variation (δ at ε = 0, both directions) of the fitted
    Gaussian model over the noises: where the attacks have their best chance. Pairs the
    model cannot address (an event's mixtures) score 0."""
    from ..accounting import gaussian_pair_profile

    out = np.zeros(len(pairs))
    if model is None or not noises:
        return out
    for k, pair in enumerate(pairs):
        try:
            means, covs = _pair_rows(secret, model, pair)
        except ParameterError:
            continue
        for nz in noises:
            s0, s1 = covs[0] + nz, covs[1] + nz
            out[k] = max(
                out[k],
                gaussian_pair_profile(means[0], s0, means[1], s1, epsilon=0.0).estimate,
                gaussian_pair_profile(means[1], s1, means[0], s0, epsilon=0.0).estimate,
            )
    return out


def parse_pairs(pairs: object, *, flag: str = "pairs") -> str | int:
    """``pairs`` checked: one of :data:`PAIRS_CHOICES` or a positive number (a string of
    digits is accepted, as the CLI gives it).

    Raises
    ------
    ParameterError
        Anything else (naming ``flag`` and the value).
    """
    if isinstance(pairs, str) and pairs.strip().lower() in PAIRS_CHOICES:
        return pairs.strip().lower()
    if isinstance(pairs, str) and pairs.strip().isdigit():
        pairs = int(pairs.strip())
    if isinstance(pairs, int) and not isinstance(pairs, bool) and pairs >= 1:
        return pairs
    raise ParameterError(
        f"{flag} must be one of {', '.join(PAIRS_CHOICES)} or a positive number of pairs per "
        f"attribute, got {pairs!r}"
    )


def choose_pairs(
    secret: Any,
    pairs: str | int = "auto",
    *,
    model: Any = None,
    noises: Sequence[np.ndarray] = (),
) -> list[tuple[str, list[tuple[Any, Any]]]]:
    """The pairs of Ψ an audit covers, per attribute.

    Parameters
    ----------
    secret : Secret
        Its pairs, per attribute for a :class:`~distpriv.modeling.SeveralSecrets`.
    pairs : {"auto", "all", "binding", "first"} or int
        ``"all"``: every pair. ``"binding"``: per attribute, the pair where the fitted
        model is most distinguishable (largest total variation) under each audited
        mechanism's noise — where the guarantee binds. N: per attribute the binding pairs,
        then pairs spread evenly over the attribute's pairs (its first and last included),
        N in all. ``"first"``: each attribute's first pair (the single-pair audit).
        ``"auto"`` (default): every pair when Ψ has at most :data:`AUTO_ALL_LIMIT` (24),
        else :data:`AUTO_PER_ATTRIBUTE` (8) per attribute.
    model : GaussianQueryModel, optional
        The fitted model (for ``"binding"`` and N).
    noises : sequence of ndarray (m, m)
        The audited mechanisms' noise covariances.

    Returns
    -------
    list of (str, list of pairs)
        Per attribute, its name and the chosen pairs in Ψ's order.
    """
    spec = parse_pairs(pairs)
    groups = _groups(secret)
    if spec == "auto":
        total = sum(len(p) for _, p in groups)
        spec = "all" if total <= AUTO_ALL_LIMIT else AUTO_PER_ATTRIBUTE
    if spec == "all":
        return groups
    if spec == "first":
        return [(name, ps[:1]) for name, ps in groups]
    out = []
    for name, ps in groups:
        if isinstance(spec, int) and spec >= len(ps):
            out.append((name, ps))
            continue
        keep: list[int] = []  # the binding pair of each noise first
        for nz in noises:
            score = _distinguishability(secret, model, ps, [nz])
            if score.max() > 0 and int(np.argmax(score)) not in keep:
                keep.append(int(np.argmax(score)))
        if not keep:  # nothing to rank them by (an event's mixtures): the first pair
            keep.append(0)
        if isinstance(spec, int):
            # The rest spread evenly over the attribute's pairs, its first and last included.
            spread = np.linspace(0, len(ps) - 1, max(spec - len(keep), 0)).round().astype(int)
            for k in [*spread.tolist(), *range(len(ps))]:
                if len(keep) >= spec:
                    break
                if k not in keep:
                    keep.append(int(k))
        chosen = sorted(keep)
        out.append((name, [ps[k] for k in chosen]))
    return out


def _samplers(
    target: Any, secret: Any, auxiliary: Any, test: Any, q: Query, n: int
) -> tuple[Any, Any]:
    if target is None:
        return (
            StratifiedSampler(auxiliary, q, secret, n, role="auxiliary data"),
            StratifiedSampler(test, q, secret, n, role="test data"),
        )
    out: tuple[Any, Any] = target.samplers(auxiliary, test, q, n)
    return out


def audit_pairs(
    *,
    auxiliary: Any,
    test: Any,
    query: Query | Mapping[str, str],
    secret: Any,
    subset_size: int,
    mechanisms: Sequence[Any],
    model: Any = None,
    epsilon: float | None = None,
    delta: float = 0.0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    pairs: str | int = "auto",
    repetitions: int = 10,
    n_shadow: int = 200,
    n_test: int = 200,
    classifiers: Sequence[str] = ("logistic",),
    confidence: float = 0.95,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int, int], None] | None = None,
    mechanism_aware: bool = True,
    likelihood_ratio: bool = True,
) -> PairsAuditReport:
    """Attack each mechanism's releases on many pairs of Ψ and test its claim on each.

    Parameters
    ----------
    auxiliary, test, query, secret, subset_size, mechanisms, model, epsilon, delta, options
        As for :func:`~distpriv.attacks.audit` (any kind of secret it takes; a
        :class:`~distpriv.modeling.SeveralSecrets` is audited attribute by attribute).
    pairs : {"auto", "all", "binding", "first"} or int
        Which pairs (:func:`choose_pairs`); default ``"auto"``.
    repetitions, n_shadow, n_test, classifiers, mechanism_aware, likelihood_ratio
        As for :func:`~distpriv.attacks.audit`, per pair.
    confidence : float
        Joint confidence of every pair's ε lower bounds (Bonferroni over the audited pairs
        and, within each, over its attacks).
    rng : int, Generator or None
    progress : callable, optional
        ``progress(done, total)`` after each attribute's repetition.

    Returns
    -------
    PairsAuditReport
        One :class:`~distpriv.attacks.AuditReport` per audited pair, grouped per attribute.
    """
    q = query if isinstance(query, Query) else Query(query)
    n = check_positive_int(subset_size, "subset_size")
    if getattr(secret, "is_grid", False):  # a range or events: the subset's grid values
        secret = secret.grid(n)
    conf = check_real(
        confidence, "confidence", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    check_audit_size(repetitions, n_shadow, n_test)  # bounded work, before any calibration
    parse_pairs(pairs)
    seed = rng if isinstance(rng, int) and not isinstance(rng, bool) else None
    gen = check_rng(rng)
    mechs, notes = _resolve_mechanisms(mechanisms, model, epsilon, delta, options)
    noisy = [np.asarray(m.noise_covariance, dtype=float) for _, m in mechs if m is not None]
    chosen = choose_pairs(secret, pairs, model=model, noises=noisy)
    audited = sum(len(ps) for _, ps in chosen)
    # Bonferroni over the audited pairs: the largest bound over all pairs holds at ``conf``.
    per_pair = 1.0 - (1.0 - conf) / audited
    total = len(chosen) * check_positive_int(repetitions, "repetitions")
    reports: list[AuditReport] = []
    groups: list[int] = []
    done = 0
    for g, (_, ps) in enumerate(chosen):
        jobs = []
        target = None
        for pair in ps:
            kind = None if isinstance(secret, ProportionSecret) else audit_target(secret, pair)
            tgt, pr = (secret, pair) if kind is None else kind
            st = _validate(
                tgt, repetitions, n_shadow, n_test, per_pair, classifiers, mechanisms, pr
            )
            jobs.append((kind, st))
            target = None if kind is None else kind[0]
        pair_of = _samplers(target, secret, auxiliary, test, q, n)
        aux: Any = _SharedDraws(pair_of[0])
        tst: Any = _SharedDraws(pair_of[1])
        attacks = [*jobs[0][1].classifiers]
        if mechanism_aware:
            attacks += [f"{c} (mechanism-aware)" for c in jobs[0][1].classifiers]
        lrs: list[Mapping[str, Any]] = []
        for kind, st in jobs:
            if model is None or not likelihood_ratio:
                lrs.append({})
            elif kind is None:
                lrs.append(_likelihood_ratios(model, st.pair, mechs, q.dim))
            else:
                lrs.append(kind[0].likelihood_ratios(model, st.pair, mechs, q.dim, aux))
        tallies = [
            _Tally([m for m, _ in mechs], attacks + ([LIKELIHOOD_RATIO] if lr else []))
            for lr in lrs
        ]
        for _r in range(jobs[0][1].repetitions):
            aux.reset()
            tst.reset()
            for (_, st), lr, tally in zip(jobs, lrs, tallies, strict=True):
                _repetition(st, aux, tst, mechs, lr, tally, gen, mechanism_aware)
            done += 1
            if progress is not None:
                progress(done, total)
        for (kind, st), tally in zip(jobs, tallies, strict=True):
            own = [] if kind is None else kind[0].notes(n, aux, tst, st.pair)
            out = tuple(_summarise(m, mech, tally, st.confidence, None) for m, mech in mechs)
            reports.append(_audit_report(st, out, seed, own, kind))
            groups.append(g)
    spec = parse_pairs(pairs)
    notes.append(
        f"pairs audited: {audited} of {sum(len(p) for _, p in _groups(secret))} ({spec}); within "
        "a repetition the datasets at a value serve every audited pair containing it; each "
        f"pair's bounds at confidence {per_pair:.4g} (Bonferroni over the pairs)"
    )
    return PairsAuditReport(
        tuple(name for name, _ in chosen),
        tuple(reports),
        tuple(groups),
        tuple(len(p) for _, p in _groups(secret)),
        str(spec),
        conf,
        tuple(notes),
        str(getattr(secret, "kind", "proportion")),
    )
