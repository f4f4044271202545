"""Human-readable rendering of the pipeline's reports for the ``distpriv`` command (rich).

Every function renders into a string, so the CLI can render *before* it writes any file:
a rendering error then leaves nothing behind. Every string that comes from the user or the
data (titles, statistic names, expressions, notes) is escaped before rich interprets markup.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..util.text import printable
from ._buffer import _Buffer

__all__ = [
    "render_audit",
    "render_calibration",
    "render_demo",
    "render_experiment",
    "render_ledger",
    "render_local",
    "render_release",
]


def _e(value: Any) -> str:
    """A user- or data-supplied string made inert: printable, then escaped for rich markup."""
    return escape(printable(value))


def _fmt(v: Any, spec: str = ".4g") -> str:
    return _e(v) if isinstance(v, str) else format(v, spec)


_MARK = {True: "holds", False: "[red]FAILS[/red]", None: "unverified"}


def _guarantee_lines(console: Console, g: dict[str, Any]) -> None:
    console.print(
        f"guarantee: ({_fmt(g['epsilon'], 'g')}, {_fmt(g['delta'], 'g')})-{_e(g['notion'])} "
        f"by {_e(g['theorem'])}"
        + (f", {_e(g['calibration'])} calibration" if g.get("calibration") else "")
    )
    for a in g["assumptions"]:
        console.print(f"  {_e(a['name'])}: {_MARK[a['holds']]} — {_e(a['detail'])}")
    for a in g.get("premises", []):  # what the verified headline rests on (not checked here)
        console.print(f"  premise {_e(a['name'])}: {_e(a['detail'])}")
    fb = g.get("fallback")
    if fb:
        console.print(
            f"without the failed assumptions: ({_fmt(fb['epsilon'])}, "
            f"{_fmt(fb['delta'], '.3g')})-{_e(fb['notion'])} by {_e(fb['theorem'])}"
        )
    for note in g.get("notes", []):
        console.print(f"note: {_e(note)}")


def render_calibration(report: dict[str, Any]) -> str:
    """The noise, its directions and the guarantee of ``distpriv calibrate``."""
    buf = _Buffer()
    console = buf.console
    console.print(
        f"[bold]{_e(report['title'])}[/bold] — mechanism [bold]{report['mechanism']}[/bold]"
    )
    noise = Table(title="Noise added to each statistic")
    for col in ("statistic", "noise std", "noise variance"):
        noise.add_column(col, justify="right" if col != "statistic" else "left")
    cov = np.asarray(report["noise_covariance"])
    for name, var in zip(report["statistics"], np.diag(cov), strict=True):
        noise.add_row(_e(name), f"{np.sqrt(max(var, 0.0)):.6g}", f"{var:.6g}")
    console.print(noise)
    w, v = np.linalg.eigh(cov)
    if np.any(w > 1e-12 * max(w.max(), 1e-300)):
        dirs = Table(title="Noise covariance by direction")
        dirs.add_column("variance", justify="right")
        dirs.add_column("direction")
        for k in np.argsort(w)[::-1]:
            if w[k] > 1e-12 * w.max():
                vec = v[:, k] * np.sign(v[np.argmax(np.abs(v[:, k])), k])
                dirs.add_row(f"{w[k]:.6g}", "(" + ", ".join(f"{x:.4f}" for x in vec) + ")")
        console.print(dirs)
    console.print(
        f"expected L2 error E||Z||: {report['expected_l2_error']:.6g}   "
        f"mean squared error: {report['mse']:.6g}"
    )
    g = report["guarantee"]
    table = Table(title="Assumptions")
    for col in ("assumption", "holds", "detail"):
        table.add_column(col)
    mark = {True: "yes", False: "[red]NO[/red]", None: "unverified"}
    for a in g["assumptions"]:
        table.add_row(_e(a["name"]), mark[a["holds"]], _e(a["detail"]))
    _guarantee_lines(console, {**g, "assumptions": []})
    console.print(table)
    return buf.text()


def render_release(public: dict[str, Any], private: dict[str, Any]) -> str:
    """The public release, then (marked) what only the curator sees."""
    buf = _Buffer()
    console = buf.console
    prov = public["provenance"]
    console.print(
        f"[bold]{_e(public['title'])}[/bold] — mechanism [bold]{public['mechanism']['name']}"
        f"[/bold], sampler: {_e(prov['sampler'])}"
    )
    if not public.get("secure_noise", False):
        console.print(f"[bold red]{_e(public['not_private'])}[/bold red]")
    if public.get("composed"):
        _composed_lines(console, public["composed"])
    truth = private.get("true_values")
    spread = private.get("noise_to_spread")
    table = Table()
    for col in ("statistic", "released", "noise std", "95% interval"):
        table.add_column(col, justify="left" if col == "statistic" else "right")
    if spread is not None:
        table.add_column("noise/spread (PRIVATE)", justify="right")
    if truth is not None:
        table.add_column("true (PRIVATE)", justify="right")
    for k, s in enumerate(public["statistics"]):
        lo, hi = s["interval95"]
        value = f"{s['value']:.4f}" + (" (clamped)" if s.get("clamped") else "")
        row = [_e(s["name"]), value, f"{s['noise_sd']:.4f}", f"[{lo:.4f}, {hi:.4f}]"]
        # A constant statistic's ratio is inf, which the JSON-safe private dict holds as
        # the string "inf": format numbers, show strings as they are.
        if spread is not None:
            row.append(_fmt(spread[k], ".3g"))
        if truth is not None:
            row.append(_fmt(truth[k], ".4f"))
        table.add_row(*row)
    console.print(table)
    if public.get("ranges_note"):
        console.print(_e(public["ranges_note"]))
    console.print(f"expected L2 error: {public['mechanism']['expected_l2_error']:.4g}")
    _guarantee_lines(console, public["guarantee"])
    check = public.get("verification")
    if check:
        console.print(_verification_line(check))
    if public.get("ledger"):
        _ledger_line(console, public["ledger"])
    console.print(
        f"provenance: distpriv {_e(prov['version'])}, {prov['time_utc']}, data "
        f"{str(prov['data_sha256'])[:28]}… (keyed), model data "
        f"{str(prov['model_data_sha256'])[:28]}…"
        + (f", seed {prov['seed']}" if "seed" in prov else "")
    )
    return buf.text()


def _verification_line(check: dict[str, Any]) -> str:
    """The data-level check in one line: verdict first, then what to do (its advice)."""
    verdict = check.get("verdict", "no evidence" if check.get("consistent") else "violation")
    colour = {"violation": "red", "inconclusive": "yellow"}.get(verdict)
    head = f"[{colour}]{verdict.upper()}[/{colour}]" if colour else verdict
    null = check.get("null_control")
    tail = (
        f" (null control on the fitted Gaussian model: exact delta {null['exact_delta']:.3g}, "
        f"measured bias {null['bias']:+.2g})"
        if null
        else ""
    )
    advice = str(check.get("advice", ""))
    advice = advice.split(": ", 1)[1] if ": " in advice else advice
    looks = ""
    if check.get("stopped"):
        # the sequential check: how much it drew and why it stopped
        looks = (
            f"; {check['n_samples']} resampled datasets per value, look {check['looks']} of "
            f"at most {check['max_looks']}, stopped: {_e(str(check['stopped']))}"
        )
    return (
        f"data-level check (--verify) at epsilon={check['epsilon']:g}: {head}: "
        f"{_e(advice)}; estimate {check['delta_estimate']:.3g}, certified "
        f">= {check['delta_lower']:.3g}{tail}{looks}"
    )


def render_demo(report: Any) -> str:
    """The demo table: every mechanism on the paper's Adult setting."""
    buf = _Buffer()
    console = buf.console
    console.print(
        f"[bold]Adult, hiding whether the share of incomes >50K is 0.45 or 0.55[/bold] "
        f"(Chen & Ohrimenko 2023 §5.1): {report.subset_size}-record subset, "
        f"epsilon={report.epsilon:g}, delta={report.delta:g}, seed={report.seed}; "
        f"||mu_0.45 - mu_0.55|| = {report.mean_difference_l2:.3f} (a simulation: numpy noise)"
    )
    table = Table()
    cols = ("mechanism", "noise", "E||Z||", "measured ||Z||", "(eps, delta)", "assumptions")
    for col in (*cols, "without failed ones", "attack accuracy"):
        left = col in ("mechanism", "noise", "assumptions")
        table.add_column(col, justify="left" if left else "right")
    mark = {True: "verified", False: "[red]some fail[/red]", None: "unverified"}
    refused = []
    for r in report.rows:
        if not r.applicable:
            table.add_row(r.mechanism, "-", "-", "-", "-", "refused", "-", "-")
            refused.append(f"{r.mechanism}: {r.reason}")
            continue
        fb = "-" if r.fallback is None else f"({r.fallback[0]:.3g}, {r.fallback[1]:.2g})"
        table.add_row(
            r.mechanism,
            _e(r.noise),
            f"{r.expected_l2_error:.3f}",
            f"{r.measured_l2_error:.3f} ± {r.measured_l2_se:.3f}",
            f"({r.epsilon:g}, {r.delta:g})",
            mark[r.assumptions_hold],
            fb,
            "-" if math.isnan(r.attack_accuracy) else f"{r.attack_accuracy:.3f}",
        )
    console.print(table)
    for line in refused:
        console.print(f"refused — {_e(line)}")
    truth = zip(report.statistics, report.true_value, strict=True)
    console.print("true statistics: " + ", ".join(f"{_e(n)}={v:.3f}" for n, v in truth))
    console.print(
        "measured ||Z||: mean over 2000 noise draws (± standard error). (eps, delta) of "
        "the Gaussian family is verified by the exact privacy profile of the model's own "
        "covariances (real data never have equal ones); 'verified' leaves one premise, that "
        "f_theta is Gaussian with the model's moments (normality diagnostics in --json). "
        "1-dir noise publishes the other components exactly: on grid-valued statistics such "
        "as these they can reveal the statistics (release --verify refuses it; see "
        "docs/guarantees.md)."
    )
    if report.undefended_attack is not None:
        acc, lo, hi = report.undefended_attack
        console.print(
            f"attack accuracy: the paper's logistic-regression meta-classifier (200 shadow "
            f"datasets, 200 test datasets, {report.attack_repetitions} repetitions); without "
            f"any noise it scores {acc:.3f} (95% CI {lo:.3f}-{hi:.3f}; the paper reports 0.75). "
            "0.5 is a coin flip. See 'distpriv audit' for stronger attacks and epsilon bounds."
        )
    return buf.text()


