"""Text of the audit for several attributes at once, and the guarantee on the accuracy
scale (beside :func:`distpriv.report.text.render_audit`, which dispatches here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape

from ..util.text import printable

__all__ = ["allowed_line", "render_several_audit"]


def allowed_line(report: Any) -> str:
    """ "guarantee: … allows accuracy at most …" for each defended mechanism.

    (ε, δ) bounds the accuracy of every attack on two equally likely values by
    (e^ε + δ)/(1 + e^ε) (:func:`distpriv.attacks.bounds.accuracy_allowed`).
    """
    from ..attacks.bounds import accuracy_allowed

    parts = [
        f"{m.mechanism} (eps {m.epsilon:g}, delta {m.delta:g}): at most "
        f"{accuracy_allowed(m.epsilon, m.delta):.3f}"
        for m in report.mechanisms
        if m.mechanism != "none"
    ]
    if not parts:
        return "guarantee: none audited (undefended only)"
    return escape(printable("accuracy the guarantee allows any attack: " + "; ".join(parts)))


def print_audit_footer(console: Any, report: Any, notes: Any, *, over_pairs: bool) -> None:
    """The end of an audit's text: what the guarantee allows, the notes, how bounds are read.

    ``over_pairs``: the report audits several pairs (the confidence is joint over all of
    them, and one pair's bound above the claim is a violation).
    """
    console.print(allowed_line(report))
    for note in notes:
        console.print(f"note: {escape(printable(note))}")
    scope = " over every audited pair (Bonferroni)" if over_pairs else ""
    which = "any pair's bound" if over_pairs else "its bound"
    console.print(
        f"epsilon lower bounds: one-sided Clopper-Pearson at joint confidence "
        f"{report.confidence:g} per mechanism{scope}; a mechanism is violated when "
        f"{which} exceeds the claimed epsilon"
    )


def render_several_audit(
    title: str, report: Any, notes: list[str], render_one: Callable[[str, Any, list[str]], str]
) -> str:
    """An audit of many pairs (:class:`~distpriv.attacks.PairsAuditReport`): per attribute,
    one row per audited pair and mechanism (best attack, its interval, the ε lower bound
    and the verdict), then the guarantee on the accuracy scale and the notes.
    ``render_one`` (``render_audit``) renders the audit of a single pair."""
    import numpy as np
    from rich.table import Table

    from ..attacks.audit_pairs_report import pair_words
    from ._buffer import _Buffer

    if len(report.reports) == 1 and len(report.attributes) == 1:
        return render_one(title, report.reports[0], notes)
    buf = _Buffer()
    console = buf.console
    first = report.reports[0]
    console.print(
        f"[bold]{escape(printable(title))}[/bold] — {len(report.reports)} pairs audited "
        f"({escape(printable(report.selection))}): {first.repetitions} repetitions of "
        f"{first.n_shadow} shadow and {first.n_test} test datasets per pair"
    )
    for a, name in enumerate(report.attributes):
        own = report.pair_reports(a)
        what = f"share[{name}]" if report.kind in ("proportion", "several") else name
        console.print(f"audit of {escape(printable(what))}: {len(own)} of {report.totals[a]} pairs")
        table = Table()
        for col in ("pair", "mechanism", "claimed (eps, delta)", "best attack"):
            table.add_column(col)
        for col in ("accuracy (95% CI)", "eps lower bound", "verdict"):
            table.add_column(col)
        for r in own:
            for k, m in enumerate(r.mechanisms):
                best = max(m.attacks, key=lambda x: x.accuracy)
                claim = "none" if m.mechanism == "none" else f"({m.epsilon:g}, {m.delta:g})"
                verdict = "[red]VIOLATED[/red]" if m.verdict == "violated" else m.verdict
                lb = m.epsilon_lower
                table.add_row(
                    escape(printable(pair_words(r))) if k == 0 else "",
                    escape(printable(m.mechanism)),
                    claim,
                    escape(printable(best.attack)),
                    f"{best.accuracy:.3f} ({best.interval[0]:.3f}, {best.interval[1]:.3f})",
                    "-" if lb == -np.inf else f"{lb:.3f}",
                    verdict,
                )
        console.print(table)
    print_audit_footer(console, report, notes, over_pairs=True)
    return buf.text()
