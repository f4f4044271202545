"""The release plan: every setting of a release, typed, frozen, with its default in one place.

A release passes through several stages (data, model, calibration, verification, ledger,
output) and each needs some of its settings. They used to be read from the configuration's
raw tables wherever they were needed, each read restating its default; two routes to the
query model (the release's and the ledger's joint model) could then disagree on an option.
Here they are read once: :func:`distpriv.pipeline.config.load_release_config` builds a
:class:`ReleasePlan` from the TOML file (config.py is the only reader of raw tables), the
library's functions build one from their keyword arguments, and every stage takes the part it
needs. A plan holds no data and no secrets: only how to model, calibrate, record and write.

Layout::

    ReleasePlan
      model        ModelSpec        how f_θ is modelled (Chen & Ohrimenko 2023, App. C.1)
      calibration  CalibrationSpec  the mechanism, ε, δ, β, the population set, its options
      ledger       LedgerSpec       where releases are recorded and the budget they spend
      output       OutputSpec       what the reports include
      audit        AuditSpec        the defaults of ``distpriv audit``
      verify       VerifySpec       what bounds the data-level check (``verify``, ``--verify``)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_METHOD",
    "DEFAULT_MISSING",
    "DEFAULT_N_SAMPLES",
    "DEFAULT_POPULATION_SET",
    "DEFAULT_SEED",
    "MIN_VERIFY_SAMPLES",
    "AuditSpec",
    "CalibrationSpec",
    "LedgerSpec",
    "ModelSpec",
    "OutputSpec",
    "ReleasePlan",
    "VerifySpec",
    "keyword_plan",
]

# The defaults of a release, stated once. They match the library's own defaults
# (distpriv.model_query, distpriv.calibrate); tests/pipeline/test_plan.py checks that.
DEFAULT_METHOD = "analytic"
DEFAULT_N_SAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_MISSING = "error"
DEFAULT_BOOTSTRAP: int | None = 50
DEFAULT_BETA: float | None = 0.05
DEFAULT_POPULATION_SET = "box"
# Smallest sample budget of the data-level check: it splits each value's datasets three
# ways (fit, train, evaluation); below a thousand its bounds say nothing at delta = 1e-3.
MIN_VERIFY_SAMPLES = 1_000


@dataclass(frozen=True)
class ModelSpec:
    """How the query model of a release is built from its modelling table."""

    #: n, rows of the released dataset (the model describes datasets of n rows).
    subset_size: int
    #: {"analytic", "montecarlo"}
    #: Exact moments of linear statistics, or Monte Carlo datasets. Mechanisms that need
    #: the samples view (the Wasserstein mechanisms) get Monte Carlo whatever this says
    #: (:meth:`for_mechanism`).
    method: str = DEFAULT_METHOD
    #: Monte Carlo datasets per value of the secret.
    n_samples: int = DEFAULT_N_SAMPLES
    #: Randomness of the modelling (never of any published noise); ``None``: fresh
    #: entropy from the operating system.
    seed: int | None = DEFAULT_SEED
    #: The modelling table is the whole population (finite-population correction against
    #: it, exact moments); by default it is a sample and the model carries the uncertainty
    #: of its moments.
    population: bool = False
    #: {"error", "drop"}
    #: The NULL policy of the statistics' and the secret's columns.
    missing: str = DEFAULT_MISSING
    #: Resamples of the population layer of non-linear statistics; ``None``: off.
    bootstrap: int | None = DEFAULT_BOOTSTRAP

    def for_mechanism(self, mechanism: str) -> ModelSpec:
        """The spec a mechanism is calibrated on: Monte Carlo for the samples view."""
        from ..central import mechanism_info  # the registry: only when a model is built

        if mechanism != "auto" and mechanism_info(mechanism).model_view == "samples":
            return replace(self, method="montecarlo")
        return self


@dataclass(frozen=True)
class CalibrationSpec:
    """What is calibrated: the mechanism and the guarantee asked of it."""

    #: A registered mechanism (:data:`distpriv.MECHANISMS`) or ``"auto"``.
    mechanism: str
    #: The (ε, δ) of distribution privacy asked for every pair of the secret's Ψ.
    epsilon: float
    delta: float = 0.0
    #: Confidence 1 − β that the guarantee holds on the population (``None``: on the
    #: fitted moments only).
    beta: float | None = DEFAULT_BETA
    #: {"box", "joint", "tight"}
    #: The population confidence set (:func:`distpriv.population_set`).
    population_set: str = DEFAULT_POPULATION_SET
    #: The mechanism's own options (read-only), without ``beta``.
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def mechanism_options(self) -> dict[str, Any]:
        """The options a mechanism's calibration takes, β included."""
        return {**self.options, "beta": self.beta}