def render_audit(title: str, report: Any, notes: list[str]) -> str:
    """Per mechanism and attack: accuracy, ε lower bound and verdict."""
    if hasattr(report, "reports"):  # several attributes: one audit each
        from .audit_text import render_several_audit

        return render_several_audit(title, report, notes, render_audit)
    buf = _Buffer()
    console = buf.console
    labels = getattr(report, "labels", None)
    what = " vs ".join(labels) if labels else f"p = {report.pair[0]:g} vs {report.pair[1]:g}"
    console.print(
        f"[bold]{_e(title)}[/bold] — audit of {_e(what)}: {report.repetitions} repetitions of "
        f"{report.n_shadow} shadow and {report.n_test} test datasets"
    )
    table = Table()
    for col in ("mechanism", "claimed (eps, delta)", "attack", "accuracy (95% CI)"):
        table.add_column(col)
    table.add_column("eps lower bound")
    table.add_column("verdict")
    for m in report.mechanisms:
        claim = "none" if m.mechanism == "none" else f"({m.epsilon:g}, {m.delta:g})"
        verdict = "[red]VIOLATED[/red]" if m.verdict == "violated" else m.verdict
        for k, a in enumerate(m.attacks):
            lb = a.bound.epsilon_lower
            table.add_row(
                m.mechanism if k == 0 else "",
                claim if k == 0 else "",
                _e(a.attack),
                f"{a.accuracy:.3f} ({a.interval[0]:.3f}, {a.interval[1]:.3f})",
                "-" if lb == -np.inf else f"{lb:.3f}",
                verdict if k == 0 else "",
            )
    console.print(table)
    for m in report.mechanisms:
        if getattr(m, "verification", None) is not None:
            console.print(f"{_e(m.mechanism)}: " + _verification_line(m.verification.to_dict()))
    from .audit_text import print_audit_footer

    print_audit_footer(console, report, notes, over_pairs=False)
    return buf.text()


