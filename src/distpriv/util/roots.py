"""Brent's root finder without importing scipy.optimize (a fast cold start).

``import scipy.optimize`` builds linprog, shgo and their dependencies (scipy.spatial,
scipy.fft, scipy.constants, scipy.sparse.linalg): about a quarter of a second of CPU, while
the calibrations on ``distpriv verify``'s path use only :func:`scipy.optimize.brentq`.
:func:`brentq` here is a line-by-line port of scipy's C implementation
(``scipy/optimize/Zeros/brentq.c``, Brent 1973, ch. 4, as written by Charles Harris) and
of the checks of its Python wrapper: the same iterates, the same function calls in the
same order and the same result, bit for bit (tests/test_roots.py runs both on a battery
of functions and compares every evaluation point).

References
----------
Brent, R. P. (1973). *Algorithms for Minimization Without Derivatives*, ch. 4.
Prentice-Hall.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["brentq"]

# scipy.optimize's smallest allowed relative tolerance, 4 · machine epsilon.
_RTOL_MIN = 4 * 2.220446049250313e-16


def brentq(
    f: Callable[[float], float],
    a: float,
    b: float,
    *,
    xtol: float = 2e-12,
    rtol: float = 8.881784197001252e-16,
    maxiter: int = 100,
) -> float:
    """A root of ``f`` in the bracket [a, b] (``scipy.optimize.brentq``'s algorithm).

    Parameters
    ----------
    f : callable float -> float
        Continuous, with f(a) and f(b) of opposite signs.
    a, b : float
        The bracket.
    xtol, rtol : float
        The root is found to within ``xtol + rtol * |x|`` (``xtol`` > 0, ``rtol`` at least
        4 machine epsilons), as scipy's.
    maxiter : int
        Iterations before giving up (≥ 0).

    Returns
    -------
    float
        The root, as ``scipy.optimize.brentq(f, a, b, xtol=xtol, rtol=rtol,
        maxiter=maxiter)`` returns it.

    Raises
    ------
    ValueError
        ``xtol`` ≤ 0, ``rtol`` too small, ``maxiter`` < 0, f(a) and f(b) of the same sign,
        or f returns NaN (scipy's messages).
    RuntimeError
        No convergence within ``maxiter`` iterations.
    """
    if xtol <= 0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if rtol < _RTOL_MIN:
        raise ValueError(f"rtol too small ({rtol:g} < {_RTOL_MIN:g})")
    if maxiter < 0:
        raise ValueError("maxiter must be >= 0")

    def call(x: float) -> float:
        fx = float(f(x))
        if math.isnan(fx):
            raise ValueError(f"The function value at x={x:f} is NaN; solver cannot continue.")
        return fx

    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre = call(xpre)
    fcur = call(xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:
                stry = -fcur * (xcur - xpre) / (fcur - fpre)  # interpolate
            else:  # extrapolate (inverse quadratic)
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry  # good short step
            else:
                spre = scur = sbis  # bisect
        else:
            spre = scur = sbis  # bisect
        xpre, fpre = xcur, fcur
        if abs(scur) > delta:
            xcur += scur
        else:
            xcur += delta if sbis > 0 else -delta
        fcur = call(xcur)
    raise RuntimeError(f"Failed to converge after {maxiter} iterations.")
