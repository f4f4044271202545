"""distpriv.util.roots.brentq against scipy.optimize.brentq (the reference it ports).

The port must be the same algorithm, not merely another root finder: on every function of a
battery (smooth, flat, steep, discontinuous, with roots at the ends, hard to bracket), both
solvers evaluate the function at the same points in the same order and return the same float.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq as scipy_brentq

from distpriv.util.roots import brentq

EPS = float(np.finfo(float).eps)


def _battery() -> list[tuple[str, object, float, float, dict]]:
    rng = np.random.default_rng(20261126)
    cases: list[tuple[str, object, float, float, dict]] = [
        ("cubic", lambda x: x**3 - 2 * x - 5, 2.0, 3.0, {}),
        ("cos", math.cos, 0.0, 3.0, {}),
        ("exp", lambda x: math.exp(x) - 10.0, -5.0, 5.0, {}),
        ("flat", lambda x: (x - 1.0) ** 9, 0.0, 3.0, {"maxiter": 1000}),
        ("flat, no convergence", lambda x: (x - 1.0) ** 9, 0.0, 3.0, {}),
        ("steep", lambda x: math.atan(1e6 * (x - 0.3)), -1.0, 1.0, {}),
        ("step", lambda x: -1.0 if x < 0.123 else 1.0, -1.0, 1.0, {}),
        ("root at a", lambda x: x, 0.0, 1.0, {}),
        ("root at b", lambda x: x - 1.0, 0.0, 1.0, {}),
        ("reversed", lambda x: 1.0 - x * x, 0.0, 5.0, {}),
        ("log scale", lambda x: math.log(max(1e-300, math.exp(-x))) + 7.0, 0.0, 20.0, {}),
        ("tight", lambda x: x * x - 2.0, 1.0, 2.0, {"xtol": 1e-15, "rtol": 4 * EPS}),
        ("loose", lambda x: x * x - 2.0, 1.0, 2.0, {"xtol": 1e-3, "rtol": 1e-3}),
        ("few iterations", lambda x: x**3 - 0.1, -4.0, 9.0, {"maxiter": 500}),
    ]
    for k in range(40):
        c = rng.normal(size=5)
        a, b = -3.0, 3.0
        f = np.polynomial.Polynomial(c)
        if np.sign(f(a)) == np.sign(f(b)):
            c[0] -= f(a)  # a root at a, then moved inside
            c[0] += 0.5 * abs(f(b) - f(a)) * (1 if f(b) < f(a) else -1)
            f = np.polynomial.Polynomial(c)
        if np.sign(f(a)) != np.sign(f(b)):
            xtol = float(10.0 ** rng.uniform(-15, -3))
            cases.append((f"poly{k}", lambda x, f=f: float(f(x)), a, b, {"xtol": xtol}))
    return cases


@pytest.mark.parametrize(("name", "f", "a", "b", "kw"), _battery(), ids=lambda v: str(v)[:20])
def test_same_iterates_and_root_as_scipy(name, f, a, b, kw):
    ours: list[float] = []
    theirs: list[float] = []

    def track(log):
        def g(x):
            log.append(x)
            return f(x)

        return g

    try:
        want = scipy_brentq(track(theirs), a, b, **kw)
    except RuntimeError as exc:  # no convergence: ours says so too, after the same calls
        with pytest.raises(RuntimeError, match=str(exc)):
            brentq(track(ours), a, b, **kw)
        assert ours == theirs
        return
    got = brentq(track(ours), a, b, **kw)
    assert got == want  # bit for bit
    assert ours == theirs  # the same evaluations, in the same order
    assert len(ours) >= 2


def test_errors_match_scipy():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1.0, -1.0, 1.0)
    with pytest.raises(ValueError, match="different signs"):
        scipy_brentq(lambda x: x * x + 1.0, -1.0, 1.0)
    with pytest.raises(ValueError, match="xtol too small"):
        brentq(math.sin, -1.0, 1.0, xtol=0.0)
    with pytest.raises(ValueError, match="rtol too small"):
        brentq(math.sin, -1.0, 1.0, rtol=1e-17)
    with pytest.raises(ValueError, match="NaN"):
        brentq(lambda x: math.nan if x > 0.2 else -1.0, -1.0, 1.0)
    with pytest.raises(RuntimeError, match="Failed to converge after 3 iterations"):
        brentq(lambda x: x**3 - 0.1, -4.0, 9.0, maxiter=3)
    with pytest.raises(RuntimeError, match="Failed to converge after 3 iterations"):
        scipy_brentq(lambda x: x**3 - 0.1, -4.0, 9.0, maxiter=3)
