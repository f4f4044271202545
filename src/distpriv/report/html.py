"""The curator's report: one self-contained HTML page for a release, an audit or the demo.

:func:`render_html` turns a public report dict (the JSON described in docs/user-guide.md §5, as
written by ``distpriv release/audit/demo --out``) into a page built from the package's
Jinja2 templates (:mod:`distpriv.util.templates`, shared with the notebook ``_repr_html_``). The
page loads nothing: styles are inline, the privacy–utility figure is inline SVG drawn by
matplotlib, and a Content-Security-Policy meta tag forbids every fetch.

The figure needs the query model, which a saved report does not contain, so its data are
computed here by :func:`utility_curve` when the report is produced and stored under the
report's ``utility`` key; :func:`render_html` only draws them.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ParameterError, ParameterTypeError
from ..pipeline.stages.calibrate import ProgressCallback
from ..pipeline.utility import DEFAULT_EPSILONS, demo_utility, release_utility
from ..util.templates import render_template

__all__ = [
    "demo_page",
    "plain_tick_label",
    "release_page",
    "render_html",
    "utility_figure_svg",
]

KINDS = ("release", "audit", "demo")


_SUPERSCRIPTS = str.maketrans("0123456789-−+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻⁺")


def plain_tick_label(text: str, value: float) -> str:
    """A log-axis tick label as plain Unicode text: ``10⁴``, ``2×10⁻¹``, never mathtext.

    Matplotlib's log formatter writes ``$\\mathdefault{10^{4}}$``, which only its own
    mathtext renderer understands; the figure keeps text as SVG text (``svg.fonttype =
    none``) and does not parse math (labels come from reports), so that string would reach
    the page raw. Anything left that is not plain falls back to ``%g``.
    """
    if not text:
        return text
    body = text.strip()
    if body.startswith("$") and body.endswith("$"):
        body = body[1:-1]
        inner = re.fullmatch(r"\\mathdefault\{(.*)\}", body)
        body = inner.group(1) if inner else body
        body = re.sub(r"\^\{([^{}]*)\}", lambda m: m.group(1).translate(_SUPERSCRIPTS), body)
        body = body.replace("\\times", "×").replace("\\cdot", "·").replace("\\,", "")
        body = body.replace("\\!", "").replace("{", "").replace("}", "").strip()
    if "$" in body or "\\" in body or "^" in body:
        return f"{value:g}"
    return body


def _plain_log_formatters(axis: Any) -> None:
    """Major and minor tick labels of a log axis as plain text (:func:`plain_tick_label`)."""
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLog(LogFormatterSciNotation):
        def __call__(self, x: float, pos: int | None = None) -> str:
            return plain_tick_label(super().__call__(x, pos), x)

    axis.set_major_formatter(PlainLog(base=10.0))
    axis.set_minor_formatter(PlainLog(base=10.0, labelOnlyBase=False))


def utility_figure_svg(utility: Mapping[str, Any]) -> str:
    """Draw a :func:`utility_curve` result as an inline ``<svg>`` element (matplotlib).

    Log–log axes; filled markers where the guarantee verifies, hollow where it rests on
    a failed or unverifiable assumption; the chosen mechanism thick; the requested ε as a
    dotted vertical line. Text stays text (``svg.fonttype = none``), so the page needs no
    font file.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    eps = np.asarray(utility["epsilons"], dtype=float)
    chosen = utility.get("chosen")
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",
            "svg.hashsalt": "distpriv",
            "font.size": 10,
            # labels are names from a report, never math text ($\frac{$)
            "text.parse_math": False,
        }
    ):
        fig, ax = plt.subplots(figsize=(7.0, 5.0))
        try:
            cmap = plt.get_cmap("tab20")
            for k, curve in enumerate(utility["curves"]):
                err = np.array([np.nan if e is None else e for e in curve["errors"]], dtype=float)
                ok = np.asarray(curve["verified"], dtype=bool)
                # Log axes cannot show zero error (noiseless): draw it at the axis floor.
                positive = err[np.isfinite(err) & (err > 0)]
                err = np.where(err == 0, np.nan, err)
                if positive.size == 0:
                    continue
                mine = curve["mechanism"] == chosen
                color = "black" if mine else cmap(k % 20)
                label = curve["mechanism"] + (" (chosen)" if mine else "")
                ax.plot(
                    eps,
                    err,
                    "-",
                    color=color,
                    lw=3.0 if mine else 1.2,
                    label=label,
                    zorder=3 if mine else 2,
                )
                top = 6 if mine else 4  # the chosen curve's markers stay visible
                ax.plot(eps[ok], err[ok], "o", color=color, ms=5, zorder=top)
                ax.plot(eps[~ok], err[~ok], "o", mfc="white", mec=color, ms=5, zorder=top)
            if utility.get("epsilon") is not None:
                ax.axvline(float(utility["epsilon"]), color="0.3", ls=":", lw=1.2)
                ax.annotate(
                    f"requested ε = {float(utility['epsilon']):g}",
                    (float(utility["epsilon"]), 1.0),
                    xycoords=("data", "axes fraction"),
                    xytext=(4, -12),
                    textcoords="offset points",
                    fontsize=9,
                    color="0.3",
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            _plain_log_formatters(ax.xaxis)
            _plain_log_formatters(ax.yaxis)
            ax.set_xlabel("ε (smaller is more private)")
            ax.set_ylabel("expected error √E‖Z‖² (lower is better)")
            ax.grid(True, which="major", color="0.9")
            # Below the axes: with many mechanisms a legend inside would hide curves.
            ax.legend(
                fontsize=8, ncol=4, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2)
            )
            fig.tight_layout()
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None})
        finally:
            plt.close(fig)
    text = buf.getvalue()
    # Embedded in HTML the <svg> element needs no XML prolog, DOCTYPE, namespace
    # declarations or Dublin Core metadata; dropping them leaves no URL of any kind on the
    # page (the no-network test looks for one).
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    return re.sub(r'\s+xmlns(?::\w+)?="[^"]*"', "", text)


