"""The sub-commands and flags of the ``distpriv`` command (used by :mod:`distpriv.cli`)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from typing import Any

from .errors import ParameterError
from .util.text import parse_decimal, parse_nonnegative_int

__all__ = ["LazyNames", "add_commands"]


def _float(text: str) -> float:
    # Plain ASCII decimals only: float() would read "1_0" as 10 and "١" as 1.
    # NaN and inf pass: the library names the parameter in its error.
    try:
        return parse_decimal(text, "value")
    except ParameterError:
        raise argparse.ArgumentTypeError(
            f"not a number (plain decimal digits 0-9 only): {text!r}"
        ) from None


def _seed(text: str) -> int:
    if text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    try:
        return parse_nonnegative_int(text, "value")
    except ParameterError:
        raise argparse.ArgumentTypeError(f"not an integer in digits 0-9: {text!r}") from None


def _count(text: str) -> int:
    value = _seed(text)
    if value > 10**9:
        raise argparse.ArgumentTypeError(f"too large: {value}")
    return value


def _pair_arg(text: str) -> int | tuple[str, str]:
    if text.isascii() and text.isdigit():  # "²" and "١" are digits to str.isdigit
        return int(text)
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected an index or two names 'A,B', got {text!r}")
    return parts[0], parts[1]


TYPES: dict[str, Callable[[str], Any]] = {
    "float": _float,
    "seed": _seed,
    "count": _count,
    "pair": _pair_arg,
}


def _json_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--out", help="also write the JSON report to this file (atomically)")


def _html(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--html", metavar="FILE", help=f"write {what} as one self-contained HTML page")


def _report(sub: Any) -> Any:
    rep = sub.add_parser("report", help="render a saved JSON report (release, audit, demo)")
    rep.add_argument("report", metavar="REPORT.json", help="a report written by --out")
    rep.add_argument("--html", metavar="FILE", required=True, help="write the HTML page here")
    return rep


def _calibrate(sub: Any, types: dict[str, Any], mechanisms: Sequence[str], cals: Any) -> Any:
    cal = sub.add_parser("calibrate", help="calibrate a mechanism to a Gaussian query model")
    cal.add_argument("model", help="TOML file with the query model (docs/user-guide.md)")
    cal.add_argument(
        "--mechanism",
        required=True,
        choices=mechanisms,
        metavar="NAME",
        help="one of: %(choices)s",
    )
    cal.add_argument("--epsilon", required=True, type=types["float"])
    cal.add_argument("--delta", type=types["float"], default=0.0)
    cal.add_argument(
        "--calibration",
        choices=cals,
        default=None,
        metavar="NAME",  # not the choices: listing them would import the accountant
        help="Gaussian calibration, one of %(choices)s (default exact; analytic/classical "
        "reproduce the papers)",
    )
    cal.add_argument(
        "--objective",
        choices=("relative", "l2"),
        default=None,
        help="what optimal-g and optimal-g-full minimise: relative (default: each "
        "statistic's noise against its sampling spread, units do not matter) or l2 (the "
        "papers' E||Z||^2)",
    )
    _json_out(cal)
    return cal


def _release(sub: Any, types: dict[str, Any]) -> Any:
    rel = sub.add_parser("release", help="model, calibrate and release statistics of a table")
    rel.add_argument("config", help="TOML release configuration (docs/user-guide.md)")
    rel.add_argument("--data", help="CSV/Parquet table to release (overrides [data] release)")
    rel.add_argument("--out", help="write the PUBLIC JSON report here (never overwritten)")
    rel.add_argument(
        "--private-out",
        help="write the curator's PRIVATE diagnostics here (model moments, stratum sizes, "
        "true values with --include-true); never publish this file",
    )
    rel.add_argument("--json", action="store_true", help="print the public report as JSON")
    rel.add_argument("--quiet", action="store_true", help="print nothing on success")
    _html(rel, "the release report (never overwritten)")
    rel.add_argument(
        "--verify",
        action="store_true",
        help="check delta(epsilon) of the actual outputs on resampled data first (about a "
        "minute); refuse the release if the check fails",
    )
    rel.add_argument(
        "--insecure-seed",
        type=types["seed"],
        metavar="N",
        help="reproducible numpy noise from seed N: the release is NOT private",
    )
    rel.add_argument(
        "--allow-overlap",
        action="store_true",
        help="release even though the modelling table holds released rows (refused by "
        "default; also [data] allow_overlap = true): the noise then depends on them",
    )
    rel.add_argument(
        "--include-true",
        action="store_true",
        help="also put the true (unprotected) values into the private diagnostics",
    )
    where = rel.add_mutually_exclusive_group()  # --ledger FILE or --no-ledger
    where.add_argument(
        "--ledger",
        metavar="FILE",
        help="SQLite privacy ledger: compose exactly with the earlier releases of the same "
        "data and secret, record this one (created if missing; default: [ledger] path or "
        "distpriv-ledger.sqlite next to the config; docs/composition.md)",
    )
    where.add_argument(
        "--no-ledger",
        action="store_true",
        help="record this release in no ledger (the report says so): it is then not "
        "composed with other releases of the same data",
    )
    rel.add_argument(
        "--budget",
        metavar="EPS,DELTA",
        help="refuse the release if the composed guarantee would exceed (EPS, DELTA)",
    )
    return rel


def _verify(sub: Any) -> Any:
    ver = sub.add_parser(
        "verify",
        help="dry run of a release: model, calibrate and check it on resampled data; no noise "
        "is drawn and nothing is written but the check's report",
    )
    ver.add_argument("config", help="TOML release configuration (docs/user-guide.md)")
    ver.add_argument("--out", help="write the check's JSON report here (never overwritten)")
    ver.add_argument(
        "--html",
        metavar="PATH",
        help="write the curator's PRIVATE page here: the price per statistic, the guarantee "
        "and the check (never overwritten; do not publish it)",
    )
    ver.add_argument("--json", action="store_true", help="print the report as JSON")
    ver.add_argument("--quiet", action="store_true", help="print nothing; the exit status tells")
    ver.add_argument(
        "--max-samples",
        type=_count,
        default=None,
        metavar="N",
        help="sample budget of the data-level check: resampled datasets per value at its "
        "last look (default 160000, at least 1000); more detects smaller excesses",
    )
    ver.add_argument(
        "--no-early-stop",
        dest="early_stop",
        action="store_false",
        default=None,  # run_verify's default (VERIFY_EARLY_STOP)
        help="spend the budget whenever undecided, not only when the first look (20000 "
        "datasets per value) is suspicious: more power, about 8x the time",
    )
    ver.add_argument(
        "--batch-mib",
        type=float,
        default=None,
        metavar="MIB",
        help="memory of one batch of resampled datasets (default 256): the check draws and "
        "counts them a batch at a time, so its memory does not grow with --max-samples",
    )
    return ver


def _ledger(sub: Any, parser_class: type) -> Any:
    led = sub.add_parser("ledger", help="inspect a privacy ledger")
    led_sub = led.add_subparsers(dest="action", required=True, parser_class=parser_class)
    show = led_sub.add_parser(
        "show", help="every release of a ledger, alone and composed, per data and secret"
    )
    show.add_argument("file", help="the ledger (SQLite) file")
    show.add_argument("--json", action="store_true", help="print the ledger as JSON")
    return led


def _audit(sub: Any, types: dict[str, Any]) -> Any:
    aud = sub.add_parser("audit", help="attack the releases and test the claimed epsilon")
    aud.add_argument("config", help="TOML configuration (the same as for release)")
    aud.add_argument(
        "--mechanism",
        action="append",
        metavar="NAME",
        help="mechanism to audit (repeatable; 'all' for every one); default: the config's",
    )
    aud.add_argument("--repetitions", type=types["count"], default=None)
    aud.add_argument(
        "--classifier",
        action="append",
        metavar="NAME",
        help="meta-classifier (repeatable): logistic, lda, gradient-boosting, mlp",
    )
    aud.add_argument("--confidence", type=types["float"], default=None)
    aud.add_argument("--seed", type=types["seed"], help="seed of the simulation")
    aud.add_argument(
        "--pairs",
        default=None,
        metavar="WHICH",
        help="pairs of the secret to attack: all, binding (where the guarantee binds), first, "
        "N per attribute (binding, then spread), or auto (default: all up to 24 pairs, else 8)",
    )
    _json_out(aud)
    _html(aud, "the audit report")
    aud.add_argument("--quiet", action="store_true", help="print nothing on success")
    return aud


def _experiment(sub: Any, types: dict[str, Any]) -> Any:
    exp = sub.add_parser("experiment", help="reproduce the papers' tables and figures")
    exp.add_argument("action", choices=("list", "run"))
    exp.add_argument("names", nargs="*", metavar="NAME", help="experiment names, or 'all'")
    exp.add_argument("--quick", action="store_true", help="fewer repetitions (for tests)")
    exp.add_argument("--out", default="out", help="directory for CSV, JSON and PNG files")
    exp.add_argument("--seed", type=types["seed"], default=0)
    exp.add_argument("--json", action="store_true")
    exp.add_argument("--doc", help="also write the reproduction record (markdown) here")
    exp.add_argument("--quiet", action="store_true", help="no progress bar")
    return exp


def _demo(sub: Any, types: dict[str, Any]) -> Any:
    demo = sub.add_parser("demo", help="every mechanism on the paper's Adult setting")
    demo.add_argument("--epsilon", type=types["float"], default=1.0)
    demo.add_argument("--delta", type=types["float"], default=1e-3)
    demo.add_argument("--seed", type=types["seed"], default=0)
    demo.add_argument(
        "--n-samples",
        type=types["count"],
        default=1000,
        help="Monte Carlo datasets per value for the Wasserstein mechanisms",
    )
    demo.add_argument(
        "--attack-repetitions",
        type=types["count"],
        default=5,
        help="repetitions of the paper's attack per mechanism (0: no attack)",
    )
    _json_out(demo)
    _html(demo, "the demo report")
    demo.add_argument("--quiet", action="store_true", help="print nothing on success")
    return demo


def _local(sub: Any, types: dict[str, Any], parser_class: type) -> Any:
    loc = sub.add_parser("local", help="local distribution obfuscation (Kawamoto & Murakami 2019)")
    loc_sub = loc.add_subparsers(dest="action", required=True, parser_class=parser_class)
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
    ev.add_argument("--pair", type=types["pair"], default=0, help="pair index or two names 'A,B'")
    ev.add_argument("--delta", type=types["float"], default=1e-3, help="delta of the DistP")
    ev.add_argument("--epsilon", type=types["float"], help="eps (rr, pl) or eps_A (rl, tupling)")
    ev.add_argument("--sigma", type=types["float"], help="standard deviation of pg")
    ev.add_argument("--radius", type=types["float"], help="radius r of rl / tupling ('inf' ok)")
    ev.add_argument("--k", type=types["count"], help="number of dummies of tupling")
    ev.add_argument(
        "--samples", type=types["count"], default=200_000, help="Monte Carlo tuples per side"
    )
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    ev.add_argument("--seed", type=types["seed"], default=0, help="scenario and Monte Carlo seed")
    _json_out(ev)
    return ev


def add_commands(
    sub: Any,
    handlers: dict[str, Callable[[argparse.Namespace], int]],
    *,
    mechanisms: Sequence[str],
    calibrations: Sequence[str],
) -> None:
    """Add every sub-command to ``sub``, each calling its handler."""
    types = TYPES
    parsers = {
        "calibrate": _calibrate(sub, types, mechanisms, calibrations),
        "release": _release(sub, types),
        "verify": _verify(sub),
        "audit": _audit(sub, types),
        "experiment": _experiment(sub, types),
        "demo": _demo(sub, types),
        "local": _local(sub, types, sub._parser_class),
        "report": _report(sub),
        "ledger": _ledger(sub, sub._parser_class),
    }
    mech = sub.add_parser("mechanisms", help="list the registered mechanisms")
    mech.add_argument("--json", action="store_true")
    parsers["mechanisms"] = mech
    for name, p in parsers.items():
        p.set_defaults(func=handlers[name])


class LazyNames(Sequence[str]):
    """Choices for argparse read from the library on first use: ``distpriv --help`` and most
    argument errors never import scipy or the mechanisms (argparse only tests ``in`` and, in
    sub-command help, iterates)."""

    def __init__(self, module: str, attr: str) -> None:
        self._where = (module, attr)

    def _names(self) -> tuple[str, ...]:
        return tuple(getattr(importlib.import_module(self._where[0]), self._where[1]))

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())
