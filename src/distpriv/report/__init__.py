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

from ..util.lazy import attach_declared

# The one export list (distpriv.util.lazy.attach_declared): type checkers, which do not
# follow a module __getattr__, read these imports; at run time attach_declared reads them from
# this file and imports each submodule on first use (`distpriv --help` must not pay for scipy,
# pandas, DuckDB or sklearn).
if TYPE_CHECKING:
    from .html import render_html

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
