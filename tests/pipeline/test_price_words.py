"""The price table's words say what the numbers say: a premise factor below 1 is not a
cost, and "nearly collinear" appears only when a statistic is."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from distpriv.pipeline.price.rows import COLLINEAR_R2, StatisticPrice
from distpriv.pipeline.price.words import price_lines
from distpriv.report.text import price_lines as render_price


def _row(name, sd, fitted, r2):
    return StatisticPrice(
        name=name, noise_sd=sd, spread=2.0, noise_to_spread=sd / 2.0, noise_sd_fitted=fitted,
        drop_saving=None, r_squared=r2, gap=1.0, value=10.0,
    )  # fmt: skip


def _premise_line(lines):
    (line,) = [x for x in lines if x.startswith("the population premise")]
    return line


def test_a_premise_that_lowers_the_noise_is_not_worded_as_a_cost():
    rows = [_row("a", 0.9, 1.0, 0.1), _row("b", 0.8, 1.0, 0.2)]
    mse, fitted = float(np.sum([0.9**2, 0.8**2])), 2.0
    line = _premise_line(price_lines(rows, mse, fitted))
    assert mse / fitted < 1
    assert "multiplies" not in line and "costs no noise" in line
    assert f"{mse / fitted:.3g} times" in line and "0.8-0.9 times theirs" in line


def test_a_premise_that_raises_the_noise_is_its_price():
    rows = [_row("a", 1.2, 1.0, 0.1), _row("b", 1.5, 1.0, 0.2)]
    mse, fitted = float(np.sum([1.2**2, 1.5**2])), 2.0
    line = _premise_line(price_lines(rows, mse, fitted))
    assert f"multiplies E||Z||^2 by {mse / fitted:.3g}" in line and "1.2-1.5x" in line


def _rendered(rows):
    price = {
        "statistics": [r.to_dict() for r in rows],
        "collinear_r2": COLLINEAR_R2,
        "condition_number": 3.0,
        "lines": [],
        "weights": "",
    }
    buf = io.StringIO()
    render_price(Console(file=buf, width=200), price)
    return buf.getvalue()


def test_nearly_collinear_only_when_a_statistic_is():
    text = _rendered([_row("a", 1.0, None, 0.2), _row("b", 1.0, None, 0.3)])
    assert "nearly collinear:" not in text and "(collinear)" not in text
    assert "no statistic is nearly collinear" in text
    text = _rendered([_row("a", 1.0, None, 0.95), _row("b", 1.0, None, 0.3)])
    assert "(collinear)" in text and "no statistic is nearly collinear" not in text