@dataclass(frozen=True)
class LedgerSpec:
    """Where a release is recorded and what it may spend."""

    #: ``False``: record nothing (the report says so).
    enabled: bool = True
    #: The ledger file; ``None``: the default beside the configuration.
    path: str | None = None
    #: (ε, δ) the account of this data and secret may reach.
    budget: tuple[float, float] | None = None
    #: Key the data by this name instead of by its keyed fingerprint.
    data_name: str | None = None


@dataclass(frozen=True)
class OutputSpec:
    """What the reports of a release include."""

    title: str = ""
    #: The true values of the statistics in the curator's private diagnostics.
    include_true: bool = False
    #: A reproducible, NOT private noise seed (experiments and tests only).
    insecure_seed: int | None = None


@dataclass(frozen=True)
class AuditSpec:
    """The defaults of ``distpriv audit`` for this configuration (Chen & Ohrimenko 2023 §5.3)."""

    #: Mechanisms to attack; empty: the configured one.
    mechanisms: tuple[str, ...] = ()
    #: Attacks per mechanism and pair.
    repetitions: int = 10
    #: Shadow datasets the attacker trains on, and test datasets per value of the secret.
    n_shadow: int = 200
    n_test: int = 200
    classifiers: tuple[str, ...] = ("logistic",)
    #: Level of the accuracy's interval.
    confidence: float = 0.95
    #: Randomness of the audit (its datasets and its noise: the audit publishes nothing).
    seed: int | None = None
    #: Which pairs of the secret to attack; ``None``: ``"auto"``.
    pairs: Any = None


@dataclass(frozen=True)
class VerifySpec:
    """What bounds the data-level check of ``distpriv verify`` and ``release --verify``.

    From the configuration's ``[verify]`` table; a command-line flag given beside it wins.
    ``None`` is the check's own default (``distpriv.pipeline.commands.verify``: its sample
    budget, early stop and batch memory are tuned there, with the reasons).
    """

    #: Resampled datasets per value at the check's last look (``--max-samples``,
    #: ``[verify] max_samples``).
    max_samples: int | None = None
    #: Draw more only when the first look is suspicious (``--no-early-stop``,
    #: ``[verify] early_stop``).
    early_stop: bool | None = None
    #: Memory of one batch of resampled datasets, MiB (``--batch-mib``,
    #: ``[verify] batch_mib``).
    batch_mib: float | None = None

    def overridden(
        self,
        max_samples: int | None = None,
        early_stop: bool | None = None,
        batch_mib: float | None = None,
    ) -> VerifySpec:
        """This spec with the flags that were given (not ``None``) in place of its values."""
        return VerifySpec(
            self.max_samples if max_samples is None else max_samples,
            self.early_stop if early_stop is None else early_stop,
            self.batch_mib if batch_mib is None else batch_mib,
        )


@dataclass(frozen=True)
class ReleasePlan:
    """Every setting of a release: built once, passed to every stage."""

    model: ModelSpec
    calibration: CalibrationSpec
    ledger: LedgerSpec = field(default_factory=LedgerSpec)
    output: OutputSpec = field(default_factory=OutputSpec)
    audit: AuditSpec = field(default_factory=AuditSpec)
    verify: VerifySpec = field(default_factory=VerifySpec)

    def with_mechanism(self, mechanism: str) -> ReleasePlan:
        """The same plan for another mechanism (the audit's candidates, ``auto``'s)."""
        return replace(self, calibration=replace(self.calibration, mechanism=mechanism))


def keyword_plan(
    *,
    mechanism: str,
    epsilon: float,
    delta: float,
    subset_size: int,
    method: str,
    n_samples: int,
    options: Mapping[str, Any] | None,
    missing: str,
    population: bool,
    beta: float | None,
) -> ReleasePlan:
    """The plan of the library's keyword API (:func:`distpriv.release`,
    :func:`distpriv.release_with_ledger`): the one place their keywords become a plan.

    The modelling's randomness is not a setting here: those functions take an ``rng`` (a
    seed or a Generator that also drives a simulated, NOT private noise) and pass it beside
    the plan, so the model spec's ``seed`` is ``None``. The options are kept as given (a
    ``beta`` among them is overridden by ``beta`` for a fixed mechanism,
    :meth:`CalibrationSpec.mechanism_options`, and wins for ``auto``, as it always has).
    """
    return ReleasePlan(
        model=ModelSpec(
            subset_size=subset_size,
            method=method,
            n_samples=n_samples,
            seed=None,
            population=population,
            missing=missing,
        ),
        calibration=CalibrationSpec(
            mechanism=mechanism,
            epsilon=epsilon,
            delta=delta,
            beta=beta,
            options=dict(options or {}),
        ),
    )
