"""``distpriv verify``: the data-level check of a calibrated mechanism before any release
(split from ``run.py``, code moved verbatim). Also used by ``release --verify``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._version import __version__
from ..central import CalibratedMechanism, mechanism_info
from ..errors import (
    MechanismNotApplicableError,
    PrivacyLeakWarning,
)
from ..guarantees import to_jsonable
from ..modeling import Query, Secret, model_query
from ..modeling.tables import Table
from .config import ReleaseConfig
from .outcomes import (
    VerifyOutcome,
)
from .price import price_for_options
from .report import PRIVATE_BANNER, secret_dict
from .sources import (
    check_memory,
    open_table,
)
from .steps import (
    _collect_warnings,
    _config,
    _model_and_mechanism,
    _pool_size,
    _secret,
    _subset_size,
)

__all__ = ["run_verify"]


# Monte Carlo datasets per value at the data-level check's first look (half are evaluation
# draws); it draws more, doubling, while undecided (attacks.verify_sequential), up to
# VERIFY_MAX_SAMPLES per value or VERIFY_SECONDS of wall-clock time (issue 26 item 7).
VERIFY_SAMPLES = 20_000
VERIFY_MAX_SAMPLES = 160_000
VERIFY_SECONDS = 300.0


def _verify(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: Secret,
    n: int,
    mech: CalibratedMechanism,
) -> dict[str, Any]:
    """The data-level check of f_θ + Z (attacks.verify_on_data); refuses a failing release."""
    check = _verify_check(cfg, model_frame, query, secret, n, mech)
    if check.verdict == "violation":
        # Refused before any noise is drawn or file written.
        raise MechanismNotApplicableError(
            f"release refused by --verify: {mech.name!r} at epsilon={check.epsilon:g}: "
            + check.advice
        )
    if check.verdict == "inconclusive":
        warnings.warn(
            f"--verify on {mech.name!r}: {check.advice}", PrivacyLeakWarning, stacklevel=2
        )
    return check.to_dict()


def _verify_check(
    cfg: ReleaseConfig,
    model_frame: Table,
    query: Query,
    secret: Secret,
    n: int,
    mech: CalibratedMechanism,
) -> Any:
    """verify_sequential on datasets resampled from the modelling table (no noise is drawn).

    The first look uses ``VERIFY_SAMPLES`` datasets per value; while undecided the check
    doubles them, up to ``VERIFY_MAX_SAMPLES`` or ``VERIFY_SECONDS`` (the stated budget).
    """
    from ..attacks.verify_sequential import look_schedule, verify_sequential

    sizes = look_schedule(VERIFY_SAMPLES, max(VERIFY_SAMPLES, VERIFY_MAX_SAMPLES))
    batch = max(sizes[0], *(b - a for a, b in itertools.pairwise(sizes)))
    need = len(secret.values) * batch * (n + len(cfg.query)) * 8.0 * 2
    check_memory(need, f"--verify ({batch} datasets per value of {n} rows)")
    pool = _pool_size(model_frame, n)

    def draw(k: int, gen: Any) -> Any:
        return model_query(
            model_frame,
            query,
            secret,
            subset_size=n,
            method="montecarlo",
            n_samples=k,
            rng=gen,
            missing=cfg.missing,
            pool_size=pool,
        ).to_sampled()

    return verify_sequential(
        draw,
        mech,
        first=sizes[0],
        max_samples=sizes[-1],
        max_seconds=VERIFY_SECONDS,
    )


def run_verify(
    config: str | Path | ReleaseConfig,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyOutcome:
    """Model, calibrate and check a configured release on data, drawing no noise.

    The dry run of :func:`run_release` with ``verify=True``: the same model and mechanism
    (auto's choice included), then the data-level check of the actual outputs f_θ + Z on
    datasets resampled from the modelling table (:func:`distpriv.attacks.verify_on_data`).
    Nothing is released, no noise is drawn, no ledger is opened or written; the released
    table is not read.

    Returns
    -------
    VerifyOutcome
        ``public``: ``kind = "verification"``, the mechanism, its guarantee and the check
        (with its verdict); ``private``: the model.
    """
    cfg = _config(config)
    with _collect_warnings() as caught:
        secret, query, n = _secret(cfg), Query(cfg.query, ranges=cfg.ranges), _subset_size(cfg)
        model_frame = open_table(cfg.model_source, split_seed=cfg.split_seed, what="[data] model")
        model, mech, choice = _model_and_mechanism(cfg, model_frame, query, secret, n, progress)
        check = _verify_check(cfg, model_frame, query, secret, n, mech)
        spec = mechanism_info(mech.name)
        public = {
            "kind": "verification",
            "title": cfg.title,
            "secret": secret_dict(secret),
            "statistics": list(query.names),
            "mechanism": {
                "name": mech.name,
                "summary": spec.summary,
                "theorem": spec.theorem,
                "noise_covariance": mech.noise_covariance,
                "expected_l2_error": mech.expected_l2_error(),
                "noise_rank": mech.noise_rank,
            },
            "guarantee": mech.guarantee.to_dict(),
            "verification": check.to_dict(),
            "choice": None if choice is None else choice.rows(),
            "noise_drawn": False,
            "provenance": {"version": __version__},
        }
    private = {
        "kind": "verification-diagnostics",
        "private": PRIVATE_BANNER,
        "model": model.to_dict(),
        # The price per statistic, before any noise is drawn (pipeline.price, issue 25):
        # private, as noise / spread is (the spread is the modelling table's).
        "price": price_for_options(model, mech, cfg.options).to_dict(),
        "warnings": list(caught.lines),
    }
    return VerifyOutcome(to_jsonable(public), to_jsonable(private), caught.lines, report=check)
