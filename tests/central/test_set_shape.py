"""Noise shaped for the population confidence set."""

from __future__ import annotations

import warnings

from adult_setup import adult_income_model
from distpriv import calibrate


def test_optimal_g_noise_shaped_for_the_set(monkeypatch, adult_modeling):
    """With the population layer, optimal-g's program is solved on the confidence set's
    worst members, not the fitted shape scaled up. Reference: the same calibration with
    that program switched off (the fitted shapes only), and the exact accountant on the
    members of the set for the published noise."""
    import distpriv.central.exact_calibration as ec
    from distpriv.population.confidence import population_model, population_set
    from distpriv.population.exact import pair_deltas

    model = adult_income_model(adult_modeling.sample(1000, random_state=1), quiet=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # The program against the box set (the joint set, the default:
        # below, and tests/central/test_joint_search.py).
        with population_set("box"):
            shaped = calibrate("optimal-g", model, epsilon=1.0, delta=1e-3)
            with monkeypatch.context() as mp:
                mp.setattr(ec, "_set_program", lambda *a, **k: None)
                fitted = calibrate("optimal-g", model, epsilon=1.0, delta=1e-3)
        joint = calibrate("optimal-g", model, epsilon=1.0, delta=1e-3)
    # On the joint set the claim is confirmed on its members too. (Its price against the
    # box's, 251.4 against 296.0 here, is asserted in test_joint_search.py.)
    jcov = joint.noise_covariance
    assert (
        pair_deltas(population_model(model, beta=0.05, noise_cov=jcov), jcov, epsilon=1.0).worst
        <= 1e-3
    )
    assert "population set" in shaped.diagnostics["calibration_method"]
    # Measured (Adult, 1,000 modelling rows, beta = 0.05): 346 against 391. The fitted
    # shapes' least scale is now found on the members of their own noise (population/
    # member_search.py), which took them from 484 to 391; the program's noise did not move.
    assert shaped.mse() < fitted.mse()
    cov = shaped.noise_covariance
    with population_set("box"):
        members = population_model(model, beta=0.05, noise_cov=cov)
    assert pair_deltas(members, cov, epsilon=1.0).worst <= 1e-3
    assert pair_deltas(model, cov, epsilon=1.0).worst <= 1e-3
