"""What a person reads: the text a command prints, its HTML pages, saved reports.

Renders the public and private reports the pipeline's commands return; never calibrates or
models (what a page shows is computed before it is rendered).

* :mod:`.text` — the terminal text of every command (rich), with :mod:`.audit_text` for
  the audit of several attributes and ``_buffer`` for the console both write into;
* :mod:`.html` — the self-contained HTML page of a release, an audit or the demo;
* :mod:`.verify_page` — the curator's private page of ``distpriv verify --html``;
* :mod:`.saved` — a saved public report, read back as untrusted input;
* :mod:`.output` — every file of a command written at once, only when it succeeded;
* :mod:`.progress` — progress bars on a terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.lazy import attach

_EXPORTS: dict[str, tuple[str, ...]] = {
    "html": ("render_html",),
}

# The one export list: __all__ and the type checkers' imports below follow _EXPORTS.
__all__ = sorted(name for names in _EXPORTS.values() for name in names)

if TYPE_CHECKING:
    from .html import render_html

__getattr__, __dir__ = attach(__name__, _EXPORTS)
