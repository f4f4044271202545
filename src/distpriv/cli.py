"""Command line: ``distpriv calibrate`` and ``distpriv mechanisms``.

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
from .config import load_model_config
from .errors import DistPrivError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + message
        self.exit(EXIT_USAGE, f"distpriv: error: {message} (see 'distpriv --help')\n")


def _fail(message: str) -> int:
    sys.stderr.write(f"distpriv: error: {' '.join(str(message).split())}\n")
    return EXIT_USAGE


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


def _print_calibration(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=True)
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
    text = json.dumps(report, indent=2, allow_nan=False)
    if args.out is not None:
        write_atomic(args.out, text + "\n")
    if args.json:
        sys.stdout.write(text + "\n")
    else:
        _print_calibration(report)
    return 0


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
        help="Gaussian calibration (default analytic)",
    )
    cal.add_argument("--json", action="store_true", help="print the report as JSON")
    cal.add_argument("--out", help="also write the JSON report to this file (atomically)")
    cal.set_defaults(func=_cmd_calibrate)

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
