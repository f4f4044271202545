"""Exact composition of repeated releases of the same data (the joint-model accountant).

Distribution privacy is a Pufferfish-style notion and does not compose sequentially
(Kifer & Machanavajjhala 2014): two releases of statistics of one dataset are correlated
through the data, so their ε's do not add up to a guarantee — the pair can be *more*
revealing than the sum says (docs/composition.md has an example where each release alone
is perfectly private and the two together reveal the secret). What does hold exactly is
this: the releases so far, with the next one, are one mechanism applied to the stacked
query F = (F₁, …, F_R) with block noise Z = (Z₁, …, Z_R). Its guarantee follows from the
joint query model of all the statistics, with their cross-covariances, from the same data:

* Gaussian noise (DauM, EigM, ExpM/DirM-G, optimal-g, noiseless): for every pair of Ψ and
  both directions, the exact privacy profile of N(μᵢ, Σᵢ + Σ_Z) against N(μⱼ, Σⱼ + Σ_Z)
  (:func:`distpriv.accounting.gaussian_pair_epsilon`, a generalised chi-square; Chen &
  Ohrimenko 2023, Thm 4.5 / Cor. A.1 applied to the stacked query).
* Laplace noise with a complete basis (the Wasserstein mechanisms): Chen & Ohrimenko 2023,
  Thm 3.1 applied to the stacked query — with independent Laplace noise of scale b_k along
  the orthonormal directions u_k, the output density ratio of x and y is at most
  exp(Σ_k |u_kᵀ(x − y)| / b_k), so ε = W∞ of the joint samples under that weighted L1 metric.
* Anything else (Laplace and Gaussian mixed, Laplace noise that leaves some direction
  noiseless): :class:`~distpriv.errors.CompositionError` — never a silent sum of ε's.

The same statistics released twice reduce, by sufficiency, to one release with the
precision-weighted noise (Σ₁⁻¹ + Σ₂⁻¹)⁻¹; for rank-deficient noise (DauM's one direction v)
the part of F outside v is published exactly by each release, so the sufficient statistic
is that part plus the precision-weighted combination along v. The stacked computation
reproduces this without special cases (tests/pipeline/test_compose.py checks it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import block_diag

from ..errors import CompositionError, ParameterError
from ..moment_uncertainty import MomentUncertainty
from ..population.confidence import DEFAULT_BETA, marginal, population_model, set_method
from ..util.records import field_values
from ..util.threads import on_one_blas_thread
from ..util.validation import check_delta
from .events import ReleaseSpec, noise_from_dict, noise_to_dict
from .joint import JointModelling, joint_model
from .laplace import LAPLACE_THEOREM, laplace_composition, laplace_map

__all__ = [
    "ComposedGuarantee",
    "JointModelling",
    "ReleaseSpec",
    "compose",
    "gaussian_pair_composition",
    "laplace_composition",
    "noise_from_dict",
    "noise_to_dict",
]

GAUSSIAN_THEOREM = (
    "exact privacy profile of the stacked query's Gaussian model (Chen & Ohrimenko 2023, "
    "Thm 4.5 / Cor. A.1 on the joint model; generalised chi-square accountant)"
)


@dataclass(frozen=True)
class ComposedGuarantee:
    """The guarantee of several releases of one dataset, composed exactly."""

    #: Composed ε at ``delta`` (largest over the pairs and both directions; ``inf`` when
    #: some pair is distinguishable with certainty).
    epsilon: float
    #: The reference δ (the budget's δ when there is a budget, else the newest release's).
    delta: float
    n_releases: int
    #: {"gaussian", "laplace"}
    family: str
    theorem: str
    pairs: tuple[tuple[str, str], ...]
    #: ``epsilon`` (at ``delta``) and ``delta`` of the newest release alone, by the same
    #: computation.
    alone: dict[str, float]
    #: The budget checked, with ``delta_at_epsilon``: the composed δ at the budget's ε.
    budget: dict[str, float] | None = None
    #: ``pair``, ``direction``, ``epsilon`` (and ``delta_at_budget``) of the composition.
    per_pair: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: A ledger's accounts of the data after this release (one per secret, its own first).
    accounts: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def within(self, budget: Any) -> bool:
        """Whether the composition meets ``budget`` (an object with epsilon, delta)."""
        if self.family == "laplace":
            return self.epsilon <= budget.epsilon
        if self.budget is not None and "delta_at_epsilon" in self.budget:
            same = self.budget["epsilon"] == budget.epsilon and self.budget["delta"] == budget.delta
            if same:
                return self.budget["delta_at_epsilon"] <= budget.delta
        return self.epsilon <= budget.epsilon and self.delta <= budget.delta

    def describe(self) -> str:
        """One line, e.g. ``(1.73, 0.001) over 2 releases``."""
        text = f"({self.epsilon:.4g}, {self.delta:g}) over {self.n_releases} release(s)"
        if self.budget is not None and "delta_at_epsilon" in self.budget:
            text += f"; delta at the budget's epsilon {self.budget['delta_at_epsilon']:.3g}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        from ..guarantees import to_jsonable

        return to_jsonable(
            {
                **field_values(self, "epsilon delta n_releases family theorem"),
                "pairs": [list(p) for p in self.pairs],
                "alone": self.alone,
                "budget": self.budget,
                "per_pair": list(self.per_pair),
                "notes": list(self.notes),
                **({"accounts": list(self.accounts)} if self.accounts else {}),
            }
        )


# ---------------------------------------------------------------------------------------
# Gaussian family
# ---------------------------------------------------------------------------------------


@on_one_blas_thread
def gaussian_pair_composition(
    means: np.ndarray,
    covariances: np.ndarray,
    noise_covariance: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    *,
    delta: float,
    budget_epsilon: float | None = None,
) -> tuple[float, float | None, list[dict[str, Any]]]:
    """ε(δ) (and δ at ``budget_epsilon``) of F + Z for Gaussian f_θ and Gaussian noise.

    For each pair (i, j) of Ψ and both directions, the exact accountant on
    N(μᵢ, Σᵢ + Σ_Z) vs N(μⱼ, Σⱼ + Σ_Z) (:func:`distpriv.accounting.gaussian_pair_epsilon`
    and :func:`~distpriv.accounting.gaussian_pair_delta`). The joint covariance of a
    stacked query is singular when statistics repeat; the accountant standardises the
    coordinates (scale-free), restricts to the common support and reports ε = ∞ when the
    means differ outside it, or when the problem is too ill-conditioned to resolve.

    Parameters
    ----------
    means : ndarray, shape (k, M)
    covariances : ndarray, shape (k, M, M)
    noise_covariance : ndarray, shape (M, M)
    pairs : sequence of (int, int)
    delta : float
        δ at which ε is reported.
    budget_epsilon : float, optional
        When given, also the largest δ(budget_epsilon) over pairs and directions.

    Returns
    -------
    (epsilon, delta_at_budget_epsilon or None, per-pair list of dicts)
    """
    from ..accounting.pair_profile import gaussian_pair_delta, gaussian_pair_epsilon

    eps_max, dlt_max, rows = 0.0, None if budget_epsilon is None else 0.0, []
    for i, j in pairs:
        for a, b in ((i, j), (j, i)):
            cov_a = covariances[a] + noise_covariance
            cov_b = covariances[b] + noise_covariance
            row: dict[str, Any] = {"pair": [int(i), int(j)], "direction": [int(a), int(b)]}
            eps = float(gaussian_pair_epsilon(means[a], cov_a, means[b], cov_b, delta=delta))
            dlt = (
                None
                if budget_epsilon is None
                else float(
                    gaussian_pair_delta(means[a], cov_a, means[b], cov_b, epsilon=budget_epsilon)
                )
            )
            if math.isinf(eps):
                row["note"] = (
                    "no finite epsilon: the means differ where neither the data nor the noise "
                    "vary (or the difference is numerically unresolvable)"
                )
            row["epsilon"] = eps
            eps_max = max(eps_max, eps)
            if dlt is not None:  # exactly when budget_epsilon is given
                row["delta_at_budget"] = dlt
                dlt_max = dlt if dlt_max is None else max(dlt_max, dlt)
            rows.append(row)
    return eps_max, dlt_max, rows


def _on_population(
    model: Any,
    noise_cov: np.ndarray,
    beta: float | None,
    delta: float,
    budget_epsilon: float | None,
) -> tuple[float, float | None, list[dict[str, Any]]]:
    """:func:`gaussian_pair_composition` on the model, or on the worst members of its
    (1 − β) confidence set for this noise, folded back to the pairs of Ψ (each pair and
    direction: its largest ε and δ over its members)."""
    if beta is None or getattr(model, "uncertainty", None) is None:
        return gaussian_pair_composition(
            model.means,
            model.covariances,
            noise_cov,
            model.pairs,
            delta=delta,
            budget_epsilon=budget_epsilon,
        )
    # The joint set's worst members depend on the ε at which δ is maximised: ε(δ) is
    # reported on the members worst at that ε itself (a fixed point, :func:`_worst_epsilon`,
    # never on the budget's ε, which would make the reported ε depend on the budget), and
    # δ at the budget's ε on the members worst at the budget's ε.
    members, eps, rows = _worst_epsilon(model, noise_cov, beta, delta)
    dat = None
    if budget_epsilon is not None:
        at = population_model(model, beta=beta, noise_cov=noise_cov, epsilon=budget_epsilon)
        _, dat, at_rows = gaussian_pair_composition(
            at.means, at.covariances, noise_cov, at.pairs, delta=delta,
            budget_epsilon=budget_epsilon,
        )  # fmt: skip
        for row, at_row in zip(rows, at_rows, strict=True):
            row["delta_at_budget"] = at_row["delta_at_budget"]
    per = len(members.pairs) // len(model.pairs)  # members of each pair, in pair order
    folded: dict[tuple[int, int], dict[str, Any]] = {}
    for r, row in enumerate(rows):
        p, forward = (r // 2) // per, r % 2 == 0
        i, j = model.pairs[p]
        key = (p, int(forward))
        out = {"pair": [i, j], "direction": [i, j] if forward else [j, i]}
        out.update({k: v for k, v in row.items() if k not in ("pair", "direction")})
        have = folded.get(key)
        if have is None or out["epsilon"] > have["epsilon"]:
            if have is not None and "delta_at_budget" in have:
                out["delta_at_budget"] = max(out["delta_at_budget"], have["delta_at_budget"])
            folded[key] = out
        elif "delta_at_budget" in out:
            have["delta_at_budget"] = max(have["delta_at_budget"], out["delta_at_budget"])
    return eps, dat, [folded[k] for k in sorted(folded)]


# Rounds of the fixed point of _worst_epsilon (it settles in two or three: the members
# move only when the search's worst sign point changes).
_EPSILON_ROUNDS = 8


def _worst_epsilon(
    model: Any, noise_cov: np.ndarray, beta: float, delta: float
) -> tuple[Any, float, list[dict[str, Any]]]:
    """ε(δ) on the worst members of the confidence set, the members taken at that ε.

    The joint set's members are the worst for δ at a given ε
    (:func:`distpriv.population.confidence.population_model`); the ε reported for δ is the least
    ε at which the set's worst member has δ(ε) ≤ δ. Starting at ε = 1, the members worst at
    the current ε give a new ε, until ε repeats (a fixed point: the worst member the search
    finds at ε has δ(ε) = δ). Were the search exact, the sequence would not decrease (at
    ε_k+1 the worst member is at least as bad as the one that gave ε_k+1); it is a
    heuristic, so the largest ε met is reported (each is attained by a member of the set).
    The box's members do not depend on ε: one round.

    Returns
    -------
    (members, epsilon, per-member rows of :func:`gaussian_pair_composition`)
    """
    joint = set_method(model) == "joint" and isinstance(model.uncertainty, MomentUncertainty)
    at, best = 1.0, None
    for _ in range(_EPSILON_ROUNDS if joint else 1):
        members = population_model(model, beta=beta, noise_cov=noise_cov, epsilon=at)
        eps, _, rows = gaussian_pair_composition(
            members.means, members.covariances, noise_cov, members.pairs, delta=delta
        )
        if best is None or eps > best[1]:
            best = (members, eps, rows)
        if not math.isfinite(eps) or eps == at or eps <= 0.0:
            break
        at = eps
    if best is None:  # pragma: no cover - the loop runs at least once
        raise RuntimeError("composition: no confidence-set members were evaluated")
    return best


# ---------------------------------------------------------------------------------------
# The joint model and compose()
# ---------------------------------------------------------------------------------------


def _family(specs: Sequence[ReleaseSpec]) -> str:
    kinds = []
    for s in specs:
        ks = {c.kind for c in s.noise.components if c.basis.shape[1] and np.any(c.scales > 0)}
        kinds.append(ks)
    if all(k <= {"gaussian"} for k in kinds):
        return "gaussian"
    if all(k == {"laplace"} for k in kinds):
        return "laplace"
    what = ", ".join(
        f"{s.mechanism} ({'+'.join(sorted(k)) or 'no noise'})"
        for s, k in zip(specs, kinds, strict=True)
    )
    raise CompositionError(
        f"cannot compose these releases exactly: their noise families differ ({what}); the "
        "exact accountant covers Gaussian noise and Thm 3.1 covers Laplace noise, not a mix. "
        "Use a new secret or data, or release with one mechanism family"
    )


def compose(
    specs: Sequence[ReleaseSpec],
    *,
    secret: Any,
    modelling: JointModelling,
    delta: float | None = None,
    budget: Any = None,
    newest_model: Any = None,
    beta: float | None = DEFAULT_BETA,
) -> ComposedGuarantee:
    """The exact guarantee of several releases of one dataset, as one mechanism.

    Builds the joint model of the stacked statistics (:func:`joint_model`) and evaluates
    the block-noise mechanism for every pair of the secret's Ψ (both directions): the
    exact Gaussian accountant for Gaussian noise, Chen & Ohrimenko 2023 Thm 3.1 through
    the weighted W∞ of the joint samples for Laplace noise.

    Parameters
    ----------
    specs : sequence of ReleaseSpec
        The releases, oldest first; the last is the newest (its guarantee alone is
        reported too).
    secret : Secret
        The newest release's secret: the composition is stated for its pairs.
    modelling : JointModelling
        How the joint model is built: the newest release's modelling table, n, method,
        Monte Carlo datasets and their randomness, population, or the caller's builder
        (:class:`~distpriv.composition.joint.JointModelling`; the pipeline passes its one
        builder, so the composition is computed on a model built like the release's).
        The Laplace family always uses its ``n_samples`` Monte Carlo datasets.
    delta : float, optional
        δ at which ε is reported; default the budget's δ, else the newest release's.
    budget : Budget, optional
        When given, also δ at the budget's ε (Gaussian family), for the check.
    newest_model : DataQueryModel, optional
        The query model the newest release was calibrated on (its statistics, in order).
        With no earlier release the joint model *is* that model, so a Gaussian
        composition uses it as it is instead of modelling the table again
        (one scan of a large modelling table fewer); ignored when there are earlier
        releases or for the Laplace family (which needs Monte Carlo datasets).
    beta : float or None
        Gaussian family, joint model carrying the uncertainty of its moments (a modelling
        table sampled from the population): the composition is evaluated on the worst
        members of the same (1 − β) confidence set as the releases' calibrations
        (:func:`distpriv.population.confidence.population_model`, every pair of Ψ at once), so
        the composed guarantee holds on the population with confidence 1 − β. ``None``:
        on the fitted moments.

    Returns
    -------
    ComposedGuarantee

    Raises
    ------
    CompositionError
        Mixed noise families, or Laplace noise that leaves a direction noiseless.
    """
    specs = list(specs)
    if not specs:
        raise ParameterError("compose needs at least one release")
    family = _family(specs)
    if delta is None:
        delta = budget.delta if budget is not None else specs[-1].delta
    dlt = check_delta(delta)
    labels = tuple(str(v) for v in secret.values)
    pair_labels = tuple((str(a), str(b)) for a, b in secret.pairs)
    notes: list[str] = []
    if family == "gaussian":
        if dlt == 0.0:
            raise CompositionError(
                "Gaussian releases have no finite epsilon at delta = 0: give a delta > 0 "
                "(or a budget with delta > 0)"
            )
        if newest_model is not None and len(specs) == 1:
            if newest_model.dim != specs[0].noise.dim:
                raise ParameterError(
                    f"newest_model has {newest_model.dim} statistics but the release's noise "
                    f"has {specs[0].noise.dim}"
                )
            model = newest_model
        else:
            model, warn = joint_model(
                specs, secret=secret, modelling=modelling, method=modelling.method
            )
            notes += list(warn)
        noise_cov = block_diag(*[s.noise.covariance for s in specs])
        b_eps = None if budget is None else budget.epsilon
        eps, dat, rows = _on_population(model, noise_cov, beta, dlt, b_eps)
        if len(specs) == 1:  # the newest release alone is the whole composition
            alone_eps = eps
        else:
            last = np.arange(model.dim - specs[-1].noise.dim, model.dim)
            alone_eps, _, _ = _on_population(
                marginal(model, last), specs[-1].noise.covariance, beta, dlt, None
            )
        if beta is not None and getattr(model, "uncertainty", None) is not None:
            notes.append(
                f"holds on the population with probability at least {1 - beta:g} over the "
                "draw of the modelling table: evaluated on the worst members of the "
                "releases' confidence set for the population's moments, every pair at once"
            )
        theorem = GAUSSIAN_THEOREM
        notes.append(
            "Gaussian approximation of the joint query model: " + (model.fitted or "given moments")
        )
    else:
        model, warn = joint_model(specs, secret=secret, modelling=modelling, method="montecarlo")
        notes += [w for w in warn if "not Gaussian" not in w]  # no Gaussian assumption here
        weight = block_diag(*[laplace_map(s.noise) for s in specs])
        eps, rows = laplace_composition(model.samples, weight, model.pairs)
        last_w = laplace_map(specs[-1].noise)
        tail = slice(model.dim - specs[-1].noise.dim, model.dim)
        alone_eps, _ = laplace_composition([s[:, tail] for s in model.samples], last_w, model.pairs)
        dlt, dat = 0.0, None
        theorem = LAPLACE_THEOREM
        notes.append(
            f"empirical joint model: {modelling.n_samples} Monte Carlo datasets per value; the "
            "distance between samples can understate that of a continuous f_theta"
        )
    for row in rows:
        row["pair"] = [labels[k] for k in row["pair"]]
        if "direction" in row:
            row["direction"] = [labels[k] for k in row["direction"]]
    budget_info = None
    if budget is not None:
        budget_info = {"epsilon": float(budget.epsilon), "delta": float(budget.delta)}
        if dat is not None:
            budget_info["delta_at_epsilon"] = float(dat)
    return ComposedGuarantee(
        epsilon=float(eps),
        delta=float(dlt),
        n_releases=len(specs),
        family=family,
        theorem=theorem,
        pairs=pair_labels,
        alone={"epsilon": float(alone_eps), "delta": float(dlt)},
        budget=budget_info,
        per_pair=tuple(rows),
        notes=tuple(notes),
    )
