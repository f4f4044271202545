"""The accountant's oscillatory tail (accounting/_inversion._oscillatory_tail) against
mpmath's quadrature of the same inversion integrand, Re[M(z) e^{−zε} / (z(1+z))] / π.

Both branches: many oscillations (QUADPACK's QAWO with Fourier weights) and few (plain
QUADPACK, which integrated Re A(t) without the factor e^{iωt} until work on the cold path
found it: −1.2e-4 instead of −5.6e-4 on the first case). Also checks that scipy.integrate, now
imported only there, is still reached.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from distpriv.accounting._inversion import _log_mgf, _oscillatory_tail
from distpriv.accounting._whitening import _Loss


@pytest.mark.parametrize(
    ("const", "few"),
    [(3.0, True), (2.2, True), (10.0, False), (-6.0, False)],
)
def test_tail_matches_mpmath(const, few):
    loss = _Loss(lam=np.array([0.02, -0.03, 0.01]), beta=np.array([0.4, 0.2, 0.1]), const=const)
    alpha, eps, t0, t1 = 0.5, 1.0, 5.0, 60.0
    nz = loss.lam != 0
    omega = loss.const - float(np.sum(loss.beta[nz] ** 2 / (4.0 * loss.lam[nz]))) - eps
    assert (abs(omega) * (t1 - t0) < 50.0) == few  # the branch this case exercises
    got, err = _oscillatory_tail(loss, alpha, eps, t0, t1, 1e-10)

    def integrand(t: float) -> float:
        z = complex(alpha, t)
        log_i = complex(_log_mgf(loss, np.array([z]))[0]) - z * eps
        return float((mpmath.exp(log_i) / (z * (1 + z))).real / mpmath.pi)

    with mpmath.workdps(30):
        want = float(mpmath.quad(integrand, mpmath.linspace(t0, t1, 80)))
    assert abs(got - want) <= err + 1e-12, (got, want, err)
