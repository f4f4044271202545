"""The string-backed rich console the text renderers write into (:mod:`distpriv.report.text`,
:mod:`distpriv.report.audit_text`): one home below both, so neither imports the other for it."""

from __future__ import annotations

import io
import shutil
import sys

from rich.console import Console

__all__ = ["_Buffer"]


class _Buffer:
    """A rich console that writes into a string, styled only if stdout is a terminal."""

    def __init__(self) -> None:
        self.file = io.StringIO()
        tty = sys.stdout.isatty()
        width = shutil.get_terminal_size((150, 40)).columns if tty else 150
        self.console = Console(
            file=self.file, force_terminal=tty, width=width, soft_wrap=True, highlight=False
        )

    def text(self) -> str:
        return self.file.getvalue()
