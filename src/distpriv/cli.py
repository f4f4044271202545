"""Command line: ``distpriv release``, ``audit``, ``calibrate``, ``demo``, ``local evaluate``…

Thin by design (docs/architecture.md §3): parse, call one function, render, then write files
atomically (nothing before the command has succeeded). Bad input: status 2 and one line on stderr;
Ctrl-C: status 130 and one line; never a traceback."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .errors import DistPrivError, ParameterError
from .pipeline.scope import command_scope
from .pipeline.scope import recorded_note as _note
from .report.output import OutputError, check_output, write_atomic, write_files
from .util.text import printable

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        self.exit(EXIT_USAGE, f"distpriv: error: {message} (see 'distpriv --help')\n")


def _fail(message: object, note: str | None = None) -> int:
    but = f"; but {note}" if note else ""  # a release recorded before the failure
    sys.stderr.write(f"distpriv: error: {printable(' '.join(str(message).split()))}{but}\n")
    return EXIT_USAGE


def _dump(report: Any) -> str:
    return json.dumps(report, indent=2, allow_nan=False) + "\n"


def _finish(
    args: argparse.Namespace, public: Any, render: Callable[[], str], page: str | None = None
) -> int:
    """Render first, then write ``--out`` (and ``--html``), then print: a failure leaves
    no file behind."""
    text = _dump(public) if args.json else ("" if getattr(args, "quiet", False) else render())
    files = [(args.out, _dump(public), "--out")] if getattr(args, "out", None) is not None else []
    files += [] if page is None else [(args.html, page, "--html")]
    write_files(files)
    sys.stdout.write(text)
    return 0


def _claim_outputs(args: argparse.Namespace, *flags: str) -> list[tuple[Path, str]]:
    """Refuse, before any work, an output file that exists (outputs are never overwritten)
    or one file named by two flags; the given ``(path, flag)`` pairs."""
    given = [(getattr(args, f[2:].replace("-", "_"), None), f) for f in flags]
    paths = [(check_output(p, f, overwrite=False), f) for p, f in given if p is not None]
    if len({p.resolve() for p, _ in paths}) < len(paths):
        raise OutputError(f"{', '.join(flags[:-1])} and {flags[-1]} must be different files")
    return paths


def _progress(args: argparse.Namespace) -> Any:
    """Progress bars on stderr when it is a terminal, unless --json or --quiet."""
    from .report.progress import ProgressDisplay, progress_enabled

    enabled = progress_enabled(
        quiet=getattr(args, "quiet", False), json=getattr(args, "json", False)
    )
    return ProgressDisplay(enabled=enabled)


def _cmd_report(args: argparse.Namespace) -> int:
    from .report.saved import render_saved_report

    check_output(args.html, "--html", overwrite=False)
    write_atomic(args.html, render_saved_report(args.report), "--html", overwrite=False)
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .pipeline import run_calibrate
    from .report.text import render_calibration

    _claim_outputs(args, "--out")
    keys = ("mechanism", "epsilon", "delta", "calibration", "objective")
    outcome = run_calibrate(args.model, **{k: getattr(args, k) for k in keys})
    return _finish(args, outcome.public, lambda: render_calibration(outcome.public))


def _cmd_release(args: argparse.Namespace) -> int:
    from .pipeline import run_release
    from .report.text import render_release

    paths = _claim_outputs(args, "--out", "--private-out", "--html")
    with _progress(args) as bars:
        with bars.phase("modelling, calibrating and releasing"):
            outcome = run_release(
                args.config,
                data=args.data,
                insecure_seed=args.insecure_seed,
                include_true=args.include_true or None,  # None: the config's
                allow_overlap=args.allow_overlap or None,
                verify=args.verify,
                ledger=False if args.no_ledger else args.ledger,
                budget=args.budget,
                progress=bars.step("mechanism = auto: calibrating every mechanism"),
            )
        public, private, page = outcome.public, outcome.private, None
        if args.html is not None:
            from .report.html import release_page

            public, page = release_page(outcome, progress=bars.step("privacy-utility figure"))
    text = _dump(public) if args.json else ("" if args.quiet else render_release(public, private))
    contents = {"--out": _dump(public), "--private-out": _dump(private), "--html": page or ""}
    write_files([(p, contents[f], f) for p, f in paths])
    sys.stdout.write(text)
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from .pipeline import run_verify
    from .report.text import render_verification
    from .report.verify_page import verify_page

    _claim_outputs(args, "--out", "--html")
    outcome = run_verify(
        args.config,
        max_samples=args.max_samples,
        early_stop=args.early_stop,
        batch_mib=args.batch_mib,
    )
    public, price = outcome.public, outcome.private.get("price")  # price: never in --out
    page = None if args.html is None else verify_page(outcome)  # PRIVATE page
    status = _finish(args, public, lambda: render_verification(public, price), page)
    # Exit status 1 on a certified violation, so a script can gate a release on it.
    return 1 if public["verification"].get("verdict") == "violation" else status


def _cmd_ledger(args: argparse.Namespace) -> int:
    from .pipeline.ledger import ledger_report
    from .report.text import render_ledger

    report = ledger_report(args.file)
    sys.stdout.write(_dump(report) if args.json else render_ledger(report))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .pipeline import run_demo
    from .report.text import render_demo

    _claim_outputs(args, "--out", "--html")
    with _progress(args) as bars:
        with bars.phase("calibrating every mechanism, releasing and attacking"):
            outcome = run_demo(
                epsilon=args.epsilon,
                delta=args.delta,
                seed=args.seed,
                n_samples=args.n_samples,
                attack_repetitions=args.attack_repetitions,
            )
        public, page = outcome.public, None
        if args.html is not None:
            from .report.html import demo_page

            public, page = demo_page(public, progress=bars.step("privacy-utility figure"))
    return _finish(args, public, lambda: render_demo(outcome.report), page)


def _cmd_audit(args: argparse.Namespace) -> int:
    from .pipeline import run_audit
    from .report.text import render_audit

    _claim_outputs(args, "--out", "--html")
    with _progress(args) as bars, bars.phase("modelling, calibrating and attacking"):
        outcome = run_audit(
            args.config,
            mechanisms=args.mechanism,
            repetitions=args.repetitions,
            classifiers=args.classifier,
            confidence=args.confidence,
            seed=args.seed,
            pairs=args.pairs,
            progress=bars.step("attack repetitions"),
        )
    public = outcome.public
    page = None
    if args.html is not None:
        from .report.html import render_html  # only for --html: not on the cold path

        page = render_html(public)
    return _finish(
        args, public, lambda: render_audit(public["title"], outcome.report, public["notes"]), page
    )


def _cmd_experiment(args: argparse.Namespace) -> int:
    from .experiments import EXPERIMENTS, reproduction_markdown, run_experiments
    from .report.text import render_experiment

    if args.action == "list":
        for name, exp in EXPERIMENTS.items():
            sys.stdout.write(f"{name:<18} {exp.paper}: {exp.title}\n")
        return 0
    if not args.names:
        raise ParameterError(
            "experiment run needs a NAME (or 'all'); see 'distpriv experiment list'"
        )
    for name in args.names:
        if name != "all" and name not in EXPERIMENTS:
            raise ParameterError(f"unknown experiment {name!r}; see 'distpriv experiment list'")
    if args.doc is not None:  # fail before a minute of work, not after; folders made at the end
        check_output(args.doc, "--doc", create_parents=True)
    results = []
    total = len(EXPERIMENTS) if "all" in args.names else len(set(args.names))
    with _progress(args) as bars:
        tick = bars.step("running experiments", total)
        tick(0, total)

        def show(res: Any) -> None:
            results.append(res)
            tick(len(results), total)
            if not args.json:
                bars.print(render_experiment(res))

        run_experiments(
            list(args.names), quick=args.quick, seed=args.seed, out_dir=Path(args.out), on_done=show
        )
    if args.doc is not None:
        cmd = "distpriv experiment run " + " ".join(args.names) + (" --quick" if args.quick else "")
        write_atomic(args.doc, reproduction_markdown(results, cmd), "--doc", create_parents=True)
    if args.json:
        sys.stdout.write(_dump([r.to_dict() for r in results]))
    else:
        total = sum(r.elapsed for r in results)
        sys.stdout.write(f"{len(results)} experiment(s) in {total:.1f} s; files in {args.out}\n")
    return 0


def _cmd_local(args: argparse.Namespace) -> int:
    from .datasets.scenarios import load_scenario
    from .local import evaluate
    from .report.text import render_local

    _claim_outputs(args, "--out")
    scenario = load_scenario(args.scenario, seed=args.seed)
    with _progress(args) as bars, bars.phase("evaluating the local mechanism"):
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
    return _finish(args, out, lambda: render_local(scenario.title, out))


def _cmd_mechanisms(args: argparse.Namespace) -> int:
    from .central.registry import mechanisms_table

    rows = mechanisms_table()
    lines = (f"{r['name']:<20} {r['summary']} ({r['theorem']})\n" for r in rows)
    sys.stdout.write(_dump(rows) if args.json else "".join(lines))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``distpriv`` command (see :mod:`distpriv._cli_parser`)."""
    from ._cli_parser import LazyNames, add_commands
    from .util.version import __version__

    parser = _Parser(prog="distpriv", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"distpriv {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {
        "calibrate": _cmd_calibrate,
        "release": _cmd_release,
        "verify": _cmd_verify,
        "audit": _cmd_audit,
        "experiment": _cmd_experiment,
        "demo": _cmd_demo,
        "local": _cmd_local,
        "mechanisms": _cmd_mechanisms,
        "report": _cmd_report,
        "ledger": _cmd_ledger,
    }
    add_commands(
        sub,
        handlers,
        mechanisms=LazyNames("distpriv.central.registry", "MECHANISMS"),
        calibrations=LazyNames("distpriv.accounting", "CALIBRATIONS"),
    )
    return parser


