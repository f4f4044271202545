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
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..central.objective import DEFAULT_OBJECTIVE
from ..errors import ParameterError, ParameterTypeError
from ..pipeline.stages.calibrate import ProgressCallback, calibrate_candidates
from ..util.templates import render_template
from ..util.validation import check_delta, check_epsilon

__all__ = [
    "DEFAULT_EPSILONS",
    "demo_page",
    "plain_tick_label",
    "release_page",
    "render_html",
    "utility_curve",
    "utility_figure_svg",
]

# ε grid of the privacy–utility figure (the requested ε is added to it).
DEFAULT_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
KINDS = ("release", "audit", "demo")


def utility_curve(
    model: Any,
    *,
    delta: float,
    epsilon: float | None = None,
    chosen: str | None = None,
    weights: Any = None,
    objective: str = DEFAULT_OBJECTIVE,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    mechanisms: Sequence[str] | None = None,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Expected error against ε for every mechanism that applies to ``model``.

    Each mechanism is calibrated at every ε of the grid (and the requested ``epsilon``)
    at the given δ (:func:`~distpriv.pipeline.stages.calibrate.calibrate_candidates`); the error is
    the root of the expected squared error √E[Zᵀ W Z] (Chen & Ohrimenko 2023 compare
    mechanisms by such errors, Table 2).

    Parameters
    ----------
    model : GaussianQueryModel or SampledQueryModel
    delta : float
        δ of every calibration (keyword-only).
    epsilon : float, optional
        The requested ε, marked on the figure.
    chosen : str, optional
        The mechanism used, drawn thick.
    weights, objective, options, mechanisms
        As in :func:`~distpriv.pipeline.stages.calibrate.calibrate_candidates`.
    epsilons : sequence of float
        The grid.
    progress : callable(done, total), optional
        Called after each ε.

    Returns
    -------
    dict
        JSON-safe: ``epsilons``, ``delta``, ``epsilon``, ``chosen``, ``metric``,
        ``curves`` (``mechanism``, ``errors`` and ``verified`` per ε; ``None`` where the
        mechanism could not be calibrated) and ``skipped`` (mechanisms never calibrated,
        with the reason at the requested ε or the grid's middle).
    """
    dlt = check_delta(delta)
    grid = sorted({check_epsilon(e, "epsilons") for e in epsilons})
    if epsilon is not None:
        grid = sorted({*grid, check_epsilon(epsilon)})
    if not grid:
        raise ParameterError("epsilons must contain at least one value, got []")
    rows = []
    for k, eps in enumerate(grid):
        rows.append(
            calibrate_candidates(
                model,
                epsilon=eps,
                delta=dlt,
                weights=weights,
                objective=objective,
                options=options,
                mechanisms=mechanisms,
            )
        )
        if progress is not None:
            progress(k + 1, len(grid))
    names = [c.mechanism for c in rows[0]]
    curves, skipped = [], []
    ref = grid.index(epsilon) if epsilon is not None else len(grid) // 2
    for j, name in enumerate(names):
        errs = [None if math.isnan(r[j].mse) else math.sqrt(max(r[j].mse, 0.0)) for r in rows]
        if all(e is None for e in errs):
            skipped.append({"mechanism": name, "reason": rows[ref][j].reason})
            continue
        curves.append(
            {"mechanism": name, "errors": errs, "verified": [bool(r[j].verified) for r in rows]}
        )
    return {
        "epsilons": grid,
        "delta": dlt,
        "epsilon": None if epsilon is None else float(epsilon),
        "chosen": chosen,
        "metric": "root expected squared error"
        + (
            " (weighted)"
            if weights is not None
            else (" (relative to each statistic's sampling variance)" if objective != "l2" else "")
        ),
        "curves": curves,
        "skipped": skipped,
    }


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
    """The public report of a release with its privacy–utility figure, and its HTML.

    Parameters
    ----------
    outcome : ReleaseOutcome
        From :func:`distpriv.pipeline.run_release` (its ``report`` holds the model).
    epsilons : sequence of float
        The figure's ε grid (the requested ε is added).
    progress : callable(done, total), optional
        Called after each ε of the figure's grid.

    Returns
    -------
    (dict, str)
        The public report with a ``utility`` entry (so that a saved report re-renders
        the same page with ``distpriv report``), and the page.
    """
    public = dict(outcome.public)
    rep = outcome.report
    g = rep.release.guarantee
    epsilon, delta = g.target  # the request, which the figure compares mechanisms at
    # The floored mechanisms need the grid of the statistics: the one the release used.
    lattice = rep.mechanism.diagnostics.get("lattice_steps")
    options = None
    if lattice is not None:
        from ..central import MECHANISMS, mechanism_info

        options = {
            n: {"lattice": lattice} for n in MECHANISMS if "lattice" in mechanism_info(n).options
        }
    public["utility"] = utility_curve(
        rep.model,
        delta=delta,
        epsilon=epsilon,
        chosen=rep.mechanism.name,
        weights=public.get("choice_weights"),
        objective="l2" if public.get("choice_objective") == "l2" else DEFAULT_OBJECTIVE,
        options=options,
        epsilons=epsilons,
        progress=progress,
    )
    return public, render_html(public)


def demo_page(
    public: Mapping[str, Any], *, progress: ProgressCallback | None = None
) -> tuple[dict[str, Any], str]:
    """The demo's report with its privacy–utility figure, and its HTML.

    The figure is computed on the demo's model: Adult's modelling split, subsets of 100
    rows, exact (analytic) moments, at the demo's δ (Chen & Ohrimenko 2023 §5.1), with
    the group-DP baselines' default options from the same table.
    """
    from ..central.registry import default_options
    from ..modeling import Query, model_query
    from ..pipeline.commands.demo import ADULT_STATISTICS, INCOME_SECRET
    from ..pipeline.stages.data import load_frame, table_facts

    out = dict(public)
    frame = load_frame("adult:modeling", split_seed=int(out.get("seed") or 0))
    query = Query(ADULT_STATISTICS)
    n = int(out.get("subset_size") or 100)
    model = model_query(frame, query, INCOME_SECRET, subset_size=n, method="analytic")
    facts = table_facts(frame, query, n)
    options = {name: default_options(name, facts) for name in ("groupdp-l", "groupdp-g")}
    out["utility"] = utility_curve(
        model,
        delta=float(out["delta"]),
        epsilon=float(out["epsilon"]),
        options=options,
        progress=progress,
    )
    return out, render_html(out)
