"""HTML rendering from the package's Jinja2 templates (bottom layer).

Everything here works on the JSON-safe dicts of the result types (``to_dict()``), so the
``_repr_html_`` methods of guarantees, mechanisms, releases and audits, and the full
report of :mod:`distpriv.report.html`, share one set of templates without importing
upward (docs/architecture.md §2). Jinja2 is imported only when something is rendered.

Templates live in ``distpriv/templates`` (package data). Autoescaping is on: every value
that reaches a page, including user-written statistic names and SQL expressions, is
escaped.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "CSP",
    "fmt_number",
    "render_template",
    "repr_audit",
    "repr_guarantee",
    "repr_mechanism",
    "repr_model",
    "repr_private",
    "repr_release",
    "repr_report",
]

# The page may show inline styles and data: images, and nothing else: no script, no font,
# no fetch (the report is opened offline, often from an e-mail attachment).
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_TEMPLATES = Path(__file__).parent.parent / "templates"


def _as_float(value: Any) -> float | None:
    """A number from a JSON value (``"inf"``/``"nan"`` strings included), else ``None``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    try:  # numpy scalars
        return float(value)
    except (TypeError, ValueError):
        return None


def _finite(value: Any) -> float | str:
    """The finite number in ``value``, or its text when there is none (n/a, ∞, −∞, itself)."""
    x = _as_float(value)
    if x is None:
        return "n/a" if value is None else str(value)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return x


def fmt_number(value: Any, digits: int = 4) -> str:
    """Format a number for people: ``digits`` significant digits, ∞ and "n/a" spelled out.

    Strings that are not numbers are returned unchanged.
    """
    x = _finite(value)
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    text = f"{x:.{digits}g}"
    if "e" in text:
        mant, exp = text.split("e")
        return f"{mant}×10<sup>{int(exp)}</sup>"
    return text


def _fmt_plain(value: Any, digits: int = 4) -> str:
    """Like :func:`fmt_number` but with ``e`` notation (for places where markup is escaped)."""
    x = _finite(value)
    return x if isinstance(x, str) else f"{x:.{digits}g}"


def _ratio(epsilon: Any) -> str:
    """e^ε for the words of the guarantee ("at most 2.72 times more likely")."""
    x = _as_float(epsilon)
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{math.exp(x):.3g}" if x < 700 else "astronomically many"


def _pairs(pairs: Any) -> str:
    """ "0.45 vs 0.55; 0.55 vs 0.65" from [[a, b], ...]."""
    return "; ".join(f"{a} vs {b}" for a, b in (pairs or []))


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # fmt_number builds markup (×10<sup>k</sup>) from a number only, never from input text.
    env.filters["num"] = lambda v, d=4: (
        Markup(fmt_number(v, d)) if _as_float(v) is not None else fmt_number(v, d)
    )
    env.filters["plain"] = _fmt_plain
    env.filters["ratio"] = _ratio
    env.filters["pairs"] = _pairs
    env.globals["CSP"] = CSP
    return env


def render_template(name: str, **context: Any) -> str:
    """Render the template ``name`` (e.g. ``"release.html.j2"``) with ``context``."""
    return _environment().get_template(name).render(**context)


def repr_guarantee(guarantee: dict[str, Any]) -> str:
    """Compact HTML of a ``PrivacyGuarantee.to_dict()`` (for notebooks)."""
    return render_template("repr.html.j2", kind="guarantee", guarantee=guarantee)


def repr_mechanism(mechanism: dict[str, Any]) -> str:
    """Compact HTML of a ``CalibratedMechanism.to_dict()`` (for notebooks)."""
    return render_template(
        "repr.html.j2", kind="mechanism", mechanism=mechanism, guarantee=mechanism["guarantee"]
    )


def repr_release(release: dict[str, Any]) -> str:
    """Compact HTML of a ``Release.to_dict()`` (for notebooks)."""
    return render_template(
        "repr.html.j2", kind="release", release=release, guarantee=release["guarantee"]
    )


def repr_audit(audit: dict[str, Any]) -> str:
    """Compact HTML of an ``AuditReport.to_dict()`` (for notebooks)."""
    return render_template("repr.html.j2", kind="audit", audit=audit, guarantee=None)


def repr_model(model: dict[str, Any]) -> str:
    """Compact HTML of a query model's ``to_dict()`` (labels, statistics, means)."""
    return render_template("repr.html.j2", kind="model", model=model, guarantee=None)


def repr_report(
    report: dict[str, Any], *, private_hidden: bool = False, private_method: str = ".private_view()"
) -> str:
    """Compact HTML of a public report (release, audit, calibration, demo) for notebooks.

    Only the public dict is rendered; ``private_hidden`` adds a line saying that the
    curator's diagnostics exist and are not shown, and that ``private_method`` of the
    displayed object shows them.
    """
    g = report.get("guarantee") if isinstance(report, dict) else None
    return render_template(
        "repr.html.j2",
        kind="report",
        report=report,
        guarantee=g if isinstance(g, dict) and "epsilon" in g else None,
        private_hidden=private_hidden,
        private_method=private_method,
    )


def repr_private(private: dict[str, Any]) -> str:
    """The curator's private diagnostics, in a red PRIVATE frame (shown only on request)."""
    import json

    text = json.dumps(private, indent=1, default=str, allow_nan=True)
    return render_template("repr.html.j2", kind="private", text=text, guarantee=None)