class _Interrupt:
    """Remembers a Ctrl-C even when a library (DuckDB) turns it into its own error."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, signum: int, frame: Any) -> None:
        self.seen = True
        raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``distpriv`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    interrupt = _Interrupt()
    try:
        previous = signal.signal(signal.SIGINT, interrupt)
    except ValueError:  # not the main thread (embedded use): leave the handler alone
        previous = None
    try:
        with warnings.catch_warnings(record=True) as caught, command_scope() as scope:
            warnings.simplefilter("always")
            try:
                status = args.func(args)
            except KeyboardInterrupt:
                status = EXIT_INTERRUPTED
            except (DistPrivError, OSError) as exc:
                status = EXIT_INTERRUPTED if interrupt.seen else _fail(exc, _note(scope, args))
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if status == EXIT_INTERRUPTED:  # a release recorded before it stopped is named (SECURITY.md)
        what = f" after {note}" if (note := _note(scope, args)) else "; nothing was written"
        sys.stderr.write(f"distpriv: interrupted{what}\n")
        return status
    if status != 0:  # a failure is one line; warnings on the way do not matter then
        return status
    shown = (w for w in caught if issubclass(w.category, UserWarning))  # not numpy's Runtime*
    for line in dict.fromkeys(printable(" ".join(str(w.message).split())) for w in shown):
        sys.stderr.write(f"distpriv: warning: {line}\n")
    return status


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
