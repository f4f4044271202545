"""``distpriv demo`` and ``distpriv calibrate``: the commands that calibrate without a
configuration's data, on a simulated model (the demo) or on a model file.
"""

from __future__ import annotations

from pathlib import Path

from ...central import calibrate, mechanism_info
from ...errors import (
    MechanismNotApplicableError,
    ParameterError,
)
from ...guarantees import to_jsonable
from ...util.version import __version__
from ..model_file import load_model_config
from ..outcomes import (
    CalibrateOutcome,
    DemoOutcome,
)
from ..stages.calibrate import checked_noise
from ..stages.steps import _collect_warnings
from .demo import demo_report

__all__ = ["run_calibrate", "run_demo"]


def run_demo(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-3,
    seed: int = 0,
    n_samples: int = 1000,
    attack_repetitions: int = 5,
) -> DemoOutcome:
    """Every mechanism on the paper's Adult setting (Chen & Ohrimenko 2023 §5.1), simulated.

    A simulation on public data: the noise is numpy's, seeded, and the report says so.
    """
    with _collect_warnings() as caught:
        report = demo_report(
            epsilon=epsilon,
            delta=delta,
            seed=seed,
            n_samples=n_samples,
            attack_repetitions=attack_repetitions,
        )
    public = {"kind": "demo", "simulation": True, **report.to_dict()}
    return DemoOutcome(public, {}, caught.lines, report=report)


def run_calibrate(
    model_file: str | Path,
    *,
    mechanism: str,
    epsilon: float,
    delta: float = 0.0,
    calibration: str | None = None,
    objective: str | None = None,
) -> CalibrateOutcome:
    """Calibrate a mechanism to a Gaussian query model read from a TOML file.

    Raises
    ------
    MechanismNotApplicableError
        The mechanism needs another view of f_θ than a model file gives (the Wasserstein
        mechanisms need Monte Carlo samples, APMQM a parameter network).
    ParameterError
        ``calibration`` for a non-Gaussian mechanism; ``objective`` for a mechanism whose
        noise shape is fixed by its theorem (only optimal-g and optimal-g-full take it);
        an ε so small (or large) that the
        noise is not a finite number.
    """
    cfg = load_model_config(model_file)
    spec = mechanism_info(mechanism)
    if spec.model_view != "gaussian":
        raise MechanismNotApplicableError(
            f"mechanism {mechanism!r} is calibrated on "
            + (
                "Monte Carlo samples of f_theta; a model file gives only a Gaussian: use "
                "'distpriv release' or 'distpriv audit' with a data table (the samples are "
                "drawn from it)"
                if spec.model_view == "samples"
                else "a parameter network, not a query model (see distpriv.central.apmqm)"
            )
        )
    options = cfg.options_for(mechanism)
    if calibration is not None:
        if not spec.gaussian:
            raise ParameterError(f"--calibration applies to Gaussian mechanisms, not {mechanism!r}")
        options["calibration"] = calibration
    if objective is not None:
        if "objective" not in spec.options:
            raise ParameterError(
                f"--objective applies to optimal-g and optimal-g-full (their noise shape "
                f"minimises it), not {mechanism!r} (its shape is fixed by its theorem)"
            )
        options["objective"] = objective
    mech = checked_noise(calibrate(mechanism, cfg.model, epsilon=epsilon, delta=delta, **options))
    public = {
        "kind": "calibration",
        "title": cfg.title,
        "model_file": cfg.path,
        "version": __version__,
        "model": cfg.model.to_dict(),
        **mech.to_dict(),
    }
    return CalibrateOutcome(to_jsonable(public), {}, (), mechanism=mech)
