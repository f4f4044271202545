"""The privacy audit for mean, event and several-attribute secrets.

:func:`distpriv.attacks.audit` attacks a release by drawing shadow and test datasets whose
secret takes each of two values and training attacks to tell them apart (Chen & Ohrimenko
2023, §5.3). For a :class:`~distpriv.modeling.ProportionSecret` the datasets come from the
table's two strata (:class:`~distpriv.modeling.strata.StratifiedSampler`). This module
supplies the datasets and the likelihood-ratio attack for the other kinds, through one
:class:`AuditTarget` per audit:

* **mean** (:class:`~distpriv.modeling.MeanSecret`, Zhang, Ohrimenko & Cummings 2022, §3,
  Def. 4): real subsets of the table whose average of the secret's expression lies within
  the narrow window [v − h, v + h] of each value (:class:`MeanSampler`: rejection sampling,
  the window of :func:`distpriv.modeling.mean_sampling.window`, as the mean secret's Monte
  Carlo model). No tilting or Gaussian conditioning: the attack meets real datasets.
* **event** (:class:`~distpriv.modeling.EventSecret`): a dataset "in event E" is drawn by
  first drawing one of E's grid values with the population's weights (the law of the
  secret of a random subset of the table, restricted to E and renormalised:
  hypergeometric for a proportion, :meth:`MeanSampler.weights` for a mean), then a dataset
  at that value (:class:`EventSampler`). The likelihood-ratio attack is the Gaussian
  mixture over the event's values with the same weights (:class:`MixtureLikelihoodRatio`).
  **The audit measures the attack under the population's weights**; the release's
  guarantee is the bound for *any* weights (joint convexity over every cross pair of
  values, :mod:`distpriv.modeling.secret_events`), so an attack at the population's weights
  may stay far below what the guarantee allows. The machinery works for any value secret
  the event's ``grid`` materialises (a proportion, or a mean once mean events exist).
* **several** (:class:`~distpriv.modeling.SeveralSecrets`, Zhang et al. 2022 §3, the set
  C): one audit per attribute (:func:`distpriv.attacks.audit_attributes`); the audit of
  attribute i draws datasets at i's two values with every other attribute as in the
  population (the attribute's own strata), attacks the release calibrated for all
  attributes at once, and its likelihood-ratio test uses i's block of the model.

:func:`distpriv.attacks.bounds.accuracy_allowed` turns a claimed (ε, δ) into the largest
accuracy any attack may have on a balanced pair, so a report shows the guarantee on the
accuracies' scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..modeling.queries import Query
from ..modeling.sampling import chunk_rows, sample_subsets
from ..modeling.secret_events import EventSecret
from ..modeling.secret_mean import MeanSecret
from ..modeling.secret_several import AttributeValue, SeveralSecrets
from ..modeling.secrets import ProportionSecret
from ..modeling.strata import StratifiedSampler
from ..modeling.tables import as_table
from ..util.distributions import GaussianDensity
from ..util.validation import check_positive_int
from .likelihood import GaussianLikelihoodRatio

if TYPE_CHECKING:
    from ..central import CalibratedMechanism
    from ..querymodel import GaussianQueryModel

__all__ = [
    "AuditTarget",
    "EventSampler",
    "MeanSampler",
    "MixtureLikelihoodRatio",
    "audit_target",
]

# Give up when fewer than one subset in this many lands in a value's window. Ten times
# rarer than the mean secret's Monte Carlo model allows (modeling/mean_sampling.py): an
# event's far grid values are drawn rarely (with their population weight), so the audit
# asks few datasets of them, and the work stays bounded by count / this rate.
_MIN_ACCEPTANCE = 1e-4


class ValueSampler(Protocol):
    """What the audit needs of a sampler of datasets at a secret's values."""

    def draw(self, index: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """Statistics of ``count`` datasets at the index-th value, shape (count, m)."""
        ...  # pragma: no cover - a protocol


# ---------------------------------------------------------------------------------------
# Mean secrets: real subsets whose average falls in a narrow window of each value.


class MeanSampler:
    """Subsets of a table whose average of a mean secret's expression is near each value.

    A subset of ``subset_size`` distinct rows is drawn uniformly from the table (as the
    proportion audit's datasets, Chen & Ohrimenko App. C.1) and kept for value v when its
    average of the expression is within h of v, h from
    :func:`distpriv.modeling.mean_sampling.window` (a twentieth of the average's standard
    error, widened to half its lattice step for integer columns). The kept subsets are real
    datasets of the table: what an attacker who can find datasets with a given mean trains
    on, and what the release meets.

    Parameters
    ----------
    data : DataFrame, Arrow table, path or Table
    query : Query
    secret : MeanSecret
        Its values must lie strictly inside the expression's range on the table.
    subset_size : int
    role : str
        Names the table in error messages.

    Raises
    ------
    ParameterError
        A value outside the expression's range on the table, an unknown column or a NULL.
    """

    def __init__(
        self, data: Any, query: Query, secret: MeanSecret, subset_size: int, *, role: str
    ) -> None:
        from ..modeling.mean_sampling import window

        if not isinstance(secret, MeanSecret):
            raise ParameterTypeError(f"secret must be a MeanSecret, got {type(secret).__name__}")
        self.table = as_table(data)
        self.query, self.secret, self.role = query, secret, role
        self.n = check_positive_int(subset_size, "subset_size")
        if self.n > self.table.n_rows:
            raise ParameterError(
                f"subset_size={self.n} is larger than the {role} ({self.table.n_rows} rows)"
            )
        secret.parsed.check_columns(self.table.columns)
        self.s = self.table.row_values(
            [secret.parsed.sql()], [f"secret expression ({secret.expression})"]
        )[:, 0]
        lo, hi = float(self.s.min()), float(self.s.max())
        for v in secret.values:
            if not lo < v < hi:
                raise ParameterError(
                    f"secret values: {v:g} is outside the range ({lo:g}, {hi:g}) of "
                    f"{secret.expression} on the {role}: no dataset of it has that average"
                )
        self.h = window(self.s, self.n)
        self.features = query.row_features(self.table) if query.is_linear else None
        self.scale = np.array(
            [1.0 / self.n if st.scale == "mean" else 1.0 for st in query.statistics]
        )
        self.drawn = 0  # subsets drawn so far (the acceptance rate, for diagnostics)

    def _statistics(self, rows: np.ndarray) -> np.ndarray:
        if self.features is None:
            return self.query.evaluate_subsets(self.table, rows)
        return self.features[rows].sum(axis=1) * self.scale

    def draw(self, index: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """Statistics of ``count`` kept subsets at the index-th value, shape (count, m).

        Raises
        ------
        ParameterError
            Fewer than one subset in 10,000 lands in the value's window (a value too
            rare for rejection sampling on this table).
        """
        v = self.secret.values[index]
        chunk = chunk_rows(self.n)
        kept: list[np.ndarray] = []
        # At least ten chunks: a call asking one dataset must not fail on one unlucky chunk.
        have, drawn, limit = 0, 0, max(math.ceil(count / _MIN_ACCEPTANCE), 10 * chunk)
        while have < count:
            if drawn >= limit:
                raise ParameterError(
                    f"secret values: only {have} of {drawn} subsets of {self.n} rows of the "
                    f"{self.role} have an average of {self.secret.expression} within "
                    f"{self.h:.3g} of {v:g}: too rare to audit by rejection sampling (choose "
                    "values nearer the table's average)"
                )
            rows = sample_subsets(self.table.n_rows, self.n, chunk, rng, ordered=False)
            drawn += chunk
            hit = np.flatnonzero(np.abs(self.s[rows].mean(axis=1) - v) <= self.h)
            hit = hit[: count - have]
            if hit.size:
                kept.append(self._statistics(rows[hit]))
                have += hit.size
        self.drawn += drawn
        return np.concatenate(kept)

    def weights(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """Population weights of the values at ``indices`` (summing to 1).

        The density of a random subset's average at each value, by the central limit
        theorem: N(mean s, var s · (N − n)/(n (N − 1))) (subsets without replacement). An
        approximation, used only to weigh an event's values in the audit (never in a
        guarantee).
        """
        big_n = self.s.size
        var = float(self.s.var()) / self.n * max(big_n - self.n, 0) / max(big_n - 1, 1)
        v = np.asarray([self.secret.values[i] for i in indices], dtype=float)
        logw = -0.5 * (v - float(self.s.mean())) ** 2 / max(var, 1e-300)
        w = np.exp(logw - logw.max())
        return w / w.sum()


def _proportion_weights(
    sampler: StratifiedSampler, indices: Sequence[int] | np.ndarray
) -> np.ndarray:
    """The law of a random n-subset's count of predicate rows (hypergeometric: the audit
    draws subsets of the table without replacement) at the values' counts, renormalised."""
    from scipy.stats import hypergeom

    big_n = sampler.rows_a.size + sampler.rows_b.size
    counts = np.asarray([sampler.counts[i] for i in indices])
    logw = hypergeom.logpmf(counts, big_n, sampler.rows_a.size, sampler.n)
    w = np.exp(logw - logw.max())
    return np.asarray(w / w.sum())


def _value_sampler(data: Any, query: Query, secret: Any, n: int, role: str) -> Any:
    """The sampler of datasets at a value secret's values (a proportion or a mean)."""
    if isinstance(secret, ProportionSecret):
        return StratifiedSampler(data, query, secret, n, role=role)
    if isinstance(secret, MeanSecret):
        return MeanSampler(data, query, secret, n, role=role)
    raise ParameterTypeError(
        f"the audit has no sampler of datasets for a {type(secret).__name__} (proportion and "
        "mean secrets only)"
    )


def _weights(sampler: Any, indices: Sequence[int] | np.ndarray) -> np.ndarray:
    if isinstance(sampler, StratifiedSampler):
        return _proportion_weights(sampler, indices)
    return np.asarray(sampler.weights(indices))


# ---------------------------------------------------------------------------------------
# Event secrets: a value of the event with the population's weights, then a dataset there.


class EventSampler:
    """Datasets whose secret falls in each event, with the population's weights.

    Parameters
    ----------
    inner : sampler
        Datasets at each value of the event secret's materialised value secret.
    members : sequence of ndarray of int
        Per event, the indices (into the value secret's values) of the values it allows.
    weights : sequence of ndarray
        Per event, the population's weights of those values (summing to 1).
    """

    def __init__(
        self, inner: Any, members: Sequence[np.ndarray], weights: Sequence[np.ndarray]
    ) -> None:
        self.inner = inner
        self.members = tuple(np.asarray(m, dtype=int) for m in members)
        self.weights = tuple(np.asarray(w, dtype=float) for w in weights)

    def draw(self, index: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """Statistics of ``count`` datasets in the index-th event, shape (count, m): each
        dataset's value drawn with the event's weights, then a dataset at that value."""
        members, w = self.members[index], self.weights[index]
        which = rng.choice(members.size, size=count, p=w)
        out: np.ndarray | None = None
        for j in np.unique(which):
            pos = np.flatnonzero(which == j)
            block = self.inner.draw(int(members[j]), pos.size, rng)
            if out is None:
                out = np.empty((count, block.shape[1]))
            out[pos] = block
        if out is None:  # count == 0
            return np.empty((0, 0))
        return out


class MixtureLikelihoodRatio:
    """Decide event 1 when its Gaussian mixture's density exceeds event 0's.

    The release given an event is the mixture Σ_v w(v) N(μ_v, Σ_v + Σ_Z) over the event's
    values (the query model's Gaussian approximation at each value, the population's
    weights): the likelihood-ratio test of the two mixtures is the Bayes-optimal attack
    at equal priors when the model is exact.

    Parameters
    ----------
    components : pair of (ndarray (k, m), ndarray (k, m, m), ndarray (k,))
        Per event: its values' means, covariances (before noise) and weights.
    noise_covariance : ndarray, shape (m, m)
    """

    def __init__(
        self,
        components: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
        noise_covariance: np.ndarray,
    ) -> None:
        self.parts = [
            (
                [GaussianDensity(mu, cov + noise_covariance) for mu, cov in zip(m, c, strict=True)],
                np.log(np.asarray(w, dtype=float)),
            )
            for m, c, w in components
        ]

    def _log_density(self, t: int, x: np.ndarray) -> np.ndarray:
        dens, logw = self.parts[t]
        logs = np.stack([d.logpdf(x) for d in dens]) + logw[:, None]
        top = np.max(logs, axis=0)
        safe = np.where(np.isfinite(top), top, 0.0)
        return np.asarray(safe + np.log(np.sum(np.exp(logs - safe), axis=0)))

    def log_ratio(self, x: np.ndarray) -> np.ndarray:
        """log p(x | event 1) − log p(x | event 0) for each row of x, shape (k,)."""
        x = np.atleast_2d(x)
        return np.atleast_1d(self._log_density(1, x) - self._log_density(0, x))

    def decide(self, x: np.ndarray) -> np.ndarray:
        """0/1 decisions (1 = the second event), shape (k,)."""
        return (self.log_ratio(x) > 0).astype(np.int8)


# ---------------------------------------------------------------------------------------
# The target of one audit.


def model_rows(model: GaussianQueryModel, labels: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The means and covariances of the hypotheses ``labels`` of ``model`` (in that order)."""
    have = list(model.labels)
    try:
        idx = [have.index(v) for v in labels]
    except ValueError:
        raise ParameterError(
            f"the query model has no hypotheses {tuple(labels)}; its labels are {model.labels}"
        ) from None
    return model.means[idx], model.covariances[idx]


@dataclass(frozen=True)
class AuditTarget:
    """What one audit of a mean, event or several-attribute secret tells apart."""

    #: The user's secret.
    secret: Any
    #: What the audit's pair indexes: the means; the events' indices; the audited
    #: attribute's shares.
    values: tuple[float, ...]
    #: The pairs of :attr:`values` the secret protects (the default pair is the first).
    pairs: tuple[tuple[float, float], ...]
    #: Each value in words, for the report.
    labels: tuple[str, ...]
    #: The audited attribute of a SeveralSecrets.
    attribute: int | None = None

    def label(self, value: float) -> str:
        """The value in words."""
        return self.labels[self.values.index(value)]

    def _value_secret(self, n: int) -> Any:
        if isinstance(self.secret, SeveralSecrets):
            return self.secret.attributes[self.attribute or 0]
        if isinstance(self.secret, EventSecret):
            return self.secret.grid(n).value_secret()
        return self.secret

    def samplers(self, auxiliary: Any, test: Any, query: Query, n: int) -> tuple[Any, Any]:
        """The shadow (from ``auxiliary``) and test (from ``test``) dataset samplers."""
        base = self._value_secret(n)
        out = []
        for data, role in ((auxiliary, "auxiliary data"), (test, "test data")):
            inner = _value_sampler(data, query, base, n, role)
            if not isinstance(self.secret, EventSecret):
                out.append(inner)
                continue
            members = self._event_members(base, n)
            out.append(EventSampler(inner, members, [_weights(inner, m) for m in members]))
        return out[0], out[1]

    def _event_members(self, base: Any, n: int) -> list[np.ndarray]:
        vals = list(base.values)
        return [np.array([vals.index(v) for v in ev]) for ev in self.secret.event_values(n)]

    def likelihood_ratios(
        self,
        model: GaussianQueryModel,
        pair: tuple[float, float],
        mechs: list[tuple[str, CalibratedMechanism | None]],
        dim: int,
        shadow: Any,
    ) -> Mapping[str, Any]:
        """The likelihood-ratio test of each mechanism's release, on the query model.

        For an event, the mixtures over the events' values with the population's weights
        as the attacker's (shadow) data give them; for an attribute of several secrets,
        the attribute's own block of the model.
        """
        noise = {m: np.zeros((dim, dim)) if c is None else c.noise_covariance for m, c in mechs}
        if isinstance(self.secret, EventSecret):
            n = int(shadow.inner.n)
            base = self._value_secret(n)
            comps = []
            for e in (int(pair[0]), int(pair[1])):
                idx = shadow.members[e]
                means, covs = model_rows(model, [base.values[i] for i in idx])
                comps.append((means, covs, shadow.weights[e]))
            return {m: MixtureLikelihoodRatio(comps, cov) for m, cov in noise.items()}
        if isinstance(self.secret, SeveralSecrets):
            parts = getattr(model, "parts", None)
            a = self.attribute or 0
            if parts is not None:
                means, covs = model_rows(parts[a], pair)
            else:
                pred = self.secret.predicates[a]
                means, covs = model_rows(model, [AttributeValue(pred, v) for v in pair])
        else:
            means, covs = model_rows(model, pair)
        return {m: GaussianLikelihoodRatio(means, covs, cov) for m, cov in noise.items()}

    def notes(self, n: int, shadow: Any, test: Any, pair: tuple[float, float]) -> list[str]:
        """What the report must say about how the datasets were drawn."""
        if isinstance(self.secret, MeanSecret):
            return [
                f"mean secret: shadow and test datasets are real {n}-row subsets of the "
                f"tables whose average of {self.secret.expression} is within "
                f"{shadow.h:.3g} (auxiliary) / {test.h:.3g} (test) of each value "
                "(rejection sampling)"
            ]
        if isinstance(self.secret, EventSecret):
            return [
                f"event secret: {self.label(pair[0])} vs {self.label(pair[1])}; each dataset's "
                "value is drawn with the population's weights over the event's grid values "
                "(the table's own law of a subset's value, restricted to the event), so the "
                "audit measures the attack under those weights, while the guarantee is the "
                "bound for any weights (every value of one event against every value of the "
                "other)"
            ]
        attr = self.secret.attributes[self.attribute or 0]
        return [
            f"several secrets: this audit is of {attr.describe()} ({pair[0]:g} vs "
            f"{pair[1]:g}); the other attributes vary as in the population; the noise is "
            "the release's, calibrated for every attribute at once"
        ]


def audit_target(secret: Any, pair: Sequence[Any] | None) -> tuple[AuditTarget, tuple[Any, Any]]:
    """The :class:`AuditTarget` of a mean, event or several-attribute secret, and the pair
    of its :attr:`~AuditTarget.values` to audit.

    Parameters
    ----------
    secret : MeanSecret, EventSecret or SeveralSecrets
    pair : pair or None
        Two means (mean); two event indices (event); two
        :class:`~distpriv.modeling.secret_several.AttributeValue` of one attribute, or two
        shares with a one-attribute match (several). Default: the secret's first pair.

    Raises
    ------
    ParameterTypeError
        Any other kind of secret.
    ParameterError
        A pair that is not the secret's.
    """
    if isinstance(secret, MeanSecret):
        target = AuditTarget(
            secret,
            secret.values,
            secret.pairs,
            tuple(f"mean {secret.expression} = {v:g}" for v in secret.values),
        )
        return target, (tuple(secret.pairs[0]) if pair is None else tuple(pair))  # type: ignore[return-value]
    if isinstance(secret, EventSecret):
        what = secret.base.describe().split(", anywhere between")[0]
        target = AuditTarget(
            secret,
            tuple(float(k) for k in range(len(secret.events))),
            tuple((float(a), float(b)) for a, b in secret.event_pairs),
            tuple(f"{what} in [{lo:g}, {hi:g}]" for lo, hi in secret.events),
        )
        chosen = secret.event_pairs[0] if pair is None else tuple(pair)
        if len(chosen) != 2 or any(
            isinstance(k, bool) or not isinstance(k, int | np.integer | float) for k in chosen
        ):
            raise ParameterError(f"pair must be two event indices, got {pair!r}")
        return target, (float(chosen[0]), float(chosen[1]))
    if isinstance(secret, SeveralSecrets):
        chosen = secret.pairs[0] if pair is None else tuple(pair)
        if len(chosen) != 2 or not all(isinstance(p, AttributeValue | tuple) for p in chosen):
            raise ParameterError(
                f"pair must be two AttributeValue(predicate, share) of one attribute, got {pair!r}"
            )
        preds = {" ".join(str(p[0]).split()) for p in chosen}
        known = [" ".join(p.split()) for p in secret.predicates]
        if len(preds) != 1 or next(iter(preds)) not in known:
            raise ParameterError(
                f"pair must join two values of one attribute among {list(secret.predicates)}, "
                f"got {pair!r}"
            )
        a = known.index(next(iter(preds)))
        attr = secret.attributes[a]
        target = AuditTarget(
            secret,
            attr.values,
            attr.pairs,
            tuple(str(AttributeValue(attr.predicate, v)) for v in attr.values),
            attribute=a,
        )
        return target, (float(chosen[0][1]), float(chosen[1][1]))
    raise ParameterTypeError(
        "secret must be a ProportionSecret, MeanSecret, EventSecret or SeveralSecrets, got "
        f"{type(secret).__name__}"
    )