def render_experiment(res: Any) -> str:
    """One experiment: the paper comparison (or its rows), checks and figures."""
    buf = _Buffer()
    console = buf.console
    console.print(
        f"[bold]{_e(res.name)}[/bold] — {_e(res.title)} ({res.elapsed:.1f} s"
        f"{', quick' if res.quick else ''})"
    )
    table = Table()
    if res.comparisons:
        for col in ("quantity", "paper", "ours", "95% interval", "within"):
            table.add_column(col, justify="left" if col == "quantity" else "right")
        for c in res.comparisons:
            table.add_row(
                _e(c.quantity),
                f"{c.paper:.4g}",
                f"{c.ours:.4g}",
                f"[{c.low:.4g}, {c.high:.4g}]",
                "yes" if c.within else "[red]no[/red]",
            )
        console.print(table)
    else:
        for col in res.columns:
            table.add_column(_e(col))
        shown = res.rows if len(res.rows) <= 30 else res.rows[:: max(1, len(res.rows) // 30)]
        for row in shown:
            table.add_row(*(_e(res.format_value(v)) for v in row))
        console.print(table)
        if len(shown) < len(res.rows):
            console.print(f"({len(shown)} of {len(res.rows)} rows shown; all in the CSV)")
    for key, ok in res.checks.items():
        console.print(f"  check: {_e(key)}: {'holds' if ok else '[red]FAILS[/red]'}")
    if res.figures:
        console.print(f"  figures: {_e(', '.join(res.figures))}")
    return buf.text()


def render_local(title: str, out: dict[str, Any]) -> str:
    """DistP, divergences, losses and attack of ``distpriv local evaluate``."""
    buf = _Buffer()
    console = buf.console
    lam0, lam1 = out["pair"]
    params = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in out["params"].items()
    )
    console.print(
        f"[bold]{_e(title)}[/bold] — mechanism [bold]{_e(out['mechanism'])}[/bold]"
        + _e((f" ({params})" if params else "") + f", hiding {lam0} vs {lam1}")
    )
    table = Table()
    table.add_column("quantity")
    table.add_column("value", justify="right")
    low, high = out["epsilon_interval"]
    interval = (
        "" if out["method"] == "exact" else f" ({out['confidence']:g} CI {_fmt(low)}-{_fmt(high)})"
    )
    table.add_row(
        f"eps of (eps, {out['delta']:g})-DistP ({out['method']})", _fmt(out["epsilon"]) + interval
    )
    names = {
        "dinf": "D-infinity (pure eps)",
        "kl": "KL",
        "tv": "total variation",
        "chi2": "chi-squared",
        "hellinger": "Hellinger",
    }
    div = out["divergences"]
    for key, label in names.items():
        table.add_row(
            _e(f"{label}: {lam0}->{lam1} / {lam1}->{lam0}"),
            f"{_fmt(div['forward'][key])} / {_fmt(div['backward'][key])}",
        )
    for name, loss in out["expected_loss"].items():
        label = (
            "expected loss, mean of the pair" if name == "mean" else f"expected loss under {name}"
        )
        table.add_row(_e(label), _fmt(loss))
    att = out["attack"]
    table.add_row(_e(f"attack success rate (Bayes, {lam0} users)"), _fmt(att["success_rate"]))
    table.add_row("attack accuracy (equal priors)", _fmt(att["accuracy"]))
    console.print(table)
    g = out["guarantee"]
    if g is not None and "theorem" in g and "bounds" not in g:
        console.print(
            f"guarantee: ({_fmt(g['epsilon'])}, {_fmt(g['delta'])})-{_e(g['notion'])} "
            f"by {_e(g['theorem'])}"
        )
    elif g is not None:
        bounds = ", ".join(f"{k} <= {_fmt(v)}" for k, v in g["bounds"].items())
        console.print(
            _e(f"guarantee ({g['theorem']}, closeness eps = {_fmt(g['closeness'])}): {bounds}")
        )
    for note in out["notes"]:
        console.print(_e(f"note: {note}"))
    return buf.text()


def _composed_lines(console: Console, lead: dict[str, Any]) -> None:
    """First, when earlier releases exist: every account's composed guarantee."""
    console.print(
        f"[bold]composed over the {lead['n_releases']} releases of these data[/bold] "
        "(what anyone who sees them all can learn):"
    )
    for a in lead["accounts"]:
        if "epsilon" not in a:
            console.print(f"  {_e(str(a.get('secret')))}: {_e(a.get('note', ''))}")
            continue
        b = a.get("budget")
        budget = f", budget ({_fmt(b['epsilon'], 'g')}, {_fmt(b['delta'], 'g')})" if b else ""
        mine = " (this release's secret)" if a.get("this_release") else ""
        console.print(
            f"  {_e(str(a.get('secret')))}{mine}: ({_fmt(a['epsilon'])}, "
            f"{_fmt(a['delta'], 'g')}) over {a['n_releases']} releases{budget}"
        )
    alone = lead.get("this_release_alone") or {}
    if alone:
        console.print(
            f"this release alone: ({_fmt(alone['epsilon'])}, {_fmt(alone['delta'], 'g')})"
        )


def _ledger_line(console: Console, led: dict[str, Any]) -> None:
    if led.get("recorded") is False:  # opted out: say so, the guarantee is this release's only
        console.print(f"ledger: {_e(led['note'])} ({_e(led.get('opted_out_by', 'opted out'))})")
        return
    c, b = led["composed"], led.get("budget")
    text = (
        f"ledger: release {led['n_releases']} of this data (all count in this secret's "
        "account); composed exactly "
        f"({_fmt(c['epsilon'])}, {_fmt(c['delta'], 'g')}), this release alone "
        f"({_fmt(led['alone']['epsilon'])}, {_fmt(led['alone']['delta'], 'g')})"
    )
    if b:
        text += f"; budget ({_fmt(b['epsilon'], 'g')}, {_fmt(b['delta'], 'g')})"
    console.print(text)


def render_ledger(report: dict[str, Any]) -> str:
    """``distpriv ledger show``: the releases of each data and secret, alone and composed."""
    buf = _Buffer()
    console = buf.console
    console.print(
        f"[bold]ledger {_e(report['path'])}[/bold] — {report['n_releases']} release(s), "
        f"schema {report['schema_version']}"
    )
    for g in report["groups"]:
        b, c = g["budget"], g.get("composed")
        budget = "no budget" if b is None else f"budget ({_fmt(b['epsilon'], 'g')}, {b['delta']:g})"
        # the composed guarantee of all releases of this data and secret comes first
        lead = (
            "no releases yet"
            if c is None
            else f"composed ({_fmt(c['epsilon'])}, {_fmt(c['delta'], 'g')}) over "
            f"{c['n_releases']} release(s)"
        )
        console.print(
            f"\n[bold]{lead}[/bold] — {budget}\n  secret [bold]{_e(g['secret'])}[/bold], "
            f"data account {_e(g['account'])}"
        )
        if c is not None and c.get("left_out"):  # recorded by an earlier distpriv
            ids = ", ".join(str(i) for i in c["left_out"])
            console.print(
                f"  [bold]not included:[/bold] release(s) {ids} of this data were not "
                "composed into this account when recorded; its next composition includes them"
            )
        table = Table()
        for col in ("#", "time (UTC)", "mechanism", "statistics", "claimed", "alone", "composed"):
            table.add_column(col, justify="right" if col in ("#",) else "left")
        for r in g["releases"]:
            names = ", ".join(s["name"] for s in r["statistics"])
            cl, al, co = r["claimed"], r["alone"], r["composed"]
            table.add_row(
                str(r["id"]),
                _e(r["time_utc"][:19]),
                _e(r["mechanism"]),
                _e(names),
                f"({_fmt(cl['epsilon'])}, {_fmt(cl['delta'], 'g')})",
                f"({_fmt(al['epsilon'])}, {_fmt(al['delta'], 'g')})",
                f"({_fmt(co['epsilon'])}, {_fmt(co['delta'], 'g')}) over {co['n_releases']}",
            )
        console.print(table)
    if not report["groups"]:
        console.print("no releases recorded")
    return buf.text()


def render_verification(public: dict[str, Any], price: dict[str, Any] | None = None) -> str:
    """``distpriv verify``: the mechanism, its guarantee and the data-level check (no noise),
    after the curator-private price per statistic when given
    (:mod:`distpriv.pipeline.price.table`)."""
    buf = _Buffer()
    console = buf.console
    mech = public["mechanism"]
    console.print(
        f"[bold]{_e(public['title'])}[/bold] — dry run of mechanism [bold]{_e(mech['name'])}"
        f"[/bold] on {len(public['statistics'])} statistics: no noise drawn, nothing released"
    )
    console.print(
        f"expected L2 error: {mech['expected_l2_error']:.4g}, noise rank "
        f"{mech['noise_rank']} of {len(public['statistics'])}"
    )
    if price:
        price_lines(console, price)
    _guarantee_lines(console, public["guarantee"])
    check = public["verification"]
    console.print(_verification_line(check))
    for note in check.get("notes", [])[:3]:
        console.print(f"  {_e(note)}")
    return buf.text()


def _num(v: Any, spec: str = ".3g", suffix: str = "") -> str:
    return "-" if v is None else f"{format(v, spec)}{suffix}"


def price_lines(console: Console, price: dict[str, Any]) -> None:
    """The per-statistic price tables of :mod:`distpriv.pipeline.price.table`, then its findings:
    the noise against three yardsticks and the population premise's price, then what would
    change it (dropping a statistic, collinearity, a heavier weight)."""
    table = Table(title="price per statistic (no noise drawn)", title_justify="left")
    heads = (
        "statistic",
        "typical value",
        "noise sd",
        "sd across datasets",
        "noise/spread",
        "gap across secret",
        "sd w/o population",
        "premise x",
    )
    for col in heads:
        table.add_column(col, justify="left" if col == "statistic" else "right")
    for r in price["statistics"]:
        bad = r["dominated_by_noise"]
        ratio = "inf" if r["noise_to_spread"] is None and r["spread"] == 0 else None
        table.add_row(
            _e(r["statistic"]),
            _num(r.get("value"), ".4g"),
            _num(r["noise_sd"], ".4g"),
            _num(r["spread"], ".4g"),
            ("[red]" if bad else "")
            + (ratio or _num(r["noise_to_spread"]))
            + ("[/red]" if bad else ""),
            _num(r.get("secret_gap"), ".4g"),
            _num(r["noise_sd_without_population"], ".4g"),
            _num(r["population_premise_factor"], ".3g", "x"),
        )
    console.print(table)
    what = Table(title="what would change it", title_justify="left")
    probe = price.get("weight_probe", 10)
    for col in ("statistic", "drop saves others", "R^2 others", f"noise sd at weight x{probe:g}"):
        what.add_column(col, justify="left" if col == "statistic" else "right")
    for r in price["statistics"]:
        save = r["drop_saves_others"]
        what.add_row(
            _e(r["statistic"]) + (" [yellow](collinear)[/yellow]" if r["nearly_collinear"] else ""),
            "-" if save is None else f"{max(100 * save, 0.0):.0f} %",
            _num(r["r_squared"], ".3f"),
            _num(r.get("noise_sd_at_weight_x10"), ".4g"),
        )
    console.print(what)
    r2 = price.get("collinear_r2", 0.9)
    cond = _num(price.get("condition_number"), ".3g")
    if any(r["nearly_collinear"] for r in price["statistics"]):  # the legend of (collinear)
        console.print(
            f"  (collinear): R^2 >= {r2:g} on the other statistics under the model; "
            f"condition number of their correlation: {cond}"
        )
    else:  # said only when some statistic is
        console.print(
            f"  no statistic is nearly collinear with the others (each R^2 < {r2:g}); "
            f"condition number of their correlation: {cond}"
        )
    for line in price["lines"]:
        console.print(f"  {_e(line)}")
    console.print(f"  {_e(price['weights'])}")
    for note in price.get("notes", []):
        console.print(f"  ({_e(note)})")
