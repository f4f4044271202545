"""The main job: every mechanism on the paper's Adult setting, side by side.

Chen & Ohrimenko 2023 §5.1: release the five statistics of a 100-record subset while
hiding whether the share of incomes above $50K is 0.45 or 0.55. The model comes from the
modelling split, the released subset from the test split.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ...central import MECHANISMS, mechanism_info
from ...errors import AssumptionWarning, MechanismNotApplicableError
from ...guarantees import to_jsonable
from ...modeling import ProportionSecret, Query, model_query
from ...util.records import field_values
from ...util.validation import check_positive_int, check_privacy, check_rng
from ...util.version import __version__
from ..stages.calibrate import calibrate_for
from ..stages.data import check_memory, load_frame, sample_subset, table_facts
from .release import method_for

__all__ = ["ADULT_STATISTICS", "INCOME_SECRET", "DemoReport", "DemoRow", "demo_report"]

# The five statistics released in Chen & Ohrimenko 2023 §5.1, on subsets of 100 records,
# and the secret they protect.
ADULT_STATISTICS = {
    "avg_age": "avg(age)",
    "avg_education_years": "avg(education_num)",
    "n_never_married": "count_if(marital_status = 'Never-married')",
    "n_female": "count_if(sex = 'Female')",
    "avg_hours_per_week": "avg(hours_per_week)",
}
INCOME_SECRET = ProportionSecret("income = '>50K'", values=[0.45, 0.55])


@dataclass(frozen=True)
class DemoRow:
    """One mechanism's result in the demo."""

    mechanism: str
    applicable: bool
    reason: str = ""
    noise: str = ""
    noise_std: tuple[float, ...] = ()
    expected_l2_error: float = float("nan")
    measured_l2_error: float = float("nan")
    measured_l2_se: float = float("nan")
    epsilon: float = float("nan")
    delta: float = float("nan")
    assumptions_hold: bool | None = None
    fallback: tuple[float, float] | None = None
    released: tuple[float, ...] = ()
    attack_accuracy: float = float("nan")
    attack_interval: tuple[float, float] = (float("nan"), float("nan"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""
        return to_jsonable(self.__dict__)


@dataclass(frozen=True)
class DemoReport:
    """All rows, with the setting they were computed in."""

    rows: tuple[DemoRow, ...]
    statistics: tuple[str, ...]
    true_value: np.ndarray
    epsilon: float
    delta: float
    seed: int
    subset_size: int
    n_samples: int
    mean_difference_l2: float
    undefended_attack: tuple[float, float, float] | None = None
    attack_repetitions: int = 0
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict."""

        return to_jsonable(
            {
                "version": __version__,
                **field_values(
                    self,
                    "seed epsilon delta subset_size n_samples statistics true_value"
                    " mean_difference_l2 undefended_attack attack_repetitions",
                ),
                "rows": [r.to_dict() for r in self.rows],
                "warnings": self.warnings,
            }
        )


def _describe(mech: Any) -> str:
    """Short description of a mechanism's noise, e.g. "Gaussian, 1 direction, sd 11"."""
    parts = []
    for comp in mech.noise.components:
        sd = np.sqrt(comp.variances)
        active = sd[sd > 1e-6 * sd.max(initial=0.0)]  # solver round-off is not noise
        if active.size == 0:
            continue
        dirs = (
            "iid"
            if comp.basis.shape[1] == mech.dim and np.allclose(comp.basis, np.eye(mech.dim))
            else f"{active.size}-dir"
        )
        spread = (
            f"sd {active[0]:.3g}"
            if np.ptp(active) <= 1e-9 * active.max()
            else f"sd <= {active.max():.3g}"
        )
        parts.append(f"{comp.kind.capitalize()} {dirs}, {spread}")
    return "; ".join(parts) or "none"


def demo_report(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    seed: int = 0,
    n_samples: int = 1000,
    draws: int = 2000,
    attack_repetitions: int = 5,
) -> DemoReport:
    """Calibrate every mechanism on the paper's setting and release one subset.

    Parameters
    ----------
    epsilon, delta : float
        Privacy parameters (δ is used by the Gaussian and approximate mechanisms).
    seed : int
        Seeds the Adult split, the modelling, the released subset and the noise.
    n_samples : int
        Monte Carlo datasets per secret value for the Wasserstein mechanisms (the paper
        uses 1000); the other mechanisms use the exact analytic moments.
    draws : int
        Noise draws used to measure each mechanism's L2 error empirically.
    attack_repetitions : int
        Repetitions of the paper's logistic-regression attack (200 shadow datasets from the
        auxiliary split, 200 test datasets from the test split, Chen & Ohrimenko 2023 §5.3)
        against every mechanism; 0 leaves the attack column out.
    """
    eps, dlt = check_privacy(epsilon, delta, delta_positive=True)
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    draws = check_positive_int(draws, "draws", minimum=2)
    attack_reps = check_positive_int(attack_repetitions, "attack_repetitions", minimum=0)
    gen = check_rng(seed)
    n = 100
    check_memory(2.0 * len(INCOME_SECRET.values) * n_samples * n * 8, f"n_samples={n_samples}")
    check_memory(draws * len(ADULT_STATISTICS) * 8.0 * 3, f"draws={draws}")
    modeling = load_frame("adult:modeling", split_seed=seed)
    subset = sample_subset(load_frame("adult:test", split_seed=seed), n, gen)
    query = Query(ADULT_STATISTICS)
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always", AssumptionWarning)
        # Exact moments for the Gaussian family; the paper's Monte Carlo samples for the
        # Wasserstein mechanisms, which need the distribution itself.
        models = {}
        models["analytic"] = model = model_query(
            modeling,
            query,
            INCOME_SECRET,
            subset_size=n,
            method="analytic",
            n_samples=n_samples,
            rng=gen,
        )
        models["montecarlo"] = model_query(
            modeling,
            query,
            INCOME_SECRET,
            subset_size=n,
            method="montecarlo",
            n_samples=n_samples,
            rng=gen,
        )
        truth = query.evaluate(subset)
        facts = table_facts(modeling, query, n)  # once per table, not per mechanism
        rows = []
        calibrated = []
        for name in MECHANISMS:
            try:
                view = models[method_for(name, "analytic")]
                # The paper's setting, compared by the paper's error E||Z||: its objective.
                paper = {"objective": "l2"} if "objective" in mechanism_info(name).options else {}
                mech = calibrate_for(name, view, epsilon=eps, delta=dlt, facts=facts, options=paper)
            except MechanismNotApplicableError as exc:
                rows.append(DemoRow(name, False, reason=str(exc)))
                continue
            calibrated.append(mech)
            noise = mech.noise.sample(draws, gen)
            norms = np.linalg.norm(noise, axis=1)
            g = mech.guarantee
            rows.append(
                DemoRow(
                    mechanism=name,
                    applicable=True,
                    noise=_describe(mech),
                    noise_std=tuple(np.sqrt(np.diag(mech.noise_covariance))),
                    expected_l2_error=mech.expected_l2_error(),
                    measured_l2_error=float(norms.mean()),
                    measured_l2_se=float(norms.std(ddof=1) / np.sqrt(draws)),
                    epsilon=g.epsilon,
                    delta=g.delta,
                    assumptions_hold=g.holds,
                    fallback=None if g.fallback is None else (g.fallback.epsilon, g.fallback.delta),
                    released=tuple(mech.release(truth, rng=gen).value),
                )
            )
        undefended = None
        if attack_reps:
            rows, undefended = _attack_column(rows, calibrated, model, seed, attack_reps, gen)
        caught = sorted(
            {
                str(w.message).split(":")[0]
                + ": "
                + str(w.message).split("(")[0].split(":", 1)[-1].strip()
                for w in log
                if issubclass(w.category, AssumptionWarning)
            }
        )
    return DemoReport(
        rows=tuple(rows),
        statistics=query.names,
        true_value=truth,
        epsilon=eps,
        delta=dlt,
        seed=seed,
        subset_size=n,
        n_samples=n_samples,
        mean_difference_l2=float(np.linalg.norm(model.means[0] - model.means[1])),
        undefended_attack=undefended,
        attack_repetitions=attack_reps,
        warnings=tuple(caught),
    )


def _attack_column(
    rows: list[DemoRow],
    mechs: list[Any],
    model: Any,
    seed: int,
    reps: int,
    gen: np.random.Generator,
) -> tuple[list[DemoRow], tuple[float, float, float]]:
    """The paper's logistic-regression attack against every calibrated mechanism."""
    from ...attacks import audit

    report = audit(
        auxiliary=load_frame("adult:auxiliary", split_seed=seed),
        test=load_frame("adult:test", split_seed=seed),
        query=ADULT_STATISTICS,
        secret=INCOME_SECRET,
        subset_size=100,
        mechanisms=["none", *mechs],
        model=model,
        repetitions=reps,
        rng=gen,
    )

    def logistic(name: str) -> Any:
        return next(a for a in report.get(name).attacks if a.attack == "logistic")

    out = []
    for row in rows:
        if row.applicable:
            a = logistic(row.mechanism)
            row = replace(row, attack_accuracy=a.accuracy, attack_interval=a.interval)
        out.append(row)
    base = logistic("none")
    return out, (base.accuracy, *base.interval)
