"""``zhang2022-apmqm``: Zhang, Ohrimenko & Cummings 2022, Example 1 (APMQM on the school).

Alg. 2 on :func:`distpriv.datasets.networks.school_network`: every Markov quilt of family
income with its max-influence and noise, for counts of students by height and SAT score.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..central import (
    AttributeNetworkModel,
    ColumnQuery,
    apmqm_quilts,
    calibrate,
)
from ..datasets.networks import school_network
from ._zhang2022_common import EPSILON, PAPER, RUNS
from .base import Comparison, RunInfo
from .base import make_result as _result
from .base import positive as _positive
from .base import save_figure as _figure

# ---------------------------------------------------------------------------- Example 1
STUDENTS = 100


def _school_queries() -> dict[str, ColumnQuery]:
    return {
        "count(height > 66)": ColumnQuery.count("height", n=STUDENTS, statistic="tall"),
        "count(height > 66 and SAT > 1300)": ColumnQuery.count(
            ["height", "sat"], n=STUDENTS, statistic="tall and high SAT"
        ),
        "(count(height > 66), count(SAT > 1300))": ColumnQuery.sums(
            {"height": (0.0, 1.0), "sat": (0.0, 1.0)},
            n=STUDENTS,
            statistics=["tall", "high SAT"],
        ),
    }


def _qname(names: tuple[str, ...]) -> str:
    return "{" + ", ".join(names) + "}"


_APMQM_COLUMNS = [
    "kind",
    "query",
    "epsilon",
    "quilt",
    "nearby",
    "remote",
    "max_influence",
    "queried_nearby",
    "sensitivity",
    "scale",
    "usable",
    "chosen",
]


def _quilt_row(
    kind: str, qname: str, eps: float, cand: Any, scale: float, chosen: bool
) -> tuple[Any, ...]:
    q = cand.quilt
    return (
        kind,
        qname,
        eps,
        _qname(q.quilt),
        _qname(q.nearby),
        _qname(q.remote),
        q.max_influence,
        _qname(cand.queried_nearby),
        cand.sensitivity,
        scale,
        cand.usable if kind == "quilt" else True,
        chosen,
    )


def _apmqm_cases(
    net: Any, queries: dict[str, ColumnQuery], eps_grid: np.ndarray
) -> tuple[list[tuple[Any, ...]], dict[str, Any], dict[str, list[Any]]]:
    """Every quilt of each query at ε = 1, then the chosen quilt along the ε grid."""
    rows: list[tuple[Any, ...]] = []
    searches: dict[str, Any] = {}
    sweep: dict[str, list[Any]] = {q: [] for q in queries}
    for qname, query in queries.items():
        model = AttributeNetworkModel(net, "income", query)
        search = apmqm_quilts(model, epsilon=EPSILON)["income"]
        searches[qname] = search
        rows += [
            _quilt_row("quilt", qname, EPSILON, c, c.scale, c is search.chosen)
            for c in search.candidates
        ]
    for qname, query in queries.items():
        model = AttributeNetworkModel(net, "income", query)
        for e in eps_grid:
            scale = float(calibrate("apmqm", model, epsilon=float(e)).diagnostics["scale"])
            chosen = apmqm_quilts(model, epsilon=float(e))["income"].chosen
            sweep[qname].append(scale)
            rows.append(_quilt_row("sweep", qname, float(e), chosen, scale, True))
    return rows, searches, sweep


def _apmqm_findings(
    net: Any, queries: dict[str, ColumnQuery], searches: dict[str, Any], seed: int
) -> tuple[list[Comparison], dict[str, bool]]:
    """Example 1's claims: comparisons with the paper and checks of Alg. 2's choices."""
    e_gender = net.max_influence("income", ["gender"])
    q1, q2, q3 = queries
    gender_q2 = next(c for c in searches[q2].candidates if c.quilt.quilt == ("gender",))
    gender_q3 = next(c for c in searches[q3].candidates if c.quilt.quilt == ("gender",))
    formula = STUDENTS / (EPSILON - e_gender)
    gen = np.random.default_rng(seed)
    mech1 = calibrate("apmqm", AttributeNetworkModel(net, "income", queries[q1]), epsilon=EPSILON)
    err1 = float(np.abs(mech1.noise.sample(RUNS, gen)).mean())
    s1 = searches[q1].chosen.scale
    comps = [
        Comparison(f"Example 1, {q1}: Laplace scale (paper: no noise)", 0.0, s1, s1, s1),
        Comparison(
            f"Example 1, {q2}: scale of the quilt {{gender}} (paper: Delta_SAT F / (eps - e))",
            formula,
            gender_q2.scale,
            gender_q2.scale,
            gender_q2.scale,
        ),
    ]
    checks = {
        "quilt Q={gender}, N={income, sat}, R={height, weight} exists": (
            gender_q2.quilt.nearby == ("income", "sat")
            and gender_q2.quilt.remote == ("height", "weight")
        ),
        f"{q1}: no noise at eps = 1 (e(gender|income) = {e_gender:.3f} < 1)": (
            mech1.noise.is_zero and err1 == 0.0
        ),
        f"{q2}: quilt {{gender}} scale = n / (eps - e(gender|income))": math.isclose(
            gender_q2.scale, formula, rel_tol=1e-12
        ),
        f"{q2}: Alg. 2 keeps the trivial quilt (Delta_SAT F = Delta_A F = n)": (
            searches[q2].chosen.quilt.trivial
            and math.isclose(searches[q2].chosen.scale, STUDENTS / EPSILON)
        ),
        f"{q3}: Alg. 2 chooses {{gender}}, scale Delta_SAT F / (eps - e)": (
            searches[q3].chosen.quilt.quilt == ("gender",)
            and math.isclose(searches[q3].chosen.scale, gender_q3.scale)
            and math.isclose(gender_q3.scale, formula, rel_tol=1e-12)
        ),
        "eps < e(gender|income): every query falls back to the trivial quilt": all(
            apmqm_quilts(AttributeNetworkModel(net, "income", q), epsilon=0.9 * e_gender)[
                "income"
            ].fell_back
            for q in queries.values()
        ),
    }
    return comps, checks


def _apmqm_notes(e_gender: float, e_sat: float) -> tuple[str, ...]:
    return (
        "Fig. 1 of the paper is not in our copy; the DAG is income -> SAT, income -> gender, "
        "gender -> height, gender -> weight, height -> weight, and the parameters and "
        "tables are ours (distpriv.datasets.school_network)",
        f"e(gender | income) = {e_gender:.4f}, e(SAT | income) = {e_sat:.4f}",
        "for the count with the SAT condition Delta_SAT F = Delta_A F = n, so the quilt "
        "{gender} (n / (eps - e)) never beats the trivial quilt (n / eps): Alg. 2 keeps the "
        "trivial one. The paper's scale Delta_SAT F / (eps - e) is that of the quilt {gender}; "
        "Alg. 2 chooses it when Delta_SAT F < Delta_A F (eps - e) / eps, e.g. for the pair of "
        "counts (L1 sensitivity 2n)",
    )


def _draw_apmqm(plt: Any, ctx: dict[str, Any]) -> Any:
    """Left: every quilt of the pair of counts at eps = 1; right: scale against eps."""
    queries, searches, sweep = ctx["queries"], ctx["searches"], ctx["sweep"]
    eps_grid, e_gender, e_sat = ctx["eps_grid"], ctx["e_gender"], ctx["e_sat"]
    q3 = list(queries)[2]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2))
    ax = axes[0]
    cands = searches[q3].candidates
    labels = [
        f"Q={_qname(c.quilt.quilt)}  R={_qname(c.quilt.remote)}  e={c.quilt.max_influence:.2f}"
        for c in cands
    ]
    finite = [c.scale for c in cands if c.usable]
    top = 1.15 * max(finite)
    vals = [c.scale if c.usable else top for c in cands]
    colors = ["C2" if c is searches[q3].chosen else ("C0" if c.usable else "0.8") for c in cands]
    labels[0] = "trivial quilt: Q={}, N = all, e=0"
    ys = np.arange(len(cands))[::-1]
    ax.barh(ys, vals, color=colors)
    for y, c in zip(ys, cands, strict=True):
        text = f"{c.scale:.1f}" if c.usable else "e >= eps: not usable"
        ax.text(vals[len(ys) - 1 - y], y, " " + text, va="center", fontsize=6)
    ax.axvline(cands[0].scale, color="k", ls=":", lw=1, label="trivial quilt")
    ax.set(
        yticks=ys,
        yticklabels=labels,
        xlim=(0, top * 1.3),
        xlabel="Laplace scale Delta_{A cap N} F / (eps - e)",
        title="quilts of income, pair of counts, eps = 1 (green: chosen)",
    )
    ax.tick_params(axis="y", labelsize=6)
    ax.legend(fontsize=7, loc="lower right")
    ax = axes[1]
    styles = (("o", "-", 6), ("s", "--", 4), ("^", "-.", 4))
    for k, qname in enumerate(queries):
        marker, ls, ms = styles[k]
        ax.plot(
            eps_grid,
            _positive(sweep[qname]),
            color=f"C{k}",
            marker=marker,
            ls=ls,
            ms=ms,
            mfc="none" if k == 0 else f"C{k}",
            label=qname,
        )
        triv = [queries[qname].sensitivity(queries[qname].attributes) / e for e in eps_grid]
        ax.plot(eps_grid, triv, color=f"C{k}", ls=":", lw=1)
    ax.set_yscale("log")
    for e, name in ((e_gender, "e(gender|income)"), (e_sat, "e(SAT|income)")):
        ax.axvline(e, color="grey", ls="--", lw=0.8)
        ax.text(
            e,
            0.98,
            name,
            rotation=90,
            va="top",
            ha="right",
            fontsize=7,
            transform=ax.get_xaxis_transform(),
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="epsilon",
        ylabel="Laplace scale b (dotted: trivial quilt Delta_A F / eps)",
        title="scale vs epsilon (a curve that stops: no noise)",
        xticks=[0.2, 0.5, 1, 2, 5],
        xticklabels=["0.2", "0.5", "1", "2", "5"],
    )
    ax.xaxis.set_minor_formatter("")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.suptitle(
        f"{PAPER}, Example 1: APMQM on the school network "
        f"({STUDENTS} students), protecting the income distribution",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def apmqm_experiment(*, quick: bool = False, seed: int = 0, out_dir: Path | None = None) -> Any:
    """Example 1: APMQM on the school network, protecting the family-income distribution."""
    t0 = time.perf_counter()
    net = school_network()
    queries = _school_queries()
    eps_grid = np.round(np.geomspace(0.2, 6.0, 10 if quick else 30), 6)
    rows, searches, sweep = _apmqm_cases(net, queries, eps_grid)
    comps, checks = _apmqm_findings(net, queries, searches, seed)
    e_gender = net.max_influence("income", ["gender"])
    e_sat = net.max_influence("income", ["sat"])
    ctx = {
        "queries": queries,
        "searches": searches,
        "sweep": sweep,
        "eps_grid": eps_grid,
        "e_gender": e_gender,
        "e_sat": e_sat,
    }
    figs = _figure(out_dir, "zhang2022-apmqm", lambda plt: _draw_apmqm(plt, ctx))
    return _result(
        "zhang2022-apmqm",
        "Example 1: APMQM on the school network",
        _APMQM_COLUMNS,
        rows,
        comps,
        figs,
        {"students": STUDENTS, "epsilon": EPSILON, "epsilons": eps_grid, "secret": "income"},
        RunInfo(seed, quick, t0),
        checks,
        _apmqm_notes(e_gender, e_sat),
    )
