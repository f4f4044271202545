"""Text of the audit for several attributes at once, and the guarantee on the accuracy
scale (issue 27; beside :func:`distpriv.rendering.render_audit`, which dispatches here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape

from ._text import printable

__all__ = ["allowed_line", "render_several_audit"]


def allowed_line(report: Any) -> str:
    """ "guarantee: … allows accuracy at most …" for each defended mechanism.

    (ε, δ) bounds the accuracy of every attack on two equally likely values by
    (e^ε + δ)/(1 + e^ε) (:func:`distpriv.attacks.bounds.accuracy_allowed`).
    """
    from .attacks.bounds import accuracy_allowed

    parts = [
        f"{m.mechanism} (eps {m.epsilon:g}, delta {m.delta:g}): at most "
        f"{accuracy_allowed(m.epsilon, m.delta):.3f}"
        for m in report.mechanisms
        if m.mechanism != "none"
    ]
    if not parts:
        return "guarantee: none audited (undefended only)"
    return escape(printable("accuracy the guarantee allows any attack: " + "; ".join(parts)))


def render_several_audit(
    title: str, report: Any, notes: list[str], render_one: Callable[[str, Any, list[str]], str]
) -> str:
    """Each attribute's audit in turn (``render_one`` is ``render_audit``), then the notes
    that are not an attribute's own (the per-attribute guarantees)."""
    own = {n for r in report.reports for n in r.notes}
    parts = [
        render_one(f"{title} [{attr}]", sub, list(sub.notes))
        for attr, sub in zip(report.attributes, report.reports, strict=True)
    ]
    rest = [n for n in notes if n not in own]
    tail = "".join(f"note: {escape(printable(n))}\n" for n in rest)
    return "\n".join(parts) + tail
