"""Text from users and data, made safe: inert on a terminal, and numbers in plain ASCII.

Standard library only, so the command line can use it before anything heavy is imported.
"""

from __future__ import annotations

import re

from ..errors import ParameterError

__all__ = ["parse_decimal", "parse_nonnegative_int", "printable"]

# A plain decimal number: optional sign, ASCII digits with an optional point, optional
# exponent. Python's float() also takes "1_0" (= 10), other scripts' digits ("١" = 1) and
# surrounding Unicode spaces; a privacy parameter written that way is refused, not guessed.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_SPECIAL = re.compile(r"[+-]?(?:inf|infinity|nan)", re.ASCII | re.IGNORECASE)
_INTEGER = re.compile(r"[0-9]+", re.ASCII)


def printable(value: object) -> str:
    """``str(value)`` with every non-printable character written as ``repr`` writes it.

    Control characters (``\\x1b[2J`` clears a terminal, ``\\r`` and ``\\n`` fake lines),
    bidirectional overrides and other format characters in a title, a statistic name or a
    message would act on the user's terminal; written ``\\x1b``, ``\\n``, ``\\u202e`` they
    are inert, as in the ``{value!r}`` of error messages. Used for
    everything the command line prints (:mod:`distpriv.report.text`, its error and warning
    lines).
    """
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def parse_decimal(text: str, what: str, *, special: bool = True) -> float:
    """A plain ASCII decimal (``2``, ``-0.5``, ``1e-3``; ``inf``/``nan`` if ``special``).

    Surrounding ASCII spaces are ignored. Raises :class:`ParameterError` naming ``what``
    and the text for anything else: digit separators (``1_0``), non-ASCII digits, hex.
    """
    body = str(text).strip(" \t")
    if _DECIMAL.fullmatch(body) or (special and _SPECIAL.fullmatch(body)):
        return float(body)
    raise ParameterError(f"{what} must be a plain decimal number, got {printable(repr(text))}")


def parse_nonnegative_int(text: str, what: str) -> int:
    """A non-negative integer written in ASCII digits only (no sign, separator or space)."""
    body = str(text)
    if _INTEGER.fullmatch(body):
        return int(body)
    raise ParameterError(
        f"{what} must be a non-negative integer in digits 0-9, got {printable(repr(text))}"
    )
