"""``distpriv report REPORT.json``: a saved public report, read as untrusted input.

A report file may come from anywhere (a colleague, a download), so reading it is bounded
before any work: at most :data:`MAX_REPORT_BYTES` bytes, valid UTF-8, JSON nested at most
:data:`MAX_DEPTH` deep with at most :data:`MAX_NODES` values, a privacy–utility figure of at
most :data:`MAX_CURVES` curves of :data:`MAX_CURVE_POINTS` points (the reports distpriv writes
are a few kilobytes with about a dozen curves of a dozen points). Anything else — the wrong
type where the page needs a list or a table, math text in a label — is a
:class:`~distpriv.errors.ParameterError` naming the file, never a traceback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ParameterError

__all__ = [
    "MAX_CURVES",
    "MAX_CURVE_POINTS",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_REPORT_BYTES",
    "load_report",
    "render_saved_report",
]

MAX_REPORT_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 500_000
MAX_CURVES = 100
MAX_CURVE_POINTS = 1_000

# Keys of each kind whose value the templates iterate (list) or index (table).
_SHAPES: dict[str, dict[str, type]] = {
    "release": {
        "secret": dict,
        "statistics": list,
        "mechanism": dict,
        "guarantee": dict,
        "provenance": dict,
    },
    "audit": {"mechanisms": list},
    "demo": {"rows": list, "statistics": list, "true_value": list},
}
_OPTIONAL: dict[str, type] = {
    "utility": dict,
    "choice": list,
    "notes": list,
    "provenance": dict,
    "secret": dict,
}


def _bounded(value: Any, where: str) -> None:
    """Depth and size of a parsed JSON value, walked without recursion."""
    stack = [(value, 1)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise ParameterError(f"{where} is nested more than {MAX_DEPTH} levels deep")
        if nodes > MAX_NODES:
            raise ParameterError(f"{where} has more than {MAX_NODES:,} values")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a saved report, bounded (see the module docstring).

    Raises
    ------
    ParameterError
        Missing or oversized file, invalid UTF-8 or JSON, too deep or too large, not a
        mapping, a key of the wrong type.
    OSError
        The file cannot be read.
    """
    where = f"REPORT {str(path)!r}"
    size = Path(path).stat().st_size
    if size > MAX_REPORT_BYTES:
        raise ParameterError(
            f"{where} is {size:,} bytes; a report is at most {MAX_REPORT_BYTES:,} bytes"
        )
    with open(path, "rb") as fh:
        raw = fh.read(MAX_REPORT_BYTES + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParameterError(
            f"{where} is not UTF-8 text (invalid byte at offset {exc.start})"
        ) from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"{where} is not a JSON report: {exc}") from None
    except RecursionError:
        raise ParameterError(f"{where} is nested more than {MAX_DEPTH} levels deep") from None
    if not isinstance(report, dict):
        raise ParameterError(f"{where} is not a JSON report (an object)")
    _bounded(report, where)
    kind = report.get("kind")
    shapes = _SHAPES.get(kind, {}) if isinstance(kind, str) else {}
    for key, want in {**_OPTIONAL, **shapes}.items():
        if key in report and report[key] is not None and not isinstance(report[key], want):
            raise ParameterError(
                f"{where}: {key!r} must be a {'list' if want is list else 'table'}, got "
                f"{type(report[key]).__name__} {_short(report[key])}"
            )
    _check_utility(report.get("utility"), where)
    return report


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_utility(utility: Mapping[str, Any] | None, where: str) -> None:
    if not utility:
        return
    eps, curves = utility.get("epsilons"), utility.get("curves")
    if curves is None:
        return
    if not isinstance(eps, list) or not isinstance(curves, list):
        raise ParameterError(f"{where}: utility needs lists 'epsilons' and 'curves'")
    if len(curves) > MAX_CURVES or len(eps) > MAX_CURVE_POINTS:
        raise ParameterError(
            f"{where}: the utility figure has {len(curves)} curve(s) of {len(eps)} point(s); "
            f"at most {MAX_CURVES} curves of {MAX_CURVE_POINTS} points are drawn"
        )
    for k, curve in enumerate(curves):
        if not isinstance(curve, dict) or not isinstance(curve.get("mechanism"), str):
            raise ParameterError(f"{where}: utility curve {k} has no mechanism name")
        for key in ("errors", "verified"):
            vals = curve.get(key)
            if not isinstance(vals, list) or len(vals) != len(eps):
                raise ParameterError(
                    f"{where}: utility curve {k} needs {key!r}, a list of {len(eps)} values"
                )
        if not all(e is None or _number(e) for e in curve["errors"]):
            raise ParameterError(f"{where}: utility curve {k}: 'errors' must be numbers")
    if not all(_number(e) and e > 0 for e in eps):
        raise ParameterError(f"{where}: utility 'epsilons' must be positive numbers")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def render_saved_report(path: str | os.PathLike[str]) -> str:
    """The HTML page of a saved report (:func:`load_report`, then
    :func:`~distpriv.report.html.render_html`).

    The templates read many optional fields; a hand-edited report can still hold a value of
    a type they cannot show. That is bad input, reported as one :class:`ParameterError`.
    """
    from jinja2 import TemplateError

    from .html import render_html

    report = load_report(path)
    try:
        return render_html(report)
    except ParameterError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, TemplateError) as exc:
        first = " ".join(str(exc).split())[:200]
        raise ParameterError(
            f"REPORT {str(path)!r} is not a well-formed {report.get('kind')} report "
            f"({type(exc).__name__}: {first})"
        ) from None