def _secret_words(secret: Mapping[str, Any] | None) -> str:
    if not secret:
        return "the secret"
    if secret.get("attributes"):  # several secrets at once: each in its own words
        return " and ".join(_secret_words(a) for a in secret["attributes"])
    desc = str(secret.get("description", "the secret"))
    values = secret.get("values")
    # An event secret's words already name its ranges; its values are only its grid.
    if values and secret.get("type") != "event":
        return (
            f"{desc} (whether it is {', '.join(map(str, values[:-1]))} or {values[-1]})"
            if len(values) > 1
            else desc
        )
    return desc


def _choice(report: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = report.get("choice")
    if raw is None:
        return None
    if isinstance(raw, Mapping):  # AutoChoice.to_dict()
        return {"rows": list(raw.get("rows", [])), "weights": raw.get("weights")}
    return {"rows": list(raw), "weights": report.get("choice_weights")}


def _figure(report: Mapping[str, Any]) -> str | None:
    utility = report.get("utility")
    if not utility or not utility.get("curves"):
        return None
    from markupsafe import Markup

    # Our own matplotlib output, not user text: safe to embed as markup.
    return Markup(utility_figure_svg(utility))


_REQUIRED = {
    "release": ("title", "secret", "statistics", "mechanism", "guarantee", "provenance"),
    "audit": ("mechanisms",),
    "demo": ("rows", "statistics", "true_value", "epsilon", "delta"),
}


def render_html(report: Mapping[str, Any]) -> str:
    """Render a public report as one self-contained HTML page.

    Parameters
    ----------
    report : mapping
        A public report (``kind`` ``"release"``, ``"audit"`` or ``"demo"``) as written by
        the CLI's ``--out`` (described in docs/user-guide.md §5). An optional ``utility`` entry
        (from :func:`utility_curve`) adds the privacy–utility figure; an optional
        ``choice`` the comparison of ``mechanism = "auto"``.

    Returns
    -------
    str
        The HTML document (UTF-8 text).

    Raises
    ------
    ParameterTypeError
        ``report`` is not a mapping.
    ParameterError
        Unknown ``kind`` or a required key missing.
    """
    if not isinstance(report, Mapping):
        raise ParameterTypeError(f"report must be a dict, got {type(report).__name__}")
    kind = report.get("kind")
    if kind not in KINDS:
        raise ParameterError(f"report['kind'] must be one of {', '.join(KINDS)}, got {kind!r}")
    missing = [k for k in _REQUIRED[kind] if k not in report]
    if missing:
        raise ParameterError(f"{kind} report is missing key(s): {', '.join(missing)}")
    provenance = dict(report.get("provenance") or {})
    for key in ("version", "seed", "config"):
        if key not in provenance and report.get(key) is not None:
            provenance[key] = report[key]
    version = provenance.get("version", "")
    titles = {
        "release": "Protected release",
        "audit": "Privacy audit",
        "demo": "All mechanisms on Adult",
    }
    title = str(report.get("title") or titles[kind])
    utility = report.get("utility") or {}
    mech = report.get("mechanism")
    chosen = utility.get("chosen") or (mech.get("name") if isinstance(mech, Mapping) else None)
    html = render_template(
        f"{kind}.html.j2",
        report=report,
        title=title,
        kind_label={"release": "release report", "audit": "audit report", "demo": "demo"}[kind],
        version=version,
        provenance=provenance,
        secret_words=_secret_words(report.get("secret")),
        choice=_choice(report),
        figure=_figure(report),
        utility=utility,
        chosen=chosen,
    )
    # Collapse the blank lines the template control blocks leave behind.
    return re.sub(r"\n\s*\n+", "\n", html)


def release_page(
    outcome: Any,
    *,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    progress: ProgressCallback | None = None,
) -> tuple[dict[str, Any], str]:
    """The public report of a release with its privacy–utility figure, and its HTML (the
    figure's data from :func:`distpriv.pipeline.utility.release_utility`)."""
    public = release_utility(outcome, epsilons=epsilons, progress=progress)
    return public, render_html(public)


def demo_page(
    public: Mapping[str, Any], *, progress: ProgressCallback | None = None
) -> tuple[dict[str, Any], str]:
    """The demo's report with its privacy–utility figure, and its HTML (the figure's data
    from :func:`distpriv.pipeline.utility.demo_utility`)."""
    out = demo_utility(public, progress=progress)
    return out, render_html(out)
