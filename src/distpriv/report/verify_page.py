"""The curator's PRIVATE page of ``distpriv verify --html``.

The price per statistic (:mod:`distpriv.pipeline.price.table`) reads each statistic's noise
against its spread across datasets, the gap the secret makes and its typical value: facts
of the modelling table that no guarantee covers. So it never enters a public report (the
``--out`` JSON of ``verify``, the release's page); it is shown on the terminal and on this
page, which says PRIVATE at its top and bottom, like the ``--private-out`` JSON of a
release. The page is rendered from the package's templates with autoescaping (user-written
statistic names are escaped) and the same Content-Security-Policy as the public reports:
it loads nothing. The CLI writes it atomically, after the dry run has succeeded
(:func:`distpriv.report.output.write_files`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import ParameterError
from ..pipeline.report import PRIVATE_BANNER
from ..util.templates import render_template
from .html import _choice, _secret_words

__all__ = ["verify_page"]


def verify_page(outcome: Any) -> str:
    """The PRIVATE HTML page of a dry run: the price per statistic, then the guarantee, the
    data-level check and auto's choice.

    Parameters
    ----------
    outcome : VerifyOutcome
        From :func:`distpriv.pipeline.run_verify` (its ``private`` part holds the price).

    Returns
    -------
    str
        The HTML document (UTF-8 text).

    Raises
    ------
    ParameterError
        The outcome carries no price table.
    """
    public: Mapping[str, Any] = outcome.public
    private: Mapping[str, Any] = outcome.private
    price = private.get("price")
    if not isinstance(price, Mapping):
        raise ParameterError("the verification outcome carries no price table (private['price'])")
    title = str(public.get("title") or "Release")
    html = render_template(
        "verify.html.j2",
        report=public,
        price=price,
        title=f"PRIVATE — {title}: the price of each statistic",
        kind_label="PRIVATE dry run (distpriv verify)",
        version=str((public.get("provenance") or {}).get("version", "")),
        secret_words=_secret_words(public.get("secret")),
        choice=_choice(public),
        banner=PRIVATE_BANNER,
        warnings=list(private.get("warnings") or []),
    )
    # Collapse the blank lines the template control blocks leave behind.
    return re.sub(r"\n\s*\n+", "\n", html)
