"""Command line: ``distpriv calibrate``, ``distpriv local evaluate``, ``distpriv mechanisms``…

Thin by design (DESIGN.md §3): parse, call one library function, print, write files
atomically. Bad input exits with status 2 and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from . import __version__
from .accounting import CALIBRATIONS
from .central import MECHANISMS, calibrate, mechanism_info
from .config import load_model_config, load_release_config
from .errors import DistPrivError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        self.exit(EXIT_USAGE, f"distpriv: error: {message} (see 'distpriv --help')\n")


def _fail(message: str) -> int:
    sys.stderr.write(f"distpriv: error: {' '.join(str(message).split())}\n")
    return EXIT_USAGE


def _emit(report: dict[str, Any], args: argparse.Namespace) -> bool:
    """Write the JSON report to ``--out`` (atomically) and print it with ``--json``.

    Returns True when the JSON was printed, so the caller skips the human-readable view.
    """
    text = json.dumps(report, indent=2, allow_nan=False) + "\n"
    if getattr(args, "out", None) is not None:
        write_atomic(args.out, text)
    if args.json:
        sys.stdout.write(text)
        return True
    return False


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _console() -> Any:
    from rich.console import Console

    console = Console(soft_wrap=True)
    if not console.is_terminal:  # files and pipes: do not squeeze tables to 80 columns
        console = Console(soft_wrap=True, width=150)
    return console


def _print_calibration(report: dict[str, Any]) -> None:
    from rich.table import Table

    console = _console()
    console.print(f"[bold]{report['title']}[/bold] — mechanism [bold]{report['mechanism']}[/bold]")
    noise = Table(title="Noise added to each statistic")
    for col in ("statistic", "noise std", "noise variance"):
        noise.add_column(col, justify="right" if col != "statistic" else "left")
    cov = np.asarray(report["noise_covariance"])
    for name, var in zip(report["statistics"], np.diag(cov), strict=True):
        noise.add_row(name, f"{np.sqrt(max(var, 0.0)):.6g}", f"{var:.6g}")
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
    console.print(
        f"guarantee: ({g['epsilon']:g}, {g['delta']:g})-{g['notion']} "
        f"by {g['theorem']}" + (f", {g['calibration']} calibration" if g["calibration"] else "")
    )
    table = Table(title="Assumptions")
    for col in ("assumption", "holds", "detail"):
        table.add_column(col)
    mark = {True: "yes", False: "[red]NO[/red]", None: "unverified"}
    for a in g["assumptions"]:
        table.add_row(a["name"], mark[a["holds"]], a["detail"])
    console.print(table)
    for note in g["notes"]:
        console.print(f"note: {note}")


def _cmd_calibrate(args: argparse.Namespace) -> int:
    cfg = load_model_config(args.model)
    options = dict(cfg.options.get(args.mechanism, {}))
    if args.calibration is not None:
        if not mechanism_info(args.mechanism).gaussian:
            return _fail(f"--calibration applies to Gaussian mechanisms, not {args.mechanism!r}")
        options["calibration"] = args.calibration
    mech = calibrate(args.mechanism, cfg.model, epsilon=args.epsilon, delta=args.delta, **options)
    report = {
        "title": cfg.title,
        "model_file": cfg.path,
        "version": __version__,
        "model": cfg.model.to_dict(),
        **mech.to_dict(),
    }
    if not _emit(report, args):
        _print_calibration(report)
    return 0


def _cmd_release(args: argparse.Namespace) -> int:
    from .experiments.paper import resolve_source
    from .modeling import ProportionSecret, release

    cfg = load_release_config(args.config)
    seed = args.seed if args.seed is not None else cfg.seed
    rng = np.random.default_rng(seed)
    n = cfg.model["subset_size"]
    source = args.data if args.data is not None else cfg.release_source
    if source is None:
        return _fail(f"{cfg.path}: no table to release: give --data PATH or [data] release")
    data = resolve_source(source, split_seed=cfg.split_seed, sample_rows=n, rng=rng)
    model_data = resolve_source(cfg.model_source, split_seed=cfg.split_seed)
    secret = ProportionSecret(
        cfg.secret["predicate"],
        cfg.secret["values"],
        pairs=cfg.secret.get("pairs"),
        within=cfg.secret.get("within"),
    )
    report = release(
        data,
        cfg.query,
        secret,
        model_data=model_data,
        mechanism=cfg.mechanism,
        epsilon=cfg.epsilon,
        delta=cfg.delta,
        subset_size=n,
        method=cfg.model.get("method", "analytic"),
        n_samples=cfg.model.get("n_samples", 1000),
        options=cfg.options,
        rng=rng,
    )
    include_true = args.include_true or cfg.include_true
    out = {
        "title": cfg.title,
        "config": cfg.path,
        "data": str(source),
        **report.to_dict(include_true=include_true),
    }
    out["seed"] = seed
    if not _emit(out, args):
        _print_release(out, include_true)
    return 0


def _print_release(out: dict[str, Any], include_true: bool) -> None:
    from rich.table import Table

    console = _console()
    console.print(
        f"[bold]{out['title']}[/bold] — mechanism [bold]{out['mechanism']}[/bold], "
        f"{out['n_rows']} rows released, seed {out['seed']}"
    )
    table = Table()
    table.add_column("statistic")
    table.add_column("released", justify="right")
    table.add_column("noise std", justify="right")
    if include_true:
        table.add_column("true", justify="right")
    cov = np.asarray(out["noise_covariance"])
    for k, name in enumerate(out["statistics"]):
        row = [name, f"{out['released'][k]:.4f}", f"{np.sqrt(max(cov[k, k], 0.0)):.4f}"]
        if include_true:
            row.append(f"{out['true_values'][k]:.4f}")
        table.add_row(*row)
    console.print(table)
    g = out["guarantee"]
    console.print(f"expected L2 error: {out['expected_l2_error']:.4g}")
    console.print(f"guarantee: ({g['epsilon']:g}, {g['delta']:g})-{g['notion']} by {g['theorem']}")
    for a in g["assumptions"]:
        mark = {True: "holds", False: "[red]FAILS[/red]", None: "unverified"}[a["holds"]]
        console.print(f"  {a['name']}: {mark} — {a['detail']}")
    if g["fallback"]:
        fb = g["fallback"]
        console.print(
            f"without the failed assumptions: ({fb['epsilon']:.4g}, "
            f"{fb['delta']:.3g})-{fb['notion']} by {fb['theorem']}"
        )


def _cmd_demo(args: argparse.Namespace) -> int:
    from .experiments import run_demo

    report = run_demo(
        epsilon=args.epsilon,
        delta=args.delta,
        seed=args.seed,
        n_samples=args.n_samples,
        attack_repetitions=args.attack_repetitions,
    )
    out = report.to_dict()
    if _emit(out, args):
        return 0
    from rich.table import Table

    console = _console()
    console.print(
        f"[bold]Adult, hiding whether the share of incomes >50K is 0.45 or 0.55[/bold] "
        f"(Chen & Ohrimenko 2023 §5.1): {report.subset_size}-record subset, "
        f"epsilon={report.epsilon:g}, delta={report.delta:g}, seed={report.seed}; "
        f"||mu_0.45 - mu_0.55|| = {report.mean_difference_l2:.3f}"
    )
    table = Table()
    for col in (
        "mechanism",
        "noise",
        "E||Z||",
        "measured ||Z||",
        "(eps, delta)",
        "assumptions",
        "without failed ones",
        "attack accuracy",
    ):
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
            r.noise,
            f"{r.expected_l2_error:.3f}",
            f"{r.measured_l2_error:.3f} ± {r.measured_l2_se:.3f}",
            f"({r.epsilon:g}, {r.delta:g})",
            mark[r.assumptions_hold],
            fb,
            "-" if np.isnan(r.attack_accuracy) else f"{r.attack_accuracy:.3f}",
        )
    console.print(table)
    for line in refused:
        console.print(f"refused — {line}")
    console.print(
        "true statistics: "
        + ", ".join(
            f"{n}={v:.3f}" for n, v in zip(report.statistics, report.true_value, strict=True)
        )
    )
    console.print(
        "measured ||Z||: mean over 2000 noise draws (± standard error). Real data "
        "never give exactly equal covariances, so the Gaussian-family guarantees "
        "also state what holds without that assumption (Thm 4.6)."
    )
    if report.undefended_attack is not None:
        acc, lo, hi = report.undefended_attack
        console.print(
            f"attack accuracy: the paper's logistic-regression meta-classifier (200 shadow "
            f"datasets, 200 test datasets, {report.attack_repetitions} repetitions); without "
            f"any noise it scores {acc:.3f} (95% CI {lo:.3f}-{hi:.3f}; the paper reports 0.75). "
            "0.5 is a coin flip. See 'distpriv audit' for stronger attacks and epsilon bounds."
        )
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from .attacks import audit
    from .experiments.paper import resolve_source
    from .modeling import ProportionSecret, model_query

    cfg = load_release_config(args.config)
    seed = args.seed if args.seed is not None else cfg.seed
    rng = np.random.default_rng(seed)
    adult = cfg.model_source.startswith("adult:")
    aux_src = cfg.auxiliary_source or ("adult:auxiliary" if adult else None)
    test_src = cfg.test_source or ("adult:test" if adult else None)
    if aux_src is None or test_src is None:
        return _fail(f"{cfg.path}: [data] needs 'auxiliary' and 'test' tables for the audit")
    n = cfg.model["subset_size"]
    secret = ProportionSecret(
        cfg.secret["predicate"],
        cfg.secret["values"],
        pairs=cfg.secret.get("pairs"),
        within=cfg.secret.get("within"),
    )
    names = args.mechanism or [cfg.mechanism]
    if names == ["all"]:
        names = list(MECHANISMS)
    for name in names:
        mechanism_info(name)
    method = cfg.model.get("method", "analytic")
    if any(nm in ("wasserstein", "approx-wasserstein") for nm in names):
        method = "montecarlo"
    model = model_query(
        resolve_source(cfg.model_source, split_seed=cfg.split_seed),
        cfg.query,
        secret,
        subset_size=n,
        method=method,
        n_samples=cfg.model.get("n_samples", 1000),
        rng=rng,
    )
    # The config's options belong to its mechanism; others get only its calibration.
    options = {}
    for name in names:
        if name == cfg.mechanism:
            options[name] = cfg.options
        elif "calibration" in cfg.options and mechanism_info(name).gaussian:
            options[name] = {"calibration": cfg.options["calibration"]}
        if name.startswith("groupdp") and "group_size" not in options.get(name, {}):
            # The paper's baseline: group size n, range/n for means, 1 for counts, with
            # ranges from the (public) modelling data.
            from .experiments.paper import group_sensitivities

            sens = group_sensitivities(
                resolve_source(cfg.model_source, split_seed=cfg.split_seed), cfg.query, n
            )
            options[name] = {**options.get(name, {}), "group_size": n, "sensitivities": sens}
    show = not args.json and sys.stderr.isatty()
    with _Progress(show, args.repetitions) as tick:
        report = audit(
            auxiliary=resolve_source(aux_src, split_seed=cfg.split_seed),
            test=resolve_source(test_src, split_seed=cfg.split_seed),
            query=cfg.query,
            secret=secret,
            subset_size=n,
            mechanisms=["none", *names],
            model=model,
            epsilon=cfg.epsilon,
            delta=cfg.delta,
            options=options,
            repetitions=args.repetitions,
            classifiers=args.classifier or ("logistic",),
            confidence=args.confidence,
            rng=rng,
            progress=tick,
        )
    out = {"title": cfg.title, "config": cfg.path, **report.to_dict()}
    out["seed"] = seed
    if _emit(out, args):
        return 0
    from rich.table import Table

    console = _console()
    console.print(
        f"[bold]{cfg.title}[/bold] — audit of p = {report.pair[0]:g} vs "
        f"{report.pair[1]:g}: {report.repetitions} repetitions of "
        f"{report.n_shadow} shadow and {report.n_test} test datasets"
    )
    table = Table()
    for col in (
        "mechanism",
        "claimed (eps, delta)",
        "attack",
        "accuracy (95% CI)",
        "eps lower bound",
        "verdict",
    ):
        table.add_column(col)
    for m in report.mechanisms:
        claim = "none" if m.mechanism == "none" else f"({m.epsilon:g}, {m.delta:g})"
        verdict = "[red]VIOLATED[/red]" if m.verdict == "violated" else m.verdict
        for k, a in enumerate(m.attacks):
            lb = a.bound.epsilon_lower
            table.add_row(
                m.mechanism if k == 0 else "",
                claim if k == 0 else "",
                a.attack,
                f"{a.accuracy:.3f} ({a.interval[0]:.3f}, {a.interval[1]:.3f})",
                "-" if lb == -np.inf else f"{lb:.3f}",
                verdict if k == 0 else "",
            )
    console.print(table)
    for note in report.notes:
        console.print(f"note: {note}")
    console.print(
        f"epsilon lower bounds: one-sided Clopper-Pearson at joint confidence "
        f"{report.confidence:g} per mechanism; a mechanism is violated when its "
        "bound exceeds the claimed epsilon"
    )
    return 0


class _Progress:
    """A rich progress bar on stderr (or nothing), as a context giving a tick callback."""

    def __init__(self, show: bool, total: int) -> None:
        self.show, self.total, self.bar = show, total, None

    def __enter__(self) -> Any:
        if not self.show:
            return None
        from rich.console import Console
        from rich.progress import Progress

        self.bar = Progress(console=Console(stderr=True), transient=True)
        self.bar.start()
        task = self.bar.add_task("repetitions", total=self.total)
        return lambda done, total: self.bar.update(task, completed=done)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _cmd_experiment(args: argparse.Namespace) -> int:
    from .experiments import EXPERIMENTS, reproduction_markdown, run_experiments

    if args.action == "list":
        for name, exp in EXPERIMENTS.items():
            sys.stdout.write(f"{name:<18} {exp.paper}: {exp.title}\n")
        return 0
    if not args.names:
        return _fail("experiment run needs a NAME (or 'all'); see 'distpriv experiment list'")
    for name in args.names:
        if name != "all" and name not in EXPERIMENTS:
            return _fail(f"unknown experiment {name!r}; see 'distpriv experiment list'")
    out_dir = Path(args.out)
    if args.doc is not None:  # fail before a minute of work, not after
        Path(args.doc).parent.mkdir(parents=True, exist_ok=True)
    console = _console()
    results = []

    def show(res: Any) -> None:
        results.append(res)
        if args.json:
            return
        _print_experiment(console, res)

    run_experiments(
        list(args.names), quick=args.quick, seed=args.seed, out_dir=out_dir, on_done=show
    )
    if args.doc is not None:
        cmd = "distpriv experiment run " + " ".join(args.names) + (" --quick" if args.quick else "")
        write_atomic(args.doc, reproduction_markdown(results, cmd))
    if args.json:
        sys.stdout.write(
            json.dumps([r.to_dict() for r in results], indent=2, allow_nan=False) + "\n"
        )
    else:
        total = sum(r.elapsed for r in results)
        console.print(f"{len(results)} experiment(s) in {total:.1f} s; files in {out_dir}")
    return 0


def _print_experiment(console: Any, res: Any) -> None:
    from rich.table import Table

    console.print(
        f"[bold]{res.name}[/bold] — {res.title} ({res.elapsed:.1f} s"
        f"{', quick' if res.quick else ''})"
    )
    if res.comparisons:
        table = Table()
        for col in ("quantity", "paper", "ours", "95% interval", "within"):
            table.add_column(col, justify="left" if col == "quantity" else "right")
        for c in res.comparisons:
            table.add_row(
                c.quantity,
                f"{c.paper:.4g}",
                f"{c.ours:.4g}",
                f"[{c.low:.4g}, {c.high:.4g}]",
                "yes" if c.within else "[red]no[/red]",
            )
        console.print(table)
    else:
        table = Table()
        for col in res.columns:
            table.add_column(col)
        shown = res.rows if len(res.rows) <= 30 else res.rows[:: max(1, len(res.rows) // 30)]
        for row in shown:
            table.add_row(*(res.format_value(v) for v in row))
        console.print(table)
        if len(shown) < len(res.rows):
            console.print(f"({len(shown)} of {len(res.rows)} rows shown; all in the CSV)")
    for key, ok in res.checks.items():
        console.print(f"  check: {key}: {'holds' if ok else '[red]FAILS[/red]'}")
    if res.figures:
        console.print(f"  figures: {', '.join(res.figures)}")


def _pair_arg(text: str) -> int | tuple[str, str]:
    if text.isdigit():
        return int(text)
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected an index or two names 'A,B', got {text!r}")
    return parts[0], parts[1]


def _cmd_local(args: argparse.Namespace) -> int:
    from .datasets.scenarios import load_scenario
    from .local import evaluate

    scenario = load_scenario(args.scenario, seed=args.seed)
    report = evaluate(
        scenario,
        args.mechanism,
        pair=args.pair,
        delta=args.delta,
        epsilon=args.epsilon,
        sigma=args.sigma,
        radius=args.radius,
        k=args.k,
        n_samples=args.samples,
        rng=args.seed,
    )
    out = report.to_dict()
    if _emit(out, args):
        return 0
    _print_local(scenario.title, out)
    return 0


def _print_local(title: str, out: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = _console()
    lam0, lam1 = out["pair"]
    params = ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in out["params"].items()
    )
    console.print(
        f"[bold]{title}[/bold] — mechanism [bold]{out['mechanism']}[/bold]"
        + (f" ({params})" if params else "")
        + escape(f", hiding {lam0} vs {lam1}")
    )
    table = Table()
    table.add_column("quantity")
    table.add_column("value", justify="right")

    def num(v: Any) -> str:
        return v if isinstance(v, str) else f"{v:.4g}"

    low, high = out["epsilon_interval"]
    interval = (
        "" if out["method"] == "exact" else f" ({out['confidence']:g} CI {num(low)}-{num(high)})"
    )
    table.add_row(
        f"eps of (eps, {out['delta']:g})-DistP ({out['method']})", num(out["epsilon"]) + interval
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
            escape(f"{label}: {lam0}->{lam1} / {lam1}->{lam0}"),
            f"{num(div['forward'][key])} / {num(div['backward'][key])}",
        )
    for name, loss in out["expected_loss"].items():
        label = (
            "expected loss, mean of the pair" if name == "mean" else f"expected loss under {name}"
        )
        table.add_row(escape(label), num(loss))
    att = out["attack"]
    table.add_row(escape(f"attack success rate (Bayes, {lam0} users)"), num(att["success_rate"]))
    table.add_row("attack accuracy (equal priors)", num(att["accuracy"]))
    console.print(table)
    g = out["guarantee"]
    if g is not None and "theorem" in g and "bounds" not in g:
        console.print(
            f"guarantee: ({num(g['epsilon'])}, {num(g['delta'])})-{g['notion']} by {g['theorem']}"
        )
    elif g is not None:
        bounds = ", ".join(f"{k} <= {num(v)}" for k, v in g["bounds"].items())
        console.print(
            f"guarantee ({g['theorem']}, closeness eps = {num(g['closeness'])}): {bounds}"
        )
    for note in out["notes"]:
        console.print(escape(f"note: {note}"))


def _cmd_mechanisms(args: argparse.Namespace) -> int:
    rows = [
        {
            "name": n,
            "summary": mechanism_info(n).summary,
            "theorem": mechanism_info(n).theorem,
            "gaussian": mechanism_info(n).gaussian,
            "options": list(mechanism_info(n).options),
        }
        for n in MECHANISMS
    ]
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        for r in rows:
            sys.stdout.write(f"{r['name']:<20} {r['summary']} ({r['theorem']})\n")
    return 0


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``distpriv`` command."""
    parser = _Parser(prog="distpriv", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"distpriv {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    cal = sub.add_parser("calibrate", help="calibrate a mechanism to a Gaussian query model")
    cal.add_argument("model", help="TOML file with the query model (see distpriv.config)")
    cal.add_argument(
        "--mechanism",
        required=True,
        choices=MECHANISMS,
        metavar="NAME",
        help="one of: " + ", ".join(MECHANISMS),
    )
    cal.add_argument("--epsilon", required=True, type=_float)
    cal.add_argument("--delta", type=_float, default=0.0)
    cal.add_argument(
        "--calibration",
        choices=CALIBRATIONS,
        default=None,
        help="Gaussian calibration (default exact; analytic/classical reproduce the papers)",
    )
    cal.add_argument("--json", action="store_true", help="print the report as JSON")
    cal.add_argument("--out", help="also write the JSON report to this file (atomically)")
    cal.set_defaults(func=_cmd_calibrate)

    rel = sub.add_parser("release", help="model, calibrate and release statistics of a table")
    rel.add_argument("config", help="TOML release configuration (see distpriv.config)")
    rel.add_argument("--data", help="CSV/Parquet table to release (overrides [data] release)")
    rel.add_argument("--out", help="write the JSON report to this file (atomically)")
    rel.add_argument("--json", action="store_true", help="print the report as JSON")
    rel.add_argument("--seed", type=int, help="override the config's seed")
    rel.add_argument(
        "--include-true", action="store_true", help="also report the true (unprotected) values"
    )
    rel.set_defaults(func=_cmd_release)

    aud = sub.add_parser("audit", help="attack the releases and test the claimed epsilon")
    aud.add_argument("config", help="TOML configuration (the same as for release)")
    aud.add_argument(
        "--mechanism",
        action="append",
        metavar="NAME",
        help="mechanism to audit (repeatable; 'all' for every one); default: the config's",
    )
    aud.add_argument("--repetitions", type=int, default=10)
    aud.add_argument(
        "--classifier",
        action="append",
        metavar="NAME",
        help="meta-classifier (repeatable): logistic, lda, gradient-boosting, mlp",
    )
    aud.add_argument("--confidence", type=_float, default=0.95)
    aud.add_argument("--seed", type=int, help="override the config's seed")
    aud.add_argument("--json", action="store_true")
    aud.add_argument("--out", help="write the JSON report to this file (atomically)")
    aud.set_defaults(func=_cmd_audit)

    exp = sub.add_parser("experiment", help="reproduce the papers' tables and figures")
    exp.add_argument("action", choices=("list", "run"))
    exp.add_argument("names", nargs="*", metavar="NAME", help="experiment names, or 'all'")
    exp.add_argument("--quick", action="store_true", help="fewer repetitions (for tests)")
    exp.add_argument("--out", default="out", help="directory for CSV, JSON and PNG files")
    exp.add_argument("--seed", type=int, default=0)
    exp.add_argument("--json", action="store_true")
    exp.add_argument("--doc", help="also write the reproduction record (markdown) here")
    exp.set_defaults(func=_cmd_experiment)

    demo = sub.add_parser("demo", help="every mechanism on the paper's Adult setting")
    demo.add_argument("--epsilon", type=_float, default=1.0)
    demo.add_argument("--delta", type=_float, default=1e-3)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument(
        "--n-samples",
        type=int,
        default=1000,
        help="Monte Carlo datasets per value for the Wasserstein mechanisms",
    )
    demo.add_argument(
        "--attack-repetitions",
        type=int,
        default=5,
        help="repetitions of the paper's attack per mechanism (0: no attack)",
    )
    demo.add_argument("--json", action="store_true")
    demo.add_argument("--out", help="write the JSON report to this file (atomically)")
    demo.set_defaults(func=_cmd_demo)

    loc = sub.add_parser("local", help="local distribution obfuscation (Kawamoto & Murakami 2019)")
    loc_sub = loc.add_subparsers(dest="action", required=True, parser_class=_Parser)
    ev = loc_sub.add_parser(
        "evaluate", help="DistP, divergences, expected loss and attack success of a local mechanism"
    )
    # Names are validated by the library (one-line error listing the valid ones).
    ev.add_argument("--scenario", required=True, metavar="NAME", help="city or adult")
    ev.add_argument(
        "--mechanism",
        required=True,
        metavar="NAME",
        help="rr, pl, pg, rl, tupling, coupling or coupling-winf",
    )
    ev.add_argument("--pair", type=_pair_arg, default=0, help="pair index or two names 'A,B'")
    ev.add_argument("--delta", type=_float, default=1e-3, help="delta of the reported DistP")
    ev.add_argument("--epsilon", type=_float, help="eps (rr, pl) or eps_A (rl, tupling)")
    ev.add_argument("--sigma", type=_float, help="standard deviation of pg")
    ev.add_argument("--radius", type=_float, help="radius r of rl / tupling ('inf' allowed)")
    ev.add_argument("--k", type=int, help="number of dummies of tupling")
    ev.add_argument("--samples", type=int, default=200_000, help="Monte Carlo tuples per side")
    ev.add_argument("--seed", type=int, default=0, help="scenario and Monte Carlo seed")
    ev.add_argument("--json", action="store_true")
    ev.add_argument("--out", help="write the JSON report to this file (atomically)")
    ev.set_defaults(func=_cmd_local)

    mech = sub.add_parser("mechanisms", help="list the registered mechanisms")
    mech.add_argument("--json", action="store_true")
    mech.set_defaults(func=_cmd_mechanisms)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``distpriv`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            status = args.func(args)
        except (DistPrivError, OSError) as exc:
            status = _fail(str(exc))
    for w in caught:
        sys.stderr.write(f"distpriv: warning: {' '.join(str(w.message).split())}\n")
    return status


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
