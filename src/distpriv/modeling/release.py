"""Model, calibrate, compute F on the data, add noise: one protected release end to end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_rng
from ..central import CalibratedMechanism, calibrate, mechanism_info
from ..errors import ParameterError
from ..guarantees import Release, to_jsonable
from .model import DataQueryModel, _as_query, model_query
from .queries import Query
from .secrets import ProportionSecret
from .tables import as_table

__all__ = ["SAMPLE_MECHANISMS", "ReleaseReport", "release"]

# Mechanisms calibrated on the Monte Carlo samples rather than on the Gaussian fit.
SAMPLE_MECHANISMS = ("wasserstein", "approx-wasserstein")


@dataclass(frozen=True)
class ReleaseReport:
    """A protected release with everything needed to audit it.

    Attributes
    ----------
    release : Release
        The noisy statistics and their guarantee.
    mechanism : CalibratedMechanism
    model : DataQueryModel
        The query model the mechanism was calibrated on.
    true_value : ndarray, shape (m,)
        F(data). Kept in memory; written to reports only when asked.
    n_rows : int
        Rows of the released dataset.
    seed : int or None
        The seed of the run, if one was given.
    """

    release: Release
    mechanism: CalibratedMechanism
    model: DataQueryModel
    true_value: np.ndarray
    n_rows: int
    seed: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, include_true: bool = False) -> dict[str, Any]:
        """JSON-safe report; the true values only with ``include_true``."""
        from .. import __version__

        out = {
            "version": __version__,
            "seed": self.seed,
            "statistics": list(self.release.statistics),
            "released": to_jsonable(self.release.value),
            "sampler": self.release.sampler,
            "secure": self.release.secure,
            "n_rows": self.n_rows,
            "mechanism": self.mechanism.name,
            "noise_covariance": self.mechanism.noise_covariance.tolist(),
            "expected_l2_error": self.mechanism.expected_l2_error(),
            "guarantee": self.release.guarantee.to_dict(),
            "calibration_diagnostics": to_jsonable(self.mechanism.diagnostics),
            "model": self.model.to_dict(),
            **to_jsonable(self.meta),
        }
        if include_true:
            out["true_values"] = self.true_value.tolist()
        return out


def release(
    data: Any,
    query: Query | Mapping[str, str],
    secret: ProportionSecret,
    *,
    model_data: Any,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    subset_size: int | None = None,
    method: str = "analytic",
    n_samples: int = 1000,
    options: Mapping[str, Any] | None = None,
    rng: np.random.Generator | int | None = None,
) -> ReleaseReport:
    """Release F(data) under distribution privacy w.r.t. the secret.

    Models f_θ on ``model_data`` (:func:`model_query`), calibrates ``mechanism``
    (:func:`distpriv.calibrate`), computes F on ``data`` and adds the noise.

    Parameters
    ----------
    data : DataFrame, Arrow table or CSV/Parquet path
        The dataset to release, of ``subset_size`` rows.
    query : Query or mapping of name → SQL aggregate
    secret : ProportionSecret
    model_data : DataFrame, Arrow table or CSV/Parquet path
        Public or auxiliary data describing how datasets like ``data`` are distributed.
    mechanism : str
        A name in :data:`distpriv.MECHANISMS`. The Wasserstein mechanisms use the Monte
        Carlo samples (``method="montecarlo"``); the others the Gaussian model.
    epsilon, delta : float
        Privacy parameters.
    subset_size : int, optional
        n; defaults to the number of rows of ``data``, and must equal it.
    method, n_samples
        Passed to :func:`model_query`.
    options : mapping, optional
        Mechanism options (``calibration``, ``group_size``, …).
    rng : int, Generator or None
        ``None``: the noise comes from the secure sampler (a private release). An int or
        Generator drives the modelling and a numpy simulation of the noise, reproducible
        and NOT private (``release.secure`` is ``False``).

    Returns
    -------
    ReleaseReport
    """
    table = as_table(data)
    n = table.n_rows if subset_size is None else subset_size
    if n != table.n_rows:
        raise ParameterError(
            f"data has {table.n_rows} rows but subset_size={n}: the query model describes "
            f"datasets of {n} rows, so only such a dataset can be released under it"
        )
    q = _as_query(query)
    mechanism_info(mechanism)  # fail fast on an unknown name, before modelling
    if mechanism in SAMPLE_MECHANISMS and method != "montecarlo":
        raise ParameterError(
            f"mechanism {mechanism!r} is calibrated on samples: use method='montecarlo'"
        )
    gen = check_rng(rng)
    model = model_query(
        model_data, q, secret, subset_size=n, method=method, n_samples=n_samples, rng=gen
    )
    target = model.to_sampled() if mechanism in SAMPLE_MECHANISMS else model
    mech = calibrate(mechanism, target, epsilon=epsilon, delta=delta, **dict(options or {}))
    value = q.evaluate(table)
    # Published noise comes from the secure sampler; a given rng makes a simulation.
    rel = mech.release(value, rng=None if rng is None else gen)
    seed = rng if isinstance(rng, int) and not isinstance(rng, bool) else None
    return ReleaseReport(
        release=rel, mechanism=mech, model=model, true_value=value, n_rows=table.n_rows, seed=seed
    )
